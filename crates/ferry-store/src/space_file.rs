//! One space file's record, on its own so that the record cache ([`crate::record_cache`]),
//! which the database handle holds, need not depend on the space queries built on that handle.

use ferry_core::Timestamp;

/// A stored space file's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceFile {
    pub path: String,
    pub blob_key: String,
    pub size: u64,
    pub content_type: String,
    pub sha256: String,
    pub updated_at: Timestamp,
    /// See [`FileMeta::attributes`](ferry_core::write::FileMeta::attributes).
    pub attributes: Option<String>,
}
