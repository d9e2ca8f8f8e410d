//! What a chat model is handed of an upload or a message (docs/reference/uploads.md, "Model
//! content"): content blocks, images included, ready to go into a model message.

use axum::Json;
use axum::extract::State;
use ferry_app::model_content::{self, ContentBlock};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::state::AppState;

/// An upload as a model takes it: for an image, the image (scaled to a long edge of at most
/// 1,568 px and at most 5,000,000 bytes) and its hidden note; for a document, the note with
/// its preview.
#[utoipa::path(
    get, path = "/api/threads/{id}/uploads/{upload_id}/model-content", tag = "uploads",
    params(("id" = String, Path), ("upload_id" = String, Path)),
    responses(
        (status = 200, body = Vec<ContentBlock>, description = "LangChain standard content blocks"),
        (status = 401, description = "UNAUTHENTICATED"),
        (status = 404, description = "NOT_FOUND"),
    ),
    security(("bearer" = []))
)]
pub async fn upload_model_content(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, upload_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Vec<ContentBlock>>> {
    let blocks = model_content::of_upload(&state.app, &principal, &id, &upload_id).await?;
    Ok(Json(blocks))
}

/// A message as a model takes it: its text, then the blocks of each of its uploads (an
/// `upload` event: the blocks of its upload). Events themselves never carry image bytes.
#[utoipa::path(
    get, path = "/api/threads/{id}/events/{event_id}/model-content", tag = "events",
    params(("id" = String, Path), ("event_id" = i64, Path, description = "The event's number in the thread")),
    responses(
        (status = 200, body = Vec<ContentBlock>, description = "LangChain standard content blocks"),
        (status = 400, description = "INVALID_REQUEST: the event is neither a message nor an upload"),
        (status = 401, description = "UNAUTHENTICATED"),
        (status = 404, description = "NOT_FOUND"),
    ),
    security(("bearer" = []))
)]
pub async fn event_model_content(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, event_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Vec<ContentBlock>>> {
    // Event numbers are positive; anything else names no event.
    let number = event_id
        .parse::<i64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| ApiError::not_found(format!("no event '{event_id}' in this thread")))?;
    let blocks = model_content::of_event(&state.app, &principal, &id, number).await?;
    Ok(Json(blocks))
}
