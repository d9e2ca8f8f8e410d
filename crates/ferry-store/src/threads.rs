//! Threads: a conversation between one user and their agent, with its own sandbox and
//! event channel.

use crate::Error;
use crate::db::{Db, now_millis};
use crate::sqlite_reads::Columns;
use ferry_core::Timestamp;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    pub id: String,
    pub owner: String,
    pub title: Option<String>,
    pub created_at: Timestamp,
    /// The id of its newest event (0 before the first): a client that has shown this one has
    /// caught up with the thread as it was read.
    pub last_event: i64,
}

fn thread_from_row<R: Columns>(row: &R) -> Result<Thread, R::Error> {
    Ok(Thread {
        id: row.get("id")?,
        owner: row.get("owner")?,
        title: row.get("title")?,
        created_at: Timestamp(row.get("created_at")?),
        last_event: row.get("last_event")?,
    })
}

const THREAD: &str = "SELECT id, owner, title, created_at, last_event FROM threads WHERE id = $1";

impl Db {
    pub async fn create_thread(&self, owner: &str, title: Option<&str>) -> Result<Thread, Error> {
        let thread = Thread {
            id: uuid::Uuid::now_v7().to_string(),
            owner: owner.to_owned(),
            title: title.map(str::to_owned),
            created_at: Timestamp(now_millis()),
            last_event: 0,
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
                crate::sqlite_reads::one(conn, THREAD, &[&id], |row| thread_from_row(row))
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
        let rows =
            match owner {
                Some(owner) => sqlx::query(
                    "SELECT id, owner, title, created_at, last_event FROM threads WHERE owner = $1 \
                     ORDER BY created_at DESC, id DESC",
                )
                .bind(owner)
                .fetch_all(self.pool())
                .await?,
                None => {
                    sqlx::query(
                        "SELECT id, owner, title, created_at, last_event FROM threads \
                     ORDER BY created_at DESC, id DESC",
                    )
                    .fetch_all(self.pool())
                    .await?
                }
            };
        Ok(rows.iter().map(thread_from_row).collect::<Result<_, _>>()?)
    }

    /// Sets a thread's title (`None` clears it); `false` when there is no such thread.
    pub async fn rename_thread(&self, id: &str, title: Option<&str>) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        let changed = sqlx::query("UPDATE threads SET title = $2 WHERE id = $1")
            .bind(id)
            .bind(title)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(changed > 0)
    }

    /// Removes a thread and every record of it, in one transaction: its events, uploads,
    /// published files and their revisions, say-mode attachments, connectors and their
    /// deliveries, the S3 keys acting in it, unfinished S3 uploads into its sandbox, and its
    /// sandbox's records when the sandbox lives in the blob store. The blobs they named are left
    /// to the sweep, which removes blobs no row references. `false` when there was no thread.
    ///
    /// The transaction runs to its end on a task of its own, even if the caller stops waiting,
    /// so a thread is never left half removed.
    pub async fn delete_thread(&self, id: &str) -> Result<bool, Error> {
        let db = self.clone();
        let id = id.to_owned();
        let task = tokio::spawn(async move {
            let removed = db.delete_thread_records(&id).await;
            // A stored sandbox's file records may be kept in memory (SQLite): forget them.
            if let Some(sqlite) = db.sqlite() {
                sqlite.records.forget_all();
            }
            removed
        });
        match task.await {
            Ok(answer) => answer,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(Error::Io(std::io::Error::other(e))),
        }
    }

    async fn delete_thread_records(&self, id: &str) -> Result<bool, Error> {
        let sandbox = ferry_core::SpaceName::sandbox();
        let bucket = format!("sandbox-{id}");
        let mut tx = self.begin_write().await?;
        let removed = sqlx::query("DELETE FROM threads WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if removed == 0 {
            tx.commit().await?;
            return Ok(false);
        }
        for statement in [
            "DELETE FROM events WHERE thread_id = $1",
            "DELETE FROM uploads WHERE thread_id = $1",
            "DELETE FROM published_revisions WHERE thread_id = $1",
            "DELETE FROM published_files WHERE thread_id = $1",
            "DELETE FROM attachments WHERE thread_id = $1",
            "DELETE FROM webhook_deliveries WHERE thread_id = $1",
            "DELETE FROM connectors WHERE thread_id = $1",
            "DELETE FROM s3_keys WHERE thread_id = $1",
        ] {
            sqlx::query(statement).bind(id).execute(&mut *tx).await?;
        }
        for statement in [
            "DELETE FROM s3_parts WHERE upload_id IN \
             (SELECT upload_id FROM s3_uploads WHERE bucket = $1)",
            "DELETE FROM s3_uploads WHERE bucket = $1",
        ] {
            sqlx::query(statement)
                .bind(&bucket)
                .execute(&mut *tx)
                .await?;
        }
        // A stored sandbox is the thread's own space named "sandbox".
        for statement in [
            "DELETE FROM space_files WHERE owner = $1 AND space = $2",
            "DELETE FROM space_dirs WHERE owner = $1 AND space = $2",
            "DELETE FROM space_events WHERE owner = $1 AND space = $2",
            "DELETE FROM spaces WHERE owner = $1 AND name = $2",
        ] {
            sqlx::query(statement)
                .bind(id)
                .bind(sandbox.as_str())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(true)
    }
}
