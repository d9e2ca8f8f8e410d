//! Integrity checks of a written body (docs/s3.md, checksums): `Content-MD5` and one
//! `x-amz-checksum-*` value, sent as a header or as a trailer of an aws-chunked body. The body
//! is hashed as it streams to the blob store; a mismatch ends the stream with an error before
//! the write is committed, so a body that fails its checksum is never stored. A part of a
//! multipart upload that names an algorithm is hashed with it even when the client sent no
//! value, so that every part of such an upload has a checksum to build the object's from.

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

use crate::request::Trailers;

/// The algorithms of `x-amz-checksum-*`, by header name.
pub(crate) const ALGORITHMS: [&str; 5] = ["crc32", "crc32c", "crc64nvme", "sha1", "sha256"];

/// The checksum an object was written with, as it is kept: its algorithm (`crc32`, `crc32c`,
/// `crc64nvme`, `sha1`, `sha256`) and its base64 value.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct StoredChecksum {
    pub(crate) algorithm: String,
    pub(crate) value: String,
}

impl StoredChecksum {
    /// The stored form of a part's checksum.
    pub(crate) fn to_text(&self) -> String {
        serde_json::to_string(self).expect("a checksum serializes")
    }

    /// Reads a part's stored checksum; an unreadable one is as if none was kept.
    pub(crate) fn from_text(text: Option<&str>) -> Option<StoredChecksum> {
        text.and_then(|t| serde_json::from_str(t).ok())
    }
}

/// The `x-amz-checksum-*` values of any input that has S3's checksum fields, as a
/// [`Checksum`].
macro_rules! sent_checksum {
    ($input:expr) => {
        s3s::dto::Checksum {
            checksum_crc32: $input.checksum_crc32.clone(),
            checksum_crc32c: $input.checksum_crc32c.clone(),
            checksum_crc64nvme: $input.checksum_crc64nvme.clone(),
            checksum_sha1: $input.checksum_sha1.clone(),
            checksum_sha256: $input.checksum_sha256.clone(),
            ..Default::default()
        }
    };
}
pub(crate) use sent_checksum;

/// The answer `$output { fields… }` with a [`Checksum`]'s values in its `checksum_*` fields —
/// and in `checksum_type` too, for the answers that have one (`typed`) — and the rest default.
macro_rules! with_checksum {
    ($($output:ident)::+ { $($field:ident: $value:expr),* $(,)? }, $checksum:expr) => {{
        let checksum: s3s::dto::Checksum = $checksum;
        // Some answers have no field beyond these.
        #[allow(clippy::needless_update)]
        let answer = $($output)::+ {
            $($field: $value,)*
            checksum_crc32: checksum.checksum_crc32,
            checksum_crc32c: checksum.checksum_crc32c,
            checksum_crc64nvme: checksum.checksum_crc64nvme,
            checksum_sha1: checksum.checksum_sha1,
            checksum_sha256: checksum.checksum_sha256,
            ..Default::default()
        };
        answer
    }};
    (typed $($output:ident)::+ { $($field:ident: $value:expr),* $(,)? }, $checksum:expr) => {{
        let checksum: s3s::dto::Checksum = $checksum;
        let kind = checksum.checksum_type.clone();
        $crate::body_checksum::with_checksum!($($output)::+ { $($field: $value,)* checksum_type: kind }, checksum)
    }};
}
pub(crate) use with_checksum;

/// The checksum value a body must have, if the client sent one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Expected {
    md5: Option<Vec<u8>>,
    /// `(algorithm, base64 value)` from a header.
    header: Option<(&'static str, String)>,
    /// The algorithm named by `x-amz-trailer`, whose value comes after the body.
    trailer: Option<(&'static str, s3s::TrailingHeaders)>,
    /// The algorithm to hash with when the request names none (a part of an upload that
    /// named one): its value is recorded, with nothing to compare it against.
    computed: Option<&'static str>,
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
            computed: None,
        })
    }

    /// What a body for a multipart upload must have: a checksum of the upload's `algorithm`
    /// (one of [`ALGORITHMS`]), computed here when the request sends none; a request with
    /// another algorithm is refused.
    pub(crate) fn for_upload(mut self, algorithm: Option<&str>) -> S3Result<Expected> {
        let Some(algorithm) = algorithm else {
            return Ok(self);
        };
        let known = ALGORITHMS
            .into_iter()
            .find(|a| *a == algorithm)
            .ok_or_else(|| s3_error!(InternalError, "an upload names an unknown checksum"))?;
        match self.algorithm() {
            None => self.computed = Some(known),
            Some(sent) if sent == known => {}
            Some(sent) => {
                return Err(s3_error!(
                    InvalidRequest,
                    "the upload was started with the {} checksum; this part sends {}",
                    known.to_ascii_uppercase(),
                    sent.to_ascii_uppercase()
                ));
            }
        }
        Ok(self)
    }

    fn algorithm(&self) -> Option<&'static str> {
        self.header
            .as_ref()
            .map(|(a, _)| *a)
            .or(self.trailer.as_ref().map(|(a, _)| *a))
            .or(self.computed)
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

