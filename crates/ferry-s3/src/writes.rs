//! Writing and deleting objects: `PutObject`, `CopyObject`, `DeleteObject` and
//! `DeleteObjects`, each the write or removal of the space or sandbox the bucket names
//! (`ferry_app::transfers::objects`, `spaces::delete`, `sandbox::delete`), with S3's conditions.

use ferry_app::body::Incoming;
use ferry_app::transfers::objects;
use ferry_app::{App, Principal};
use ferry_core::Timestamp;
use ferry_core::write::{FileMeta, WriteCondition};
use futures::StreamExt;
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::address::{Bucket, is_folder_marker, sandbox_key, space_key};
use crate::attributes::{Attributes, sent};
use crate::body_checksum::{Expected, Outcome, Verified, sent_checksum, with_checksum};
use crate::context::{
    Body, Door, caller, copy_source_conditions, etag_of, if_match_tags, sent_or_guessed_type,
    tag_list, time_of,
};
use crate::errors::{Condition, precondition_failed, to_s3};
use crate::paging::MAX_KEYS;
use crate::request::Trailers;

/// The write condition of `If-None-Match` / `If-Match`, as the spaces take it. An
/// `If-None-Match` naming an ETag (rather than `*`) is settled by the caller against the
/// current object, and leaves no condition here.
pub(crate) fn write_condition(
    if_none_match: Option<&ETagCondition>,
    if_match: Option<&ETagCondition>,
) -> S3Result<WriteCondition> {
    let create_only = matches!(if_none_match, Some(ETagCondition::Any));
    Ok(WriteCondition::of(create_only, if_match.map(if_match_tags)))
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

pub(crate) async fn put_object(
    door: &Door,
    req: S3Request<PutObjectInput>,
) -> S3Result<S3Response<PutObjectOutput>> {
    let principal = caller(&req)?;
    let trailers = req.extensions.get::<Trailers>().cloned();
    let headers = req.headers;
    let input = req.input;
    let bucket = door.bucket(&principal, &input.bucket).await?;
    if is_folder_marker(&input.key, input.content_length) {
        return Ok(S3Response::new(PutObjectOutput::default()));
    }
    door.check_write_preconditions(
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
    let content_type = sent_or_guessed_type(input.content_type.as_deref(), &input.key);
    let destination = Door::destination(&bucket, &input.key)?;
    // For an aws-chunked body s3s has put the decoded length here: the use case holds
    // the body to it.
    let declared = input.content_length.and_then(|n| u64::try_from(n).ok());
    let etag = checked(input.body, expected, |body, _| {
        objects::write(
            &door.app,
            &principal,
            &destination,
            FileMeta {
                content_type: &content_type,
                attributes: attributes.as_deref(),
                door: ferry_core::door::Door::S3,
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

pub(crate) async fn copy_object(
    door: &Door,
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
    let found = door
        .copy_source(
            &principal,
            &input.copy_source,
            copy_source_conditions!(input),
        )
        .await?;
    let destination = door.bucket(&principal, &input.bucket).await?;
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
    let body = door.read(found.reader, None).await?;
    let etag = objects::write(
        &door.app,
        &principal,
        &target,
        FileMeta {
            content_type: &content_type,
            attributes: attributes.as_deref(),
            door: ferry_core::door::Door::S3,
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

pub(crate) async fn delete_object(
    door: &Door,
    req: S3Request<DeleteObjectInput>,
) -> S3Result<S3Response<DeleteObjectOutput>> {
    let principal = caller(&req)?;
    let input = req.input;
    let bucket = door.bucket(&principal, &input.bucket).await?;
    delete(
        &door.app,
        &principal,
        &bucket,
        &input.key,
        input.if_match.as_ref(),
    )
    .await?;
    Ok(S3Response::new(DeleteObjectOutput::default()))
}

pub(crate) async fn delete_objects(
    door: &Door,
    req: S3Request<DeleteObjectsInput>,
) -> S3Result<S3Response<DeleteObjectsOutput>> {
    let principal = caller(&req)?;
    let input = req.input;
    let bucket = door.bucket(&principal, &input.bucket).await?;
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
            &door.app,
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
            let tags = if_match.map(if_match_tags);
            match ferry_app::files::spaces::delete(
                app,
                principal,
                space,
                &path,
                tags.as_deref(),
                ferry_core::door::Door::S3,
            )
            .await
            {
                Ok(_) | Err(ferry_app::Error::NotFound(_)) => Ok(()),
                Err(e) => Err(to_s3(e)),
            }
        }
        Bucket::Sandbox { thread_id } => {
            let path = sandbox_key(key)?;
            let tags = if_match.map(if_match_tags);
            match ferry_app::files::sandbox::delete(
                app,
                principal,
                thread_id,
                &path,
                tags.as_deref(),
                ferry_core::door::Door::S3,
            )
            .await
            {
                Ok(()) | Err(ferry_app::Error::NotFound(_)) => Ok(()),
                Err(e) => Err(to_s3(e)),
            }
        }
    }
}
