//! How the use cases' refusals read in S3 (docs/s3.md, errors): S3's own codes, with the
//! statuses S3 gives them, and the message the use case wrote.

use bytes::Bytes;
use ferry_app::Error;
use ferry_core::attachment::escape;
use http::{HeaderMap, HeaderValue};
use s3s::{S3Error, S3ErrorCode};

/// A use case's refusal, for an operation on an object.
pub(crate) fn to_s3(e: Error) -> S3Error {
    let message = e.to_string();
    let code = match e {
        Error::NotFound(_) => S3ErrorCode::NoSuchKey,
        Error::Forbidden(_) => S3ErrorCode::AccessDenied,
        Error::InvalidPath(_) | Error::UnsupportedMediaType(_) | Error::UnsupportedFileType(_) => {
            S3ErrorCode::InvalidArgument
        }
        Error::InvalidRequest(_) => S3ErrorCode::InvalidRequest,
        // A create-only write that found the key taken: S3 answers 412 for If-None-Match: *.
        Error::AlreadyExists(_) => return precondition_failed(Condition::IfNoneMatch, &message),
        Error::PreconditionFailed(_) => return precondition_failed(Condition::IfMatch, &message),
        Error::TooLarge(_) => S3ErrorCode::EntityTooLarge,
        Error::Busy(_) | Error::TooManyRequests(_) => S3ErrorCode::SlowDown,
        // Resumable uploads are not an S3 operation; S3's nearest words for their refusals.
        Error::OffsetMismatch(_) => S3ErrorCode::InvalidRequest,
        Error::ChecksumMismatch(_) => S3ErrorCode::BadDigest,
        Error::DiskFull => S3ErrorCode::ServiceUnavailable,
        Error::NotImplemented(_) => S3ErrorCode::NotImplemented,
        Error::Internal => S3ErrorCode::InternalError,
    };
    S3Error::with_message(code, message)
}

/// A refusal met while settling the bucket: "not found" there means the bucket.
pub(crate) fn bucket_error(e: Error) -> S3Error {
    match e {
        Error::NotFound(_) => S3Error::with_message(
            S3ErrorCode::NoSuchBucket,
            "no such bucket, or not one the caller may see",
        ),
        other => to_s3(other),
    }
}

/// A space bucket the caller does not have (never made, or removed).
pub(crate) fn no_such_bucket(name: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NoSuchBucket,
        format!("no bucket '{name}': make it with CreateBucket, or write a file into the space"),
    )
}

/// The request header whose condition did not hold, named in a `PreconditionFailed` error's
/// `<Condition>` element as S3 does. Clients act on it: s3fs, for one, raises
/// `FileExistsError` only when the condition is `If-None-Match`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Condition {
    IfMatch,
    IfNoneMatch,
    IfUnmodifiedSince,
    IfModifiedSince,
    CopySourceIfMatch,
    CopySourceIfNoneMatch,
    CopySourceIfModifiedSince,
    CopySourceIfUnmodifiedSince,
}

impl From<ferry_core::conditions::Precondition> for Condition {
    fn from(which: ferry_core::conditions::Precondition) -> Condition {
        use ferry_core::conditions::Precondition;
        match which {
            Precondition::IfMatch => Condition::IfMatch,
            Precondition::IfNoneMatch => Condition::IfNoneMatch,
            Precondition::IfModifiedSince => Condition::IfModifiedSince,
            Precondition::IfUnmodifiedSince => Condition::IfUnmodifiedSince,
        }
    }
}