pub(crate) fn hasher_for(algorithm: &str) -> ChecksumHasher {
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

pub(crate) fn value_of(checksum: &Checksum, algorithm: &str) -> Option<String> {
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

/// What a checked body came to, known once it has ended: the refusal of a failed check (the
/// stream can only end with an error, which the store reports as a broken body; the door
/// answers this instead), or the checksum the body verified against (or was hashed with).
#[derive(Clone, Default)]
pub(crate) struct Outcome(Arc<Mutex<Ended>>);

#[derive(Default)]
struct Ended {
    refusal: Option<S3Error>,
    checksum: Option<StoredChecksum>,
}

impl Outcome {
    fn record(&self, ended: Ended) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = ended;
        }
    }

    /// The refusal of a body that failed its check.
    pub(crate) fn refusal(&self) -> Option<S3Error> {
        self.0.lock().ok().and_then(|mut e| e.refusal.take())
    }

    /// The checksum of a body that passed its check, if it was hashed.
    pub(crate) fn checksum(&self) -> Option<StoredChecksum> {
        self.0.lock().ok().and_then(|e| e.checksum.clone())
    }
}

/// `body`, checked against `expected` as it passes.
pub(crate) struct Verified<S> {
    body: Pin<Box<S>>,
    expected: Expected,
    md5: Option<Md5>,
    hasher: Option<ChecksumHasher>,
    outcome: Outcome,
    ended: bool,
}

impl<S> Verified<S> {
    pub(crate) fn new(body: S, expected: Expected) -> (Verified<S>, Outcome) {
        let outcome = Outcome::default();
        let verified = Verified {
            body: Box::pin(body),
            md5: expected.md5.as_ref().map(|_| Md5::new()),
            hasher: expected.algorithm().map(hasher_for),
            expected,
            outcome: outcome.clone(),
            ended: false,
        };
        (verified, outcome)
    }

    /// The check at the end of the body: the checksum it has when every promised value
    /// matched, the refusal otherwise.
    fn verdict(&mut self) -> Result<Option<StoredChecksum>, S3Error> {
        if let (Some(md5), Some(want)) = (self.md5.take(), &self.expected.md5)
            && md5.finalize().as_slice() != want.as_slice()
        {
            return Err(s3_error!(
                BadDigest,
                "the Content-MD5 you specified did not match what was received"
            ));
        }
        let (Some(hasher), Some(algorithm)) = (self.hasher.take(), self.expected.algorithm())
        else {
            return Ok(None);
        };
        // `None`: nothing was sent to compare with (the checksum is only computed).
        let want = match (&self.expected.header, &self.expected.trailer) {
            (Some((_, value)), _) => Some(Some(value.clone())),
            (None, Some((_, trailers))) => Some(
                trailers
                    .read(|headers| {
                        headers
                            .get(format!("x-amz-checksum-{algorithm}"))
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned)
                    })
                    .flatten(),
            ),
            (None, None) => None,
        };
        let got = value_of(&hasher.finalize(), algorithm).unwrap_or_default();
        match want {
            Some(None) => Err(s3_error!(
                InvalidRequest,
                "the body ended without the x-amz-checksum-{algorithm} trailer it announced"
            )),
            Some(Some(want)) if got != want.trim() => Err(s3_error!(
                BadDigest,
                "the x-amz-checksum-{algorithm} you specified did not match what was received"
            )),
            _ => Ok(Some(StoredChecksum {
                algorithm: algorithm.to_owned(),
                value: got,
            })),
        }
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
                    Ok(checksum) => {
                        self.outcome.record(Ended {
                            refusal: None,
                            checksum,
                        });
                        Poll::Ready(None)
                    }
                    Err(refusal) => {
                        let message = refusal.message().unwrap_or("bad digest").to_owned();
                        self.outcome.record(Ended {
                            refusal: Some(refusal),
                            checksum: None,
                        });
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
        let (mut verified, outcome) = Verified::new(body, expected);
        let mut broke = false;
        while let Some(item) = verified.next().await {
            broke |= item.is_err();
        }
        (broke, outcome.refusal())
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

    #[tokio::test]
    async fn a_part_of_an_upload_with_an_algorithm_is_hashed_with_it() {
        let nothing_sent = Expected::default().for_upload(Some("crc32")).unwrap();
        let body = futures::stream::iter([Ok::<_, StdError>(Bytes::from_static(b"abc"))]);
        let (mut verified, outcome) = Verified::new(body, nothing_sent);
        while verified.next().await.is_some() {}
        let mut hasher = hasher_for("crc32");
        hasher.update(b"abc");
        let kept = outcome.checksum().unwrap();
        assert_eq!(kept.algorithm, "crc32");
        assert_eq!(Some(kept.value), hasher.finalize().checksum_crc32);
        let sha256_sent = Checksum {
            checksum_sha256: Some("x".into()),
            ..Default::default()
        };
        let other = Expected::of_request(None, &sha256_sent, &Default::default(), None).unwrap();
        let refused = other.for_upload(Some("crc32")).unwrap_err();
        assert_eq!(refused.code(), &s3s::S3ErrorCode::InvalidRequest);
    }
}
