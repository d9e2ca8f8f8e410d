//! A sandbox kept in the blob store, its files' records in the database: the reserved space
//! `.sandbox` owned by the thread, as a deployment of several nodes keeps sandboxes.

use bytes::Bytes;
use ferry_core::path::SANDBOX_LAYOUT;
use ferry_core::write::{FileMeta, WriteCondition};
use ferry_core::{SpaceName, Timestamp, ValidPath};
use futures::Stream;

use super::{OpenedFile, SandboxEntry, Source, numbered};
use crate::Error;
use crate::blobs::{Blobs, StoredBlob};
use crate::db::Db;
use crate::spaces::{ListQuery, SpaceEntry};

/// A sandbox in the blob store: the reserved space `.sandbox` owned by the thread. Blobs are
/// immutable, so an upload's blob is shared with its sandbox copy instead of copied.
#[derive(Debug, Clone)]
pub struct StoredSandbox {
    pub(super) db: Db,
    pub(super) blobs: Blobs,
    pub(super) thread_id: String,
}

impl StoredSandbox {
    pub(super) async fn delete(
        &self,
        path: &ValidPath,
        if_match: Option<&[String]>,
    ) -> Result<(), Error> {
        let space = SpaceName::sandbox();
        self.db
            .space_delete(&self.thread_id, &space, path, if_match, Default::default())
            .await?;
        // The standard folders stay, as they do in a sandbox on disk.
        self.db
            .space_mkdirs(&self.thread_id, &space, &SANDBOX_LAYOUT)
            .await
    }

    pub(super) async fn open(&self, path: &ValidPath) -> Result<OpenedFile, Error> {
        let file = self
            .db
            .space_file(&self.thread_id, &SpaceName::sandbox(), path)
            .await?
            .ok_or(Error::NotFound)?;
        Ok(OpenedFile {
            size: file.size,
            modified: file.updated_at,
            etag: file.sha256,
            source: Source::Blob {
                key: file.blob_key,
                blobs: self.blobs.clone(),
            },
        })
    }

    pub(super) async fn list(
        &self,
        dir: Option<&ValidPath>,
        recursive: bool,
    ) -> Result<Vec<SandboxEntry>, Error> {
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let page = self
                .db
                .space_list(
                    &self.thread_id,
                    &SpaceName::sandbox(),
                    &ListQuery {
                        dir,
                        recursive,
                        limit: 10_000,
                        after,
                    },
                )
                .await?;
            out.extend(page.entries.into_iter().map(|entry| match entry {
                SpaceEntry::Dir { path } => SandboxEntry {
                    path,
                    is_dir: true,
                    size: 0,
                    modified: Timestamp(0),
                    etag: String::new(),
                },
                SpaceEntry::File(f) => SandboxEntry {
                    path: f.path,
                    is_dir: false,
                    size: f.size,
                    modified: f.updated_at,
                    etag: f.sha256,
                },
            }));
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(out),
            }
        }
    }

    pub(super) async fn write<S, E>(
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
        let blob = self.blobs.write(body, limit).await?;
        let outcome = self
            .db
            .space_put(
                &self.thread_id,
                &SpaceName::sandbox(),
                path,
                &blob,
                FileMeta::typed(content_type),
                condition,
            )
            .await;
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => {
                let _ = self.blobs.delete(&blob.key).await;
                return Err(e);
            }
        };
        Ok((
            outcome.created,
            SandboxEntry {
                path: outcome.file.path,
                is_dir: false,
                size: outcome.file.size,
                modified: outcome.file.updated_at,
                etag: outcome.file.sha256,
            },
        ))
    }

    pub(super) async fn link_in_unique(
        &self,
        folder: &str,
        name: &ValidPath,
        blob: &StoredBlob,
        content_type: &str,
    ) -> Result<String, Error> {
        for attempt in 0u32..10_000 {
            let candidate = format!("{folder}/{}", numbered(name.as_str(), attempt));
            let path = ValidPath::parse(&candidate).map_err(|_| Error::Escapes)?;
            match self
                .db
                .space_put(
                    &self.thread_id,
                    &SpaceName::sandbox(),
                    &path,
                    blob,
                    FileMeta::typed(content_type),
                    &WriteCondition::CreateOnly,
                )
                .await
            {
                Ok(_) => return Ok(candidate),
                Err(Error::AlreadyExists) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::AlreadyExists)
    }
}
