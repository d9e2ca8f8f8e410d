//! send_file (docs/reference/send-file.md): a small text file straight over the event channel.

use axum::Json;
use axum::extract::State;
use ferry_core::SandboxPath;
use ferry_core::send_file::{
    Encoding, SendFileError, base64_encode, check_size, check_type, encode_content, sent_message,
};
use ferry_store::sandbox::SandboxError;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::access::{Action, thread_for};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::events::{MAX_EVENT_BYTES, Role, event_json};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SendFileRequest {
    /// The text file in the sandbox, e.g. `/sandbox/outputs/notes.md`.
    pub file_path: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendFileResult {
    pub filename: String,
    pub mime_type: String,
    pub size_bytes: u64,
    /// `utf-8` or `base64`.
    pub encoding: String,
    pub message: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FileContents<'a> {
    filename: &'a str,
    content: &'a str,
    encoding: Encoding,
    mime_type: &'a str,
    size_bytes: u64,
}

impl From<SendFileError> for ApiError {
    fn from(e: SendFileError) -> Self {
        ApiError::new(e.code(), e.to_string())
    }
}

/// Sends a text file of at most 20 KB to the user as a `file_send` event.
#[utoipa::path(
    post, path = "/api/threads/{id}/send-file", tag = "events",
    params(("id" = String, Path)),
    request_body = SendFileRequest,
    responses(
        (status = 200, body = SendFileResult),
        (status = 400, description = "INVALID_PATH: outside the sandbox"),
        (status = 404, description = "NOT_FOUND: File not found: PATH"),
        (status = 413, description = "REQUEST_TOO_LARGE: over 20 KB"),
        (status = 422, description = "UNSUPPORTED_FILE_TYPE: not one of the 38 text types"),
    ),
    security(("bearer" = []))
)]
pub async fn send_file(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SendFileRequest>,
) -> ApiResult<Json<SendFileResult>> {
    let thread = thread_for(&state, &principal, &id, Action::ActAsAgent).await?;
    let path = SandboxPath::parse(&body.file_path)?;
    // The documented order: the file must exist, then be a text type, then be small enough.
    let sandbox = state.sandboxes.open(&thread.id).await?;
    let opened = sandbox.open(path.relative()).await.map_err(|e| match e {
        SandboxError::NotFound => ApiError::from(SendFileError::NotFound {
            path: body.file_path.clone(),
        }),
        other => other.into(),
    })?;
    let filename = path.file_name().to_owned();
    let mime = check_type(&filename)?;
    check_size(opened.size)?;
    // The file may have grown since it was opened: read no more than the limit allows.
    let bytes = match opened
        .read_to_end(ferry_core::send_file::MAX_SEND_FILE_BYTES)
        .await?
    {
        Some(bytes) => bytes,
        None => {
            return Err(SendFileError::TooLarge {
                size: ferry_core::send_file::MAX_SEND_FILE_BYTES + 1,
            }
            .into());
        }
    };
    let size = bytes.len() as u64;
    let (mut content, mut encoding) = encode_content(&bytes);
    let agent = match &principal {
        Principal::Agent { agent_id, .. } => agent_id.clone(),
        _ => crate::events::DEFAULT_AGENT_ID.to_owned(),
    };
    let render = |id: i64, at: ferry_core::Timestamp, content: &str, encoding: Encoding| {
        let mut extra = serde_json::Map::new();
        let contents = FileContents {
            filename: &filename,
            content,
            encoding,
            mime_type: mime,
            size_bytes: size,
        };
        extra.insert(
            "fileContents".into(),
            serde_json::to_value(contents).unwrap_or_default(),
        );
        event_json(
            id,
            at,
            "file_send",
            Role::Agent(&agent),
            &thread.id,
            Some(&format!("Sent file: {filename}")),
            extra,
        )
    };
    // Text full of characters JSON must escape (control characters become six bytes each) can
    // pass the event limit; base64 of 20 KB always fits, so such text travels as base64.
    if render(i64::MAX, ferry_core::Timestamp(0), &content, encoding).len() > MAX_EVENT_BYTES {
        content = base64_encode(&bytes);
        encoding = Encoding::Base64;
    }
    let event = state
        .db
        .append_event(&thread.id, "file_send", |id, at| {
            render(id, at, &content, encoding)
        })
        .await?;
    state.announce(event);
    Ok(Json(SendFileResult {
        message: sent_message(&filename, size, mime),
        filename,
        mime_type: mime.to_owned(),
        size_bytes: size,
        encoding: encoding.as_str().to_owned(),
    }))
}
