//! A sandbox folder on this host, reached only through a jailed directory handle (the module's
//! own notes say how the jail holds), and the jail's helpers its siblings share: opening a
//! folder or a file beneath the handle, the commit lock, and a listed file's content tag.

use bytes::Bytes;
use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, OpenOptions};
use ferry_core::ValidPath;
use ferry_core::write::WriteCondition;
use futures::{Stream, StreamExt};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

use super::content_tag::{self, FileState};
use super::listing::{Tags, walk};
use super::{
    Listing, OpenedFile, SandboxEntry, Source, TMP_DIR, copy_contents, jailed, modified_of,
    numbered, run_gated,
};
use crate::Error;
use crate::chunk_writer::ChunkWriter;

/// A sandbox folder on this host, reached through a jailed handle.
#[derive(Debug, Clone)]
pub struct LocalSandbox {
    pub(super) dir: Arc<Dir>,
    /// This thread's permits for file system work (see [`SandboxLimits`](super::SandboxLimits)).
    pub(super) gate: Arc<Semaphore>,
    pub(super) op_timeout: Duration,
}

impl LocalSandbox {
    /// Runs file system work on the folder, within this thread's share of the server.
    pub(super) async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Dir) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let dir = self.dir.clone();
        run_gated(&self.gate, self.op_timeout, move || work(&dir)).await
    }

    /// Opens a file for reading; the jail check and the open are one call.
    pub(super) async fn open(&self, path: &ValidPath) -> Result<OpenedFile, Error> {
        let path = path.as_str().to_owned();
        self.blocking(move |dir| open_checked(dir, &path)).await
    }

    /// Unlinks a file under the commit lock, so a delete and a write of the same path are
    /// ordered; the parent folder is reached without following symlinks.
    pub(super) async fn delete(
        &self,
        path: &ValidPath,
        if_match: Option<&[String]>,
    ) -> Result<(), Error> {
        let target = path.as_str().to_owned();
        let wait = self.op_timeout;
        let if_match = if_match.map(<[String]>::to_vec);
        self.blocking(move |dir| {
            let _lock = lock_commits(dir, wait)?;
            let (parent, name) = match target.rsplit_once('/') {
                Some((parent, name)) => (folder(dir, parent)?, name.to_owned()),
                None => (dir.try_clone().map_err(jailed)?, target.clone()),
            };
            let meta = parent.symlink_metadata(&name).map_err(jailed)?;
            if meta.is_dir() {
                return Err(Error::IsDir);
            }
            if let Some(tags) = &if_match {
                // Decided under the commit lock, so no API write lands between check and unlink.
                // What is not a regular file (a link, a FIFO) has no ETag: only "*" names it.
                let current = match meta.is_file() {
                    true => listed_tag(&parent, &name, &meta)?,
                    false => None,
                };
                if !tags.iter().any(|t| t == "*" || Some(t) == current.as_ref()) {
                    return Err(Error::PreconditionFailed);
                }
            }
            parent.remove_file(&name).map_err(jailed)
        })
        .await
    }

    /// Symlinks are not followed or listed.
    pub(super) async fn listing(
        &self,
        dir: Option<&ValidPath>,
        recursive: bool,
        tags: Tags,
    ) -> Result<Listing, Error> {
        let prefix = dir.map(|d| d.as_str().to_owned());
        self.blocking(move |root| {
            let start = match &prefix {
                Some(p) => match root.open_dir(p) {
                    Ok(d) => d,
                    // A folder that does not exist lists nothing, as in spaces.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Ok(Listing::default());
                    }
                    Err(e) => return Err(jailed(e)),
                },
                None => root.try_clone().map_err(jailed)?,
            };
            let mut out = Listing::default();
            walk(&start, prefix.as_deref(), recursive, tags, &mut out)?;
            out.entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
            out.unaddressable
                .sort_unstable_by(|a, b| a.shown.cmp(&b.shown));
            Ok(out)
        })
        .await
    }

    pub(super) async fn write<S, E>(
        &self,
        path: &ValidPath,
        body: S,
        limit: u64,
        condition: &WriteCondition,
    ) -> Result<(bool, SandboxEntry), Error>
    where
        S: Stream<Item = Result<Bytes, E>>,
        E: std::fmt::Display,
    {
        if path.segments().next() == Some(TMP_DIR) {
            return Err(Error::Escapes);
        }
        // The commit runs on the blocking pool, which needs its own copy.
        let condition = condition.clone();
        let tmp_name = uuid::Uuid::now_v7().simple().to_string();
        let tmp_file = {
            let tmp_name = tmp_name.clone();
            let parent = path.parent().map(str::to_owned);
            self.blocking(move |dir| {
                let tmp = folder(dir, TMP_DIR)?;
                if let Some(parent) = &parent {
                    folder(dir, parent)?;
                }
                let mut options = OpenOptions::new();
                options.write(true).create_new(true);
                Ok(tmp
                    .open_with(&tmp_name, &options)
                    .map_err(jailed)?
                    .into_std())
            })
            .await?
        };
        // Whatever happens from here on (an error, or the request's future dropped midway),
        // the temporary file does not outlive the write.
        let mut leftover = TempGuard {
            sandbox: self.clone(),
            name: Some(tmp_name.clone()),
        };
        let (written, tag) = match stream_to(tmp_file, body, limit).await {
            Ok(written) => written,
            Err(e) => {
                // Removed before the answer, so a client never sees it linger.
                if let Some(name) = leftover.name.take() {
                    let _ = self
                        .blocking(move |dir| {
                            remove_temporary(dir, &name);
                            Ok(())
                        })
                        .await;
                }
                return Err(e);
            }
        };
        let target = path.as_str().to_owned();
        let wait = self.op_timeout;
        let result = self
            .blocking(move |dir| {
                // The new file's state comes from the descriptor that wrote it: a second
                // lookup after the rename could meet whatever the agent put there since.
                let committed = written.metadata().map_err(jailed).and_then(|meta| {
                    let created = commit_write(dir, &tmp_name, &target, &condition, wait)?;
                    Ok((created, FileState::from(&meta)))
                });
                let (created, state) = match committed {
                    Ok(done) => done,
                    Err(e) => {
                        remove_temporary(dir, &tmp_name);
                        return Err(e);
                    }
                };
                Ok((
                    created,
                    SandboxEntry {
                        path: target,
                        is_dir: false,
                        size: state.size(),
                        modified: modified_of(state),
                        etag: tag,
                    },
                ))
            })
            .await;
        // Renamed into place or removed by the commit step, the temporary name is gone. Only
        // when that step never ran (no turn within the timeout) is it left to the guard.
        if !matches!(result, Err(Error::Busy)) {
            leftover.name = None;
        }
        result
    }

    pub(super) async fn copy_in_unique(
        &self,
        folder: &str,
        name: &ValidPath,
        source: &Path,
        release_source: bool,
    ) -> Result<String, Error> {
        let folder = folder.to_owned();
        let name = name.as_str().to_owned();
        let source = source.to_path_buf();
        self.blocking(move |dir| {
            let target_dir = self::folder(dir, &folder)?;
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            for attempt in 0u32..10_000 {
                let candidate = numbered(&name, attempt);
                match target_dir.open_with(&candidate, &options) {
                    Ok(target) => {
                        let target = target.into_std();
                        let from = std::fs::File::open(&source).map_err(Error::Io)?;
                        if let Err(e) = copy_contents(&from, &target, release_source) {
                            let _ = target_dir.remove_file(&candidate);
                            return Err(Error::Io(e));
                        }
                        return Ok(format!("{folder}/{candidate}"));
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(jailed(e)),
                }
            }
            Err(Error::AlreadyExists)
        })
        .await
    }
}

