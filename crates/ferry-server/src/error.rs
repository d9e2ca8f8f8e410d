//! The server's one error type and the envelope it becomes (docs/reference/errors.md).
//!
//! Handlers return `Result<_, ApiError>`; every failure, including axum's own rejections, an
//! unknown route and a wrong method, leaves the server as
//! `{ "error": { "code": "…", "message": "…" } }` with the code's status. Internal failures are
//! logged in full and answered with a generic message: no stack trace or host path leaks.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ferry_core::ErrorCode;
use ferry_core::path::PathError;
use ferry_core::space_name::SpaceNameError;
use ferry_store::{StoreError, WriteError};
use serde::Serialize;

/// An answer other than 2xx.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthenticated, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    pub fn too_large(limit: u64) -> Self {
        Self::new(
            ErrorCode::RequestTooLarge,
            format!(
                "the body is larger than the limit of {}",
                describe_bytes(limit)
            ),
        )
    }

    /// The answer while the disk is full: nothing was stored, and the same request succeeds
    /// once there is room again.
    pub fn disk_full(cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "the disk is full");
        Self::new(
            ErrorCode::InsufficientStorage,
            "the server's disk is full; nothing was stored. Try again once space is freed",
        )
    }

    /// An I/O failure: a full disk is said as such, anything else is internal.
    pub fn io(cause: std::io::Error) -> Self {
        if ferry_store::is_disk_full(&cause) {
            Self::disk_full(cause)
        } else {
            Self::internal(cause)
        }
    }

    /// A failure that is the server's fault. The cause is logged (inside the request's span, so
    /// with its request id, which the answer's `X-Request-Id` repeats), not sent.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "internal error");
        Self::new(
            ErrorCode::Internal,
            "internal error; the server log has the details",
        )
    }
}

/// A size in words, as limits are reported: `5 MiB (5242880 bytes)`.
pub fn describe_bytes(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    const KIB: u64 = 1 << 10;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB ({bytes} bytes)", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB ({bytes} bytes)", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    error: EnvelopeBody<'a>,
}

#[derive(Serialize)]
struct EnvelopeBody<'a> {
    code: &'a str,
    message: &'a str,
}

impl ApiError {
    /// The envelope's JSON text.
    pub fn envelope_json(&self) -> String {
        serde_json::to_string(&Envelope {
            error: EnvelopeBody {
                code: self.code.as_str(),
                message: &self.message,
            },
        })
        .unwrap_or_default()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (
            status,
            Json(Envelope {
                error: EnvelopeBody {
                    code: self.code.as_str(),
                    message: &self.message,
                },
            }),
        )
            .into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if self.code == ErrorCode::Unauthenticated {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"ferry\""),
            );
        }
        response
    }
}

impl From<PathError> for ApiError {
    fn from(e: PathError) -> Self {
        ApiError::new(ErrorCode::InvalidPath, e.to_string())
    }
}

impl From<SpaceNameError> for ApiError {
    fn from(e: SpaceNameError) -> Self {
        ApiError::new(ErrorCode::InvalidPath, e.to_string())
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ApiError::not_found("not found"),
            StoreError::AlreadyExists => ApiError::new(
                ErrorCode::AlreadyExists,
                "something already exists at this path",
            ),
            StoreError::PreconditionFailed => ApiError::new(
                ErrorCode::PreconditionFailed,
                "the file's current ETag does not match If-Match",
            ),
            other if other.is_disk_full() => ApiError::disk_full(other),
            other => ApiError::internal(other),
        }
    }
}

impl From<WriteError> for ApiError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::TooLarge { limit } => ApiError::too_large(limit),
            WriteError::Body(message) => ApiError::invalid_request(message),
            WriteError::Io(io) => ApiError::io(io),
        }
    }
}

impl From<std::io::Error> for ApiError {
    fn from(e: std::io::Error) -> Self {
        ApiError::io(e)
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
