//! Multipart uploads (docs/s3.md, multipart): an object sent in parts, each part stored as a
//! blob as it streams in, and the object written from them at the end by the ordinary write
//! of its place ([`super::objects::write`]), so its rules, limits, events and ETag are those of
//! any other write. Only the identity that started an upload may add to it, finish it or
//! abort it. Which parts make the object (their order, sizes and ETags) is the protocol's
//! business and is checked by the door.

use bytes::Bytes;
use ferry_core::write::{FileMeta, WriteCondition};
pub use ferry_store::multipart::{Part, Upload};
use futures::{Stream, StreamExt, TryStreamExt};

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::body::Incoming;
use crate::error::{Error, Result};
use crate::transfers::objects::{self, Destination};

/// The highest part number, as in S3.
pub const MAX_PART_NUMBER: u32 = 10_000;

/// Starts an upload of the object `key` of `bucket` (the door's names for `destination`),
/// if the caller may write there and its content type is valid (refused now, not when it
/// completes).
pub async fn create(
    app: &App,
    principal: &Principal,
    bucket: &str,
    key: &str,
    destination: &Destination,
    meta: FileMeta<'_>,
) -> Result<Upload> {
    match destination {
        Destination::Space { .. } => {
            principal.space_owner()?;
        }
        Destination::Sandbox { thread_id, .. } => {
            access::thread(app, principal, thread_id, Action::ActAsAgent).await?;
        }
    }
    ferry_core::content_type::check(meta.content_type)?;
    Ok(app
        .db
        .insert_multipart(&principal.identity_key(), bucket, key, meta)
        .await?)
}

/// The caller's upload `upload_id` of `key` in `bucket`.
pub async fn find(
    app: &App,
    principal: &Principal,
    upload_id: &str,
    bucket: &str,
    key: &str,
) -> Result<Upload> {
    app.db
        .multipart(upload_id)
        .await?
        .filter(|u| {
            u.made_by == principal.identity_key() && u.bucket == bucket && u.object_path == key
        })
        .ok_or_else(|| Error::not_found(format!("no upload '{upload_id}' of this key")))
}

/// Stores one part (replacing an earlier one of the same number), refused when it declares or
/// passes the size limit of the destination, or differs from its declared length. `checksum` is asked once the whole body has been read: the
/// door's record of the checksum the part was verified against (one sent after the body, as a
/// trailer, is only known then), kept with the part.
pub async fn upload_part<S, E>(
    app: &App,
    upload: &Upload,
    destination: &Destination,
    part_number: u32,
    body: Incoming<S>,
    checksum: impl FnOnce() -> Option<String>,
) -> Result<Part>
where
    S: Stream<Item = std::result::Result<Bytes, E>>,
    E: std::fmt::Display,
{
    if !(1..=MAX_PART_NUMBER).contains(&part_number) {
        return Err(Error::invalid_request(format!(
            "part numbers run from 1 to {MAX_PART_NUMBER}"
        )));
    }
    let limit = destination.limit(app);
    let blob = app.blobs.write(body.admit(limit)?, limit).await?;
    let checksum = checksum();
    let replaced = app
        .db
        .put_part(&upload.upload_id, part_number, &blob, checksum.as_deref())
        .await?;
    if let Some(old) = replaced {
        let _ = app.blobs.delete(&old).await;
    }
    Ok(Part {
        part_number,
        blob_key: blob.key,
        size: blob.size,
        sha256: blob.sha256,
        checksum,
        created_at: ferry_core::Timestamp::now(),
    })
}

/// The parts stored so far, by number.
pub async fn parts(app: &App, upload: &Upload) -> Result<Vec<Part>> {
    Ok(app.db.parts(&upload.upload_id).await?)
}

/// Writes the object from `chosen` parts, in that order, described by `meta` (the door's
/// account of the upload), and ends the upload. The parts are
/// read one after the other, never more than a chunk at a time in memory.
pub async fn complete(
    app: &App,
    principal: &Principal,
    upload: &Upload,
    destination: &Destination,
    meta: FileMeta<'_>,
    chosen: Vec<Part>,
    condition: &WriteCondition,
) -> Result<String> {
    let limit = destination.limit(app);
    let total: u64 = chosen.iter().map(|p| p.size).sum();
    if total > limit {
        return Err(Error::too_large(limit));
    }
    // One part opened at a time, each read to its end before the next is opened.
    let openings: Vec<_> = chosen
        .into_iter()
        .map(|part| open_part(app.blobs.clone(), part.blob_key))
        .collect();
    let body = futures::stream::iter(openings).buffered(1).try_flatten();
    let body = Incoming::new(body, Some(total));
    let etag = objects::write(app, principal, destination, meta, condition, body).await?;
    abort(app, upload).await?;
    Ok(etag)
}

async fn open_part(
    blobs: ferry_store::Blobs,
    key: String,
) -> std::io::Result<futures::stream::BoxStream<'static, std::io::Result<Bytes>>> {
    Ok(blobs.read(&key, None).await?.stream)
}

/// Ends an upload without writing anything; its parts go.
pub async fn abort(app: &App, upload: &Upload) -> Result<()> {
    for key in app.db.delete_multipart(&upload.upload_id).await? {
        let _ = app.blobs.delete(&key).await;
    }
    Ok(())
}

/// The caller's uploads in progress in `bucket`, after `(key, upload_id)`.
pub async fn list(
    app: &App,
    principal: &Principal,
    bucket: &str,
    after: Option<(&str, &str)>,
    limit: u32,
) -> Result<Vec<Upload>> {
    Ok(app
        .db
        .multiparts_of(&principal.identity_key(), bucket, after, limit)
        .await?)
}