/// Removes a write's temporary file unless the write renamed it into place.
struct TempGuard {
    sandbox: LocalSandbox,
    name: Option<String>,
}

/// Removes a write's temporary file, if it is still there.
fn remove_temporary(dir: &Dir, name: &str) {
    if let Ok(tmp) = dir.open_dir_nofollow(TMP_DIR) {
        let _ = tmp.remove_file(name);
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        let Some(name) = self.name.take() else {
            return;
        };
        let dir = self.sandbox.dir.clone();
        let remove = move || remove_temporary(&dir, &name);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(remove);
            }
            Err(_) => remove(),
        }
    }
}

/// Opens the folder at `path` beneath `dir`, creating it (and its parents) when missing. A
/// segment that is a symlink is refused as leaving the sandbox, whether or not its target
/// would: folders the server writes into are never reached through a link.
pub(super) fn folder(dir: &Dir, path: &str) -> Result<Dir, Error> {
    let mut current = dir.try_clone().map_err(jailed)?;
    for segment in path.split('/') {
        match current.create_dir(segment) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(jailed(e)),
        }
        current = match current.open_dir_nofollow(segment) {
            Ok(next) => next,
            Err(e) => {
                return Err(match current.symlink_metadata(segment) {
                    Ok(meta) if meta.file_type().is_symlink() => Error::Escapes,
                    Ok(meta) if !meta.is_dir() => Error::NotAFolder,
                    _ => jailed(e),
                });
            }
        };
    }
    Ok(current)
}

