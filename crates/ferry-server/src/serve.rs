//! Answering with a stored blob: validators, ranges, HEAD, and the safety headers.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ferry_core::Timestamp;
use ferry_core::conditions::{Precondition, ReadConditions, Unmet};

use crate::error::ErrorCode;
use ferry_app::transfers::objects::BlobRead;
use std::ops::Range;

use crate::error::{ApiError, ApiResult};

/// A stored file about to be sent.
#[derive(Debug, Clone)]
pub struct Servable<'a> {
    pub blob_key: &'a str,
    pub size: u64,
    pub content_type: &'a str,
    pub sha256: &'a str,
    pub modified: Timestamp,
    /// `Content-Disposition`, when the answer is a download.
    pub disposition: Option<String>,
}

pub use ferry_core::conditions::{TagList, quoted_etag};

/// What [`TagList::parse`] accepts, as a regular expression for the OpenAPI document: `*`, or
/// quoted tags (weak ones with `W/`) separated by commas.
pub const TAG_LIST_PATTERN: &str = r#"^\s*(\*|(W/)?"[^"]*"(\s*,\s*((W/)?"[^"]*")?)*)\s*$"#;

/// The conditions of a read, from its headers. A condition that cannot be read is ignored,
/// as RFC 9110 §13.1 asks (a malformed tag list, a date that is not an HTTP date).
pub fn read_conditions(request: &HeaderMap) -> ReadConditions {
    let text = |name| {
        request
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let date = |name| {
        text(name)
            .and_then(|v| httpdate::parse_http_date(v.trim()).ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_secs()).ok())
    };
    ReadConditions {
        if_match: text(header::IF_MATCH).and_then(TagList::parse),
        if_none_match: text(header::IF_NONE_MATCH).and_then(TagList::parse),
        if_modified_since: date(header::IF_MODIFIED_SINCE),
        if_unmodified_since: date(header::IF_UNMODIFIED_SINCE),
    }
}

/// What a `Range` header asks of a representation of `size` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeAsk {
    Whole,
    Part(Range<u64>),
    Unsatisfiable,
}

/// Reads a single `bytes=` range. Multiple ranges and other units are ignored (the whole
/// representation is sent), as RFC 9110 §14.2 allows.
pub fn parse_range(value: &str, size: u64) -> RangeAsk {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return RangeAsk::Whole;
    };
    if spec.contains(',') {
        return RangeAsk::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return RangeAsk::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    let parsed = if first.is_empty() {
        // A suffix: the last N bytes.
        match last.parse::<u64>() {
            Ok(0) => return RangeAsk::Unsatisfiable,
            Ok(n) => Some(size.saturating_sub(n)..size),
            Err(_) => None,
        }
    } else {
        match (first.parse::<u64>(), last) {
            (Ok(start), "") => Some(start..size),
            (Ok(start), last) => match last.parse::<u64>() {
                Ok(end) if end >= start => Some(start..end.saturating_add(1).min(size)),
                _ => None,
            },
            _ => None,
        }
    };
    match parsed {
        None => RangeAsk::Whole,
        Some(range) if range.start >= size => RangeAsk::Unsatisfiable,
        Some(range) => RangeAsk::Part(range),
    }
}

/// Sends a stored blob, honouring the read conditions, `Range` and `HEAD`.
pub async fn serve_blob(
    app: &ferry_app::App,
    method: &Method,
    request: &HeaderMap,
    file: Servable<'_>,
) -> ApiResult<Response> {
    let key = file.blob_key.to_owned();
    let representation = Representation {
        size: file.size,
        content_type: file.content_type,
        validator: file.sha256,
        modified: file.modified,
        disposition: file.disposition,
    };
    respond(method, request, representation, |range| async move {
        ferry_app::transfers::objects::bytes(app, &key, range).await
    })
    .await
}

/// Sends a stored blob as a download: `Content-Disposition: attachment` under `filename`, and a
/// CSP that keeps the browser from rendering it, whatever its type claims. Any disposition in
/// `file` is replaced.
pub async fn serve_download(
    app: &ferry_app::App,
    method: &Method,
    request: &HeaderMap,
    file: Servable<'_>,
    filename: &str,
) -> ApiResult<Response> {
    let file = Servable {
        disposition: Some(attachment_disposition(filename)),
        ..file
    };
    let mut response = serve_blob(app, method, request, file).await?;
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    Ok(response)
}

/// What is known of a representation before its bytes are read.
#[derive(Debug, Clone)]
pub struct Representation<'a> {
    pub size: u64,
    pub content_type: &'a str,
    /// The strong validator, sent quoted as the `ETag`.
    pub validator: &'a str,
    pub modified: Timestamp,
    pub disposition: Option<String>,
}

