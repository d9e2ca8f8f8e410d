//! The OpenAPI document of the HTTP API, generated from the handlers' annotations, and the
//! route that serves it.

use crate::error_code::{ErrorCode, refusal};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use std::sync::Arc;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

/// A body that is a file's bytes, whatever they are. Written as a binary string so that a
/// generated client sends the file itself (not, say, a JSON array of numbers).
#[derive(Debug)]
pub struct FileBytes;

impl utoipa::PartialSchema for FileBytes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .into()
    }
}

impl utoipa::ToSchema for FileBytes {}

/// One message of an event stream (`text/event-stream`), as a client parses it: `id` is the
/// event's number in its channel and `data` the event's JSON (the `ThreadEvent` or
/// `SpaceEvent` that `format=json` answers in an array). Keep-alive comments carry no message.
#[derive(Debug)]
pub struct StreamedEvent;

impl utoipa::PartialSchema for StreamedEvent {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let text = |description: &str| {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(description))
        };
        ObjectBuilder::new()
            .property("id", text("The event's number in its channel"))
            .property("data", text("The event as JSON"))
            .property(
                "event",
                text("Always `message`: no stream names its events"),
            )
            .required("id")
            .required("data")
            .description(Some(
                "One message of the stream: the event's number and the event as JSON",
            ))
            .into()
    }
}

impl utoipa::ToSchema for StreamedEvent {}

/// One message of the thread list's stream (`GET /api/threads/live`): `data` is a
/// `ThreadListEvent`. The stream has no ids: a reconnect starts again with the whole list.
#[derive(Debug)]
pub struct StreamedListEvent;

impl utoipa::PartialSchema for StreamedListEvent {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .property(
                "data",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some("A ThreadListEvent as JSON")),
            )
            .required("data")
            .description(Some("One message of the stream: a ThreadListEvent as JSON"))
            .into()
    }
}

impl utoipa::ToSchema for StreamedListEvent {}

/// An upload as a form: one or more parts named `file`, each a file with its name.
#[derive(Debug, utoipa::ToSchema)]
pub struct UploadForm {
    #[schema(inline, min_items = 1)]
    pub file: Vec<FileBytes>,
}

