//! The `ferry` command: `serve`, `token`, and the hidden helpers it re-invokes itself as.

mod secret;
mod settings;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use ferry_server::{AppState, Auth};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use secret::load_secret;
use settings::{DEFAULT_DATA, ServeArgs, parse_ttl};

#[derive(Debug, Parser)]
#[command(
    name = "ferry",
    version,
    about = "A self-hostable file exchange between people and their AI agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server (SQLite and a local directory unless told otherwise).
    #[command(
        after_help = "Logs go to standard error, one access line per request (target ferry::access). \
                      FERRY_LOG takes a tracing filter [default: info,rmcp=warn,rmcp::service=off,s3s=off], e.g. \
                      FERRY_LOG=debug, FERRY_LOG=ferry_server=debug or FERRY_LOG=info,ferry::access=off. \
                      FERRY_LOG_FORMAT=json writes JSON lines [default: text]."
    )]
    Serve(Box<ServeArgs>),
    /// Print a signed bearer token for a user, an agent or an orchestrator.
    Token(TokenArgs),
    /// Serve the agent tools over MCP on stdin/stdout, acting on a ferry server with a token.
    Mcp(ferry_mcp::McpArgs),
}

#[derive(Debug, Args)]
struct TokenArgs {
    /// The user the token speaks for (for --agent: the thread's owner).
    #[arg(long)]
    user: Option<String>,
    /// Make an agent token bound to --thread.
    #[arg(long, requires = "thread", conflicts_with = "service")]
    agent: bool,
    /// The thread an agent token may act in.
    #[arg(long)]
    thread: Option<String>,
    /// The agent's display id in events [default: agent].
    #[arg(long, requires = "agent")]
    agent_id: Option<String>,
    /// Make a service_role token (a trusted orchestrator); --user is then optional.
    #[arg(long)]
    service: bool,
    /// How long the token is valid: 45s, 30m, 1h, 7d.
    #[arg(long, default_value = "1h", value_parser = parse_ttl)]
    ttl: Duration,
    /// HS256 secret [default: the one the server generated in --data].
    #[arg(long, env = "FERRY_JWT_SECRET", hide_env_values = true)]
    jwt_secret: Option<String>,
    /// Data directory of the server whose generated secret signs the token
    /// [default: ./ferry-data]; the secret must already be there.
    #[arg(long, env = "FERRY_DATA")]
    data: Option<PathBuf>,
}

fn main() -> ExitCode {
    // The worker must start before anything else: before a runtime, a thread or a read of the
    // environment (it runs with an empty one and limits itself first thing).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == ferry_extract::WORKER_ARG)
    {
        return ferry_extract::worker_main();
    }
    // Likewise the helper that starts each agent command (it reads its orders on stdin).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == ferry_exec::HELPER_ARG)
    {
        return ferry_exec::helper::main();
    }
    // And the bridge that carries a command's connections to the proxy, inside its namespace.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == ferry_exec::BRIDGE_ARG)
    {
        return ferry_exec::bridge::main();
    }
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferry: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Token(args) => token(args),
        Command::Mcp(args) => mcp(args),
    }
}

