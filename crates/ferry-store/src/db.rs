//! The metadata database: SQLite (the embedded default) or PostgreSQL, behind one pool.
//!
//! Queries are written once, in the SQL both engines share, and run through sqlx's `Any`
//! driver; placeholders are `$1, $2, …`, which both engines accept. Only the migrations differ
//! (kept in step in `migrations/sqlite` and `migrations/postgres`), because column types and
//! collations are spelled differently.

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Executor};
use std::str::FromStr;
use std::sync::{Arc, Once};
use std::time::Duration;

use crate::Error;
use crate::group_commit::GroupCommit;
use crate::record_cache::{ForgetOnDrop, RecordCache};
use crate::sqlite_reads::Readers;
use crate::write_plan::Plan;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// Which database engine holds the metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl FromStr for Engine {
    type Err = Error;

    /// Reads the engine from a database URL's scheme.
    fn from_str(url: &str) -> Result<Self, Error> {
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or_default();
        match scheme {
            "sqlite" => Ok(Engine::Sqlite),
            "postgres" | "postgresql" => Ok(Engine::Postgres),
            _ => Err(Error::Config(format!(
                "unsupported database URL scheme '{scheme}': use sqlite:// or postgres://"
            ))),
        }
    }
}

/// Migrations whose header comment was reworded after they shipped (the first four: their
/// comments cited a document outside the repository); their SQL did not change. sqlx refuses to
/// start when the text of an applied migration differs from what it recorded, so each entry is
/// the SHA-384 the old text had, by engine and version.
const REWORDED_MIGRATIONS: &[(Engine, i64, &str)] = &[
    (
        Engine::Sqlite,
        1,
        "f8be8ab80ed279700f9ddeb64fcadb0a621d556464408594d1de5eda532806593820d8b2ea4ccc7e6c8bfd9f2c765c52",
    ),
    (
        Engine::Sqlite,
        2,
        "47e627569afaa5faff0a6be2cb82cf362454ac92bfe70c83c42d8580d94973c3c4177324b122d8d8f025619d897c78fc",
    ),
    (
        Engine::Sqlite,
        3,
        "0467e2d78044fdda0ad65e0bec889e8d88d332ac2af668d957bc515cd949c124b145b92630b1e4388fd9df848b1e8b2a",
    ),
    (
        Engine::Sqlite,
        4,
        "be255d253aac2397d46810f8a7e0e1674d017661235c8840c07af3317b781064c65472daa157d490c33edb6981ae9423",
    ),
    (
        Engine::Postgres,
        1,
        "cb3d41e35827f49c52342b6b0a5daf0aaa560208c34e74a4eaab195165d3ad69ee9a5b9e33c6d3211105e7450eca35d1",
    ),
    (
        Engine::Postgres,
        2,
        "47e627569afaa5faff0a6be2cb82cf362454ac92bfe70c83c42d8580d94973c3c4177324b122d8d8f025619d897c78fc",
    ),
    (
        Engine::Postgres,
        3,
        "0467e2d78044fdda0ad65e0bec889e8d88d332ac2af668d957bc515cd949c124b145b92630b1e4388fd9df848b1e8b2a",
    ),
    (
        Engine::Postgres,
        4,
        "be255d253aac2397d46810f8a7e0e1674d017661235c8840c07af3317b781064c65472daa157d490c33edb6981ae9423",
    ),
];

/// Lets a database migrated before a migration's comment was reworded start: where the
/// recorded checksum is exactly the old text's, it becomes the current text's. Any other
/// difference still stops the start, as sqlx intends.
async fn accept_reworded_migrations(
    pool: &AnyPool,
    engine: Engine,
    migrator: &Migrator,
) -> Result<(), Error> {
    let table_exists = match engine {
        Engine::Sqlite => sqlx::query_scalar::<_, String>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
        ),
        Engine::Postgres => sqlx::query_scalar::<_, String>(
            "SELECT to_regclass('_sqlx_migrations')::text WHERE to_regclass('_sqlx_migrations') IS NOT NULL",
        ),
    }
    .fetch_optional(pool)
    .await?
    .is_some();
    if !table_exists {
        return Ok(());
    }
    for (_, version, old) in REWORDED_MIGRATIONS.iter().filter(|(e, ..)| *e == engine) {
        let Some(current) = migrator.iter().find(|m| m.version == *version) else {
            continue;
        };
        let old = hex::decode(old).map_err(|e| Error::Config(e.to_string()))?;
        sqlx::query(
            "UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2 AND checksum = $3",
        )
        .bind(current.checksum.to_vec())
        .bind(*version)
        .bind(old)
        .execute(pool)
        .await?;
    }
    Ok(())
}

/// A connection pool to the metadata database, migrated and ready.
#[derive(Debug, Clone)]
pub struct Db {
    pool: AnyPool,
    engine: Engine,
    /// What only SQLite has; `None` on PostgreSQL. Shared, so a clone of the handle (one per
    /// write that runs on a task of its own) costs one count.
    sqlite: Option<Arc<SqliteParts>>,
}

