//! Reading many files of a sandbox at once, for a search over it: locally in one turn of the
//! thread's permits per batch (each file opened through the jail exactly as a single read
//! opens it), rather than one turn and one blocking task per file.

use std::io::Read as _;

use ferry_core::ValidPath;

use super::{LocalSandbox, OpenedFile, Sandbox, Source, StoredSandbox, open_checked};
use crate::Error;

/// One file's bytes, or why they were not read.
pub type ReadResult = Result<Vec<u8>, Error>;

impl Sandbox {
    /// Reads each of `paths` whole; a file over `limit` bytes is [`Error::TooLarge`], one that
    /// is gone, outside the jail or not a regular file is that error, and neither stops the
    /// others.
    pub async fn read_files(
        &self,
        paths: Vec<ValidPath>,
        limit: u64,
    ) -> Result<Vec<(ValidPath, ReadResult)>, Error> {
        match self {
            Sandbox::Local(local) => local.read_files(paths, limit).await,
            Sandbox::Stored(stored) => stored.read_files(paths, limit).await,
        }
    }
}

/// A file's bytes, refusing more than `limit` (it may have grown since it was listed).
fn read_whole(opened: OpenedFile, limit: u64) -> ReadResult {
    if opened.size > limit {
        return Err(Error::TooLarge { limit });
    }
    let Source::File(file) = opened.source else {
        return Err(Error::NotAFile);
    };
    let mut bytes = Vec::with_capacity(opened.size as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Error::TooLarge { limit });
    }
    Ok(bytes)
}

impl LocalSandbox {
    async fn read_files(
        &self,
        paths: Vec<ValidPath>,
        limit: u64,
    ) -> Result<Vec<(ValidPath, ReadResult)>, Error> {
        self.blocking(move |dir| {
            Ok(paths
                .into_iter()
                .map(|path| {
                    let read = open_checked(dir, path.as_str()).and_then(|f| read_whole(f, limit));
                    (path, read)
                })
                .collect())
        })
        .await
    }
}

impl StoredSandbox {
    async fn read_files(
        &self,
        paths: Vec<ValidPath>,
        limit: u64,
    ) -> Result<Vec<(ValidPath, ReadResult)>, Error> {
        use futures::StreamExt;
        let reads = futures::stream::iter(paths)
            .map(|path| async move {
                let read = match self.open(&path).await {
                    Ok(opened) if opened.size > limit => Err(Error::TooLarge { limit }),
                    Ok(opened) => match opened.read_to_end(limit).await {
                        Ok(Some(bytes)) => Ok(bytes),
                        Ok(None) => Err(Error::TooLarge { limit }),
                        Err(e) => Err(Error::Io(e)),
                    },
                    Err(e) => Err(e),
                };
                (path, read)
            })
            .buffered(8)
            .collect()
            .await;
        Ok(reads)
    }
}

impl Sandbox {
    /// The paths of every regular file below `dir` (the whole sandbox when `None`), relative
    /// to `/sandbox/`, sorted: what a glob needs and no more. Locally the folder entries' own
    /// types are read (no `stat` per file) and symlinks are neither followed nor listed.
    pub async fn file_paths(&self, dir: Option<&ValidPath>) -> Result<Vec<String>, Error> {
        match self {
            Sandbox::Local(local) => local.file_paths(dir).await,
            Sandbox::Stored(_) => Ok(self
                .list(dir, true)
                .await?
                .entries
                .into_iter()
                .filter(|entry| !entry.is_dir)
                .map(|entry| entry.path)
                .collect()),
        }
    }
}

impl LocalSandbox {
    async fn file_paths(&self, dir: Option<&ValidPath>) -> Result<Vec<String>, Error> {
        let prefix = dir.map(|d| d.as_str().to_owned());
        self.blocking(move |root| {
            let start = match &prefix {
                Some(p) => match root.open_dir(p) {
                    Ok(d) => d,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => return Err(super::jailed(e)),
                },
                None => root.try_clone().map_err(super::jailed)?,
            };
            let mut out = Vec::new();
            names_below(&start, prefix.as_deref(), &mut out)?;
            out.sort_unstable();
            Ok(out)
        })
        .await
    }
}

/// [`Sandbox::file_paths`] of one folder, depth first.
fn names_below(
    dir: &cap_std::fs::Dir,
    prefix: Option<&str>,
    out: &mut Vec<String>,
) -> Result<(), Error> {
    for entry in dir.entries().map_err(super::jailed)? {
        let entry = entry.map_err(super::jailed)?;
        let Some(name) = super::addressable_name(&entry) else {
            continue;
        };
        if prefix.is_none() && name == super::TMP_DIR {
            continue;
        }
        let path = match prefix {
            Some(p) => format!("{p}/{name}"),
            None => name.clone(),
        };
        if path.len() > super::MAX_PATH_BYTES {
            continue;
        }
        let kind = match entry.file_type() {
            Ok(kind) => kind,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(super::jailed(e)),
        };
        if kind.is_dir() {
            if let Ok(sub) = cap_fs_ext::DirExt::open_dir_nofollow(dir, &name) {
                names_below(&sub, Some(&path), out)?;
            }
        } else if kind.is_file() {
            out.push(path);
        }
        if out.len() > super::MAX_LISTED {
            return Err(Error::TooManyEntries);
        }
    }
    Ok(())
}
