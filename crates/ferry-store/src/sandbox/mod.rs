//! Thread sandboxes: a local folder per thread reached only through a jailed directory handle,
//! or, when several nodes share one deployment, files kept in the blob store with their
//! metadata in the database (the reserved space `.sandbox` owned by the thread).
//!
//! Locally, every access goes through a `cap_std::fs::Dir` opened on the sandbox root. cap-std resolves
//! each path beneath that handle in the same call that opens it (openat2 with
//! `RESOLVE_BENEATH` where the kernel has it), so a symlink that leaves the sandbox, a `..`,
//! or an absolute symlink target fails inside the open itself — there is no check-then-open
//! window to race. What cap-std cannot see (a hard link to a file outside) is checked on the
//! opened descriptor: a regular file with more than one link is refused.
//!
//! An agent shares its sandbox folder with the server and may change it while the server works
//! in it. Nothing the server does there may wait on the agent: files are opened `O_NONBLOCK`
//! (a FIFO swapped in for a file does not wait for a writer), listings read metadata with
//! `fstatat` without opening anything, the state of a written file comes from the descriptor
//! that wrote it, and every operation on a thread's folder holds one of a few permits of that
//! thread ([`SandboxLimits`]), so even a file system call that hangs ties up a bounded number
//! of the server's blocking threads, all of them the same thread's.
//!
//! Why one file: it is the one face of both kinds of sandbox: each operation is one match over the
//! local folder and the stored records, behind the rules both keep (`skills/` read-only, numbered
//! names, one opened-file type), with the per-thread permits and the meaning of the jail's errors
//! that every local module uses; each kind's own work, listings and trees are modules of their own.

use bytes::Bytes;
use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use ferry_core::path::SANDBOX_LAYOUT;
use ferry_core::{SpaceName, Timestamp, ValidPath};
use futures::{Stream, StreamExt};
use std::collections::HashMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::Semaphore;

use crate::Error;
use crate::blobs::{BlobRead, Blobs, StoredBlob};
use crate::db::Db;
use content_tag::FileState;
use ferry_core::write::{FileMeta, WriteCondition};

mod bulk;
mod content_tag;
mod listing;
mod local;
mod skills;
mod stored;
mod tree;
pub use listing::{Listing, Unaddressable, Why};
use listing::{Tags, addressable_name, walk};
use local::{LocalSandbox, folder, listed_tag, lock_commits, open_checked};
use skills::{copy_tree, make_read_only, make_writable, read_only_dir, skill_files};
use stored::StoredSandbox;
pub use tree::{Moved, PathKind, changeable};

/// Where API writes are assembled before their atomic rename into place; not listed. Its
/// handle also carries the sandbox's commit lock (`flock`), so that checking a write's
/// condition and renaming the file into place happen as one step.
const TMP_DIR: &str = ".ferry-tmp";

/// Entries a listing reads at most; a folder with more is refused rather than listed forever.
pub(crate) const MAX_LISTED: usize = 100_000;

/// The longest path the API can name; deeper files cannot be addressed, so are not listed.
const MAX_PATH_BYTES: usize = 1024;

/// How much of the server one thread's local sandbox may hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxLimits {
    /// File system operations on one thread's folder running at once; more wait for a turn.
    pub concurrent_ops: usize,
    /// How long an operation may wait for its turn and then run before its request is
    /// answered `Busy` (an operation the kernel never finishes keeps its permit).
    pub op_timeout: Duration,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            concurrent_ops: 4,
            op_timeout: Duration::from_secs(30),
        }
    }
}

/// The permits of each thread's local sandbox, made on first use and forgotten when no
/// operation holds them.
#[derive(Debug, Default)]
pub struct Gates {
    by_thread: Mutex<HashMap<String, Weak<Semaphore>>>,
}

impl Gates {
    fn of(&self, thread_id: &str, permits: usize) -> Arc<Semaphore> {
        let mut map = self.by_thread.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(gate) = map.get(thread_id).and_then(Weak::upgrade) {
            return gate;
        }
        if map.len() >= 1024 {
            map.retain(|_, gate| gate.strong_count() > 0);
        }
        let gate = Arc::new(Semaphore::new(permits.max(1)));
        map.insert(thread_id.to_owned(), Arc::downgrade(&gate));
        gate
    }
}

