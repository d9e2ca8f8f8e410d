//! Integrity checks of a written body (docs/s3.md, checksums): `Content-MD5` and one
//! `x-amz-checksum-*` value, sent as a header or as a trailer of an aws-chunked body. The body
//! is hashed as it streams to the blob store; a mismatch ends the stream with an error before
//! the write is committed, so a body that fails its checksum is never stored.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use futures::Stream;
use md5::{Digest, Md5};
use s3s::checksum::ChecksumHasher;
use s3s::dto::Checksum;
use s3s::{S3Error, S3Result, StdError, s3_error};

use crate::forward::Trailers;

/// The algorithms of `x-amz-checksum-*`, by header name.
const ALGORITHMS: [&str; 5] = ["crc32", "crc32c", "crc64nvme", "sha1", "sha256"];

/// The checksum an object was written with, as it is kept: its algorithm (`crc32`, `crc32c`,
/// `crc64nvme`, `sha1`, `sha256`) and its base64 value.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct StoredChecksum {
    pub(crate) algorithm: String,
    pub(crate) value: String,
}

/// The checksum value a body must have, if the client sent one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Expected {
    md5: Option<Vec<u8>>,
    /// `(algorithm, base64 value)` from a header.
    header: Option<(&'static str, String)>,
    /// The algorithm named by `x-amz-trailer`, whose value comes after the body.
    trailer: Option<(&'static str, s3s::TrailingHeaders)>,
}

impl Expected {
    /// Reads what the request promises: `Content-MD5`, an `x-amz-checksum-*` header (as
    /// `s3s` parsed it into `sent`), or an `x-amz-trailer` naming one.
    pub(crate) fn of_request(
        content_md5: Option<&str>,
        sent: &Checksum,
        headers: &http::HeaderMap,
        trailers: Option<&Trailers>,
    ) -> S3Result<Expected> {
        // A Content-MD5 header with nothing in it promises a digest and gives none.
        let content_md5 = match content_md5 {
            None if headers.contains_key("content-md5") => Some(""),
            other => other,
        };
        let md5 = content_md5
            .map(|value| {
                STANDARD
                    .decode(value.trim())
                    .ok()
                    .filter(|d| d.len() == 16)
                    .ok_or_else(|| s3_error!(InvalidDigest, "Content-MD5 is not a base64 MD5"))
            })
            .transpose()?;
        let header = [
            ("crc32", &sent.checksum_crc32),
            ("crc32c", &sent.checksum_crc32c),
            ("crc64nvme", &sent.checksum_crc64nvme),
            ("sha1", &sent.checksum_sha1),
            ("sha256", &sent.checksum_sha256),
        ]
        .into_iter()
        .find_map(|(algorithm, value)| value.clone().map(|v| (algorithm, v)));
        let trailer = match headers.get("x-amz-trailer").and_then(|v| v.to_str().ok()) {
            Some(name) => {
                let name = name.trim().to_ascii_lowercase();
                let algorithm = name
                    .strip_prefix("x-amz-checksum-")
                    .and_then(|a| ALGORITHMS.into_iter().find(|known| *known == a))
                    .ok_or_else(|| {
                        s3_error!(
                            InvalidArgument,
                            "the trailer '{name}' is not a known checksum"
                        )
                    })?;
                trailers.map(|t| (algorithm, t.0.clone()))
            }
            None => None,
        };
        Ok(Expected {
            md5,
            header,
            trailer,
        })
    }

    fn algorithm(&self) -> Option<&'static str> {
        self.header
            .as_ref()
            .map(|(a, _)| *a)
            .or(self.trailer.as_ref().map(|(a, _)| *a))
    }

    /// The checksum to keep with the object once the body verified: one sent as a header.
    /// (One sent as a trailer is verified as the body ends, after the write was prepared,
    /// and is not kept.)
    pub(crate) fn to_keep(&self) -> Option<StoredChecksum> {
        self.header
            .as_ref()
            .map(|(algorithm, value)| StoredChecksum {
                algorithm: (*algorithm).to_owned(),
                value: value.clone(),
            })
    }

    /// The checksum to answer with once the body verified (the one the client sent).
    pub(crate) fn answer(&self) -> Checksum {
        let mut checksum = Checksum::default();
        if let Some((algorithm, value)) = &self.header {
            set(&mut checksum, algorithm, value.clone());
        }
        checksum
    }
}

fn hasher_for(algorithm: &str) -> ChecksumHasher {
    let mut hasher = ChecksumHasher::default();
    match algorithm {
        "crc32" => hasher.crc32 = Some(Default::default()),
        "crc32c" => hasher.crc32c = Some(Default::default()),
        "crc64nvme" => hasher.crc64nvme = Some(Default::default()),
        "sha1" => hasher.sha1 = Some(Default::default()),
        _ => hasher.sha256 = Some(Default::default()),
    }
    hasher
}

fn value_of(checksum: &Checksum, algorithm: &str) -> Option<String> {
    match algorithm {
        "crc32" => checksum.checksum_crc32.clone(),
        "crc32c" => checksum.checksum_crc32c.clone(),
        "crc64nvme" => checksum.checksum_crc64nvme.clone(),
        "sha1" => checksum.checksum_sha1.clone(),
        _ => checksum.checksum_sha256.clone(),
    }
}

