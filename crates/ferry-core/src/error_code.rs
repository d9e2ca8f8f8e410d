//! The error codes of the API envelope and the HTTP status each one answers with.

use serde::Serialize;

/// One code of the `{ "error": { "code", "message" } }` envelope.
///
/// Beside the codes every API answers with, five that HTTP itself needs: a wrong method, an
/// unsatisfiable `Range`, a client over its share (too many open streams), a busy server, and
/// a full disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
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
    Internal,
    Unavailable,
    InsufficientStorage,
}

impl ErrorCode {
    /// The HTTP status code this error answers with.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::Unauthenticated => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::InvalidPath | ErrorCode::InvalidRequest => 400,
            ErrorCode::AlreadyExists => 409,
            ErrorCode::PreconditionFailed => 412,
            ErrorCode::RequestTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::RangeNotSatisfiable => 416,
            ErrorCode::UnsupportedFileType => 422,
            ErrorCode::TooManyRequests => 429,
            ErrorCode::Internal => 500,
            ErrorCode::Unavailable => 503,
            ErrorCode::InsufficientStorage => 507,
        }
    }

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
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::InsufficientStorage => "INSUFFICIENT_STORAGE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_form_matches_as_str() {
        for code in [
            ErrorCode::Unauthenticated,
            ErrorCode::InvalidPath,
            ErrorCode::AlreadyExists,
            ErrorCode::UnsupportedFileType,
            ErrorCode::RangeNotSatisfiable,
            ErrorCode::TooManyRequests,
            ErrorCode::InsufficientStorage,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn documented_statuses() {
        assert_eq!(ErrorCode::Unauthenticated.status(), 401);
        assert_eq!(ErrorCode::Forbidden.status(), 403);
        assert_eq!(ErrorCode::NotFound.status(), 404);
        assert_eq!(ErrorCode::InvalidPath.status(), 400);
        assert_eq!(ErrorCode::InvalidRequest.status(), 400);
        assert_eq!(ErrorCode::AlreadyExists.status(), 409);
        assert_eq!(ErrorCode::PreconditionFailed.status(), 412);
        assert_eq!(ErrorCode::RequestTooLarge.status(), 413);
        assert_eq!(ErrorCode::UnsupportedMediaType.status(), 415);
        assert_eq!(ErrorCode::UnsupportedFileType.status(), 422);
        assert_eq!(ErrorCode::TooManyRequests.status(), 429);
        assert_eq!(ErrorCode::Internal.status(), 500);
        assert_eq!(ErrorCode::InsufficientStorage.status(), 507);
    }
}
