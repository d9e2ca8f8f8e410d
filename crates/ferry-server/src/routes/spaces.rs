//! Per-user spaces (docs/reference/spaces.md): list, read and create-or-overwrite files.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ferry_core::{ErrorCode, SpaceName, ValidPath};
use ferry_store::spaces::{ListCursor, ListQuery, SpaceEntry, WriteCondition};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiQuery, raw_segment, raw_tail};
use crate::serve::{Servable, TagList, etag, header_value, parse_tag_list, serve_blob};
use crate::state::AppState;

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
}

/// One entry of a listing: a file, or (non-recursive listings only) a folder.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    pub path: String,
    /// `file` or `dir`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

impl FileEntry {
    pub fn dir(path: String) -> FileEntry {
        FileEntry {
            path,
            kind: "dir",
            size: None,
            content_type: None,
            etag: None,
            updated_at: None,
        }
    }

    pub fn file(
        path: String,
        size: u64,
        content_type: String,
        sha256: &str,
        updated_at: ferry_core::Timestamp,
    ) -> FileEntry {
        FileEntry {
            path,
            kind: "file",
            size: Some(size),
            content_type: Some(content_type),
            etag: Some(etag(sha256)),
            updated_at: Some(updated_at.rfc3339()),
        }
    }
}

impl From<SpaceEntry> for FileEntry {
    fn from(entry: SpaceEntry) -> Self {
        match entry {
            SpaceEntry::Dir { path } => FileEntry::dir(path),
            SpaceEntry::File(f) => {
                FileEntry::file(f.path, f.size, f.content_type, &f.sha256, f.updated_at)
            }
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileList {
    pub files: Vec<FileEntry>,
    /// Present when more entries follow; pass it back as `cursor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The answer to a successful PUT (docs/reference/spaces.md).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteResult {
    pub path: String,
    pub size: u64,
    pub content_type: String,
    pub etag: String,
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
    responses((status = 200, body = SpaceList), (status = 401, description = "UNAUTHENTICATED")),
    security(("bearer" = []))
)]
pub async fn list_spaces(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<Json<SpaceList>> {
    let owner = principal.space_owner()?;
    let spaces = state.db.spaces_of(owner).await?;
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

/// Lists a space's files.
#[utoipa::path(
    get, path = "/api/spaces/{space}/files", tag = "spaces",
    params(("space" = String, Path, description = "Space name"), ListParams),
    responses(
        (status = 200, body = FileList, description = "Entries sorted by path; a missing space or folder lists nothing"),
        (status = 400, description = "INVALID_PATH or INVALID_REQUEST"),
        (status = 401, description = "UNAUTHENTICATED"),
    ),
    security(("bearer" = []))
)]
pub async fn list_files(
    State(state): State<AppState>,
    principal: Principal,
    uri: Uri,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<FileList>> {
    let owner = principal.space_owner()?;
    let space = space_name(&uri)?;
    let dir = match params.dir.as_deref() {
        None | Some("") => None,
        Some(dir) => Some(ValidPath::parse(dir)?),
    };
    let after = params.cursor.as_deref().map(decode_cursor).transpose()?;
    let page = state
        .db
        .space_list(
            owner,
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
        files: page.entries.into_iter().map(FileEntry::from).collect(),
        next_cursor: page.next.as_ref().map(encode_cursor),
    }))
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
    get, path = "/api/spaces/{space}/files/{path}", tag = "spaces",
    params(
        ("space" = String, Path, description = "Space name"),
        ("path" = String, Path, description = "File path; may contain '/'"),
        ("If-None-Match" = Option<String>, Header, description = "An ETag; a match answers 304"),
        ("Range" = Option<String>, Header, description = "One byte range; answers 206"),
    ),
    responses(
        (status = 200, description = "The bytes, with Content-Type, ETag, Content-Length, Last-Modified"),
        (status = 206, description = "The requested range"),
        (status = 304, description = "Not modified"),
        (status = 404, description = "NOT_FOUND"),
        (status = 416, description = "RANGE_NOT_SATISFIABLE"),
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
    let owner = principal.space_owner()?;
    let space = space_name(&uri)?;
    let path = file_path(&uri)?;
    let file = state.db.space_file(owner, &space, &path).await?;
    let file = file.ok_or_else(|| ApiError::not_found(format!("no file at '{path}'")))?;
    serve_blob(
        &state.blobs,
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
    head, path = "/api/spaces/{space}/files/{path}", tag = "spaces",
    params(("space" = String, Path), ("path" = String, Path)),
    responses((status = 200, description = "Headers only"), (status = 404, description = "NOT_FOUND")),
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

/// Checks `Content-Type`: present, text, and shaped `type/subtype`.
pub fn usable_content_type(headers: &HeaderMap) -> ApiResult<String> {
    let missing = || {
        ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "send a Content-Type header naming the file's type, e.g. 'text/markdown; charset=utf-8'",
        )
    };
    let value = headers
        .get(header::CONTENT_TYPE)
        .ok_or_else(missing)?
        .to_str()
        .map_err(|_| missing())?
        .trim();
    let essence = value.split(';').next().unwrap_or("").trim();
    match essence.split_once('/') {
        Some((kind, sub)) if is_token(kind) && is_token(sub) => Ok(value.to_owned()),
        _ => Err(missing()),
    }
}

fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Reads the write preconditions of `If-None-Match` and `If-Match`.
pub fn write_condition(headers: &HeaderMap) -> ApiResult<WriteCondition> {
    let text = |name: header::HeaderName| -> ApiResult<Option<String>> {
        headers
            .get(&name)
            .map(|v| {
                v.to_str().map(str::to_owned).map_err(|_| {
                    ApiError::invalid_request(format!("the {name} header is not valid text"))
                })
            })
            .transpose()
    };
    let create_only = match text(header::IF_NONE_MATCH)? {
        None => false,
        Some(v) if v.trim() == "*" => true,
        Some(_) => {
            return Err(ApiError::invalid_request(
                "If-None-Match on PUT only accepts '*' (create only if the path is free)",
            ));
        }
    };
    let if_match = match text(header::IF_MATCH)? {
        None => None,
        Some(v) => match parse_tag_list(&v) {
            Some(TagList::Any) => Some(vec!["*".to_owned()]),
            // Weak tags never match in If-Match (strong comparison, RFC 9110 §13.1.1).
            Some(TagList::Tags(tags)) => Some(
                tags.into_iter()
                    .map(|(t, weak)| if weak { String::new() } else { t })
                    .collect(),
            ),
            None => {
                return Err(ApiError::invalid_request(
                    "If-Match must be '*' or a list of quoted ETags",
                ));
            }
        },
    };
    Ok(match (create_only, if_match) {
        (false, None) => WriteCondition::None,
        (true, None) => WriteCondition::CreateOnly,
        (false, Some(tags)) => WriteCondition::IfMatch(tags),
        (true, Some(tags)) => WriteCondition::IfMatchAndCreateOnly(tags),
    })
}

/// Refuses a body whose declared length is over the limit, before reading any of it.
pub fn check_declared_length(headers: &HeaderMap, limit: u64) -> ApiResult<()> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(len) if len > limit => Err(ApiError::too_large(limit)),
        _ => Ok(()),
    }
}

/// Creates or overwrites one file.
#[utoipa::path(
    put, path = "/api/spaces/{space}/files/{path}", tag = "spaces",
    params(
        ("space" = String, Path, description = "Space name"),
        ("path" = String, Path, description = "File path; may contain '/'"),
        ("Content-Type" = String, Header, description = "Required; stored and served back"),
        ("If-None-Match" = Option<String>, Header, description = "'*': create only"),
        ("If-Match" = Option<String>, Header, description = "Overwrite only if the ETag matches"),
    ),
    request_body(content = Vec<u8>, content_type = "*/*", description = "The file's bytes"),
    responses(
        (status = 201, body = WriteResult, description = "Created"),
        (status = 200, body = WriteResult, description = "Overwritten"),
        (status = 400, description = "INVALID_PATH or INVALID_REQUEST"),
        (status = 409, description = "ALREADY_EXISTS"),
        (status = 412, description = "PRECONDITION_FAILED"),
        (status = 413, description = "REQUEST_TOO_LARGE"),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE"),
    ),
    security(("bearer" = []))
)]
pub async fn put_file(
    State(state): State<AppState>,
    principal: Principal,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let owner = principal.space_owner()?;
    let space = space_name(&uri)?;
    let path = file_path(&uri)?;
    let content_type = usable_content_type(&headers)?;
    let condition = write_condition(&headers)?;
    let limit = state.config.space_max_bytes;
    check_declared_length(&headers, limit)?;
    if condition == WriteCondition::CreateOnly
        && state.db.space_file(owner, &space, &path).await?.is_some()
    {
        // Answer before reading the body; the database still has the final word below.
        return Err(ApiError::new(
            ErrorCode::AlreadyExists,
            format!("'{path}' already exists (If-None-Match: *)"),
        ));
    }
    let blob = state.blobs.write(body.into_data_stream(), limit).await?;
    let outcome = match state
        .db
        .space_put(owner, &space, &path, &blob, &content_type, &condition)
        .await
    {
        Ok(outcome) => outcome,
        Err(e) => {
            // Nothing points at the new blob; remove it now rather than at the next sweep.
            let _ = state.blobs.delete(&blob.key).await;
            return Err(match e {
                ferry_store::StoreError::AlreadyExists => ApiError::new(
                    ErrorCode::AlreadyExists,
                    format!("'{path}' already exists (If-None-Match: *)"),
                ),
                ferry_store::StoreError::PreconditionFailed => ApiError::new(
                    ErrorCode::PreconditionFailed,
                    format!("the current ETag of '{path}' does not match If-Match"),
                ),
                other => other.into(),
            });
        }
    };
    let tag = etag(&outcome.file.sha256);
    let status = if outcome.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut response = (
        status,
        Json(WriteResult {
            path: outcome.file.path,
            size: outcome.file.size,
            content_type: outcome.file.content_type,
            etag: tag.clone(),
        }),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::ETAG, header_value(&tag)?);
    Ok(response)
}
