//! Markdown rendered for display (docs/reference/web-ui.md, "Markdown"), through
//! `ferry_app::previews::markdown`.

use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::error_code::{ErrorCode, refusal};
use crate::extract::ApiJson;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkdownTexts {
    /// Markdown texts (at most 200, each at most 32,768 characters), e.g. agent messages.
    #[schema(max_items = 200)]
    pub texts: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RenderedHtml {
    /// Each text as a sanitized HTML fragment, in the order asked.
    pub html: Vec<String>,
}

/// Renders Markdown as sanitized HTML fragments: what the web UI shows agent messages with.
#[utoipa::path(
    post, path = "/api/render/markdown", tag = "events",
    request_body = MarkdownTexts,
    responses(
        (status = 200, body = RenderedHtml, description = "One fragment per text"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "more than 200 texts, or one over 32,768 characters")),
    ),
    security(("bearer" = []))
)]
pub async fn render_markdown(
    _principal: Principal,
    ApiJson(body): ApiJson<MarkdownTexts>,
) -> ApiResult<Json<RenderedHtml>> {
    Ok(Json(RenderedHtml {
        html: ferry_app::previews::markdown::render(body.texts).await?,
    }))
}