pub(crate) fn set(checksum: &mut Checksum, algorithm: &str, value: String) {
    match algorithm {
        "crc32" => checksum.checksum_crc32 = Some(value),
        "crc32c" => checksum.checksum_crc32c = Some(value),
        "crc64nvme" => checksum.checksum_crc64nvme = Some(value),
        "sha1" => checksum.checksum_sha1 = Some(value),
        _ => checksum.checksum_sha256 = Some(value),
    }
}

/// Where a failed check is told: the stream can only end with an error, which the store
/// reports as a broken body; the door answers this instead.
pub(crate) type Failure = Arc<Mutex<Option<S3Error>>>;

/// `body`, checked against `expected` as it passes.
pub(crate) struct Verified<S> {
    body: Pin<Box<S>>,
    expected: Expected,
    md5: Option<Md5>,
    hasher: Option<ChecksumHasher>,
    failure: Failure,
    ended: bool,
}

impl<S> Verified<S> {
    pub(crate) fn new(body: S, expected: Expected) -> (Verified<S>, Failure) {
        let failure = Failure::default();
        let verified = Verified {
            body: Box::pin(body),
            md5: expected.md5.as_ref().map(|_| Md5::new()),
            hasher: expected.algorithm().map(hasher_for),
            expected,
            failure: failure.clone(),
            ended: false,
        };
        (verified, failure)
    }

    /// The check at the end of the body: `None` when every promised value matched.
    fn verdict(&mut self) -> Option<S3Error> {
        if let (Some(md5), Some(want)) = (self.md5.take(), &self.expected.md5)
            && md5.finalize().as_slice() != want.as_slice()
        {
            return Some(s3_error!(
                BadDigest,
                "the Content-MD5 you specified did not match what was received"
            ));
        }
        let hasher = self.hasher.take()?;
        let algorithm = self.expected.algorithm()?;
        let want = match (&self.expected.header, &self.expected.trailer) {
            (Some((_, value)), _) => Some(value.clone()),
            (None, Some((_, trailers))) => trailers
                .read(|headers| {
                    headers
                        .get(format!("x-amz-checksum-{algorithm}"))
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                })
                .flatten(),
            (None, None) => None,
        };
        let Some(want) = want else {
            return Some(s3_error!(
                InvalidRequest,
                "the body ended without the x-amz-checksum-{algorithm} trailer it announced"
            ));
        };
        let got = value_of(&hasher.finalize(), algorithm).unwrap_or_default();
        (got != want.trim()).then(|| {
            s3_error!(
                BadDigest,
                "the x-amz-checksum-{algorithm} you specified did not match what was received"
            )
        })
    }
}

impl<S> Stream for Verified<S>
where
    S: Stream<Item = Result<Bytes, StdError>>,
{
    type Item = Result<Bytes, StdError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match self.body.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                if let Some(md5) = &mut self.md5 {
                    md5.update(&chunk);
                }
                if let Some(hasher) = &mut self.hasher {
                    hasher.update(&chunk);
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(None) => {
                self.ended = true;
                match self.verdict() {
                    None => Poll::Ready(None),
                    Some(refusal) => {
                        let message = refusal.message().unwrap_or("bad digest").to_owned();
                        if let Ok(mut slot) = self.failure.lock() {
                            *slot = Some(refusal);
                        }
                        Poll::Ready(Some(Err(message.into())))
                    }
                }
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    async fn run(expected: Expected, parts: &[&'static [u8]]) -> (bool, Option<S3Error>) {
        let body = futures::stream::iter(
            parts
                .iter()
                .map(|p| Ok::<_, StdError>(Bytes::from_static(p)))
                .collect::<Vec<_>>(),
        );
        let (mut verified, failure) = Verified::new(body, expected);
        let mut broke = false;
        while let Some(item) = verified.next().await {
            broke |= item.is_err();
        }
        let refusal = failure.lock().unwrap().take();
        (broke, refusal)
    }

    #[tokio::test]
    async fn a_matching_md5_passes_and_a_wrong_one_ends_the_body_with_bad_digest() {
        let md5 = STANDARD.encode(Md5::digest(b"hello world"));
        let expected =
            Expected::of_request(Some(&md5), &Checksum::default(), &Default::default(), None)
                .unwrap();
        assert!(!run(expected.clone(), &[b"hello ", b"world"]).await.0);
        let (broke, refusal) = run(expected, &[b"hello there"]).await;
        assert!(broke);
        assert_eq!(refusal.unwrap().code(), &s3s::S3ErrorCode::BadDigest);
    }

    #[tokio::test]
    async fn a_checksum_header_is_verified() {
        let mut hasher = hasher_for("sha256");
        hasher.update(b"abc");
        let right = Checksum {
            checksum_sha256: hasher.finalize().checksum_sha256,
            ..Default::default()
        };
        let expected = Expected::of_request(None, &right, &Default::default(), None).unwrap();
        assert!(!run(expected.clone(), &[b"a", b"bc"]).await.0);
        assert!(run(expected, &[b"abd"]).await.0);
        assert!(Expected::of_request(Some("not-md5"), &right, &Default::default(), None).is_err());
    }
}
