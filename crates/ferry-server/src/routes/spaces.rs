//! Per-user spaces (docs/reference/spaces.md): list and remove spaces; make folders; list,
//! read, create-or-overwrite and delete files.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ferry_app::body::Incoming;
use ferry_app::files::spaces;
use ferry_app::files::spaces::{ListCursor, ListQuery};
use ferry_core::write::FileMeta;
use ferry_core::{SpaceName, ValidPath};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiJson, ApiPath, ApiQuery, DoorOf, raw_segment, raw_tail};
use crate::file_views::{FileEntry, FileList, Written};
use crate::openapi::FileBytes;
use crate::serve::{ListFormat, Servable, header_value, serve_blob, zip_download};
use crate::state::AppState;
use crate::write_headers::{
    declared_length, delete_condition, usable_content_type, write_condition,
};

pub const DEFAULT_LIST_LIMIT: u32 = 1000;
pub const MAX_LIST_LIMIT: u32 = 10_000;

/// Segments of `/api/spaces/{space}/files/` before the file path.
const FILE_ROUTE_SEGMENTS: usize = 4;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// The folder to list; the space's root when absent.
    dir: Option<String>,
    /// List every file below `dir` (files only) instead of its direct children.
    #[serde(default)]
    recursive: bool,
    /// Entries per page: default 1,000; values above 10,000 are lowered to 10,000.
    limit: Option<u32>,
    /// `nextCursor` from the previous page.
    cursor: Option<String>,
    /// `zip`: every file below `dir` as one streamed zip, instead of the listing (`limit` and
    /// `cursor` do not apply).
    #[serde(default)]
    format: ListFormat,
}

pub fn encode_cursor(cursor: &ListCursor) -> String {
    // Paths cannot hold control characters, so a newline separates the two parts unambiguously.
    URL_SAFE_NO_PAD.encode(format!("{}\n{}", cursor.kind, cursor.path))
}

pub fn decode_cursor(text: &str) -> ApiResult<ListCursor> {
    let bad = || ApiError::invalid_request("'cursor' is not one this server gave out");
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    match text.split_once('\n') {
        Some((kind @ ("dir" | "file"), path)) => Ok(ListCursor {
            path: path.to_owned(),
            kind: kind.to_owned(),
        }),
        _ => Err(bad()),
    }
}

/// Reads the `limit` parameter: absent → the default; 0 → refused; above the maximum → lowered.
pub fn list_limit(limit: Option<u32>) -> ApiResult<u32> {
    match limit {
        None => Ok(DEFAULT_LIST_LIMIT),
        Some(0) => Err(ApiError::invalid_request("'limit' must be at least 1")),
        Some(n) => Ok(n.min(MAX_LIST_LIMIT)),
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpaceView {
    pub name: String,
    /// How many files it holds.
    pub files: u64,
    /// Their total size in bytes.
    pub size: u64,
    pub updated_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SpaceList {
    pub spaces: Vec<SpaceView>,
}

/// Lists the caller's spaces: those holding at least one file, sorted by name.
#[utoipa::path(
    get, path = "/api/spaces", tag = "spaces",
    responses((status = 200, body = SpaceList, description = "The caller's spaces"), (status = 401, description = refusal(&[ErrorCode::Unauthenticated], ""))),
    security(("bearer" = []))
)]
pub async fn list_spaces(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<Json<SpaceList>> {
    let spaces = spaces::list_spaces(&state.app, &principal).await?;
    Ok(Json(SpaceList {
        spaces: spaces
            .into_iter()
            .map(|s| SpaceView {
                name: s.name,
                files: s.files,
                size: s.bytes,
                updated_at: s.updated_at.rfc3339(),
            })
            .collect(),
    }))
}

/// Removes a space with every file and folder in it.
#[utoipa::path(
    delete, path = "/api/spaces/{space}", tag = "spaces",
    params(("space" = String, Path, description = "Space name")),
    responses(
        (status = 204, description = "Removed, with its files"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath], "a bad space name")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "a service token without a user")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "no such space")),
        (status = 503, description = refusal(&[ErrorCode::Unavailable], "busy: files kept being written into it while it was emptied")),
    ),
    security(("bearer" = []))
)]
pub async fn delete_space(
    State(state): State<AppState>,
    principal: Principal,
    DoorOf(door): DoorOf,
    ApiPath(space): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let space = SpaceName::parse(&space).map_err(ferry_app::Error::from)?;
    spaces::remove_with_files(&state.app, &principal, &space, door).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Folder {
    /// The folder's path in the space (`reports/2026`), by the path rules: segments of at
    /// most 255 bytes joined by `/`, none empty, `.` or `..`, no control character, at most
    /// 1,024 bytes in all.
    #[schema(min_length = 1, max_length = 1024)]
    pub path: String,
}

/// Makes a folder (with the folders above it, and the space) so that it is listed while
/// empty.
#[utoipa::path(
    post, path = "/api/spaces/{space}/folders", tag = "spaces",
    params(("space" = String, Path, description = "Space name")),
    request_body = Folder,
    responses(
        (status = 201, body = Folder, description = "Made"),
        (status = 200, body = Folder, description = "It was already there"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath], "a bad space name or path; INVALID_REQUEST: a malformed body")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "a service token without a user")),
        (status = 409, description = refusal(&[ErrorCode::AlreadyExists], "a file is at the path, or at a folder above it")),
    ),
    security(("bearer" = []))
)]
pub async fn make_folder(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(space): ApiPath<String>,
    ApiJson(folder): ApiJson<Folder>,
) -> ApiResult<(StatusCode, Json<Folder>)> {
    let space = SpaceName::parse(&space).map_err(ferry_app::Error::from)?;
    let path =
        ValidPath::parse(folder.path.trim_end_matches('/')).map_err(ferry_app::Error::from)?;
    let new = spaces::make_folder(&state.app, &principal, &space, &path).await?;
    let status = if new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(Folder {
            path: path.as_str().to_owned(),
        }),
    ))
}

