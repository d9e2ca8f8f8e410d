//! Which spaces a user has (docs/reference/spaces.md): a space exists from its first file, or
//! from being made empty, until it is removed while empty. Writing a file records its space in
//! the same transaction, so a file never lies in a space that does not exist.

use ferry_core::SpaceName;

use crate::Error;
use crate::db::{Db, now_millis};
use crate::write_plan::Statement;

/// What removing a space did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    Removed,
    /// It holds files; nothing changed.
    NotEmpty,
    /// There was no such space.
    Missing,
}

/// The statement that records that `space` exists, inside a write that puts something into
/// it.
pub(crate) fn record(owner: &str, space: &SpaceName, now: i64) -> Statement {
    Statement::new(
        INSERT_SPACE,
        vec![owner.into(), space.as_str().into(), now.into()],
    )
}

/// Makes a space's row if it has none. A space made again after it was removed goes on
/// numbering its change feed after the events of its earlier life, which stay.
const INSERT_SPACE: &str = "INSERT INTO spaces (owner, name, created_at, last_event) \
     VALUES ($1, $2, $3, (SELECT COALESCE(MAX(id), 0) FROM space_events \
     WHERE owner = $1 AND space = $2)) ON CONFLICT DO NOTHING";

const SPACE_CREATED: &str = "SELECT created_at FROM spaces WHERE owner = $1 AND name = $2";

impl Db {
    /// Whether the owner has a space of this name.
    pub async fn space_exists(&self, owner: &str, space: &SpaceName) -> Result<bool, Error> {
        // On every S3 request that names a bucket: on SQLite, read where the request runs
        // (crate::sqlite_reads).
        if let Some(sqlite) = self.sqlite() {
            let found = sqlite.readers.with(|conn| {
                crate::sqlite_reads::one(conn, SPACE_CREATED, &[&owner, &space.as_str()], |row| {
                    row.get::<_, i64>(0)
                })
            })?;
            return Ok(found.is_some());
        }
        let found: Option<i64> = sqlx::query_scalar(SPACE_CREATED)
            .bind(owner)
            .bind(space.as_str())
            .fetch_optional(self.pool())
            .await?;
        Ok(found.is_some())
    }

    /// Makes an empty space; answers whether it is new (false: it existed, and is unchanged).
    pub async fn space_create(&self, owner: &str, space: &SpaceName) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        let made = sqlx::query(INSERT_SPACE)
            .bind(owner)
            .bind(space.as_str())
            .bind(now_millis())
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(made == 1)
    }

    /// Removes a space, with any empty folders, if no file is in it, decided in one transaction with the check, so a
    /// racing write either lands before (and the space stays) or finds the space gone.
    pub async fn space_remove(&self, owner: &str, space: &SpaceName) -> Result<Removal, Error> {
        let mut tx = self.begin_write().await?;
        let exists: Option<i64> =
            sqlx::query_scalar("SELECT created_at FROM spaces WHERE owner = $1 AND name = $2")
                .bind(owner)
                .bind(space.as_str())
                .fetch_optional(&mut *tx)
                .await?;
        if exists.is_none() {
            return Ok(Removal::Missing);
        }
        let file: Option<String> = sqlx::query_scalar(
            "SELECT path FROM space_files WHERE owner = $1 AND space = $2 LIMIT 1",
        )
        .bind(owner)
        .bind(space.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        if file.is_some() {
            return Ok(Removal::NotEmpty);
        }
        // Empty folders (made by a sandbox mirror or a folder create) go with their space.
        for sql in [
            "DELETE FROM space_dirs WHERE owner = $1 AND space = $2",
            "DELETE FROM spaces WHERE owner = $1 AND name = $2",
        ] {
            sqlx::query(sql)
                .bind(owner)
                .bind(space.as_str())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(Removal::Removed)
    }
}
