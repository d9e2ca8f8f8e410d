//! Threads: a conversation between one user and their agent, with its own sandbox and
//! event channel.

use ferry_core::Timestamp;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Error;
use crate::db::{Db, now_millis};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    pub id: String,
    pub owner: String,
    pub title: Option<String>,
    pub created_at: Timestamp,
}

fn thread_from_row(row: &AnyRow) -> Result<Thread, sqlx::Error> {
    Ok(Thread {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        title: row.try_get("title")?,
        created_at: Timestamp(row.try_get("created_at")?),
    })
}

const THREAD: &str = "SELECT id, owner, title, created_at FROM threads WHERE id = $1";

impl Db {
    pub async fn create_thread(&self, owner: &str, title: Option<&str>) -> Result<Thread, Error> {
        let thread = Thread {
            id: uuid::Uuid::now_v7().to_string(),
            owner: owner.to_owned(),
            title: title.map(str::to_owned),
            created_at: Timestamp(now_millis()),
        };
        sqlx::query("INSERT INTO threads (id, owner, title, created_at) VALUES ($1, $2, $3, $4)")
            .bind(&thread.id)
            .bind(&thread.owner)
            .bind(&thread.title)
            .bind(thread.created_at.millis())
            .execute(self.pool())
            .await?;
        Ok(thread)
    }

    /// One thread. Every request on a thread starts here (its access check), so on SQLite it
    /// is a point read off the pool, like a space file's (`crate::sqlite_reads`).
    pub async fn thread(&self, id: &str) -> Result<Option<Thread>, Error> {
        if let Some(sqlite) = self.sqlite() {
            return sqlite.readers.with(|conn| {
                crate::sqlite_reads::one(conn, THREAD, &[&id], |row| {
                    Ok(Thread {
                        id: row.get(0)?,
                        owner: row.get(1)?,
                        title: row.get(2)?,
                        created_at: Timestamp(row.get(3)?),
                    })
                })
            });
        }
        let row = sqlx::query(THREAD)
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(thread_from_row).transpose()?)
    }

    /// The threads of one owner (or of everyone), newest first.
    pub async fn threads(&self, owner: Option<&str>) -> Result<Vec<Thread>, Error> {
        let rows = match owner {
            Some(owner) => {
                sqlx::query(
                    "SELECT id, owner, title, created_at FROM threads WHERE owner = $1 \
                     ORDER BY created_at DESC, id DESC",
                )
                .bind(owner)
                .fetch_all(self.pool())
                .await?
            }
            None => {
                sqlx::query(
                    "SELECT id, owner, title, created_at FROM threads \
                     ORDER BY created_at DESC, id DESC",
                )
                .fetch_all(self.pool())
                .await?
            }
        };
        Ok(rows.iter().map(thread_from_row).collect::<Result<_, _>>()?)
    }
}
