//! Operations routes: health, metrics, the OpenAPI document, and the answers for requests
//! that match no route or no method.

use crate::error::ErrorCode;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::ApiError;
use crate::error_code::refusal;
use crate::state::AppState;
use ferry_app::LimitsView;

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`
    pub status: &'static str,
}

/// Liveness and readiness: answers 200 when the metadata database answers.
#[utoipa::path(
    get, path = "/healthz", tag = "system",
    responses((status = 200, body = Health, description = "The metadata database answers"), (status = 503, description = refusal(&[ErrorCode::Unavailable], "")))
)]
pub async fn healthz(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    ferry_app::upkeep::healthy(&state.app).await.map_err(|e| {
        tracing::warn!(error = %e, "health check: database does not answer");
        ApiError::new(
            ErrorCode::Unavailable,
            "the metadata database does not answer",
        )
    })?;
    Ok(Json(Health { status: "ok" }))
}

/// The size limits this server enforces, so a client can tell a person before sending a file
/// that it is too large. Any valid token may ask.
#[utoipa::path(
    get, path = "/api/limits", tag = "system",
    responses((status = 200, body = LimitsView, description = "The size limits, in bytes"), (status = 401, description = refusal(&[ErrorCode::Unauthenticated], ""))),
    security(("bearer" = []))
)]
pub async fn limits(State(state): State<AppState>, _principal: Principal) -> Json<LimitsView> {
    Json(state.app.limits_view())
}

/// Prometheus metrics in the text exposition format.
#[utoipa::path(
    get, path = "/metrics", tag = "system",
    responses((status = 200, content_type = "text/plain; version=0.0.4", description = "Prometheus text"))
)]
pub async fn metrics(State(state): State<AppState>) -> Response {
    // Sampled at the scrape: the queues have no event of their own to count. The webhook
    // queue is the database's, so every node reports the whole of it.
    metrics::gauge!("ferry_extract_waiting").set(state.app.extraction_waiting() as f64);
    match ferry_app::upkeep::pending_deliveries(&state.app).await {
        Ok(pending) => metrics::gauge!("ferry_webhook_deliveries_pending").set(pending as f64),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: cannot count the pending webhook deliveries")
        }
    }
    let mut response = crate::metrics::handle().render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// No route matched. A browser finding its way to an address the app does not have (a
/// mistyped link) gets the app's page, which says "Page not found" with a way back, and a 404
/// status; everything else, the envelope.
pub async fn no_route(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let browsing = matches!(method, Method::GET | Method::HEAD)
        && headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html"))
        && !["/api/", "/mcp", "/s3", "/assets/", "/metrics", "/healthz"]
            .iter()
            .any(|prefix| uri.path().starts_with(prefix));
    if browsing {
        let mut page = crate::web::page().await;
        *page.status_mut() = StatusCode::NOT_FOUND;
        return page;
    }
    ApiError::not_found("no such route; /api/openapi.json lists them all").into_response()
}

pub async fn wrong_method() -> Response {
    let mut response = ApiError::new(
        ErrorCode::MethodNotAllowed,
        "this route does not answer that method; /api/openapi.json lists the methods",
    )
    .into_response();
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response
}