/// Answers a GET or HEAD for a representation: `412` or `304` when its conditions say so
/// ([`read_conditions`]), `206` for a single satisfiable range, `416` for an unsatisfiable one; `read` is called (with the range)
/// only when bytes are sent.
pub async fn respond<F, Fut>(
    method: &Method,
    request: &HeaderMap,
    file: Representation<'_>,
    read: F,
) -> ApiResult<Response>
where
    F: FnOnce(Option<Range<u64>>) -> Fut,
    Fut: std::future::Future<Output = std::io::Result<BlobRead>>,
{
    let tag = quoted_etag(file.validator);
    let mut headers = HeaderMap::new();
    headers.insert(header::ETAG, header_value(&tag)?);
    headers.insert(
        header::LAST_MODIFIED,
        header_value(&file.modified.http_date())?,
    );
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Stored bytes never run script on ferry's origin (docs/security.md, stored content): an
    // active type is an attachment, and everything but PDF is sandboxed.
    let serving = ferry_core::content_type::serving(file.content_type);
    if let Some(policy) = serving.content_security_policy {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(policy),
        );
    }
    match &file.disposition {
        Some(disposition) => {
            headers.insert(header::CONTENT_DISPOSITION, header_value(disposition)?);
        }
        None if !serving.inline => {
            headers.insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment"),
            );
        }
        None => {}
    }

    match read_conditions(request).unmet(file.validator, file.modified.millis().div_euclid(1000)) {
        Some(Unmet::NotModified(_)) => {
            return Ok((StatusCode::NOT_MODIFIED, headers).into_response());
        }
        Some(Unmet::Failed(which)) => {
            return Err(ApiError::new(
                ErrorCode::PreconditionFailed,
                format!(
                    "the file changed: its ETag is {tag}, and {} does not hold",
                    match which {
                        Precondition::IfMatch => "If-Match",
                        Precondition::IfUnmodifiedSince => "If-Unmodified-Since",
                        Precondition::IfNoneMatch => "If-None-Match",
                        Precondition::IfModifiedSince => "If-Modified-Since",
                    }
                ),
            ));
        }
        None => {}
    }

    let ask = request
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(|v| parse_range(v, file.size))
        .unwrap_or(RangeAsk::Whole);
    let (status, range) = match ask {
        RangeAsk::Whole => (StatusCode::OK, None),
        RangeAsk::Part(range) => {
            headers.insert(
                header::CONTENT_RANGE,
                header_value(&format!(
                    "bytes {}-{}/{}",
                    range.start,
                    range.end - 1,
                    file.size
                ))?,
            );
            (StatusCode::PARTIAL_CONTENT, Some(range))
        }
        RangeAsk::Unsatisfiable => {
            let mut response = ApiError::new(
                ErrorCode::RangeNotSatisfiable,
                format!("the range starts beyond the file's {} bytes", file.size),
            )
            .into_response();
            response.headers_mut().insert(
                header::CONTENT_RANGE,
                header_value(&format!("bytes */{}", file.size))?,
            );
            return Ok(response);
        }
    };
    headers.insert(header::CONTENT_TYPE, header_value(file.content_type)?);
    let len = range.as_ref().map(|r| r.end - r.start).unwrap_or(file.size);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    if method == Method::HEAD {
        return Ok((status, headers).into_response());
    }
    let read = read(range).await?;
    let mut response = (status, headers, Body::from_stream(read.stream)).into_response();
    // The body's length is known; keep the header even though the body is a stream.
    response
        .headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(read.len));
    Ok(response)
}

pub use ferry_core::content_type::attachment_disposition;

/// How a listing route answers: `json` (the default) lists the folder; `zip` sends every file
/// below it as one zip ([`zip_download`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListFormat {
    #[default]
    Json,
    Zip,
}

/// Sends a folder as one zip, streamed as its files are read: an attachment under the
/// folder's name, never cached (it is built anew each time) and never rendered.
pub fn zip_download(folder: ferry_app::transfers::archive::FolderZip) -> ApiResult<Response> {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        header_value(&attachment_disposition(&folder.file_name))?,
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Ok((headers, Body::from_stream(folder.into_stream())).into_response())
}

pub fn header_value(text: &str) -> ApiResult<HeaderValue> {
    HeaderValue::from_str(text).map_err(ApiError::internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-4", 10), RangeAsk::Part(0..5));
        assert_eq!(parse_range("bytes=5-", 10), RangeAsk::Part(5..10));
        assert_eq!(parse_range("bytes=-3", 10), RangeAsk::Part(7..10));
        assert_eq!(parse_range("bytes=-30", 10), RangeAsk::Part(0..10));
        assert_eq!(parse_range("bytes=8-100", 10), RangeAsk::Part(8..10));
        assert_eq!(parse_range("bytes=10-", 10), RangeAsk::Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 10), RangeAsk::Unsatisfiable);
        assert_eq!(parse_range("bytes=5-2", 10), RangeAsk::Whole);
        assert_eq!(parse_range("bytes=0-1,3-4", 10), RangeAsk::Whole);
        assert_eq!(parse_range("items=0-1", 10), RangeAsk::Whole);
        assert_eq!(parse_range("bytes=a-b", 10), RangeAsk::Whole);
    }
}
