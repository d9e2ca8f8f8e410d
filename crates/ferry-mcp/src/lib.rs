//! ferry's agent tools over the Model Context Protocol (docs/mcp.md).
//!
//! Seventeen tools — the agent's file tools (`ls`, `read_file`, `write_file`, `edit_file`,
//! `glob`, `grep`, `move_file`, `delete_file`; see [`file_tools`]) and `send_file`,
//! `publish_file_to_user`, `list_space_files`, `read_space_file`,
//! `write_space_file`, `delete_space_file`, `say`, `list_uploads` and `read_upload` — offered
//! two ways:
//!
//! - `ferry mcp` ([`run_stdio`]): an MCP server on stdin/stdout for one agent, talking to a
//!   ferry server at `--url` with `--token` ([`HttpApi`]).
//! - `/mcp` on `ferry serve` ([`http_service`]): streamable HTTP, each call acting with the
//!   bearer token of the HTTP request it came in; the server plugs in an [`Api`] that calls its
//!   own router in process.
//!
//! Either way the tools are a thin client of the HTTP API: each call is one request, and the
//! server's answer comes back unchanged — as text, as structured content, and for an error
//! status as a result with `isError: true` whose text is the error envelope.

pub mod api;
mod caller;
mod client;
pub mod execute_tool;
pub mod file_card;
pub mod file_tools;
mod handler;
mod outcome;
pub mod resources;
mod shared_feeds;
mod space_tools;
pub mod stdio;
mod subscriptions;
mod thread_tools;
pub mod tools;
mod watch;

pub use api::{Api, ApiRequest, ApiResponse, ApiStream, HttpApi};
/// For implementing [`Api`] without depending on `async-trait` directly.
pub use async_trait::async_trait;
pub use handler::FerryMcp;
pub use tools::INSTRUCTIONS;

use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// `ferry mcp`: where the server is and who the agent is.
#[derive(Debug, Clone, clap::Args)]
pub struct McpArgs {
    /// The ferry server's base URL, e.g. http://127.0.0.1:8080.
    #[arg(long, env = "FERRY_URL")]
    pub url: String,
    /// Bearer token the tools act with: an agent token names its thread (ferry token --agent
    /// --thread ID --user OWNER). Prefer FERRY_TOKEN: a flag shows in the process list.
    #[arg(long, env = "FERRY_TOKEN", hide_env_values = true)]
    pub token: String,
    /// The thread for a token that names none (a service_role token).
    #[arg(long, env = "FERRY_THREAD")]
    pub thread: Option<String>,
    /// The largest JSON-RPC message read from stdin, in bytes; a larger request is answered
    /// with REQUEST_TOO_LARGE (the default leaves room for a 5 MiB file as base64)
    #[arg(long, env = "FERRY_MCP_MAX_REQUEST_BYTES", default_value_t = DEFAULT_MAX_REQUEST_BYTES)]
    pub max_request_bytes: usize,
}

/// Room for a space file of the default limit (5 MiB), base64-encoded, plus the message: what
/// `/mcp` accepts on a server with default settings.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 11 * 1024 * 1024;

/// Serves the tools on stdin/stdout until the client closes them. Stdout carries the protocol
/// only: anything else must go to stderr.
pub async fn run_stdio(args: McpArgs) -> anyhow::Result<()> {
    let api = HttpApi::new(&args.url)?;
    let base_url = api.base_url().to_owned();
    let handler = FerryMcp::with_token(Arc::new(api), &base_url, &args.token, args.thread);
    let transport = stdio::transport(
        tokio::io::BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
        args.max_request_bytes,
    );
    let running = rmcp::serve_server(handler, transport)
        .await
        .map_err(|e| anyhow::anyhow!("the MCP client did not complete its handshake: {e}"))?;
    running.waiting().await?;
    Ok(())
}

/// How `/mcp` is served.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The largest JSON-RPC message accepted. A `write_space_file` carries the file in JSON
    /// (base64 for binary types, a third larger), so this must exceed the space file limit.
    pub max_request_body_bytes: usize,
}

impl HttpOptions {
    /// Room for a file of `file_limit` bytes, base64-encoded or JSON-escaped, plus the message.
    pub fn for_file_limit(file_limit: u64) -> HttpOptions {
        let file_limit = usize::try_from(file_limit).unwrap_or(usize::MAX / 4);
        HttpOptions {
            max_request_body_bytes: file_limit.saturating_mul(2).saturating_add(1 << 20),
        }
    }
}

/// The streamable HTTP MCP service, with every tool call sent to `api`.
pub type HttpService = StreamableHttpService<FerryMcp, NeverSessionManager>;

/// The tools over streamable HTTP, stateless: every POST is answered on its own (no
/// `Mcp-Session-Id`), so any node behind a load balancer can answer any request, and each
/// call acts with the `Authorization` header of the request it came in. The caller must
/// authenticate requests before they reach this service.
///
/// A `subscriptions/listen` request is the one answered as an event stream, open until the
/// client closes it: a comment line every 15 seconds keeps proxies from closing it while no
/// resource changes.
///
/// Host checks are off: rmcp's default admits only loopback names, to protect servers that
/// trust whoever can reach them from DNS rebinding; ferry trusts only bearer tokens, which a
/// rebinding page cannot send.
pub fn http_service(api: Arc<dyn Api>, options: HttpOptions) -> HttpService {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(Some(std::time::Duration::from_secs(15)))
        .with_max_request_body_bytes(options.max_request_body_bytes)
        .disable_allowed_hosts();
    let listens = Arc::new(subscriptions::ListenSlots::default());
    let feeds = Arc::new(shared_feeds::SharedFeeds::default());
    StreamableHttpService::new(
        move || {
            Ok(FerryMcp::per_request(
                api.clone(),
                Arc::clone(&listens),
                Arc::clone(&feeds),
            ))
        },
        Arc::new(NeverSessionManager::default()),
        config,
    )
}
