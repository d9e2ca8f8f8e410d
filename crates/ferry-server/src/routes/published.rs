//! Agent → user: publish with revisions, downloads and previews (docs/reference/publish.md).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use ferry_app::events::views;
use ferry_app::previews::Preview;
use ferry_app::publish::Revision;
use ferry_app::publish::{self, Publication};
use ferry_core::file_views::PublishedView;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::routes::preview::serve_preview;
use crate::serve::{Servable, serve_download};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishRequest {
    /// The file in the sandbox, e.g. `/sandbox/outputs/report.docx`.
    pub file_path: String,
    /// The name the user sees; the same name again publishes a new revision.
    pub display_name: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PublishedList {
    pub files: Vec<PublishedView>,
}

/// Publishes a sandbox file to the user (the agent, or service_role).
#[utoipa::path(
    post, path = "/api/threads/{id}/published", tag = "publish",
    operation_id = "publish_file",
    params(("id" = String, Path)),
    request_body = PublishRequest,
    responses(
        (status = 201, body = PublishedView, description = "A new display name"),
        (status = 200, body = PublishedView, description = "A new revision of an existing one"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath], "outside the sandbox")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only the agent publishes")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "no such file")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "")),
    ),
    security(("bearer" = []))
)]
pub async fn publish(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<PublishRequest>,
) -> ApiResult<Response> {
    let revision = publish::publish(
        &state.app,
        &principal,
        &id,
        Publication {
            file_path: &body.file_path,
            display_name: &body.display_name,
            description: body.description,
        },
    )
    .await?;
    let status = if revision.revision == 1 {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(views::published(&revision))).into_response())
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// `all`: every revision instead of the latest of each file.
    revisions: Option<String>,
}

/// Lists the thread's published files (the latest revision of each, or every revision).
#[utoipa::path(
    get, path = "/api/threads/{id}/published", tag = "publish",
    operation_id = "list_published",
    params(("id" = String, Path), ListParams),
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "revisions is not all or latest")),(status = 200, body = PublishedList, description = "The files the agent published, newest first"), (status = 404, description = refusal(&[ErrorCode::NotFound], ""))),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<PublishedList>> {
    let all = match params.revisions.as_deref() {
        None | Some("latest") => false,
        Some("all") => true,
        Some(other) => {
            return Err(ApiError::invalid_request(format!(
                "'revisions' must be 'all' or 'latest', not '{other}'"
            )));
        }
    };
    let revisions = publish::list(&state.app, &principal, &id, all).await?;
    Ok(Json(PublishedList {
        files: revisions.iter().map(views::published).collect(),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RevisionParams {
    /// A revision number (default: the latest).
    pub(crate) revision: Option<u32>,
}

/// Sends a published file's bytes as a download.
pub async fn download(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    revision: &Revision,
) -> ApiResult<Response> {
    let file = Servable {
        blob_key: &revision.blob_key,
        size: revision.file_size,
        content_type: &revision.mime_type,
        sha256: &revision.sha256,
        modified: revision.published_at,
        disposition: None,
    };
    serve_download(&state.app, method, headers, file, &revision.filename).await
}

/// Downloads a published file (any revision).
#[utoipa::path(
    get, path = "/api/threads/{id}/published/{pid}/content", tag = "publish",
    operation_id = "published_content",
    params(("id" = String, Path), ("pid" = String, Path), RevisionParams),
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "a bad revision")),(status = 200, description = "The bytes, Content-Disposition: attachment"), (status = 404, description = refusal(&[ErrorCode::NotFound], ""))),
    security(("bearer" = []))
)]
pub async fn content(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, pid)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<RevisionParams>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let revision = publish::revision(&state.app, &principal, &id, &pid, params.revision).await?;
    download(&state, &method, &headers, &revision).await
}

/// Previews a published file by its `preview_kind`, with headers that keep any script in it
/// from running on ferry's origin.
#[utoipa::path(
    get, path = "/api/threads/{id}/published/{pid}/preview", tag = "publish",
    operation_id = "published_preview",
    params(("id" = String, Path), ("pid" = String, Path), RevisionParams),
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "a bad revision")),
        (status = 200, description = "image: the image; pdf: application/pdf inline; html: sanitized HTML"),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "no such file, or its previewKind is none")),
    ),
    security(("bearer" = []))
)]
pub async fn preview(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, pid)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<RevisionParams>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let revision = publish::revision(&state.app, &principal, &id, &pid, params.revision).await?;
    serve_preview(&state, &method, &headers, &Preview::of_revision(&revision)).await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StorageParams {
    /// `deepagent-outputs/{thread}/{filename}`, as the publish answer gave it.
    storage_path: String,
}

/// `/api/storage/thread-file`: a published file by its storage path, for whoever may read
/// that thread.
#[utoipa::path(
    get, path = "/api/storage/thread-file", tag = "publish",
    params(StorageParams),
    responses(
        (status = 200, description = "The bytes of the newest revision stored under that path"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath], "not a deepagent-outputs path")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    ),
    security(("bearer" = []))
)]
pub async fn thread_file(
    State(state): State<AppState>,
    principal: Principal,
    ApiQuery(params): ApiQuery<StorageParams>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let revision = publish::by_storage_path(&state.app, &principal, &params.storage_path).await?;
    download(&state, &method, &headers, &revision).await
}
