//! `/mcp`: the agent tools over streamable HTTP (docs/mcp.md).
//!
//! The tools live in `ferry-mcp` as a thin client of the HTTP API; here they get an [`Api`]
//! that sends each request through this server's own router, in process, with the bearer token
//! of the MCP request. So every rule is the route's own, checked once, and a tool call can do
//! exactly what its token could do over plain HTTP.

use axum::Router;
use axum::body::Body;
use axum::extract::FromRequestParts;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use ferry_mcp::{Api, ApiRequest, ApiStream, HttpOptions};
use futures::future::BoxFuture;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Service, ServiceExt};

use crate::auth::Principal;
use crate::error::ApiError;
use crate::state::AppState;

/// The `/mcp` endpoint: refuses a request without a valid bearer token with the 401 envelope,
/// then hands it to the MCP service.
#[derive(Clone)]
pub struct McpEndpoint {
    state: AppState,
    mcp: ferry_mcp::HttpService,
    /// The largest JSON-RPC message accepted, in bytes.
    max_body: usize,
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpEndpoint { .. }")
    }
}

/// The service mounted at `/mcp`; tool calls go to `api`, the server's router without `/mcp`.
pub fn endpoint(state: AppState, api: Router) -> McpEndpoint {
    let api = Arc::new(InProcess {
        router: api,
        memory: state.app.memory.clone(),
    });
    let options = HttpOptions::for_file_limit(state.config.app.limits.space_max_bytes);
    McpEndpoint {
        state,
        max_body: options.max_request_body_bytes,
        mcp: ferry_mcp::http_service(api, options),
    }
}

impl Service<Request<Body>> for McpEndpoint {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let state = self.state.clone();
        let mcp = self.mcp.clone();
        let max_body = self.max_body;
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            if let Err(refused) = Principal::from_request_parts(&mut parts, &state).await {
                return Ok(refused.into_response());
            }
            let too_large = || ApiError::too_large(max_body as u64).into_response();
            let declared = crate::write_headers::declared_length(&parts.headers);
            if declared.is_some_and(|len| len > max_body as u64) {
                return Ok(too_large());
            }
            // The MCP service reads the whole message, then parses it (a `write_file` or
            // `write_space_file` call carries a file): its share of the memory budget is taken
            // first, for its declared length (an undeclared one counts as the largest), and
            // kept until the reply has been sent. A small message takes none: held while its
            // request waits for its answer's share, a share of its own would keep that one from
            // ever being whole (each of thirty reads holding a kilobyte, none could take the
            // whole budget a large answer asks for), and its bytes are no more than any
            // request's buffers.
            let message = declared.unwrap_or(max_body as u64).min(max_body as u64);
            if message > MCP_MESSAGE_FREE_BYTES
                && let Err(busy) = state
                    .app
                    .memory
                    .hold(message.saturating_mul(MCP_MESSAGE_BYTES_PER_BODY_BYTE))
                    .await
                    .map(ferry_app::memory::Held::until_answered)
            {
                return Ok(ApiError::from(busy).into_response());
            }
            accept_anything_means_both(&mut parts.headers);
            let sent_json = parts
                .headers
                .get(axum::http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| ferry_core::content_type::essence(v) == "application/json");
            let answer = mcp.oneshot(Request::from_parts(parts, body)).await;
            Ok(match answer {
                // The SDK's own refusal of a body that grew past the limit is plain text; the
                // API answers in its envelope everywhere, /mcp included.
                Ok(response) if response.status() == StatusCode::PAYLOAD_TOO_LARGE => too_large(),
                // The SDK says 415 also for JSON that is no JSON-RPC message it knows; the type
                // was right, the message was not: that is a malformed request.
                Ok(response)
                    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE && sent_json =>
                {
                    ApiError::invalid_request(
                        "the body is JSON but not a JSON-RPC message of MCP: send a request, \
                         notification or response with 'jsonrpc': '2.0'",
                    )
                    .into_response()
                }
                Ok(response) => response.into_response(),
                Err(never) => match never {},
            })
        })
    }
}

/// What MCP's streamable HTTP answers with: JSON, or an event stream.
const MCP_ACCEPT: &str = "application/json, text/event-stream";

/// A request whose `Accept` takes both of MCP's types — none at all (RFC 9110 §12.5.1: any
/// type), `*/*`, `application/*, text/*`, with any `q` above 0 — is given the `Accept` the
/// MCP SDK asks clients to send, rather than a 406 for not naming them. Any other `Accept`
/// is left to the SDK, which answers 406.
fn accept_anything_means_both(headers: &mut axum::http::HeaderMap) {
    let takes_both = match headers.get(axum::http::header::ACCEPT) {
        None => true,
        Some(value) => value.to_str().is_ok_and(|accept| {
            takes(accept, "application", "json") && takes(accept, "text", "event-stream")
        }),
    };
    if takes_both {
        headers.insert(
            axum::http::header::ACCEPT,
            axum::http::HeaderValue::from_static(MCP_ACCEPT),
        );
    }
}

