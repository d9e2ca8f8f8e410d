//! S3 access keys: which principal each key acts as. The key's secret is not stored here
//! (it is derived from the server's secret by the door that checks signatures).

use crate::Error;
use crate::db::{Db, now_millis};
use crate::sqlite_reads::Columns;
use ferry_core::Timestamp;

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
    /// When the key stops working: an agent's key ends with the token that made it.
    pub expires_at: Option<Timestamp>,
}

/// Which keys a listing or a revocation reaches: always the caller's own, and the keys acting
/// in threads it owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyScope<'a> {
    /// The keys the caller made, and nothing else.
    Own,
    /// Also the keys agents made in threads of this user.
    AndThreadsOf(&'a str),
    /// Also every agent's key (a service token reaches every thread).
    AndEveryAgent,
}

impl KeyScope<'_> {
    /// The condition on `s3_keys`, with `made_by` as placeholder `$first` and the owner (when
    /// the scope names one, and only then) as the next.
    fn condition(self, first: usize) -> String {
        let (maker, owner) = (first, first + 1);
        match self {
            KeyScope::Own => format!("made_by = ${maker}"),
            KeyScope::AndThreadsOf(_) => {
                format!("(made_by = ${maker} OR (kind = 'agent' AND sub = ${owner}))")
            }
            KeyScope::AndEveryAgent => format!("(made_by = ${maker} OR kind = 'agent')"),
        }
    }

    fn owner(self) -> Option<String> {
        match self {
            KeyScope::AndThreadsOf(sub) => Some(sub.to_owned()),
            _ => None,
        }
    }
}

const COLUMNS: &str =
    "access_key_id, made_by, kind, sub, thread_id, agent_id, created_at, expires_at";

fn key_from_row<R: Columns>(row: &R) -> Result<AccessKey, R::Error> {
    Ok(AccessKey {
        access_key_id: row.get("access_key_id")?,
        made_by: row.get("made_by")?,
        kind: row.get("kind")?,
        sub: row.get("sub")?,
        thread_id: row.get("thread_id")?,
        agent_id: row.get("agent_id")?,
        created_at: Timestamp(row.get("created_at")?),
        expires_at: row.get::<Option<i64>>("expires_at")?.map(Timestamp),
    })
}

impl Db {
    /// Records a new key; its `created_at` is now.
    pub async fn insert_access_key(&self, mut key: AccessKey) -> Result<AccessKey, Error> {
        key.created_at = Timestamp(now_millis());
        let sql =
            format!("INSERT INTO s3_keys ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&key.access_key_id)
            .bind(&key.made_by)
            .bind(&key.kind)
            .bind(&key.sub)
            .bind(&key.thread_id)
            .bind(&key.agent_id)
            .bind(key.created_at.millis())
            .bind(key.expires_at.map(|t| t.millis()))
            .execute(self.pool())
            .await?;
        Ok(key)
    }

    pub async fn access_key(&self, access_key_id: &str) -> Result<Option<AccessKey>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM s3_keys WHERE access_key_id = $1");
        // On every S3 request signed with a key: on SQLite, read where the request runs
        // (crate::sqlite_reads).
        if let Some(sqlite) = self.sqlite() {
            return sqlite.readers.with(|conn| {
                crate::sqlite_reads::one(conn, &sql, &[&access_key_id], |row| key_from_row(row))
            });
        }
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(access_key_id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(key_from_row).transpose()?)
    }

    /// The keys `made_by` made and those `scope` adds, oldest first.
    pub async fn access_keys_of(
        &self,
        made_by: &str,
        scope: KeyScope<'_>,
    ) -> Result<Vec<AccessKey>, Error> {
        let sql = format!(
            "SELECT {COLUMNS} FROM s3_keys WHERE {} ORDER BY created_at, access_key_id",
            scope.condition(1)
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(made_by);
        if let Some(owner) = scope.owner() {
            query = query.bind(owner);
        }
        let rows = query.fetch_all(self.pool()).await?;
        Ok(rows
            .iter()
            .map(key_from_row)
            .collect::<Result<_, sqlx::Error>>()?)
    }

    /// Removes a key `made_by` made or `scope` reaches; whether there was one.
    pub async fn delete_access_key(
        &self,
        made_by: &str,
        scope: KeyScope<'_>,
        access_key_id: &str,
    ) -> Result<bool, Error> {
        let sql = format!(
            "DELETE FROM s3_keys WHERE access_key_id = $1 AND {}",
            scope.condition(2)
        );
        let mut tx = self.begin_write().await?;
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(access_key_id)
            .bind(made_by);
        if let Some(owner) = scope.owner() {
            query = query.bind(owner);
        }
        let removed = query.execute(&mut *tx).await?.rows_affected();
        tx.commit().await?;
        Ok(removed > 0)
    }
}
