//! Why one file: the local blob store's durable write path (spool, fsync, rename, fsync the
//! folder) and its reads share the folder layout and the fsync tail; the object store
//! (`object.rs`), the gathering writer and the read cache are modules of their own.
//!
//! Blob storage: the bytes behind every file ferry keeps.
//!
//! A blob is written once under a fresh key and never changed. Its bytes are made durable (the
//! file fsynced, then its directory) before any metadata row may point at it; metadata is the
//! truth, and blobs that no row references — among them any a crash left half-written — are
//! swept after a grace period.

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use sha2::{Digest, Sha256};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::Error;
use crate::chunk_writer::ChunkWriter;

mod cached;
mod gathering;
mod object;

pub use gathering::{Gather, Gathering};
pub use object::ObjectBlobs;
use object::{store_error, upload_stream};

/// The chunk size of blob reads.
const READ_CHUNK: usize = 256 * 1024;
/// Bodies up to this size are gathered in memory and written to their file in one go.
const SMALL_BODY: usize = 64 * 1024;

/// A blob that is durable in the store and may now be referenced by metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    pub key: String,
    pub size: u64,
    /// Lower-case hex SHA-256 of the bytes.
    pub sha256: String,
}

/// A blob's bytes being read: the length of what the stream yields, and the stream.
pub struct BlobRead {
    pub len: u64,
    pub stream: BoxStream<'static, io::Result<Bytes>>,
}

impl std::fmt::Debug for BlobRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobRead").field("len", &self.len).finish()
    }
}

/// Bytes received into a local temporary file, fsynced, with their size and hash; not yet a
/// blob. Dropping it removes the file, unless it is another's (see [`Keeping`]).
#[derive(Debug)]
pub struct Spooled {
    path: PathBuf,
    size: u64,
    sha256: String,
    keeping: Keeping,
}

/// What becomes of a spool's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keeping {
    /// A temporary file of its own: renamed into the store when committed, removed if not.
    Temporary,
    /// In the store now; nothing is left to remove.
    Committed,
    /// A file another keeps (a resumable upload's, until its answer is kept): linked into the
    /// store when committed, so that a finish that dies part-way can be run again, and never
    /// removed here.
    Borrowed,
}

impl Spooled {
    /// The temporary file, for readers that want the bytes before they are committed
    /// (preview extraction, the copy into a sandbox).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn sha256(&self) -> &str {
        &self.sha256
    }
}

