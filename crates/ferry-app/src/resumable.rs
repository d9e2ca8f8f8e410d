//! Why one file: the tus upload's life — create, append, finish,
//! expire — shares one state record and one lock discipline, which are easier to hold correct read
//! in one place than across files; its tests are the lower third.
//!
//! Resumable uploads (docs/reference/resumable-uploads.md): the tus 1.0 protocol's rules,
//! whatever door speaks it. An upload names its target when it is created (a thread upload or
//! a space file), and every rule of that target is checked then, before any byte is kept: who
//! may write there, the name or path, the content type, the size limit. Each `PATCH` keeps
//! what it brings: on a local store in the upload's own file, at its offset (one write of each
//! byte; ferry_store's `gathering`), on an object store as a part, a blob of its own. When the
//! last byte is in, that file, or the parts read back in order into a spool, is given to the
//! target's own use case (`uploads::Receiver::adopt` or `spaces::write_spooled`), so a
//! finished resumable upload is exactly a plain one.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use ferry_core::{SpaceName, Timestamp, ValidPath};
use ferry_store::blobs::Gather;
use ferry_store::resumable::{Appended, ResumableState, ResumableUpload};
use ferry_store::spaces::{FileMeta, WriteCondition};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use crate::App;
use crate::error::{Error, Result};
use crate::principal::Principal;

/// How long an unfinished upload is kept, unless the settings say otherwise.
pub const DEFAULT_EXPIRY: Duration = Duration::from_secs(24 * 3600);
/// Unfinished uploads one principal may hold at once, unless the settings say otherwise.
pub const DEFAULT_MAX_UNFINISHED: u64 = 20;
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
    /// The `Upload-Metadata` header it was created with.
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

/// What finishing made.
#[derive(Debug)]
pub enum Finished {
    ThreadUpload(Vec<crate::views::UploadView>),
    SpaceFile(crate::spaces::Written),
}

/// A checksum a `PATCH` names for its bytes (`Upload-Checksum: <algorithm> <base64>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksum {
    algorithm: Algorithm,
    digest: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Sha1,
    Sha256,
}

/// The checksum algorithms a `PATCH` may name, as `Tus-Checksum-Algorithm` lists them.
pub const CHECKSUM_ALGORITHMS: &str = "sha1,sha256";

impl Checksum {
    pub fn parse(header: &str) -> Result<Checksum> {
        let bad = || {
            Error::invalid_request(format!(
                "Upload-Checksum must be '<algorithm> <base64 digest>' with an algorithm of \
                 {CHECKSUM_ALGORITHMS}"
            ))
        };
        let (name, digest) = header.trim().split_once(' ').ok_or_else(bad)?;
        let algorithm = match name.to_ascii_lowercase().as_str() {
            "sha1" => Algorithm::Sha1,
            "sha256" => Algorithm::Sha256,
            _ => return Err(bad()),
        };
        let digest = STANDARD.decode(digest.trim()).map_err(|_| bad())?;
        Ok(Checksum { algorithm, digest })
    }
}

/// The longest `Upload-Metadata` kept: it names a target and a type, and every `HEAD` answers
/// it again, so it stays small enough for any client to read back.
pub const MAX_METADATA_BYTES: usize = 4096;

/// Reads `Upload-Metadata`: comma-separated pairs of a key and its base64 value (the value may
/// be left out). A key given twice, a value that is not base64 of UTF-8, or a header longer
/// than [`MAX_METADATA_BYTES`] is refused.
pub fn parse_metadata(header: &str) -> Result<HashMap<String, String>> {
    if header.len() > MAX_METADATA_BYTES {
        return Err(Error::invalid_request(format!(
            "Upload-Metadata is {} bytes: at most {MAX_METADATA_BYTES} are kept",
            header.len()
        )));
    }
    let mut pairs = HashMap::new();
    for pair in header.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = match pair.split_once(' ') {
            Some((key, value)) => (key, value.trim()),
            None => (pair, ""),
        };
        let value = STANDARD
            .decode(value)
            .ok()
            .and_then(|v| String::from_utf8(v).ok())
            .ok_or_else(|| {
                Error::invalid_request(format!(
                    "Upload-Metadata: the value of '{key}' is not base64 of UTF-8 text"
                ))
            })?;
        if pairs.insert(key.to_owned(), value).is_some() {
            return Err(Error::invalid_request(format!(
                "Upload-Metadata names '{key}' twice"
            )));
        }
    }
    Ok(pairs)
}

