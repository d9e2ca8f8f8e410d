//! Every route of the HTTP API, in one place, next to the OpenAPI document generated from the
//! same handlers.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::error::ApiError;
use crate::routes::{events, published, sandbox, say, send_file, spaces, system, threads, uploads};
use crate::state::AppState;

pub fn router(state: AppState) -> Router {
    // The recorder must exist before the first request is counted.
    crate::metrics::handle();
    Router::new()
        .route("/healthz", get(system::healthz))
        .route("/metrics", get(system::metrics))
        .route("/api/openapi.json", get(system::openapi))
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
        // The agent tools over streamable HTTP (docs/mcp.md), acting with the caller's bearer token.
        .route_service("/mcp", crate::mcp::endpoint(state.clone()))
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
        .with_state(state)
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::internal("a handler panicked").into_response()
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ferry",
        description = "A self-hostable file exchange between people and their AI agents."
    ),
    paths(
        system::healthz,
        system::metrics,
        system::openapi,
        spaces::list_spaces,
        spaces::list_files,
        spaces::get_file,
        spaces::head_file,
        spaces::put_file,
        threads::create_thread,
        threads::list_threads,
        threads::get_thread,
        threads::agent_token,
        sandbox::list,
        sandbox::read,
        sandbox::head,
        sandbox::write,
        uploads::create,
        uploads::list,
        uploads::content,
        events::events,
        events::post_message,
        published::publish,
        published::list,
        published::content,
        published::preview,
        published::thread_file,
        send_file::send_file,
        say::say,
        say::attachment_content,
        say::signed_attachment,
        say::create_connector,
        say::list_connectors,
        say::delete_connector,
    ),
    modifiers(&BearerAuth, &McpEndpoint),
    tags(
        (name = "spaces", description = "Per-user storage"),
        (name = "threads", description = "Threads and agent tokens"),
        (name = "sandbox", description = "A thread's sandbox files"),
        (name = "uploads", description = "User → agent uploads with previews"),
        (name = "events", description = "The thread's event channel, messages and send_file"),
        (name = "publish", description = "Agent → user published files"),
        (name = "say", description = "Say mode, attachments and connectors"),
        (name = "mcp", description = "The agent tools over the Model Context Protocol"),
        (name = "system", description = "Health, metrics and this document"),
    )
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

/// `/mcp` is served by the MCP SDK's service rather than a handler, so its entry is written here.
struct McpEndpoint;

impl utoipa::Modify for McpEndpoint {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::path::{HttpMethod, OperationBuilder};
        use utoipa::openapi::security::SecurityRequirement;
        use utoipa::openapi::{RefOr, ResponseBuilder};
        let operation = OperationBuilder::new()
            .tag("mcp")
            .summary(Some("The agent tools over MCP (streamable HTTP)"))
            .description(Some(
                "JSON-RPC messages of the Model Context Protocol; the tools act with the bearer \
                 token of each request. See docs/mcp.md.",
            ))
            .response(
                "200",
                RefOr::T(
                    ResponseBuilder::new()
                        .description("A JSON-RPC answer")
                        .build(),
                ),
            )
            .response(
                "401",
                RefOr::T(
                    ResponseBuilder::new()
                        .description("UNAUTHENTICATED")
                        .build(),
                ),
            )
            .security(SecurityRequirement::new("bearer", Vec::<String>::new()))
            .build();
        openapi
            .paths
            .add_path_operation("/mcp", vec![HttpMethod::Post], operation);
    }
}

/// The OpenAPI document of every route above.
pub fn openapi() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
