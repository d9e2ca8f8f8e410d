//! The OpenAPI document of the HTTP API, generated from the handlers' annotations, and the
//! route that serves it.

use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use std::sync::Arc;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

/// This document: the whole HTTP API as OpenAPI 3.1.
#[utoipa::path(
    get, path = "/api/openapi.json", tag = "system",
    responses((status = 200, content_type = "application/json", description = "The OpenAPI document"))
)]
pub async fn serve(Extension(document): Extension<Arc<utoipa::openapi::OpenApi>>) -> Response {
    Json(document.as_ref()).into_response()
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ferry",
        description = "A self-hostable file exchange between people and their AI agents."
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
        (name = "s3", description = "Access keys for the S3 door at /s3 (docs/s3.md)"),
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

/// What the document says beside its routes: its title, tags, security scheme and `/mcp`.
pub fn base() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The document of the route list, finished. Routes with a path that takes the rest of the URL
/// are written the axum way (`{*path}`) in their annotation, for the router; the document says
/// `{path}`, as OpenAPI does.
pub fn finish(mut document: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let paths = std::mem::take(&mut document.paths.paths);
    document.paths.paths = paths
        .into_iter()
        .map(|(path, item)| (path.replace("{*", "{"), item))
        .collect();
    document
}
