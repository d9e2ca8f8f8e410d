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