/// This document: the whole HTTP API as OpenAPI 3.1.
#[utoipa::path(
    get, path = "/api/openapi.json", tag = "system", operation_id = "openapi_document",
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
    // Sent inside an event stream, so no response names it: listed here for clients' types.
    components(schemas(ferry_app::threads::list::ThreadListEvent)),
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
        use utoipa::openapi::request_body::RequestBodyBuilder;
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        use utoipa::openapi::security::SecurityRequirement;
        use utoipa::openapi::{ContentBuilder, RefOr, Required, ResponseBuilder};
        let operation = OperationBuilder::new()
            .tag("mcp")
            .operation_id(Some("mcp"))
            .summary(Some("The agent tools over MCP (streamable HTTP)"))
            .description(Some(
                "JSON-RPC messages of the Model Context Protocol; the tools act with the bearer \
                 token of each request. See docs/mcp.md.",
            ))
            .request_body(Some(
                RequestBodyBuilder::new()
                    .description(Some("One JSON-RPC message"))
                    .content(
                        "application/json",
                        ContentBuilder::new()
                            .schema(Some(
                                ObjectBuilder::new()
                                    .schema_type(Type::Object)
                                    .property(
                                        "jsonrpc",
                                        ObjectBuilder::new()
                                            .schema_type(Type::String)
                                            .enum_values(Some(["2.0"])),
                                    )
                                    // A request or notification names its method; a
                                    // response (to a request the server sent) has none.
                                    .property(
                                        "method",
                                        ObjectBuilder::new().schema_type(Type::String),
                                    )
                                    .required("jsonrpc"),
                            ))
                            .build(),
                    )
                    .required(Some(Required::True))
                    .build(),
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
                "202",
                RefOr::T(
                    ResponseBuilder::new()
                        .description("A notification or a response, taken")
                        .build(),
                ),
            )
            .response(
                "415",
                RefOr::T(
                    ResponseBuilder::new()
                        .description("The body is not sent as application/json")
                        .build(),
                ),
            )
            .response(
                "400",
                RefOr::T(
                    ResponseBuilder::new()
                        .description(
                            "Not a JSON-RPC message of MCP (INVALID_REQUEST), or a session the \
                             server does not know",
                        )
                        .build(),
                ),
            )
            .response(
                "406",
                RefOr::T(
                    ResponseBuilder::new()
                        .description(
                            "The request's Accept header does not take both application/json and \
                             text/event-stream, as MCP's streamable HTTP requires (no Accept, or \
                             */*, takes both)",
                        )
                        .build(),
                ),
            )
            .response(
                "401",
                RefOr::T(
                    ResponseBuilder::new()
                        .description(refusal(&[ErrorCode::Unauthenticated], ""))
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

/// The document of the route list, finished.
///
/// What holds for every operation alike is written here once rather than on each handler:
/// - routes with a path that takes the rest of the URL are written the axum way (`{*path}`) in
///   their annotation, for the router; the document says `{path}`, as OpenAPI does;
/// - every operation that needs a bearer token can answer 401 (the token extractor runs before
///   the handler); the others say they need no security;
/// - every error answer is the one envelope (`Error`), but for `/mcp`, whose errors below 401
///   are the MCP SDK's plain text;
/// - parameters the server checks against a rule say the rule ([`constrain`]), so that a client
///   or a fuzzer reading the document sends only what the server accepts;
/// - the API is served from the origin that serves this document.
pub fn finish(mut document: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, ServerBuilder};
    let paths = std::mem::take(&mut document.paths.paths);
    document.paths.paths = paths
        .into_iter()
        .map(|(path, item)| (path.replace("{*", "{"), item))
        .collect();
    document.servers = Some(vec![
        ServerBuilder::new()
            .url("/")
            .description(Some("The ferry server that serves this document"))
            .build(),
    ]);
    document
        .components
        .get_or_insert_with(Default::default)
        .schemas
        .insert(
            "Error".to_owned(),
            <crate::error::Envelope as utoipa::PartialSchema>::schema(),
        );
    let envelope = || {
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("Error")))
            .build()
    };
    for (route, item) in document.paths.paths.iter_mut() {
        for (method, operation) in operations(item) {
            for parameter in operation.parameters.iter_mut().flatten() {
                if let RefOr::T(parameter) = parameter {
                    constrain(route, method, parameter);
                }
            }
            let authenticated = operation.security.as_ref().is_some_and(|s| !s.is_empty());
            let responses = &mut operation.responses.responses;
            if authenticated {
                responses.entry("401".to_owned()).or_insert_with(|| {
                    RefOr::T(
                        ResponseBuilder::new()
                            .description(refusal(
                                &[ErrorCode::Unauthenticated],
                                "no bearer token, or one that was refused (WWW-Authenticate \
                                 says why)",
                            ))
                            .build(),
                    )
                });
            } else {
                operation.security = Some(Vec::new());
            }
            for (status, response) in responses.iter_mut() {
                if let RefOr::T(response) = response
                    && (status.starts_with('4') || status.starts_with('5'))
                    && (route != "/mcp" || status == "401")
                    && response.content.is_empty()
                {
                    response
                        .content
                        .insert("application/json".to_owned(), envelope().into());
                }
            }
        }
    }
    document
}

/// Every operation of a path, with its method.
fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = (&'static str, &mut utoipa::openapi::path::Operation)> {
    [
        ("get", &mut item.get),
        ("put", &mut item.put),
        ("post", &mut item.post),
        ("delete", &mut item.delete),
        ("options", &mut item.options),
        ("head", &mut item.head),
        ("patch", &mut item.patch),
        ("trace", &mut item.trace),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.as_mut().map(|op| (method, op)))
}

