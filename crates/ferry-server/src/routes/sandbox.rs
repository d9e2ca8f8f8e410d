//! A thread's sandbox over HTTP (docs/reference/threads-and-sandbox.md): list, read and write files by their `/sandbox/…`
//! paths, through the sandbox use cases of `ferry_app::files::sandbox`.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use ferry_app::body::Incoming;
use ferry_app::files::sandbox;
use ferry_app::files::sandbox::SandboxEntry;
use ferry_core::{SandboxPath, ValidPath};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiQuery, DoorOf, raw_segment, raw_tail};
use crate::file_views::{FileEntry, FileList, Written};
use crate::openapi::FileBytes;
use crate::serve::{ListFormat, Representation, header_value, quoted_etag, respond, zip_download};
use crate::state::AppState;
use crate::write_headers::{declared_length, usable_content_type, write_condition};

/// Segments of `/api/threads/{id}/sandbox/` before the file path.
const FILE_ROUTE_SEGMENTS: usize = 4;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SandboxListParams {
    /// The folder to list, e.g. `/sandbox/outputs` (default `/sandbox`).
    dir: Option<String>,
    /// Every file below `dir` instead of its direct children.
    #[serde(default)]
    recursive: bool,
    /// `zip`: every file below `dir` as one streamed zip, instead of the listing.
    #[serde(default)]
    format: ListFormat,
}

fn entry_view(entry: SandboxEntry) -> FileEntry {
    let path = format!("/sandbox/{}", entry.path);
    if entry.is_dir {
        FileEntry::dir(path)
    } else {
        FileEntry::sandbox_file(path, entry.size, &entry.etag, entry.modified)
    }
}

/// Lists a sandbox folder; paths come back the sandbox way, ready for publish. With
/// `format=zip`, sends every file below the folder as one zip instead.
#[utoipa::path(
    get, path = "/api/threads/{id}/sandbox", tag = "sandbox",
    operation_id = "list_sandbox",
    params(("id" = String, Path), SandboxListParams),
    responses(
        (status = 200, description = "The folder's entries, or with format=zip the folder as one zip",
            content((FileList = "application/json"), (FileBytes = "application/zip"))),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "also a zip of more than 10,000 files")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
    uri: Uri,
    ApiQuery(params): ApiQuery<SandboxListParams>,
) -> ApiResult<Response> {
    let dir = match params.dir.as_deref() {
        None | Some("") => None,
        Some(dir) => SandboxPath::parse_dir(dir)?,
    };
    if params.format == ListFormat::Zip {
        let folder = ferry_app::transfers::archive::sandbox_folder(
            &state.app,
            &principal,
            raw_segment(uri.path(), 2),
            dir.as_ref(),
        )
        .await?;
        return zip_download(folder);
    }
    let listing = sandbox::list(
        &state.app,
        &principal,
        raw_segment(uri.path(), 2),
        dir.as_ref(),
        params.recursive,
    )
    .await?;
    let mut files: Vec<FileEntry> = listing.entries.into_iter().map(entry_view).collect();
    files.extend(listing.unaddressable.iter().map(FileEntry::unaddressable));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Json(FileList {
        files,
        next_cursor: None,
    })
    .into_response())
}

fn sandbox_path(uri: &Uri) -> ApiResult<SandboxPath> {
    Ok(SandboxPath::from_relative(ValidPath::from_url(raw_tail(
        uri.path(),
        FILE_ROUTE_SEGMENTS,
    ))?))
}

/// Reads a sandbox file.
#[utoipa::path(
    get, path = "/api/threads/{id}/sandbox/{*path}", tag = "sandbox",
    operation_id = "read_sandbox_file",
    params(
        ("id" = String, Path), ("path" = String, Path, description = "Relative to /sandbox/, e.g. outputs/report.md"),
        ("If-None-Match" = Option<String>, Header, description = "ETags; a match answers 304"),
        ("If-Match" = Option<String>, Header, description = "ETags; no strong match answers 412"),
        ("If-Modified-Since" = Option<String>, Header, description = "An HTTP date; unchanged since answers 304"),
        ("If-Unmodified-Since" = Option<String>, Header, description = "An HTTP date; changed since answers 412"),
        ("Range" = Option<String>, Header, description = "One byte range; answers 206"),
    ),
    responses(
        (status = 200, description = "The bytes"),
        (status = 206, description = "A range"),
        (status = 304, description = "Not modified"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath], "outside the sandbox, a dangling symlink, a hard link")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "If-Match or If-Unmodified-Since does not hold")),
        (status = 416, description = refusal(&[ErrorCode::RangeNotSatisfiable], "")),
    ),
    security(("bearer" = []))
)]
pub async fn read(
    State(state): State<AppState>,
    principal: Principal,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let path = sandbox_path(&uri)?;
    let opened = sandbox::open(&state.app, &principal, raw_segment(uri.path(), 2), &path).await?;
    let content_type = ferry_core::mime::mime_for_name(path.file_name());
    let etag = opened.etag.clone();
    let representation = Representation {
        size: opened.size,
        content_type: &content_type,
        validator: &etag,
        modified: opened.modified,
        disposition: None,
    };
    respond(&method, &headers, representation, |range| {
        opened.stream(range)
    })
    .await
}

/// Reads a sandbox file's headers.
#[utoipa::path(
    head, path = "/api/threads/{id}/sandbox/{*path}", tag = "sandbox",
    operation_id = "head_sandbox_file",
    params(("id" = String, Path), ("path" = String, Path)),
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidPath], "")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),(status = 200, description = "Headers only")),
    security(("bearer" = []))
)]
pub async fn head(
    state: State<AppState>,
    principal: Principal,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    read(state, principal, method, uri, headers).await
}

/// Writes a sandbox file (the agent, or service_role): atomic, with the spaces' rules.
#[utoipa::path(
    put, path = "/api/threads/{id}/sandbox/{*path}", tag = "sandbox",
    operation_id = "write_sandbox_file",
    params(
        ("id" = String, Path), ("path" = String, Path),
        ("If-None-Match" = Option<String>, Header), ("If-Match" = Option<String>, Header),
    ),
    request_body(
        description = "The file's bytes, of any type",
        content((FileBytes = "application/octet-stream"), (FileBytes = "*/*")),
    ),
    responses(
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "")),
        (status = 201, body = Written, description = "Created: the path did not exist"), (status = 200, body = Written, description = "Replaced: the path existed"),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "the owner, or a write into /sandbox/skills/")),
        (status = 409, description = refusal(&[ErrorCode::AlreadyExists], "")), (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "")), (status = 415, description = refusal(&[ErrorCode::UnsupportedMediaType], "")),
    ),
    security(("bearer" = []))
)]
pub async fn write(
    State(state): State<AppState>,
    principal: Principal,
    DoorOf(door): DoorOf,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let path = sandbox_path(&uri)?;
    let content_type = usable_content_type(&headers)?;
    let condition = write_condition(&headers)?;
    let (created, entry) = sandbox::write(
        &state.app,
        &principal,
        raw_segment(uri.path(), 2),
        &path,
        &content_type,
        &condition,
        Incoming::new(body.into_data_stream(), declared_length(&headers)),
        door,
    )
    .await?;
    let tag = quoted_etag(&entry.etag);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut response = (
        status,
        Json(Written {
            path: path.display(),
            size: entry.size,
            // Whatever type was sent, a sandbox file is served with its name's.
            content_type: ferry_core::mime::mime_for_name(path.file_name()),
            etag: tag.clone(),
            created,
        }),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::ETAG, header_value(&tag)?);
    Ok(response)
}
