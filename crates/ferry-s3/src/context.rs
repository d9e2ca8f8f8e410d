//! What every S3 operation stands on: the door and its caller, how a bucket and a key are
//! settled against the caller's rights (by the use cases the HTTP API calls), the object a key
//! names and the conditions of reading it, and where a write goes.

use bytes::Bytes;
use ferry_app::transfers::objects::Destination;
use ferry_app::{Action, App, Principal, access};
use ferry_core::Timestamp;
use ferry_core::conditions::{TagList, Unmet, quoted_etag};
use futures::Stream;
use futures::stream::BoxStream;
use s3s::dto::*;
use s3s::{S3Request, S3Result, StdError, s3_error};
use time::OffsetDateTime;

use crate::address::{Bucket, sandbox_key, space_key};
use crate::attributes::{Assembled, Attributes};
use crate::errors::{Condition, bucket_error, no_such_bucket, precondition_failed, to_s3};
use crate::request::Caller;

/// The inner service's operations.
pub(crate) struct Door {
    pub(crate) app: App,
    pub(crate) region: String,
}

impl Door {
    pub(crate) fn new(app: App, region: String) -> Door {
        Door { app, region }
    }

    pub(crate) fn app(&self) -> &App {
        &self.app
    }
}

/// The principal [`crate::forward`] verified. A request without one never came through the
/// outer service (the inner one is not reachable from outside), and is refused all the same.
pub(crate) fn caller<T>(req: &S3Request<T>) -> S3Result<Principal> {
    req.extensions
        .get::<Caller>()
        .map(|c| c.0.clone())
        .ok_or_else(|| s3_error!(AccessDenied, "a signed request is needed"))
}

pub(crate) fn time_of(at: Timestamp) -> s3s::dto::Timestamp {
    let nanos = i128::from(at.millis()) * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .into()
}

pub(crate) fn seconds_of(at: &s3s::dto::Timestamp) -> i64 {
    OffsetDateTime::from(at.clone()).unix_timestamp()
}

pub(crate) fn etag_of(value: &str) -> ETag {
    ETag::Strong(value.to_owned())
}

/// The ETags an `If-Match` (of a write or a delete) names, as the use cases take them: `*`
/// for any existing object, or the strong tag (a weak one never matches).
pub(crate) fn if_match_tags(condition: &ETagCondition) -> Vec<String> {
    match condition {
        ETagCondition::Any => vec!["*".to_owned()],
        ETagCondition::ETag(tag) => vec![tag.as_strong().unwrap_or_default().to_owned()],
    }
}

/// The content type an object is written with: the one sent, else (as S3 clients expect)
/// the one its key's extension names.
pub(crate) fn sent_or_guessed_type(sent: Option<&str>, key: &str) -> String {
    sent.filter(|t| !t.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| ferry_core::mime::mime_for_name(key))
}

/// An S3 entity-tag condition as the tag list every door evaluates.
pub(crate) fn tag_list(condition: &ETagCondition) -> TagList {
    match condition {
        ETagCondition::Any => TagList::Any,
        ETagCondition::ETag(ETag::Strong(tag)) => TagList::Tags(vec![(tag.clone(), false)]),
        ETagCondition::ETag(ETag::Weak(tag)) => TagList::Tags(vec![(tag.clone(), true)]),
    }
}

/// The object a key names, ready to be read.
pub(crate) struct Found {
    pub(crate) size: u64,
    pub(crate) etag: String,
    pub(crate) modified: Timestamp,
    pub(crate) content_type: String,
    pub(crate) attributes: Attributes,
    pub(crate) reader: Reader,
}

pub(crate) enum Reader {
    Blob(String),
    Sandbox(ferry_app::files::sandbox::OpenedFile),
}

impl Found {
    pub(crate) fn etag(&self) -> &str {
        &self.etag
    }

    /// The object's kept checksum, whole.
    pub(crate) fn checksum(&self) -> Checksum {
        self.attributes.checksum()
    }

    /// The multipart upload the object was completed from, if it was.
    pub(crate) fn assembled(&self) -> Option<&Assembled> {
        self.attributes.assembled.as_ref()
    }