impl Drop for Spooled {
    fn drop(&mut self) {
        if self.keeping == Keeping::Temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A blob readable as a local file for as long as this value lives.
#[derive(Debug)]
pub struct LocalCopy {
    path: PathBuf,
    temporary: bool,
}

impl LocalCopy {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this is a download that goes away with the value, rather than the blob itself.
    pub fn is_temporary(&self) -> bool {
        self.temporary
    }
}

impl Drop for LocalCopy {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Blobs as files under one directory: `<root>/<fan-out>/<key>`, temporary files in
/// `<root>/.tmp` on the same file system so that the final rename is atomic.
#[derive(Debug, Clone)]
pub struct LocalBlobs {
    root: PathBuf,
    /// The running hashes of the resumable uploads gathering here (see `gathering`).
    hashes: gathering::RunningHashes,
}

impl LocalBlobs {
    pub fn open(root: impl Into<PathBuf>) -> io::Result<LocalBlobs> {
        let root = root.into();
        std::fs::create_dir_all(root.join(".tmp"))?;
        Ok(LocalBlobs {
            root,
            hashes: Default::default(),
        })
    }

    fn path_of(&self, key: &str) -> PathBuf {
        // Keys end in random hex; the last two characters spread files over 256 folders.
        let fan = &key[key.len().saturating_sub(2)..];
        self.root.join(fan).join(key)
    }

    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join(".tmp")
    }
}

/// Where blobs live: a local folder (the embedded default) or an object store.
#[derive(Debug, Clone)]
pub enum Blobs {
    Local(LocalBlobs),
    Object(ObjectBlobs),
}

impl Blobs {
    fn spool_dir(&self) -> PathBuf {
        match self {
            Blobs::Local(local) => local.tmp_dir(),
            Blobs::Object(object) => object.tmp.clone(),
        }
    }

    /// Streams a body into a durable temporary file, hashing it on the way and refusing it as
    /// soon as it passes `limit` bytes.
    pub async fn spool<S, E>(&self, body: S, limit: u64) -> Result<Spooled, Error>
    where
        S: Stream<Item = Result<Bytes, E>>,
        E: std::fmt::Display,
    {
        receive_into(self.spool_dir().join(new_key()), body, limit, false).await
    }

    /// Makes spooled bytes a blob under a new key.
    pub async fn commit(&self, mut spooled: Spooled) -> Result<StoredBlob, Error> {
        let key = new_key();
        match self {
            Blobs::Local(local) => {
                let target = local.path_of(&key);
                let from = spooled.path.clone();
                let link = spooled.keeping == Keeping::Borrowed;
                // One trip to the blocking pool for the three steps, not one each.
                tokio::task::spawn_blocking(move || put_in_place(&from, &target, link))
                    .await
                    .map_err(|e| Error::Io(io::Error::other(e)))?
                    .map_err(Error::Io)?;
                if !link {
                    spooled.keeping = Keeping::Committed;
                }
            }
            Blobs::Object(object) => {
                let file = tokio::fs::File::open(&spooled.path)
                    .await
                    .map_err(Error::Io)?;
                let chunks = tokio_util::io::ReaderStream::with_capacity(file, READ_CHUNK);
                upload_stream(object, &key, chunks, u64::MAX, None).await?;
            }
        }
        Ok(StoredBlob {
            key,
            size: spooled.size,
            sha256: std::mem::take(&mut spooled.sha256),
        })
    }

    /// Streams a body straight into a new blob.
    pub async fn write<S, E>(&self, body: S, limit: u64) -> Result<StoredBlob, Error>
    where
        S: Stream<Item = Result<Bytes, E>>,
        E: std::fmt::Display,
    {
        match self {
            Blobs::Local(local) => {
                // Received straight into the blob's own place (see `receive_into`).
                let key = new_key();
                let mut spooled = receive_into(local.path_of(&key), body, limit, true).await?;
                Ok(StoredBlob {
                    key,
                    size: spooled.size,
                    sha256: std::mem::take(&mut spooled.sha256),
                })
            }
            Blobs::Object(object) => {
                let key = new_key();
                let mut hasher = Sha256::new();
                let size = upload_stream(object, &key, body, limit, Some(&mut hasher)).await?;
                Ok(StoredBlob {
                    key,
                    size,
                    sha256: hex::encode(hasher.finalize()),
                })
            }
        }
    }

    /// Reads a blob, or the byte range of it, as a stream.
    pub async fn read(&self, key: &str, range: Option<Range<u64>>) -> io::Result<BlobRead> {
        match self {
            Blobs::Local(local) => {
                let path = local.path_of(key);
                // A small blob the kernel holds in its caches is read right here: the trip to
                // the blocking pool and back would cost more than the read.
                if let Some(bytes) = cached::read_small(&path, range.clone(), SMALL_READ) {
                    return Ok(BlobRead {
                        len: bytes.len() as u64,
                        stream: futures::stream::once(async move { Ok(bytes) }).boxed(),
                    });
                }
                // One trip to the blocking pool opens, sizes and positions the file, and for a
                // small read also reads it: each tokio::fs call is a trip of its own, and for a
                // 4 KiB file the trips, not the bytes, are the cost.
                let opened = tokio::task::spawn_blocking(move || open_local_range(&path, range))
                    .await
                    .map_err(io::Error::other)??;
                match opened {
                    LocalRead::Whole(bytes) => Ok(BlobRead {
                        len: bytes.len() as u64,
                        stream: futures::stream::once(async move { Ok(bytes) }).boxed(),
                    }),
                    LocalRead::Open { file, len } => {
                        let reader = tokio::fs::File::from_std(file).take(len);
                        let stream =
                            tokio_util::io::ReaderStream::with_capacity(reader, READ_CHUNK);
                        Ok(BlobRead {
                            len,
                            stream: stream.boxed(),
                        })
                    }
                }
            }
            Blobs::Object(object) => {
                let mut options = GetOptions::default();
                if let Some(range) = range.clone().filter(|r| r.start < r.end) {
                    options.range = Some(GetRange::Bounded(range));
                }
                let result = object
                    .store
                    .get_opts(&object.path_of(key), options)
                    .await
                    .map_err(store_error)?;
                let len = result.range.end - result.range.start;
                let stream = result.into_stream().map(|r| r.map_err(store_error));
                Ok(BlobRead {
                    len: if range.is_some_and(|r| r.start >= r.end) {
                        0
                    } else {
                        len
                    },
                    stream: stream.boxed(),
                })
            }
        }
    }

    /// A local file holding the blob's bytes, for readers that need a path (the extraction
    /// worker). Local blobs are their own file; object-store blobs are downloaded into a
    /// temporary file that goes away with the returned value.
    pub async fn local_copy(&self, key: &str) -> io::Result<LocalCopy> {
        match self {
            Blobs::Local(local) => {
                let path = local.path_of(key);
                tokio::fs::metadata(&path).await?;
                Ok(LocalCopy {
                    path,
                    temporary: false,
                })
            }
            Blobs::Object(object) => {
                let path = object.tmp.join(format!("copy-{}", new_key()));
                let copy = LocalCopy {
                    path,
                    temporary: true,
                };
                let mut file = tokio::fs::File::create(&copy.path).await?;
                let mut read = self.read(key, None).await?;
                while let Some(chunk) = read.stream.next().await {
                    file.write_all(&chunk?).await?;
                }
                file.flush().await?;
                Ok(copy)
            }
        }
    }

    pub async fn delete(&self, key: &str) -> io::Result<()> {
        match self {
            Blobs::Local(local) => match tokio::fs::remove_file(local.path_of(key)).await {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            Blobs::Object(object) => match object.store.delete(&object.path_of(key)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(store_error(e)),
            },
        }
    }

    /// Every blob key in the store, for the sweep of unreferenced blobs.
    pub fn keys(&self) -> BoxStream<'static, io::Result<String>> {
        match self {
            Blobs::Local(local) => {
                let root = local.root.clone();
                let walk = tokio::task::spawn_blocking(move || -> io::Result<Vec<String>> {
                    let mut keys = Vec::new();
                    for fan in std::fs::read_dir(&root)? {
                        let fan = fan?;
                        let name = fan.file_name();
                        if name.to_string_lossy().starts_with('.') || !fan.file_type()?.is_dir() {
                            continue;
                        }
                        for entry in std::fs::read_dir(fan.path())? {
                            keys.push(entry?.file_name().to_string_lossy().into_owned());
                        }
                    }
                    Ok(keys)
                });
                futures::stream::once(async move { walk.await.map_err(io::Error::other)? })
                    .map(|keys| match keys {
                        Ok(keys) => futures::stream::iter(keys.into_iter().map(Ok)).boxed(),
                        Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
                    })
                    .flatten()
                    .boxed()
            }
            Blobs::Object(object) => {
                let prefix = object.prefix.clone();
                object
                    .store
                    .list(Some(&prefix))
                    .map(|meta| {
                        meta.map(|m| m.location.filename().unwrap_or_default().to_owned())
                            .map_err(store_error)
                    })
                    .boxed()
            }
        }
    }

    /// Removes spool files older than `age` (left by a crash mid-upload).
    pub async fn sweep_spools(&self, age: std::time::Duration) -> io::Result<usize> {
        let dir = self.spool_dir();
        tokio::task::spawn_blocking(move || remove_older_than(&dir, age))
            .await
            .map_err(io::Error::other)?
    }
}

/// Removes the files of `dir` that nothing has written for `age` (blocking); answers how many
/// went. A folder that does not exist holds none.
fn remove_older_than(dir: &Path, age: std::time::Duration) -> io::Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        entries => entries?,
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        let old = entry
            .metadata()?
            .modified()?
            .elapsed()
            .is_ok_and(|elapsed| elapsed > age);
        if old && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// A new blob key: a UUIDv7 (time-ordered, so a sweep can tell old keys from new) in hex.
fn new_key() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// Streams `body` into a new file at `path` and fsyncs it. With `as_blob`, `path` is a blob's
/// own place: its folder is made if need be and fsynced after the file, so that the name too
/// survives a crash, and the result is `committed` (a blob needs no rename: its key is new,
/// and no row names it until this returns; a crash part-way leaves an unreferenced file that
/// the sweep removes). A body small enough to be gathered in memory is written, flushed and
/// closed in one trip to the blocking pool (each tokio::fs call is a trip of its own, and for
/// a small body the trips, not the bytes, are the cost).
async fn receive_into<S, E>(
    path: PathBuf,
    body: S,
    limit: u64,
    as_blob: bool,
) -> Result<Spooled, Error>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    // From here on, dropping `spooled` removes the file, whatever goes wrong.
    let mut spooled = Spooled {
        path,
        size: 0,
        sha256: String::new(),
        keeping: Keeping::Temporary,
    };
    let folder = spooled
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut hasher = Sha256::new();
    let mut body = std::pin::pin!(body);
    let mut head = Vec::new();
    let mut head_len = 0;
    let mut overflow = None;
    while let Some(chunk) = body.next().await {
        let chunk = received(&mut spooled, &mut hasher, chunk, limit)?;
        if head_len + chunk.len() > SMALL_BODY {
            overflow = Some(chunk);
            break;
        }
        head_len += chunk.len();
        head.push(chunk);
    }
    let Some(overflow) = overflow else {
        let path = spooled.path.clone();
        tokio::task::spawn_blocking(move || {
            if as_blob {
                std::fs::create_dir_all(&folder)?;
            }
            let mut file = std::fs::File::create_new(&path)?;
            for chunk in head {
                std::io::Write::write_all(&mut file, &chunk)?;
            }
            file.sync_all()?;
            if as_blob {
                std::fs::File::open(&folder)?.sync_all()?;
            }
            Ok(())
        })
        .await
        .map_err(|e| Error::Io(io::Error::other(e)))?
        .map_err(Error::Io)?;
        if as_blob {
            spooled.keeping = Keeping::Committed;
        }
        spooled.sha256 = hex::encode(hasher.finalize());
        return Ok(spooled);
    };
    let path = spooled.path.clone();
    let dir = folder.clone();
    let file = tokio::task::spawn_blocking(move || {
        if as_blob {
            std::fs::create_dir_all(&dir)?;
        }
        std::fs::File::create_new(&path)
    })
    .await
    .map_err(|e| Error::Io(io::Error::other(e)))?
    .map_err(Error::Io)?;
    let mut writer = ChunkWriter::new(file);
    for chunk in head.into_iter().chain(std::iter::once(overflow)) {
        writer.write(chunk).await.map_err(Error::Io)?;
    }
    while let Some(chunk) = body.next().await {
        let chunk = received(&mut spooled, &mut hasher, chunk, limit)?;
        writer.write(chunk).await.map_err(Error::Io)?;
    }
    let file = writer.finish().await.map_err(Error::Io)?;
    tokio::task::spawn_blocking(move || {
        file.sync_all()?;
        if as_blob {
            std::fs::File::open(folder)?.sync_all()?;
        }
        Ok(())
    })
    .await
    .map_err(|e| Error::Io(io::Error::other(e)))?
    .map_err(Error::Io)?;
    if as_blob {
        spooled.keeping = Keeping::Committed;
    }
    spooled.sha256 = hex::encode(hasher.finalize());
    Ok(spooled)
}

/// Renames (or with `link`, hard-links) an fsynced file to its blob's place and fsyncs the
/// folder, so that the name, too, survives a crash before any row points at it.
fn put_in_place(from: &Path, target: &Path, link: bool) -> io::Result<()> {
    let dir = target.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir)?;
    if link {
        std::fs::hard_link(from, target)?;
    } else {
        std::fs::rename(from, target)?;
    }
    std::fs::File::open(dir)?.sync_all()
}