/// Gives a parameter the schema of the rule the server checks it against: the path and space
/// name rules (ferry-core's validators, whose tests hold the expressions to them), the
/// conditional headers, and the queries that take one of a few words.
fn constrain(route: &str, method: &str, parameter: &mut utoipa::openapi::path::Parameter) {
    use utoipa::openapi::path::ParameterIn;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let text = || ObjectBuilder::new().schema_type(Type::String);
    let path = ferry_core::path::path_regex();
    let schema = match (&parameter.parameter_in, parameter.name.as_str()) {
        (ParameterIn::Path, "space") => {
            text().pattern(Some(ferry_core::space_name::SPACE_NAME_PATTERN))
        }
        (ParameterIn::Path, "path") => text()
            .pattern(Some(format!("^{path}$")))
            .max_length(Some(ferry_core::path::MAX_PATH_BYTES)),
        // A sandbox listing takes the root (empty, `/sandbox`, `/sandbox/`), `/sandbox/…`, or a
        // path relative to `/sandbox/workspace/`, each with one trailing slash or none. The
        // length limit is on the path below `/sandbox/`, so a relative path has less of it.
        (ParameterIn::Query, "dir") if route.contains("/sandbox") => {
            let max = ferry_core::path::MAX_PATH_BYTES;
            let workspace = ferry_core::path::WORKSPACE.len() + 1;
            let absolute = text()
                .pattern(Some(format!("^/sandbox/{path}/?$")))
                .max_length(Some("/sandbox/".len() + max));
            let relative = text()
                .pattern(Some(format!("^{path}/?$")))
                .max_length(Some(max - workspace));
            let root = text().enum_values(Some(["", "/sandbox", "/sandbox/"]));
            return set(parameter, any_of([root, absolute, relative]));
        }
        (ParameterIn::Query, "dir") => text()
            .pattern(Some(format!("^(?:{path})?$")))
            .max_length(Some(ferry_core::path::MAX_PATH_BYTES)),
        (ParameterIn::Query, "storage_path") => text().pattern(Some(format!(
            "^{}/[^/]+/[^/]+$",
            ferry_core::storage_path::PUBLISHED_BUCKET
        ))),
        // A page's cursor is URL-safe base64 without padding.
        (ParameterIn::Query, "cursor") => {
            text().min_length(Some(1)).pattern(Some("^[A-Za-z0-9_-]+$"))
        }
        // An upload's name is at least one character; which names pass (the last segment,
        // trimmed, under the path rules) is for the server to say.
        (ParameterIn::Query, "filename") => text().min_length(Some(1)),
        (ParameterIn::Query, "revisions") => text().enum_values(Some(["all", "latest"])),
        (ParameterIn::Query, "format") => text().enum_values(Some(["json"])),
        // Page sizes: above the maximum they are lowered; a listing refuses 0, the event
        // poll raises it to 1.
        (ParameterIn::Query, "limit") => ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(if route.ends_with("/events") { 0 } else { 1 }))
            .maximum(Some(u32::MAX)),
        // On a write, `If-None-Match` means "create only", and only `*` says that.
        (ParameterIn::Header, "If-None-Match") if method == "put" => {
            text().enum_values(Some(["*"]))
        }
        // On a read, a malformed condition is ignored (RFC 9110 §13.1): any text will do.
        (ParameterIn::Header, "If-None-Match" | "If-Match") if matches!(method, "get" | "head") => {
            text()
        }
        // `*`, or a list of quoted tags. (Written as either-or: schemathesis's coverage phase
        // keeps to a header's pattern only then.)
        (ParameterIn::Header, "If-None-Match" | "If-Match") => {
            let any = text().enum_values(Some(["*"]));
            let tags = text().pattern(Some(crate::serve::TAG_LIST_PATTERN));
            return set(parameter, any_of([any, tags]));
        }
        (ParameterIn::Header, "Last-Event-ID") => text().pattern(Some("^[0-9]{1,18}$")),
        (ParameterIn::Header, _) => text(),
        _ => return,
    };
    set(parameter, schema.build().into());
}

fn set(parameter: &mut utoipa::openapi::path::Parameter, schema: utoipa::openapi::schema::Schema) {
    parameter.schema = Some(schema.into());
}

fn any_of<const N: usize>(
    schemas: [utoipa::openapi::schema::ObjectBuilder; N],
) -> utoipa::openapi::schema::Schema {
    schemas
        .into_iter()
        .fold(utoipa::openapi::schema::AnyOfBuilder::new(), |any, one| {
            any.item(one.build())
        })
        .into()
}
