//! Serving a preview (a published revision's or an upload's, as `ferry_app::previews` makes
//! them) with headers that keep any script in it from running on ferry's origin.

use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use ferry_app::previews::{self, Preview};

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::serve::{Servable, attachment_disposition, header_value, serve_blob};
use crate::state::AppState;

/// The Content-Security-Policy of `html` and `image` previews (docs/reference/publish.md): the
/// one of all stored bytes, under which nothing may load or run.
pub use ferry_core::content_type::SANDBOXED_CSP as PREVIEW_CSP;

/// Answers a file's preview by its kind: an image or a PDF inline, or its sanitized HTML
/// rendering; 404 for a file with no preview.
pub async fn serve_preview(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    file: &Preview,
) -> ApiResult<Response> {
    let inline = format!(
        "inline{}",
        attachment_disposition(&file.filename).trim_start_matches("attachment")
    );
    let servable = |content_type: &'static str| Servable {
        blob_key: &file.blob_key,
        size: file.size,
        content_type,
        sha256: &file.sha256,
        modified: file.modified,
        disposition: Some(inline.clone()),
    };
    let mut response = match file.kind.as_str() {
        "image" => {
            let content_type = file.image_type().ok_or_else(no_preview)?;
            let mut response =
                serve_blob(&state.app, method, headers, servable(content_type)).await?;
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(PREVIEW_CSP),
            );
            response
        }
        // No CSP sandbox here: it would stop the browser's own PDF viewer.
        "pdf" => serve_blob(&state.app, method, headers, servable("application/pdf")).await?,
        "html" => {
            let html = previews::rendered_html(&state.app, file).await?;
            let mut response = (
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/html; charset=utf-8"),
                    ),
                    (
                        header::CACHE_CONTROL,
                        HeaderValue::from_static("private, max-age=3600"),
                    ),
                    (header::ETAG, header_value(&previews::rendering_etag(file))?),
                ],
                html,
            )
                .into_response();
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(PREVIEW_CSP),
            );
            response
        }
        _ => return Err(no_preview()),
    };
    let h = response.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    Ok(response)
}

fn no_preview() -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        "Preview not available — download to view",
    )
}
