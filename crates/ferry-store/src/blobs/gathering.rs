//! The one file a resumable upload's bytes gather in, on a local blob store.
//!
//! Each `PATCH` of a resumable upload writes its bytes at their offset in one file,
//! `<root>/.resumable/<upload id>`, and when the last byte is in, that file is the finished
//! upload's spool: it is hard-linked into the blob store rather than read back and written
//! again, and removed once the upload's answer is kept (so a finish that dies part-way can be
//! run again from the same file).
//! So a resumable upload costs one write of its bytes more than the sandbox copy, as a plain
//! upload does. (An object store keeps each request's bytes as a blob of their own instead,
//! and the finished upload reads them back in order; see `ferry_app::transfers::resumable`.)
//!
//! - **One writer at a time.** A request holds an exclusive lock on the file (`flock`) for as
//!   long as it writes and records what it wrote; a second request for the same upload waits
//!   for it, a while, and is then refused. Bytes of two requests never interleave, and the
//!   caller reads the upload's offset again once it holds the lock (the request it waited for
//!   may have moved it on) before it writes.
//! - **Durable before recorded.** The bytes are fsynced before the caller records the upload's
//!   new offset, so the offset a client is told never runs ahead of what a crash keeps. Bytes
//!   past the recorded offset (a request that failed, a crash) are cut off by the next write,
//!   which starts by truncating the file to its offset.
//! - **Hashed once.** The running SHA-256 of the bytes so far is kept in memory between
//!   requests, keyed by the offset it reached; the finished upload uses it when it covers every
//!   byte, and otherwise (after a restart, or when a write broke off) reads the file once to
//!   hash it.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{Blobs, Keeping, LocalBlobs, Spooled};
use crate::Error;
use crate::chunk_writer::ChunkWriter;

/// The folder, under a local store's root, of the files resumable uploads gather in. Its name
/// starts with a dot, so neither the sweep of unreferenced blobs nor the sweep of old spools
/// (which look elsewhere) ever takes a file an unfinished upload still needs.
const FOLDER: &str = ".resumable";

/// How often a request waiting for another to let go of the file looks again.
const LOCK_POLL: Duration = Duration::from_millis(25);

/// The running hashes of the uploads gathering on this node, by upload id: the SHA-256 of the
/// file's first `offset` bytes.
#[derive(Clone, Default)]
pub(super) struct RunningHashes(Arc<Mutex<HashMap<String, (u64, Sha256)>>>);

impl std::fmt::Debug for RunningHashes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunningHashes")
    }
}

impl RunningHashes {
    /// The hash of the first `offset` bytes, if this node has it (taken out: a write that fails
    /// must not leave it behind).
    fn take_at(&self, id: &str, offset: u64) -> Option<Sha256> {
        let mut hashes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match hashes.remove(id) {
            Some((at, hasher)) if at == offset => Some(hasher),
            _ => None,
        }
    }

    fn put(&self, id: &str, offset: u64, hasher: Sha256) {
        let mut hashes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        hashes.insert(id.to_owned(), (offset, hasher));
    }

    fn forget(&self, id: &str) {
        let mut hashes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        hashes.remove(id);
    }
}

/// The file of one upload, opened and locked by one request.
#[derive(Debug)]
pub struct Gathering {
    id: String,
    file: Option<File>,
    hashes: RunningHashes,
}

/// Upload ids name files, so only the characters of the ids ferry makes are accepted.
fn checked_id(id: &str) -> io::Result<&str> {
    let fine = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if fine {
        Ok(id)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{id}' is not a resumable upload id"),
        ))
    }
}

impl LocalBlobs {
    fn gathering_path(&self, id: &str) -> io::Result<PathBuf> {
        Ok(self.root.join(FOLDER).join(checked_id(id)?))
    }
}

/// What asking for an upload's file found.
#[derive(Debug)]
pub enum Gather {
    /// The file, locked for this request.
    InPlace(Gathering),
    /// The store keeps each request's bytes as a blob of its own (an object store).
    Parts,
    /// Another request held the file for longer than the wait.
    Locked,
}

