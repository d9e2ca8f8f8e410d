//! Multipart uploads in progress and their parts (the S3 door's staging area).

use ferry_core::Timestamp;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Error;
use crate::blobs::StoredBlob;
use crate::db::{Db, now_millis};
use ferry_core::write::FileMeta;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    pub upload_id: String,
    pub made_by: String,
    pub bucket: String,
    pub object_path: String,
    pub content_type: String,
    /// What the object will be written with, as [`ferry_core::write::FileMeta::attributes`].
    pub attributes: Option<String>,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub part_number: u32,
    pub blob_key: String,
    pub size: u64,
    pub sha256: String,
    /// The checksum the part was verified against, as the door that stored it wrote it.
    pub checksum: Option<String>,
    pub created_at: Timestamp,
}

const UPLOAD_COLUMNS: &str =
    "upload_id, made_by, bucket, object_path, content_type, attributes, created_at";
const PART_COLUMNS: &str = "part_number, blob_key, size, sha256, checksum, created_at";

fn upload_from_row(row: &AnyRow) -> Result<Upload, sqlx::Error> {
    Ok(Upload {
        upload_id: row.try_get("upload_id")?,
        made_by: row.try_get("made_by")?,
        bucket: row.try_get("bucket")?,
        object_path: row.try_get("object_path")?,
        content_type: row.try_get("content_type")?,
        attributes: row.try_get("attributes")?,
        created_at: Timestamp(row.try_get("created_at")?),
    })
}

fn part_from_row(row: &AnyRow) -> Result<Part, sqlx::Error> {
    Ok(Part {
        part_number: row.try_get::<i64, _>("part_number")? as u32,
        blob_key: row.try_get("blob_key")?,
        size: row.try_get::<i64, _>("size")? as u64,
        sha256: row.try_get("sha256")?,
        checksum: row.try_get("checksum")?,
        created_at: Timestamp(row.try_get("created_at")?),
    })
}

impl Db {
    /// Records a new upload; its `upload_id` is made here.
    pub async fn insert_multipart(
        &self,
        made_by: &str,
        bucket: &str,
        object_path: &str,
        meta: FileMeta<'_>,
    ) -> Result<Upload, Error> {
        let upload = Upload {
            upload_id: uuid::Uuid::now_v7().simple().to_string(),
            made_by: made_by.to_owned(),
            bucket: bucket.to_owned(),
            object_path: object_path.to_owned(),
            content_type: meta.content_type.to_owned(),
            attributes: meta.attributes.map(str::to_owned),
            created_at: Timestamp(now_millis()),
        };
        let sql = format!(
            "INSERT INTO s3_uploads ({UPLOAD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&upload.upload_id)
            .bind(&upload.made_by)
            .bind(&upload.bucket)
            .bind(&upload.object_path)
            .bind(&upload.content_type)
            .bind(&upload.attributes)
            .bind(upload.created_at.millis())
            .execute(self.pool())
            .await?;
        Ok(upload)
    }

    pub async fn multipart(&self, upload_id: &str) -> Result<Option<Upload>, Error> {
        let sql = format!("SELECT {UPLOAD_COLUMNS} FROM s3_uploads WHERE upload_id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(upload_id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(upload_from_row).transpose()?)
    }

    /// The uploads `made_by` has in progress in `bucket`, by key then id, after
    /// `(key, upload_id)` when given.
    pub async fn multiparts_of(
        &self,
        made_by: &str,
        bucket: &str,
        after: Option<(&str, &str)>,
        limit: u32,
    ) -> Result<Vec<Upload>, Error> {
        let (key, id) = after.unwrap_or(("", ""));
        let sql = format!(
            "SELECT {UPLOAD_COLUMNS} FROM s3_uploads WHERE made_by = $1 AND bucket = $2 \
             AND (object_path > $3 OR (object_path = $3 AND upload_id > $4)) \
             ORDER BY object_path, upload_id LIMIT $5"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(made_by)
            .bind(bucket)
            .bind(key)
            .bind(id)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?;
        Ok(rows
            .iter()
            .map(upload_from_row)
            .collect::<Result<_, sqlx::Error>>()?)
    }

    /// Records (or replaces) a part, with the checksum it was verified against, if any;
    /// answers the blob key of the part it replaced, if any.
    pub async fn put_part(
        &self,
        upload_id: &str,
        part_number: u32,
        blob: &StoredBlob,
        checksum: Option<&str>,
    ) -> Result<Option<String>, Error> {
        let mut tx = self.begin_write().await?;
        let replaced: Option<String> = sqlx::query_scalar(
            "SELECT blob_key FROM s3_parts WHERE upload_id = $1 AND part_number = $2",
        )
        .bind(upload_id)
        .bind(i64::from(part_number))
        .fetch_optional(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO s3_parts \
             (upload_id, part_number, blob_key, size, sha256, checksum, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (upload_id, part_number) DO UPDATE \
             SET blob_key = $3, size = $4, sha256 = $5, checksum = $6, created_at = $7",
        )
        .bind(upload_id)
        .bind(i64::from(part_number))
        .bind(&blob.key)
        .bind(blob.size as i64)
        .bind(&blob.sha256)
        .bind(checksum)
        .bind(now_millis())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(replaced)
    }

    /// The parts of an upload, by number.
    pub async fn parts(&self, upload_id: &str) -> Result<Vec<Part>, Error> {
        let sql = format!(
            "SELECT {PART_COLUMNS} FROM s3_parts WHERE upload_id = $1 ORDER BY part_number"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(upload_id)
            .fetch_all(self.pool())
            .await?;
        Ok(rows
            .iter()
            .map(part_from_row)
            .collect::<Result<_, sqlx::Error>>()?)
    }

    /// Removes an upload and its parts; answers the parts' blob keys (for removal).
    pub async fn delete_multipart(&self, upload_id: &str) -> Result<Vec<String>, Error> {
        let mut tx = self.begin_write().await?;
        let keys: Vec<String> =
            sqlx::query_scalar("SELECT blob_key FROM s3_parts WHERE upload_id = $1")
                .bind(upload_id)
                .fetch_all(&mut *tx)
                .await?;
        sqlx::query("DELETE FROM s3_parts WHERE upload_id = $1")
            .bind(upload_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM s3_uploads WHERE upload_id = $1")
            .bind(upload_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(keys)
    }
}
