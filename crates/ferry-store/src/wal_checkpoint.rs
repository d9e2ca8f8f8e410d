//! Checkpoints of SQLite's write-ahead log, kept off the path of the writes they follow.
//!
//! A commit in WAL mode appends pages to the log; a checkpoint copies them back into the
//! database file and flushes it, so the log can start over. Left to itself, SQLite runs the
//! checkpoint inside the commit that takes the log past 1,000 pages: that commit — with group
//! commit, every write of its batch, and every write queued behind it — waits milliseconds of
//! copying and an extra flush before anyone is answered, once every few hundred writes. An
//! event posted then reaches its subscribers that much later, and a write's p99 is that stall.
//!
//! The group writer's connection instead only notes the log's length after each commit (a
//! WAL hook replaces SQLite's automatic checkpoint on that connection), and past
//! [`CHECKPOINT_PAGES`] wakes a thread of its own, with a connection of its own, which runs a
//! passive checkpoint: one that never waits for readers or writers, while the writer goes on
//! committing. Once a checkpoint has taken the whole log, the next commit starts it over.
//!
//! Writes that never pause would never let a checkpoint beside them take the whole log, and
//! the log would grow without end; so past [`CHECKPOINT_INLINE_PAGES`] the writer checkpoints
//! between two batches itself, as SQLite would have, taking only what the thread has not
//! taken yet. Durability is untouched: every commit is flushed to the log before it is
//! answered, and a checkpoint only moves pages that are already durable.
//!
//! The pool's connections keep SQLite's automatic checkpoint (they write rarely); two
//! checkpoints never run at once, and one that finds another running lets it be.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::mpsc;

use rusqlite::Connection;
use rusqlite::hooks::Wal;

/// The log's length, in pages, past which a checkpoint is started: SQLite's own default.
pub(crate) const CHECKPOINT_PAGES: c_int = 1000;
/// The log's length past which the writer checkpoints between batches itself: the checkpoints
/// beside it have not caught up with writes that do not pause.
pub(crate) const CHECKPOINT_INLINE_PAGES: c_int = 2 * CHECKPOINT_PAGES;

thread_local! {
    /// The log's length after the last commit on this thread's write connection, as its WAL
    /// hook reported it (0 once read).
    static LOG_PAGES: Cell<c_int> = const { Cell::new(0) };
}

/// The handle the writer keeps: it watches the write connection and wakes the checkpointing
/// thread, which ends when this handle is dropped.
pub(crate) struct Checkpointer {
    wake: mpsc::SyncSender<()>,
}

impl Checkpointer {
    /// Starts the checkpointing thread on `conn`, a connection of its own to the database
    /// (with `synchronous = FULL`: a checkpoint flushes the database file before the log may
    /// be reused).
    pub(crate) fn start(conn: Connection) -> std::io::Result<Checkpointer> {
        // One pending wake-up is enough: a checkpoint takes every page logged before it starts.
        let (wake, woken) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("ferry-sqlite-checkpoint".into())
            .spawn(move || checkpoint_when_woken(&conn, &woken))?;
        Ok(Checkpointer { wake })
    }

    /// Makes `conn`'s commits report the log's length instead of checkpointing themselves.
    /// `conn` must then be used on this thread only (the report is kept per thread).
    pub(crate) fn watch(conn: &Connection) {
        conn.wal_hook(Some(note_log_length));
    }

    /// Called between batches on the watched connection `conn`: wakes the checkpointing thread
    /// when the log has grown past [`CHECKPOINT_PAGES`], and checkpoints on `conn` past
    /// [`CHECKPOINT_INLINE_PAGES`].
    pub(crate) fn after_commit(&self, conn: &Connection) {
        let pages = LOG_PAGES.with(|pages| pages.replace(0));
        if pages >= CHECKPOINT_INLINE_PAGES {
            checkpoint(conn);
        } else if pages >= CHECKPOINT_PAGES {
            // Full: a wake-up is already pending, and the checkpoint it starts takes these too.
            let _ = self.wake.try_send(());
        }
    }
}

/// The WAL hook: runs inside each commit, on the committing thread.
fn note_log_length(_wal: &Wal, pages: c_int) -> rusqlite::Result<()> {
    LOG_PAGES.with(|kept| kept.set(pages));
    Ok(())
}

/// The checkpointing thread: a checkpoint per wake-up, until the writer is gone.
fn checkpoint_when_woken(conn: &Connection, woken: &mpsc::Receiver<()>) {
    while woken.recv().is_ok() {
        checkpoint(conn);
    }
}

/// A passive checkpoint: it copies what no reader still needs from the log and never waits.
fn checkpoint(conn: &Connection) {
    // Answers (busy, log pages, pages checkpointed); busy means another connection was
    // checkpointing, which does the same work.
    let done = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        row.get::<_, i64>(0)
    });
    if let Err(e) = done {
        tracing::warn!(error = %e, "a checkpoint of the SQLite log failed; the next one retries");
    }
}
