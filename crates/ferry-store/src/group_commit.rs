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
use crate::wal_checkpoint::Checkpointer;

/// The most writes one transaction takes: a bound on how long the write turn is held.
const MAX_BATCH: usize = 256;

/// A write waiting for its batch.
trait Pending: Send {
    /// Runs the write in the open transaction and keeps its result; answers whether the
    /// write stands (`false`: undo it).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answers the caller once the batch's fate is known: `failure` when the batch as a whole
    /// failed (a write refused on its own keeps its own answer).
    fn answer(self: Box<Self>, failure: Option<Error>);
}

struct Task<T, F> {
    job: Option<F>,
    result: Option<Result<T, Error>>,
    reply: tokio::sync::oneshot::Sender<Result<T, Error>>,
}

impl<T, F> Pending for Task<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, Error> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(job) = self.job.take() else {
            return false;
        };
        let result = job(conn);
        let stands = result.is_ok();
        self.result = Some(result);
        stands
    }

    fn answer(self: Box<Self>, failure: Option<Error>) {
        let answer = match (self.result, failure) {
            (Some(Err(refused)), _) => Err(refused),
            (_, Some(failure)) => Err(failure),
            (Some(Ok(done)), None) => Ok(done),
            // Not run (the batch broke first) or it panicked.
            (None, None) => Err(database_io("the write did not finish")),
        };
        let _ = self.reply.send(answer);
    }
}

/// The handle to the writer thread; cloned into every [`crate::db::Db`].
#[derive(Clone)]
pub(crate) struct GroupCommit {
    queue: mpsc::Sender<Box<dyn Pending>>,
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
        let checkpointer =
            Checkpointer::start(open(path).map_err(database_error)?).map_err(Error::Io)?;
        let (queue, waiting) = mpsc::channel();
        std::thread::Builder::new()
            .name("ferry-sqlite-writer".into())
            .spawn(move || {
                // Watched on the thread that commits: the log's length is reported there.
                Checkpointer::watch(&conn);
                write_batches(&conn, &turn, &waiting, &checkpointer);
            })
            .map_err(Error::Io)?;
        Ok(GroupCommit { queue })
    }

    /// Runs `job` in the next batch, on the writer's connection inside the batch's
    /// transaction; an error from it undoes what it did. Answers once the batch is committed.
    pub(crate) async fn write<T, F>(&self, job: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, Error> + Send + 'static,
    {
        let (reply, answered) = tokio::sync::oneshot::channel();
        let task = Task {
            job: Some(job),
            result: None,
            reply,
        };
        self.queue.send(Box::new(task)).map_err(|_| writer_gone())?;
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

/// The writer thread: one batch after another, until every handle is gone. Checkpoints of the
/// log run beside it, never inside a batch (see [`crate::wal_checkpoint`]).
fn write_batches(
    conn: &Connection,
    turn: &tokio::sync::Mutex<()>,
    waiting: &mpsc::Receiver<Box<dyn Pending>>,
    checkpointer: &Checkpointer,
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
        checkpointer.after_commit(conn);
    }
}

/// One transaction for the whole batch; each write answered after its fate is known.
fn write_batch(conn: &Connection, mut batch: Vec<Box<dyn Pending>>) {
    let failed = run_batch(conn, &mut batch).err();
    if failed.is_some() {
        // SQLite may already have rolled back on its own (a full disk does); then this fails
        // with "no transaction is active", and the connection is clean either way.
        let _ = conn.execute_batch("ROLLBACK");
    }
    for pending in batch {
        pending.answer(failed.as_ref().map(Failure::error));
    }
}

/// Runs every write of the batch, each in a savepoint of its own, and commits. An error is
/// the batch's: the transaction could not be begun, a savepoint not be made or undone, or the
/// commit failed; writes after such an error are not run.
fn run_batch(conn: &Connection, batch: &mut [Box<dyn Pending>]) -> Result<(), Failure> {
    let failure = |e: rusqlite::Error| Failure::from(&e);
    conn.execute_batch("BEGIN IMMEDIATE").map_err(failure)?;
    for pending in batch.iter_mut() {
        conn.execute_batch("SAVEPOINT write").map_err(failure)?;
        // A write that panics is undone and answered with an error; the thread, which every
        // later write needs, goes on.
        let stands = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pending.run(conn)))
            .unwrap_or(false);
        let undo = if stands {
            "RELEASE write"
        } else {
            "ROLLBACK TO write; RELEASE write"
        };
        conn.execute_batch(undo).map_err(failure)?;
    }
    conn.execute_batch("COMMIT").map_err(failure)
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

