//! Each request runs inside a lease on the server's memory budget ([`ferry_app::memory`]), and
//! an answer that holds a share keeps the lease until its body has been sent: its bytes are in
//! memory until then, however slowly the client reads.
//!
//! The lease rides in the request's extensions. A request the server sends to itself (a tool
//! call of `/mcp`, through the routes in process) carries its MCP request's lease there and
//! takes its shares on it, so they last until the MCP reply, which holds the same bytes again,
//! has been sent.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use ferry_app::memory::Lease;

pub async fn hold_until_sent(mut request: Request, next: Next) -> Response {
    let outer = request.extensions().get::<Lease>().cloned();
    let lease = outer.clone().unwrap_or_default();
    request.extensions_mut().insert(lease.clone());
    let response = lease.scope(next.run(request)).await;
    if outer.is_none() && is_event_stream(&response) {
        lease.streaming();
    }
    if lease.is_empty() {
        // Nothing held: the answer goes out as it is, with no body wrapped around it.
        return response;
    }
    response.map(|inner| {
        Body::new(Holding {
            inner,
            pending: Bytes::new(),
            _lease: lease,
        })
    })
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| ferry_core::content_type::essence(v) == "text/event-stream")
}

/// The most of an answer handed to the connection at once. The connection asks for more only
/// as it writes, so the answer's bytes, and with them the lease, stay here until they are
/// nearly all sent (an answer is often one frame of all its bytes, which the connection would
/// otherwise take whole and hold after the body, and its lease, are gone).
const SLICE: usize = 64 * 1024;

/// A response body that keeps its request's lease until it is dropped, handing its data on in
/// slices.
struct Holding {
    inner: Body,
    /// What is left of the frame being handed on.
    pending: Bytes,
    _lease: Lease,
}

impl http_body::Body for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        if self.pending.is_empty() {
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => self.pending = data,
                    Err(trailers) => return Poll::Ready(Some(Ok(trailers))),
                },
                other => return other,
            }
        }
        let at = self.pending.len().min(SLICE);
        Poll::Ready(Some(Ok(http_body::Frame::data(self.pending.split_to(at)))))
    }

    fn is_end_stream(&self) -> bool {
        self.pending.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let inner = self.inner.size_hint();
        let pending = self.pending.len() as u64;
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(inner.lower() + pending);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + pending);
        }
        hint
    }
}