/// The ETag of `name`, a regular file of `dir` when it was listed with `meta`: known without
/// reading it, or read from it opened without following a link or waiting on a FIFO swapped
/// in since. `None` when it is no longer that file; a file the server may not open keeps a tag
/// made of its state (no reader can open it either).
pub(super) fn listed_tag(
    dir: &Dir,
    name: &str,
    meta: &cap_std::fs::Metadata,
) -> Result<Option<String>, Error> {
    use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
    let listed = FileState::from(meta);
    if let Some(tag) = content_tag::known(&listed) {
        return Ok(Some(tag));
    }
    let mut options = OpenOptions::new();
    options.read(true).follow(FollowSymlinks::No);
    cap_std::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = match dir.open_with(name, &options) {
        Ok(file) => file.into_std(),
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ELOOP) => {
            return Ok(None);
        }
        Err(_) => return Ok(Some(listed.stamp())),
    };
    let meta = file.metadata().map_err(jailed)?;
    let state = FileState::from(&meta);
    if !meta.is_file() || !state.same_file(&listed) {
        return Ok(None);
    }
    content_tag::of_file(&file, state).map(Some).map_err(jailed)
}

pub(super) fn open_checked(dir: &Dir, path: &str) -> Result<OpenedFile, Error> {
    // O_NONBLOCK: opening a FIFO (or a device) an agent planted would otherwise wait forever
    // for a writer. Regular files ignore the flag; anything else is refused below, after the
    // open, on the descriptor itself.
    let mut options = OpenOptions::new();
    options.read(true);
    cap_std::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = match dir.open_with(path, &options) {
        Ok(file) => file.into_std(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // A symlink whose target is missing opens as NotFound; say what it is.
            return Err(match dir.symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => Error::Dangling,
                _ => Error::NotFound,
            });
        }
        Err(e) => return Err(jailed(e)),
    };
    let meta = file.metadata().map_err(jailed)?;
    if meta.is_dir() {
        return Err(Error::IsDir);
    }
    if !meta.is_file() {
        return Err(Error::NotAFile);
    }
    if meta.nlink() > 1 {
        return Err(Error::HardLinked);
    }
    let state = FileState::from(&meta);
    Ok(OpenedFile {
        size: state.size(),
        modified: modified_of(state),
        etag: content_tag::of_file(&file, state).map_err(jailed)?,
        source: Source::File(file),
    })
}

