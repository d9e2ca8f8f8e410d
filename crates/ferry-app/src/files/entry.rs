//! The one shape of a file in a listing, and of a write's answer, for every route and tool
//! that lists or writes files: a space's and a sandbox's listing, `ls`, a `PUT`, `write_file`,
//! `upload_files` and a finished resumable upload answer these, so a client reads them one way.

use ferry_core::Timestamp;
use ferry_core::conditions::quoted_etag;
use ferry_store::spaces::SpaceEntry;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One entry of a listing: a file, or a folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    /// In a space's listing, the path within the space (`ideas/tea.md`); in a sandbox's listing
    /// and in `ls`, the agent's path (`/sandbox/outputs/report.md`, `/spaces/notes/ideas/tea.md`).
    pub path: String,
    /// `file` or `dir`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The type the file is served with: a space file's as written, a sandbox file's its
    /// name's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Quoted, as in an `ETag` header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// When the file was last written (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// The same instant as `updatedAt`, under the name file-system tools use for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
    /// Only on a sandbox entry that no path can name (a name made by a command that holds a
    /// control character or a backslash, or is not UTF-8): why. Its `path` then writes each
    /// such character or byte as `\xNN` and a backslash as `\\`, and it has no other field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unaddressable: Option<&'static str>,
}

impl FileEntry {
    /// A folder.
    pub fn dir(path: String) -> FileEntry {
        FileEntry {
            path,
            kind: "dir",
            size: None,
            content_type: None,
            etag: None,
            updated_at: None,
            modified_at: None,
            unaddressable: None,
        }
    }

    /// A sandbox entry no path can name, shown as the field of that name says.
    pub fn unaddressable(entry: &crate::files::sandbox::Unaddressable) -> FileEntry {
        FileEntry {
            kind: if entry.is_dir { "dir" } else { "file" },
            unaddressable: Some(entry.why.describe()),
            ..FileEntry::dir(format!("/sandbox/{}", entry.shown))
        }
    }

    /// A file; `etag` unquoted.
    pub fn file(
        path: String,
        size: u64,
        content_type: String,
        etag: &str,
        modified: Timestamp,
    ) -> FileEntry {
        let at = modified.rfc3339();
        FileEntry {
            path,
            kind: "file",
            size: Some(size),
            content_type: Some(content_type),
            etag: Some(quoted_etag(etag)),
            updated_at: Some(at.clone()),
            modified_at: Some(at),
            unaddressable: None,
        }
    }

    /// A sandbox file, typed by its name, at `shown` (its agent path).
    pub fn sandbox_file(shown: String, size: u64, etag: &str, modified: Timestamp) -> FileEntry {
        let name = shown.rsplit('/').next().unwrap_or(&shown);
        let content_type = ferry_core::mime::mime_for_name(name);
        FileEntry::file(shown, size, content_type, etag, modified)
    }

    /// An entry of a space's listing, its path written after `prefix` (empty for the space's
    /// own routes, `/spaces/NAME/` for the agent's).
    pub fn of_space(entry: SpaceEntry, prefix: &str) -> FileEntry {
        match entry {
            SpaceEntry::Dir { path } => FileEntry::dir(format!("{prefix}{path}")),
            SpaceEntry::File(f) => FileEntry::file(
                format!("{prefix}{}", f.path),
                f.size,
                f.content_type,
                &f.sha256,
                f.updated_at,
            ),
        }
    }
}

/// What a write answers, whichever route or tool made it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Written {
    pub path: String,
    pub size: u64,
    /// The type the file is served with from now on.
    pub content_type: String,
    /// Quoted, as in an `ETag` header.
    pub etag: String,
    /// Whether nothing was at the path before (a route also says so by `201` rather than
    /// `200`).
    pub created: bool,
}

impl Written {
    /// A space write, its path within the space.
    pub fn of_space(written: crate::files::spaces::Written) -> Written {
        Written {
            etag: quoted_etag(&written.file.sha256),
            path: written.file.path,
            size: written.file.size,
            content_type: written.file.content_type,
            created: written.created,
        }
    }
}
