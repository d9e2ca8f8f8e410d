//! Moving and removing whole subtrees of a space (or of a sandbox kept in the blob store):
//! what an agent's `move_file` and recursive `delete_file` come down to.
//!
//! Blobs are immutable and shared freely, so moving a file only re-points a row: the bytes,
//! the SHA-256 (the ETag) and the content type stay as they were. Each file moves in one
//! transaction (its new row and the removal of the old one commit together, so a file is
//! never in neither place); a folder moves file by file, after checking that none of its
//! destinations is taken.

use ferry_core::change::ChangeKind;
use ferry_core::door::Door;
use ferry_core::{SpaceName, ValidPath};
use sqlx::AssertSqlSafe;

use crate::Error;
use crate::db::{Db, now_millis};
use crate::record_cache;
use crate::space_events::{Change, recorded};
use crate::spaces::{ListQuery, SpaceEntry, SpaceFile, prune_empty_folders};

/// What is at a path of a space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    File(SpaceFile),
    Folder,
    Nothing,
}

/// The ETag (SHA-256) of what [`Db::space_move`] moved, when it was one file (which lands at
/// `to` itself); `None` for a folder.
pub fn moved_file_etag(moved: &[SpaceFile], to: &ValidPath) -> Option<String> {
    match moved {
        [file] if file.path == to.as_str() => Some(file.sha256.clone()),
        _ => None,
    }
}

impl Db {
    /// Whether `path` names a file, a folder (one that holds files, or an empty one that was
    /// made), or nothing.
    pub async fn space_find(
        &self,
        owner: &str,
        space: &SpaceName,
        path: &ValidPath,
    ) -> Result<Found, Error> {
        if let Some(file) = self.space_file(owner, space, path).await? {
            return Ok(Found::File(file));
        }
        let folder: Option<String> = sqlx::query_scalar(
            "SELECT path FROM space_dirs WHERE owner = $1 AND space = $2 AND path = $3",
        )
        .bind(owner)
        .bind(space.as_str())
        .bind(path.as_str())
        .fetch_optional(self.pool())
        .await?;
        Ok(if folder.is_some() {
            Found::Folder
        } else {
            Found::Nothing
        })
    }