/// What an I/O error inside the jail means: cap-std and the kernel report an escape, a missing
/// file and a taken path as I/O errors, and each becomes the refusal it is. Every I/O failure
/// inside a sandbox goes through here (never through a blanket conversion).
fn jailed(e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::NotFound => Error::NotFound,
        // cap-std reports an escape as PermissionDenied ("a path led outside of the
        // filesystem"); the kernel's RESOLVE_BENEATH says EXDEV; a symlink loop is ELOOP.
        io::ErrorKind::PermissionDenied => Error::Escapes,
        io::ErrorKind::IsADirectory => Error::IsDir,
        io::ErrorKind::AlreadyExists => Error::AlreadyExists,
        _ => match e.raw_os_error() {
            Some(libc::EXDEV | libc::ELOOP) => Error::Escapes,
            Some(libc::ENOTDIR) => Error::NotFound,
            _ => Error::Io(e),
        },
    }
}

/// A file or folder in a sandbox listing; `path` is relative to `/sandbox/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxEntry {
    pub path: String,
    pub is_dir: bool,
    pub size: u64,
    pub modified: Timestamp,
    pub etag: String,
}

/// Where the sandboxes of a deployment live.
#[derive(Debug, Clone)]
pub enum Sandboxes {
    /// One folder per thread under a root on this host (or on a file system every node
    /// mounts): agents on the host may work in it directly.
    Local {
        root: PathBuf,
        limits: SandboxLimits,
        gates: Arc<Gates>,
    },
    /// Files in the blob store, metadata in the database: reachable from every node.
    Stored { db: Db, blobs: Blobs },
}