impl Condition {
    pub(crate) fn header(self) -> &'static str {
        match self {
            Condition::IfMatch => "If-Match",
            Condition::IfNoneMatch => "If-None-Match",
            Condition::IfUnmodifiedSince => "If-Unmodified-Since",
            Condition::IfModifiedSince => "If-Modified-Since",
            Condition::CopySourceIfMatch => "x-amz-copy-source-If-Match",
            Condition::CopySourceIfNoneMatch => "x-amz-copy-source-If-None-Match",
            Condition::CopySourceIfModifiedSince => "x-amz-copy-source-If-Modified-Since",
            Condition::CopySourceIfUnmodifiedSince => "x-amz-copy-source-If-Unmodified-Since",
        }
    }

    /// The same condition, as the copy source's header of a copy.
    pub(crate) fn of_copy_source(self) -> Condition {
        match self {
            Condition::IfMatch => Condition::CopySourceIfMatch,
            Condition::IfUnmodifiedSince => Condition::CopySourceIfUnmodifiedSince,
            Condition::IfNoneMatch => Condition::CopySourceIfNoneMatch,
            Condition::IfModifiedSince => Condition::CopySourceIfModifiedSince,
            other => other,
        }
    }
}

/// The header that carries a [`Condition`] from the inner service to [`with_element`]: s3s
/// writes no element of its own into an error's XML, so the outer service adds it and drops
/// the header. It never reaches a client.
pub(crate) const CONDITION_HEADER: &str = "x-ferry-s3-condition";

/// S3's message for any precondition that failed (clients look for "pre-conditions" in it),
/// followed by what ferry found.
const PRECONDITION_MESSAGE: &str = "At least one of the pre-conditions you specified did not hold";

/// A `412 PreconditionFailed` naming `condition`, with `detail` after S3's own message.
pub(crate) fn precondition_failed(condition: Condition, detail: &str) -> S3Error {
    let mut error = S3Error::with_message(
        S3ErrorCode::PreconditionFailed,
        format!("{PRECONDITION_MESSAGE}: {detail}"),
    );
    let mut headers = HeaderMap::new();
    // The error's own headers replace the ones s3s set while writing its XML body.
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    headers.insert(
        CONDITION_HEADER,
        HeaderValue::from_static(condition.header()),
    );
    error.set_headers(headers);
    error
}

/// An error body with `<{name}>{value}</{name}>` added as the last element of `<Error>` (the
/// value escaped as XML text); any other body unchanged.
pub(crate) fn with_element(body: &[u8], name: &str, value: &str) -> Bytes {
    const END: &[u8] = b"</Error>";
    let Some(at) = body.windows(END.len()).rposition(|w| w == END) else {
        return Bytes::copy_from_slice(body);
    };
    let element = format!("<{name}>{}</{name}>", escape(value));
    let mut out = Vec::with_capacity(body.len() + element.len());
    out.extend_from_slice(&body[..at]);
    out.extend_from_slice(element.as_bytes());
    out.extend_from_slice(&body[at..]);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_is_the_last_element_of_the_error() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>PreconditionFailed</Code></Error>";
        assert_eq!(
            &with_element(body, "Condition", "If-None-Match")[..],
            b"<?xml version=\"1.0\"?><Error><Code>PreconditionFailed</Code>\
              <Condition>If-None-Match</Condition></Error>"
        );
        assert_eq!(
            &with_element(b"not xml", "Condition", "If-Match")[..],
            b"not xml"
        );
        assert_eq!(
            &with_element(b"<Error></Error>", "RequestId", "</RequestId><Code>X")[..],
            b"<Error><RequestId>&lt;/RequestId&gt;&lt;Code&gt;X</RequestId></Error>"
        );
    }

    #[test]
    fn a_failed_precondition_carries_s3_message_and_names_its_header() {
        let error = precondition_failed(Condition::IfNoneMatch, "'a.md' already exists");
        assert_eq!(*error.code(), S3ErrorCode::PreconditionFailed);
        assert!(error.message().unwrap().starts_with(PRECONDITION_MESSAGE));
        assert_eq!(error.headers().unwrap()[CONDITION_HEADER], "If-None-Match");
        assert_eq!(
            Condition::IfMatch.of_copy_source().header(),
            "x-amz-copy-source-If-Match"
        );
    }
}
