//! Resumable uploads (tus 1.0): an upload's record and its parts. Each part is a blob written
//! by one request and recorded at the offset it starts at, in the transaction that moves the
//! upload's offset on, so the offset a client is told is always the sum of durable parts, on
//! whichever node asks. The blobs of parts no longer recorded are left to the sweep.

use ferry_core::Timestamp;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Error;
use crate::db::{Db, now_millis};

/// One resumable upload, as the table keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumableUpload {
    pub id: String,
    /// The identity that created it.
    pub made_by: String,
    /// What it becomes (JSON the application reads).
    pub target: String,
    pub length: u64,
    pub offset: u64,
    /// The `Upload-Metadata` header as sent.
    pub metadata: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub state: ResumableState,
    /// The finished upload's answer (JSON).
    pub result: Option<String>,
}

/// Where an upload is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumableState {
    /// Bytes are still arriving.
    Receiving,
    /// Every byte is in; one request is making it a plain upload.
    Finishing,
    /// It is a plain upload now; `result` holds the answer.
    Finished,
}

impl ResumableState {
    fn as_str(self) -> &'static str {
        match self {
            ResumableState::Receiving => "receiving",
            ResumableState::Finishing => "finishing",
            ResumableState::Finished => "finished",
        }
    }

    fn parse(text: &str) -> ResumableState {
        match text {
            "finishing" => ResumableState::Finishing,
            "finished" => ResumableState::Finished,
            _ => ResumableState::Receiving,
        }
    }
}

/// One stored part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumablePart {
    pub offset: u64,
    pub size: u64,
    pub blob_key: String,
}

/// What recording a part did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// The part is recorded; the upload's offset is now this.
    At(u64),
    /// The upload's offset was not the part's start (another request moved it on), or the
    /// upload is no longer receiving: nothing was recorded.
    Conflict,
    /// There is no such upload.
    Missing,
}

const COLUMNS: &str = "id, made_by, target, length, upload_offset, metadata, created_at, \
                       expires_at, state, result";

fn from_row(row: &AnyRow) -> Result<ResumableUpload, sqlx::Error> {
    Ok(ResumableUpload {
        id: row.try_get("id")?,
        made_by: row.try_get("made_by")?,
        target: row.try_get("target")?,
        length: row.try_get::<i64, _>("length")? as u64,
        offset: row.try_get::<i64, _>("upload_offset")? as u64,
        metadata: row.try_get("metadata")?,
        created_at: Timestamp(row.try_get("created_at")?),
        expires_at: Timestamp(row.try_get("expires_at")?),
        state: ResumableState::parse(&row.try_get::<String, _>("state")?),
        result: row.try_get("result")?,
    })
}