impl Sandboxes {
    pub fn local(root: impl Into<PathBuf>, limits: SandboxLimits) -> io::Result<Sandboxes> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        Ok(Sandboxes::Local {
            root,
            limits,
            gates: Arc::default(),
        })
    }

    pub fn stored(db: Db, blobs: Blobs) -> Sandboxes {
        Sandboxes::Stored { db, blobs }
    }

    /// The sandbox's folder on this host, when sandboxes are folders (told to agents that run
    /// here); `None` when they live in the blob store.
    pub fn host_path(&self, thread_id: &str) -> Option<PathBuf> {
        match self {
            Sandboxes::Local { root, .. } => Some(root.join(thread_id)),
            Sandboxes::Stored { .. } => None,
        }
    }

    /// Creates a thread's sandbox with the standard layout, filling `skills/` from `skills`.
    pub async fn create(&self, thread_id: &str, skills: Option<&Path>) -> Result<(), Error> {
        match self {
            Sandboxes::Local { root, .. } => {
                let path = root.join(thread_id);
                let skills = skills.map(Path::to_path_buf);
                tokio::task::spawn_blocking(move || {
                    std::fs::create_dir_all(&path)?;
                    let dir = Dir::open_ambient_dir(&path, cap_std::ambient_authority())?;
                    for folder in SANDBOX_LAYOUT {
                        dir.create_dir_all(folder)?;
                    }
                    dir.create_dir_all(TMP_DIR)?;
                    if let Some(skills) = skills {
                        let target = dir.open_dir("skills")?;
                        copy_tree(&skills, &target)?;
                        make_read_only(&target)?;
                        dir.set_permissions("skills", read_only_dir())?;
                    }
                    Ok::<_, io::Error>(())
                })
                .await
                .map_err(|e| Error::Io(io::Error::other(e)))?
                .map_err(Error::Io)
            }
            Sandboxes::Stored { db, blobs } => {
                let space = SpaceName::sandbox();
                db.space_mkdirs(thread_id, &space, &SANDBOX_LAYOUT).await?;
                if let Some(skills) = skills {
                    for (relative, host) in skill_files(skills).map_err(Error::Io)? {
                        let path = ValidPath::parse(&format!("skills/{relative}"))
                            .map_err(|e| Error::Config(format!("skill file '{relative}': {e}")))?;
                        let file = tokio::fs::File::open(&host).await.map_err(Error::Io)?;
                        let stream = tokio_util::io::ReaderStream::new(file);
                        let blob = blobs.write(stream, u64::MAX).await?;
                        let content_type = ferry_core::mime::mime_for_name(&relative);
                        db.space_put(
                            thread_id,
                            &space,
                            &path,
                            &blob,
                            FileMeta::typed(&content_type),
                            &WriteCondition::None,
                        )
                        .await?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Removes a thread's local sandbox folder and everything in it (its read-only `skills/`
    /// included; symlinks are removed, never followed). A stored sandbox is records, which go
    /// with the thread's own (`Db::delete_thread`). A folder already gone is not an error.
    pub async fn remove(&self, thread_id: &str) -> io::Result<()> {
        let Sandboxes::Local { root, .. } = self else {
            return Ok(());
        };
        let path = root.join(thread_id);
        tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&path) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                make_writable(&path)?;
                std::fs::remove_dir_all(&path)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        })
        .await
        .map_err(io::Error::other)?
    }

    /// Opens a thread's sandbox.
    pub async fn open(&self, thread_id: &str) -> Result<Sandbox, Error> {
        match self {
            Sandboxes::Local {
                root,
                limits,
                gates,
            } => {
                let path = root.join(thread_id);
                let gate = gates.of(thread_id, limits.concurrent_ops);
                let dir = run_gated(&gate, limits.op_timeout, move || {
                    Dir::open_ambient_dir(path, cap_std::ambient_authority()).map_err(jailed)
                })
                .await?;
                Ok(Sandbox::Local(LocalSandbox {
                    dir: Arc::new(dir),
                    gate,
                    op_timeout: limits.op_timeout,
                }))
            }
            Sandboxes::Stored { db, blobs } => Ok(Sandbox::Stored(StoredSandbox {
                db: db.clone(),
                blobs: blobs.clone(),
                thread_id: thread_id.to_owned(),
            })),
        }
    }
}

impl Sandboxes {
    /// Removes what writes killed midway (a crash, `kill -9`) left in each local sandbox's
    /// temporary folder, once older than `grace`; returns how many files went. Only names this
    /// server makes (UUIDv7, which carry their creation time) are touched, and a temporary
    /// folder that is not a plain folder is left alone.
    pub async fn sweep_temporary_files(&self, grace: Duration) -> io::Result<u64> {
        let Sandboxes::Local { root, .. } = self else {
            return Ok(0);
        };
        let root = root.clone();
        tokio::task::spawn_blocking(move || {
            let cutoff = crate::db::now_millis() - grace.as_millis() as i64;
            let mut removed = 0;
            for thread in std::fs::read_dir(&root)? {
                let thread = thread?;
                if !thread.file_type()?.is_dir() {
                    continue;
                }
                let Ok(sandbox) =
                    Dir::open_ambient_dir(thread.path(), cap_std::ambient_authority())
                else {
                    continue;
                };
                let Ok(tmp) = sandbox.open_dir_nofollow(TMP_DIR) else {
                    continue;
                };
                for entry in tmp.entries()? {
                    let entry = entry?;
                    let Ok(name) = entry.file_name().into_string() else {
                        continue;
                    };
                    let stale = crate::sweep::key_millis(&name).is_some_and(|t| t <= cutoff);
                    if stale && tmp.remove_file(&name).is_ok() {
                        removed += 1;
                    }
                }
            }
            Ok(removed)
        })
        .await
        .map_err(io::Error::other)?
    }
}

/// Runs `work` on the blocking pool while holding one of `gate`'s permits. The permit goes with
/// the work and is given back only when the work ends, so work the kernel never finishes keeps
/// its permit; the caller is answered [`Error::Busy`] once `timeout` has passed,
/// whether waiting for a permit or for the work.
async fn run_gated<T: Send + 'static>(
    gate: &Arc<Semaphore>,
    timeout: Duration,
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let deadline = tokio::time::Instant::now() + timeout;
    let permit = tokio::time::timeout_at(deadline, gate.clone().acquire_owned())
        .await
        .map_err(|_| Error::Busy)?
        .map_err(|_| Error::Busy)?;
    let task = tokio::task::spawn_blocking(move || {
        let result = work();
        drop(permit);
        result
    });
    match tokio::time::timeout_at(deadline, task).await {
        Ok(joined) => joined.map_err(|e| Error::Io(io::Error::other(e)))?,
        Err(_) => Err(Error::Busy),
    }
}

/// How much of a file [`copy_contents`] copies before it gives the source's pages back.
const COPY_CHUNK: u64 = 8 << 20;

/// Copies `from` into `to`, in the kernel where the file system can (`copy_file_range`, std's
/// `io::copy` between files), a chunk at a time. With `release_source`, each chunk of the
/// source is dropped from the page cache once copied (the source must be clean, so that this
/// frees its pages instead of starting their writeback). That is for an upload's blob: it is
/// durable and read again only when the original is downloaded, while its sandbox copy is what
/// the agent reads next, so the bytes stay cached once instead of twice; and the copy's pages
/// are the ones just freed rather than memory the machine has not touched yet, which a virtual
/// machine's host must first provide (up to 2 s per GiB measured; bench/NOTES.md §1).
fn copy_contents(from: &std::fs::File, to: &std::fs::File, release_source: bool) -> io::Result<()> {
    use io::Read;
    let mut copied = 0;
    loop {
        let n = io::copy(&mut from.take(COPY_CHUNK), &mut &*to)?;
        if n == 0 {
            return Ok(());
        }
        if release_source {
            // Advice only: if the kernel keeps the pages, the copy is just as correct.
            let _ = rustix::fs::fadvise(
                from,
                copied,
                std::num::NonZeroU64::new(n),
                rustix::fs::Advice::DontNeed,
            );
        }
        copied += n;
    }
}

