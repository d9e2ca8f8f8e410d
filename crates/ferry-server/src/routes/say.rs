//! Say mode (docs/reference/say.md): `<say>` blocks become messages, `<file>` tags attach
//! files, and each message goes to every connector of the thread.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use ferry_core::SandboxPath;
use ferry_core::tags::{FileTag, parse_say};
use ferry_store::sandbox::SandboxError;
use ferry_store::say::Attachment;
use ferry_store::threads::Thread;
use ferry_store::{StoreError, WriteError};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::access::{Action, thread_for};
use crate::auth::Principal;
use crate::connectors::{Outgoing, connectors_of};
use crate::error::{ApiError, ApiResult};
use crate::events::{MAX_EVENT_BYTES, Role, event_json};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::serve::{Servable, serve_download};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SayRequest {
    /// The model's output: `<say>…</say>` blocks and `<file mode="doc">/sandbox/…</file>` tags.
    pub text: String,
}

/// A file attached to a message.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentView {
    pub id: String,
    pub filename: String,
    pub mime_type: String,
    pub size: u64,
    /// `document`, `photo` or `video`.
    pub send_as: String,
    /// Where a token holder downloads it.
    pub url: String,
    /// When the file was one the thread had published: its id and revision, so the user's
    /// preview panel can open it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
}

impl From<&Attachment> for AttachmentView {
    fn from(a: &Attachment) -> Self {
        AttachmentView {
            id: a.id.clone(),
            filename: a.filename.clone(),
            mime_type: a.mime_type.clone(),
            size: a.size,
            send_as: a.send_as.clone(),
            url: format!("/api/threads/{}/attachments/{}/content", a.thread_id, a.id),
            published_id: a.published.as_ref().map(|(id, _)| id.clone()),
            revision: a.published.as_ref().map(|(_, revision)| *revision),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SayResult {
    /// The ids of the message events, in order.
    pub messages: Vec<i64>,
    pub files: Vec<AttachmentView>,
    /// Files that were skipped, and why.
    pub warnings: Vec<String>,
}

/// Delivers a say-mode reply (the agent, or service_role).
#[utoipa::path(
    post, path = "/api/threads/{id}/say", tag = "say",
    params(("id" = String, Path)),
    request_body = SayRequest,
    responses(
        (status = 200, body = SayResult),
        (status = 403, description = "FORBIDDEN: only the agent speaks"),
        (status = 404, description = "NOT_FOUND"),
        (status = 413, description = "REQUEST_TOO_LARGE: a <say> block over 32 KiB as an event"),
    ),
    security(("bearer" = []))
)]
pub async fn say(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SayRequest>,
) -> ApiResult<Json<SayResult>> {
    let thread = thread_for(&state, &principal, &id, Action::ActAsAgent).await?;
    let agent = match &principal {
        Principal::Agent { agent_id, .. } => agent_id.clone(),
        _ => crate::events::DEFAULT_AGENT_ID.to_owned(),
    };
    let reply = parse_say(&body.text);
    // Text outside <say> is never sent; a block too long for an event fails the whole reply
    // before anything is stored.
    for block in &reply.says {
        let probe = message_json(
            i64::MAX,
            ferry_core::Timestamp(0),
            &agent,
            &thread.id,
            Some(block),
            &[],
        );
        if probe.len() > MAX_EVENT_BYTES {
            return Err(ApiError::new(
                ferry_core::ErrorCode::RequestTooLarge,
                format!(
                    "a <say> block is longer than an event may be ({} KiB); publish long text as a file",
                    MAX_EVENT_BYTES / 1024
                ),
            ));
        }
    }

    let mut files = Vec::new();
    let mut warnings = Vec::new();
    for tag in &reply.files {
        match resolve(&state, &thread, tag).await {
            Ok(attachment) => files.push(AttachmentView::from(&attachment)),
            Err(why) => {
                tracing::warn!(thread = %thread.id, path = %tag.path, %why, "say: skipped a <file> tag");
                warnings.push(format!("{}: {why}", tag.path));
            }
        }
    }

    let mut contents: Vec<Option<&str>> = reply.says.iter().map(|s| Some(s.as_str())).collect();
    if contents.is_empty() && !files.is_empty() {
        contents.push(None);
    }
    let connectors = connectors_of(&state, &thread.id).await?;
    let mut messages = Vec::new();
    let last = contents.len().saturating_sub(1);
    for (i, content) in contents.into_iter().enumerate() {
        let attached: &[AttachmentView] = if i == last { &files } else { &[] };
        let event = state
            .db
            .append_event(&thread.id, "message", |id, at| {
                message_json(id, at, &agent, &thread.id, content, attached)
            })
            .await?;
        for connector in &connectors {
            connector
                .deliver(
                    &state,
                    Outgoing {
                        thread_id: &thread.id,
                        event: &event,
                    },
                )
                .await?;
        }
        messages.push(event.id);
    }
    Ok(Json(SayResult {
        messages,
        files,
        warnings,
    }))
}

fn message_json(
    id: i64,
    at: ferry_core::Timestamp,
    agent: &str,
    thread_id: &str,
    content: Option<&str>,
    files: &[AttachmentView],
) -> String {
    let mut extra = serde_json::Map::new();
    if !files.is_empty() {
        extra.insert(
            "files".into(),
            serde_json::to_value(files).unwrap_or_default(),
        );
    }
    event_json(
        id,
        at,
        "message",
        Role::Agent(agent),
        thread_id,
        content,
        extra,
    )
}

/// Why a `<file>` tag was skipped, in words the agent can act on. Failures that are the
/// server's own are logged in full and reported only as such: no database or file system
/// error text reaches the caller.
#[derive(Debug, thiserror::Error)]
enum Skipped {
    #[error("{0}")]
    Path(#[from] ferry_core::path::PathError),
    #[error("{0}")]
    Sandbox(String),
    #[error("the file is larger than the publish limit of {}", crate::error::describe_bytes(*.0))]
    TooLarge(u64),
    #[error("the server's disk is full; try again later")]
    DiskFull,
    #[error(
        "the file could not be attached because of an internal error; the server log has the details"
    )]
    Internal,
}

