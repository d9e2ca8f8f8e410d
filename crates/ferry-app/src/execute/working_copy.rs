//! A sandbox kept in the object store, copied into a working folder on this node for one
//! command, and what the command changed written back.
//!
//! Writing back goes through the sandbox's own writes with the conditions of the version the
//! command started from: a changed file is written `If-Match` its etag at the copy, a new one
//! create-only, a removed one deleted `If-Match`. A file changed meanwhile through another door
//! is therefore never overwritten or removed: the command's version is left out and the output
//! says so (a conflict), and nothing is lost. Each write-back is told on the thread's channel as
//! any write is (`door: "command"`).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ferry_core::door::Door;
use ferry_core::path::SANDBOX_LAYOUT;
use ferry_core::write::WriteCondition;
use ferry_core::{SandboxPath, ValidPath};
use ferry_store::sandbox::Sandbox;
use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::access::principal::Principal;
use crate::app::App;
use crate::body::Incoming;
use crate::error::{Error, Result, in_sandbox};

/// Folders a command may read but not change: they are never written back.
const READ_ONLY: [&str; 2] = ["user_uploads/", "skills/"];

/// The working folder and what each file was when it was copied.
#[derive(Debug)]
pub(super) struct WorkingCopy {
    folder: tempfile::TempDir,
    /// By path below `/sandbox/`: its etag in the store, and its size and change time here.
    copied: HashMap<String, Copied>,
}

#[derive(Debug, Clone)]
struct Copied {
    etag: String,
    size: u64,
    changed_ns: i128,
}

/// A file of the working folder after the command, by what tells a change.
#[derive(Debug, Clone, Copy)]
struct Seen {
    size: u64,
    changed_ns: i128,
}

impl WorkingCopy {
    /// Copies every file of `sandbox` into a new working folder, refusing a sandbox larger than
    /// `limit` (what a command may fill a sandbox to).
    pub(super) async fn make(app: &App, sandbox: &Sandbox, limit: u64) -> Result<WorkingCopy> {
        let entries = sandbox.list(None, true).await.map_err(in_sandbox)?.entries;
        let total: u64 = entries.iter().filter(|e| !e.is_dir).map(|e| e.size).sum();
        if total > limit {
            return Err(Error::TooLarge(format!(
                "the sandbox holds {total} bytes, more than a command may work on ({limit}): \
                 delete what is no longer needed first"
            )));
        }
        let folder = app.cache.scratch_dir().await?;
        for dir in SANDBOX_LAYOUT {
            tokio::fs::create_dir_all(folder.path().join(dir)).await?;
        }
        let mut copied = HashMap::new();
        for entry in entries.into_iter().filter(|e| !e.is_dir) {
            let path = ValidPath::parse(&entry.path)?;
            let target = folder.path().join(path.as_str());
            if let Some(parent) = target.parent() {
                tokio::fs::create_dir_all(parent).await?;
            }
            let opened = sandbox.open(&path).await.map_err(in_sandbox)?;
            let mut read = opened.stream(None).await?;
            let mut file = tokio::fs::File::create(&target).await?;
            while let Some(chunk) = read.stream.next().await {
                file.write_all(&chunk?).await?;
            }
            file.flush().await?;
            let meta = tokio::fs::symlink_metadata(&target).await?;
            copied.insert(
                entry.path.clone(),
                Copied {
                    etag: entry.etag,
                    size: meta.len(),
                    changed_ns: changed_ns(&meta),
                },
            );
        }
        Ok(WorkingCopy { folder, copied })
    }

    /// The working folder, which the command sees as `/sandbox`.
    pub(super) fn folder(&self) -> &Path {
        self.folder.path()
    }

