//! The status each error code of the envelope answers with over HTTP
//! (docs/reference/errors.md). The codes themselves are `ferry_core::error_code`, one list for
//! every door.

use axum::http::StatusCode;

pub use ferry_core::error_code::ErrorCode;

/// How an error response is described in the OpenAPI document: the codes it answers with,
/// then why, as in `INVALID_PATH or INVALID_REQUEST: a bad pattern`. Route annotations name
/// the codes as [`ErrorCode`] values, so only a code of the envelope can be documented, and a
/// test holds each to its response's status.
pub fn refusal(codes: &[ErrorCode], why: &str) -> String {
    let codes: Vec<&str> = codes.iter().map(|code| code.as_str()).collect();
    match why {
        "" => codes.join(" or "),
        why => format!("{}: {why}", codes.join(" or ")),
    }
}

/// The HTTP status of an error code.
pub trait HttpStatus {
    fn status(self) -> StatusCode;
}

impl HttpStatus for ErrorCode {
    fn status(self) -> StatusCode {
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
            ErrorCode::OffsetMismatch => StatusCode::CONFLICT,
            // tus 1.0's status for a checksum that does not match (its checksum extension).
            ErrorCode::ChecksumMismatch => {
                StatusCode::from_u16(460).unwrap_or(StatusCode::BAD_REQUEST)
            }
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
            ErrorCode::NotImplemented => StatusCode::NOT_IMPLEMENTED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(ErrorCode::OffsetMismatch.status().as_u16(), 409);
        assert_eq!(ErrorCode::ChecksumMismatch.status().as_u16(), 460);
        assert_eq!(ErrorCode::Internal.status().as_u16(), 500);
        assert_eq!(ErrorCode::InsufficientStorage.status().as_u16(), 507);
    }
}