impl Skipped {
    /// An internal failure: logged here, answered generically.
    fn internal(cause: impl std::fmt::Display) -> Skipped {
        tracing::error!(%cause, "say: a <file> tag failed internally");
        Skipped::Internal
    }
}

impl From<StoreError> for Skipped {
    fn from(e: StoreError) -> Self {
        if e.is_disk_full() {
            Skipped::DiskFull
        } else {
            Skipped::internal(e)
        }
    }
}

impl From<SandboxError> for Skipped {
    fn from(e: SandboxError) -> Self {
        match e {
            SandboxError::Io(io) if ferry_store::is_disk_full(&io) => Skipped::DiskFull,
            SandboxError::Io(io) => Skipped::internal(io),
            SandboxError::TooLarge { limit } => Skipped::TooLarge(limit),
            SandboxError::NotFound => Skipped::Sandbox(
                "no such file in the sandbox, and nothing published under that path".into(),
            ),
            // The other refusals describe the caller's path and are safe to repeat.
            other => Skipped::Sandbox(other.to_string()),
        }
    }
}

impl From<WriteError> for Skipped {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::TooLarge { limit } => Skipped::TooLarge(limit),
            WriteError::Io(io) if ferry_store::is_disk_full(&io) => Skipped::DiskFull,
            other => Skipped::internal(other),
        }
    }
}

/// Finds the file a `<file>` tag names: first among what the thread already published (by
/// sandbox or storage path), then in the sandbox, through the jail. The bytes are kept
/// permanently as the attachment's own copy.
async fn resolve(state: &AppState, thread: &Thread, tag: &FileTag) -> Result<Attachment, Skipped> {
    let mut attachment =
        if let Some(revision) = state.db.published_by_path(&thread.id, &tag.path).await? {
            Attachment {
                id: String::new(),
                thread_id: thread.id.clone(),
                filename: revision.filename,
                mime_type: revision.mime_type,
                size: revision.file_size,
                sha256: revision.sha256,
                send_as: String::new(),
                blob_key: revision.blob_key,
                published: Some((revision.file_id, revision.revision)),
                created_at: ferry_core::Timestamp(0),
            }
        } else {
            let path = SandboxPath::parse(&tag.path)?;
            let sandbox = state.sandboxes.open(&thread.id).await?;
            let opened = sandbox.open(path.relative()).await?;
            let limit = state.config.publish_max_bytes;
            if opened.size > limit {
                return Err(Skipped::TooLarge(limit));
            }
            let read = opened.stream(None).await.map_err(SandboxError::Io)?;
            let blob = state.blobs.write(read.stream, limit).await?;
            Attachment {
                id: String::new(),
                thread_id: thread.id.clone(),
                filename: path.file_name().to_owned(),
                mime_type: ferry_core::mime::mime_for_name(path.file_name()),
                size: blob.size,
                sha256: blob.sha256,
                send_as: String::new(),
                blob_key: blob.key,
                published: None,
                created_at: ferry_core::Timestamp(0),
            }
        };
    attachment.send_as = tag.mode.resolve(&attachment.mime_type).as_str().to_owned();
    Ok(state.db.insert_attachment(attachment).await?)
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
    serve_download(&state.blobs, method, headers, file, &attachment.filename).await
}

