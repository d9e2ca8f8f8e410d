//! Accepting connections: how long a client may take, how many it may hold, and how the server
//! stops.
//!
//! axum's own `serve` has no header timeout and no bound on connections, so a few thousand
//! clients that send half a request (slowloris) would hold sockets and memory for free. Here
//! every connection:
//! - holds one of `max_connections` permits; past the bound, new connections are closed at
//!   once instead of exhausting file descriptors, so the ones already open keep working;
//! - must say which protocol it speaks, and then deliver each request's headers, within the
//!   header timeout (an idle keep-alive connection is closed after the same time);
//! - has request bodies that stall longer than the body idle timeout cut off (see
//!   [`crate::limits::IdleBody`]).
//!
//! On shutdown the listener stops accepting, event streams are told to end (clients reconnect
//! elsewhere with `Last-Event-ID`), requests in flight finish, and whatever is still open when
//! the drain timeout passes is dropped.

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// The limits of the connection layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client has to send a request's headers (and, on a fresh connection, its first
    /// bytes); an idle keep-alive connection is closed after the same time.
    pub header_timeout: Duration,
    /// Connections open at once; further ones are closed as soon as they are accepted.
    pub max_connections: usize,
    /// How long a shutdown waits for requests in flight.
    pub drain_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            max_connections: 8192,
            drain_timeout: Duration::from_secs(10),
        }
    }
}

/// The first bytes of every HTTP/2 connection with prior knowledge (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Serves `app` on `listener` until `shutdown` completes; then calls `on_shutdown` (which ends
/// the event streams) and drains for at most `limits.drain_timeout`.
pub async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send,
    on_shutdown: impl FnOnce(),
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let service = TowerToHyperService::new(app);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of descriptors, or a connection reset before it was accepted: the
                    // listener itself is fine. Pause a moment so a persistent error cannot spin.
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            crate::metrics::connection_refused();
            drop(stream);
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            // A streamed body goes out as a write after the headers' write; with Nagle's
            // algorithm on, that second small segment waits for the client's delayed ACK.
            tracing::debug!(error = %e, "cannot set TCP_NODELAY on a connection");
        }
        let service = service.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let _permit = permit;
            let Some(http2) = speaks_http2(&stream, limits.header_timeout).await else {
                return;
            };
            let io = TokioIo::new(stream);
            let result = if http2 {
                let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                builder
                    .timer(TokioTimer::new())
                    .keep_alive_interval(Some(limits.header_timeout))
                    .keep_alive_timeout(limits.header_timeout);
                watcher.watch(builder.serve_connection(io, service)).await
            } else {
                let mut builder = hyper::server::conn::http1::Builder::new();
                // Each write is one buffer rather than a vector of pieces: a chunk of an event
                // stream is its size line, the frame and a CRLF, three pieces for a `writev` to
                // one of a thousand sockets per event; hyper copies them together instead
                // (bench/NOTES.md, part 5).
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits.header_timeout)
                    .writev(false);
                watcher.watch(builder.serve_connection(io, service)).await
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    on_shutdown();
    if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("the drain timeout passed with requests still in flight; closing them");
    }
    Ok(())
}

/// Whether the client opens with the HTTP/2 preface; `None` when it sends too little to tell
/// within `timeout` (or closes). Only peeks: the bytes stay for the protocol's parser.
async fn speaks_http2(stream: &TcpStream, timeout: Duration) -> Option<bool> {
    let decide = async {
        let mut buf = [0u8; H2_PREFACE.len()];
        loop {
            let n = stream.peek(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            if buf[..n] != H2_PREFACE[..n] {
                return Some(false);
            }
            if n == H2_PREFACE.len() {
                return Some(true);
            }
            // A prefix of the preface so far: wait for more (peek returns at once while the
            // bytes it saw are unread).
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(timeout, decide).await.ok().flatten()
}
