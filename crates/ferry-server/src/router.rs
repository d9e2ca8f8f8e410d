//! Every route of the HTTP API, in one place; the OpenAPI document of the same handlers is in
//! `openapi.rs`.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::error::ApiError;
use crate::routes::{events, published, sandbox, say, send_file, spaces, system, threads, uploads};
use crate::state::AppState;

/// The whole HTTP API. `/mcp` answers tool calls by calling the same routes in process (with
/// the same middleware), through a router built without `/mcp` itself.
pub fn router(state: AppState) -> Router {
    // The recorder must exist before the first request is counted.
    crate::metrics::handle();
    let api = finish(routes(), &state);
    // The agent tools over streamable HTTP (docs/mcp.md), acting with the caller's bearer token.
    let mcp = crate::mcp::endpoint(state.clone(), api);
    finish(routes().route_service("/mcp", mcp), &state)
}

/// Every route but `/mcp`.
fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(system::healthz))
        .route("/metrics", get(system::metrics))
        .route("/api/openapi.json", get(crate::openapi::serve))
        .route("/api/spaces", get(spaces::list_spaces))
        .route("/api/spaces/{space}/files", get(spaces::list_files))
        .route(
            "/api/spaces/{space}/files/{*path}",
            get(spaces::get_file)
                .head(spaces::head_file)
                .put(spaces::put_file),
        )
        .route(
            "/api/threads",
            post(threads::create_thread).get(threads::list_threads),
        )
        .route("/api/threads/{id}", get(threads::get_thread))
        .route("/api/threads/{id}/agent-token", post(threads::agent_token))
        .route("/api/threads/{id}/sandbox", get(sandbox::list))
        .route(
            "/api/threads/{id}/sandbox/{*path}",
            get(sandbox::read).head(sandbox::head).put(sandbox::write),
        )
        .route(
            "/api/threads/{id}/uploads",
            // Uploads enforce their own limit while streaming; axum's default would cap them at 2 MB.
            post(uploads::create)
                .get(uploads::list)
                .layer(DefaultBodyLimit::disable()),
        )
        .route(
            "/api/threads/{id}/uploads/{upload_id}/content",
            get(uploads::content),
        )
        .route("/api/threads/{id}/events", get(events::events))
        .route("/api/threads/{id}/messages", post(events::post_message))
        .route(
            "/api/threads/{id}/published",
            post(published::publish).get(published::list),
        )
        .route(
            "/api/threads/{id}/published/{pid}/content",
            get(published::content),
        )
        .route(
            "/api/threads/{id}/published/{pid}/preview",
            get(published::preview),
        )
        .route("/api/storage/thread-file", get(published::thread_file))
        .route("/api/threads/{id}/send-file", post(send_file::send_file))
        .route("/api/threads/{id}/say", post(say::say))
        .route(
            "/api/threads/{id}/attachments/{aid}/content",
            get(say::attachment_content),
        )
        .route("/api/attachments/{aid}", get(say::signed_attachment))
        .route(
            "/api/threads/{id}/connectors",
            post(say::create_connector).get(say::list_connectors),
        )
        .route(
            "/api/threads/{id}/connectors/{cid}",
            axum::routing::delete(say::delete_connector),
        )
        .merge(crate::web::routes())
}

/// The fallbacks and middleware every answer goes through, and the state.
fn finish(routes: Router<AppState>, state: &AppState) -> Router {
    routes
        .fallback(system::no_route)
        .method_not_allowed_fallback(system::wrong_method)
        .layer(middleware::from_fn(crate::limits::linger_on_refusal))
        .layer(middleware::map_request(crate::limits::idle_bodies(
            state.config.body_idle_timeout,
        )))
        .layer(middleware::from_fn(crate::metrics::track))
        .layer(CatchPanicLayer::custom(panicked))
        .layer(TraceLayer::new_for_http().make_span_with(crate::request_id::span))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(crate::request_id::MakeId))
        .with_state(state.clone())
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::internal("a handler panicked").into_response()
}