/// A failed statement is the database's failure, as one through the pool is.
pub(crate) fn database_error(e: rusqlite::Error) -> Error {
    Failure::from(&e).error()
}

fn writer_gone() -> Error {
    database_io("the database writer has stopped")
}

/// A failure of the writer itself, told as the database's (the caller's write did not land).
fn database_io(message: &'static str) -> Error {
    Error::Database(sqlx::Error::Io(io::Error::other(message)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal_checkpoint::{CHECKPOINT_INLINE_PAGES, CHECKPOINT_PAGES};

    fn table() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER)")
            .unwrap();
        (dir, path)
    }

    fn rows(path: &Path) -> Vec<i64> {
        let conn = Connection::open(path).unwrap();
        let mut stmt = conn.prepare("SELECT n FROM t ORDER BY n").unwrap();
        stmt.query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    fn insert(n: i64) -> impl FnOnce(&Connection) -> Result<(), Error> + Send + 'static {
        move |conn| {
            conn.execute("INSERT INTO t VALUES (?1)", [n])
                .map(drop)
                .map_err(database_error)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_that_panics_is_undone_and_answered_and_the_writer_goes_on() {
        let (_dir, path) = table();
        let group = GroupCommit::start(&path, Arc::new(tokio::sync::Mutex::new(()))).unwrap();
        let panicked = group
            .write(|conn| -> Result<(), Error> {
                insert(1)(conn)?;
                panic!("a bug in a write");
            })
            .await;
        assert!(panicked.is_err());
        group.write(insert(2)).await.unwrap();
        assert_eq!(rows(&path), vec![2]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_sharing_a_commit_stand_or_fall_alone() {
        let (_dir, path) = table();
        let group = GroupCommit::start(&path, Arc::new(tokio::sync::Mutex::new(()))).unwrap();
        let writes = (0..64).map(|n| {
            let group = group.clone();
            tokio::spawn(async move {
                group
                    .write(move |conn| {
                        insert(n)(conn)?;
                        if n % 2 == 1 {
                            return Err(Error::PreconditionFailed);
                        }
                        Ok(n)
                    })
                    .await
            })
        });
        let mut kept = Vec::new();
        for write in writes.collect::<Vec<_>>() {
            match write.await.unwrap() {
                Ok(n) => kept.push(n),
                Err(Error::PreconditionFailed) => {}
                Err(other) => panic!("{other:?}"),
            }
        }
        assert_eq!(kept, (0..64).step_by(2).collect::<Vec<_>>());
        assert_eq!(rows(&path), kept);
    }

    /// The writer's commits do not checkpoint the log themselves: past the mark, the thread
    /// beside it does, while nothing else writes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_checkpoint_runs_beside_the_writer_once_the_log_passes_its_mark() {
        let (_dir, path) = table();
        let group = GroupCommit::start(&path, Arc::new(tokio::sync::Mutex::new(()))).unwrap();
        let database = || std::fs::metadata(&path).unwrap().len();
        let before = database();
        // Each commit logs a page at least, and stays under the writer's own mark.
        let writes = i64::from(CHECKPOINT_PAGES) + 200;
        for n in 0..writes {
            group.write(insert(n)).await.unwrap();
        }
        // A checkpoint copies the logged pages into the database file, which grows.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while database() == before {
            assert!(
                std::time::Instant::now() < deadline,
                "no checkpoint after {writes} commits: the database file is still {before} bytes"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(rows(&path).len(), writes as usize);
    }

    /// Writes that never pause leave a checkpoint beside them always behind; the writer's own
    /// checkpoint between batches keeps the log from growing without end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_starts_over_under_writes_that_never_pause() {
        let (_dir, path) = table();
        let group = GroupCommit::start(&path, Arc::new(tokio::sync::Mutex::new(()))).unwrap();
        let writes = 3 * i64::from(CHECKPOINT_INLINE_PAGES);
        for n in 0..writes {
            group.write(insert(n)).await.unwrap();
        }
        // A frame is a page and its 24-byte header. The log's file is overwritten from its start
        // when the log starts over, so its length is the longest the log has been.
        let page = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA page_size", [], |row| row.get::<_, i64>(0))
            .unwrap() as u64;
        let frames = std::fs::metadata(path.with_extension("db-wal"))
            .unwrap()
            .len()
            / (page + 24);
        assert!(
            frames < u64::try_from(CHECKPOINT_INLINE_PAGES).unwrap() + 500,
            "the log reached {frames} frames in {writes} commits"
        );
        assert_eq!(rows(&path).len(), writes as usize);
    }
}
