//! Published files and their revisions (docs/reference/publish.md, `publish_file_to_user`).

use ferry_core::Timestamp;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Error;
use crate::db::{Db, now_millis};
use crate::events::{Rendered, StoredEvent, append_in};

/// One revision of a published file, with the file's id and display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    pub file_id: String,
    pub thread_id: String,
    pub display_name: String,
    pub revision: u32,
    pub description: String,
    pub filename: String,
    pub file_type: String,
    pub mime_type: String,
    pub file_size: u64,
    pub sha256: String,
    pub storage_path: String,
    pub sandbox_path: String,
    pub blob_key: String,
    pub preview_kind: String,
    pub published_at: Timestamp,
}

/// What a new publish brings; the store assigns the file id, the revision and the time.
#[derive(Debug, Clone)]
pub struct NewRevision {
    pub thread_id: String,
    pub display_name: String,
    pub description: String,
    pub filename: String,
    pub file_type: String,
    pub mime_type: String,
    pub file_size: u64,
    pub sha256: String,
    pub storage_path: String,
    pub sandbox_path: String,
    pub blob_key: String,
    pub preview_kind: String,
}

const SELECT: &str = "SELECT r.file_id, r.thread_id, f.display_name, r.revision, r.description, \
    r.filename, r.file_type, r.mime_type, r.file_size, r.sha256, r.storage_path, r.sandbox_path, \
    r.blob_key, r.preview_kind, r.published_at \
    FROM published_revisions r JOIN published_files f ON f.id = r.file_id";

fn revision_from_row(row: &AnyRow) -> Result<Revision, sqlx::Error> {
    Ok(Revision {
        file_id: row.try_get("file_id")?,
        thread_id: row.try_get("thread_id")?,
        display_name: row.try_get("display_name")?,
        revision: row.try_get::<i64, _>("revision")? as u32,
        description: row.try_get("description")?,
        filename: row.try_get("filename")?,
        file_type: row.try_get("file_type")?,
        mime_type: row.try_get("mime_type")?,
        file_size: row.try_get::<i64, _>("file_size")? as u64,
        sha256: row.try_get("sha256")?,
        storage_path: row.try_get("storage_path")?,
        sandbox_path: row.try_get("sandbox_path")?,
        blob_key: row.try_get("blob_key")?,
        preview_kind: row.try_get("preview_kind")?,
        published_at: Timestamp(row.try_get("published_at")?),
    })
}

impl Db {
    /// Records a publish: a new file for a new display name, else the next revision of the
    /// existing one; and its `file_published` event, all in one transaction.
    pub async fn publish(
        &self,
        new: NewRevision,
        render: impl FnOnce(&Revision, i64, Timestamp) -> Rendered,
    ) -> Result<(Revision, StoredEvent), Error> {
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(
            "INSERT INTO published_files (id, thread_id, display_name, latest_revision, created_at) \
             VALUES ($1, $2, $3, 1, $4) \
             ON CONFLICT (thread_id, display_name) \
             DO UPDATE SET latest_revision = published_files.latest_revision + 1 \
             RETURNING id, latest_revision",
        )
        .bind(uuid::Uuid::now_v7().simple().to_string())
        .bind(&new.thread_id)
        .bind(&new.display_name)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        let file_id: String = row.try_get("id")?;
        let revision: i64 = row.try_get("latest_revision")?;
        sqlx::query(
            "INSERT INTO published_revisions (file_id, revision, thread_id, description, filename, \
             file_type, mime_type, file_size, sha256, storage_path, sandbox_path, blob_key, \
             preview_kind, published_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(&file_id)
        .bind(revision)
        .bind(&new.thread_id)
        .bind(&new.description)
        .bind(&new.filename)
        .bind(&new.file_type)
        .bind(&new.mime_type)
        .bind(new.file_size as i64)
        .bind(&new.sha256)
        .bind(&new.storage_path)
        .bind(&new.sandbox_path)
        .bind(&new.blob_key)
        .bind(&new.preview_kind)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let stored = Revision {
            file_id,
            thread_id: new.thread_id,
            display_name: new.display_name,
            revision: revision as u32,
            description: new.description,
            filename: new.filename,
            file_type: new.file_type,
            mime_type: new.mime_type,
            file_size: new.file_size,
            sha256: new.sha256,
            storage_path: new.storage_path,
            sandbox_path: new.sandbox_path,
            blob_key: new.blob_key,
            preview_kind: new.preview_kind,
            published_at: Timestamp(now),
        };
        let event = append_in(self, &mut tx, &stored.thread_id, |id, at| {
            render(&stored, id, at)
        })
        .await?;
        tx.commit().await?;
        Ok((stored, event))
    }

    /// The latest revision of each published file of a thread (or every revision), in the
    /// order they were first published.
    pub async fn published(
        &self,
        thread_id: &str,
        all_revisions: bool,
    ) -> Result<Vec<Revision>, Error> {
        let filter = if all_revisions {
            ""
        } else {
            " AND r.revision = f.latest_revision"
        };
        let sql = format!(
            "{SELECT} WHERE r.thread_id = $1{filter} ORDER BY f.created_at, f.id, r.revision"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(thread_id)
            .fetch_all(self.pool())
            .await?;
        Ok(rows
            .iter()
            .map(revision_from_row)
            .collect::<Result<_, _>>()?)
    }

    /// One revision of a published file (the latest when `revision` is `None`).
    pub async fn published_revision(
        &self,
        thread_id: &str,
        file_id: &str,
        revision: Option<u32>,
    ) -> Result<Option<Revision>, Error> {
        let row = match revision {
            Some(n) => {
                let sql = format!(
                    "{SELECT} WHERE r.thread_id = $1 AND r.file_id = $2 AND r.revision = $3"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(thread_id)
                    .bind(file_id)
                    .bind(i64::from(n))
                    .fetch_optional(self.pool())
                    .await?
            }
            None => {
                let sql = format!(
                    "{SELECT} WHERE r.thread_id = $1 AND r.file_id = $2 \
                     AND r.revision = f.latest_revision"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(thread_id)
                    .bind(file_id)
                    .fetch_optional(self.pool())
                    .await?
            }
        };
        Ok(row.as_ref().map(revision_from_row).transpose()?)
    }

    /// The newest revision stored under a storage path (`/api/storage/thread-file`, docs/reference/publish.md).
    pub async fn published_by_storage_path(
        &self,
        storage_path: &str,
    ) -> Result<Option<Revision>, Error> {
        let sql = format!(
            "{SELECT} WHERE r.storage_path = $1 ORDER BY r.published_at DESC, r.revision DESC LIMIT 1"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(storage_path)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(revision_from_row).transpose()?)
    }

    /// A blob already holding these bytes in the thread's published files, if any: a new
    /// revision with unchanged content points at it instead of storing the bytes again.
    pub async fn published_blob_with_sha(
        &self,
        thread_id: &str,
        sha256: &str,
    ) -> Result<Option<String>, Error> {
        Ok(sqlx::query_scalar(
            "SELECT blob_key FROM published_revisions WHERE thread_id = $1 AND sha256 = $2 LIMIT 1",
        )
        .bind(thread_id)
        .bind(sha256)
        .fetch_optional(self.pool())
        .await?)
    }
}
