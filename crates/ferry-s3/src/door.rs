//! The S3 operations (docs/s3.md, operations), each a thin adapter: read the input, call the
//! use case a route of the HTTP API calls, and write S3's answer.

use bytes::Bytes;
use ferry_app::body::Incoming;
use ferry_app::objects::{self, Destination};
use ferry_app::spaces::Removal;
use ferry_app::{Action, App, Principal, access};
use ferry_core::Timestamp;
use ferry_core::conditions::{TagList, Unmet};
use ferry_core::space_name::SANDBOX_BUCKET_PREFIX;
use ferry_store::spaces::{FileMeta, WriteCondition};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use s3s::dto::*;
use s3s::{S3, S3Request, S3Response, S3Result, StdError, s3_error};
use sync_wrapper::SyncStream;
use time::OffsetDateTime;

use crate::attributes::{Assembled, Attributes, sent};
use crate::bucket::{Bucket, is_folder_marker, sandbox_key, space_key};
use crate::checksum::{Expected, Outcome, Verified, sent_checksum, with_checksum};
use crate::errors::{Condition, bucket_error, no_such_bucket, precondition_failed, to_s3};
use crate::forward::{Caller, Trailers};
use crate::listing::{self, After, Listed, MAX_KEYS, Source};

/// The inner service's operations.
pub(crate) struct Door {
    app: App,
    region: String,
}

impl Door {
    pub(crate) fn new(app: App, region: String) -> Door {
        Door { app, region }
    }

    pub(crate) fn app(&self) -> &App {
        &self.app
    }
}

/// The outer service routes every request to [`crate::forward`]; it has no operations.
pub(crate) struct Unreachable;

#[async_trait::async_trait]
impl S3 for Unreachable {}

