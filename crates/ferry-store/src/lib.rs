//! Storage for ferry: the only crate that touches the database, the blob store and the disk.
//!
//! - [`db::Db`]: metadata in SQLite (default) or PostgreSQL; the truth about what exists.
//! - [`blobs::Blobs`]: immutable byte blobs, durable before metadata points at them.
//! - [`sandbox::Sandboxes`]: each thread's working folder, reached through a jailed handle.

pub mod blobs;
pub mod db;
pub mod events;
pub mod published;
pub mod sandbox;
pub mod say;
pub mod spaces;
pub mod sweep;
pub mod threads;
pub mod uploads;

pub use blobs::{BlobRead, Blobs, LocalBlobs, ObjectBlobs, Spooled, StoredBlob, WriteError};
pub use db::{Db, Engine};

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("already exists")]
    AlreadyExists,
    #[error("precondition failed")]
    PreconditionFailed,
    #[error("configuration: {0}")]
    Config(String),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl StoreError {
    /// Whether the failure is a full disk (or an exhausted quota), in the database or beside
    /// it: the one internal failure a client is told about, because it is not the client's
    /// request that is wrong and the same request will succeed once there is room.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StoreError::Io(e) => is_disk_full(e),
            StoreError::Database(e) => database_is_full(e),
            _ => false,
        }
    }
}

/// Whether an I/O error says the disk (or the user's quota) is full.
pub fn is_disk_full(e: &std::io::Error) -> bool {
    if matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG)
    ) {
        return true;
    }
    // Errors wrapped on their way up (an object store's, a task's) keep the original inside.
    std::error::Error::source(e)
        .and_then(|inner| inner.downcast_ref::<std::io::Error>())
        .is_some_and(is_disk_full)
}

/// Whether a database error says its disk is full: SQLite's `SQLITE_FULL` (13, with its
/// extended codes) or PostgreSQL's `disk_full` (53100).
pub fn database_is_full(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(io) => is_disk_full(io),
        sqlx::Error::Database(db) => match db.code().as_deref() {
            Some("53100") => true,
            Some(code) => code.parse::<i32>().is_ok_and(|c| c & 0xff == 13),
            None => false,
        },
        _ => false,
    }
}
