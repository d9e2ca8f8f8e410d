//! The sweep: blobs that no metadata row references, and spool files a crash left behind,
//! are removed once they are older than a grace period.
//!
//! Blobs are written before the row that points at them, so a blob can be unreferenced for a
//! moment during every write; the grace period must be longer than any write takes. Blob keys
//! are UUIDv7, whose first 48 bits are the creation time in milliseconds, so a blob's age is
//! read from its key without asking the store.

use futures::StreamExt;
use std::time::Duration;

use crate::StoreError;
use crate::blobs::Blobs;
use crate::db::{Db, now_millis};

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    pub examined: u64,
    pub removed_blobs: u64,
    pub removed_spools: u64,
}

/// The creation time (Unix milliseconds) a UUIDv7 key carries, or `None` for another name.
pub fn key_millis(key: &str) -> Option<i64> {
    let uuid = uuid::Uuid::try_parse(key).ok()?;
    (uuid.get_version_num() == 7).then(|| (uuid.as_u128() >> 80) as i64)
}

impl Db {
    /// Whether any row points at a blob.
    pub async fn blob_referenced(&self, key: &str) -> Result<bool, StoreError> {
        let found: Option<i64> = sqlx::query_scalar(
            "SELECT CAST(1 AS BIGINT) FROM space_files WHERE blob_key = $1 \
             UNION ALL SELECT CAST(1 AS BIGINT) FROM uploads WHERE blob_key = $1 \
             UNION ALL SELECT CAST(1 AS BIGINT) FROM published_revisions WHERE blob_key = $1 \
             UNION ALL SELECT CAST(1 AS BIGINT) FROM attachments WHERE blob_key = $1 \
             LIMIT 1",
        )
        .bind(key)
        .fetch_optional(self.pool())
        .await?;
        Ok(found.is_some())
    }
}

/// Removes unreferenced blobs and spool files older than `grace`.
pub async fn sweep(db: &Db, blobs: &Blobs, grace: Duration) -> Result<SweepReport, StoreError> {
    let mut report = SweepReport {
        removed_spools: blobs.sweep_spools(grace).await? as u64,
        ..SweepReport::default()
    };
    let cutoff = now_millis() - grace.as_millis() as i64;
    let mut keys = blobs.keys();
    while let Some(key) = keys.next().await {
        let key = key?;
        report.examined += 1;
        // Keys that are not ferry's, or are too young, are left alone.
        let Some(created) = key_millis(&key) else {
            continue;
        };
        if created > cutoff || db.blob_referenced(&key).await? {
            continue;
        }
        blobs.delete(&key).await?;
        report.removed_blobs += 1;
        tracing::info!(%key, "swept an unreferenced blob");
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_come_from_v7_keys() {
        let before = now_millis();
        let key = uuid::Uuid::now_v7().simple().to_string();
        let millis = key_millis(&key).unwrap();
        assert!(millis >= before && millis <= now_millis());
        assert_eq!(key_millis("not-a-key"), None);
        assert_eq!(key_millis(&uuid::Uuid::new_v4().simple().to_string()), None);
    }
}
