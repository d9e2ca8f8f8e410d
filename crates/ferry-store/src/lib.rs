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
