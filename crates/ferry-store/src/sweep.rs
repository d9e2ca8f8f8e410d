//! The sweep: blobs that no metadata row references, and spool files a crash left behind,
//! are removed once they are older than a grace period.
//!
//! Blobs are written before the row that points at them, so a blob can be unreferenced for a
//! moment during every write; the grace period must be longer than any write takes. Blob keys
//! are UUIDv7, whose first 48 bits are the creation time in milliseconds, so a blob's age is
//! read from its key without asking the store.
//!
//! What counts as "referenced" is read from the database's own schema, not from a list kept
//! by hand: every column named `blob_key`, or ending in `_blob_key`, in every table holds blob
//! keys (the schema's one naming rule for them; a test fails on a column that looks like a
//! blob reference and breaks it). A table added later is covered the day it is created.

use futures::StreamExt;
use std::time::Duration;

use crate::Error;
use crate::blobs::Blobs;
use crate::db::{Db, Engine, now_millis};
use sqlx::Row;

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

/// The columns that hold blob keys, read from the schema: `(table, column)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobReferences {
    pub columns: Vec<(String, String)>,
    /// One query asking all of them at once.
    query: String,
}

impl Db {
    /// Every column of the schema that holds blob keys.
    pub async fn blob_references(&self) -> Result<BlobReferences, Error> {
        let sql = match self.engine() {
            Engine::Sqlite => {
                "SELECT m.name AS tbl, p.name AS col FROM sqlite_master m \
                 JOIN pragma_table_info(m.name) p \
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite%' \
                 ORDER BY m.name, p.name"
            }
            Engine::Postgres => {
                "SELECT CAST(table_name AS TEXT) AS tbl, CAST(column_name AS TEXT) AS col \
                 FROM information_schema.columns WHERE table_schema = current_schema() \
                 ORDER BY table_name, column_name"
            }
        };
        let rows = sqlx::query(sql).fetch_all(self.pool()).await?;
        let mut columns = Vec::new();
        for row in rows {
            let table: String = row.try_get("tbl")?;
            let column: String = row.try_get("col")?;
            if holds_blob_keys(&column) && is_plain_identifier(&table) {
                columns.push((table, column));
            }
        }
        if columns.is_empty() {
            return Err(Error::Config(
                "the schema has no blob_key column; refusing to sweep".into(),
            ));
        }
        let query = columns
            .iter()
            .map(|(table, column)| {
                format!("SELECT CAST(1 AS BIGINT) FROM {table} WHERE {column} = $1")
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ")
            + " LIMIT 1";
        Ok(BlobReferences { columns, query })
    }

    /// Whether any row points at a blob.
    pub async fn blob_referenced(
        &self,
        references: &BlobReferences,
        key: &str,
    ) -> Result<bool, Error> {
        // Audited: the query is built only from identifiers of the database's own schema that
        // passed `is_plain_identifier`; the key is a bound parameter.
        let found: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(references.query.clone()))
            .bind(key)
            .fetch_optional(self.pool())
            .await?;
        Ok(found.is_some())
    }
}

/// The schema's naming rule for columns holding blob keys.
pub fn holds_blob_keys(column: &str) -> bool {
    column == "blob_key" || column.ends_with("_blob_key")
}

/// Table and column names are written into the query, so only plain ones are accepted (the
/// schema's own are; anything else would be a bug, never user input).
fn is_plain_identifier(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Removes unreferenced blobs and spool files older than `grace`.
pub async fn sweep(db: &Db, blobs: &Blobs, grace: Duration) -> Result<SweepReport, Error> {
    let mut report = SweepReport {
        removed_spools: blobs.sweep_spools(grace).await.map_err(Error::Io)? as u64,
        ..SweepReport::default()
    };
    let cutoff = now_millis() - grace.as_millis() as i64;
    let references = db.blob_references().await?;
    let mut keys = blobs.keys();
    while let Some(key) = keys.next().await {
        let key = key.map_err(Error::Io)?;
        report.examined += 1;
        // Keys that are not ferry's, or are too young, are left alone.
        let Some(created) = key_millis(&key) else {
            continue;
        };
        if created > cutoff || db.blob_referenced(&references, &key).await? {
            continue;
        }
        blobs.delete(&key).await.map_err(Error::Io)?;
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
