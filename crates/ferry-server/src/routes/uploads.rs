//! User → agent uploads over HTTP (docs/reference/uploads.md): a multipart body with `file`
//! parts, or one raw body with `?filename=`. Every file is spooled before any is kept
//! (`ferry_app::threads::uploads`), so a request that fails keeps nothing.

use axum::Json;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::Response;
use ferry_app::body::Incoming;
use ferry_app::previews::Preview;
use ferry_app::threads::uploads;
use ferry_core::file_views::UploadView;
use ferry_core::path::upload_file_name;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiPath, ApiQuery, raw_segment};
use crate::openapi::{FileBytes, UploadForm};
use crate::routes::preview::serve_preview;
use crate::serve::{Servable, serve_download};
use crate::state::AppState;
use crate::write_headers::{declared_length, usable_content_type};

#[derive(Debug, Serialize, ToSchema)]
pub struct UploadList {
    pub uploads: Vec<UploadView>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RawUploadParams {
    /// The file's name, for a raw (non-multipart) body; refused beside a multipart body, whose
    /// parts name their files.
    filename: Option<String>,
}

/// Uploads one or more files.
#[utoipa::path(
    post, path = "/api/threads/{id}/uploads", tag = "uploads",
    operation_id = "create_upload",
    params(("id" = String, Path), RawUploadParams),
    request_body(
        description = "multipart/form-data with one or more `file` parts, or the raw bytes with ?filename= and their Content-Type",
        content(
            (UploadForm = "multipart/form-data"),
            (FileBytes = "application/octet-stream"),
            (FileBytes = "*/*"),
        ),
    ),
    responses(
        (status = 201, body = UploadList, description = "The stored uploads, with their previews"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "a file's name is not a valid path, or the form is malformed")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "agents do not upload")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "")),
        (status = 415, description = refusal(&[ErrorCode::UnsupportedMediaType], "a raw body without Content-Type")),
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
    let mut receiver = uploads::receive(&state.app, &principal, &thread_id).await?;
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();

    if content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        // Each part names its own file: a name beside them would name none of them.
        if params.filename.is_some() {
            return Err(ApiError::invalid_request(
                "?filename= names the file of a raw body; a multipart body names each file in its part",
            ));
        }
        let mut multipart = Multipart::from_request(request, &state)
            .await
            .map_err(malformed)?;
        while let Some(field) = multipart.next_field().await.map_err(malformed)? {
            if !matches!(field.name(), Some("file" | "files" | "file[]")) {
                continue;
            }
            let name = upload_file_name(field.file_name().unwrap_or(""))?;
            receiver.spool(name, Incoming::undeclared(field)).await?;
        }
        if receiver.is_empty() {
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
        usable_content_type(request.headers())?;
        let declared = declared_length(request.headers());
        let body = Incoming::new(request.into_body().into_data_stream(), declared);
        receiver.spool(name, body).await?;
    }
    let uploads = receiver.keep().await?;
    Ok((StatusCode::CREATED, Json(UploadList { uploads })))
}

/// Lists a thread's uploads, oldest first, with their previews.
#[utoipa::path(
    get, path = "/api/threads/{id}/uploads", tag = "uploads",
    operation_id = "list_uploads",
    params(("id" = String, Path)),
    responses((status = 200, body = UploadList, description = "The thread's uploads"), (status = 404, description = refusal(&[ErrorCode::NotFound], ""))),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<UploadList>> {
    let uploads = uploads::list(&state.app, &principal, &id).await?;
    Ok(Json(UploadList { uploads }))
}

/// Downloads an upload's original bytes.
#[utoipa::path(
    get, path = "/api/threads/{id}/uploads/{upload_id}/content", tag = "uploads",
    operation_id = "upload_content",
    params(("id" = String, Path), ("upload_id" = String, Path)),
    responses((status = 200, description = "The original bytes, as an attachment"), (status = 404, description = refusal(&[ErrorCode::NotFound], ""))),
    security(("bearer" = []))
)]
pub async fn content(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, upload_id)): ApiPath<(String, String)>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let upload = uploads::get(&state.app, &principal, &id, &upload_id).await?;
    let file = Servable {
        blob_key: &upload.blob_key,
        size: upload.size,
        content_type: &upload.file_type,
        sha256: &upload.sha256,
        modified: upload.created_at,
        disposition: None,
    };
    serve_download(&state.app, &method, &headers, file, &upload.file_name).await
}

/// Previews one of the thread's uploads as the preview panel shows a published file: by its
/// `previewKind` (an image or a PDF inline, a document as sanitized HTML).
#[utoipa::path(
    get, path = "/api/threads/{id}/uploads/{upload_id}/preview", tag = "uploads",
    operation_id = "upload_preview",
    params(("id" = String, Path), ("upload_id" = String, Path)),
    responses(
        (status = 200, description = "image: the image; pdf: application/pdf inline; html: sanitized HTML"),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "no such upload, or its previewKind is none")),
    ),
    security(("bearer" = []))
)]
pub async fn preview(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, upload_id)): ApiPath<(String, String)>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let upload = uploads::get(&state.app, &principal, &id, &upload_id).await?;
    serve_preview(&state, &method, &headers, &Preview::of_upload(&upload)).await
}

fn malformed(cause: impl std::fmt::Display) -> ApiError {
    ApiError::invalid_request(format!("the multipart body is malformed: {cause}"))
}
