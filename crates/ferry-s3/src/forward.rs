//! From the signed request to the operation: the outer `s3s` service has checked the
//! signature over the path as the client sent it (`/s3/bucket/key`) and decoded any
//! aws-chunked body; here the caller's principal is settled, `/s3` and the signature are taken
//! off, and the request goes to the inner service, which routes it to [`crate::door`].

use std::sync::Arc;

use ferry_app::App;
use http::header::AUTHORIZATION;
use http::{Extensions, HeaderMap, Method, Uri};
use s3s::route::S3Route;
use s3s::stream::ByteStream;
use s3s::{Body, S3Request, S3Response, S3Result, s3_error};

use crate::auth::Identities;
use crate::errors::{CONDITION_HEADER, with_element};
use crate::request::{Caller, PREFIX, RequestId, Trailers, UNQUOTED_ETAG_HEADER};

/// The query parameters of a presigned URL's signature: checked by the outer service, and not
/// an operation's business.
const SIGNATURE_PARAMS: [&str; 10] = [
    // Signature version 2.
    "AWSAccessKeyId",
    "Signature",
    "Expires",
    // Signature version 4.
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
    "X-Amz-Security-Token",
];

pub(crate) struct Forward {
    inner: s3s::service::S3Service,
    app: App,
    identities: Arc<dyn Identities>,
}

impl Forward {
    pub(crate) fn new(
        inner: s3s::service::S3Service,
        app: App,
        identities: Arc<dyn Identities>,
    ) -> Forward {
        Forward {
            inner,
            app,
            identities,
        }
    }
}

/// The session token, from the header or (a presigned URL) the query.
fn session_token(headers: &HeaderMap, uri: &Uri) -> Option<String> {
    if let Some(value) = headers.get("x-amz-security-token") {
        return value.to_str().ok().map(str::to_owned);
    }
    uri.query()?.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name == "X-Amz-Security-Token").then(|| {
            percent_encoding::percent_decode_str(value)
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

/// The XML body with its `<ETag>` value's quotes (as written, `"` or `&quot;`) taken off.
fn unquoted_etag(xml: &[u8]) -> bytes::Bytes {
    let text = String::from_utf8_lossy(xml);
    let unquoted = ["&quot;", "\""]
        .iter()
        .fold(text.into_owned(), |text, quote| {
            text.replace(&format!("<ETag>{quote}"), "<ETag>")
                .replace(&format!("{quote}</ETag>"), "</ETag>")
        });
    bytes::Bytes::from(unquoted)
}

/// The request's path below `/s3` (at least `/`), and its query without signature parameters.
fn inner_uri(uri: &Uri) -> S3Result<Uri> {
    let path = uri.path().strip_prefix(PREFIX).unwrap_or(uri.path());
    let path = if path.is_empty() { "/" } else { path };
    let query: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|pair| {
            let name = pair.split_once('=').map_or(*pair, |(name, _)| name);
            !pair.is_empty() && !SIGNATURE_PARAMS.contains(&name)
        })
        .collect();
    let text = if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    };
    text.parse()
        .map_err(|_| s3_error!(InvalidURI, "the request's URI cannot be read"))
}

#[async_trait::async_trait]
impl S3Route for Forward {
    fn is_match(&self, _: &Method, _: &Uri, _: &HeaderMap, _: &mut Extensions) -> bool {
        true
    }

    async fn check_access(&self, req: &mut S3Request<Body>) -> S3Result<()> {
        let Some(credentials) = &req.credentials else {
            return Err(s3_error!(
                AccessDenied,
                "ferry's S3 door needs a signed request: an access key from POST /api/s3/keys, \
                 or a bearer token as X-Amz-Security-Token with the access key 'ferry'"
            ));
        };
        let token = session_token(&req.headers, &req.uri);
        let principal = crate::auth::principal(
            &self.app,
            self.identities.as_ref(),
            &credentials.access_key,
            token.as_deref(),
        )
        .await?;
        req.extensions.insert(Caller(principal));
        Ok(())
    }