    /// Writes back what the command changed, as the thread's agent, and removes the working
    /// folder. Answers a note for each change that was not written back, and why.
    pub(super) async fn write_back(
        self,
        app: &App,
        principal: &Principal,
        thread_id: &str,
    ) -> Vec<String> {
        let root = self.folder.path().to_owned();
        let seen = tokio::task::spawn_blocking(move || files_below(&root))
            .await
            .unwrap_or_default();
        let mut notes = Vec::new();
        let mut paths: Vec<&String> = seen.keys().collect();
        paths.sort();
        for path in paths {
            let now = seen[path];
            let condition = match self.copied.get(path) {
                Some(then) if then.size == now.size && then.changed_ns == now.changed_ns => {
                    continue;
                }
                Some(then) => WriteCondition::IfMatch(vec![then.etag.clone()]),
                None => WriteCondition::CreateOnly,
            };
            if READ_ONLY.iter().any(|dir| path.starts_with(dir)) {
                continue;
            }
            let written = self
                .write_one(app, principal, thread_id, path, now, &condition)
                .await;
            if let Err(why) = written {
                notes.push(why);
            }
        }
        let mut removed: Vec<(&String, &Copied)> = self
            .copied
            .iter()
            .filter(|(path, _)| !seen.contains_key(*path))
            .filter(|(path, _)| !READ_ONLY.iter().any(|dir| path.starts_with(dir)))
            .collect();
        removed.sort_by(|a, b| a.0.cmp(b.0));
        for (path, then) in removed {
            let Ok(valid) = ValidPath::parse(path) else {
                continue;
            };
            let at = SandboxPath::from_relative(valid);
            let deleted = crate::files::sandbox::delete(
                app,
                principal,
                thread_id,
                &at,
                Some(std::slice::from_ref(&then.etag)),
                Door::Command,
            )
            .await;
            match deleted {
                Ok(()) | Err(Error::NotFound(_)) => {}
                Err(Error::PreconditionFailed(_)) => notes.push(format!(
                    "{} was changed through another door while the command ran: it was kept, \
                     not removed",
                    at.display()
                )),
                Err(e) => notes.push(format!("{} could not be removed: {e}", at.display())),
            }
        }
        notes
    }

    /// Writes one file of the working folder back to the sandbox under `condition`.
    async fn write_one(
        &self,
        app: &App,
        principal: &Principal,
        thread_id: &str,
        path: &str,
        now: Seen,
        condition: &WriteCondition,
    ) -> std::result::Result<(), String> {
        let shown = format!("/sandbox/{path}");
        let valid = ValidPath::parse(path)
            .map_err(|e| format!("{shown} was left out: its name breaks the path rules ({e})"))?;
        let at = SandboxPath::from_relative(valid);
        let file = tokio::fs::File::open(self.folder.path().join(path))
            .await
            .map_err(|e| format!("{shown} could not be read back: {e}"))?;
        let body = Incoming::new(tokio_util::io::ReaderStream::new(file), Some(now.size));
        let content_type = ferry_core::mime::mime_for_name(at.file_name());
        let written = crate::files::sandbox::write(
            app,
            principal,
            thread_id,
            &at,
            &content_type,
            condition,
            body,
            Door::Command,
        )
        .await;
        match written {
            Ok(_) => Ok(()),
            Err(Error::PreconditionFailed(_) | Error::AlreadyExists(_)) => Err(format!(
                "{shown} was changed through another door while the command ran: that version \
                 was kept, and the command's was not written"
            )),
            Err(e) => Err(format!("{shown} could not be written back: {e}")),
        }
    }
}

/// The regular files below `root` (links, FIFOs and devices are never written back), by their
/// path relative to it; ferry's own `.ferry-tmp` is left out.
fn files_below(root: &Path) -> HashMap<String, Seen> {
    let mut found = HashMap::new();
    let mut pending: Vec<PathBuf> = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let Some(relative) = path
                .strip_prefix(root)
                .ok()
                .and_then(|p| p.to_str())
                .map(str::to_owned)
            else {
                continue;
            };
            if relative == ".ferry-tmp" {
                continue;
            }
            if meta.is_dir() {
                pending.push(path);
            } else if meta.is_file() {
                found.insert(
                    relative,
                    Seen {
                        size: meta.len(),
                        changed_ns: changed_ns(&meta),
                    },
                );
            }
        }
    }
    found
}

/// When a file last changed: its inode change time, which any write, truncation, `chmod` or
/// replacement by the command moves. The working folder is under the data folder, whose file
/// system is expected to keep nanosecond times (ext4, XFS, tmpfs): on one with coarse times, a
/// rewrite to the same size within the same tick as the copy would not be seen.
fn changed_ns(meta: &std::fs::Metadata) -> i128 {
    i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec())
}