/// What a SQLite database has beside its pool, all of it or none.
#[derive(Debug)]
pub(crate) struct SqliteParts {
    /// SQLite lets one transaction write at a time; the others, if left to the database, wait
    /// in its busy handler, which sleeps and retries with growing naps (hundreds of
    /// milliseconds at the tail under 32 writers). Writers queue here instead, in order, and
    /// each starts as soon as the previous one ends. PostgreSQL writes rows concurrently.
    write_turn: Arc<tokio::sync::Mutex<()>>,
    /// Hot point reads, off the pool (see [`crate::sqlite_reads`]).
    pub(crate) readers: Readers,
    /// The writer that commits concurrent writes together (see [`crate::group_commit`]).
    pub(crate) group: GroupCommit,
    /// Space file records kept in memory, and with them this process's ownership of the
    /// database (see [`crate::record_cache`]).
    pub(crate) records: Arc<RecordCache>,
}

impl Db {
    /// Connects, applies pending migrations, and returns the pool.
    pub async fn open(url: &str) -> Result<Db, Error> {
        static DRIVERS: Once = Once::new();
        DRIVERS.call_once(install_default_drivers);
        let engine: Engine = url.parse()?;
        let file = match engine {
            Engine::Sqlite => Some(sqlite_file(url)?),
            Engine::Postgres => None,
        };
        // Ownership comes first: a second process on the same SQLite file stops here, before
        // it connects or migrates anything.
        let records = file.as_deref().map(RecordCache::own).transpose()?;
        let pool = match engine {
            Engine::Sqlite => {
                // WAL must be switched on before the pool opens its other connections: the change
                // needs an exclusive lock that a busy timeout cannot wait for.
                let first = AnyPoolOptions::new()
                    .max_connections(1)
                    .connect(url)
                    .await?;
                first.execute("PRAGMA journal_mode = WAL").await?;
                first.close().await;
                AnyPoolOptions::new()
                    .max_connections(8)
                    .acquire_timeout(Duration::from_secs(30))
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            // FULL makes a commit durable against power loss, not only against a
                            // crash of the process: a 2xx answer means the row is on disk.
                            conn.execute(
                                "PRAGMA busy_timeout = 10000; PRAGMA synchronous = FULL; \
                                 PRAGMA foreign_keys = ON",
                            )
                            .await?;
                            Ok(())
                        })
                    })
                    .connect(url)
                    .await?
            }
            Engine::Postgres => {
                AnyPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(30))
                    .connect(url)
                    .await?
            }
        };
        let migrator = match engine {
            Engine::Sqlite => &SQLITE_MIGRATIONS,
            Engine::Postgres => &POSTGRES_MIGRATIONS,
        };
        accept_reworded_migrations(&pool, engine, migrator).await?;
        migrator.run(&pool).await?;
        let sqlite = match (file, records) {
            (Some(file), Some(records)) => {
                let write_turn = Arc::new(tokio::sync::Mutex::new(()));
                Some(Arc::new(SqliteParts {
                    readers: Readers::new(&file),
                    group: GroupCommit::start(&file, write_turn.clone())?,
                    write_turn,
                    records,
                }))
            }
            _ => None,
        };
        Ok(Db {
            pool,
            engine,
            sqlite,
        })
    }

    /// What only SQLite has: `None` on PostgreSQL.
    pub(crate) fn sqlite(&self) -> Option<&SqliteParts> {
        self.sqlite.as_deref()
    }

    /// Runs `write`, which changes the space file record at `key`, and on SQLite forgets the
    /// kept record once it has ended and before answering. There the write runs on a task of
    /// its own, so that it reaches its end (and the forgetting) even when the caller stops
    /// waiting: a write cancelled half-way may still commit, and must not leave the record it
    /// replaced in the cache. On PostgreSQL, which keeps nothing, it is simply awaited.
    pub(crate) async fn changing<T: Send + 'static>(
        &self,
        key: impl FnOnce() -> String,
        write: impl Future<Output = Result<T, Error>> + Send + 'static,
    ) -> Result<T, Error> {
        let Some(sqlite) = self.sqlite() else {
            return write.await;
        };
        let cache = sqlite.records.clone();
        let forget = ForgetOnDrop { cache, key: key() };
        let task = tokio::spawn(async move {
            let answer = write.await;
            drop(forget);
            answer
        });
        match task.await {
            Ok(answer) => answer,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(Error::Io(std::io::Error::other(
                "the runtime stopped before the write ended",
            ))),
        }
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Starts a transaction that will write.
    ///
    /// On SQLite the write lock is taken at `BEGIN` (`IMMEDIATE`), so a transaction that reads
    /// before it writes waits for other writers instead of failing with `SQLITE_BUSY` when it
    /// tries to upgrade its lock.
    ///
    /// The transaction is opened and closed with plain `BEGIN` / `COMMIT` / `ROLLBACK`
    /// statements rather than sqlx's transaction bookkeeping: when SQLite fails a commit (a
    /// full disk, an I/O error) it may already have rolled the transaction back itself, and
    /// sqlx's own `ROLLBACK` then fails and leaves its depth counter at one, so the pooled
    /// connection refuses every later transaction until the process restarts. Here a
    /// connection goes back to the pool only once it is known to be outside a transaction;
    /// otherwise it is closed and the pool opens a fresh one.
    pub async fn begin_write(&self) -> Result<WriteTx, Error> {
        // The turn is taken before a connection, so queued writers hold no connection.
        let turn = match self.sqlite() {
            Some(sqlite) => Some(sqlite.write_turn.clone().lock_owned().await),
            None => None,
        };
        let conn = self.pool.acquire().await?;
        // The connection is inside the transaction from here on, so that a request cancelled
        // while `BEGIN` runs (its statement may still execute after the future is gone) hands
        // the connection to the rollback of `Drop`, never back to the pool holding the lock.
        let mut tx = WriteTx {
            conn: Some(conn),
            turn,
        };
        let begin = match self.engine {
            Engine::Sqlite => "BEGIN IMMEDIATE",
            Engine::Postgres => "BEGIN",
        };
        if let Err(e) = tx.execute(begin).await {
            // A BEGIN that failed may still have left something behind: start afresh.
            if let Some(mut conn) = tx.conn.take() {
                conn.close_on_drop();
            }
            return Err(e.into());
        }
        Ok(tx)
    }

    /// Runs a write's statements in a transaction and commits it; `verdict` turns the plan's
    /// result into the answer, and an error from it undoes the plan. On SQLite the write joins
    /// the next group commit; on PostgreSQL it is a transaction of its own.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        plan: Plan,
        verdict: impl FnOnce(Option<i64>) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        if let Some(sqlite) = self.sqlite() {
            return sqlite
                .group
                .write(move |conn| {
                    let found = plan
                        .run_sqlite(conn)
                        .map_err(crate::group_commit::database_error)?;
                    verdict(found)
                })
                .await;
        }
        let mut tx = self.begin_write().await?;
        let answer = verdict(plan.run_pooled(&mut tx).await?)?;
        tx.commit().await?;
        Ok(answer)
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), Error> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A write transaction, holding its turn among this process's SQLite writers until it is
/// committed or dropped. Use it as the connection: `&mut *tx`.
///
/// Dropped without [`WriteTx::commit`] (an error returned early, or the request's future
/// cancelled at any await point), it is rolled back on a task of its own before its connection
/// and its turn are given back.
#[derive(Debug)]
pub struct WriteTx {
    conn: Option<PoolConnection<Any>>,
    turn: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl WriteTx {
    /// Commits. When the commit fails the transaction is rolled back (or the connection closed,
    /// if even that fails), so a failed write never leaves a connection inside a transaction.
    ///
    /// The connection stays in `self` while `COMMIT` runs: a commit cancelled half-way is
    /// finished or rolled back by `Drop`, and only then is the connection given back.
    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        let committed = self.execute("COMMIT").await.map(|_| ());
        let conn = self
            .conn
            .take()
            .expect("a transaction has its connection until it ends");
        let turn = self.turn.take();
        if committed.is_err() {
            roll_back(conn).await;
        }
        drop(turn);
        committed
    }
}