impl Db {
    /// Records a new upload, unless its maker already has `max_unfinished` uploads that are
    /// neither finished nor expired (then `false`, and nothing is recorded).
    pub async fn create_resumable(
        &self,
        upload: &ResumableUpload,
        max_unfinished: u64,
    ) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        let open: i64 = sqlx::query(
            "SELECT COUNT(*) AS n FROM resumable_uploads \
             WHERE made_by = $1 AND state <> 'finished' AND expires_at > $2",
        )
        .bind(&upload.made_by)
        .bind(now_millis())
        .fetch_one(&mut *tx)
        .await?
        .try_get("n")?;
        if open as u64 >= max_unfinished {
            tx.commit().await?;
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO resumable_uploads (id, made_by, target, length, upload_offset, \
             metadata, created_at, expires_at, state) VALUES ($1, $2, $3, $4, 0, $5, $6, $7, $8)",
        )
        .bind(&upload.id)
        .bind(&upload.made_by)
        .bind(&upload.target)
        .bind(upload.length as i64)
        .bind(&upload.metadata)
        .bind(upload.created_at.millis())
        .bind(upload.expires_at.millis())
        .bind(ResumableState::Receiving.as_str())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// One upload, whatever its state.
    pub async fn resumable(&self, id: &str) -> Result<Option<ResumableUpload>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM resumable_uploads WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(from_row).transpose()?)
    }

    /// Records `size` bytes written at `offset`, if the upload is receiving and its offset is
    /// still `offset`, moving its offset on in the same transaction. `blob_key` names the blob
    /// the bytes were written to, kept as a part; `None` when they were written into the
    /// upload's own file (a local store gathers every part in one file).
    pub async fn append_resumable_part(
        &self,
        id: &str,
        offset: u64,
        size: u64,
        blob_key: Option<&str>,
    ) -> Result<Appended, Error> {
        let mut tx = self.begin_write().await?;
        let moved = sqlx::query(
            "UPDATE resumable_uploads SET upload_offset = upload_offset + $3 \
             WHERE id = $1 AND upload_offset = $2 AND state = 'receiving' \
             AND upload_offset + $3 <= length",
        )
        .bind(id)
        .bind(offset as i64)
        .bind(size as i64)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if moved == 0 {
            let exists = sqlx::query("SELECT 1 AS x FROM resumable_uploads WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
            tx.commit().await?;
            return Ok(if exists {
                Appended::Conflict
            } else {
                Appended::Missing
            });
        }
        if let Some(blob_key) = blob_key {
            sqlx::query(
                "INSERT INTO resumable_parts (upload_id, part_offset, size, blob_key) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(id)
            .bind(offset as i64)
            .bind(size as i64)
            .bind(blob_key)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(Appended::At(offset + size))
    }

    /// The upload's parts, in order.
    pub async fn resumable_parts(&self, id: &str) -> Result<Vec<ResumablePart>, Error> {
        let rows = sqlx::query(
            "SELECT part_offset, size, blob_key FROM resumable_parts WHERE upload_id = $1 \
             ORDER BY part_offset",
        )
        .bind(id)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ResumablePart {
                    offset: row.try_get::<i64, _>("part_offset")? as u64,
                    size: row.try_get::<i64, _>("size")? as u64,
                    blob_key: row.try_get("blob_key")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(Error::from)
    }

    /// Claims a complete upload for finishing: `true` for the one request that may finish it.
    /// A claim older than `stale_before` (its request died) may be taken over.
    pub async fn claim_resumable(&self, id: &str, stale_before: Timestamp) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        let claimed = sqlx::query(
            "UPDATE resumable_uploads SET state = 'finishing', finishing_at = $2 \
             WHERE id = $1 AND upload_offset = length \
             AND (state = 'receiving' OR (state = 'finishing' AND finishing_at < $3))",
        )
        .bind(id)
        .bind(now_millis())
        .bind(stale_before.millis())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(claimed > 0)
    }

    /// Keeps a finished upload's answer and lets its parts go; answers the parts' blob keys,
    /// which nothing names any more.
    pub async fn finish_resumable(&self, id: &str, result: &str) -> Result<Vec<String>, Error> {
        let keys = self.resumable_parts(id).await?;
        let mut tx = self.begin_write().await?;
        sqlx::query("UPDATE resumable_uploads SET state = 'finished', result = $2 WHERE id = $1")
            .bind(id)
            .bind(result)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM resumable_parts WHERE upload_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(keys.into_iter().map(|p| p.blob_key).collect())
    }

    /// Removes an upload and its parts; answers the parts' blob keys (`None`: no such upload).
    pub async fn delete_resumable(&self, id: &str) -> Result<Option<Vec<String>>, Error> {
        let keys = self.resumable_parts(id).await?;
        let mut tx = self.begin_write().await?;
        let removed = sqlx::query("DELETE FROM resumable_uploads WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("DELETE FROM resumable_parts WHERE upload_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((removed > 0).then(|| keys.into_iter().map(|p| p.blob_key).collect()))
    }

    /// Uploads whose time ran out before `now`, oldest first, at most `limit`.
    pub async fn expired_resumables(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<String>, Error> {
        let rows = sqlx::query(
            "SELECT id FROM resumable_uploads WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2",
        )
        .bind(now.millis())
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| row.try_get::<String, _>("id"))
            .collect::<Result<_, _>>()
            .map_err(Error::from)
    }
}