    /// The bytes a read asks for — a `Range`, or the `partNumber` of a multipart object (an
    /// object written whole is its own part 1) — and the parts count to answer with.
    pub(crate) fn span(
        &self,
        range: Option<&s3s::dto::Range>,
        part_number: Option<i32>,
    ) -> S3Result<(Option<std::ops::Range<u64>>, Option<i32>)> {
        let Some(number) = part_number else {
            return Ok((range.map(|r| r.check(self.size)).transpose()?, None));
        };
        if range.is_some() {
            return Err(s3_error!(
                InvalidRequest,
                "a read names a Range or a partNumber, not both"
            ));
        }
        let invalid = || s3_error!(InvalidPart, "the object has no part {number}");
        let number = usize::try_from(number).map_err(|_| invalid())?;
        match self.assembled() {
            Some(assembled) => {
                let span = assembled.part(number).ok_or_else(invalid)?;
                Ok((Some(span), Some(assembled.part_sizes.len() as i32)))
            }
            None if number == 1 => Ok((None, None)),
            None => Err(invalid()),
        }
    }

    /// The checksum of what a read answers, when it asks for one (`x-amz-checksum-mode:
    /// ENABLED`): the object's when it reads it whole, a part's when it names a part of a
    /// multipart object, none for a range.
    pub(crate) fn checksum_if(
        &self,
        mode: Option<&ChecksumMode>,
        span: Option<&std::ops::Range<u64>>,
        part_number: Option<i32>,
    ) -> Checksum {
        if mode.is_none_or(|m| m.as_str() != ChecksumMode::ENABLED) {
            return Checksum::default();
        }
        match (span, part_number) {
            (None, _) => self.attributes.checksum(),
            (Some(_), Some(number)) => self
                .attributes
                .part_checksum(usize::try_from(number).unwrap_or(0)),
            (Some(_), None) => Checksum::default(),
        }
    }
}

/// The conditions of a read.
pub(crate) struct ReadConditions<'a> {
    pub(crate) if_match: Option<&'a ETagCondition>,
    pub(crate) if_none_match: Option<&'a ETagCondition>,
    pub(crate) if_modified_since: Option<&'a s3s::dto::Timestamp>,
    pub(crate) if_unmodified_since: Option<&'a s3s::dto::Timestamp>,
}

/// The [`ReadConditions`] a copy's source must meet, from the `x-amz-copy-source-if-*`
/// fields that `CopyObject` and `UploadPartCopy` share.
macro_rules! copy_source_conditions {
    ($input:expr) => {
        $crate::context::ReadConditions {
            if_match: $input.copy_source_if_match.as_ref(),
            if_none_match: $input.copy_source_if_none_match.as_ref(),
            if_modified_since: $input.copy_source_if_modified_since.as_ref(),
            if_unmodified_since: $input.copy_source_if_unmodified_since.as_ref(),
        }
    };
}
pub(crate) use copy_source_conditions;

impl ReadConditions<'_> {
    /// The conditions as the rule every door evaluates (`ferry_core::conditions`), which is
    /// S3's order too: `If-Match` (else `If-Unmodified-Since`) may answer 412, then
    /// `If-None-Match` (else `If-Modified-Since`) may answer 304.
    fn unmet(&self, found: &Found) -> Option<Unmet> {
        let conditions = ferry_core::conditions::ReadConditions {
            if_match: self.if_match.map(tag_list),
            if_none_match: self.if_none_match.map(tag_list),
            if_modified_since: self.if_modified_since.map(seconds_of),
            if_unmodified_since: self.if_unmodified_since.map(seconds_of),
        };
        conditions.unmet(&found.etag, found.modified.millis().div_euclid(1000))
    }

    /// The conditions of a read (`GetObject`, `HeadObject`): 412 or 304 when unmet.
    pub(crate) fn check(&self, found: &Found) -> S3Result<()> {
        match self.unmet(found) {
            None => Ok(()),
            Some(Unmet::Failed(which)) => {
                let condition = Condition::from(which);
                Err(precondition_failed(
                    condition,
                    &format!("{} does not hold for the object", condition.header()),
                ))
            }
            Some(Unmet::NotModified(_)) => {
                // A 304 still says which version the client's copy is, as S3's does.
                let mut error = s3_error!(NotModified);
                let mut headers = http::HeaderMap::new();
                if let Ok(etag) = http::HeaderValue::try_from(quoted_etag(&found.etag)) {
                    headers.insert(http::header::ETAG, etag);
                }
                if let Ok(modified) = http::HeaderValue::try_from(found.modified.http_date()) {
                    headers.insert(http::header::LAST_MODIFIED, modified);
                }
                error.set_headers(headers);
                Err(error)
            }
        }
    }

    /// The conditions of a copy's source: any unmet one is a 412 naming the copy header.
    pub(crate) fn check_copy_source(&self, found: &Found) -> S3Result<()> {
        match self.unmet(found) {
            None => Ok(()),
            Some(Unmet::Failed(which) | Unmet::NotModified(which)) => {
                let condition = Condition::from(which).of_copy_source();
                Err(precondition_failed(
                    condition,
                    &format!("{} does not hold for the copy source", condition.header()),
                ))
            }
        }
    }
}

