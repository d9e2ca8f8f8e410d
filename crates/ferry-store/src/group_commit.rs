//! Group commit for SQLite: concurrent writes share one transaction and one flush.
//!
//! SQLite commits one transaction at a time, and with `synchronous = FULL` each commit waits
//! for an fsync of the write-ahead log. Written one per transaction, concurrent writes queue
//! for that flush one by one (and, through the pool, for a thread hand-off per statement).
//! Here one thread owns a write connection: it takes every write that is waiting, runs them
//! in one transaction — each inside a savepoint of its own, so a write that is refused (a
//! create-only path already taken, an ETag that no longer matches) is undone alone — commits
//! once, and only then answers each of them. Writes that arrive during a commit form the next
//! batch, so a lone writer waits for nothing but its own flush.
//!
//! What stays true:
//! - **Durability.** No writer is answered before the commit that holds its write has
//!   returned; a crash mid-batch loses only writes none of whose callers had an answer.
//! - **Exactness.** Writes of a batch run one after another and each sees the ones before it,
//!   exactly as in separate transactions, so of two racing create-only writes one wins.
//! - **One writer at a time.** The thread takes the same turn as the pool's writers
//!   ([`crate::db::Db::begin_write`]) for each batch.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;

use rusqlite::Connection;

use crate::Error;
use crate::write_plan::Plan;

/// The most writes one transaction takes: a bound on how long the write turn is held.
const MAX_BATCH: usize = 256;

/// A write waiting for its batch: the plan, and what answers its caller.
struct Pending {
    plan: Plan,
    answer: Box<dyn FnOnce(Result<Option<i64>, Error>) -> Verdict + Send>,
}

/// Whether a write's result, judged by its caller's rule, keeps the write or undoes it. The
/// caller's answer is held in `send` until the batch's commit is known.
struct Verdict {
    keep: bool,
    send: Box<dyn FnOnce(Option<Error>) + Send>,
}

/// The handle to the writer thread; cloned into every [`crate::db::Db`].
#[derive(Clone)]
pub(crate) struct GroupCommit {
    queue: mpsc::Sender<Pending>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GroupCommit")
    }
}

impl GroupCommit {
    /// Opens the write connection and starts its thread, which ends when the last handle is
    /// dropped.
    pub(crate) fn start(
        path: &Path,
        turn: Arc<tokio::sync::Mutex<()>>,
    ) -> Result<GroupCommit, Error> {
        let conn = open(path).map_err(database_error)?;
        let (queue, waiting) = mpsc::channel();
        std::thread::Builder::new()
            .name("ferry-sqlite-writer".into())
            .spawn(move || write_batches(&conn, &turn, &waiting))
            .map_err(Error::Io)?;
        Ok(GroupCommit { queue })
    }

    /// Runs `plan` in the next batch; `verdict` turns its result into the answer (an error
    /// undoes the plan's changes). Answers once the batch is committed.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        plan: Plan,
        verdict: impl FnOnce(Option<i64>) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let (reply, answered) = tokio::sync::oneshot::channel();
        let answer = Box::new(move |ran: Result<Option<i64>, Error>| {
            let judged = ran.and_then(verdict);
            let keep = judged.is_ok();
            Verdict {
                keep,
                send: Box::new(move |commit_failed: Option<Error>| {
                    let _ = reply.send(match (judged, commit_failed) {
                        (Ok(_), Some(e)) => Err(e),
                        (judged, _) => judged,
                    });
                }),
            }
        });
        self.queue
            .send(Pending { plan, answer })
            .map_err(|_| writer_gone())?;
        answered.await.map_err(|_| writer_gone())?
    }
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    // The same settings as the pool's connections: a commit is durable against power loss,
    // and a checkpoint's brief lock is waited out.
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    Ok(conn)
}

/// The writer thread: one batch after another, until every handle is gone.
fn write_batches(
    conn: &Connection,
    turn: &tokio::sync::Mutex<()>,
    waiting: &mpsc::Receiver<Pending>,
) {
    while let Ok(first) = waiting.recv() {
        let _turn = turn.blocking_lock();
        // Everything that queued while the turn was awaited joins this batch.
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH
            && let Ok(next) = waiting.try_recv()
        {
            batch.push(next);
        }
        write_batch(conn, batch);
    }
}

/// One transaction for the whole batch; each write answered after its fate is known.
fn write_batch(conn: &Connection, batch: Vec<Pending>) {
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        let failure = Failure::from(&e);
        for pending in batch {
            let verdict = (pending.answer)(Err(failure.error()));
            (verdict.send)(None);
        }
        return;
    }
    let mut verdicts = Vec::with_capacity(batch.len());
    let mut broken = None;
    for pending in batch {
        if broken.is_some() {
            // The transaction is lost: the rest are not run, and fail with it below.
            verdicts.push((pending.answer)(Ok(None)));
            continue;
        }
        match run_in_savepoint(conn, &pending.plan) {
            Ok(ran) => {
                let verdict = (pending.answer)(ran.map_err(database_error));
                let undone = if verdict.keep {
                    conn.execute_batch("RELEASE write")
                } else {
                    conn.execute_batch("ROLLBACK TO write; RELEASE write")
                };
                if let Err(e) = undone {
                    broken = Some(Failure::from(&e));
                }
                verdicts.push(verdict);
            }
            Err(e) => {
                let failure = Failure::from(&e);
                verdicts.push((pending.answer)(Err(failure.error())));
                broken = Some(failure);
            }
        }
    }
    let failed = match broken {
        Some(failure) => Some(failure),
        None => conn
            .execute_batch("COMMIT")
            .err()
            .map(|e| Failure::from(&e)),
    };
    if failed.is_some() {
        // SQLite may already have rolled back on its own (a full disk does); then this fails
        // with "no transaction is active", and the connection is clean either way.
        let _ = conn.execute_batch("ROLLBACK");
    }
    for verdict in verdicts {
        (verdict.send)(failed.as_ref().map(Failure::error));
    }
}

/// Runs one plan inside a savepoint named `write`. The outer error means the savepoint
/// itself could not be made (the transaction is unusable); the inner one is the plan's.
fn run_in_savepoint(
    conn: &Connection,
    plan: &Plan,
) -> rusqlite::Result<rusqlite::Result<Option<i64>>> {
    conn.execute_batch("SAVEPOINT write")?;
    Ok(plan.run_sqlite(conn))
}

/// A failure shared by every write of a batch, given to each as an error of its own.
struct Failure {
    kind: io::ErrorKind,
    message: String,
}

impl From<&rusqlite::Error> for Failure {
    fn from(e: &rusqlite::Error) -> Failure {
        // A full disk keeps its kind, so the layers above tell it from any other failure.
        let full = e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull);
        Failure {
            kind: if full {
                io::ErrorKind::StorageFull
            } else {
                io::ErrorKind::Other
            },
            message: e.to_string(),
        }
    }
}

impl Failure {
    fn error(&self) -> Error {
        Error::Database(sqlx::Error::Io(io::Error::new(
            self.kind,
            self.message.clone(),
        )))
    }
}

/// A failed write is the database's failure, as one through the pool is.
fn database_error(e: rusqlite::Error) -> Error {
    Failure::from(&e).error()
}

fn writer_gone() -> Error {
    Error::Database(sqlx::Error::Io(std::io::Error::other(
        "the database writer has stopped",
    )))
}
