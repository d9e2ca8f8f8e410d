//! S3 access keys: which principal each key acts as. The key's secret is not stored here
//! (it is derived from the server's secret by the door that checks signatures).

use ferry_core::Timestamp;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Error;
use crate::db::{Db, now_millis};

/// One access key and the principal it acts as, in the columns the table keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessKey {
    pub access_key_id: String,
    /// The identity that made the key; it alone lists and revokes it.
    pub made_by: String,
    /// `user`, `agent` or `service`.
    pub kind: String,
    pub sub: Option<String>,
    pub thread_id: Option<String>,
    pub agent_id: Option<String>,
    pub created_at: Timestamp,
}

const COLUMNS: &str = "access_key_id, made_by, kind, sub, thread_id, agent_id, created_at";

fn key_from_row(row: &AnyRow) -> Result<AccessKey, sqlx::Error> {
    Ok(AccessKey {
        access_key_id: row.try_get("access_key_id")?,
        made_by: row.try_get("made_by")?,
        kind: row.try_get("kind")?,
        sub: row.try_get("sub")?,
        thread_id: row.try_get("thread_id")?,
        agent_id: row.try_get("agent_id")?,
        created_at: Timestamp(row.try_get("created_at")?),
    })
}

impl Db {
    /// Records a new key; its `created_at` is now.
    pub async fn insert_access_key(&self, mut key: AccessKey) -> Result<AccessKey, Error> {
        key.created_at = Timestamp(now_millis());
        let sql = format!("INSERT INTO s3_keys ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&key.access_key_id)
            .bind(&key.made_by)
            .bind(&key.kind)
            .bind(&key.sub)
            .bind(&key.thread_id)
            .bind(&key.agent_id)
            .bind(key.created_at.millis())
            .execute(self.pool())
            .await?;
        Ok(key)
    }

    pub async fn access_key(&self, access_key_id: &str) -> Result<Option<AccessKey>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM s3_keys WHERE access_key_id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(access_key_id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(key_from_row).transpose()?)
    }

    /// The keys `made_by` made, oldest first.
    pub async fn access_keys_of(&self, made_by: &str) -> Result<Vec<AccessKey>, Error> {
        let sql = format!(
            "SELECT {COLUMNS} FROM s3_keys WHERE made_by = $1 ORDER BY created_at, access_key_id"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(made_by)
            .fetch_all(self.pool())
            .await?;
        Ok(rows
            .iter()
            .map(key_from_row)
            .collect::<Result<_, sqlx::Error>>()?)
    }

    /// Removes a key `made_by` made; whether there was one.
    pub async fn delete_access_key(
        &self,
        made_by: &str,
        access_key_id: &str,
    ) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        let removed = sqlx::query("DELETE FROM s3_keys WHERE access_key_id = $1 AND made_by = $2")
            .bind(access_key_id)
            .bind(made_by)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(removed > 0)
    }
}
