//! S3 access keys (docs/s3.md, credentials): made, listed and revoked by the principal they
//! act as. The secret is shown once, in the answer that makes the key.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use ferry_app::access_keys;
use ferry_store::access_keys::AccessKey;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::ApiResult;
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
    }
}

/// Makes an access key that acts as the caller, with exactly the caller's rights.
#[utoipa::path(
    post, path = "/api/s3/keys", tag = "s3",
    operation_id = "create_access_key",
    responses((status = 201, body = AccessKeyView, description = "The key, with its secret (shown only here)")),
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<(StatusCode, Json<AccessKeyView>)> {
    let key = access_keys::create(&state.app, &principal).await?;
    let secret = state.key_secrets.secret_of(&key.access_key_id);
    Ok((StatusCode::CREATED, Json(view(key, Some(secret)))))
}

/// Lists the access keys the caller made, without their secrets.
#[utoipa::path(
    get, path = "/api/s3/keys", tag = "s3",
    operation_id = "list_access_keys",
    responses((status = 200, body = AccessKeyList, description = "The caller's access keys")),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<Json<AccessKeyList>> {
    let keys = access_keys::list(&state.app, &principal).await?;
    Ok(Json(AccessKeyList {
        keys: keys.into_iter().map(|k| view(k, None)).collect(),
    }))
}

/// Revokes an access key the caller made; the next request signed with it is refused, on
/// every node.
#[utoipa::path(
    delete, path = "/api/s3/keys/{accessKeyId}", tag = "s3",
    operation_id = "revoke_access_key",
    params(("accessKeyId" = String, Path)),
    responses((status = 204, description = "Revoked"), (status = 404, description = "NOT_FOUND")),
    security(("bearer" = []))
)]
pub async fn revoke(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(access_key_id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    access_keys::revoke(&state.app, &principal, &access_key_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
