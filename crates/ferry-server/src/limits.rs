//! Limits on what one client may hold: a request body that stops arriving, and the event
//! streams one principal keeps open.

use axum::body::Body;
use axum::extract::Request;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

use crate::error::ApiError;

/// A request body that fails when no bytes arrive for `idle`: a client that starts a large
/// upload and then stalls does not hold a connection, a spool file and a handler forever. The
/// clock starts when the handler first asks for the body, and restarts with every frame.
#[derive(Debug)]
pub struct IdleBody {
    inner: Body,
    idle: Duration,
    timer: Option<Pin<Box<Sleep>>>,
}

/// The error a stalled body ends with; handlers report it as a body that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("no bytes of the request body arrived for {0} seconds")]
pub struct BodyStalled(u64);

impl IdleBody {
    pub fn new(inner: Body, idle: Duration) -> Self {
        IdleBody {
            inner,
            idle,
            timer: None,
        }
    }
}

impl http_body::Body for IdleBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let idle = this.idle;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                timer.as_mut().reset(Instant::now() + idle);
                Poll::Ready(frame)
            }
            Poll::Pending => match timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    Poll::Ready(Some(Err(axum::Error::new(BodyStalled(idle.as_secs())))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Middleware giving every request body the idle timeout.
pub fn idle_bodies(idle: Duration) -> impl Fn(Request) -> std::future::Ready<Request> + Clone {
    move |request: Request| {
        std::future::ready(request.map(|body| Body::new(IdleBody::new(body, idle))))
    }
}

/// How much of a refused request's unread body is read and thrown away so that the client
/// sees the answer; a larger rest closes the connection instead.
const LINGER_BYTES: u64 = 64 * 1024 * 1024;
/// How long that reading may take.
const LINGER_TIME: Duration = Duration::from_secs(10);

/// Middleware: a request refused before its body was read (too large by its `Content-Length`,
/// unauthenticated, a bad path) has the rest of its body read and discarded, up to a bound,
/// before the answer goes out. Otherwise the server would close the connection on a client
/// still sending, and the client would see a broken pipe instead of the error envelope.
///
/// A rest declared larger than the bound is not read at all: it would be cut off all the
/// same, so the answer goes out at once and the connection closes. (A client waiting on
/// `Expect: 100-continue` is still asked for its body here: some clients, answered without a
/// `100 Continue`, keep the connection without sending the body, and the server would then
/// read their next request as the rest of this one.)
pub async fn linger_on_refusal(
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let leftover: Arc<Mutex<Option<Body>>> = Arc::default();
    let request = request.map(|body| {
        Body::new(Returnable {
            inner: Some(body),
            leftover: leftover.clone(),
        })
    });
    let response = next.run(request).await;
    if response.status().is_success() {
        return response;
    }
    let rest = leftover.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(rest) = rest
        && http_body::Body::size_hint(&rest).lower() <= LINGER_BYTES
    {
        let _ = tokio::time::timeout(LINGER_TIME, discard(rest)).await;
    }
    response
}

/// Reads a body to its end, up to [`LINGER_BYTES`].
async fn discard(mut body: Body) {
    use http_body_util::BodyExt;
    let mut read = 0u64;
    while let Some(Ok(frame)) = body.frame().await {
        if let Some(data) = frame.data_ref() {
            read += data.len() as u64;
            if read > LINGER_BYTES {
                return;
            }
        }
    }
}

/// A request body that, dropped before its end, hands what is left to [`linger_on_refusal`].
struct Returnable {
    inner: Option<Body>,
    leftover: Arc<Mutex<Option<Body>>>,
}

impl http_body::Body for Returnable {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let Some(inner) = &mut this.inner else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        if let Poll::Ready(None | Some(Err(_))) = &polled {
            // Ended, or broken: nothing to hand back.
            this.inner = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(http_body::Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map(http_body::Body::size_hint)
            .unwrap_or_else(|| SizeHint::with_exact(0))
    }
}

impl Drop for Returnable {
    fn drop(&mut self) {
        if let Some(rest) = self.inner.take()
            && !http_body::Body::is_end_stream(&rest)
        {
            *self.leftover.lock().unwrap_or_else(|p| p.into_inner()) = Some(rest);
        }
    }
}

/// The event streams open on this node, counted by the principal that opened them.
#[derive(Debug)]
pub struct StreamSlots {
    per_principal: usize,
    open: Mutex<HashMap<String, usize>>,
}

/// One open event stream; dropping it (the stream ends or the client leaves) frees its slot.
#[derive(Debug)]
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    key: String,
}

impl StreamSlots {
    pub fn new(per_principal: usize) -> Arc<StreamSlots> {
        Arc::new(StreamSlots {
            per_principal: per_principal.max(1),
            open: Mutex::default(),
        })
    }

    /// A slot for one more stream of the caller `key` (`Principal::identity_key`), or
    /// `TOO_MANY_REQUESTS` when it has its share open already.
    pub fn take(self: &Arc<Self>, key: String) -> Result<StreamSlot, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(key.clone()).or_default();
        if *count >= self.per_principal {
            return Err(ApiError::new(
                crate::error::ErrorCode::TooManyRequests,
                format!(
                    "this caller already has {} event streams open, the most one may; close one \
                     (each browser tab holds one) or poll with format=json",
                    self.per_principal
                ),
            ));
        }
        *count += 1;
        metrics::gauge!("ferry_event_streams_open").increment(1.0);
        Ok(StreamSlot {
            slots: self.clone(),
            key,
        })
    }

    /// How many streams are open on this node.
    pub fn total(&self) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.values().sum()
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
        metrics::gauge!("ferry_event_streams_open").decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_gets_its_share_and_no_more() {
        let slots = StreamSlots::new(2);
        let alice = || "user:alice".to_owned();
        let first = slots.take(alice()).unwrap();
        let _second = slots.take(alice()).unwrap();
        let refused = slots.take(alice()).unwrap_err();
        assert_eq!(refused.code, crate::error::ErrorCode::TooManyRequests);
        // Another principal is not affected.
        let _bobs = slots.take("user:bob".to_owned()).unwrap();
        drop(first);
        let _third = slots.take(alice()).unwrap();
        assert_eq!(slots.total(), 3);
    }
}
