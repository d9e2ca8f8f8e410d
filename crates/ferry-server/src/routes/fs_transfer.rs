//! File URLs (docs/agent-files.md, "file_url"): a short-lived URL for one path and one method,
//! for a process that holds no ferry credentials — the agent's own code sandbox running
//! `curl -T chart.png "$URL"` — so that the bytes never pass through the model.
//!
//! The URL carries a sealed grant: who asked (the principal of the token that asked), the path,
//! the method and the expiry. Using it runs the very route the asker could have called — the
//! sandbox's or the space's read or write — as that principal, so every rule of a read or
//! write holds again at that moment (limits, `skills/` read-only, atomicity, conditions). The
//! grant reaches no other path and no other method, and is refused once expired (or once the
//! token it came from would have expired, whichever is first).

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, Uri, header};
use axum::response::Response;
use ferry_app::Recorded;
use ferry_app::files::{self, Caller};
use ferry_core::AgentPath;
use ferry_core::agent_files::{FileUrlInput, TransferMethod};
use ferry_core::error_code::ErrorCode;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};
use utoipa::ToSchema;

use crate::auth::{Principal, TokenExpiry};
use crate::error::{ApiError, ApiResult};
use crate::error_code::refusal;
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;

/// What a file URL lets its holder do, sealed into the URL.
#[derive(Debug, Serialize, Deserialize)]
struct Grant {
    /// Who asked: the URL acts as them.
    #[serde(flatten)]
    who: Recorded,
    /// The thread whose sandbox `/sandbox` is, when the asker named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox_of: Option<String>,
    path: String,
    method: TransferMethod,
    /// Unix seconds.
    expires: u64,
}

/// `file_url`'s answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileUrl {
    /// Absolute; works without any other credential until `expiresAt`.
    pub url: String,
    /// `GET` or `PUT`: the one method the URL takes (`HEAD` too, for a `GET` URL).
    pub method: &'static str,
    /// RFC 3339.
    pub expires_at: String,
    /// Headers to send with it: none are required (a `PUT` without `Content-Type` is typed by
    /// the file's name).
    pub headers: serde_json::Map<String, serde_json::Value>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

async fn hand_out(
    state: &AppState,
    principal: &Principal,
    thread: Option<&str>,
    token_expires: u64,
    input: &FileUrlInput,
) -> ApiResult<Json<FileUrl>> {
    let caller = Caller {
        app: &state.app,
        principal,
        thread,
        door: Default::default(),
    };
    caller.named_thread_is_visible().await?;
    let path = files::check_transfer(caller, input).await?;
    // A URL never outlives the token that asked for it.
    let expires = (now() + input.expires_in).min(token_expires);
    let sandbox_of = match (&path, thread) {
        (AgentPath::Sandbox(_), Some(thread)) => Some(thread),
        _ => None,
    };
    let grant = Grant {
        who: principal.recorded(),
        sandbox_of: sandbox_of.map(str::to_owned),
        path: path.to_string(),
        method: input.method,
        expires,
    };
    let payload =
        serde_json::to_vec(&grant).map_err(|e| ApiError::from(ferry_app::Error::internal(e)))?;
    let sealed = state.grants.seal(&payload);
    let expires_at =
        ferry_core::Timestamp(i64::try_from(expires.saturating_mul(1000)).unwrap_or(i64::MAX));
    Ok(Json(FileUrl {
        url: format!("{}/api/fs/transfer/{sealed}", state.public_url()),
        method: input.method.as_str(),
        expires_at: expires_at.rfc3339(),
        headers: serde_json::Map::new(),
    }))
}

/// Hands out a short-lived URL that reads (GET) or writes (PUT) one file, for a process that
/// holds no ferry credentials.
#[utoipa::path(
    post, path = "/api/fs/file_url", tag = "agent files",
    operation_id = "fs_file_url",
    request_body = FileUrlInput,
    responses(
        (status = 200, body = FileUrl, description = "The URL"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "expiresIn outside 1..3600")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "the caller may not write there (/sandbox/skills/, a reader of the sandbox)")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "nothing to read at the path")),
    ),
    security(("bearer" = []))
)]
pub async fn file_url(
    State(state): State<AppState>,
    principal: Principal,
    TokenExpiry(expires): TokenExpiry,
    ApiJson(input): ApiJson<FileUrlInput>,
) -> ApiResult<Json<FileUrl>> {
    hand_out(&state, &principal, None, expires, &input).await
}

/// Hands out a file URL for a path of the named thread's sandbox (or the caller's spaces).
#[utoipa::path(
    post, path = "/api/threads/{id}/fs/file_url", tag = "agent files",
    operation_id = "fs_file_url_in_thread",
    params(("id" = String, Path)),
    request_body = FileUrlInput,
    responses(
        (status = 200, body = FileUrl, description = "The URL"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    ),
    security(("bearer" = []))
)]
pub async fn file_url_in_thread(
    State(state): State<AppState>,
    principal: Principal,
    TokenExpiry(expires): TokenExpiry,
    ApiPath(id): ApiPath<String>,
    ApiJson(input): ApiJson<FileUrlInput>,
) -> ApiResult<Json<FileUrl>> {
    hand_out(&state, &principal, Some(&id), expires, &input).await
}

