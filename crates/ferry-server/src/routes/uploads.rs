//! User → agent uploads (docs/reference/uploads.md).
//!
//! Each file is streamed to a local spool (hashed on the way, refused past the limit), then
//! copied into `/sandbox/user_uploads/`, previewed by the extraction worker, committed as a
//! permanent blob, and recorded with its `upload` event in one transaction. Every file of a
//! request is spooled before any is kept, so a request that fails keeps nothing.

use axum::Json;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use ferry_core::ValidPath;
use ferry_core::attachment::AttachmentNote;
use ferry_core::mime::{is_vision_image, mime_for_name};
use ferry_core::path::upload_file_name;
use ferry_store::Spooled;
use ferry_store::threads::Thread;
use ferry_store::uploads::{Upload, new_upload_id};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::access::{Action, thread_for};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::events::{MAX_EVENT_BYTES, Role, event_json};
use crate::extract::{ApiPath, ApiQuery, raw_segment};
use crate::serve::{Servable, serve_download};
use crate::state::AppState;

/// An upload as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadView {
    pub id: String,
    pub file_name: String,
    pub file_type: String,
    pub size: u64,
    pub sha256: String,
    /// `image` or `document`.
    pub kind: String,
    pub storage_path: String,
    pub sandbox_path: String,
    pub preview: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    pub attachment_xml: String,
    pub created_at: String,
}

impl From<&Upload> for UploadView {
    fn from(u: &Upload) -> Self {
        let attachment_xml = AttachmentNote {
            file_name: &u.file_name,
            file_type: &u.file_type,
            storage_path: &u.storage_path,
            sandbox_path: &u.sandbox_path,
            is_image: u.kind == "image",
            preview: u.preview.as_deref(),
            preview_error: u.preview_error.as_deref(),
        }
        .to_xml();
        UploadView {
            id: u.id.clone(),
            file_name: u.file_name.clone(),
            file_type: u.file_type.clone(),
            size: u.size,
            sha256: u.sha256.clone(),
            kind: u.kind.clone(),
            storage_path: u.storage_path.clone(),
            sandbox_path: u.sandbox_path.clone(),
            preview: u.preview.clone(),
            preview_error: u.preview_error.clone(),
            width: u.width,
            height: u.height,
            attachment_xml,
            created_at: u.created_at.rfc3339(),
        }
    }
}