    /// Every file below the folder `dir` (of the whole space when `None`), sorted by path.
    pub async fn space_files_below(
        &self,
        owner: &str,
        space: &SpaceName,
        dir: Option<&ValidPath>,
    ) -> Result<Vec<SpaceFile>, Error> {
        let mut files = Vec::new();
        let mut after = None;
        loop {
            let query = ListQuery {
                dir,
                recursive: true,
                limit: 10_000,
                after,
            };
            let page = self.space_list(owner, space, &query).await?;
            files.extend(page.entries.into_iter().filter_map(|entry| match entry {
                SpaceEntry::File(file) => Some(file),
                SpaceEntry::Dir { .. } => None,
            }));
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(files),
            }
        }
    }

    /// Moves the file or folder at `from` to `to`. A taken destination is refused
    /// ([`Error::AlreadyExists`]) unless `overwrite`, and then only file by file: a folder is
    /// never merged into one that exists. Answers the files moved, at their new paths.
    pub async fn space_move(
        &self,
        owner: &str,
        space: &SpaceName,
        from: &ValidPath,
        to: &ValidPath,
        overwrite: bool,
        door: Door,
    ) -> Result<Vec<SpaceFile>, Error> {
        match self.space_find(owner, space, from).await? {
            Found::Nothing => Err(Error::NotFound),
            Found::File(_) => Ok(vec![
                self.move_one(owner, space, from, to, overwrite, door)
                    .await?,
            ]),
            Found::Folder => {
                if self.space_find(owner, space, to).await? != Found::Nothing {
                    return Err(Error::AlreadyExists);
                }
                let files = self.space_files_below(owner, space, Some(from)).await?;
                let mut moved = Vec::with_capacity(files.len());
                for file in files {
                    let rest = &file.path[from.as_str().len()..];
                    let target = ValidPath::parse(&format!("{to}{rest}"))
                        .map_err(|e| Error::Config(format!("a moved path is invalid: {e}")))?;
                    let source = ValidPath::parse(&file.path)
                        .map_err(|e| Error::Config(format!("a stored path is invalid: {e}")))?;
                    moved.push(
                        self.move_one(owner, space, &source, &target, false, door)
                            .await?,
                    );
                }
                // Empty folders inside go with it (the moved files made their own folders).
                self.forget_folders(owner, space, Some(from)).await?;
                self.space_mkdirs(owner, space, &[to.as_str()]).await?;
                Ok(moved)
            }
        }
    }

    /// Removes the folder `dir` (every file of the space when `None`) and everything below
    /// it; answers the files removed (their blobs are left to the sweep).
    pub async fn space_remove_tree(
        &self,
        owner: &str,
        space: &SpaceName,
        dir: Option<&ValidPath>,
        door: Door,
    ) -> Result<Vec<SpaceFile>, Error> {
        let files = self.space_files_below(owner, space, dir).await?;
        let mut removed = Vec::with_capacity(files.len());
        for file in files {
            let path = ValidPath::parse(&file.path)
                .map_err(|e| Error::Config(format!("a stored path is invalid: {e}")))?;
            match self.space_delete(owner, space, &path, None, door).await {
                Ok(file) => removed.push(file),
                // Removed by someone else meanwhile: gone either way.
                Err(Error::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        self.forget_folders(owner, space, dir).await?;
        Ok(removed)
    }

    /// Forgets the folder `dir` (every folder of the space when `None`), the empty folders
    /// below it, and the folders above it left empty.
    async fn forget_folders(
        &self,
        owner: &str,
        space: &SpaceName,
        dir: Option<&ValidPath>,
    ) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        // Every path sorts at or above '' and below U+10FFFF.
        let (exact, low, high) = match dir {
            Some(dir) => (
                dir.as_str().to_owned(),
                format!("{dir}/"),
                format!("{dir}0"),
            ),
            None => (String::new(), String::new(), "\u{10FFFF}".to_owned()),
        };
        sqlx::query(
            "DELETE FROM space_dirs WHERE owner = $1 AND space = $2 \
             AND (path = $3 OR (path > $4 AND path < $5))",
        )
        .bind(owner)
        .bind(space.as_str())
        .bind(exact)
        .bind(low)
        .bind(high)
        .execute(&mut *tx)
        .await?;
        if let Some(dir) = dir {
            prune_empty_folders(&mut tx, owner, space, dir).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Moves one file in one transaction, keeping its blob, type, attributes and SHA-256.
    async fn move_one(
        &self,
        owner: &str,
        space: &SpaceName,
        from: &ValidPath,
        to: &ValidPath,
        overwrite: bool,
        door: Door,
    ) -> Result<SpaceFile, Error> {
        let (db, owner_, space_, from_, to_) = (
            self.clone(),
            owner.to_owned(),
            space.clone(),
            from.clone(),
            to.clone(),
        );
        let work = async move {
            db.move_in_tx(&owner_, &space_, &from_, &to_, overwrite, door)
                .await
        };
        // Both paths' cached records change.
        let to_key = record_cache::key(owner, space.as_str(), to.as_str());
        let db = self.clone();
        let inner = async move { db.changing(|| to_key, work).await };
        self.changing(
            || record_cache::key(owner, space.as_str(), from.as_str()),
            inner,
        )
        .await
    }

    async fn move_in_tx(
        &self,
        owner: &str,
        space: &SpaceName,
        from: &ValidPath,
        to: &ValidPath,
        overwrite: bool,
        door: Door,
    ) -> Result<SpaceFile, Error> {
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        let current = sqlx::query_as::<_, (String, i64, String, String, Option<String>)>(
            "SELECT blob_key, size, content_type, sha256, attributes FROM space_files \
             WHERE owner = $1 AND space = $2 AND path = $3",
        )
        .bind(owner)
        .bind(space.as_str())
        .bind(from.as_str())
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(Error::NotFound)?;
        let (blob_key, size, content_type, sha256, attributes) = current;
        let taken_folder: Option<String> = sqlx::query_scalar(
            "SELECT path FROM space_dirs WHERE owner = $1 AND space = $2 AND path = $3",
        )
        .bind(owner)
        .bind(space.as_str())
        .bind(to.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        if taken_folder.is_some() {
            return Err(Error::AlreadyExists);
        }
        for dir in to.ancestors() {
            let parent = dir.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
            sqlx::query(
                "INSERT INTO space_dirs (owner, space, path, parent) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(owner)
            .bind(space.as_str())
            .bind(dir)
            .bind(parent)
            .execute(&mut *tx)
            .await?;
        }
        let on_conflict = if overwrite {
            "DO UPDATE SET blob_key = $5, size = $6, content_type = $7, sha256 = $8, \
             version = space_files.version + 1, updated_at = $9, attributes = $10"
        } else {
            "DO NOTHING"
        };
        let sql = format!(
            "INSERT INTO space_files \
             (owner, space, path, parent, blob_key, size, content_type, sha256, version, \
             updated_at, attributes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10) \
             ON CONFLICT (owner, space, path) {on_conflict} RETURNING version"
        );
        let written: Option<i64> = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(owner)
            .bind(space.as_str())
            .bind(to.as_str())
            .bind(to.parent().unwrap_or(""))
            .bind(&blob_key)
            .bind(size)
            .bind(&content_type)
            .bind(&sha256)
            .bind(now)
            .bind(attributes.as_deref())
            .fetch_optional(&mut *tx)
            .await?;
        if written.is_none() {
            return Err(Error::AlreadyExists);
        }
        sqlx::query("DELETE FROM space_files WHERE owner = $1 AND space = $2 AND path = $3")
            .bind(owner)
            .bind(space.as_str())
            .bind(from.as_str())
            .execute(&mut *tx)
            .await?;
        prune_empty_folders(&mut tx, owner, space, from).await?;
        let change = Change {
            kind: ChangeKind::FileMoved,
            path: from.as_str(),
            destination: Some(to.as_str()),
            sha256: Some(&sha256),
            size: Some(size as u64),
            door,
        };
        for statement in recorded(self.engine(), owner, space, &change, now) {
            statement.execute(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(SpaceFile {
            path: to.as_str().to_owned(),
            blob_key,
            size: size as u64,
            content_type,
            sha256,
            updated_at: ferry_core::Timestamp(now),
            attributes,
        })
    }
}
