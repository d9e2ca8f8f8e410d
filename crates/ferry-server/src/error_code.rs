//! The error codes of the HTTP API's envelope and the status each one answers with
//! (docs/reference/errors.md).

use axum::http::StatusCode;
use serde::Serialize;

/// One code of the `{ "error": { "code", "message" } }` envelope.
///
/// Beside the codes every API answers with, five that HTTP itself needs: a wrong method, an
/// unsatisfiable `Range`, a client over its share (too many open streams), a busy server, and
/// a full disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
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
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::Unauthenticated => StatusCode::UNAUTHORIZED,
            ErrorCode::Forbidden => StatusCode::FORBIDDEN,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::InvalidPath | ErrorCode::InvalidRequest => StatusCode::BAD_REQUEST,
            ErrorCode::AlreadyExists => StatusCode::CONFLICT,
            ErrorCode::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            ErrorCode::RequestTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::RangeNotSatisfiable => StatusCode::RANGE_NOT_SATISFIABLE,
            ErrorCode::UnsupportedFileType => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
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
        assert_eq!(ErrorCode::Unauthenticated.status().as_u16(), 401);
        assert_eq!(ErrorCode::Forbidden.status().as_u16(), 403);
        assert_eq!(ErrorCode::NotFound.status().as_u16(), 404);
        assert_eq!(ErrorCode::InvalidPath.status().as_u16(), 400);
        assert_eq!(ErrorCode::InvalidRequest.status().as_u16(), 400);
        assert_eq!(ErrorCode::AlreadyExists.status().as_u16(), 409);
        assert_eq!(ErrorCode::PreconditionFailed.status().as_u16(), 412);
        assert_eq!(ErrorCode::RequestTooLarge.status().as_u16(), 413);
        assert_eq!(ErrorCode::UnsupportedMediaType.status().as_u16(), 415);
        assert_eq!(ErrorCode::UnsupportedFileType.status().as_u16(), 422);
        assert_eq!(ErrorCode::TooManyRequests.status().as_u16(), 429);
        assert_eq!(ErrorCode::Internal.status().as_u16(), 500);
        assert_eq!(ErrorCode::InsufficientStorage.status().as_u16(), 507);
    }
}