/// Everything but RFC 3986's unreserved characters is encoded, so the route's validator
/// decodes exactly the path the grant names.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn encoded(path: &ferry_core::ValidPath) -> String {
    path.segments()
        .map(|segment| utf8_percent_encode(segment, SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

/// The grant in the URL, if it is sealed here, unexpired and for `method`.
fn open_grant(state: &AppState, sealed: &str, method: &Method) -> ApiResult<Grant> {
    let refused = || ApiError::forbidden("this file URL is not valid: ask for a new one");
    let payload = state.grants.open(sealed).ok_or_else(refused)?;
    let grant: Grant = serde_json::from_slice(&payload).map_err(|_| refused())?;
    if grant.expires < now() {
        return Err(ApiError::forbidden(
            "this file URL has expired: ask for a new one with file_url",
        ));
    }
    let allowed = match grant.method {
        TransferMethod::Get => *method == Method::GET || *method == Method::HEAD,
        TransferMethod::Put => *method == Method::PUT,
    };
    if !allowed {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("this file URL is for {} only", grant.method.as_str()),
        ));
    }
    Ok(grant)
}

/// The principal the grant acts as, while it still stands for something (an agent's URLs end
/// with its thread, as its token does).
async fn granted(state: &AppState, grant: &Grant) -> ApiResult<Principal> {
    let principal = grant
        .who
        .clone()
        .principal()
        .ok_or_else(|| ApiError::forbidden("this file URL is not valid: ask for a new one"))?;
    if !ferry_app::access::is_live(&state.app, &principal).await? {
        return Err(ApiError::forbidden(
            "this file URL was made by the agent of a thread since deleted: it reaches nothing",
        ));
    }
    Ok(principal)
}

/// The file route the grant's path is read or written through, as a request URI.
fn route_of(grant: &Grant, principal: &Principal) -> ApiResult<Uri> {
    let path = files::parse(&grant.path)?;
    let uri = match &path {
        AgentPath::Sandbox(Some(within)) => {
            let thread = match (&grant.sandbox_of, principal) {
                (Some(thread), _) => thread.clone(),
                (None, Principal::Agent { thread, .. }) => thread.clone(),
                (None, _) => return Err(ApiError::invalid_request("the URL names no thread")),
            };
            format!(
                "/api/threads/{}/sandbox/{}",
                utf8_percent_encode(&thread, SEGMENT),
                encoded(within)
            )
        }
        AgentPath::Space {
            space,
            path: Some(within),
        } => format!("/api/spaces/{space}/files/{}", encoded(within)),
        _ => return Err(ApiError::invalid_request("the URL names a folder")),
    };
    uri.parse()
        .map_err(|_| ApiError::invalid_request("the URL's path cannot be read"))
}

/// Reads the file a GET file URL names.
#[utoipa::path(
    get, path = "/api/fs/transfer/{grant}", tag = "agent files",
    operation_id = "fs_transfer_get",
    params(("grant" = String, Path, description = "The sealed grant of a file URL")),
    responses(
        (status = 200, description = "The bytes"),
        (status = 206, description = "A range"),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "not a valid URL, expired, or not for GET")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    ApiPath(sealed): ApiPath<String>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let grant = open_grant(&state, &sealed, &method)?;
    let principal = granted(&state, &grant).await?;
    let uri = route_of(&grant, &principal)?;
    if uri.path().starts_with("/api/threads/") {
        crate::routes::sandbox::read(State(state), principal, method, uri, headers).await
    } else {
        crate::routes::spaces::get_file(State(state), principal, method, uri, headers).await
    }
}

/// Reads the headers of the file a GET file URL names.
#[utoipa::path(
    head, path = "/api/fs/transfer/{grant}", tag = "agent files",
    operation_id = "fs_transfer_head",
    params(("grant" = String, Path)),
    responses(
        (status = 200, description = "Headers only"),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    )
)]
pub async fn head(
    state: State<AppState>,
    sealed: ApiPath<String>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    get(state, sealed, method, headers).await
}

/// Writes the file a PUT file URL names, with the rules of the sandbox's or space's own write.
/// Without a `Content-Type` the file is typed by its name.
#[utoipa::path(
    put, path = "/api/fs/transfer/{grant}", tag = "agent files",
    operation_id = "fs_transfer_put",
    params(("grant" = String, Path)),
    request_body(
        description = "The file's bytes",
        content((crate::openapi::FileBytes = "application/octet-stream"), (crate::openapi::FileBytes = "*/*")),
    ),
    responses(
        (status = 200, description = "Replaced"),
        (status = 201, description = "Created"),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "not a valid URL, expired, not for PUT, or a path that may not be written")),
        (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "")),
        (status = 415, description = refusal(&[ErrorCode::UnsupportedMediaType], "")),
    )
)]
pub async fn put(
    State(state): State<AppState>,
    ApiPath(sealed): ApiPath<String>,
    method: Method,
    mut headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let grant = open_grant(&state, &sealed, &method)?;
    let principal = granted(&state, &grant).await?;
    let uri = route_of(&grant, &principal)?;
    if !headers.contains_key(header::CONTENT_TYPE) {
        let typed = ferry_core::mime::mime_for_name(&grant.path);
        if let Ok(value) = HeaderValue::try_from(typed) {
            headers.insert(header::CONTENT_TYPE, value);
        }
    }
    if uri.path().starts_with("/api/threads/") {
        let door = crate::extract::DoorOf(Default::default());
        crate::routes::sandbox::write(State(state), principal, door, uri, headers, body).await
    } else {
        let door = crate::extract::DoorOf(Default::default());
        crate::routes::spaces::put_file(State(state), principal, door, uri, headers, body).await
    }
}