impl UploadView {
    /// The same upload without its preview text, for events that would pass the size limit
    /// with it (the uploads route still has the preview).
    pub fn without_preview(&self) -> UploadView {
        let note = AttachmentNote {
            file_name: &self.file_name,
            file_type: &self.file_type,
            storage_path: &self.storage_path,
            sandbox_path: &self.sandbox_path,
            is_image: self.kind == "image",
            preview: None,
            preview_error: Some(
                "the preview is too long for an event; list the thread's uploads to read it",
            ),
        };
        UploadView {
            preview: None,
            attachment_xml: note.to_xml(),
            ..self.clone()
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UploadList {
    pub uploads: Vec<UploadView>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RawUploadParams {
    /// The file's name, for a raw (non-multipart) body.
    filename: Option<String>,
}

/// One file received and spooled, waiting to be kept.
struct Received {
    name: ValidPath,
    spooled: Spooled,
}

/// Uploads one or more files.
#[utoipa::path(
    post, path = "/api/threads/{id}/uploads", tag = "uploads",
    params(("id" = String, Path), RawUploadParams),
    request_body(content = Vec<u8>, description = "multipart/form-data with one or more `file` parts, or the raw bytes with ?filename= and a Content-Type"),
    responses(
        (status = 201, body = UploadList),
        (status = 400, description = "INVALID_PATH (the name) or INVALID_REQUEST"),
        (status = 403, description = "FORBIDDEN: agents do not upload"),
        (status = 404, description = "NOT_FOUND"),
        (status = 413, description = "REQUEST_TOO_LARGE"),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE: a raw body without Content-Type"),
    ),
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    ApiQuery(params): ApiQuery<RawUploadParams>,
    request: Request,
) -> ApiResult<(StatusCode, Json<UploadList>)> {
    let thread_id = raw_segment(request.uri().path(), 2).to_owned();
    let thread = thread_for(&state, &principal, &thread_id, Action::ActAsUser).await?;
    let limit = state.config.upload_max_bytes;
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();

    let mut received = Vec::new();
    if content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        let mut multipart = Multipart::from_request(request, &state)
            .await
            .map_err(|e| {
                ApiError::invalid_request(format!("the multipart body is malformed: {e}"))
            })?;
        while let Some(field) = multipart.next_field().await.map_err(|e| {
            ApiError::invalid_request(format!("the multipart body is malformed: {e}"))
        })? {
            if !matches!(field.name(), Some("file" | "files" | "file[]")) {
                continue;
            }
            let name = upload_file_name(field.file_name().unwrap_or(""))?;
            let spooled = state.blobs.spool(field, limit).await?;
            received.push(Received { name, spooled });
        }
        if received.is_empty() {
            return Err(ApiError::invalid_request(
                "the multipart body has no 'file' part",
            ));
        }
    } else {
        let raw_name = params.filename.ok_or_else(|| {
            ApiError::invalid_request(
                "send multipart/form-data with 'file' parts, or the raw bytes with ?filename=",
            )
        })?;
        let name = upload_file_name(&raw_name)?;
        crate::routes::spaces::usable_content_type(request.headers())?;
        crate::routes::spaces::check_declared_length(request.headers(), limit)?;
        let spooled = state
            .blobs
            .spool(request.into_body().into_data_stream(), limit)
            .await?;
        received.push(Received { name, spooled });
    }

    let mut views = Vec::with_capacity(received.len());
    for file in received {
        views.push(keep(&state, &thread, file).await?);
    }
    Ok((StatusCode::CREATED, Json(UploadList { uploads: views })))
}

/// Puts one spooled file where it belongs and records it.
async fn keep(state: &AppState, thread: &Thread, file: Received) -> ApiResult<UploadView> {
    let Received { name, spooled } = file;
    // Extraction is shared fairly between users, and the wait for it is bounded: past it the
    // upload is kept without a preview (the worker is stopped), so a busy server delays an
    // upload by at most the preview wait.
    let previewed = tokio::time::timeout(
        state.config.preview_wait,
        state.extractor.preview(
            &thread.owner,
            spooled.path(),
            name.as_str(),
            state.config.preview_max_chars,
        ),
    )
    .await;
    let (preview, preview_error, width, height) = match previewed {
        Ok(Ok(p)) => (p.text, None, p.width, p.height),
        Ok(Err(e)) => (None, Some(e.to_string()), None, None),
        Err(_) => (
            None,
            Some(format!(
                "the preview was skipped: the document reader was busy for more than {} s; \
                 the file itself is in the sandbox",
                state.config.preview_wait.as_secs()
            )),
            None,
            None,
        ),
    };
    let blob = state.blobs.commit(spooled).await?;
    let file_type = mime_for_name(name.as_str());
    let sandbox = state.sandboxes.open(&thread.id).await?;
    let sandbox_path = sandbox
        .copy_in_unique("user_uploads", &name, &blob, &state.blobs, &file_type)
        .await?;
    let id = new_upload_id();
    let upload = Upload {
        storage_path: format!(
            "chat-uploads/{}/{}/{}_{}",
            thread.owner, thread.id, id, name
        ),
        id,
        thread_id: thread.id.clone(),
        owner: thread.owner.clone(),
        file_type,
        kind: if is_vision_image(name.as_str()) {
            "image"
        } else {
            "document"
        }
        .to_owned(),
        file_name: name.into_string(),
        size: blob.size,
        sha256: blob.sha256.clone(),
        sandbox_path: format!("/sandbox/{sandbox_path}"),
        preview,
        preview_error,
        width,
        height,
        blob_key: blob.key.clone(),
        created_at: ferry_core::Timestamp(0),
    };
    let (upload, event) = state.db.insert_upload(upload, upload_event).await?;
    state.announce(event);
    Ok(UploadView::from(&upload))
}

/// The `upload` event. When the upload with its preview would pass the event size limit, the
/// preview is left out of the event (the upload itself keeps it; `GET …/uploads` shows it).
fn upload_event(upload: &Upload, id: i64, at: ferry_core::Timestamp) -> String {
    let view = UploadView::from(upload);
    let render = |view: &UploadView| {
        let mut extra = serde_json::Map::new();
        extra.insert(
            "upload".into(),
            serde_json::to_value(view).unwrap_or_default(),
        );
        event_json(
            id,
            at,
            "upload",
            Role::User,
            &upload.thread_id,
            Some(&format!("Uploaded {}", upload.file_name)),
            extra,
        )
    };
    let json = render(&view);
    if json.len() <= MAX_EVENT_BYTES {
        return json;
    }
    render(&view.without_preview())
}

/// Lists a thread's uploads, oldest first, with their previews.
#[utoipa::path(
    get, path = "/api/threads/{id}/uploads", tag = "uploads",
    params(("id" = String, Path)),
    responses((status = 200, body = UploadList), (status = 404, description = "NOT_FOUND")),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<UploadList>> {
    let thread = thread_for(&state, &principal, &id, Action::Read).await?;
    let uploads = state.db.uploads(&thread.id).await?;
    Ok(Json(UploadList {
        uploads: uploads.iter().map(UploadView::from).collect(),
    }))
}

/// Downloads an upload's original bytes.
#[utoipa::path(
    get, path = "/api/threads/{id}/uploads/{upload_id}/content", tag = "uploads",
    params(("id" = String, Path), ("upload_id" = String, Path)),
    responses((status = 200, description = "The original bytes, as an attachment"), (status = 404, description = "NOT_FOUND")),
    security(("bearer" = []))
)]
pub async fn content(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, upload_id)): ApiPath<(String, String)>,
    method: Method,
    headers: HeaderMap,
    _uri: Uri,
) -> ApiResult<Response> {
    let thread = thread_for(&state, &principal, &id, Action::Read).await?;
    let upload = state
        .db
        .upload(&thread.id, &upload_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no upload '{upload_id}' in this thread")))?;
    let file = Servable {
        blob_key: &upload.blob_key,
        size: upload.size,
        content_type: &upload.file_type,
        sha256: &upload.sha256,
        modified: upload.created_at,
        disposition: None,
    };
    serve_download(&state.blobs, &method, &headers, file, &upload.file_name).await
}
