//! S3 access keys (docs/s3.md, credentials): made by the principal they act as, and listed
//! and revoked by it and by the owner of the thread an agent's key acts in. The secret is
//! shown once, in the answer that makes the key.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use ferry_app::access::keys;
use ferry_app::access::keys::AccessKey;
use ferry_core::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{Principal, TokenExpiry};
use crate::error::ApiResult;
use crate::error_code::{ErrorCode, refusal};
use crate::extract::ApiPath;
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessKeyView {
    pub access_key_id: String,
    /// Only in the answer that makes the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_access_key: Option<String>,
    pub created_at: String,
    /// Whom the key acts as: `user`, `agent` (of `threadId`) or `service`.
    pub kind: String,
    /// The thread an agent's key acts in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// When the key stops working: an agent's key ends with the token that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AccessKeyList {
    pub keys: Vec<AccessKeyView>,
}

fn view(key: AccessKey, secret: Option<String>) -> AccessKeyView {
    AccessKeyView {
        access_key_id: key.access_key_id,
        secret_access_key: secret,
        created_at: key.created_at.rfc3339(),
        kind: key.kind,
        thread_id: key.thread_id,
        expires_at: key.expires_at.map(|t| t.rfc3339()),
    }
}

/// Makes an access key that acts as the caller, with exactly the caller's rights. A key an
/// agent makes stops working when the agent's token expires, and when its thread is gone.
#[utoipa::path(
    post, path = "/api/s3/keys", tag = "s3",
    operation_id = "create_access_key",
    responses((status = 201, body = AccessKeyView, description = "The key, with its secret (shown only here)")),
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    TokenExpiry(expires): TokenExpiry,
) -> ApiResult<(StatusCode, Json<AccessKeyView>)> {
    let expires_at = Timestamp(i64::try_from(expires.saturating_mul(1000)).unwrap_or(i64::MAX));
    let key = keys::create(&state.app, &principal, expires_at).await?;
    let secret = state.key_secrets.secret_of(&key.access_key_id);
    Ok((StatusCode::CREATED, Json(view(key, Some(secret)))))
}

/// Lists the access keys the caller made and those acting in threads it owns (every agent's,
/// for a service token), without their secrets.
#[utoipa::path(
    get, path = "/api/s3/keys", tag = "s3",
    operation_id = "list_access_keys",
    responses((status = 200, body = AccessKeyList, description = "The caller's access keys and those acting in its threads")),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<Json<AccessKeyList>> {
    let keys = keys::list(&state.app, &principal).await?;
    Ok(Json(AccessKeyList {
        keys: keys.into_iter().map(|k| view(k, None)).collect(),
    }))
}

/// Revokes an access key the caller made or that acts in a thread it owns; the next request
/// signed with it is refused, on every node.
#[utoipa::path(
    delete, path = "/api/s3/keys/{accessKeyId}", tag = "s3",
    operation_id = "revoke_access_key",
    params(("accessKeyId" = String, Path)),
    responses((status = 204, description = "Revoked"), (status = 404, description = refusal(&[ErrorCode::NotFound], ""))),
    security(("bearer" = []))
)]
pub async fn revoke(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(access_key_id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    keys::revoke(&state.app, &principal, &access_key_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
