//! Request extractors whose rejections are API errors in the envelope: the caller
//! ([`Principal`], from its bearer token), JSON bodies, queries and raw path segments.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use bytes::Bytes;
use serde::Deserialize as _;
use serde::de::DeserializeOwned;

use crate::auth::{Principal, TokenExpiry, VerifiedToken};
use crate::error::ApiError;
use crate::state::AppState;

/// The largest JSON body any route accepts; JSON bodies here are small commands.
const MAX_JSON_BODY: usize = 1 << 20;

/// A JSON body. Unlike axum's `Json`, it does not insist on a `Content-Type`, and malformed
/// JSON is `INVALID_REQUEST` with serde's description of what was wrong.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        let body = axum::body::to_bytes(req.into_body(), MAX_JSON_BODY)
            .await
            .map_err(|_| ApiError::too_large(MAX_JSON_BODY as u64))?;
        parse_json(&body).map(ApiJson)
    }
}

/// The door a request came through: MCP's tools mark theirs (`X-Ferry-Door: mcp`); anything
/// else is the HTTP API. It only labels changes in feeds.
#[derive(Debug, Clone, Copy)]
pub struct DoorOf(pub ferry_core::door::Door);

impl<S: Send + Sync> FromRequestParts<S> for DoorOf {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let value = parts
            .headers
            .get(ferry_core::door::DOOR_HEADER)
            .and_then(|v| v.to_str().ok());
        Ok(DoorOf(ferry_core::door::Door::of_header(value)))
    }
}

/// An optional JSON body: an empty body is `None`; anything else must parse.
impl<S: Send + Sync, T: DeserializeOwned> axum::extract::OptionalFromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Option<Self>, ApiError> {
        let body = axum::body::to_bytes(req.into_body(), MAX_JSON_BODY)
            .await
            .map_err(|_| ApiError::too_large(MAX_JSON_BODY as u64))?;
        // An optional body may be left out, sent empty, or sent as JSON `null` (what the
        // OpenAPI document's `X | null` lets a generated client send).
        if body.iter().all(u8::is_ascii_whitespace) || body.trim_ascii() == b"null" {
            return Ok(None);
        }
        parse_json(&body).map(|v| Some(ApiJson(v)))
    }
}

fn parse_json<T: DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    if body.is_empty() {
        return Err(ApiError::invalid_request("the request needs a JSON body"));
    }
    // Every body is a JSON object. Without this check serde would also read a struct from an
    // array of its fields in order (`[null, null]`), which no document promises.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(ApiError::invalid_request("the JSON body must be an object"));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid_request(format!("the JSON body is not valid: {e}")))
}

/// An optional whole number in a JSON body, written `944` or `944.0`: JSON (and the OpenAPI
/// document's `integer`) do not tell the two apart, so neither does the server.
pub fn whole_number<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    if let Some(n) = number.as_u64() {
        return Ok(Some(n));
    }
    match number.as_f64() {
        Some(f) if f.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&f) => Ok(Some(f as u64)),
        _ => Err(serde::de::Error::custom(format!(
            "expected a whole number of at least 0, not {number}"
        ))),
    }
}

/// Query parameters; a bad one is `INVALID_REQUEST` naming the parameter.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        serde_urlencoded_from_str(query).map(ApiQuery)
    }
}

fn serde_urlencoded_from_str<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    axum::extract::Query::<T>::try_from_uri(
        &format!("/?{query}")
            .parse()
            .map_err(|_| ApiError::invalid_request("the query string is malformed"))?,
    )
    .map(|q| q.0)
    .map_err(|e| ApiError::invalid_request(format!("bad query: {}", e.body_text())))
}

/// The raw (still percent-encoded) text of a route's trailing wildcard, so that the one path
/// validator decodes it exactly once. `skip` is the number of path segments before it.
pub fn raw_tail(path: &str, skip: usize) -> &str {
    let mut rest = path.strip_prefix('/').unwrap_or(path);
    for _ in 0..skip {
        rest = rest.split_once('/').map(|(_, r)| r).unwrap_or("");
    }
    rest
}

/// The raw text of the path segment at `index` (0 = the first after the leading `/`).
pub fn raw_segment(path: &str, index: usize) -> &str {
    path.strip_prefix('/')
        .unwrap_or(path)
        .split('/')
        .nth(index)
        .unwrap_or("")
}

/// A path parameter; one that cannot be read (e.g. invalid UTF-8 after decoding) is
/// `INVALID_PATH` instead of axum's plain-text rejection.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e| {
                ApiError::new(
                    crate::error::ErrorCode::InvalidPath,
                    format!("the URL path cannot be read: {}", e.body_text()),
                )
            })
    }
}

/// Reads `Authorization: Bearer <JWT>`.
fn bearer(parts: &Parts) -> Result<&str, ApiError> {
    let value = parts.headers.get(AUTHORIZATION).ok_or_else(|| {
        ApiError::unauthenticated("missing bearer token: send 'Authorization: Bearer <JWT>'")
    })?;
    let value = value
        .to_str()
        .map_err(|_| ApiError::unauthenticated("the Authorization header is not valid text"))?;
    match value.split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Ok(token.trim())
        }
        _ => Err(ApiError::unauthenticated(
            "the Authorization header must be 'Bearer <JWT>'",
        )),
    }
}

/// The request's bearer token, verified once per request: later extractors find it here.
async fn verified_token(parts: &mut Parts, state: &AppState) -> Result<VerifiedToken, ApiError> {
    if let Some(verified) = parts.extensions.get::<VerifiedToken>() {
        return Ok(verified.clone());
    }
    let verified = state.auth.verify_token(bearer(parts)?).await?;
    if !ferry_app::access::is_live(&state.app, &verified.principal).await? {
        return Err(ApiError::unauthenticated(ferry_app::access::THREAD_GONE));
    }
    parts.extensions.insert(verified.clone());
    Ok(verified)
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(verified_token(parts, state).await?.principal)
    }
}

impl FromRequestParts<AppState> for TokenExpiry {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(TokenExpiry(verified_token(parts, state).await?.expires_at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_tail_keeps_encoding() {
        assert_eq!(raw_tail("/api/spaces/s/files/a%2Fb/c", 4), "a%2Fb/c");
        assert_eq!(raw_tail("/api/spaces/s/files/%2e%2e", 4), "%2e%2e");
        assert_eq!(raw_tail("/api/spaces/s/files/", 4), "");
    }
}
