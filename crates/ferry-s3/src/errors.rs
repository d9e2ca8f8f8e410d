//! How the use cases' refusals read in S3 (docs/s3.md, errors): S3's own codes, with the
//! statuses S3 gives them, and the message the use case wrote.

use ferry_app::Error;
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
        Error::AlreadyExists(_) | Error::PreconditionFailed(_) => S3ErrorCode::PreconditionFailed,
        Error::TooLarge(_) => S3ErrorCode::EntityTooLarge,
        Error::Busy(_) => S3ErrorCode::SlowDown,
        Error::DiskFull => S3ErrorCode::ServiceUnavailable,
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
