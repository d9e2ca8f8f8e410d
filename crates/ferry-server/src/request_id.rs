//! Request ids: every request has one (`X-Request-Id`, taken from the request or made here,
//! and echoed in the answer), and everything logged while it is handled carries it, so an
//! "internal error" a client reports can be found in the log.

use axum::http::{HeaderValue, Request};
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