impl Blobs {
    /// Opens (creating it if need be) the file upload `id` gathers in, and locks it for this
    /// request, waiting up to `wait` for a request that holds it.
    pub async fn gathering(&self, id: &str, wait: Duration) -> Result<Gather, Error> {
        let Blobs::Local(local) = self else {
            return Ok(Gather::Parts);
        };
        let path = local.gathering_path(id).map_err(Error::Io)?;
        let file = tokio::task::spawn_blocking(move || -> io::Result<File> {
            let folder = path.parent().unwrap_or(&path);
            if !folder.exists() {
                std::fs::create_dir_all(folder)?;
            }
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&path)
        })
        .await
        .map_err(|e| Error::Io(io::Error::other(e)))?
        .map_err(Error::Io)?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < wait => {
                    tokio::time::sleep(LOCK_POLL).await;
                }
                Err(std::fs::TryLockError::WouldBlock) => return Ok(Gather::Locked),
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::Io(e)),
            }
        }
        Ok(Gather::InPlace(Gathering {
            id: id.to_owned(),
            file: Some(file),
            hashes: local.hashes.clone(),
        }))
    }

    /// The gathered bytes of a complete upload of `length` bytes, hashed, as a spool ready to
    /// be committed as a blob; `None` for a store that keeps parts instead.
    pub async fn gathered(&self, id: &str, length: u64) -> Result<Option<Spooled>, Error> {
        let Blobs::Local(local) = self else {
            return Ok(None);
        };
        let path = local.gathering_path(id).map_err(Error::Io)?;
        let running = local.hashes.take_at(id, length);
        let hashed = path.clone();
        let sha256 = tokio::task::spawn_blocking(move || -> io::Result<String> {
            let mut file = File::open(&hashed)?;
            let size = file.metadata()?.len();
            if size != length {
                return Err(io::Error::other(format!(
                    "the upload's file holds {size} bytes, not the {length} it recorded"
                )));
            }
            let hasher = match running {
                Some(hasher) => hasher,
                None => hash_file(&mut file)?,
            };
            Ok(hex::encode(hasher.finalize()))
        })
        .await
        .map_err(|e| Error::Io(io::Error::other(e)))?
        .map_err(Error::Io)?;
        Ok(Some(Spooled {
            path,
            size: length,
            sha256,
            keeping: Keeping::Borrowed,
        }))
    }

    /// Removes the files no write has touched for `age`. Used with the expiry of resumable
    /// uploads, it takes only files whose upload has expired (an upload expires a fixed time
    /// after it was created, before its first write): those a crash left between removing an
    /// upload and removing its file.
    pub async fn sweep_gathered(&self, age: Duration) -> io::Result<usize> {
        let Blobs::Local(local) = self else {
            return Ok(0);
        };
        let folder = local.root.join(FOLDER);
        tokio::task::spawn_blocking(move || super::remove_older_than(&folder, age))
            .await
            .map_err(io::Error::other)?
    }

    /// Removes the file upload `id` gathered in, if there is one (termination, expiry).
    pub async fn discard_gathered(&self, id: &str) -> io::Result<()> {
        let Blobs::Local(local) = self else {
            return Ok(());
        };
        local.hashes.forget(id);
        match tokio::fs::remove_file(local.gathering_path(id)?).await {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

impl Gathering {
    /// Writes `body` at `offset`, cutting off whatever the file held from there on, refusing
    /// it once it passes `limit` bytes, and makes it durable; answers how many bytes it wrote.
    /// On failure the file is cut back to `offset`.
    pub async fn write_at<S, E>(&mut self, offset: u64, body: S, limit: u64) -> Result<u64, Error>
    where
        S: Stream<Item = Result<Bytes, E>>,
        E: std::fmt::Display,
    {
        let mut hasher = self.hashes.take_at(&self.id, offset);
        if hasher.is_none() && offset == 0 {
            hasher = Some(Sha256::new());
        }
        let mut file = self.take_file()?;
        file = blocking(move || {
            // Never fill a gap: an upload whose earlier bytes are gone is refused, not padded.
            let held = file.metadata()?.len();
            if held < offset {
                return Err(io::Error::other(format!(
                    "the upload's file holds {held} bytes, fewer than the {offset} recorded"
                )));
            }
            file.set_len(offset)?;
            file.seek(io::SeekFrom::Start(offset))?;
            Ok(file)
        })
        .await?;
        let mut writer = ChunkWriter::new(file);
        let mut body = std::pin::pin!(body);
        let mut size = 0u64;
        let written: Result<(), Error> = async {
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| Error::Body(e.to_string()))?;
                size += chunk.len() as u64;
                if size > limit {
                    return Err(Error::TooLarge { limit });
                }
                if let Some(hasher) = hasher.as_mut() {
                    hasher.update(&chunk);
                }
                writer.write(chunk).await.map_err(Error::Io)?;
            }
            Ok(())
        }
        .await;
        let file = writer.finish().await.map_err(Error::Io)?;
        let (file, synced) = blocking(move || {
            let synced = match &written {
                Ok(()) => file.sync_data(),
                Err(_) => file.set_len(offset),
            };
            Ok((file, synced.map(|()| written)))
        })
        .await?;
        self.file = Some(file);
        synced.map_err(Error::Io)??;
        if let Some(hasher) = hasher {
            self.hashes.put(&self.id, offset + size, hasher);
        }
        Ok(size)
    }

    /// Cuts the file back to `len` bytes: what a write brought is not kept after all (its
    /// checksum did not match).
    pub async fn truncate(&mut self, len: u64) -> Result<(), Error> {
        self.hashes.forget(&self.id);
        let file = self.take_file()?;
        self.file = Some(
            blocking(move || {
                file.set_len(len)?;
                file.sync_data()?;
                Ok(file)
            })
            .await?,
        );
        Ok(())
    }

    fn take_file(&mut self) -> Result<File, Error> {
        self.file
            .take()
            .ok_or_else(|| Error::Io(io::Error::other("the upload's file was lost by a failure")))
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::Io(io::Error::other(e)))?
        .map_err(Error::Io)
}