/// Counts and hashes one chunk of a body being spooled, refusing it once the body passes
/// `limit`.
fn received<E: std::fmt::Display>(
    spooled: &mut Spooled,
    hasher: &mut Sha256,
    chunk: Result<Bytes, E>,
    limit: u64,
) -> Result<Bytes, Error> {
    let chunk = chunk.map_err(|e| Error::Body(e.to_string()))?;
    spooled.size += chunk.len() as u64;
    if spooled.size > limit {
        return Err(Error::TooLarge { limit });
    }
    hasher.update(&chunk);
    Ok(chunk)
}

/// Reads of at most this many bytes are done in one go, as one chunk.
const SMALL_READ: u64 = 64 * 1024;

/// A local blob opened for reading: small ones already read, others positioned at the start
/// of the range.
enum LocalRead {
    Whole(Bytes),
    Open { file: std::fs::File, len: u64 },
}

/// Opens a local blob and clamps `range` to its size (blocking).
fn open_local_range(path: &Path, range: Option<Range<u64>>) -> io::Result<LocalRead> {
    use std::io::{Read, Seek};
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let range = range.unwrap_or(0..size);
    let end = range.end.min(size);
    let start = range.start.min(end);
    let len = end - start;
    if start > 0 {
        file.seek(io::SeekFrom::Start(start))?;
    }
    if len <= SMALL_READ {
        let mut bytes = Vec::with_capacity(len as usize);
        file.take(len).read_to_end(&mut bytes)?;
        if (bytes.len() as u64) < len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the blob is shorter than it was a moment ago",
            ));
        }
        return Ok(LocalRead::Whole(Bytes::from(bytes)));
    }
    Ok(LocalRead::Open { file, len })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    fn chunks(parts: &[&'static [u8]]) -> impl Stream<Item = Result<Bytes, io::Error>> + use<> {
        let parts: Vec<_> = parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        stream::iter(parts)
    }

    async fn read_all(blobs: &Blobs, key: &str, range: Option<Range<u64>>) -> Vec<u8> {
        let read = blobs.read(key, range).await.unwrap();
        let parts: Vec<_> = read.stream.collect().await;
        let out: Vec<u8> = parts
            .into_iter()
            .flat_map(|p| p.unwrap().to_vec())
            .collect();
        assert_eq!(out.len() as u64, read.len);
        out
    }

    #[tokio::test]
    async fn write_read_range_delete() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::Local(LocalBlobs::open(dir.path()).unwrap());
        let blob = blobs
            .write(chunks(&[b"hello ", b"world"]), 100)
            .await
            .unwrap();
        assert_eq!(blob.size, 11);
        assert_eq!(
            blob.sha256,
            "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
        );
        assert_eq!(read_all(&blobs, &blob.key, None).await, b"hello world");
        assert_eq!(read_all(&blobs, &blob.key, Some(6..11)).await, b"world");
        assert_eq!(read_all(&blobs, &blob.key, Some(6..99)).await, b"world");
        blobs.delete(&blob.key).await.unwrap();
        assert!(blobs.read(&blob.key, None).await.is_err());
        blobs.delete(&blob.key).await.unwrap();
    }

    #[tokio::test]
    async fn over_limit_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalBlobs::open(dir.path()).unwrap();
        let blobs = Blobs::Local(local.clone());
        let err = blobs
            .write(chunks(&[b"12345", b"67890", b"x"]), 10)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::TooLarge { limit: 10 }));
        assert_eq!(std::fs::read_dir(local.tmp_dir()).unwrap().count(), 0);
        // Exactly at the limit is fine.
        assert!(blobs.write(chunks(&[b"12345", b"67890"]), 10).await.is_ok());
    }

    #[tokio::test]
    async fn broken_body_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalBlobs::open(dir.path()).unwrap();
        let blobs = Blobs::Local(local.clone());
        let body = stream::iter(vec![
            Ok(Bytes::from_static(b"part")),
            Err(io::Error::other("connection reset")),
        ]);
        let err = blobs.write(body, 100).await.unwrap_err();
        assert!(matches!(err, Error::Body(m) if m.contains("connection reset")));
        assert_eq!(std::fs::read_dir(local.tmp_dir()).unwrap().count(), 0);
    }
}
