//! send_file over HTTP (docs/reference/send-file.md): a small text file straight over the
//! event channel.

use axum::Json;
use axum::extract::State;
use ferry_app::threads::send_file::{self, SendFileResult};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SendFileRequest {
    /// The text file in the sandbox, e.g. `/sandbox/outputs/notes.md`.
    pub file_path: String,
}

/// Sends a text file of at most 20 KB to the user as a `file_send` event.
#[utoipa::path(
    post, path = "/api/threads/{id}/send-file", tag = "events",
    params(("id" = String, Path)),
    request_body = SendFileRequest,
    responses(
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only the thread's agent or service_role")),
        (status = 200, body = SendFileResult, description = "The file was sent on the event channel"),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath], "outside the sandbox")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "File not found: PATH")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "over 20 KB")),
        (status = 422, description = refusal(&[ErrorCode::UnsupportedFileType], "not one of the 38 text types")),
    ),
    security(("bearer" = []))
)]
pub async fn send_file(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SendFileRequest>,
) -> ApiResult<Json<SendFileResult>> {
    Ok(Json(
        send_file::send(&state.app, &principal, &id, &body.file_path).await?,
    ))
}
