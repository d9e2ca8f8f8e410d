//! The JSON of file listings and writes, shared by spaces and sandboxes: the entry and the
//! write answer are ferry-app's, one shape for every route and tool.

pub use ferry_app::files::{FileEntry, Written};
use serde::Serialize;
use utoipa::ToSchema;

/// A space's or a sandbox's listing.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileList {
    pub files: Vec<FileEntry>,
    /// Present when more entries follow; pass it back as `cursor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
