//! The bytes a write receives, with the length their sender declared (docs/security.md,
//! limits): a declaration over the limit is refused before a byte is read, and a body that
//! does not end exactly at its declared length is refused as it arrives, so a lying length
//! (an aws-chunked `x-amz-decoded-content-length`, say) never stores more or less than it
//! said. Every write use case takes its body as an [`Incoming`], so this
//! holds for every door.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;

use crate::error::{Error, Result};

/// A body on its way in, and the length its sender declared, if any.
#[derive(Debug)]
pub struct Incoming<S> {
    stream: S,
    declared: Option<u64>,
}

impl<S> Incoming<S> {
    /// A body whose length was declared (`Content-Length`, or the decoded length of an
    /// aws-chunked body), or `None` when it was not (HTTP chunked transfer).
    pub fn new(stream: S, declared: Option<u64>) -> Incoming<S> {
        Incoming { stream, declared }
    }

    /// A body of a length nobody declared: the limit is still enforced while it streams.
    pub fn undeclared(stream: S) -> Incoming<S> {
        Incoming::new(stream, None)
    }

    /// The declared length.
    pub fn declared(&self) -> Option<u64> {
        self.declared
    }

    /// Refuses a declaration over `limit` at once; otherwise answers the stream, which fails
    /// when more or fewer bytes arrive than were declared.
    pub fn admit<E>(self, limit: u64) -> Result<Exact<S>>
    where
        S: Stream<Item = std::result::Result<Bytes, E>>,
    {
        if let Some(declared) = self.declared
            && declared > limit
        {
            return Err(Error::too_large(limit));
        }
        Ok(Exact {
            stream: Box::pin(self.stream),
            declared: self.declared,
            seen: 0,
        })
    }
}

/// A body held to its declared length; see [`Incoming::admit`].
#[derive(Debug)]
pub struct Exact<S> {
    // Boxed once per write, so that any stream (pinned or not) can be held to its length.
    stream: Pin<Box<S>>,
    declared: Option<u64>,
    seen: u64,
}

impl<S, E> Stream for Exact<S>
where
    S: Stream<Item = std::result::Result<Bytes, E>>,
    E: std::fmt::Display,
{
    type Item = std::result::Result<Bytes, String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.stream.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.to_string()))),
            Poll::Ready(Some(Ok(chunk))) => {
                this.seen += chunk.len() as u64;
                match this.declared {
                    Some(declared) if this.seen > declared => Poll::Ready(Some(Err(format!(
                        "the body is longer than its declared length of {declared} bytes"
                    )))),
                    _ => Poll::Ready(Some(Ok(chunk))),
                }
            }
            Poll::Ready(None) => match this.declared {
                Some(declared) if this.seen < declared => Poll::Ready(Some(Err(format!(
                    "the body ended after {} bytes, short of its declared length of {declared}",
                    this.seen
                )))),
                _ => Poll::Ready(None),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn chunks(parts: &[&'static [u8]]) -> impl Stream<Item = std::io::Result<Bytes>> {
        futures::stream::iter(
            parts
                .iter()
                .map(|p| Ok(Bytes::from_static(p)))
                .collect::<Vec<_>>(),
        )
    }

    async fn collect(
        incoming: Incoming<impl Stream<Item = std::io::Result<Bytes>>>,
    ) -> std::result::Result<Vec<u8>, String> {
        let mut stream = incoming.admit(100).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }

    #[tokio::test]
    async fn a_body_of_its_declared_length_passes_whole() {
        let body = Incoming::new(chunks(&[b"hello ", b"world"]), Some(11));
        assert_eq!(collect(body).await.unwrap(), b"hello world");
        let body = Incoming::undeclared(chunks(&[b"any", b"thing"]));
        assert_eq!(collect(body).await.unwrap(), b"anything");
    }

    #[tokio::test]
    async fn a_declaration_over_the_limit_is_refused_before_reading() {
        let refused = Incoming::new(chunks(&[]), Some(101)).admit(100);
        assert!(matches!(refused, Err(Error::TooLarge(_))));
    }

    #[tokio::test]
    async fn a_body_longer_or_shorter_than_declared_fails() {
        let long = collect(Incoming::new(chunks(&[b"12345", b"67890"]), Some(7))).await;
        assert!(
            long.unwrap_err()
                .contains("longer than its declared length of 7")
        );
        let short = collect(Incoming::new(chunks(&[b"123"]), Some(10))).await;
        assert!(short.unwrap_err().contains("ended after 3 bytes"));
    }
}
