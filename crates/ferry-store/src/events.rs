//! The stored event channel of a thread (docs/reference/events.md).
//!
//! Each event gets the next id of its thread while the thread's row is locked, inside the
//! transaction that stores it. Ids are therefore gap-free and committed in order, which is what
//! lets a subscriber resume with "everything after N" and miss nothing.

use ferry_core::Timestamp;
use sqlx::Row;

use crate::Error;
use crate::db::{Db, WriteTx, now_millis};
use crate::write_plan::numbered;

/// An event as stored: its id in the thread and its complete JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub thread_id: String,
    pub id: i64,
    pub kind: String,
    pub json: String,
}

/// An event made ready to store: its `type` (kept in a column of its own, for readers that
/// pick events by type without parsing them) and its complete JSON text. Both come from the one
/// value the caller renders, so they cannot disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub kind: &'static str,
    pub json: String,
}

/// The Postgres channel on which every node hears of new events (`<thread id> <event id>`).
pub const NOTIFY_CHANNEL: &str = "ferry_events";

/// Stores one event in `tx`. `render` receives the event's id and time and returns the event.
///
/// On Postgres the transaction also sends a notification, which Postgres delivers to every
/// listening node when (and only if) the transaction commits.
pub async fn append_in(
    db: &Db,
    tx: &mut WriteTx,
    thread_id: &str,
    render: impl FnOnce(i64, Timestamp) -> Rendered,
) -> Result<StoredEvent, Error> {
    let id: i64 = sqlx::query_scalar(NEXT_ID)
        .bind(thread_id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(Error::NotFound)?;
    let now = now_millis();
    let Rendered { kind, json } = render(id, Timestamp(now));
    sqlx::query(INSERT)
        .bind(thread_id)
        .bind(id)
        .bind(kind)
        .bind(&json)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    if db.engine() == crate::Engine::Postgres {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(NOTIFY_CHANNEL)
            .bind(format!("{thread_id} {id}"))
            .execute(&mut **tx)
            .await?;
    }
    Ok(StoredEvent {
        thread_id: thread_id.to_owned(),
        id,
        kind: kind.to_owned(),
        json,
    })
}

/// Takes the thread's next event id (the row stays locked until the transaction ends).
const NEXT_ID: &str =
    "UPDATE threads SET last_event = last_event + 1 WHERE id = $1 RETURNING last_event";
const INSERT: &str =
    "INSERT INTO events (thread_id, id, kind, body, created_at) VALUES ($1, $2, $3, $4, $5)";

/// [`append_in`] on SQLite's group-committing writer: the same two statements on its
/// connection (a batch's writes run one after another, so ids stay gap-free and in order).
fn append_sqlite(
    conn: &rusqlite::Connection,
    thread_id: &str,
    render: impl FnOnce(i64, Timestamp) -> Rendered,
) -> rusqlite::Result<Option<StoredEvent>> {
    use rusqlite::OptionalExtension;
    let Some(id) = conn
        .prepare_cached(&numbered(NEXT_ID))?
        .query_row([thread_id], |row| row.get::<_, i64>(0))
        .optional()?
    else {
        return Ok(None);
    };
    let now = now_millis();
    let Rendered { kind, json } = render(id, Timestamp(now));
    conn.prepare_cached(&numbered(INSERT))?
        .execute(rusqlite::params![thread_id, id, kind, json, now])?;
    Ok(Some(StoredEvent {
        thread_id: thread_id.to_owned(),
        id,
        kind: kind.to_owned(),
        json,
    }))
}

impl Db {
    /// Stores one event in its own transaction.
    pub async fn append_event(
        &self,
        thread_id: &str,
        render: impl FnOnce(i64, Timestamp) -> Rendered + Send + 'static,
    ) -> Result<StoredEvent, Error> {
        if let Some(sqlite) = self.sqlite() {
            let thread_id = thread_id.to_owned();
            return sqlite
                .group
                .write(move |conn| {
                    append_sqlite(conn, &thread_id, render)
                        .map_err(crate::group_commit::database_error)?
                        .ok_or(Error::NotFound)
                })
                .await;
        }
        let mut tx = self.begin_write().await?;
        let event = append_in(self, &mut tx, thread_id, render).await?;
        tx.commit().await?;
        Ok(event)
    }

    /// Up to `limit` events with ids above `after`, oldest first.
    pub async fn events_after(
        &self,
        thread_id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, Error> {
        let rows = sqlx::query(
            "SELECT id, kind, body FROM events WHERE thread_id = $1 AND id > $2 \
             ORDER BY id LIMIT $3",
        )
        .bind(thread_id)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(StoredEvent {
                    thread_id: thread_id.to_owned(),
                    id: row.try_get("id")?,
                    kind: row.try_get("kind")?,
                    json: row.try_get("body")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(Error::from)
    }

    /// The event `id` of a thread, if there is one.
    pub async fn event(&self, thread_id: &str, id: i64) -> Result<Option<StoredEvent>, Error> {
        let row = sqlx::query("SELECT kind, body FROM events WHERE thread_id = $1 AND id = $2")
            .bind(thread_id)
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.map(|row| {
            Ok(StoredEvent {
                thread_id: thread_id.to_owned(),
                id,
                kind: row.try_get("kind")?,
                json: row.try_get("body")?,
            })
        })
        .transpose()
        .map_err(|e: sqlx::Error| Error::from(e))
    }

    /// Listens for events stored by any node (Postgres only): yields `(key, event id)` for
    /// each, the key naming a thread, a space's feed or a person's thread list. On SQLite
    /// there is one node, which announces its own events.
    pub async fn listen_events(
        &self,
        url: &str,
    ) -> Result<Option<futures::stream::BoxStream<'static, Result<(String, i64), Error>>>, Error>
    {
        use futures::StreamExt;
        if self.engine() != crate::Engine::Postgres {
            return Ok(None);
        }
        let mut listener = sqlx::postgres::PgListener::connect(url).await?;
        listener.listen(NOTIFY_CHANNEL).await?;
        Ok(Some(
            listener
                .into_stream()
                .map(|notification| {
                    let notification = notification?;
                    // The key may hold a space (an owner's name); the number never does.
                    let (thread, id) = notification
                        .payload()
                        .rsplit_once(' ')
                        .ok_or_else(|| Error::Config("malformed event notification".into()))?;
                    let id = id
                        .parse()
                        .map_err(|_| Error::Config("malformed event notification".into()))?;
                    Ok((thread.to_owned(), id))
                })
                .boxed(),
        ))
    }

    /// The id of the thread's newest event (0 when it has none).
    pub async fn last_event_id(&self, thread_id: &str) -> Result<i64, Error> {
        let id: Option<i64> = sqlx::query_scalar("SELECT last_event FROM threads WHERE id = $1")
            .bind(thread_id)
            .fetch_optional(self.pool())
            .await?;
        id.ok_or(Error::NotFound)
    }
}
