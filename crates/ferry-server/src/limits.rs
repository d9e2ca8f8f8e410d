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

use crate::auth::Principal;
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
                Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(BodyStalled(
                    idle.as_secs(),
                ))))),
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

    /// A slot for one more stream of `principal`, or `TOO_MANY_REQUESTS` when it has its
    /// share open already.
    pub fn take(self: &Arc<Self>, principal: &Principal) -> Result<StreamSlot, ApiError> {
        let key = match principal {
            Principal::User { sub } => format!("user:{sub}"),
            Principal::Agent { sub, thread, .. } => format!("agent:{sub}:{thread}"),
            Principal::Service { sub } => format!("service:{}", sub.as_deref().unwrap_or("")),
        };
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(key.clone()).or_default();
        if *count >= self.per_principal {
            return Err(ApiError::new(
                ferry_core::ErrorCode::TooManyRequests,
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
        let alice = Principal::User { sub: "alice".into() };
        let bob = Principal::User { sub: "bob".into() };
        let first = slots.take(&alice).unwrap();
        let _second = slots.take(&alice).unwrap();
        let refused = slots.take(&alice).unwrap_err();
        assert_eq!(refused.code, ferry_core::ErrorCode::TooManyRequests);
        // Another principal is not affected.
        let _bobs = slots.take(&bob).unwrap();
        drop(first);
        let _third = slots.take(&alice).unwrap();
        assert_eq!(slots.total(), 3);
    }
}
