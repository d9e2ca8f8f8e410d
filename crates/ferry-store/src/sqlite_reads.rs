//! Point reads on SQLite that skip the pool: the lookup on a small read's hot path (one file's
//! record by its key) runs on a query-only connection of its own, on the calling thread, with
//! its statement kept prepared.
//!
//! Why: through the pool, a query is handed to the connection's worker thread and its rows
//! handed back — two thread wake-ups, and the `Any` driver's conversions, around a lookup that
//! itself takes a few microseconds. Under load those hand-offs, not SQLite, were most of a
//! 4 KiB GET's cost (bench/NOTES.md). A handful of pages of a B-tree index, which the page
//! cache holds for a database in use, is read in less time than a hand-off to the blocking
//! pool takes, so the lookup is made where the request already runs.
//!
//! Exactness: each read is its own transaction on a WAL database, so it sees every
//! transaction committed before it began: a write that has answered is read back by the next
//! request, exactly as through the pool. Writes never come here.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, ToSql};

use crate::Error;

/// How many idle read connections are kept; more are opened when more readers run at once,
/// and closed when they come back to a full stack.
const KEPT: usize = 8;

/// Read-only connections to one SQLite database file.
#[derive(Clone)]
pub(crate) struct Readers {
    path: PathBuf,
    idle: Arc<Mutex<Vec<Connection>>>,
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readers").field("path", &self.path).finish()
    }
}

impl Readers {
    pub(crate) fn new(path: &Path) -> Readers {
        Readers {
            path: path.to_owned(),
            idle: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Runs `read` on an idle connection (or a new one), on the calling thread.
    pub(crate) fn with<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, Error> {
        let idle = self.idle.lock().ok().and_then(|mut stack| stack.pop());
        let conn = match idle {
            Some(conn) => conn,
            None => self.open()?,
        };
        let result = read(&conn).map_err(read_error);
        if let Ok(mut stack) = self.idle.lock()
            && stack.len() < KEPT
        {
            stack.push(conn);
        }
        result
    }

    fn open(&self) -> Result<Connection, Error> {
        // Opened read-write and then made query-only, rather than opened read-only: a
        // read-only connection to a WAL database cannot always recreate the `-shm` file that
        // the last closing connection removed, and this one must work whenever it is opened.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(read_error)?;
        conn.pragma_update(None, "query_only", true)
            .map_err(read_error)?;
        // A reader waits out a checkpoint's brief lock as the pool's connections do.
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(read_error)?;
        Ok(conn)
    }
}

/// A failed read is the database's failure, as one through the pool is.
fn read_error(e: rusqlite::Error) -> Error {
    Error::Database(sqlx::Error::Io(std::io::Error::other(e)))
}

/// One row of `sql` with `params`, if there is one.
pub(crate) fn one<T>(
    conn: &Connection,
    sql: &str,
    params: &[&dyn ToSql],
    row: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Option<T>> {
    conn.prepare_cached(sql)?.query_row(params, row).optional()
}

/// A row read by column name, whichever driver read it: the pool's (sqlx's `Any` rows) or
/// a point read's here (rusqlite). A record read both ways then has one mapper, generic over
/// this, and the two reads cannot come to disagree.
pub(crate) trait Columns {
    type Error;
    /// The value of column `name`.
    fn get<T: Column>(&self, name: &str) -> Result<T, Self::Error>;
}

/// A value both drivers decode (integers, text, and either as `Option`).
pub(crate) trait Column:
    for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any> + rusqlite::types::FromSql
{
}

impl<T> Column for T where
    T: for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any> + rusqlite::types::FromSql
{
}

impl Columns for sqlx::any::AnyRow {
    type Error = sqlx::Error;
    fn get<T: Column>(&self, name: &str) -> Result<T, sqlx::Error> {
        sqlx::Row::try_get(self, name)
    }
}

impl Columns for Row<'_> {
    type Error = rusqlite::Error;
    fn get<T: Column>(&self, name: &str) -> Result<T, rusqlite::Error> {
        Row::get(self, name)
    }
}
