//! ferry's HTTP server: the only crate that knows HTTP.
//!
//! [`router::router`] builds the axum router over an [`state::AppState`]; [`serve`] runs it
//! until a shutdown signal.

pub mod auth;
pub mod config;
pub mod connectors;
pub mod error;
pub mod error_code;
pub mod extract;
pub mod file_views;
pub mod jwks;
pub mod limits;
pub mod listen;
pub mod mcp;
pub mod memory_lease;
pub mod metrics;
pub mod openapi;
pub mod outbound;
pub mod request_id;
pub mod router;
pub mod routes;
pub mod s3;
pub mod serve;
pub mod signing;
pub mod state;
pub mod web;
pub mod write_body;
pub mod write_headers;

pub use auth::{Auth, Principal};
pub use config::{Config, IdentityProvider, KeySource};
pub use state::AppState;

use std::future::Future;
use tokio::net::TcpListener;

/// Serves the API on `listener` until `shutdown` completes, then ends the event streams,
/// finishes the requests in flight (for at most the drain timeout) and closes the stores.
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    state.set_listen_addr(listener.local_addr()?);
    let worker = tokio::spawn(connectors::run_delivery_worker(state.clone()));
    let relay = tokio::spawn(relay_events_from_other_nodes(state.clone()));
    let sweeper = tokio::spawn(sweep_periodically(state.clone()));
    let keep_alive = tokio::spawn({
        let app = state.app.clone();
        async move { app.events.keep_streams_alive().await }
    });
    let app = router::router(state.clone());
    let stopping = state.clone();
    listen::serve_connections(
        listener,
        app,
        state.config.connections,
        shutdown,
        move || stopping.begin_shutdown(),
    )
    .await?;
    worker.abort();
    relay.abort();
    sweeper.abort();
    keep_alive.abort();
    ferry_app::upkeep::close(&state.app).await;
    Ok(())
}

/// With several nodes on one Postgres, events stored through another node reach this node's
/// subscribers: each notification names a thread and an event id, and the event is read from
/// the database only when someone here listens to that thread. A dropped connection to the
/// database is re-established; subscribers then catch up from the database on the next event
/// they see, because a gap makes them re-read what they missed.
pub async fn relay_events_from_other_nodes(state: AppState) {
    loop {
        match ferry_app::upkeep::relay_other_nodes(&state.app, &state.config.app.database_url).await
        {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, "event notifications from other nodes broke off; listening again");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
    }
}

/// Runs the sweep of unreferenced blobs and abandoned spools now and then, on every node (a
/// removal is idempotent, so nodes need not coordinate).
pub async fn sweep_periodically(state: AppState) {
    let every = (state.config.sweep_grace / 4).clamp(
        std::time::Duration::from_secs(60),
        std::time::Duration::from_secs(3600),
    );
    loop {
        tokio::time::sleep(every).await;
        ferry_app::upkeep::sweep(&state.app, state.config.sweep_grace).await;
    }
}
