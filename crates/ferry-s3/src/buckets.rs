//! Buckets: `ListBuckets`, `HeadBucket`, `GetBucketLocation`, `CreateBucket` and
//! `DeleteBucket`. A bucket is one of the caller's spaces, or a thread's sandbox
//! ([`crate::address`]).

use ferry_app::files::spaces::Removal;
use ferry_core::space_name::SANDBOX_BUCKET_PREFIX;
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};

use crate::address::Bucket;
use crate::context::{Door, caller, time_of};
use crate::errors::{no_such_bucket, to_s3};

pub(crate) async fn list_buckets(
    door: &Door,
    req: S3Request<ListBucketsInput>,
) -> S3Result<S3Response<ListBucketsOutput>> {
    let principal = caller(&req)?;
    let spaces = ferry_app::files::spaces::list_spaces(&door.app, &principal)
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
            bucket_region: Some(door.region.clone()),
        })
        .collect();
    let continuation_token = match rest.next() {
        Some(_) => buckets.last().and_then(|b| b.name.clone()),
        None => None,
    };
    // The spaces are the user's own: S3 names that user as the owner of every bucket listed.
    let owner = principal.space_owner().ok().map(|sub| Owner {
        display_name: Some(sub.to_owned()),
        id: Some(sub.to_owned()),
    });
    Ok(S3Response::new(ListBucketsOutput {
        buckets: Some(buckets),
        continuation_token,
        owner,
        prefix: req.input.prefix,
    }))
}

pub(crate) async fn head_bucket(
    door: &Door,
    req: S3Request<HeadBucketInput>,
) -> S3Result<S3Response<HeadBucketOutput>> {
    let principal = caller(&req)?;
    door.bucket(&principal, &req.input.bucket).await?;
    Ok(S3Response::new(HeadBucketOutput {
        bucket_region: Some(door.region.clone()),
        ..Default::default()
    }))
}

pub(crate) async fn get_bucket_location(
    door: &Door,
    req: S3Request<GetBucketLocationInput>,
) -> S3Result<S3Response<GetBucketLocationOutput>> {
    let principal = caller(&req)?;
    door.bucket(&principal, &req.input.bucket).await?;
    // us-east-1 is said as no constraint at all, as S3 does.
    let location_constraint =
        (door.region != "us-east-1").then(|| BucketLocationConstraint::from(door.region.clone()));
    Ok(S3Response::new(GetBucketLocationOutput {
        location_constraint,
    }))
}

pub(crate) async fn create_bucket(
    door: &Door,
    req: S3Request<CreateBucketInput>,
) -> S3Result<S3Response<CreateBucketOutput>> {
    let principal = caller(&req)?;
    let name = &req.input.bucket;
    match Bucket::parse(name)? {
        Bucket::Space(space) => {
            let made = ferry_app::files::spaces::create(&door.app, &principal, &space)
                .await
                .map_err(to_s3)?;
            // us-east-1 answers a repeated create by the owner with success; every other
            // region with BucketAlreadyOwnedByYou. Both leave the bucket as it was.
            if !made && door.region != "us-east-1" {
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

pub(crate) async fn delete_bucket(
    door: &Door,
    req: S3Request<DeleteBucketInput>,
) -> S3Result<S3Response<DeleteBucketOutput>> {
    let principal = caller(&req)?;
    let name = &req.input.bucket;
    match door.bucket(&principal, name).await? {
        Bucket::Space(space) => {
            match ferry_app::files::spaces::remove(&door.app, &principal, &space)
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