/// Whether an `Accept` value has a media range with a `q` above 0 that covers `kind/sub`.
fn takes(accept: &str, kind: &str, sub: &str) -> bool {
    accept.split(',').any(|range| {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim();
        let weighted_out = parts.any(|p| {
            p.trim()
                .strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        let Some((k, s)) = media.split_once('/') else {
            return false;
        };
        let covers = (k == "*" && s == "*")
            || (k.eq_ignore_ascii_case(kind) && (s == "*" || s.eq_ignore_ascii_case(sub)));
        covers && !weighted_out
    })
}

/// What an MCP reply holds at its peak, per byte of the answer it carries, besides what the
/// answer itself held: the answer read whole, the tool's result made of it (its text, and its
/// structured content; base64 of a file's bytes), and the JSON-RPC reply serialized from that,
/// whose buffer grows by doubling. Measured: one `read_space_file` of a 32 MiB file grew the
/// server by 5.4 times the file (four at once by 3.6 times each, their peaks not all at once).
const MCP_REPLY_BYTES_PER_ANSWER_BYTE: u64 = 6;

/// What an MCP request holds at its peak, per byte of its body: the body, its parsed JSON, and
/// the tool's arguments taken from it (a file's content among them).
const MCP_MESSAGE_BYTES_PER_BODY_BYTE: u64 = 3;

/// The largest MCP message that takes no share of the memory budget (a tool call without a
/// file in it).
const MCP_MESSAGE_FREE_BYTES: u64 = 64 << 10;

/// The HTTP API of this very server, reached without a socket.
#[derive(Debug)]
struct InProcess {
    /// Every route of the API but `/mcp` itself, with all its middleware.
    router: Router,
    /// The server's memory budget, which the MCP replies made of whole answers take from.
    memory: ferry_app::memory::MemoryBudget,
}

#[ferry_mcp::async_trait]
impl Api for InProcess {
    async fn call_streaming(&self, request: ApiRequest) -> anyhow::Result<ApiStream> {
        let router = self.router.clone();
        let mut outgoing = Request::builder()
            .method(request.method)
            .uri(request.path_and_query)
            .body(Body::from(request.body))?;
        *outgoing.headers_mut() = request.headers;
        *outgoing.extensions_mut() = request.extensions;
        let lease = outgoing
            .extensions()
            .get::<ferry_app::memory::Lease>()
            .cloned();
        // A route that answers with a file read whole takes the reply's share with its own.
        if let Some(lease) = &lease {
            lease.expect_reply(MCP_REPLY_BYTES_PER_ANSWER_BYTE);
        }
        let mut response = match router.oneshot(outgoing).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        // An answer of known length is carried whole into the MCP reply: the reply's share of
        // the budget is taken on the MCP request's lease (less what the route reserved for it
        // with the answer's own), kept until the reply has been sent. An answer refused that
        // share becomes the refusal the routes give (503, Retry-After).
        if let (Some(lease), Some(length)) = (lease, known_length(&response))
            && length > 0
        {
            let share = length
                .saturating_mul(MCP_REPLY_BYTES_PER_ANSWER_BYTE)
                .saturating_sub(lease.take_reserved_reply());
            if share > 0
                && let Err(busy) = lease.hold_until_answered(&self.memory, share).await
            {
                response = ApiError::from(busy).into_response();
            }
        }
        let (parts, body) = response.into_parts();
        let body = futures::StreamExt::map(body.into_data_stream(), |chunk| {
            chunk.map_err(anyhow::Error::from)
        });
        Ok(ApiStream {
            status: parts.status,
            headers: parts.headers,
            body: Box::pin(body),
        })
    }
}

/// The length of an answer's body: exact for one made in memory, declared for a file's bytes
/// streamed from the store.
fn known_length(response: &Response) -> Option<u64> {
    http_body::Body::size_hint(response.body())
        .exact()
        .or_else(|| crate::write_headers::declared_length(response.headers()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accept_that_takes_both_of_mcps_types_is_given_them() {
        for both in [
            "*/*",
            "*/*;q=0.9",
            "text/html, */*",
            "application/*, text/*",
            MCP_ACCEPT,
        ] {
            assert!(
                takes(both, "application", "json") && takes(both, "text", "event-stream"),
                "{both}"
            );
        }
        for not_both in ["application/json", "text/html", "*/*;q=0", "application/*"] {
            assert!(
                !(takes(not_both, "application", "json")
                    && takes(not_both, "text", "event-stream")),
                "{not_both}"
            );
        }
    }
}