pub(crate) type Body = std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, StdError>> + Send>>;

impl Door {
    /// Settles a bucket: a space must exist (made by `CreateBucket` or a first file), a
    /// sandbox must belong to a thread the caller may read.
    pub(crate) async fn bucket(&self, principal: &Principal, name: &str) -> S3Result<Bucket> {
        let bucket = Bucket::parse(name)?;
        match &bucket {
            Bucket::Space(space) => {
                if !ferry_app::files::spaces::exists(&self.app, principal, space)
                    .await
                    .map_err(to_s3)?
                {
                    return Err(no_such_bucket(name));
                }
            }
            Bucket::Sandbox { thread_id } => {
                access::thread(&self.app, principal, thread_id, Action::Read)
                    .await
                    .map_err(bucket_error)?;
            }
        }
        Ok(bucket)
    }

    pub(crate) async fn find(
        &self,
        principal: &Principal,
        bucket: &Bucket,
        key: &str,
    ) -> S3Result<Found> {
        let missing = |_| s3_error!(NoSuchKey, "no object at '{key}'");
        match bucket {
            Bucket::Space(space) => {
                let path = space_key(key)?;
                let file = ferry_app::files::spaces::file(&self.app, principal, space, &path)
                    .await
                    .map_err(|e| match e {
                        ferry_app::Error::NotFound(m) => missing(m),
                        other => to_s3(other),
                    })?;
                Ok(Found {
                    size: file.size,
                    etag: file.sha256,
                    modified: file.updated_at,
                    content_type: file.content_type,
                    attributes: Attributes::from_json(file.attributes.as_deref()),
                    reader: Reader::Blob(file.blob_key),
                })
            }
            Bucket::Sandbox { thread_id } => {
                let path = sandbox_key(key)?;
                let opened =
                    ferry_app::files::sandbox::open(&self.app, principal, thread_id, &path)
                        .await
                        .map_err(|e| match e {
                            ferry_app::Error::NotFound(m) => missing(m),
                            // A folder, a link out or a hard link: nothing S3 can read there.
                            ferry_app::Error::InvalidPath(m) => missing(m),
                            other => to_s3(other),
                        })?;
                Ok(Found {
                    size: opened.size,
                    etag: opened.etag.clone(),
                    modified: opened.modified,
                    content_type: ferry_core::mime::mime_for_name(path.file_name()),
                    attributes: Attributes::default(),
                    reader: Reader::Sandbox(opened),
                })
            }
        }
    }

    pub(crate) async fn read(
        &self,
        reader: Reader,
        range: Option<std::ops::Range<u64>>,
    ) -> S3Result<BoxStream<'static, std::io::Result<Bytes>>> {
        let read = match reader {
            Reader::Blob(key) => ferry_app::transfers::objects::bytes(&self.app, &key, range).await,
            Reader::Sandbox(opened) => opened.stream(range).await,
        }
        .map_err(|e| to_s3(ferry_app::Error::io(e)))?;
        Ok(read.stream)
    }

    /// The object a copy reads, if its `x-amz-copy-source-if-*` conditions hold: like a
    /// read's, except that a copy answers 412 where a read would answer 304.
    pub(crate) async fn copy_source(
        &self,
        principal: &Principal,
        source: &CopySource,
        conditions: ReadConditions<'_>,
    ) -> S3Result<Found> {
        let CopySource::Bucket { bucket, key, .. } = source else {
            return Err(s3_error!(
                NotImplemented,
                "only bucket/key copy sources are served"
            ));
        };
        let bucket = self.bucket(principal, bucket).await?;
        let found = self.find(principal, &bucket, key).await?;
        conditions.check_copy_source(&found)?;
        Ok(found)
    }

    /// The file `key` of `bucket` names, for a write.
    pub(crate) fn destination(bucket: &Bucket, key: &str) -> S3Result<Destination> {
        Ok(match bucket {
            Bucket::Space(space) => Destination::Space {
                space: space.clone(),
                path: space_key(key)?,
            },
            Bucket::Sandbox { thread_id } => Destination::Sandbox {
                thread_id: thread_id.clone(),
                path: sandbox_key(key)?,
            },
        })
    }
}
