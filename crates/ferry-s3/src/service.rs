//! The door as a tower service: the `s3s` service, after what ferry settles about a request
//! before the signature layer reads it.
//!
//! - SigV4 lets a client date a request with its `Date` header instead of `X-Amz-Date` (the
//!   signature then covers `Date`, and the string to sign carries the same instant); the
//!   signature layer reads only `X-Amz-Date`. A request dated by `Date` alone gets an
//!   `X-Amz-Date` naming the same second. That header is not among the signed ones, so the
//!   signature is checked exactly as the client made it, and the request's age as before.
//! - A presigned URL lives from 0 seconds to a week, as S3 allows. One made for any other
//!   lifetime (longer, negative, not a number) grants nothing: `403 AccessDenied`, before its
//!   signature is read.

use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::HeaderMap;

use ferry_core::attachment::escape;
use http::header::{AUTHORIZATION, DATE};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc2822;

/// The S3 service to mount at [`crate::PREFIX`] (both `/s3` and `/s3/{*rest}`), over any
/// request body, without stripping the prefix.
#[derive(Clone)]
pub struct Service(pub(crate) s3s::service::S3Service);

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

impl<B> tower::Service<http::Request<B>> for Service
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    type Response = s3s::HttpResponse;
    type Error = s3s::HttpError;
    type Future = BoxFuture<'static, Result<s3s::HttpResponse, s3s::HttpError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        tower::Service::<http::Request<B>>::poll_ready(&mut self.0, cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if let Err(message) = check_presigned_lifetime(request.uri()) {
            let id = request
                .extensions()
                .get::<crate::request::RequestId>()
                .map(|id| &id.0);
            let refusal = access_denied(message, id);
            return Box::pin(std::future::ready(Ok(refusal)));
        }
        date_from_date_header(request.headers_mut());
        Box::pin(crate::auth::one_lookup(tower::Service::call(
            &mut self.0,
            request,
        )))
    }
}

/// The longest life of a presigned URL, as S3 allows: a week.
const MAX_PRESIGNED_SECONDS: u32 = 7 * 24 * 3600;

/// A presigned URL's `X-Amz-Expires`, if it has one, must be 0 to a week in seconds.
fn check_presigned_lifetime(uri: &http::Uri) -> Result<(), &'static str> {
    let expires = uri.query().unwrap_or("").split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name == "X-Amz-Expires").then_some(value)
    });
    match expires.map(str::parse::<u32>) {
        None | Some(Ok(0..=MAX_PRESIGNED_SECONDS)) => Ok(()),
        Some(_) => Err("X-Amz-Expires must be 0 to 604800 seconds (a week)"),
    }
}

/// S3's `AccessDenied`, written here: the request never reaches the layer that writes S3's
/// errors.
fn access_denied(message: &str, request_id: Option<&http::HeaderValue>) -> s3s::HttpResponse {
    let request_id = request_id.and_then(|v| v.to_str().ok()).unwrap_or_default();
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code>\
         <Message>{}</Message><RequestId>{}</RequestId></Error>",
        escape(message),
        escape(request_id),
    );
    let mut response = http::Response::new(s3s::Body::from(xml));
    *response.status_mut() = http::StatusCode::FORBIDDEN;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    if let Ok(id) = http::HeaderValue::try_from(request_id) {
        response.headers_mut().insert("x-amz-request-id", id);
    }
    response
}

/// Adds `X-Amz-Date` to a SigV4 request dated by `Date` alone.
fn date_from_date_header(headers: &mut HeaderMap) {
    let signed_v4 = headers
        .get(AUTHORIZATION)
        .is_some_and(|v| v.as_bytes().starts_with(b"AWS4-HMAC-SHA256 "));
    if !signed_v4 || headers.contains_key("x-amz-date") {
        return;
    }
    let Some(at) = headers
        .get(DATE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_http_date)
    else {
        return;
    };
    let stamp = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    );
    if let Ok(value) = http::HeaderValue::try_from(stamp) {
        headers.insert("x-amz-date", value);
    }
}

/// An HTTP date (`Tue, 24 Nov 2026 16:48:38 GMT`, or with a numeric zone as RFC 2822 writes
/// it), in UTC.
fn parse_http_date(text: &str) -> Option<OffsetDateTime> {
    let text = text.trim();
    let numeric = match text
        .strip_suffix(" GMT")
        .or_else(|| text.strip_suffix(" UTC"))
    {
        Some(rest) => format!("{rest} +0000"),
        None => text.to_owned(),
    };
    OffsetDateTime::parse(&numeric, &Rfc2822)
        .ok()
        .map(|at| at.to_offset(time::UtcOffset::UTC))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mended(headers: &[(&'static str, &'static str)]) -> Option<String> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, value.parse().unwrap());
        }
        date_from_date_header(&mut map);
        map.get("x-amz-date")
            .map(|v| v.to_str().unwrap().to_owned())
    }

    const SIGNED: (&str, &str) = (
        "authorization",
        "AWS4-HMAC-SHA256 Credential=K/20261124/us-east-1/s3/aws4_request, SignedHeaders=date;host, Signature=00",
    );

    #[test]
    fn a_request_dated_by_date_gets_the_same_instant_as_x_amz_date() {
        assert_eq!(
            mended(&[SIGNED, ("date", "Tue, 24 Nov 2026 16:48:38 GMT")]).as_deref(),
            Some("20261124T164838Z")
        );
        assert_eq!(
            mended(&[SIGNED, ("date", "Tue, 24 Nov 2026 17:48:38 +0100")]).as_deref(),
            Some("20261124T164838Z")
        );
        assert_eq!(
            mended(&[SIGNED, ("date", "Tue, 24 Nov 2026 16:48:38 -0000")]).as_deref(),
            Some("20261124T164838Z")
        );
    }

    #[test]
    fn a_presigned_url_lives_from_no_time_to_a_week() {
        let lifetime = |query: &str| {
            check_presigned_lifetime(&format!("/s3/b/k?{query}").parse().unwrap()).is_ok()
        };
        assert!(lifetime("X-Amz-Expires=604800&X-Amz-Date=1"));
        assert!(lifetime("X-Amz-Expires=0"));
        assert!(lifetime("partNumber=1"));
        assert!(!lifetime("X-Amz-Expires=604801"));
        assert!(!lifetime("X-Amz-Date=1&X-Amz-Expires=-1000"));
        assert!(!lifetime("X-Amz-Expires=soon"));
    }

    #[test]
    fn anything_else_is_left_as_it_came() {
        let both = [
            SIGNED,
            ("date", "Tue, 24 Nov 2026 16:48:38 GMT"),
            ("x-amz-date", "20261124T000000Z"),
        ];
        assert_eq!(mended(&both).as_deref(), Some("20261124T000000Z"));
        assert_eq!(mended(&[("date", "Tue, 24 Nov 2026 16:48:38 GMT")]), None);
        assert_eq!(mended(&[SIGNED, ("date", "yesterday")]), None);
        assert_eq!(mended(&[SIGNED]), None);
    }
}