/// The target a creation's metadata names, checked as its own route would check it: who may
/// write there, the file name or path, the content type. Answers it with its size limit.
async fn target_of(
    app: &App,
    principal: &Principal,
    metadata: &HashMap<String, String>,
) -> Result<(Target, u64)> {
    let get = |key: &str| {
        metadata
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    match (get("threadId"), get("spaceName")) {
        (Some(thread_id), None) => {
            let filename = get("filename").ok_or_else(|| {
                Error::invalid_request("Upload-Metadata: a thread upload needs 'filename'")
            })?;
            let name = ferry_core::path::upload_file_name(filename)
                .map_err(|e| Error::InvalidPath(e.to_string()))?;
            let receiver = crate::uploads::receive(app, principal, thread_id).await?;
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
                Error::invalid_request("Upload-Metadata: a space file needs 'path'")
            })?;
            let path = ValidPath::parse(path).map_err(|e| Error::InvalidPath(e.to_string()))?;
            let content_type = get("contentType").ok_or_else(|| {
                Error::invalid_request("Upload-Metadata: a space file needs 'contentType'")
            })?;
            let content_type = ferry_core::content_type::check(content_type)?;
            let create_only = match get("ifNoneMatch") {
                None => false,
                Some("*") => true,
                Some(_) => {
                    return Err(Error::invalid_request(
                        "Upload-Metadata: 'ifNoneMatch' may only be '*'",
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
            "Upload-Metadata names both a thread ('threadId') and a space ('spaceName'); name one",
        )),
        (None, None) => Err(Error::invalid_request(
            "Upload-Metadata must name the target: 'threadId' and 'filename' for a thread \
             upload, or 'spaceName', 'path' and 'contentType' for a space file",
        )),
    }
}

/// Creates an upload of `length` bytes for the target its metadata names.
pub async fn create(
    app: &App,
    principal: &Principal,
    length: u64,
    metadata_header: &str,
) -> Result<Status> {
    let metadata = parse_metadata(metadata_header)?;
    let (target, limit) = target_of(app, principal, &metadata).await?;
    if length > limit {
        return Err(Error::TooLarge(format!(
            "Upload-Length is {length} bytes, over the limit of {} for this target",
            crate::describe_bytes(limit)
        )));
    }
    let now = Timestamp::now();
    let upload = ResumableUpload {
        id: uuid::Uuid::now_v7().to_string(),
        made_by: principal.identity_key(),
        target: serde_json::to_string(&target).map_err(Error::internal)?,
        length,
        offset: 0,
        metadata: metadata_header.to_owned(),
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
            "the upload is complete at {} bytes; Upload-Offset {offset} does not match",
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
            "the body is longer than the {remaining} bytes the upload has left (Upload-Length)"
        )),
        other => other.into(),
    };
    let checksum_failed = || {
        Error::ChecksumMismatch(
            "the body does not match Upload-Checksum; nothing of it was kept".into(),
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

/// Makes a complete upload what its target says, once: `None` when another request has it
/// in hand (or made it already). The caller keeps the answer with [`keep_answer`].
pub async fn finish(app: &App, principal: &Principal, id: &str) -> Result<Option<Finished>> {
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
            let mut receiver = crate::uploads::receive(app, principal, &thread_id).await?;
            receiver.adopt(name, spooled)?;
            Finished::ThreadUpload(receiver.keep().await?)
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
            let written = crate::spaces::write_spooled(
                app,
                principal,
                &space,
                &path,
                FileMeta::typed(&content_type),
                &condition,
                spooled,
            )
            .await?;
            Finished::SpaceFile(written)
        }
    };
    Ok(Some(finished))
}

/// Keeps a finished upload's answer (what the plain route would have answered, or its error)
/// and removes its parts.
pub async fn keep_answer(app: &App, id: &str, answer: &str) -> Result<()> {
    let parts = app.db.finish_resumable(id, answer).await?;
    discard(app, id, parts).await;
    Ok(())
}

/// Removes what an upload kept of its bytes: its own file (a local store; finishing linked it
/// into the blob store) and its parts (an object store).
async fn discard(app: &App, id: &str, parts: Vec<String>) {
    let _ = app.blobs.discard_gathered(id).await;
    for key in parts {
        let _ = app.blobs.delete(&key).await;
    }
}

/// The answer a finished upload keeps.
pub async fn answer(app: &App, principal: &Principal, id: &str) -> Result<Option<String>> {
    status(app, principal, id).await?;
    Ok(app.db.resumable(id).await?.and_then(|u| u.result))
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
            Some(Algorithm::Sha1) => Hasher::Sha1(<sha1::Sha1 as sha1::Digest>::new()),
            Some(Algorithm::Sha256) => Hasher::Sha256(<sha2::Sha256 as sha2::Digest>::new()),
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
mod tests {
    use super::*;
    use crate::testing::{app, app_on_object_store, thread_of, user};
    use sha2::Digest as _;

    fn chunk(bytes: &'static [u8]) -> impl Stream<Item = std::io::Result<Bytes>> + Send {
        futures::stream::iter([Ok(Bytes::from_static(bytes))])
    }

    fn metadata(pairs: &[(&str, &str)]) -> String {
        let pairs: Vec<_> = pairs
            .iter()
            .map(|(key, value)| format!("{key} {}", STANDARD.encode(value)))
            .collect();
        pairs.join(",")
    }

    /// A test app whose blobs are in an object store, or in a local folder.
    async fn app_on(object_store: bool) -> (App, tempfile::TempDir) {
        if object_store {
            app_on_object_store().await
        } else {
            app().await
        }
    }

    /// The `Upload-Metadata` of a text file at `path` in the space `notes`.
    fn space_file(path: &str) -> String {
        metadata(&[
            ("spaceName", "notes"),
            ("path", path),
            ("contentType", "text/plain"),
        ])
    }

    fn sha256(bytes: &[u8]) -> Vec<u8> {
        sha2::Sha256::digest(bytes).to_vec()
    }

    fn checksum_of(bytes: &[u8]) -> Option<Checksum> {
        Some(Checksum::parse(&format!("sha256 {}", STANDARD.encode(sha256(bytes)))).unwrap())
    }

    async fn blob_bytes(app: &App, key: &str) -> Vec<u8> {
        let read = app.blobs.read(key, None).await.unwrap();
        let chunks: Vec<_> = read.stream.collect().await;
        chunks
            .into_iter()
            .flat_map(|c| c.unwrap().to_vec())
            .collect()
    }

    /// A space file in parts, with every refusal a `PATCH` can meet on the way, made once.
    async fn a_space_file_in_parts_is_the_plain_write(app: &App) {
        let alice = user("alice");
        let header = space_file("drafts/tea.txt");
        let id = create(app, &alice, 11, &header).await.unwrap().id;

        let wrong = append(app, &alice, &id, 0, checksum_of(b"other"), chunk(b"hello")).await;
        assert!(
            matches!(wrong, Err(Error::ChecksumMismatch(_))),
            "{wrong:?}"
        );
        assert_eq!(
            status(app, &alice, &id).await.unwrap().offset,
            0,
            "nothing kept"
        );
        let first = append(app, &alice, &id, 0, checksum_of(b"hello"), chunk(b"hello"));
        assert_eq!(first.await.unwrap().offset, 5);
        let stale = append(app, &alice, &id, 0, None, chunk(b"x")).await;
        assert!(matches!(stale, Err(Error::OffsetMismatch(_))), "{stale:?}");
        let other = append(app, &user("mallory"), &id, 5, None, chunk(b"x")).await;
        assert!(matches!(other, Err(Error::NotFound(_))), "{other:?}");
        let long = append(app, &alice, &id, 5, None, chunk(b" world, and more")).await;
        assert!(matches!(long, Err(Error::TooLarge(_))), "{long:?}");
        let last = append(app, &alice, &id, 5, None, chunk(b" world"))
            .await
            .unwrap();
        assert!(last.needs_finishing());

        let Some(Finished::SpaceFile(written)) = finish(app, &alice, &id).await.unwrap() else {
            panic!("a space file");
        };
        assert!(written.created);
        assert_eq!(written.file.size, 11);
        assert_eq!(written.file.sha256, hex::encode(sha256(b"hello world")));
        assert_eq!(
            blob_bytes(app, &written.file.blob_key).await,
            b"hello world"
        );
        assert!(
            finish(app, &alice, &id).await.unwrap().is_none(),
            "finished once"
        );
        keep_answer(app, &id, "{}").await.unwrap();
        assert!(app.db.resumable_parts(&id).await.unwrap().is_empty());
        assert_eq!(
            answer(app, &alice, &id).await.unwrap().as_deref(),
            Some("{}")
        );
    }

    #[tokio::test]
    async fn a_space_file_in_parts_on_a_local_store() {
        let (app, dir) = app().await;
        a_space_file_in_parts_is_the_plain_write(&app).await;
        let gathering = dir.path().join("blobs").join(".resumable");
        assert_eq!(
            std::fs::read_dir(gathering).unwrap().count(),
            0,
            "removed once kept"
        );
    }

    #[tokio::test]
    async fn a_space_file_in_parts_on_an_object_store() {
        let (app, _dir) = app_on_object_store().await;
        a_space_file_in_parts_is_the_plain_write(&app).await;
    }

    #[tokio::test]
    async fn a_thread_upload_lands_in_the_sandbox_like_a_plain_one() {
        for object_store in [false, true] {
            let (app, _dir) = app_on(object_store).await;
            let (thread, _) = thread_of(&app, "alice").await;
            let alice = user("alice");
            let header = metadata(&[("threadId", &thread), ("filename", "notes.txt")]);
            let id = create(&app, &alice, 4, &header).await.unwrap().id;
            append(&app, &alice, &id, 0, None, chunk(b"te"))
                .await
                .unwrap();
            append(&app, &alice, &id, 2, None, chunk(b"a!"))
                .await
                .unwrap();
            let Some(Finished::ThreadUpload(views)) = finish(&app, &alice, &id).await.unwrap()
            else {
                panic!("a thread upload");
            };
            assert_eq!(views[0].size, 4);
            assert_eq!(views[0].sha256, hex::encode(sha256(b"tea!")));
            assert_eq!(views[0].sandbox_path, "/sandbox/user_uploads/notes.txt");
        }
    }

    #[tokio::test]
    async fn a_request_that_waited_for_another_never_writes_at_a_stale_offset() {
        let (app, _dir) = app().await;
        let alice = user("alice");
        let header = space_file("race.txt");
        let id = create(&app, &alice, 8, &header).await.unwrap().id;
        // Another request holds the upload's file while this one arrives at offset 0.
        let Gather::InPlace(mut holder) = app.blobs.gathering(&id, LOCK_WAIT).await.unwrap() else {
            panic!("a local store gathers in place");
        };
        let late = {
            let (app, alice, id) = (app.clone(), alice.clone(), id.clone());
            tokio::spawn(async move { append(&app, &alice, &id, 0, None, chunk(b"XY")).await })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!late.is_finished(), "it waits for the lock");
        holder.write_at(0, chunk(b"abcd"), 8).await.unwrap();
        let recorded = app.db.append_resumable_part(&id, 0, 4, None).await.unwrap();
        assert_eq!(recorded, Appended::At(4));
        drop(holder);
        let refused = late.await.unwrap();
        assert!(
            matches!(refused, Err(Error::OffsetMismatch(_))),
            "{refused:?}"
        );
        append(&app, &alice, &id, 4, None, chunk(b"efgh"))
            .await
            .unwrap();
        let Some(Finished::SpaceFile(written)) = finish(&app, &alice, &id).await.unwrap() else {
            panic!("a space file");
        };
        assert_eq!(blob_bytes(&app, &written.file.blob_key).await, b"abcdefgh");
    }

    #[tokio::test]
    async fn termination_removes_what_was_kept() {
        for object_store in [false, true] {
            let (app, dir) = app_on(object_store).await;
            let alice = user("alice");
            let header = space_file("gone.txt");
            let id = create(&app, &alice, 10, &header).await.unwrap().id;
            append(&app, &alice, &id, 0, None, chunk(b"half"))
                .await
                .unwrap();
            let parts = app.db.resumable_parts(&id).await.unwrap();
            assert_eq!(parts.len(), usize::from(object_store));
            terminate(&app, &alice, &id).await.unwrap();
            assert!(matches!(
                status(&app, &alice, &id).await,
                Err(Error::NotFound(_))
            ));
            for part in parts {
                assert!(app.blobs.read(&part.blob_key, None).await.is_err());
            }
            assert!(!dir.path().join("blobs/.resumable").join(&id).exists());
        }
    }
}