/// Moves the written file `tmp` (a name in the temporary folder) to `target` if `condition`
/// holds; returns whether the target was created. The sandbox's commit lock is held from the
/// check of the condition to the rename, so of racing conditional writes exactly one wins.
fn commit_write(
    dir: &Dir,
    tmp: &str,
    target: &str,
    condition: &WriteCondition,
    wait: Duration,
) -> Result<bool, Error> {
    let tmp_dir = lock_commits(dir, wait)?;
    let (parent, name) = match target.rsplit_once('/') {
        Some((parent, name)) => (folder(dir, parent)?, name),
        None => (dir.try_clone().map_err(jailed)?, target),
    };
    let current = match open_checked(&parent, name) {
        Ok(opened) => Some(opened.etag),
        Err(Error::NotFound | Error::Dangling) => None,
        Err(e) => return Err(e),
    };
    let flags = match condition {
        // renameat2(RENAME_NOREPLACE) never replaces an existing name, even one that appeared
        // after the check (an agent on the host does not take the lock).
        WriteCondition::CreateOnly => rustix::fs::RenameFlags::NOREPLACE,
        WriteCondition::IfMatch(tags) | WriteCondition::IfMatchAndCreateOnly(tags) => {
            let matches = current
                .as_ref()
                .is_some_and(|etag| tags.iter().any(|t| t == "*" || t == etag));
            if !matches {
                return Err(Error::PreconditionFailed);
            }
            if matches!(condition, WriteCondition::IfMatchAndCreateOnly(_)) {
                // The file exists and matches, so "create only" is what fails, as in spaces.
                return Err(Error::AlreadyExists);
            }
            rustix::fs::RenameFlags::empty()
        }
        WriteCondition::None => rustix::fs::RenameFlags::empty(),
    };
    // Both names are single components relative to folders opened through the jail, so the
    // rename cannot be steered outside it.
    rustix::fs::renameat_with(&tmp_dir, tmp, &parent, name, flags).map_err(|e| jailed(e.into()))?;
    Ok(current.is_none())
}

/// Takes the sandbox's commit lock: an exclusive `flock` on the temporary folder, held until
/// the returned handle is dropped. Tried without blocking, again and again until `wait` has
/// passed: a lock an agent on the host holds forever makes its own thread's writes `Busy`,
/// never a server thread wait forever.
pub(super) fn lock_commits(dir: &Dir, wait: Duration) -> Result<Dir, Error> {
    use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsMaybeDirExt};
    use rustix::fs::FlockOperation;
    // `folder` opens with O_PATH, which flock refuses: the lock needs a real descriptor.
    folder(dir, TMP_DIR)?;
    let mut options = OpenOptions::new();
    options
        .read(true)
        .maybe_dir(true)
        .follow(FollowSymlinks::No);
    cap_std::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_DIRECTORY);
    let tmp = Dir::from_std_file(dir.open_with(TMP_DIR, &options).map_err(jailed)?.into_std());
    let deadline = Instant::now() + wait;
    loop {
        match rustix::fs::flock(&tmp, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(tmp),
            Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(Error::Busy),
            Err(e) => return Err(jailed(e.into())),
        }
    }
}

/// Writes the body to `file` and makes it durable; returns the file for its metadata, and the
/// ETag of the bytes written.
async fn stream_to<S, E>(
    file: std::fs::File,
    body: S,
    limit: u64,
) -> Result<(std::fs::File, String), Error>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    let mut writer = ChunkWriter::new(file);
    let mut tag = content_tag::Written::default();
    let mut size = 0u64;
    let mut body = std::pin::pin!(body);
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Error::Body(e.to_string()))?;
        size += chunk.len() as u64;
        if size > limit {
            return Err(Error::TooLarge { limit });
        }
        tag.update(&chunk);
        writer.write(chunk).await.map_err(Error::Io)?;
    }
    let file = writer.finish().await.map_err(Error::Io)?;
    let file = tokio::task::spawn_blocking(move || file.sync_all().map(|()| file))
        .await
        .map_err(|e| Error::Io(io::Error::other(e)))?
        .map_err(Error::Io)?;
    Ok((file, tag.tag()))
}
