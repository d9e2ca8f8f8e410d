//! Resumable uploads (docs/reference/resumable-uploads.md): the tus 1.0 protocol's rules,
//! whatever door speaks it (the door reads the protocol's headers; these functions take their
//! values). An upload names its target when it is created (a thread upload or
//! a space file), and every rule of that target is checked then, before any byte is kept: who
//! may write there, the name or path, the content type, the size limit. Each `PATCH` keeps
//! what it brings: on a local store in the upload's own file, at its offset (one write of each
//! byte; ferry_store's `gathering`), on an object store as a part, a blob of its own. When the
//! last byte is in, that file, or the parts read back in order into a spool, is given to the
//! target's own use case (`uploads::Receiver::adopt` or `spaces::write_spooled`), so a
//! finished resumable upload is exactly a plain one.
//!
//! Why one file: creation, appending, finishing, termination and expiry are the steps of one
//! upload's record, each moving it on under the same per-upload lock and the same offset rule;
//! read apart, the order of those steps (and what each may assume of the one before) would
//! have to be pieced together again from several files.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use ferry_core::write::{FileMeta, WriteCondition};
use ferry_core::{SpaceName, Timestamp, ValidPath};
use ferry_store::blobs::Gather;
use ferry_store::resumable::{Appended, ResumableState, ResumableUpload};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use crate::access::principal::Principal;
use crate::app::App;
use crate::error::{Error, Result};
use ferry_core::error_code::ErrorCode;

/// A finishing request that has not ended in this long is taken to have died, and another
/// request may finish the upload.
const FINISHING_STALE: Duration = Duration::from_secs(600);
/// How long a `PATCH` waits for another request still writing to the same upload (one whose
/// connection dropped and whose end the server has not noticed yet, say) before it is refused.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// What an upload becomes once its last byte is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Target {
    /// An upload into a thread, as `POST /api/threads/{id}/uploads` makes.
    #[serde(rename_all = "camelCase")]
    ThreadUpload { thread_id: String, filename: String },
    /// A space file, as `PUT /api/spaces/{space}/files/{path}` writes.
    #[serde(rename_all = "camelCase")]
    SpaceFile {
        space: String,
        path: String,
        content_type: String,
        create_only: bool,
    },
}

/// One upload as a client sees it.
#[derive(Debug, Clone)]
pub struct Status {
    pub id: String,
    pub length: u64,
    pub offset: u64,
    /// Its metadata as its door received it ([`Metadata::as_sent`]).
    pub metadata: String,
    pub expires_at: Timestamp,
    /// Whether it is a plain upload now.
    pub finished: bool,
    pub target: Target,
}

impl Status {
    fn of(upload: &ResumableUpload) -> Result<Status> {
        Ok(Status {
            id: upload.id.clone(),
            length: upload.length,
            offset: upload.offset,
            metadata: upload.metadata.clone(),
            expires_at: upload.expires_at,
            finished: upload.state == ResumableState::Finished,
            target: serde_json::from_str(&upload.target).map_err(Error::internal)?,
        })
    }

    /// Whether every byte is in but the upload is not yet a plain one.
    pub fn needs_finishing(&self) -> bool {
        !self.finished && self.offset == self.length
    }
}

/// How a finished upload ended. It is kept with the upload, in this shape (JSON in the
/// metadata database, no protocol's text), so a client that asks later (a retry whose first
/// connection dropped) is told what the client that finished it was told.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Finished {
    /// A thread upload: its files, as the plain upload answers them.
    ThreadUpload {
        uploads: Vec<ferry_core::file_views::UploadView>,
    },
    /// A space file, as the plain write answers it.
    SpaceFile { written: crate::files::Written },
    /// The target's rules refused the bytes (the space filled meanwhile, a create-only path
    /// was taken, …): nothing was written.
    Refused { code: ErrorCode, message: String },
}

/// A checksum a client sent with a body: the body's bytes are hashed as they arrive, and
/// nothing of a body that does not match is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksum {
    pub algorithm: ChecksumAlgorithm,
    pub digest: Vec<u8>,
}

/// The digests a body's checksum may be of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumAlgorithm {
    Sha1,
    Sha256,
}