/// Downloads a message attachment.
#[utoipa::path(
    get, path = "/api/threads/{id}/attachments/{aid}/content", tag = "say",
    params(("id" = String, Path), ("aid" = String, Path)),
    responses((status = 200, description = "The bytes, as an attachment"), (status = 404, description = "NOT_FOUND")),
    security(("bearer" = []))
)]
pub async fn attachment_content(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, aid)): ApiPath<(String, String)>,
    method: Method,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let thread = thread_for(&state, &principal, &id, Action::Read).await?;
    let attachment = state
        .db
        .attachment(&aid, Some(&thread.id))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no attachment '{aid}' in this thread")))?;
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
        (status = 200, description = "The bytes"),
        (status = 403, description = "FORBIDDEN: a tampered or expired link"),
        (status = 404, description = "NOT_FOUND"),
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
    let attachment = state
        .db
        .attachment(&aid, None)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no attachment '{aid}'")))?;
    download(&state, &method, &headers, &attachment).await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewConnector {
    /// `webhook`
    #[serde(rename = "type")]
    pub kind: String,
    /// Where each message is POSTed (http or https).
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
        (status = 201, body = ConnectorView),
        (status = 400, description = "INVALID_REQUEST: not a webhook, or not an http(s) URL"),
        (status = 403, description = "FORBIDDEN: only the owner or service_role"),
    ),
    security(("bearer" = []))
)]
pub async fn create_connector(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<NewConnector>,
) -> ApiResult<Response> {
    let thread = thread_for(&state, &principal, &id, Action::Manage).await?;
    if body.kind != "webhook" {
        return Err(ApiError::invalid_request(format!(
            "connector type '{}' is not known: use 'webhook'",
            body.kind
        )));
    }
    let url = reqwest::Url::parse(&body.url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .ok_or_else(|| ApiError::invalid_request("'url' must be an absolute http or https URL"))?;
    crate::outbound::check_webhook_url(&url, state.config.webhooks.allow_private)
        .map_err(|why| ApiError::invalid_request(format!("'url' is refused: {why}")))?;
    let secret = hex::encode(rand::random::<[u8; 32]>());
    let row = state
        .db
        .insert_connector(&thread.id, "webhook", url.as_str(), &secret)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(ConnectorView {
            id: row.id,
            kind: row.kind,
            url: row.url,
            secret: Some(secret),
            created_at: row.created_at.rfc3339(),
        }),
    )
        .into_response())
}

/// Lists the thread's connectors (without their secrets).
#[utoipa::path(
    get, path = "/api/threads/{id}/connectors", tag = "say",
    params(("id" = String, Path)),
    responses((status = 200, body = ConnectorList)),
    security(("bearer" = []))
)]
pub async fn list_connectors(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ConnectorList>> {
    let thread = thread_for(&state, &principal, &id, Action::Manage).await?;
    let rows = state.db.connectors(&thread.id).await?;
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
    responses((status = 204, description = "Removed"), (status = 404, description = "NOT_FOUND")),
    security(("bearer" = []))
)]
pub async fn delete_connector(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, cid)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    let thread = thread_for(&state, &principal, &id, Action::Manage).await?;
    if state.db.delete_connector(&thread.id, &cid).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!(
            "no connector '{cid}' in this thread"
        )))
    }
}
