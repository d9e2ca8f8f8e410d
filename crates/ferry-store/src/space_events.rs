//! A space's change feed (docs/agent-files.md, "Watching a space"): each write, removal and
//! move of a file in a space is stored as an event of that space, in the transaction that makes
//! the change, numbered per space without gaps (the space's row is updated for the next number,
//! which orders concurrent changes). A subscriber resumes with "everything after N" and misses
//! nothing, across reconnects and nodes.
//!
//! Events share the thread events' live delivery: each space has a channel key
//! ([`channel_key`]) under which this node's hub and Postgres' notifications name it.

use ferry_core::change::{ChangeKind, FileChange, SpaceEvent};
use ferry_core::conditions::quoted_etag;
use ferry_core::door::Door;
use ferry_core::{SpaceName, Timestamp};
use sqlx::Row;

use crate::Error;
use crate::db::{Db, Engine};
use crate::events::{NOTIFY_CHANNEL, StoredEvent};
use crate::write_plan::{Statement, Value};

/// What changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change<'a> {
    pub kind: ChangeKind,
    pub path: &'a str,
    /// Where a moved file went.
    pub destination: Option<&'a str>,
    /// The file's SHA-256 (its ETag) after a write or move, before a removal.
    pub sha256: Option<&'a str>,
    pub size: Option<u64>,
    pub door: Door,
}

/// The key under which a space's feed is delivered live. The unit separator cannot occur in a
/// space name, so the key splits back unambiguously from the right.
pub fn channel_key(owner: &str, space: &SpaceName) -> String {
    format!("{SPACE_KEY}{owner}\u{1f}{space}")
}

const SPACE_KEY: &str = "space\u{1f}";

/// Whether a live-delivery key names a space's feed (rather than a thread's).
pub fn is_space_key(key: &str) -> bool {
    key.starts_with(SPACE_KEY)
}

/// Reserved spaces (a thread's sandbox kept in the blob store) have no feed of their own.
fn has_feed(space: &SpaceName) -> bool {
    !space.as_str().starts_with('.')
}

/// The statements that store `change` as the space's next event, to run in the transaction
/// of the change, after it (the space's row exists by then).
pub(crate) fn recorded(
    engine: Engine,
    owner: &str,
    space: &SpaceName,
    change: &Change<'_>,
    now: i64,
) -> Vec<Statement> {
    if !has_feed(space) {
        return Vec::new();
    }
    let mut statements = vec![
        Statement::new(
            "UPDATE spaces SET last_event = last_event + 1 WHERE owner = $1 AND name = $2",
            vec![owner.into(), space.as_str().into()],
        ),
        Statement::new(
            "INSERT INTO space_events \
             (owner, space, id, kind, path, destination, etag, size, door, created_at) \
             SELECT $1, $2, last_event, $3, $4, $5, $6, $7, $8, $9 FROM spaces \
             WHERE owner = $1 AND name = $2",
            vec![
                owner.into(),
                space.as_str().into(),
                change.kind.as_str().into(),
                change.path.into(),
                change.destination.into(),
                change.sha256.into(),
                change.size.map_or(Value::Null, |s| Value::from(s as i64)),
                change.door.as_str().into(),
                now.into(),
            ],
        ),
    ];
    if engine == Engine::Postgres {
        // Delivered to every listening node when (and only if) the transaction commits; the
        // listeners catch up from the table, so the event's number is not needed here.
        statements.push(Statement::new(
            "SELECT pg_notify($1, $2)",
            vec![
                NOTIFY_CHANNEL.into(),
                format!("{} 0", channel_key(owner, space)).as_str().into(),
            ],
        ));
    }
    statements
}

impl Db {
    /// The space's events after `after`, oldest first, at most `limit`; each as the JSON a
    /// subscriber receives.
    pub async fn space_events_after(
        &self,
        owner: &str,
        space: &SpaceName,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, Error> {
        let rows = sqlx::query(
            "SELECT id, kind, path, destination, etag, size, door, created_at FROM space_events \
             WHERE owner = $1 AND space = $2 AND id > $3 ORDER BY id LIMIT $4",
        )
        .bind(owner)
        .bind(space.as_str())
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        let key = channel_key(owner, space);
        rows.iter()
            .map(|row| {
                let kind: String = row.try_get("kind")?;
                let door: String = row.try_get("door")?;
                let event = SpaceEvent {
                    id: row.try_get("id")?,
                    kind: ChangeKind::parse(&kind).ok_or_else(|| unknown("kind", &kind))?,
                    space: space.as_str().to_owned(),
                    change: FileChange {
                        path: row.try_get("path")?,
                        destination: row.try_get("destination")?,
                        etag: row
                            .try_get::<Option<String>, _>("etag")?
                            .map(|etag| quoted_etag(&etag)),
                        size: row.try_get::<Option<i64>, _>("size")?.map(|s| s as u64),
                        door: Door::parse(&door).ok_or_else(|| unknown("door", &door))?,
                    },
                    created_at: Timestamp(row.try_get("created_at")?).rfc3339(),
                };
                Ok(StoredEvent {
                    thread_id: key.clone(),
                    id: event.id,
                    kind,
                    json: serde_json::to_string(&event).unwrap_or_default(),
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(Error::from)
    }
}

/// A stored row whose `column` holds a value this version does not know.
fn unknown(column: &str, value: &str) -> sqlx::Error {
    sqlx::Error::Decode(format!("space_events.{column} '{value}' is not known").into())
}