/// Lists a space's files. With `format=zip`, sends every file below `dir` as one zip instead.
#[utoipa::path(
    get, path = "/api/spaces/{space}/files", tag = "spaces",
    params(("space" = String, Path, description = "Space name"), ListParams),
    responses(
        (status = 200, description = "Entries sorted by path (a missing space or folder lists nothing), or with format=zip the folder as one zip",
            content((FileList = "application/json"), (FileBytes = "application/zip"))),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "also a zip of more than 10,000 files")),
        (status = 401, description = refusal(&[ErrorCode::Unauthenticated], "")),
    ),
    security(("bearer" = []))
)]
pub async fn list_files(
    State(state): State<AppState>,
    principal: Principal,
    uri: Uri,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Response> {
    let space = space_name(&uri)?;
    let dir = match params.dir.as_deref() {
        None | Some("") => None,
        Some(dir) => Some(ValidPath::parse(dir)?),
    };
    if params.format == ListFormat::Zip {
        let folder = ferry_app::transfers::archive::space_folder(
            &state.app,
            &principal,
            &space,
            dir.as_ref(),
        )
        .await?;
        return zip_download(folder);
    }
    let after = params.cursor.as_deref().map(decode_cursor).transpose()?;
    let page = spaces::list(
        &state.app,
        &principal,
        &space,
        &ListQuery {
            dir: dir.as_ref(),
            recursive: params.recursive,
            limit: list_limit(params.limit)?,
            after,
        },
    )
    .await?;
    Ok(Json(FileList {
        files: page
            .entries
            .into_iter()
            .map(|entry| FileEntry::of_space(entry, ""))
            .collect(),
        next_cursor: page.next.as_ref().map(encode_cursor),
    })
    .into_response())
}

/// The space named in `/api/spaces/{space}/…`. Space names hold no character that needs
/// percent-encoding, so the raw segment is validated as it is.
fn space_name(uri: &Uri) -> ApiResult<SpaceName> {
    Ok(SpaceName::parse(raw_segment(uri.path(), 2))?)
}

fn file_path(uri: &Uri) -> ApiResult<ValidPath> {
    Ok(ValidPath::from_url(raw_tail(
        uri.path(),
        FILE_ROUTE_SEGMENTS,
    ))?)
}

/// Reads one file: the raw bytes with their stored `Content-Type`.
#[utoipa::path(
    get, path = "/api/spaces/{space}/files/{*path}", tag = "spaces",
    params(
        ("space" = String, Path, description = "Space name"),
        ("path" = String, Path, description = "File path; may contain '/'"),
        ("If-None-Match" = Option<String>, Header, description = "ETags; a match answers 304"),
        ("If-Match" = Option<String>, Header, description = "ETags; no strong match answers 412"),
        ("If-Modified-Since" = Option<String>, Header, description = "An HTTP date; unchanged since answers 304"),
        ("If-Unmodified-Since" = Option<String>, Header, description = "An HTTP date; changed since answers 412"),
        ("Range" = Option<String>, Header, description = "One byte range; answers 206"),
    ),
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "")),
        (status = 200, description = "The bytes, with Content-Type, ETag, Content-Length, Last-Modified"),
        (status = 206, description = "The requested range"),
        (status = 304, description = "Not modified"),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "If-Match or If-Unmodified-Since does not hold")),
        (status = 416, description = refusal(&[ErrorCode::RangeNotSatisfiable], "")),
    ),
    security(("bearer" = []))
)]
pub async fn get_file(
    State(state): State<AppState>,
    principal: Principal,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let space = space_name(&uri)?;
    let path = file_path(&uri)?;
    let file = spaces::file(&state.app, &principal, &space, &path).await?;
    serve_blob(
        &state.app,
        &method,
        &headers,
        Servable {
            blob_key: &file.blob_key,
            size: file.size,
            content_type: &file.content_type,
            sha256: &file.sha256,
            modified: file.updated_at,
            disposition: None,
        },
    )
    .await
}