/// Rolls back whatever the connection has open; a connection that cannot even do that is
/// closed instead of being given back to the pool.
async fn roll_back(mut conn: PoolConnection<Any>) {
    if let Err(e) = conn.execute("ROLLBACK").await {
        // "no transaction is active": the database already rolled back on its own (SQLite
        // does after a full disk), and the connection is clean. Anything else: discard it.
        let clean = e.to_string().contains("no transaction is active");
        if !clean {
            tracing::warn!(error = %e, "a rollback failed; closing the connection");
            conn.close_on_drop();
        }
    }
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let turn = self.turn.take();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    roll_back(conn).await;
                    drop(turn);
                });
            }
            // No runtime to roll back on: the pool must not get the connection back.
            Err(_) => conn.close_on_drop(),
        }
    }
}

impl std::ops::Deref for WriteTx {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        self.conn
            .as_ref()
            .expect("a transaction has its connection until it ends")
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        self.conn
            .as_mut()
            .expect("a transaction has its connection until it ends")
    }
}

/// The database file a `sqlite://` URL names.
fn sqlite_file(url: &str) -> Result<std::path::PathBuf, Error> {
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)?;
    Ok(options.get_filename().to_owned())
}

/// The current time in milliseconds since the Unix epoch.
pub(crate) fn now_millis() -> i64 {
    ferry_core::Timestamp::now().millis()
}
