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
    /// When its newest event was stored, or when it was made if it has none: what a list
    /// sorted by activity sorts on.
    pub active_at: Timestamp,
}

fn thread_from_row<R: Columns>(row: &R) -> Result<Thread, R::Error> {
    Ok(Thread {
        id: row.get("id")?,
        owner: row.get("owner")?,
        title: row.get("title")?,
        created_at: Timestamp(row.get("created_at")?),
        last_event: row.get("last_event")?,
        active_at: Timestamp(row.get("active_at")?),
    })
}

/// A thread's columns, with the time of its newest event (one primary-key read of `events`).
macro_rules! columns {
    () => {
        "SELECT id, owner, title, created_at, last_event, \
         COALESCE((SELECT e.created_at FROM events e WHERE e.thread_id = threads.id \
         AND e.id = threads.last_event), created_at) AS active_at FROM threads"
    };
}

/// Most recently active first; ids break ties so that the order is total.
macro_rules! by_activity {
    () => {
        " ORDER BY active_at DESC, id DESC"
    };
}

const THREAD: &str = concat!(columns!(), " WHERE id = $1");
const THREADS_OF: &str = concat!(columns!(), " WHERE owner = $1", by_activity!());
const ALL_THREADS: &str = concat!(columns!(), by_activity!());

/// The live-delivery key under which a person's thread list is told that it changed.
pub fn list_key(owner: &str) -> String {
    format!("{LIST_KEY}{owner}")
}

const LIST_KEY: &str = "threads\u{1f}";

/// Whether a live-delivery key names a person's thread list (rather than a thread).
pub fn is_list_key(key: &str) -> bool {
    key.starts_with(LIST_KEY)
}

impl Db {
    pub async fn create_thread(&self, owner: &str, title: Option<&str>) -> Result<Thread, Error> {
        let now = Timestamp(now_millis());
        let thread = Thread {
            id: uuid::Uuid::now_v7().to_string(),
            owner: owner.to_owned(),
            title: title.map(str::to_owned),
            created_at: now,
            last_event: 0,
            active_at: now,
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

    /// The threads of one owner (or of everyone), most recently active first.
    pub async fn threads(&self, owner: Option<&str>) -> Result<Vec<Thread>, Error> {
        let rows = match owner {
            Some(owner) => {
                sqlx::query(THREADS_OF)
                    .bind(owner)
                    .fetch_all(self.pool())
                    .await?
            }
            None => sqlx::query(ALL_THREADS).fetch_all(self.pool()).await?,
        };
        Ok(rows.iter().map(thread_from_row).collect::<Result<_, _>>()?)
    }

    /// The threads of one owner (or of everyone) whose title, messages or file names hold
    /// `text`, most recently active first. Letters match whatever their case (on SQLite, only
    /// the ASCII letters do: its `LIKE` folds no other).
    pub async fn search_threads(
        &self,
        owner: Option<&str>,
        text: &str,
    ) -> Result<Vec<Thread>, Error> {
        let pattern = format!("%{}%", escape_like(text));
        let matches = match self.engine() {
            crate::Engine::Postgres => search_condition("body::jsonb", "ILIKE"),
            crate::Engine::Sqlite => search_condition("body", "LIKE"),
        };
        // Built of this file's constants alone: the searched text is a bound parameter.
        let rows = match owner {
            Some(owner) => {
                let sql = format!(
                    "{} WHERE owner = $2 AND {matches}{}",
                    columns!(),
                    by_activity!()
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&pattern)
                    .bind(owner)
                    .fetch_all(self.pool())
                    .await?
            }
            None => {
                let sql = format!("{} WHERE {matches}{}", columns!(), by_activity!());
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&pattern)
                    .fetch_all(self.pool())
                    .await?
            }
        };
        Ok(rows.iter().map(thread_from_row).collect::<Result<_, _>>()?)
    }

    /// Tells every other node that `owner`'s thread list changed (a thread made, renamed or
    /// removed), as the notification of an event under [`list_key`] (Postgres only: on SQLite
    /// there is one node, which tells its own subscribers).
    pub async fn notify_thread_list(&self, owner: &str) -> Result<(), Error> {
        if self.engine() == crate::Engine::Postgres {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(crate::events::NOTIFY_CHANNEL)
                .bind(format!("{} 0", list_key(owner)))
                .execute(self.pool())
                .await?;
        }
        Ok(())
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

/// The condition a searched thread meets, for the pattern `$1`: its title, or the text a
/// person sees of one of its events — a message, an upload's or a sent file's name, a
/// published file's display name. `body` reads an event's JSON as each engine's `->>` takes it
/// (Postgres parses the stored text as `jsonb`; SQLite reads text as JSON itself).
fn search_condition(body: &str, like: &str) -> String {
    format!(
        "(title {like} $1 ESCAPE '\\' OR EXISTS (SELECT 1 FROM events e \
         WHERE e.thread_id = threads.id \
         AND e.kind IN ('message', 'upload', 'file_send', 'file_published') \
         AND (CASE e.kind \
           WHEN 'message' THEN e.{body} ->> 'content' \
           WHEN 'upload' THEN e.{body} -> 'upload' ->> 'fileName' \
           WHEN 'file_send' THEN e.{body} -> 'fileContents' ->> 'filename' \
           ELSE e.{body} -> 'file' ->> 'displayName' END) {like} $1 ESCAPE '\\'))"
    )
}

/// `text` with `LIKE`'s wildcards and its escape character taken literally.
fn escape_like(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}
