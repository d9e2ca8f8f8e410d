//! User uploads (docs/reference/uploads.md): the original bytes, where they went, and their preview.

use ferry_core::Timestamp;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Error;
use crate::db::Db;
use crate::events::{Rendered, StoredEvent, append_in};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    pub id: String,
    pub thread_id: String,
    pub owner: String,
    pub file_name: String,
    pub file_type: String,
    pub size: u64,
    pub sha256: String,
    /// `image` or `document`.
    pub kind: String,
    pub storage_path: String,
    pub sandbox_path: String,
    pub preview: Option<String>,
    pub preview_error: Option<String>,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub blob_key: String,
    pub created_at: Timestamp,
}

const COLUMNS: &str = "id, thread_id, owner, file_name, file_type, size, sha256, kind, \
    storage_path, sandbox_path, preview, preview_error, width, height, blob_key, created_at";

fn upload_from_row(row: &AnyRow) -> Result<Upload, sqlx::Error> {
    Ok(Upload {
        id: row.try_get("id")?,
        thread_id: row.try_get("thread_id")?,
        owner: row.try_get("owner")?,
        file_name: row.try_get("file_name")?,
        file_type: row.try_get("file_type")?,
        size: row.try_get::<i64, _>("size")? as u64,
        sha256: row.try_get("sha256")?,
        kind: row.try_get("kind")?,
        storage_path: row.try_get("storage_path")?,
        sandbox_path: row.try_get("sandbox_path")?,
        preview: row.try_get("preview")?,
        preview_error: row.try_get("preview_error")?,
        width: row.try_get::<Option<i64>, _>("width")?.map(|w| w as u32),
        height: row.try_get::<Option<i64>, _>("height")?.map(|h| h as u32),
        blob_key: row.try_get("blob_key")?,
        created_at: Timestamp(row.try_get("created_at")?),
    })
}

/// A fresh upload id (UUIDv7, so uploads sort by time).
pub fn new_upload_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

impl Db {
    /// Records an upload and its `upload` event in one transaction; `render` turns the upload,
    /// the event id and time into the event's JSON.
    pub async fn insert_upload(
        &self,
        upload: Upload,
        render: impl FnOnce(&Upload, i64, Timestamp) -> Rendered,
    ) -> Result<(Upload, StoredEvent), Error> {
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "INSERT INTO uploads ({COLUMNS}) VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&upload.id)
            .bind(&upload.thread_id)
            .bind(&upload.owner)
            .bind(&upload.file_name)
            .bind(&upload.file_type)
            .bind(upload.size as i64)
            .bind(&upload.sha256)
            .bind(&upload.kind)
            .bind(&upload.storage_path)
            .bind(&upload.sandbox_path)
            .bind(&upload.preview)
            .bind(&upload.preview_error)
            .bind(upload.width.map(i64::from))
            .bind(upload.height.map(i64::from))
            .bind(&upload.blob_key)
            .bind(upload.created_at.millis())
            .execute(&mut *tx)
            .await?;
        let event = append_in(self, &mut tx, &upload.thread_id, |id, at| {
            render(&upload, id, at)
        })
        .await?;
        tx.commit().await?;
        Ok((upload, event))
    }

    pub async fn uploads(&self, thread_id: &str) -> Result<Vec<Upload>, Error> {
        let sql =
            format!("SELECT {COLUMNS} FROM uploads WHERE thread_id = $1 ORDER BY created_at, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(thread_id)
            .fetch_all(self.pool())
            .await?;
        Ok(rows.iter().map(upload_from_row).collect::<Result<_, _>>()?)
    }

    pub async fn upload(&self, thread_id: &str, id: &str) -> Result<Option<Upload>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM uploads WHERE thread_id = $1 AND id = $2");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(thread_id)
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(upload_from_row).transpose()?)
    }
}
