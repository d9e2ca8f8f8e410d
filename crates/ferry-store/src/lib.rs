//! Storage for ferry: the only crate that touches the database, the blob store and the disk.
//!
//! - [`db::Db`]: metadata in SQLite (default) or PostgreSQL; the truth about what exists.
//! - [`blobs::Blobs`]: immutable byte blobs, durable before metadata points at them.
//! - [`sandbox::Sandboxes`]: each thread's working folder, reached through a jailed handle.

pub mod access_keys;
pub mod blobs;
mod chunk_writer;
pub mod db;
mod error;
pub mod events;
mod group_commit;
pub mod multipart;
pub mod published;
mod record_cache;
pub mod resumable;
pub mod sandbox;
pub mod say;
pub mod space_events;
mod space_file;
pub mod space_moves;
pub mod space_names;
pub mod spaces;
mod sqlite_reads;
pub mod sweep;
pub mod threads;
pub mod uploads;
mod wal_checkpoint;
mod write_plan;

pub use blobs::{BlobRead, Blobs, LocalBlobs, ObjectBlobs, Spooled, StoredBlob};
pub use db::{Db, Engine};
pub use error::{Error, Result, database_is_full, is_disk_full};
