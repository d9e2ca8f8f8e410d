//! The server's one error type and the envelope it becomes (docs/reference/errors.md).
//!
//! Handlers return `Result<_, ApiError>`; every failure, including axum's own rejections, an
//! unknown route and a wrong method, leaves the server as
//! `{ "error": { "code": "…", "message": "…" } }` with the code's status. Internal failures are
//! logged in full and answered with a generic message: no stack trace or host path leaks.

pub use crate::error_code::{ErrorCode, HttpStatus};
use axum::Json;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// An answer other than 2xx.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// Set on a 401 for a token that was sent but refused (RFC 6750 `invalid_token`), rather
    /// than for a request that sent none: why it was refused.
    refused_token: Option<TokenFault>,
}

/// Why a bearer token that was sent was refused, for the doors that say the two apart (S3's
/// `ExpiredToken` and `InvalidToken`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenFault {
    Expired,
    Invalid,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            refused_token: None,
        }
    }

    /// A 401 for a request without usable credentials (no `Authorization: Bearer` header).
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthenticated, message)
    }

    /// A 401 for a bearer token that was sent and refused: expired, badly signed, malformed,
    /// or with claims ferry does not accept.
    pub fn invalid_token(message: impl Into<String>) -> Self {
        ApiError {
            refused_token: Some(TokenFault::Invalid),
            ..Self::new(ErrorCode::Unauthenticated, message)
        }
    }

    /// A 401 for a bearer token that was sent and has expired.
    pub fn expired_token(message: impl Into<String>) -> Self {
        ApiError {
            refused_token: Some(TokenFault::Expired),
            ..Self::new(ErrorCode::Unauthenticated, message)
        }
    }

    /// Why the token sent was refused, when this is such a refusal.
    pub fn token_fault(&self) -> Option<TokenFault> {
        self.refused_token
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

    /// A body over `limit` bytes.
    pub fn too_large(limit: u64) -> Self {
        ferry_app::Error::too_large(limit).into()
    }

    /// A failure that is the server's fault. The cause is logged (inside the request's span, so
    /// with its request id, which the answer's `X-Request-Id` repeats), not sent.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        ferry_app::Error::internal(cause).into()
    }
}

/// The body of every error answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub(crate) struct Envelope<'a> {
    #[schema(inline)]
    error: EnvelopeBody<'a>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct EnvelopeBody<'a> {
    #[schema(inline)]
    code: ErrorCode,
    /// What went wrong, in words meant for a person.
    message: &'a str,
}

impl ApiError {
    /// The envelope's JSON text.
    pub fn envelope_json(&self) -> String {
        serde_json::to_string(&Envelope {
            error: EnvelopeBody {
                code: self.code,
                message: &self.message,
            },
        })
        .unwrap_or_default()
    }
}

impl ApiError {
    /// The `WWW-Authenticate` challenge of a 401 (RFC 6750 §3): the realm alone when no token
    /// was sent, `error="invalid_token"` with a description when one was refused — so that
    /// clients (MCP clients among them) know a new token is needed, not an OAuth login.
    fn challenge(&self) -> HeaderValue {
        if self.refused_token.is_none() {
            return HeaderValue::from_static("Bearer realm=\"ferry\"");
        }
        // A quoted-string holds printable ASCII; quotes and backslashes are escaped.
        let description: String = self
            .message
            .chars()
            .filter(|c| c.is_ascii() && !c.is_ascii_control())
            .flat_map(|c| match c {
                '"' | '\\' => vec!['\\', c],
                c => vec![c],
            })
            .collect();
        HeaderValue::from_str(&format!(
            "Bearer realm=\"ferry\", error=\"invalid_token\", error_description=\"{description}\""
        ))
        .unwrap_or_else(|_| {
            HeaderValue::from_static("Bearer realm=\"ferry\", error=\"invalid_token\"")
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
        let mut response = (
            status,
            Json(Envelope {
                error: EnvelopeBody {
                    code: self.code,
                    message: &self.message,
                },
            }),
        )
            .into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if self.code == ErrorCode::Unauthenticated {
            headers.insert(header::WWW_AUTHENTICATE, self.challenge());
        }
        // A refusal that passes with time says when to ask again (RFC 9110 §10.2.3).
        if matches!(
            self.code,
            ErrorCode::TooManyRequests | ErrorCode::Unavailable
        ) {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// Every use case's refusal, and everything that converts into one (store, path and sandbox
/// errors), answers with its code here: the HTTP API's view of [`ferry_app::Error`].
impl<E: Into<ferry_app::Error>> From<E> for ApiError {
    fn from(e: E) -> Self {
        let e: ferry_app::Error = e.into();
        ApiError::new(e.code(), e.to_string())
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