/// The principal [`crate::forward`] verified. A request without one never came through the
/// outer service (the inner one is not reachable from outside), and is refused all the same.
fn caller<T>(req: &S3Request<T>) -> S3Result<Principal> {
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

fn seconds_of(at: &s3s::dto::Timestamp) -> i64 {
    OffsetDateTime::from(at.clone()).unix_timestamp()
}

fn etag_of(value: &str) -> ETag {
    ETag::Strong(value.to_owned())
}

/// An S3 entity-tag condition as the tag list every door evaluates.
fn tag_list(condition: &ETagCondition) -> TagList {
    match condition {
        ETagCondition::Any => TagList::Any,
        ETagCondition::ETag(ETag::Strong(tag)) => TagList::Tags(vec![(tag.clone(), false)]),
        ETagCondition::ETag(ETag::Weak(tag)) => TagList::Tags(vec![(tag.clone(), true)]),
    }
}

/// The object a key names, ready to be read.
pub(crate) struct Found {
    pub(crate) size: u64,
    etag: String,
    modified: Timestamp,
    content_type: String,
    attributes: Attributes,
    pub(crate) reader: Reader,
}

pub(crate) enum Reader {
    Blob(String),
    Sandbox(ferry_store::sandbox::OpenedFile),
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
    fn span(
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
    fn checksum_if(
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
    fn check(&self, found: &Found) -> S3Result<()> {
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
                if let Ok(etag) = http::HeaderValue::try_from(format!("\"{}\"", found.etag)) {
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

/// What a read (`HeadObject`, `GetObject`) found and will answer with.
pub(crate) struct Reading {
    found: Found,
    /// The bytes asked for (a range or a part), if not all.
    span: Option<std::ops::Range<u64>>,
    parts_count: Option<i32>,
    /// The kept checksum of what is answered, when asked for (see [`Found::checksum_if`]).
    checksum: Checksum,
}

impl Reading {
    /// The safety headers of answering this object as `response-content-type` and
    /// `response-content-disposition` ask, or as it was stored ([`crate::serving`]).
    fn safety_headers(
        &self,
        asked_type: Option<&str>,
        asked_disposition: Option<&str>,
        key: &str,
    ) -> http::HeaderMap {
        let content_type = asked_type.unwrap_or(&self.found.content_type);
        let disposition =
            asked_disposition.or(self.found.attributes.content_disposition.as_deref());
        crate::serving::safety_headers(content_type, disposition, key)
    }
}

/// The [`ReadConditions`] of any input with S3's read condition fields.
macro_rules! read_conditions {
    ($input:expr) => {
        ReadConditions {
            if_match: $input.if_match.as_ref(),
            if_none_match: $input.if_none_match.as_ref(),
            if_modified_since: $input.if_modified_since.as_ref(),
            if_unmodified_since: $input.if_unmodified_since.as_ref(),
        }
    };
}

/// The answer of a read, `HeadObjectOutput` or `GetObjectOutput` (the same fields on two
/// types), from a [`Reading`], with `extra` fields of its own.
macro_rules! read_output {
    ($output:ident, $reading:ident, { $($field:ident: $value:expr),* $(,)? }) => {{
        // Field by field, so that a reader already taken out of `found` is no obstacle.
        let (span, checksum, kept) = ($reading.span, $reading.checksum, $reading.found.attributes);
        with_checksum!(typed $output {
            content_length: Some(span.as_ref().map_or($reading.found.size, |s| s.end - s.start) as i64),
            content_range: span
                .as_ref()
                .map(|s| format!("bytes {}-{}/{}", s.start, s.end - 1, $reading.found.size)),
            content_type: Some($reading.found.content_type),
            e_tag: Some(etag_of(&$reading.found.etag)),
            last_modified: Some(time_of($reading.found.modified)),
            accept_ranges: Some("bytes".into()),
            parts_count: $reading.parts_count,
            metadata: kept.metadata(),
            expires: kept.expires(),
            cache_control: kept.cache_control,
            content_disposition: kept.content_disposition,
            content_encoding: kept.content_encoding,
            content_language: kept.content_language,
            $($field: $value,)*
        }, checksum)
    }};
}

impl Door {
    /// Finds the object a read names and settles what it answers: its conditions, the bytes
    /// asked for (`Range` or `partNumber`), and the checksum if asked for.
    async fn reading(
        &self,
        principal: &Principal,
        bucket: &str,
        key: &str,
        conditions: ReadConditions<'_>,
        (range, part_number): (Option<&s3s::dto::Range>, Option<i32>),
        checksum_mode: Option<&ChecksumMode>,
    ) -> S3Result<Reading> {
        let bucket = self.bucket(principal, bucket).await?;
        let found = self.find(principal, &bucket, key).await?;
        conditions.check(&found)?;
        let (span, parts_count) = found.span(range, part_number)?;
        let checksum = found.checksum_if(checksum_mode, span.as_ref(), part_number);
        Ok(Reading {
            found,
            span,
            parts_count,
            checksum,
        })
    }
}

impl Door {
    /// Settles a bucket: a space must exist (made by `CreateBucket` or a first file), a
    /// sandbox must belong to a thread the caller may read.
    pub(crate) async fn bucket(&self, principal: &Principal, name: &str) -> S3Result<Bucket> {
        let bucket = Bucket::parse(name)?;
        match &bucket {
            Bucket::Space(space) => {
                if !ferry_app::spaces::exists(&self.app, principal, space)
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
                let file = ferry_app::spaces::file(&self.app, principal, space, &path)
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
                let opened = ferry_app::sandbox::open(&self.app, principal, thread_id, &path)
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
            Reader::Blob(key) => self.app.blobs.read(&key, range).await,
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

    async fn listing_source<'a>(
        &'a self,
        principal: &'a Principal,
        bucket: &'a Bucket,
    ) -> S3Result<Source<'a>> {
        Ok(match bucket {
            Bucket::Space(space) => Source::Space {
                app: &self.app,
                principal,
                space,
            },
            Bucket::Sandbox { thread_id } => {
                let entries = ferry_app::sandbox::list(&self.app, principal, thread_id, None, true)
                    .await
                    .map_err(to_s3)?;
                let mut all: Vec<Listed> = entries
                    .into_iter()
                    .filter(|e| !e.is_dir)
                    .map(|e| Listed {
                        key: e.path,
                        size: e.size,
                        etag: e.etag,
                        modified: e.modified,
                    })
                    .collect();
                all.sort_by(|a, b| a.key.cmp(&b.key));
                Source::Sorted(all)
            }
        })
    }

    async fn list(
        &self,
        principal: &Principal,
        bucket_name: &str,
        request: listing::Request,
    ) -> S3Result<listing::Page> {
        let bucket = self.bucket(principal, bucket_name).await?;
        let source = self.listing_source(principal, &bucket).await?;
        listing::page(&source, &request).await
    }
}

fn max_keys(requested: Option<i32>) -> usize {
    requested.map_or(MAX_KEYS, |n| usize::try_from(n).unwrap_or(0).min(MAX_KEYS))
}

/// How a listing writes keys: as they are, or (`encoding-type=url`, which SDKs ask for by
/// default) percent-encoded, `/` kept, so that any key survives XML and the SDK's decoding.
#[derive(Debug, Clone, Copy)]
struct Keys {
    url: bool,
}

impl Keys {
    fn of(encoding: Option<&EncodingType>) -> Keys {
        Keys {
            url: encoding.is_some_and(|e| e.as_str().eq_ignore_ascii_case("url")),
        }
    }

    fn write(self, key: &str) -> String {
        const KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
            .remove(b'-')
            .remove(b'_')
            .remove(b'.')
            .remove(b'~')
            .remove(b'/');
        if self.url {
            percent_encoding::utf8_percent_encode(key, KEPT).to_string()
        } else {
            key.to_owned()
        }
    }

    fn write_opt(self, key: Option<String>) -> Option<String> {
        key.map(|k| self.write(&k))
    }
}

fn objects(page: &listing::Page, keys: Keys) -> Vec<Object> {
    page.objects
        .iter()
        .map(|o| Object {
            key: Some(keys.write(&o.key)),
            size: Some(o.size as i64),
            e_tag: Some(etag_of(&o.etag)),
            last_modified: Some(time_of(o.modified)),
            storage_class: Some(ObjectStorageClass::from_static(
                ObjectStorageClass::STANDARD,
            )),
            ..Default::default()
        })
        .collect()
}

fn common_prefixes(page: &listing::Page, keys: Keys) -> Vec<CommonPrefix> {
    page.prefixes
        .iter()
        .map(|p| CommonPrefix {
            prefix: Some(keys.write(p)),
        })
        .collect()
}

/// The write condition of `If-None-Match` / `If-Match`, as the spaces take it. An
/// `If-None-Match` naming an ETag (rather than `*`) is settled by the caller against the
/// current object, and leaves no condition here.
pub(crate) fn write_condition(
    if_none_match: Option<&ETagCondition>,
    if_match: Option<&ETagCondition>,
) -> S3Result<WriteCondition> {
    let create_only = matches!(if_none_match, Some(ETagCondition::Any));
    let tags = if_match.map(|condition| match condition {
        ETagCondition::Any => vec!["*".to_owned()],
        ETagCondition::ETag(tag) => vec![tag.as_strong().unwrap_or_default().to_owned()],
    });
    Ok(WriteCondition::of(create_only, tags))
}

impl Door {
    /// S3's answers to a conditional write that the write condition alone does not give:
    /// `If-Match` on a key with nothing there is `NoSuchKey`, and `If-None-Match` naming the
    /// current ETag is `PreconditionFailed`. (Checked just before the write; the `*` and
    /// `If-Match` conditions themselves are decided atomically with it.)
    pub(crate) async fn check_write_preconditions(
        &self,
        principal: &Principal,
        bucket: &Bucket,
        key: &str,
        if_none_match: Option<&ETagCondition>,
        if_match: Option<&ETagCondition>,
    ) -> S3Result<()> {
        let named_tag = matches!(if_none_match, Some(ETagCondition::ETag(_)));
        if if_match.is_none() && !named_tag {
            return Ok(());
        }
        let current = match self.find(principal, bucket, key).await {
            Ok(found) => Some(found.etag),
            Err(e) if *e.code() == s3s::S3ErrorCode::NoSuchKey => None,
            Err(e) => return Err(e),
        };
        match (&current, if_match, if_none_match) {
            (None, Some(_), _) => Err(s3_error!(
                NoSuchKey,
                "If-Match names an object, and there is none at '{key}'"
            )),
            (Some(etag), _, Some(condition @ ETagCondition::ETag(_)))
                if tag_list(condition).matches_weakly(etag) =>
            {
                Err(precondition_failed(
                    Condition::IfNoneMatch,
                    "the object's ETag matches If-None-Match",
                ))
            }
            _ => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl S3 for Door {
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let principal = caller(&req)?;
        let spaces = ferry_app::spaces::list_spaces(&self.app, &principal)
            .await
            .map_err(to_s3)?;
        // Pages by name: the token is the last name of the page before.
        let after = req.input.continuation_token.as_deref().unwrap_or_default();
        let max = req
            .input
            .max_buckets
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(0));
        let prefix = req.input.prefix.as_deref().unwrap_or_default();
        let mut rest = spaces
            .into_iter()
            .filter(|s| s.name.as_str() > after && s.name.starts_with(prefix));
        let buckets: Vec<_> = rest
            .by_ref()
            .take(max)
            .map(|s| s3s::dto::Bucket {
                name: Some(s.name),
                creation_date: Some(time_of(s.updated_at)),
                bucket_region: Some(self.region.clone()),
            })
            .collect();
        let continuation_token = match rest.next() {
            Some(_) => buckets.last().and_then(|b| b.name.clone()),
            None => None,
        };
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            continuation_token,
            prefix: req.input.prefix,
            ..Default::default()
        }))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        let principal = caller(&req)?;
        self.bucket(&principal, &req.input.bucket).await?;
        Ok(S3Response::new(HeadBucketOutput {
            bucket_region: Some(self.region.clone()),
            ..Default::default()
        }))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        let principal = caller(&req)?;
        self.bucket(&principal, &req.input.bucket).await?;
        // us-east-1 is said as no constraint at all, as S3 does.
        let location_constraint = (self.region != "us-east-1")
            .then(|| BucketLocationConstraint::from(self.region.clone()));
        Ok(S3Response::new(GetBucketLocationOutput {
            location_constraint,
        }))
    }

    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let principal = caller(&req)?;
        let name = &req.input.bucket;
        match Bucket::parse(name)? {
            Bucket::Space(space) => {
                let made = ferry_app::spaces::create(&self.app, &principal, &space)
                    .await
                    .map_err(to_s3)?;
                // us-east-1 answers a repeated create by the owner with success; every other
                // region with BucketAlreadyOwnedByYou. Both leave the bucket as it was.
                if !made && self.region != "us-east-1" {
                    return Err(s3_error!(
                        BucketAlreadyOwnedByYou,
                        "you already have a space '{name}'"
                    ));
                }
                Ok(S3Response::new(CreateBucketOutput {
                    location: Some(format!("/{name}")),
                }))
            }
            // The same answer whether or not such a thread exists, so nothing leaks.
            Bucket::Sandbox { .. } => Err(s3_error!(
                InvalidBucketName,
                "bucket names starting with '{SANDBOX_BUCKET_PREFIX}' are reserved for threads' \
                 sandboxes, which exist as long as their thread; name a space without that prefix"
            )),
        }
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let principal = caller(&req)?;
        let name = &req.input.bucket;
        match self.bucket(&principal, name).await? {
            Bucket::Space(space) => {
                match ferry_app::spaces::remove(&self.app, &principal, &space)
                    .await
                    .map_err(to_s3)?
                {
                    Removal::Removed => Ok(S3Response::new(DeleteBucketOutput {})),
                    Removal::NotEmpty => Err(s3_error!(
                        BucketNotEmpty,
                        "the bucket holds objects; delete them first"
                    )),
                    Removal::Missing => Err(no_such_bucket(name)),
                }
            }
            Bucket::Sandbox { .. } => Err(s3_error!(
                AccessDenied,
                "a thread's sandbox goes only with its thread"
            )),
        }
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let principal = caller(&req)?;
        let input = req.input;
        let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
        // An empty continuation token starts at the beginning, as S3 does (and is echoed).
        let after = match (&input.continuation_token, &input.start_after) {
            (Some(token), _) if !token.is_empty() => After::from_token(token)?,
            (None, Some(key)) if !key.is_empty() => After::Key(key.clone()),
            _ => After::Start,
        };
        let max = max_keys(input.max_keys);
        let request = listing::Request {
            prefix: input.prefix.clone().unwrap_or_default(),
            delimiter: delimiter.clone(),
            after,
            max_keys: max,
        };
        let page = self.list(&principal, &input.bucket, request).await?;
        let keys = Keys::of(input.encoding_type.as_ref());
        let contents = objects(&page, keys);
        let prefixes = common_prefixes(&page, keys);
        Ok(S3Response::new(ListObjectsV2Output {
            key_count: Some((contents.len() + prefixes.len()) as i32),
            contents: Some(contents),
            common_prefixes: Some(prefixes),
            is_truncated: Some(page.next.is_some()),
            next_continuation_token: page.next.as_ref().and_then(After::token),
            continuation_token: input.continuation_token,
            start_after: keys.write_opt(input.start_after),
            name: Some(input.bucket),
            prefix: keys.write_opt(input.prefix),
            delimiter: keys.write_opt(delimiter),
            max_keys: Some(max as i32),
            encoding_type: input.encoding_type,
            ..Default::default()
        }))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let principal = caller(&req)?;
        let input = req.input;
        let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
        // A marker that is a common prefix (it ends with the delimiter) resumes after
        // everything beneath it, as NextMarker promised.
        let after = match input.marker.as_deref() {
            None | Some("") => After::Start,
            Some(marker) if delimiter.as_deref().is_some_and(|d| marker.ends_with(d)) => {
                After::Below(marker.to_owned())
            }
            Some(marker) => After::Key(marker.to_owned()),
        };
        let max = max_keys(input.max_keys);
        let request = listing::Request {
            prefix: input.prefix.clone().unwrap_or_default(),
            delimiter: delimiter.clone(),
            after,
            max_keys: max,
        };
        let page = self.list(&principal, &input.bucket, request).await?;
        let keys = Keys::of(input.encoding_type.as_ref());
        let next_marker = match (&page.next, &delimiter) {
            (Some(After::Key(key)), Some(_)) => Some(key.clone()),
            (Some(After::Below(prefix)), Some(_)) => Some(prefix.clone()),
            _ => None,
        };
        Ok(S3Response::new(ListObjectsOutput {
            contents: Some(objects(&page, keys)),
            common_prefixes: Some(common_prefixes(&page, keys)),
            is_truncated: Some(page.next.is_some()),
            next_marker: keys.write_opt(next_marker),
            // Version 1 always says its marker, and (unlike version 2) never encodes its
            // prefix: SDKs decode only the marker, the delimiter and the keys.
            marker: Some(keys.write(input.marker.as_deref().unwrap_or_default())),
            name: Some(input.bucket),
            prefix: input.prefix,
            delimiter: keys.write_opt(delimiter),
            max_keys: Some(max as i32),
            encoding_type: input.encoding_type,
            ..Default::default()
        }))
    }

    /// Buckets are never versioned: each object is its one version, `null`, as S3 lists the
    /// objects of a bucket that never had versioning on (tools list versions to empty one).
    async fn list_object_versions(
        &self,
        req: S3Request<ListObjectVersionsInput>,
    ) -> S3Result<S3Response<ListObjectVersionsOutput>> {
        let principal = caller(&req)?;
        let input = req.input;
        let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
        let after = match input.key_marker.as_deref() {
            None | Some("") => After::Start,
            Some(marker) if delimiter.as_deref().is_some_and(|d| marker.ends_with(d)) => {
                After::Below(marker.to_owned())
            }
            Some(marker) => After::Key(marker.to_owned()),
        };
        let max = max_keys(input.max_keys);
        let request = listing::Request {
            prefix: input.prefix.clone().unwrap_or_default(),
            delimiter: delimiter.clone(),
            after,
            max_keys: max,
        };
        let page = self.list(&principal, &input.bucket, request).await?;
        let keys = Keys::of(input.encoding_type.as_ref());
        let next_key_marker = match &page.next {
            Some(After::Key(key)) => Some(key.clone()),
            Some(After::Below(prefix)) => Some(prefix.clone()),
            _ => None,
        };
        let versions = page
            .objects
            .iter()
            .map(|o| ObjectVersion {
                key: Some(keys.write(&o.key)),
                version_id: Some("null".into()),
                is_latest: Some(true),
                size: Some(o.size as i64),
                e_tag: Some(etag_of(&o.etag)),
                last_modified: Some(time_of(o.modified)),
                ..Default::default()
            })
            .collect();
        Ok(S3Response::new(ListObjectVersionsOutput {
            versions: Some(versions),
            common_prefixes: Some(common_prefixes(&page, keys)),
            is_truncated: Some(page.next.is_some()),
            next_version_id_marker: next_key_marker.as_ref().map(|_| "null".to_owned()),
            next_key_marker: keys.write_opt(next_key_marker),
            key_marker: keys.write_opt(input.key_marker),
            version_id_marker: input.version_id_marker,
            name: Some(input.bucket),
            prefix: keys.write_opt(input.prefix),
            delimiter: keys.write_opt(input.delimiter),
            max_keys: Some(max as i32),
            encoding_type: input.encoding_type,
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let principal = caller(&req)?;
        let input = &req.input;
        let reading = self
            .reading(
                &principal,
                &input.bucket,
                &input.key,
                read_conditions!(input),
                (input.range.as_ref(), input.part_number),
                input.checksum_mode.as_ref(),
            )
            .await?;
        let safety = reading.safety_headers(
            input.response_content_type.as_deref(),
            input.response_content_disposition.as_deref(),
            &input.key,
        );
        let mut answer = S3Response::new(read_output!(HeadObjectOutput, reading, {}));
        answer.headers.extend(safety);
        Ok(answer)
    }

    /// The attributes asked for, each only when asked: the ETag (without quotes, as S3 gives
    /// it here), size, storage class, kept checksum, and a multipart object's parts.
    async fn get_object_attributes(
        &self,
        req: S3Request<GetObjectAttributesInput>,
    ) -> S3Result<S3Response<GetObjectAttributesOutput>> {
        let principal = caller(&req)?;
        let input = &req.input;
        let bucket = self.bucket(&principal, &input.bucket).await?;
        let found = self.find(&principal, &bucket, &input.key).await?;
        // One header, `x-amz-object-attributes: ETag,ObjectSize,…`, may arrive as one item.
        let wants = |name: &str| {
            input
                .object_attributes
                .iter()
                .flat_map(|a| a.as_str().split(','))
                .any(|a| a.trim() == name)
        };
        let checksum = found.attributes.checksum();
        let object_parts = found
            .assembled()
            .filter(|_| wants(ObjectAttributes::OBJECT_PARTS))
            .map(|assembled| {
                let marker = input.part_number_marker.unwrap_or(0).max(0) as usize;
                let max = input.max_parts.map_or(1000, |n| n.clamp(0, 1000) as usize);
                let listed: Vec<ObjectPart> = assembled
                    .part_sizes
                    .iter()
                    .enumerate()
                    .map(|(i, size)| (i + 1, *size))
                    .filter(|(number, _)| *number > marker)
                    .take(max)
                    .map(|(number, size)| {
                        with_checksum!(
                            ObjectPart {
                                part_number: Some(number as i32),
                                size: Some(size as i64),
                            },
                            found.attributes.part_checksum(number)
                        )
                    })
                    .collect();
                let last = listed.last().and_then(|p| p.part_number).unwrap_or(0);
                GetObjectAttributesParts {
                    is_truncated: Some((last as usize) < assembled.part_sizes.len()),
                    max_parts: Some(max as i32),
                    next_part_number_marker: Some(last),
                    part_number_marker: Some(marker as i32),
                    parts: Some(listed),
                    total_parts_count: Some(assembled.part_sizes.len() as i32),
                }
            });
        let mut answer = S3Response::new(GetObjectAttributesOutput {
            e_tag: wants(ObjectAttributes::ETAG).then(|| ETag::Strong(found.etag.clone())),
            object_size: wants(ObjectAttributes::OBJECT_SIZE).then_some(found.size as i64),
            storage_class: wants(ObjectAttributes::STORAGE_CLASS)
                .then(|| StorageClass::from_static(StorageClass::STANDARD)),
            checksum: (wants(ObjectAttributes::CHECKSUM) && checksum != Checksum::default())
                .then_some(checksum),
            object_parts,
            last_modified: Some(time_of(found.modified)),
            ..Default::default()
        });
        // S3 gives this ETag without quotes; s3s writes every ETag with them.
        answer.headers.insert(
            crate::forward::UNQUOTED_ETAG_HEADER,
            http::HeaderValue::from_static("1"),
        );
        Ok(answer)
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let principal = caller(&req)?;
        let input = &req.input;
        let reading = self
            .reading(
                &principal,
                &input.bucket,
                &input.key,
                read_conditions!(input),
                (input.range.as_ref(), input.part_number),
                input.checksum_mode.as_ref(),
            )
            .await?;
        let safety = reading.safety_headers(
            input.response_content_type.as_deref(),
            input.response_content_disposition.as_deref(),
            &input.key,
        );
        let body = self
            .read(reading.found.reader, reading.span.clone())
            .await?;
        let mut answer = S3Response::new(read_output!(GetObjectOutput, reading, {
            body: Some(StreamingBlob::wrap(SyncStream::new(body))),
        }));
        answer.headers.extend(safety);
        Ok(answer)
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let principal = caller(&req)?;
        let trailers = req.extensions.get::<Trailers>().cloned();
        let headers = req.headers;
        let input = req.input;
        let bucket = self.bucket(&principal, &input.bucket).await?;
        if is_folder_marker(&input.key, input.content_length) {
            return Ok(S3Response::new(PutObjectOutput::default()));
        }
        self.check_write_preconditions(
            &principal,
            &bucket,
            &input.key,
            input.if_none_match.as_ref(),
            input.if_match.as_ref(),
        )
        .await?;
        let condition = write_condition(input.if_none_match.as_ref(), input.if_match.as_ref())?;
        let sent = sent_checksum!(input);
        let expected = Expected::of_request(
            input.content_md5.as_deref(),
            &sent,
            &headers,
            trailers.as_ref(),
        )?;
        let answer = expected.answer();
        let attributes = Attributes::of(sent!(input))
            .with_checksum(expected.to_keep())
            .to_json();
        let content_type = input
            .content_type
            .clone()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| ferry_core::mime::mime_for_name(&input.key));
        let destination = Door::destination(&bucket, &input.key)?;
        // For an aws-chunked body s3s has put the decoded length here: the use case holds
        // the body to it.
        let declared = input.content_length.and_then(|n| u64::try_from(n).ok());
        let etag = checked(input.body, expected, |body, _| {
            objects::write(
                &self.app,
                &principal,
                &destination,
                FileMeta {
                    content_type: &content_type,
                    attributes: attributes.as_deref(),
                },
                &condition,
                Incoming::new(body, declared),
            )
        })
        .await?;
        Ok(S3Response::new(with_checksum!(
            typed PutObjectOutput {
                e_tag: Some(etag_of(&etag)),
            },
            answer
        )))
    }

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        let principal = caller(&req)?;
        let input = req.input;
        let replace = input
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        if let CopySource::Bucket { bucket, key, .. } = &input.copy_source
            && **bucket == *input.bucket
            && **key == *input.key
            && !replace
        {
            return Err(s3_error!(
                InvalidRequest,
                "This copy request is illegal because it is trying to copy an object to itself \
                 without changing the object's metadata (use x-amz-metadata-directive: REPLACE)"
            ));
        }
        let found = self
            .copy_source(
                &principal,
                &input.copy_source,
                ReadConditions {
                    if_match: input.copy_source_if_match.as_ref(),
                    if_none_match: input.copy_source_if_none_match.as_ref(),
                    if_modified_since: input.copy_source_if_modified_since.as_ref(),
                    if_unmodified_since: input.copy_source_if_unmodified_since.as_ref(),
                },
            )
            .await?;
        let destination = self.bucket(&principal, &input.bucket).await?;
        let content_type = match (&input.content_type, replace) {
            (Some(t), true) if !t.is_empty() => t.clone(),
            _ => found.content_type.clone(),
        };
        // COPY (the default) keeps the source's metadata and checksum; REPLACE takes the
        // request's headers instead.
        let attributes = if replace {
            Attributes::of(sent!(input))
        } else {
            found.attributes.clone()
        }
        .to_json();
        let target = Door::destination(&destination, &input.key)?;
        let size = found.size;
        let body = self.read(found.reader, None).await?;
        let etag = objects::write(
            &self.app,
            &principal,
            &target,
            FileMeta {
                content_type: &content_type,
                attributes: attributes.as_deref(),
            },
            &WriteCondition::None,
            Incoming::new(body, Some(size)),
        )
        .await
        .map_err(to_s3)?;
        Ok(S3Response::new(CopyObjectOutput {
            copy_object_result: Some(CopyObjectResult {
                e_tag: Some(etag_of(&etag)),
                last_modified: Some(time_of(Timestamp::now())),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.start_upload(&principal, req.input).await?,
        ))
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let principal = caller(&req)?;
        let trailers = req.extensions.get::<Trailers>().cloned();
        let input = req.input;
        let sent = sent_checksum!(input);
        let expected = Expected::of_request(
            input.content_md5.as_deref(),
            &sent,
            &req.headers,
            trailers.as_ref(),
        )?;
        Ok(S3Response::new(
            self.put_part(&principal, input, expected).await?,
        ))
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.copy_part(&principal, req.input).await?,
        ))
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.finish_upload(&principal, req.input).await?,
        ))
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.abort_upload(&principal, req.input).await?,
        ))
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.list_upload_parts(&principal, req.input).await?,
        ))
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.list_uploads(&principal, req.input).await?,
        ))
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let principal = caller(&req)?;
        let input = req.input;
        let bucket = self.bucket(&principal, &input.bucket).await?;
        delete(
            &self.app,
            &principal,
            &bucket,
            &input.key,
            input.if_match.as_ref(),
        )
        .await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let principal = caller(&req)?;
        let input = req.input;
        let bucket = self.bucket(&principal, &input.bucket).await?;
        if input.delete.objects.len() > MAX_KEYS {
            return Err(s3_error!(
                MalformedXML,
                "DeleteObjects takes at most {MAX_KEYS} keys"
            ));
        }
        let quiet = input.delete.quiet.unwrap_or(false);
        let mut deleted = Vec::new();
        let mut errors = Vec::new();
        for object in input.delete.objects {
            match delete(
                &self.app,
                &principal,
                &bucket,
                &object.key,
                object
                    .e_tag
                    .as_ref()
                    .map(|t| ETagCondition::ETag(t.clone()))
                    .as_ref(),
            )
            .await
            {
                Ok(()) if quiet => {}
                Ok(()) => deleted.push(DeletedObject {
                    key: Some(object.key),
                    ..Default::default()
                }),
                Err(e) => errors.push(Error {
                    code: Some(e.code().as_str().to_owned()),
                    message: e.message().map(str::to_owned),
                    key: Some(object.key),
                    ..Default::default()
                }),
            }
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: Some(deleted),
            errors: Some(errors),
            ..Default::default()
        }))
    }
}

