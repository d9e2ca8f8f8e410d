//! Every route of the HTTP API, in one list that feeds both axum and the OpenAPI document
//! (each handler's `#[utoipa::path]` names its method and path once).

use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use std::sync::Arc;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ApiError;
use crate::routes::{
    events, execute, fs, fs_transfer, markdown, model_content, page_images, published, resumable,
    s3_keys, sandbox, say, send_file, spaces, system, threads, uploads,
};
use crate::state::AppState;

/// The whole HTTP API. `/mcp` answers tool calls by calling the same routes in process (with
/// the same middleware), through a router built without `/mcp` itself.
pub fn router(state: AppState) -> Router {
    // The recorder must exist before the first request is counted.
    crate::metrics::handle();
    let (listed, document) = routes().split_for_parts();
    let document = Extension(Arc::new(crate::openapi::finish(document)));
    let api = finish(listed.clone(), &state).layer(document.clone());
    // The agent tools over streamable HTTP (docs/mcp.md), acting with the caller's bearer token.
    let mcp = crate::mcp::endpoint(state.clone(), api);
    // The S3 door (docs/s3.md) gets the request with its path as the client signed it:
    // `/s3`, `/s3/` (an endpoint configured with the slash) and everything below.
    let s3 = crate::s3::door(&state);
    let doors = listed
        .route_service("/mcp", mcp)
        .route_service(ferry_s3::PREFIX, s3.clone())
        .route_service(&format!("{}/", ferry_s3::PREFIX), s3.clone())
        .route_service(&format!("{}/{{*rest}}", ferry_s3::PREFIX), s3);
    finish(doors, &state).layer(document)
}

/// The OpenAPI document of every route (and `/mcp`).
pub fn openapi() -> utoipa::openapi::OpenApi {
    crate::openapi::finish(routes().into_openapi())
}

/// Every route but `/mcp` (whose OpenAPI entry `openapi.rs` writes), with its documentation.
pub fn routes() -> OpenApiRouter<AppState> {
    // Uploads enforce their own limit while streaming; axum's default would cap them at 2 MB.
    let (schemas, paths, upload_routes) = routes!(uploads::create, uploads::list);
    let uploads = (
        schemas,
        paths,
        upload_routes.layer(DefaultBodyLimit::disable()),
    );
    OpenApiRouter::with_openapi(crate::openapi::base())
        .routes(routes!(system::healthz))
        .routes(routes!(system::metrics))
        .routes(routes!(system::limits))
        .routes(routes!(crate::openapi::serve))
        .routes(routes!(spaces::list_spaces))
        .routes(routes!(spaces::delete_space))
        .routes(routes!(spaces::make_folder))
        .routes(routes!(spaces::list_files))
        .routes(routes!(
            spaces::get_file,
            spaces::head_file,
            spaces::put_file,
            spaces::delete_file
        ))
        .routes(routes!(threads::create_thread, threads::list_threads))
        .routes(routes!(threads::follow_threads))
        .routes(routes!(
            threads::get_thread,
            threads::rename_thread,
            threads::delete_thread
        ))
        .routes(routes!(threads::agent_token))
        .routes(routes!(markdown::render_markdown))
        .routes(routes!(sandbox::list))
        .routes(routes!(sandbox::read, sandbox::head, sandbox::write))
        .routes(uploads)
        .routes(routes!(uploads::content))
        .routes(routes!(uploads::preview))
        .routes(routes!(model_content::upload_model_content))
        .routes(routes!(page_images::upload_page))
        .routes(routes!(page_images::published_page))
        .routes(routes!(events::events))
        .routes(routes!(events::space_events))
        .routes(routes!(events::post_message))
        .routes(routes!(model_content::event_model_content))
        .routes(routes!(published::publish, published::list))
        .routes(routes!(published::content))
        .routes(routes!(published::preview))
        .routes(routes!(published::thread_file))
        .routes(routes!(send_file::send_file))
        .routes(routes!(execute::execute))
        .routes(routes!(say::say))
        .routes(routes!(say::attachment_content))
        .routes(routes!(say::signed_attachment))
        .routes(routes!(say::create_connector, say::list_connectors))
        .routes(routes!(say::delete_connector))
        .routes(routes!(s3_keys::create, s3_keys::list))
        .routes(routes!(s3_keys::revoke))
        .merge(agent_file_routes())
        .merge(resumable_routes())
        .merge(OpenApiRouter::from(crate::web::routes()))
}

/// Resumable uploads (tus 1.0, `routes/resumable.rs`): every answer carries the protocol's
/// headers, and a `PATCH` streams its bytes under the upload's own length.
fn resumable_routes() -> OpenApiRouter<AppState> {
    let tus = || middleware::from_fn(resumable::with_tus_headers);
    let (schemas, paths, creation) = routes!(resumable::options, resumable::create);
    let (upload_schemas, upload_paths, upload) = routes!(
        resumable::head,
        resumable::patch,
        resumable::delete,
        resumable::answer
    );
    OpenApiRouter::new()
        .routes((schemas, paths, creation.layer(tus())))
        .routes((upload_schemas, upload_paths, upload.layer(tus())))
}