/// What `ferry serve` logs without FERRY_LOG: ferry's own news at info; the MCP SDK's
/// per-request lines (each `/mcp` session's capabilities, three lines a request) only at debug;
/// nothing of the SDK's service loop, whose every warning and error is about one client's
/// connection (a client that closed its `subscriptions/listen` stream is "failed to send
/// pending response during drain", an error, each time) while the access line already records
/// each request; and nothing of the S3 protocol layer, which logs every refused request (a
/// wrong signature, an unknown key: the client's mistakes, answered in S3's XML) as an error,
/// two lines each.
const DEFAULT_SERVE_LOG: &str = "info,rmcp=warn,rmcp::service=off,s3s=off";

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("FERRY_LOG")
        .unwrap_or_else(|_| DEFAULT_SERVE_LOG.into());
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match std::env::var("FERRY_LOG_FORMAT").as_deref() {
        // One JSON object per line, the request's span (its id, method and path) included.
        Ok("json") => logs
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
        Ok("text") | Err(_) => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        Ok(other) => anyhow::bail!("FERRY_LOG_FORMAT must be 'text' or 'json', not '{other}'"),
    }
    let resolved = args.resolve()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let config = resolved.config;
        let data = config.app.data_dir.clone();
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .with_context(|| format!("cannot listen on {}", config.addr))?;
        let addr = listener.local_addr()?;
        // Where clients reach this server: the public URL when one is set (behind a proxy).
        let base = config.public_url.as_deref().map_or_else(
            || format!("http://{addr}"),
            |u| u.trim_end_matches('/').to_owned(),
        );
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            %addr,
            url = %base,
            data = %config.app.data_dir.display(),
            // The scheme only: a database URL may carry a password.
            database = config.app.database_url.split("://").next().unwrap_or("?"),
            blobs = config.app.blob_url.as_deref().unwrap_or("local files"),
            sandboxes = %config
                .app
                .sandbox_dir
                .as_ref()
                .map_or_else(|| "default".to_owned(), |d| d.display().to_string()),
            "ferry is listening"
        );
        let state = AppState::open(config).await?;
        match state.app.command_availability() {
            (availability, Some(how)) if availability.is_on() => {
                tracing::info!(confinement = %how, "agents' commands (execute) are on")
            }
            (availability, _) => tracing::info!(
                why = availability.why_not().unwrap_or_default(),
                "agents' commands (execute) are off"
            ),
        }
        if resolved.generated_secret {
            sign_in_link(&state, &base, &data, resolved.created_secret);
        }
        ferry_server::serve(state, listener, shutdown_signal()).await?;
        tracing::info!("ferry stopped");
        anyhow::Ok(())
    })
}

/// Offers the person who started the server a way in. The link (a 30-day token for the user
/// `local`) goes to standard output, never the log, and only where a person reads it: a
/// terminal, on every start; anywhere else (a pipe, a service manager's journal) only on the
/// start that created the secret, so that restarts do not keep writing fresh tokens into a
/// journal. Then the server says how to get a link instead.
fn sign_in_link(state: &AppState, base: &str, data: &Path, created_secret: bool) {
    use std::io::IsTerminal as _;
    #[allow(clippy::print_stdout)]
    {
        println!("ferry is running at {base}/");
        if created_secret || std::io::stdout().is_terminal() {
            let token = state
                .auth
                .mint_user("local", Duration::from_secs(30 * 86_400));
            println!(
                "Sign in as the local user (valid 30 days): {base}/#token={}",
                token.token
            );
        } else {
            println!(
                "Sign in as the local user: open {base}/#token=TOKEN with the TOKEN that \
                 `ferry token --user local --data {}` prints",
                data.display()
            );
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler can be installed");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term.recv() => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}

/// `ferry mcp`: stdout is the MCP channel, so logs go to stderr only, quiet unless FERRY_LOG
/// asks for more.
fn mcp(args: ferry_mcp::McpArgs) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FERRY_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(ferry_mcp::run_stdio(args))
}

fn token(args: TokenArgs) -> anyhow::Result<()> {
    let secret = match args.jwt_secret {
        Some(secret) if !secret.is_empty() => secret.into_bytes(),
        // Only the server makes a secret: one invented here would sign tokens it refuses.
        _ => {
            let data = args.data.unwrap_or_else(|| PathBuf::from(DEFAULT_DATA));
            load_secret(&data)?.with_context(|| {
                format!(
                    "there is no secret in {}: start `ferry serve --data {}` once to create it, \
                     pass the --data folder your server uses, or give the server's secret with \
                     --jwt-secret / FERRY_JWT_SECRET",
                    secret::path_in(&data).display(),
                    data.display()
                )
            })?
        }
    };
    let auth = Auth::new(&secret);
    let minted = if args.service {
        auth.mint_service(args.user.as_deref(), args.ttl)
    } else {
        let user = args
            .user
            .context("--user is required: the user the token speaks for")?;
        if args.agent {
            let thread = args.thread.context("--agent needs --thread")?;
            auth.mint_agent(&user, &thread, args.agent_id.as_deref(), args.ttl)
        } else {
            auth.mint_user(&user, args.ttl)
        }
    };
    #[allow(clippy::print_stdout)]
    {
        println!("{}", minted.token);
    }
    Ok(())
}