/// Runs `write` over `body` checked against `expected` (with the check's [`Outcome`], read
/// once the body has ended); a body that fails its checksum is answered with the checksum's
/// refusal rather than the write's "broken body".
pub(crate) async fn checked<T, W, F>(
    body: Option<StreamingBlob>,
    expected: Expected,
    write: W,
) -> S3Result<T>
where
    W: FnOnce(Verified<Body>, Outcome) -> F,
    F: std::future::Future<Output = Result<T, ferry_app::Error>>,
{
    let body: Body = match body {
        Some(body) => body.boxed(),
        None => futures::stream::empty().boxed(),
    };
    let (verified, outcome) = Verified::new(body, expected);
    write(verified, outcome.clone())
        .await
        .map_err(|e| outcome.refusal().unwrap_or_else(|| to_s3(e)))
}

/// Deletes one object. A key with nothing there is no error (S3 answers 204 alike).
async fn delete(
    app: &App,
    principal: &Principal,
    bucket: &Bucket,
    key: &str,
    if_match: Option<&ETagCondition>,
) -> S3Result<()> {
    match bucket {
        Bucket::Space(space) => {
            let path = space_key(key)?;
            let tags = if_match.map(|condition| match condition {
                ETagCondition::Any => vec!["*".to_owned()],
                ETagCondition::ETag(tag) => vec![tag.as_strong().unwrap_or_default().to_owned()],
            });
            match ferry_app::spaces::delete(app, principal, space, &path, tags.as_deref()).await {
                Ok(_) | Err(ferry_app::Error::NotFound(_)) => Ok(()),
                Err(e) => Err(to_s3(e)),
            }
        }
        Bucket::Sandbox { thread_id } => {
            if if_match.is_some() {
                return Err(s3_error!(
                    NotImplemented,
                    "If-Match on a delete is served for spaces only"
                ));
            }
            let path = sandbox_key(key)?;
            match ferry_app::sandbox::delete(app, principal, thread_id, &path).await {
                Ok(()) | Err(ferry_app::Error::NotFound(_)) => Ok(()),
                Err(e) => Err(to_s3(e)),
            }
        }
    }
}