/// The agent's file operations, each on its own route and on its thread's
/// (`routes/fs.rs`). A write's JSON carries a whole file, so its routes take the body limit
/// `write_body` sets as it reads the body rather than axum's default of 2 MB.
fn agent_file_routes() -> OpenApiRouter<AppState> {
    let (schemas, paths, writes) = routes!(fs::write_file);
    let (thread_schemas, thread_paths, thread_writes) = routes!(fs::write_file_in_thread);
    // A batch of writes carries whole files too, under the same limit.
    let (batch_schemas, batch_paths, batches) = routes!(fs::upload_files);
    let (thread_batch_schemas, thread_batch_paths, thread_batches) =
        routes!(fs::upload_files_in_thread);
    // A file URL's PUT streams a whole file, under the sandbox's or space's own limit.
    let (transfer_schemas, transfer_paths, transfers) =
        routes!(fs_transfer::get, fs_transfer::head, fs_transfer::put);
    OpenApiRouter::new()
        .routes(routes!(fs::ls))
        .routes(routes!(fs::ls_in_thread))
        .routes(routes!(fs::read_file))
        .routes(routes!(fs::read_file_in_thread))
        .routes((schemas, paths, writes.layer(DefaultBodyLimit::disable())))
        .routes((
            thread_schemas,
            thread_paths,
            thread_writes.layer(DefaultBodyLimit::disable()),
        ))
        .routes((
            batch_schemas,
            batch_paths,
            batches.layer(DefaultBodyLimit::disable()),
        ))
        .routes((
            thread_batch_schemas,
            thread_batch_paths,
            thread_batches.layer(DefaultBodyLimit::disable()),
        ))
        .routes(routes!(fs::download_files))
        .routes(routes!(fs::download_files_in_thread))
        .routes(routes!(fs::edit_file))
        .routes(routes!(fs::edit_file_in_thread))
        .routes(routes!(fs::glob))
        .routes(routes!(fs::glob_in_thread))
        .routes(routes!(fs::grep))
        .routes(routes!(fs::grep_in_thread))
        .routes(routes!(fs::move_file))
        .routes(routes!(fs::move_file_in_thread))
        .routes(routes!(fs::delete_file))
        .routes(routes!(fs::delete_file_in_thread))
        .routes(routes!(fs_transfer::file_url))
        .routes(routes!(fs_transfer::file_url_in_thread))
        .routes((
            transfer_schemas,
            transfer_paths,
            transfers.layer(DefaultBodyLimit::disable()),
        ))
}

/// The fallbacks and middleware every answer goes through, and the state.
///
/// The middleware is one stack, added with one `layer` call: each call boxes every route's
/// service and its response body once more, and a streamed body (an event stream) pays for
/// each box at every frame.
fn finish(routes: Router<AppState>, state: &AppState) -> Router {
    // Outermost first: the request id is set before anything logs, and the access log and
    // metrics see the answer a panic turned into.
    let middleware = ServiceBuilder::new()
        .layer(middleware::map_request(crate::request_id::drop_unusable))
        .layer(SetRequestIdLayer::x_request_id(crate::request_id::MakeId))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TraceLayer::new_for_http().make_span_with(crate::request_id::span))
        .layer(CatchPanicLayer::custom(panicked))
        .layer(middleware::from_fn(crate::metrics::track))
        .layer(middleware::map_request(crate::limits::idle_bodies(
            state.config.body_idle_timeout,
        )))
        .layer(middleware::from_fn(crate::limits::linger_on_refusal))
        .layer(middleware::from_fn(crate::memory_lease::hold_until_sent));
    routes
        .fallback(system::no_route)
        .method_not_allowed_fallback(system::wrong_method)
        .layer(middleware)
        .with_state(state.clone())
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::internal("a handler panicked").into_response()
}

#[cfg(test)]
mod tests {
    use super::openapi;

    /// The committed copy of the document, so that a change to the API is a visible diff.
    const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");

    #[test]
    fn the_document_matches_its_snapshot() {
        let current = serde_json::to_string_pretty(&openapi()).unwrap() + "\n";
        if std::env::var_os("FERRY_UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(SNAPSHOT, &current).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(SNAPSHOT).unwrap_or_default();
        assert!(
            committed == current,
            "the OpenAPI document changed; if that is intended, run \
             `FERRY_UPDATE_SNAPSHOTS=1 cargo test -p ferry-server snapshot` and commit docs/openapi.json"
        );
    }

    #[test]
    fn every_route_is_in_the_document_once_with_its_own_path_syntax() {
        let document = openapi();
        let paths: Vec<&String> = document.paths.paths.keys().collect();
        assert!(paths.iter().all(|p| !p.contains("{*")), "{paths:?}");
        for expected in [
            "/api/spaces/{space}/files/{path}",
            "/api/threads/{id}/sandbox/{path}",
            "/api/threads/{id}/uploads",
            "/mcp",
            "/api/openapi.json",
        ] {
            assert!(document.paths.paths.contains_key(expected), "{expected}");
        }
    }

    /// Every error response names the envelope's codes it answers with ([`refusal`]), and
    /// each of them answers with that response's status.
    ///
    /// [`refusal`]: crate::error_code::refusal
    #[test]
    fn every_error_response_names_codes_of_its_own_status() {
        use crate::error_code::{ErrorCode, HttpStatus as _};
        let document = serde_json::to_value(openapi()).unwrap();
        let mut checked = 0;
        for (route, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let Some(responses) = operation["responses"].as_object() else {
                    continue;
                };
                for (status, response) in responses {
                    // `/mcp`'s refusals below 401 are the MCP SDK's plain text, not the envelope.
                    let enveloped = route != "/mcp" || status == "401";
                    if !enveloped || !(status.starts_with('4') || status.starts_with('5')) {
                        continue;
                    }
                    let description = response["description"].as_str().unwrap_or_default();
                    let named = description.split(": ").next().unwrap_or_default();
                    for name in named.split(" or ") {
                        let code = ErrorCode::ALL.iter().find(|code| code.as_str() == name);
                        let code = code.unwrap_or_else(|| {
                            panic!("{method} {route} {status}: '{name}' is no error code")
                        });
                        assert_eq!(
                            code.status().as_str(),
                            status,
                            "{method} {route}: {name} is not answered with {status}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100, "only {checked} codes were documented");
    }
}