    async fn call(&self, req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        let S3Request {
            input: body,
            method,
            uri,
            mut headers,
            mut extensions,
            trailing_headers,
            ..
        } = req;
        // The server's request id, said the way S3 clients read it.
        let request_id = extensions.get::<RequestId>().map(|id| id.0.clone());
        // The signature was checked; the inner service must see an unsigned request.
        headers.remove(AUTHORIZATION);
        headers.remove("x-amz-content-sha256");
        headers.remove("x-amz-security-token");
        if let Some(trailers) = trailing_headers {
            extensions.insert(Trailers(trailers));
        }
        let length = body.remaining_length().exact();
        let mut inner = http::Request::builder()
            .method(method)
            .uri(inner_uri(&uri)?)
            .body(body)
            .map_err(|e| s3_error!(e, InternalError, "could not forward the request"))?;
        *inner.headers_mut() = headers;
        *inner.extensions_mut() = extensions;
        if let Some(length) = length {
            inner
                .headers_mut()
                .insert(http::header::CONTENT_LENGTH, length.into());
        }
        let response = self
            .inner
            .call(inner)
            .await
            .map_err(|e| s3_error!(InternalError, "the S3 door failed: {e:?}"))?;
        let (mut parts, mut body) = response.into_parts();
        // S3's error bodies name the failed condition and the request; s3s writes neither.
        if parts.status.is_client_error() || parts.status.is_server_error() {
            let condition = parts.headers.remove(CONDITION_HEADER);
            if let Some(mut xml) = body.bytes() {
                if let Some(condition) = condition {
                    xml = with_element(&xml, "Condition", condition.to_str().unwrap_or_default());
                }
                if let Some(id) = request_id.as_ref().and_then(|id| id.to_str().ok()) {
                    xml = with_element(&xml, "RequestId", id);
                }
                body = Body::from(xml);
                parts.headers.remove(http::header::CONTENT_LENGTH);
            }
        }
        if parts.headers.remove(UNQUOTED_ETAG_HEADER).is_some()
            && let Some(xml) = body.bytes()
        {
            body = Body::from(unquoted_etag(&xml));
            parts.headers.remove(http::header::CONTENT_LENGTH);
        }
        if let Some(id) = request_id {
            parts.headers.insert("x-amz-request-id", id);
        }
        let mut answer = S3Response::new(body);
        answer.status = Some(parts.status);
        answer.headers = parts.headers;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_and_the_signature_are_taken_off() {
        let uri: Uri = "/s3/notes/a%20b.md?X-Amz-Signature=abc&partNumber=2&X-Amz-Date=1"
            .parse()
            .unwrap();
        assert_eq!(
            inner_uri(&uri).unwrap().to_string(),
            "/notes/a%20b.md?partNumber=2"
        );
        let root: Uri = "/s3".parse().unwrap();
        assert_eq!(inner_uri(&root).unwrap().to_string(), "/");
        let list: Uri = "/s3/?x-id=ListBuckets".parse().unwrap();
        assert_eq!(inner_uri(&list).unwrap().to_string(), "/?x-id=ListBuckets");
    }

    #[test]
    fn an_etag_loses_its_quotes_as_written() {
        assert_eq!(
            &unquoted_etag(b"<R><ETag>&quot;ab&quot;</ETag><S>1</S></R>")[..],
            b"<R><ETag>ab</ETag><S>1</S></R>"
        );
        assert_eq!(
            &unquoted_etag(b"<ETag>\"ab\"</ETag>")[..],
            b"<ETag>ab</ETag>"
        );
    }

    #[test]
    fn a_session_token_is_read_from_the_header_or_the_query() {
        let mut headers = HeaderMap::new();
        let uri: Uri = "/s3/b/k?X-Amz-Security-Token=a%2Eb.c".parse().unwrap();
        assert_eq!(session_token(&headers, &uri).as_deref(), Some("a.b.c"));
        headers.insert("x-amz-security-token", "h.t.x".parse().unwrap());
        assert_eq!(session_token(&headers, &uri).as_deref(), Some("h.t.x"));
    }
}