/// Reads one file's headers only.
#[utoipa::path(
    head, path = "/api/spaces/{space}/files/{*path}", tag = "spaces",
    params(("space" = String, Path), ("path" = String, Path)),
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "")),(status = 200, description = "Headers only"), (status = 404, description = refusal(&[ErrorCode::NotFound], ""))),
    security(("bearer" = []))
)]
pub async fn head_file(
    state: State<AppState>,
    principal: Principal,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    get_file(state, principal, method, uri, headers).await
}

/// Removes one file; folders left empty disappear from listings.
#[utoipa::path(
    delete, path = "/api/spaces/{space}/files/{*path}", tag = "spaces",
    params(
        ("space" = String, Path, description = "Space name"),
        ("path" = String, Path, description = "File path; may contain '/'"),
        ("If-Match" = Option<String>, Header, description = "Remove only if the ETag matches"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "")),
    ),
    security(("bearer" = []))
)]
pub async fn delete_file(
    State(state): State<AppState>,
    principal: Principal,
    DoorOf(door): DoorOf,
    uri: Uri,
    headers: HeaderMap,
) -> ApiResult<StatusCode> {
    let space = space_name(&uri)?;
    let path = file_path(&uri)?;
    let if_match = delete_condition(&headers)?;
    spaces::delete(
        &state.app,
        &principal,
        &space,
        &path,
        if_match.as_deref(),
        door,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Creates or overwrites one file.
#[utoipa::path(
    put, path = "/api/spaces/{space}/files/{*path}", tag = "spaces",
    params(
        ("space" = String, Path, description = "Space name"),
        ("path" = String, Path, description = "File path; may contain '/'"),
        ("If-None-Match" = Option<String>, Header, description = "'*': create only"),
        ("If-Match" = Option<String>, Header, description = "Overwrite only if the ETag matches"),
    ),
    request_body(
        description = "The file's bytes, of any type; the Content-Type is stored and served back",
        content((FileBytes = "application/octet-stream"), (FileBytes = "*/*")),
    ),
    responses(
        (status = 201, body = Written, description = "Created"),
        (status = 200, body = Written, description = "Overwritten"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "")),
        (status = 409, description = refusal(&[ErrorCode::AlreadyExists], "")),
        (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "")),
        (status = 415, description = refusal(&[ErrorCode::UnsupportedMediaType], "")),
    ),
    security(("bearer" = []))
)]
pub async fn put_file(
    State(state): State<AppState>,
    principal: Principal,
    DoorOf(door): DoorOf,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let space = space_name(&uri)?;
    let path = file_path(&uri)?;
    let content_type = usable_content_type(&headers)?;
    let condition = write_condition(&headers)?;
    let outcome = spaces::write(
        &state.app,
        &principal,
        &space,
        &path,
        FileMeta {
            door,
            ..FileMeta::typed(&content_type)
        },
        &condition,
        Incoming::new(body.into_data_stream(), declared_length(&headers)),
    )
    .await?;
    let status = if outcome.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let answer = Written::of_space(outcome);
    let tag = answer.etag.clone();
    let mut response = (status, Json(answer)).into_response();
    response
        .headers_mut()
        .insert(header::ETAG, header_value(&tag)?);
    Ok(response)
}