fn modified_of(state: FileState) -> Timestamp {
    Timestamp(state.modified_ms())
}

/// An opened sandbox file: locally a descriptor known to be a singly-linked regular file
/// beneath the sandbox; in the blob store an immutable blob.
#[derive(Debug)]
pub struct OpenedFile {
    pub size: u64,
    pub modified: Timestamp,
    pub etag: String,
    source: Source,
}

#[derive(Debug)]
enum Source {
    File(std::fs::File),
    Blob { key: String, blobs: Blobs },
}

impl OpenedFile {
    /// The file's bytes (or a range of them) as a stream.
    pub async fn stream(self, range: Option<Range<u64>>) -> io::Result<BlobRead> {
        match self.source {
            Source::File(file) => {
                use tokio::io::{AsyncReadExt, AsyncSeekExt};
                let range = range.unwrap_or(0..self.size);
                let end = range.end.min(self.size);
                let start = range.start.min(end);
                let mut file = tokio::fs::File::from_std(file);
                if start > 0 {
                    file.seek(io::SeekFrom::Start(start)).await?;
                }
                let reader = file.take(end - start);
                Ok(BlobRead {
                    len: end - start,
                    stream: tokio_util::io::ReaderStream::with_capacity(reader, 256 * 1024).boxed(),
                })
            }
            Source::Blob { key, blobs } => blobs.read(&key, range).await,
        }
    }

    /// Reads the whole file, refusing more than `limit` bytes (it may have grown since it was
    /// opened).
    pub async fn read_to_end(self, limit: u64) -> io::Result<Option<Vec<u8>>> {
        let mut read = self.stream(None).await?;
        let mut out = Vec::new();
        while let Some(chunk) = read.stream.next().await {
            out.extend_from_slice(&chunk?);
            if out.len() as u64 > limit {
                return Ok(None);
            }
        }
        Ok(Some(out))
    }
}

/// One thread's sandbox.
#[derive(Debug, Clone)]
pub enum Sandbox {
    Local(LocalSandbox),
    Stored(StoredSandbox),
}

impl Sandbox {
    pub async fn open(&self, path: &ValidPath) -> Result<OpenedFile, Error> {
        match self {
            Sandbox::Local(local) => local.open(path).await,
            Sandbox::Stored(stored) => stored.open(path).await,
        }
    }

    /// Lists `dir` (the root when `None`): its direct children, folders included, or with
    /// `recursive` every file below it, sorted by path; and apart, the names found that no
    /// door can address.
    pub async fn list(&self, dir: Option<&ValidPath>, recursive: bool) -> Result<Listing, Error> {
        match self {
            Sandbox::Local(local) => local.listing(dir, recursive, Tags::Read).await,
            Sandbox::Stored(stored) => Ok(Listing {
                entries: stored.list(dir, recursive).await?,
                // Every name in the object store came through a door.
                unaddressable: Vec::new(),
            }),
        }
    }

    /// Lists as [`Sandbox::list`] does, but with no ETag (`etag` empty) where telling it would
    /// mean reading the file: for work that needs names and sizes only and says what it
    /// skipped (a search, a zip).
    pub async fn list_untagged(
        &self,
        dir: Option<&ValidPath>,
        recursive: bool,
    ) -> Result<Listing, Error> {
        match self {
            Sandbox::Local(local) => local.listing(dir, recursive, Tags::Skip).await,
            Sandbox::Stored(_) => self.list(dir, recursive).await,
        }
    }

    /// Writes `body` to `path` atomically: readers see the old file or the new, never a
    /// part. Returns whether the file was created, and its new state.
    pub async fn write<S, E>(
        &self,
        path: &ValidPath,
        body: S,
        limit: u64,
        condition: &WriteCondition,
        content_type: &str,
    ) -> Result<(bool, SandboxEntry), Error>
    where
        S: Stream<Item = Result<Bytes, E>>,
        E: std::fmt::Display,
    {
        if path.segments().next() == Some("skills") {
            return Err(Error::ReadOnly);
        }
        match self {
            Sandbox::Local(local) => local.write(path, body, limit, condition).await,
            Sandbox::Stored(stored) => {
                stored
                    .write(path, body, limit, condition, content_type)
                    .await
            }
        }
    }