impl ChecksumAlgorithm {
    /// Every algorithm, with its name in lower case.
    pub const ALL: [(&'static str, ChecksumAlgorithm); 2] = [
        ("sha1", ChecksumAlgorithm::Sha1),
        ("sha256", ChecksumAlgorithm::Sha256),
    ];
}

/// The longest metadata kept of an upload: it names a target and a type, and is given back
/// with every state of the upload, so it stays small enough for any client to read back.
pub const MAX_METADATA_BYTES: usize = 4096;

/// What a new upload says of itself: the target it names, as keys and values (`threadId` and
/// `filename`; or `spaceName`, `path`, `contentType` and `ifNoneMatch`), read by its door.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    pub pairs: HashMap<String, String>,
    /// The metadata as its door received it, kept to be given back with the upload's state;
    /// at most [`MAX_METADATA_BYTES`].
    pub as_sent: String,
}

/// The target a creation's metadata names, checked as its own route would check it: who may
/// write there, the file name or path, the content type. Answers it with its size limit.
async fn target_of(
    app: &App,
    principal: &Principal,
    metadata: &HashMap<String, String>,
) -> Result<(Target, u64)> {
    // The door reads the metadata; the words of these refusals name only its keys.
    let get = |key: &str| {
        metadata
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    match (get("threadId"), get("spaceName")) {
        (Some(thread_id), None) => {
            let filename = get("filename").ok_or_else(|| {
                Error::invalid_request("the metadata of a thread upload needs 'filename'")
            })?;
            let name = ferry_core::path::upload_file_name(filename)
                .map_err(|e| Error::InvalidPath(e.to_string()))?;
            let receiver = crate::threads::uploads::receive(app, principal, thread_id).await?;
            Ok((
                Target::ThreadUpload {
                    thread_id: thread_id.to_owned(),
                    filename: name.into_string(),
                },
                receiver.limit(),
            ))
        }
        (None, Some(space)) => {
            let space = SpaceName::parse(space).map_err(|e| Error::InvalidPath(e.to_string()))?;
            let path = get("path").ok_or_else(|| {
                Error::invalid_request("the metadata of a space file needs 'path'")
            })?;
            let path = ValidPath::parse(path).map_err(|e| Error::InvalidPath(e.to_string()))?;
            let content_type = get("contentType").ok_or_else(|| {
                Error::invalid_request("the metadata of a space file needs 'contentType'")
            })?;
            let content_type = ferry_core::content_type::check(content_type)?;
            let create_only = match get("ifNoneMatch") {
                None => false,
                Some("*") => true,
                Some(_) => {
                    return Err(Error::invalid_request(
                        "the metadata's 'ifNoneMatch' may only be '*'",
                    ));
                }
            };
            let owner = principal.space_owner()?;
            if create_only && app.db.space_file(owner, &space, &path).await?.is_some() {
                return Err(Error::AlreadyExists(format!(
                    "'{path}' already exists (ifNoneMatch: *)"
                )));
            }
            Ok((
                Target::SpaceFile {
                    space: space.as_str().to_owned(),
                    path: path.into_string(),
                    content_type: content_type.to_owned(),
                    create_only,
                },
                app.limits.space_max_bytes,
            ))
        }
        (Some(_), Some(_)) => Err(Error::invalid_request(
            "the metadata names both a thread ('threadId') and a space ('spaceName'); name one",
        )),
        (None, None) => Err(Error::invalid_request(
            "the metadata must name the target: 'threadId' and 'filename' for a thread \
             upload, or 'spaceName', 'path' and 'contentType' for a space file",
        )),
    }
}

/// Creates an upload of `length` bytes for the target its metadata names.
pub async fn create(
    app: &App,
    principal: &Principal,
    length: u64,
    metadata: Metadata,
) -> Result<Status> {
    if metadata.as_sent.len() > MAX_METADATA_BYTES {
        return Err(Error::invalid_request(format!(
            "the upload's metadata is {} bytes: at most {MAX_METADATA_BYTES} are kept",
            metadata.as_sent.len()
        )));
    }
    let (target, limit) = target_of(app, principal, &metadata.pairs).await?;
    if length > limit {
        return Err(Error::TooLarge(format!(
            "the upload's length, {length} bytes, is over the limit of {} for this target",
            crate::error::describe_bytes(limit)
        )));
    }
    let now = Timestamp::now();
    let upload = ResumableUpload {
        id: uuid::Uuid::now_v7().to_string(),
        made_by: principal.identity_key(),
        target: serde_json::to_string(&target).map_err(Error::internal)?,
        length,
        offset: 0,
        metadata: metadata.as_sent,
        created_at: now,
        expires_at: Timestamp(now.millis() + app.limits.resumable_expiry.as_millis() as i64),
        state: ResumableState::Receiving,
        result: None,
    };
    let cap = app.limits.resumable_max_unfinished;
    if !app.db.create_resumable(&upload, cap).await? {
        return Err(Error::TooManyRequests(format!(
            "you have {cap} unfinished resumable uploads, the most one may hold: finish or \
             end (DELETE) one first, or wait for it to expire"
        )));
    }
    Status::of(&upload)
}

/// The upload `id`, if `principal` made it and it has not expired; anyone else is told it
/// does not exist.
pub async fn status(app: &App, principal: &Principal, id: &str) -> Result<Status> {
    let missing = || Error::not_found(format!("no resumable upload '{id}' (it may have expired)"));
    let upload = app.db.resumable(id).await?.ok_or_else(missing)?;
    if upload.made_by != principal.identity_key() || upload.expires_at <= Timestamp::now() {
        return Err(missing());
    }
    Status::of(&upload)
}

/// Keeps the bytes of one `PATCH` that starts at `offset`: all of them, or, when the body is
/// cut short (the connection dropped), those that arrived, unless a checksum was named (then
/// nothing of a cut or mismatching body is kept). Answers the upload's new state.
pub async fn append<S, E>(
    app: &App,
    principal: &Principal,
    id: &str,
    offset: u64,
    checksum: Option<Checksum>,
    body: S,
) -> Result<Status>
where
    S: Stream<Item = std::result::Result<Bytes, E>> + Send,
    E: std::fmt::Display,
{
    let mut current = status(app, principal, id).await?;
    if current.finished || current.offset == current.length {
        if offset == current.length {
            return Ok(current);
        }
        return Err(Error::OffsetMismatch(format!(
            "the upload is complete at {} bytes; an offset of {offset} does not match",
            current.length
        )));
    }
    if offset != current.offset {
        return Err(Error::OffsetMismatch(format!(
            "the upload's offset is {}, not {offset}: ask with HEAD and continue from there",
            current.offset
        )));
    }
    let remaining = current.length - offset;
    let cut = Arc::new(AtomicBool::new(false));
    let hasher = Arc::new(std::sync::Mutex::new(Hasher::of(checksum.as_ref())));
    let kept = {
        let (cut, hasher) = (cut.clone(), hasher.clone());
        // A body that breaks off ends here instead: what arrived is kept (see above).
        body.take_while(move |item| {
            let go = item.is_ok();
            if !go {
                cut.store(true, Ordering::SeqCst);
            }
            futures::future::ready(go)
        })
        .map(move |item| {
            let chunk = item.unwrap_or_default();
            hasher
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .update(&chunk);
            Ok::<_, std::io::Error>(chunk)
        })
    };
    let too_large = |e| match e {
        ferry_store::Error::TooLarge { .. } => Error::TooLarge(format!(
            "the body is longer than the {remaining} bytes the upload has left (its length)"
        )),
        other => other.into(),
    };
    let checksum_failed = || {
        Error::ChecksumMismatch(
            "the body does not match its checksum; nothing of it was kept".into(),
        )
    };
    let matches = |hasher: &std::sync::Mutex<Hasher>| {
        let digest = hasher
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .finish();
        checksum.as_ref().is_none_or(|checksum| {
            !cut.load(Ordering::SeqCst) && digest.as_deref() == Some(checksum.digest.as_slice())
        })
    };
    let appended = match app.blobs.gathering(id, LOCK_WAIT).await? {
        Gather::Locked => {
            return Err(Error::OffsetMismatch(format!(
                "another request has been writing to this upload for {} s: ask with HEAD and \
                 continue from its offset",
                LOCK_WAIT.as_secs()
            )));
        }
        // A local store: the bytes go into the upload's own file (see ferry_store's
        // `gathering`), held by this request until the new offset is recorded.
        Gather::InPlace(mut gathering) => {
            // Asked again under the lock: a request that held it may have moved the offset on
            // meanwhile, and writing at the offset read before would cut off what it recorded.
            let now = status(app, principal, id).await?;
            if now.offset != offset {
                return Err(Error::OffsetMismatch(format!(
                    "another request moved the upload on to {} meanwhile: ask with HEAD and \
                     continue from there",
                    now.offset
                )));
            }
            let size = gathering
                .write_at(offset, kept, remaining)
                .await
                .map_err(too_large)?;
            if !matches(&hasher) {
                gathering.truncate(offset).await?;
                return Err(checksum_failed());
            }
            if size == 0 {
                return Ok(current);
            }
            let appended = app.db.append_resumable_part(id, offset, size, None).await?;
            if appended == Appended::Missing {
                // Terminated meanwhile: what this request wrote goes with it.
                drop(gathering);
                let _ = app.blobs.discard_gathered(id).await;
            }
            appended
        }
        // An object store: the bytes become a blob of their own, a part of the upload.
        Gather::Parts => {
            let blob = app.blobs.write(kept, remaining).await.map_err(too_large)?;
            let whole = matches(&hasher);
            if !whole || blob.size == 0 {
                let _ = app.blobs.delete(&blob.key).await;
                return if whole {
                    Ok(current)
                } else {
                    Err(checksum_failed())
                };
            }
            let appended = app
                .db
                .append_resumable_part(id, offset, blob.size, Some(&blob.key))
                .await?;
            if appended != Appended::At(offset + blob.size) {
                let _ = app.blobs.delete(&blob.key).await;
            }
            appended
        }
    };
    match appended {
        Appended::At(new) => current.offset = new,
        Appended::Conflict => {
            return Err(Error::OffsetMismatch(
                "another request moved the upload on meanwhile: ask with HEAD and continue".into(),
            ));
        }
        Appended::Missing => return Err(Error::not_found(format!("no resumable upload '{id}'"))),
    }
    Ok(current)
}

/// Makes a complete upload what its target says, once, and keeps how it ended with it:
/// `None` when another request has it in hand (or made it already). It runs on a task of its
/// own, so a client that leaves cannot stop it half done. A refusal by the target's rules is
/// an answer like any other ([`Finished::Refused`]); an error here is the store's own.
pub async fn finish(app: &App, principal: &Principal, id: &str) -> Result<Option<Finished>> {
    let (app, principal, id) = (app.clone(), principal.clone(), id.to_owned());
    let task = tokio::spawn(async move {
        let finished = match make(&app, &principal, &id).await {
            Ok(None) => return Ok(None),
            Ok(Some(finished)) => finished,
            Err(e) => Finished::Refused {
                code: e.code(),
                message: e.to_string(),
            },
        };
        let kept = serde_json::to_string(&finished)
            .map_err(|e| Error::internal(format!("an upload's answer could not be kept: {e}")))?;
        let parts = app.db.finish_resumable(&id, &kept).await?;
        discard(&app, &id, parts).await;
        Ok(Some(finished))
    });
    task.await
        .map_err(|e| Error::internal(format!("finishing an upload failed: {e}")))?
}

/// What [`finish`] makes of the upload's bytes: `None` when another request has it in hand.
async fn make(app: &App, principal: &Principal, id: &str) -> Result<Option<Finished>> {
    let status = status(app, principal, id).await?;
    let stale = Timestamp(Timestamp::now().millis() - FINISHING_STALE.as_millis() as i64);
    if !status.needs_finishing() || !app.db.claim_resumable(id, stale).await? {
        return Ok(None);
    }
    let spooled = match app.blobs.gathered(id, status.length).await? {
        Some(spooled) => spooled,
        None => {
            // The parts, read back one after another into one spool.
            let parts = app.db.resumable_parts(id).await?;
            let blobs = app.blobs.clone();
            let body = futures::stream::iter(parts)
                .then(move |part| {
                    let blobs = blobs.clone();
                    async move { blobs.read(&part.blob_key, None).await }
                })
                .map(|read| match read {
                    Ok(read) => read.stream,
                    Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
                })
                .flatten();
            app.blobs.spool(body, status.length).await?
        }
    };
    if spooled.size() != status.length {
        return Err(Error::internal(format!(
            "the upload's parts hold {} bytes, not the {} it recorded",
            spooled.size(),
            status.length
        )));
    }
    let finished = match status.target {
        Target::ThreadUpload {
            thread_id,
            filename,
        } => {
            let name =
                ValidPath::parse(&filename).map_err(|e| Error::InvalidPath(e.to_string()))?;
            let mut receiver = crate::threads::uploads::receive(app, principal, &thread_id).await?;
            receiver.adopt(name, spooled)?;
            Finished::ThreadUpload {
                uploads: receiver.keep().await?,
            }
        }
        Target::SpaceFile {
            space,
            path,
            content_type,
            create_only,
        } => {
            let space = SpaceName::parse(&space).map_err(|e| Error::InvalidPath(e.to_string()))?;
            let path = ValidPath::parse(&path).map_err(|e| Error::InvalidPath(e.to_string()))?;
            let condition = if create_only {
                WriteCondition::CreateOnly
            } else {
                WriteCondition::None
            };
            let written = crate::files::spaces::write_spooled(
                app,
                principal,
                &space,
                &path,
                FileMeta::typed(&content_type),
                &condition,
                spooled,
            )
            .await?;
            Finished::SpaceFile {
                written: crate::files::Written::of_space(written),
            }
        }
    };
    Ok(Some(finished))
}

/// Removes what an upload kept of its bytes: its own file (a local store; finishing linked it
/// into the blob store) and its parts (an object store).
async fn discard(app: &App, id: &str, parts: Vec<String>) {
    let _ = app.blobs.discard_gathered(id).await;
    for key in parts {
        let _ = app.blobs.delete(&key).await;
    }
}

/// How a finished upload ended, as [`finish`] kept it; `None` while it is unfinished.
pub async fn answer(app: &App, principal: &Principal, id: &str) -> Result<Option<Finished>> {
    status(app, principal, id).await?;
    let Some(kept) = app.db.resumable(id).await?.and_then(|u| u.result) else {
        return Ok(None);
    };
    serde_json::from_str(&kept).map(Some).map_err(|_| {
        // Only a version before this record's shape kept anything else; its upload was
        // finished and its file is where the upload said.
        Error::internal(format!(
            "upload '{id}' was finished by an earlier version of ferry, whose answer cannot be read: look for the file at its target"
        ))
    })
}

/// Ends an upload and removes what it kept (termination).
pub async fn terminate(app: &App, principal: &Principal, id: &str) -> Result<()> {
    status(app, principal, id).await?;
    let parts = app
        .db
        .delete_resumable(id)
        .await?
        .ok_or_else(|| Error::not_found(format!("no resumable upload '{id}'")))?;
    discard(app, id, parts).await;
    Ok(())
}

/// Removes uploads whose time ran out, with their parts; answers how many went.
pub async fn sweep_expired(app: &App) -> Result<u64> {
    let mut removed = 0;
    loop {
        let expired = app.db.expired_resumables(Timestamp::now(), 100).await?;
        if expired.is_empty() {
            // Files a crash left behind between removing an upload and removing its file.
            app.blobs
                .sweep_gathered(app.limits.resumable_expiry)
                .await
                .map_err(Error::internal)?;
            return Ok(removed);
        }
        for id in expired {
            if let Some(parts) = app.db.delete_resumable(&id).await? {
                removed += 1;
                discard(app, &id, parts).await;
            }
        }
    }
}

/// The running digest of a `PATCH` body that names a checksum.
enum Hasher {
    None,
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl Hasher {
    fn of(checksum: Option<&Checksum>) -> Hasher {
        match checksum.map(|c| c.algorithm) {
            None => Hasher::None,
            Some(ChecksumAlgorithm::Sha1) => Hasher::Sha1(<sha1::Sha1 as sha1::Digest>::new()),
            Some(ChecksumAlgorithm::Sha256) => {
                Hasher::Sha256(<sha2::Sha256 as sha2::Digest>::new())
            }
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::None => {}
            Hasher::Sha1(h) => sha1::Digest::update(h, bytes),
            Hasher::Sha256(h) => sha2::Digest::update(h, bytes),
        }
    }

    fn finish(&mut self) -> Option<Vec<u8>> {
        match std::mem::replace(self, Hasher::None) {
            Hasher::None => None,
            Hasher::Sha1(h) => Some(sha1::Digest::finalize(h).to_vec()),
            Hasher::Sha256(h) => Some(sha2::Digest::finalize(h).to_vec()),
        }
    }
}

#[cfg(test)]
mod tests;
