//! Agent → user: publish with revisions, downloads and previews (docs/reference/publish.md).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ferry_core::{ErrorCode, SandboxPath};
use ferry_store::published::{NewRevision, Revision};
use ferry_store::sandbox::SandboxError;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::access::{Action, thread_for};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::events::{Role, event_json};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::serve::{Servable, attachment_disposition, header_value, serve_blob, serve_download};
use crate::state::AppState;

/// The Content-Security-Policy of `html` and `image` previews (docs/reference/publish.md): nothing may load or
/// run, and `sandbox` gives the document an opaque origin even if opened directly.
pub const PREVIEW_CSP: &str =
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox";

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

/// The publish answer (the tool result agents were built against, plus `id`, `revision`, `preview_kind`; docs/reference/publish.md).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PublishedView {
    pub success: bool,
    pub id: String,
    pub display_name: String,
    pub description: String,
    pub filename: String,
    pub file_type: String,
    pub mime_type: String,
    pub file_size: u64,
    pub storage_path: String,
    pub sandbox_path: String,
    pub revision: u32,
    pub published_at: String,
    /// `image`, `pdf`, `html` or `none`.
    pub preview_kind: String,
}

impl From<&Revision> for PublishedView {
    fn from(r: &Revision) -> Self {
        PublishedView {
            success: true,
            id: r.file_id.clone(),
            display_name: r.display_name.clone(),
            description: r.description.clone(),
            filename: r.filename.clone(),
            file_type: r.file_type.clone(),
            mime_type: r.mime_type.clone(),
            file_size: r.file_size,
            storage_path: r.storage_path.clone(),
            sandbox_path: r.sandbox_path.clone(),
            revision: r.revision,
            published_at: r.published_at.rfc3339(),
            preview_kind: r.preview_kind.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PublishedList {
    pub files: Vec<PublishedView>,
}

/// The extension as it is recorded: `.docx`, lower-cased; empty when there is none.
fn file_type_of(name: &str) -> String {
    ferry_core::send_file::extension_of(name).unwrap_or_default()
}

/// Publishes a sandbox file to the user (the agent, or service_role).
#[utoipa::path(
    post, path = "/api/threads/{id}/published", tag = "publish",
    params(("id" = String, Path)),
    request_body = PublishRequest,
    responses(
        (status = 201, body = PublishedView, description = "A new display name"),
        (status = 200, body = PublishedView, description = "A new revision of an existing one"),
        (status = 400, description = "INVALID_PATH: outside the sandbox"),
        (status = 403, description = "FORBIDDEN: only the agent publishes"),
        (status = 404, description = "NOT_FOUND: no such file"),
        (status = 413, description = "REQUEST_TOO_LARGE"),
    ),
    security(("bearer" = []))
)]
pub async fn publish(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<PublishRequest>,
) -> ApiResult<Response> {
    let thread = thread_for(&state, &principal, &id, Action::ActAsAgent).await?;
    let display_name = body.display_name.trim().to_owned();
    if display_name.is_empty() || display_name.chars().count() > 200 {
        return Err(ApiError::invalid_request(
            "'display_name' must be 1 to 200 characters",
        ));
    }
    let path = SandboxPath::parse(&body.file_path)?;
    let sandbox = state.sandboxes.open(&thread.id).await?;
    let opened = sandbox.open(path.relative()).await.map_err(|e| match e {
        SandboxError::NotFound => {
            ApiError::not_found(format!("File not found: {}", body.file_path))
        }
        other => other.into(),
    })?;
    let limit = state.config.publish_max_bytes;
    if opened.size > limit {
        return Err(ApiError::too_large(limit));
    }
    // The stored copy is permanent: it is taken now, so later changes to the sandbox file do
    // not reach it. Unchanged bytes reuse the blob an earlier revision already stored.
    let spooled = state
        .blobs
        .spool(opened.stream(None).await?.stream, limit)
        .await?;
    let (blob_key, sha256, size) = match state
        .db
        .published_blob_with_sha(&thread.id, spooled.sha256())
        .await?
    {
        Some(key) => (key, spooled.sha256().to_owned(), spooled.size()),
        None => {
            let blob = state.blobs.commit(spooled).await?;
            (blob.key, blob.sha256, blob.size)
        }
    };
    let filename = path.file_name().to_owned();
    let new = NewRevision {
        thread_id: thread.id.clone(),
        display_name,
        description: body.description,
        file_type: file_type_of(&filename),
        mime_type: ferry_core::mime::mime_for_name(&filename),
        file_size: size,
        sha256,
        storage_path: format!("deepagent-outputs/{}/{}", thread.id, filename),
        sandbox_path: path.display(),
        blob_key,
        preview_kind: ferry_extract::preview_kind(&filename).as_str().to_owned(),
        filename,
    };
    let agent = match &principal {
        Principal::Agent { agent_id, .. } => agent_id.clone(),
        _ => crate::events::DEFAULT_AGENT_ID.to_owned(),
    };
    let (revision, event) = state
        .db
        .publish(new, |revision, id, at| {
            let view = PublishedView::from(revision);
            let mut extra = serde_json::Map::new();
            extra.insert(
                "file".into(),
                serde_json::to_value(&view).unwrap_or_default(),
            );
            event_json(
                id,
                at,
                "file_published",
                Role::Agent(&agent),
                &revision.thread_id,
                Some(&format!("Published {}", revision.display_name)),
                extra,
            )
        })
        .await?;
    state.announce(event);
    let status = if revision.revision == 1 {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(PublishedView::from(&revision))).into_response())
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
    params(("id" = String, Path), ListParams),
    responses((status = 200, body = PublishedList), (status = 404, description = "NOT_FOUND")),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<PublishedList>> {
    let thread = thread_for(&state, &principal, &id, Action::Read).await?;
    let all = match params.revisions.as_deref() {
        None | Some("latest") => false,
        Some("all") => true,
        Some(other) => {
            return Err(ApiError::invalid_request(format!(
                "'revisions' must be 'all' or 'latest', not '{other}'"
            )));
        }
    };
    let revisions = state.db.published(&thread.id, all).await?;
    Ok(Json(PublishedList {
        files: revisions.iter().map(PublishedView::from).collect(),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RevisionParams {
    /// A revision number (default: the latest).
    revision: Option<u32>,
}

async fn find_revision(
    state: &AppState,
    principal: &Principal,
    id: &str,
    file_id: &str,
    revision: Option<u32>,
) -> ApiResult<Revision> {
    let thread = thread_for(state, principal, id, Action::Read).await?;
    state
        .db
        .published_revision(&thread.id, file_id, revision)
        .await?
        .ok_or_else(|| match revision {
            Some(n) => {
                ApiError::not_found(format!("published file '{file_id}' has no revision {n}"))
            }
            None => ApiError::not_found(format!("no published file '{file_id}' in this thread")),
        })
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
    serve_download(&state.blobs, method, headers, file, &revision.filename).await
}

/// Downloads a published file (any revision).
#[utoipa::path(
    get, path = "/api/threads/{id}/published/{pid}/content", tag = "publish",
    params(("id" = String, Path), ("pid" = String, Path), RevisionParams),
    responses((status = 200, description = "The bytes, Content-Disposition: attachment"), (status = 404, description = "NOT_FOUND")),
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
    let revision = find_revision(&state, &principal, &id, &pid, params.revision).await?;
    download(&state, &method, &headers, &revision).await
}

/// Previews a published file by its `preview_kind`, with headers that keep any script in it
/// from running on ferry's origin.
#[utoipa::path(
    get, path = "/api/threads/{id}/published/{pid}/preview", tag = "publish",
    params(("id" = String, Path), ("pid" = String, Path), RevisionParams),
    responses(
        (status = 200, description = "image: the image; pdf: application/pdf inline; html: sanitized HTML"),
        (status = 404, description = "NOT_FOUND, or preview_kind none"),
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
    let revision = find_revision(&state, &principal, &id, &pid, params.revision).await?;
    let servable = |content_type: &'static str, disposition: String| Servable {
        blob_key: &revision.blob_key,
        size: revision.file_size,
        content_type,
        sha256: &revision.sha256,
        modified: revision.published_at,
        disposition: Some(disposition),
    };
    let inline = format!(
        "inline{}",
        attachment_disposition(&revision.filename).trim_start_matches("attachment")
    );
    let mut response = match revision.preview_kind.as_str() {
        "image" => {
            // The type comes from ferry's own table, never from the file: an SVG is always
            // image/svg+xml, and with the CSP below it cannot run script even if opened alone.
            let content_type = match revision.file_type.as_str() {
                ".png" => "image/png",
                ".jpg" | ".jpeg" => "image/jpeg",
                ".gif" => "image/gif",
                ".webp" => "image/webp",
                ".svg" => "image/svg+xml",
                _ => return Err(no_preview()),
            };
            let mut response = serve_blob(
                &state.blobs,
                &method,
                &headers,
                servable(content_type, inline),
            )
            .await?;
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(PREVIEW_CSP),
            );
            response
        }
        "pdf" => {
            // No CSP sandbox here: it would stop the browser's own PDF viewer.
            serve_blob(
                &state.blobs,
                &method,
                &headers,
                servable("application/pdf", inline),
            )
            .await?
        }
        "html" => {
            let html = crate::previews::rendered_html(&state, &revision).await?;
            let mut response = (
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/html; charset=utf-8"),
                    ),
                    (
                        header::CACHE_CONTROL,
                        HeaderValue::from_static("private, max-age=3600"),
                    ),
                    (
                        header::ETAG,
                        header_value(&format!("\"html-{}\"", revision.sha256))?,
                    ),
                ],
                html,
            )
                .into_response();
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(PREVIEW_CSP),
            );
            response
        }
        _ => return Err(no_preview()),
    };
    let h = response.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    Ok(response)
}

fn no_preview() -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        "Preview not available — download to view",
    )
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
        (status = 400, description = "INVALID_PATH: not a deepagent-outputs path"),
        (status = 404, description = "NOT_FOUND"),
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
    let parts: Vec<&str> = params.storage_path.split('/').collect();
    let [bucket, thread_id, name] = parts.as_slice() else {
        return Err(ApiError::new(
            ErrorCode::InvalidPath,
            "storage_path must be deepagent-outputs/{thread}/{filename}",
        ));
    };
    if *bucket != "deepagent-outputs" || thread_id.is_empty() || name.is_empty() {
        return Err(ApiError::new(
            ErrorCode::InvalidPath,
            "storage_path must be deepagent-outputs/{thread}/{filename}",
        ));
    }
    let thread = thread_for(&state, &principal, thread_id, Action::Read).await?;
    let revision = state
        .db
        .published_by_storage_path(&params.storage_path)
        .await?
        .filter(|r| r.thread_id == thread.id)
        .ok_or_else(|| ApiError::not_found(format!("File not found: {}", params.storage_path)))?;
    download(&state, &method, &headers, &revision).await
}
