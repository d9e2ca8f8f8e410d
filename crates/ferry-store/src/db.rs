//! The metadata database: SQLite (the embedded default) or PostgreSQL, behind one pool.
//!
//! Queries are written once, in the SQL both engines share, and run through sqlx's `Any`
//! driver; placeholders are `$1, $2, …`, which both engines accept. Only the migrations differ
//! (kept in step in `migrations/sqlite` and `migrations/postgres`), because column types and
//! collations are spelled differently.

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::Migrator;
use sqlx::{Any, AnyConnection, AnyPool, Executor, Transaction};
use std::str::FromStr;
use std::sync::{Arc, Once};
use std::time::Duration;

use crate::StoreError;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// Which database engine holds the metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl FromStr for Engine {
    type Err = StoreError;

    /// Reads the engine from a database URL's scheme.
    fn from_str(url: &str) -> Result<Self, StoreError> {
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or_default();
        match scheme {
            "sqlite" => Ok(Engine::Sqlite),
            "postgres" | "postgresql" => Ok(Engine::Postgres),
            _ => Err(StoreError::Config(format!(
                "unsupported database URL scheme '{scheme}': use sqlite:// or postgres://"
            ))),
        }
    }
}

/// A connection pool to the metadata database, migrated and ready.
#[derive(Debug, Clone)]
pub struct Db {
    pool: AnyPool,
    engine: Engine,
    /// SQLite lets one transaction write at a time; the others, if left to the database, wait
    /// in its busy handler, which sleeps and retries with growing naps (hundreds of
    /// milliseconds at the tail under 32 writers). Writers queue here instead, in order, and
    /// each starts as soon as the previous one ends. `None` on Postgres, which writes rows
    /// concurrently.
    write_turn: Option<Arc<tokio::sync::Mutex<()>>>,
}

impl Db {
    /// Connects, applies pending migrations, and returns the pool.
    pub async fn open(url: &str) -> Result<Db, StoreError> {
        static DRIVERS: Once = Once::new();
        DRIVERS.call_once(install_default_drivers);
        let engine: Engine = url.parse()?;
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
        migrator.run(&pool).await?;
        let write_turn = (engine == Engine::Sqlite).then(|| Arc::new(tokio::sync::Mutex::new(())));
        Ok(Db {
            pool,
            engine,
            write_turn,
        })
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
    pub async fn begin_write(&self) -> Result<WriteTx, StoreError> {
        // The turn is taken before a connection, so queued writers hold no connection.
        let turn = match &self.write_turn {
            Some(turn) => Some(turn.clone().lock_owned().await),
            None => None,
        };
        let tx = match self.engine {
            Engine::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Engine::Postgres => self.pool.begin().await?,
        };
        Ok(WriteTx { tx, _turn: turn })
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A write transaction, holding its turn among this process's SQLite writers until it is
/// committed or dropped (a drop rolls it back). Use it as the connection: `&mut *tx`.
#[derive(Debug)]
pub struct WriteTx {
    tx: Transaction<'static, Any>,
    _turn: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl WriteTx {
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await
    }
}

impl std::ops::Deref for WriteTx {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        &self.tx
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        &mut self.tx
    }
}

/// The current time in milliseconds since the Unix epoch.
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
