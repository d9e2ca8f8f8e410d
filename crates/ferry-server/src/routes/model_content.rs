//! What a chat model is handed of an upload or a message (docs/reference/uploads.md, "Model
//! content"): content blocks, images included, ready to go into a model message.

use axum::Json;
use axum::extract::State;
use ferry_app::previews::model_content::{self, ContentBlock};
use ferry_core::page_selection::PageSelection;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// PDF only: the pages to show, e.g. `1-3,7` (default the first 5; at most 100).
    #[param(value_type = Option<String>, example = "1-3,7")]
    pages: Option<PageSelection>,
}

/// An upload as a model takes it: for an image, the image (scaled to a long edge of at most
/// 1,568 px and at most 5,000,000 bytes) and its hidden note; for a PDF, its note and then each
/// page asked for (`pages`, by default the first 5) as an image followed by that page's text;
/// for another document, the note with its preview.
#[utoipa::path(
    get, path = "/api/threads/{id}/uploads/{upload_id}/model-content", tag = "uploads",
    params(("id" = String, Path), ("upload_id" = String, Path), PageParams),
    responses(
        (status = 200, body = Vec<ContentBlock>, description = "LangChain standard content blocks"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "a malformed `pages`, a page the PDF does not have, or `pages` for a file that is no PDF")),
        (status = 401, description = refusal(&[ErrorCode::Unauthenticated], "")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    ),
    security(("bearer" = []))
)]
pub async fn upload_model_content(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, upload_id)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<PageParams>,
) -> ApiResult<Json<Vec<ContentBlock>>> {
    let blocks = model_content::of_upload(
        &state.app,
        &principal,
        &id,
        &upload_id,
        params.pages.as_ref(),
    )
    .await?;
    Ok(Json(blocks))
}

/// A message as a model takes it: its text, then the blocks of each of its uploads (an
/// `upload` event: the blocks of its upload), a PDF with its first 5 pages. Events themselves
/// never carry image bytes.
#[utoipa::path(
    get, path = "/api/threads/{id}/events/{event_id}/model-content", tag = "events",
    params(("id" = String, Path), ("event_id" = i64, Path, description = "The event's number in the thread")),
    responses(
        (status = 200, body = Vec<ContentBlock>, description = "LangChain standard content blocks"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "the event is neither a message nor an upload")),
        (status = 401, description = refusal(&[ErrorCode::Unauthenticated], "")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
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
