//! A PDF's pages (and a presentation's slides) as images, for the preview panel
//! (docs/reference/uploads.md, "PDF pages"): the same drawings a model is shown, so the panel
//! shows what the agent sees and no script from the document ever reaches the browser.

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use ferry_app::previews::page_images::{self, PageImage};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiPath, ApiQuery};
use crate::routes::preview::PREVIEW_CSP;
use crate::routes::published::RevisionParams;
use crate::serve::header_value;
use crate::state::AppState;

/// The header that says how many pages the document has.
pub const PAGE_COUNT: &str = "x-page-count";

/// Page `page` (from 1) of an uploaded PDF, or slide `page` of a presentation (when the server
/// has an office renderer), drawn with a long edge of 1,568 pixels.
#[utoipa::path(
    get, path = "/api/threads/{id}/uploads/{upload_id}/pages/{page}", tag = "uploads",
    params(("id" = String, Path), ("upload_id" = String, Path), ("page" = u32, Path, description = "The page, from 1")),
    responses(
        (status = 200, content_type = "image/png", description = "The page drawn (PNG, or JPEG when smaller); `X-Page-Count` says how many pages the PDF (or slides the presentation) has"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "a page the document does not have")),
        (status = 401, description = refusal(&[ErrorCode::Unauthenticated], "")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 422, description = refusal(&[ErrorCode::UnsupportedFileType], "neither a PDF nor a presentation, a presentation without an office renderer, or a page that cannot be drawn")),
    ),
    security(("bearer" = []))
)]
pub async fn upload_page(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, upload_id, page)): ApiPath<(String, String, u32)>,
) -> ApiResult<Response> {
    let image = page_images::upload_page(&state.app, &principal, &id, &upload_id, page).await?;
    answer(image, page)
}

/// Page `page` (from 1) of a published PDF's revision (default the latest), or slide `page` of a
/// presentation (when the server has an office renderer), drawn with a long edge of 1,568 pixels.
#[utoipa::path(
    get, path = "/api/threads/{id}/published/{file_id}/pages/{page}", tag = "publish",
    params(("id" = String, Path), ("file_id" = String, Path), ("page" = u32, Path, description = "The page, from 1"), RevisionParams),
    responses(
        (status = 200, content_type = "image/png", description = "The page drawn (PNG, or JPEG when smaller); `X-Page-Count` says how many pages the PDF (or slides the presentation) has"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "a page the document does not have")),
        (status = 401, description = refusal(&[ErrorCode::Unauthenticated], "")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 422, description = refusal(&[ErrorCode::UnsupportedFileType], "neither a PDF nor a presentation, a presentation without an office renderer, or a page that cannot be drawn")),
    ),
    security(("bearer" = []))
)]
pub async fn published_page(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath((id, file_id, page)): ApiPath<(String, String, u32)>,
    ApiQuery(params): ApiQuery<RevisionParams>,
) -> ApiResult<Response> {
    let image =
        page_images::published_page(&state.app, &principal, &id, &file_id, params.revision, page)
            .await?;
    answer(image, page)
}

fn answer(image: PageImage, page: u32) -> ApiResult<Response> {
    let mut response = image.bytes.into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, header_value(&image.mime_type)?);
    h.insert(PAGE_COUNT, HeaderValue::from(image.pages));
    // The drawing of one page of one content never changes.
    h.insert(
        header::ETAG,
        header_value(&format!("\"page-{}-{page}\"", image.sha256))?,
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PREVIEW_CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    Ok(response)
}