/// The SHA-256 of a file from its start.
fn hash_file(file: &mut File) -> io::Result<Sha256> {
    file.seek(io::SeekFrom::Start(0))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            return Ok(hasher);
        }
        hasher.update(&buffer[..read]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    fn body(parts: &[&'static [u8]]) -> impl Stream<Item = Result<Bytes, io::Error>> + use<> {
        let parts: Vec<_> = parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        stream::iter(parts)
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    fn in_place(gather: Gather) -> Gathering {
        match gather {
            Gather::InPlace(gathering) => gathering,
            other => panic!("expected the file, got {other:?}"),
        }
    }

    fn local(dir: &tempfile::TempDir) -> Blobs {
        Blobs::Local(LocalBlobs::open(dir.path()).unwrap())
    }

    #[tokio::test]
    async fn requests_gather_in_one_file_that_becomes_the_blob() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = local(&dir);
        let wait = Duration::from_secs(1);
        let mut first = in_place(blobs.gathering("up-1", wait).await.unwrap());
        assert_eq!(first.write_at(0, body(&[b"hello "]), 100).await.unwrap(), 6);
        drop(first);
        let mut second = in_place(blobs.gathering("up-1", wait).await.unwrap());
        assert_eq!(
            second.write_at(6, body(&[b"wor", b"ld"]), 5).await.unwrap(),
            5
        );
        drop(second);
        let spooled = blobs.gathered("up-1", 11).await.unwrap().unwrap();
        assert_eq!(spooled.sha256(), sha256_hex(b"hello world"));
        let blob = blobs.commit(spooled).await.unwrap();
        // The upload's file stays until its answer is kept; the blob outlives it.
        assert!(dir.path().join(FOLDER).join("up-1").exists());
        blobs.discard_gathered("up-1").await.unwrap();
        let read: Vec<_> = blobs
            .read(&blob.key, None)
            .await
            .unwrap()
            .stream
            .collect()
            .await;
        let read: Vec<u8> = read.into_iter().flat_map(|c| c.unwrap().to_vec()).collect();
        assert_eq!(read, b"hello world");
    }

    #[tokio::test]
    async fn a_restart_loses_the_running_hash_and_the_file_is_hashed_instead() {
        let dir = tempfile::tempdir().unwrap();
        let wait = Duration::from_secs(1);
        let before = local(&dir);
        let mut gathering = in_place(before.gathering("up-2", wait).await.unwrap());
        gathering.write_at(0, body(&[b"abc"]), 3).await.unwrap();
        drop(gathering);
        // A new store on the same folder: what a restarted server opens.
        let after = local(&dir);
        let mut gathering = in_place(after.gathering("up-2", wait).await.unwrap());
        gathering.write_at(3, body(&[b"def"]), 3).await.unwrap();
        drop(gathering);
        let spooled = after.gathered("up-2", 6).await.unwrap().unwrap();
        assert_eq!(spooled.sha256(), sha256_hex(b"abcdef"));
    }

    #[tokio::test]
    async fn a_write_cuts_off_what_lay_past_its_offset_and_a_failed_one_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = local(&dir);
        let wait = Duration::from_secs(1);
        let mut gathering = in_place(blobs.gathering("up-3", wait).await.unwrap());
        gathering.write_at(0, body(&[b"abcdef"]), 6).await.unwrap();
        // The caller could not record the last three bytes; the next request starts at 3.
        gathering.write_at(3, body(&[b"XY"]), 3).await.unwrap();
        let over = gathering
            .write_at(5, body(&[b"1234"]), 1)
            .await
            .unwrap_err();
        assert!(matches!(over, Error::TooLarge { limit: 1 }));
        let broken = stream::iter(vec![
            Ok(Bytes::from_static(b"z")),
            Err(io::Error::other("reset")),
        ]);
        assert!(matches!(
            gathering.write_at(5, broken, 1).await,
            Err(Error::Body(_))
        ));
        gathering.write_at(5, body(&[b"!"]), 1).await.unwrap();
        gathering.truncate(5).await.unwrap();
        gathering.write_at(5, body(&[b"?"]), 1).await.unwrap();
        drop(gathering);
        let spooled = blobs.gathered("up-3", 6).await.unwrap().unwrap();
        assert_eq!(std::fs::read(spooled.path()).unwrap(), b"abcXY?");
        assert_eq!(spooled.sha256(), sha256_hex(b"abcXY?"));
        // A length that is not what the file holds is an error, never a wrong blob.
        assert!(blobs.gathered("up-3", 7).await.is_err());
    }

    #[tokio::test]
    async fn a_second_request_waits_for_the_first_then_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = local(&dir);
        let holder = in_place(blobs.gathering("up-4", Duration::ZERO).await.unwrap());
        let refused = blobs
            .gathering("up-4", Duration::from_millis(60))
            .await
            .unwrap();
        assert!(matches!(refused, Gather::Locked));
        drop(holder);
        let gathering = blobs.gathering("up-4", Duration::ZERO).await.unwrap();
        assert!(matches!(gathering, Gather::InPlace(_)));
    }

    #[tokio::test]
    async fn discarding_removes_the_file_and_ids_cannot_name_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = local(&dir);
        let mut gathering = in_place(blobs.gathering("up-5", Duration::ZERO).await.unwrap());
        gathering.write_at(0, body(&[b"x"]), 1).await.unwrap();
        drop(gathering);
        blobs.discard_gathered("up-5").await.unwrap();
        assert!(!dir.path().join(FOLDER).join("up-5").exists());
        blobs.discard_gathered("up-5").await.unwrap();
        // A file whose earlier bytes are gone is refused, never padded with zeros.
        let mut gap = in_place(blobs.gathering("up-5", Duration::ZERO).await.unwrap());
        assert!(gap.write_at(4, body(&[b"x"]), 1).await.is_err());
        drop(gap);
        assert_eq!(
            blobs
                .sweep_gathered(Duration::from_secs(3600))
                .await
                .unwrap(),
            0
        );
        assert_eq!(blobs.sweep_gathered(Duration::ZERO).await.unwrap(), 1);
        for id in ["../x", "", "a/b", "."] {
            assert!(blobs.gathering(id, Duration::ZERO).await.is_err(), "{id:?}");
        }
    }
}
