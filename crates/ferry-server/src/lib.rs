//! ferry's HTTP server: the only crate that knows HTTP.
//!
//! [`router::router`] builds the axum router over an [`state::AppState`]; [`serve`] runs it
//! until a shutdown signal.

pub mod access;
pub mod auth;
pub mod config;
pub mod connectors;
pub mod error;
pub mod events;
pub mod extract;
pub mod mcp;
pub mod metrics;
pub mod previews;
pub mod router;
pub mod routes;
pub mod serve;
pub mod signing;
pub mod state;
pub mod web;

pub use auth::{Auth, Principal};
pub use config::Config;
pub use state::AppState;

use std::future::Future;
use tokio::net::TcpListener;

/// Serves the API on `listener` until `shutdown` completes, then finishes the requests in
/// flight and closes the stores.
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    metrics::handle();
    state.set_listen_addr(listener.local_addr()?);
    let worker = tokio::spawn(connectors::run_delivery_worker(state.clone()));
    let app = router::router(state.clone());
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    worker.abort();
    state.db.close().await;
    Ok(())
}