    /// Removes the file at `path` (never a folder; a symlink is removed, not followed), if
    /// its ETag is one of `if_match` (`*` for any) when given. `skills/` is read-only. Folders
    /// stay, as on any file system.
    pub async fn delete(&self, path: &ValidPath, if_match: Option<&[String]>) -> Result<(), Error> {
        if path.segments().next() == Some("skills") {
            return Err(Error::ReadOnly);
        }
        match self {
            Sandbox::Local(local) => local.delete(path, if_match).await,
            Sandbox::Stored(stored) => stored.delete(path, if_match).await,
        }
    }

    /// Puts a blob's bytes into `folder` under `name`, or `name (1).ext`, `name (2).ext`… when
    /// taken. Never overwrites. Returns the path used, relative to `/sandbox/`.
    pub async fn copy_in_unique(
        &self,
        folder: &str,
        name: &ValidPath,
        blob: &StoredBlob,
        blobs: &Blobs,
        content_type: &str,
    ) -> Result<String, Error> {
        match self {
            Sandbox::Local(local) => {
                let source = blobs.local_copy(&blob.key).await.map_err(Error::Io)?;
                // A local blob was fsynced when it was made, so its cached pages are clean and
                // can be given back as they are copied; a temporary download's are not, and
                // dropping them would start writing back a file that is about to go.
                let release_source = !source.is_temporary();
                local
                    .copy_in_unique(folder, name, source.path(), release_source)
                    .await
            }
            Sandbox::Stored(stored) => {
                stored
                    .link_in_unique(folder, name, blob, content_type)
                    .await
            }
        }
    }
}

/// The longest name a file system keeps in one path segment, in bytes.
const MAX_SEGMENT_BYTES: usize = 255;

/// `report.xlsx` → `report (1).xlsx`; `notes` → `notes (1)`; attempt 0 is the name itself.
/// A name that would pass 255 bytes with its number is shortened before the number (at a
/// character boundary), keeping its extension, so the numbered name is always a valid segment.
pub fn numbered(name: &str, attempt: u32) -> String {
    if attempt == 0 {
        return name.to_owned();
    }
    let (stem, ext) = match name.rfind('.') {
        Some(dot) if dot > 0 => name.split_at(dot),
        _ => (name, ""),
    };
    let suffix = format!(" ({attempt})");
    // An extension too long to keep beside the number is kept in part.
    let ext = truncate_to(ext, MAX_SEGMENT_BYTES - suffix.len() - 1);
    let stem = truncate_to(stem, MAX_SEGMENT_BYTES - suffix.len() - ext.len());
    format!("{stem}{suffix}{ext}")
}

/// The longest prefix of `text` of at most `max` bytes that ends at a character boundary.
fn truncate_to(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering() {
        assert_eq!(numbered("report.xlsx", 0), "report.xlsx");
        assert_eq!(numbered("report.xlsx", 1), "report (1).xlsx");
        assert_eq!(numbered("archive.tar.gz", 2), "archive.tar (2).gz");
        assert_eq!(numbered("notes", 1), "notes (1)");
        assert_eq!(numbered(".env", 1), ".env (1)");
    }

    #[test]
    fn a_copy_in_chunks_is_the_whole_file_whether_or_not_the_source_is_released() {
        let dir = tempfile::tempdir().unwrap();
        // Two whole chunks and a part of a third, in a pattern that shows a chunk out of place.
        let len = 2 * COPY_CHUNK as usize + 4097;
        let bytes: Vec<u8> = (0..len).map(|i| (i / 4096 % 251) as u8).collect();
        let source = dir.path().join("source");
        std::fs::write(&source, &bytes).unwrap();
        for release_source in [false, true] {
            let target = dir.path().join(format!("copy-{release_source}"));
            let to = std::fs::File::create_new(&target).unwrap();
            let from = std::fs::File::open(&source).unwrap();
            copy_contents(&from, &to, release_source).unwrap();
            assert!(
                std::fs::read(&target).unwrap() == bytes,
                "release: {release_source}"
            );
            assert!(
                std::fs::read(&source).unwrap() == bytes,
                "release: {release_source}"
            );
        }
    }
}
