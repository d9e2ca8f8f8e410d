//! The JSON of file listings and writes, shared by spaces and sandboxes.

use ferry_app::spaces::SpaceEntry;
use serde::Serialize;
use utoipa::ToSchema;

use crate::serve::quoted_etag;

/// One entry of a listing: a file, or (non-recursive listings only) a folder.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    pub path: String,
    /// `file` or `dir`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// Only on a sandbox entry that no route can address (a name made by a command that holds
    /// a control character or a backslash, or is not UTF-8): why. Its `path` then writes each
    /// such character or byte as `\xNN` and a backslash as `\\`, and it has no other field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unaddressable: Option<&'static str>,
}

impl FileEntry {
    pub fn dir(path: String) -> FileEntry {
        FileEntry {
            path,
            kind: "dir",
            size: None,
            content_type: None,
            etag: None,
            updated_at: None,
            unaddressable: None,
        }
    }

    /// A sandbox entry no route can address, shown as the field of that name says.
    pub fn unaddressable(entry: &ferry_app::sandbox::Unaddressable) -> FileEntry {
        FileEntry {
            kind: if entry.is_dir { "dir" } else { "file" },
            unaddressable: Some(entry.why.describe()),
            ..FileEntry::dir(format!("/sandbox/{}", entry.shown))
        }
    }

    pub fn file(
        path: String,
        size: u64,
        content_type: String,
        sha256: &str,
        updated_at: ferry_core::Timestamp,
    ) -> FileEntry {
        FileEntry {
            path,
            kind: "file",
            size: Some(size),
            content_type: Some(content_type),
            etag: Some(quoted_etag(sha256)),
            updated_at: Some(updated_at.rfc3339()),
            unaddressable: None,
        }
    }
}

impl From<SpaceEntry> for FileEntry {
    fn from(entry: SpaceEntry) -> Self {
        match entry {
            SpaceEntry::Dir { path } => FileEntry::dir(path),
            SpaceEntry::File(f) => {
                FileEntry::file(f.path, f.size, f.content_type, &f.sha256, f.updated_at)
            }
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileList {
    pub files: Vec<FileEntry>,
    /// Present when more entries follow; pass it back as `cursor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The answer to a successful PUT (docs/reference/spaces.md).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteResult {
    pub path: String,
    pub size: u64,
    pub content_type: String,
    pub etag: String,
}

impl WriteResult {
    /// The answer to a space write, whichever request made it (a PUT, a finished resumable
    /// upload).
    pub fn of_space_write(written: ferry_app::spaces::Written) -> WriteResult {
        WriteResult {
            etag: quoted_etag(&written.file.sha256),
            path: written.file.path,
            size: written.file.size,
            content_type: written.file.content_type,
        }
    }
}
