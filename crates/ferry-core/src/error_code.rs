//! The error codes of the one error envelope, `{ "error": { "code", "message" } }`
//! (docs/reference/errors.md): one list for every door. The HTTP door gives each its status,
//! the S3 door says each in S3's codes, and the MCP tools and the events that report a
//! failure carry them as they are.

use serde::{Deserialize, Serialize};

/// One code of the envelope.
///
/// Beside the codes every use case answers with, five that HTTP itself needs: a wrong method,
/// an unsatisfiable `Range`, a client over its share (too many open streams or unfinished
/// uploads), a busy server, a full disk, and an operation this server does not offer (commands turned
/// off); and two of resumable uploads (tus): a `PATCH` at
/// the wrong offset, and a body that does not match its checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    Unauthenticated,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    InvalidPath,
    InvalidRequest,
    AlreadyExists,
    PreconditionFailed,
    RequestTooLarge,
    UnsupportedMediaType,
    RangeNotSatisfiable,
    UnsupportedFileType,
    TooManyRequests,
    OffsetMismatch,
    ChecksumMismatch,
    Internal,
    Unavailable,
    InsufficientStorage,
    NotImplemented,
}

impl ErrorCode {
    /// Every code, in the order of docs/reference/errors.md.
    pub const ALL: [ErrorCode; 19] = [
        ErrorCode::Unauthenticated,
        ErrorCode::Forbidden,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::InvalidPath,
        ErrorCode::InvalidRequest,
        ErrorCode::AlreadyExists,
        ErrorCode::PreconditionFailed,
        ErrorCode::RequestTooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::RangeNotSatisfiable,
        ErrorCode::UnsupportedFileType,
        ErrorCode::TooManyRequests,
        ErrorCode::OffsetMismatch,
        ErrorCode::ChecksumMismatch,
        ErrorCode::Internal,
        ErrorCode::Unavailable,
        ErrorCode::InsufficientStorage,
        ErrorCode::NotImplemented,
    ];

    /// The code as it is written in the envelope, e.g. `INVALID_PATH`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::InvalidPath => "INVALID_PATH",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::PreconditionFailed => "PRECONDITION_FAILED",
            ErrorCode::RequestTooLarge => "REQUEST_TOO_LARGE",
            ErrorCode::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ErrorCode::RangeNotSatisfiable => "RANGE_NOT_SATISFIABLE",
            ErrorCode::UnsupportedFileType => "UNSUPPORTED_FILE_TYPE",
            ErrorCode::TooManyRequests => "TOO_MANY_REQUESTS",
            ErrorCode::OffsetMismatch => "OFFSET_MISMATCH",
            ErrorCode::ChecksumMismatch => "CHECKSUM_MISMATCH",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::InsufficientStorage => "INSUFFICIENT_STORAGE",
            ErrorCode::NotImplemented => "NOT_IMPLEMENTED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_form_matches_as_str() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }
}
