//! Say mode (docs/reference/say.md): `<say>` blocks become messages, `<file>` tags attach
//! files, and each message goes to every connector of the thread.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use ferry_app::events::connectors;
use ferry_app::threads::say::Attachment;
use ferry_app::threads::say::{self, SayResult};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::serve::{Servable, serve_download};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SayRequest {
    /// The model's output: `<say>…</say>` blocks and `<file mode="doc">/sandbox/…</file>` tags.
    pub text: String,
}

/// Delivers a say-mode reply (the agent, or service_role).
#[utoipa::path(
    post, path = "/api/threads/{id}/say", tag = "say",
    params(("id" = String, Path)),
    request_body = SayRequest,
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest, ErrorCode::InvalidPath], "a malformed body or a bad <file> path")),
        (status = 200, body = SayResult, description = "The messages the text became"),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only the agent speaks")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "a <say> block over 32 KiB as an event")),
    ),
    security(("bearer" = []))
)]
pub async fn say(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SayRequest>,
) -> ApiResult<Json<SayResult>> {
    Ok(Json(
        say::deliver(&state.app, &principal, &id, &body.text).await?,
    ))
}

async fn download(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    attachment: &Attachment,
) -> ApiResult<Response> {
    let file = Servable {
        blob_key: &attachment.blob_key,
        size: attachment.size,
        content_type: &attachment.mime_type,
        sha256: &attachment.sha256,
        modified: attachment.created_at,
        disposition: None,
    };
    serve_download(&state.app, method, headers, file, &attachment.filename).await
}

/// Downloads a message attachment.
#[utoipa::path(
    get, path = "/api/threads/{id}/attachments/{aid}/content", tag = "say",
    params(("id" = String, Path), ("aid" = String, Path)),
    responses((status = 200, description = "The bytes, as an attachment"), (status = 404, description = refusal(&[ErrorCode::NotFound], ""))),
    security(("bearer" = []))
)]
pub async fn attachment_content(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, aid)): ApiPath<(String, String)>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let attachment = say::attachment(&state.app, &principal, &id, &aid).await?;
    download(&state, &method, &headers, &attachment).await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SignedParams {
    /// Unix time after which the link no longer works.
    expires: u64,
    /// HMAC-SHA256 of the attachment id and `expires`, in hex.
    signature: String,
}

/// Downloads an attachment through a signed link (what webhooks receive): no token, but only
/// until the link expires, and only with an untampered signature.
#[utoipa::path(
    get, path = "/api/attachments/{aid}", tag = "say",
    params(("aid" = String, Path), SignedParams),
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "the link's expires or signature is malformed")),
        (status = 200, description = "The bytes"),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "a tampered or expired link")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    )
)]
pub async fn signed_attachment(
    State(state): State<AppState>,
    ApiPath(aid): ApiPath<String>,
    ApiQuery(params): ApiQuery<SignedParams>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    state
        .signer
        .verify(&aid, params.expires, &params.signature)?;
    let attachment = say::signed_attachment(&state.app, &aid).await?;
    download(&state, &method, &headers, &attachment).await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewConnector {
    /// `webhook`
    #[serde(rename = "type")]
    #[schema(pattern = "^webhook$")]
    pub kind: String,
    /// Where each message is POSTed: an http or https URL with a host.
    #[schema(pattern = "^https?://[^\\s/?#@]+(?:[/?#]\\S*)?$")]
    pub url: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorView {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    /// Only in the answer that creates it: the key of the `X-Ferry-Signature` HMAC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectorList {
    pub connectors: Vec<ConnectorView>,
}

/// Registers a webhook connector that receives every agent message of the thread.
#[utoipa::path(
    post, path = "/api/threads/{id}/connectors", tag = "say",
    params(("id" = String, Path)),
    request_body = NewConnector,
    responses(
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 201, body = ConnectorView, description = "The connector"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "not a webhook, or not an http(s) URL")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only the owner or service_role")),
    ),
    security(("bearer" = []))
)]
pub async fn create_connector(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<NewConnector>,
) -> ApiResult<Response> {
    let allow_private = state.config.webhooks.allow_private;
    let policy = |url: &str| -> Result<String, String> {
        let url = reqwest::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or("'url' must be an absolute http or https URL")?;
        crate::outbound::check_webhook_url(&url, allow_private)
            .map_err(|why| format!("'url' is refused: {why}"))?;
        Ok(url.into())
    };
    let row =
        connectors::register(&state.app, &principal, &id, &body.kind, &body.url, &policy).await?;
    Ok((
        StatusCode::CREATED,
        Json(ConnectorView {
            id: row.id,
            kind: row.kind,
            url: row.url,
            secret: Some(row.secret),
            created_at: row.created_at.rfc3339(),
        }),
    )
        .into_response())
}

/// Lists the thread's connectors (without their secrets).
#[utoipa::path(
    get, path = "/api/threads/{id}/connectors", tag = "say",
    params(("id" = String, Path)),
    responses(
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only the owner or service_role")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),(status = 200, body = ConnectorList, description = "The thread's connectors")),
    security(("bearer" = []))
)]
pub async fn list_connectors(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ConnectorList>> {
    let rows = connectors::list(&state.app, &principal, &id).await?;
    Ok(Json(ConnectorList {
        connectors: rows
            .into_iter()
            .map(|r| ConnectorView {
                id: r.id,
                kind: r.kind,
                url: r.url,
                secret: None,
                created_at: r.created_at.rfc3339(),
            })
            .collect(),
    }))
}

/// Removes a connector; its pending deliveries are dropped.
#[utoipa::path(
    delete, path = "/api/threads/{id}/connectors/{cid}", tag = "say",
    params(("id" = String, Path), ("cid" = String, Path)),
    responses((status = 204, description = "Removed"), (status = 404, description = refusal(&[ErrorCode::NotFound], ""))),
    security(("bearer" = []))
)]
pub async fn delete_connector(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, cid)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    connectors::remove(&state.app, &principal, &id, &cid).await?;
    Ok(StatusCode::NO_CONTENT)
}
