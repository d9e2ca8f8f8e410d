//! Request ids: every request has one (`X-Request-Id`, taken from the request or made here,
//! and echoed in the answer), and everything logged while it is handled carries it, so an
//! "internal error" a client reports can be found in the log.
//!
//! An id a client sends is kept only when it is short and plain — at most
//! [`MAX_CLIENT_ID_LEN`] characters of letters, digits and `-_.:/+=@` — since it is written
//! into the access log, S3's error XML and the answer's headers; any other is replaced by one
//! made here.

use axum::http::{HeaderMap, HeaderValue, Request};
use tower_http::request_id::{MakeRequestId, RequestId};

/// Makes an id for a request that brought none: a UUIDv7, so ids sort by time.
#[derive(Debug, Clone, Copy, Default)]
pub struct MakeId;

impl MakeRequestId for MakeId {
    fn make_request_id<B>(&mut self, _: &Request<B>) -> Option<RequestId> {
        HeaderValue::from_str(&uuid::Uuid::now_v7().simple().to_string())
            .ok()
            .map(RequestId::new)
    }
}

/// The longest request id taken from a client.
pub const MAX_CLIENT_ID_LEN: usize = 128;

/// Whether a client's request id is kept as it is.
pub fn is_usable(id: &[u8]) -> bool {
    !id.is_empty()
        && id.len() <= MAX_CLIENT_ID_LEN
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/+=@".contains(b))
}

/// The `X-Request-Id` values a client sent that were not kept, as sent: a request signature
/// (S3's SigV4) may cover the header, so the S3 door puts them back before the signature is
/// checked (`crate::s3`). Nothing else reads them.
#[derive(Debug, Clone)]
pub struct Replaced(pub Vec<HeaderValue>);

/// Takes off a request id that is not [`is_usable`] (or is sent twice), so that one is made
/// in its place: runs before the layer that makes ids.
pub async fn drop_unusable<B>(mut request: Request<B>) -> Request<B> {
    if let Some(original) = strip_unusable(request.headers_mut()) {
        request.extensions_mut().insert(Replaced(original));
    }
    request
}

/// Takes off unusable ids; answers every value taken off, in order.
fn strip_unusable(headers: &mut HeaderMap) -> Option<Vec<HeaderValue>> {
    let ids = headers.get_all("x-request-id");
    if ids.iter().count() <= 1 && ids.iter().all(|id| is_usable(id.as_bytes())) {
        return None;
    }
    let taken: Vec<HeaderValue> = ids.iter().cloned().collect();
    headers.remove("x-request-id");
    Some(taken)
}

/// The span every request is handled in: its id, method and path (never the query, which may
/// hold a signed link's signature).
pub fn span<B>(request: &Request<B>) -> tracing::Span {
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::info_span!(
        "request",
        id = %id,
        method = %request.method(),
        path = %request.uri().path(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_ids_are_kept() {
        for kept in ["abc-123", "0190f2a4b7c87d3e", "trace:1/2+3=@x"] {
            assert!(is_usable(kept.as_bytes()), "{kept}");
        }
        for dropped in [
            "",
            "</RequestId><Code>Injected</Code>",
            "a b",
            "id\" status=200",
            &"x".repeat(MAX_CLIENT_ID_LEN + 1),
        ] {
            assert!(!is_usable(dropped.as_bytes()), "{dropped}");
        }
    }

    #[test]
    fn an_unusable_id_is_taken_off_and_a_usable_one_kept() {
        let headers = |id: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("x-request-id", HeaderValue::from_str(id).unwrap());
            headers
        };
        let mut kept = headers("abc-123");
        assert_eq!(strip_unusable(&mut kept), None);
        assert_eq!(kept["x-request-id"], "abc-123");
        let mut dropped = headers("<x>");
        assert_eq!(
            strip_unusable(&mut dropped),
            Some(vec![HeaderValue::from_static("<x>")])
        );
        assert!(dropped.get("x-request-id").is_none());
        let mut twice = headers("a");
        twice.append("x-request-id", HeaderValue::from_static("b"));
        let both = vec![HeaderValue::from_static("a"), HeaderValue::from_static("b")];
        assert_eq!(strip_unusable(&mut twice), Some(both));
        assert!(twice.get("x-request-id").is_none());
    }
}
