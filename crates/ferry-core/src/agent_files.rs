//! What an agent asks of its file system (docs/agent-files.md): the inputs of `ls`,
//! `read_file`, `write_file`, `edit_file`, `glob`, `grep`, `move_file` and `delete_file`,
//! defined once. The HTTP routes read these from their JSON bodies and the MCP tools take the
//! same objects as their arguments, with the schema derived from here, so the two doors cannot
//! drift apart.
//!
//! Paths are of the agent's path space ([`crate::AgentPath`]): `/sandbox/…`, `/spaces/{space}/…`,
//! or relative to `/sandbox/workspace/`. Field names are the ones the agent tools models know.

use serde::Deserialize;

/// Lines `read_file` returns when no `limit` is given.
pub const DEFAULT_READ_LINES: usize = 2000;
/// Paths `glob` answers at most.
pub const MAX_GLOB_PATHS: usize = 1000;
/// Matches `grep` answers when no `maxResults` is given.
pub const DEFAULT_GREP_RESULTS: usize = 200;
/// The most matches `grep` answers, whatever `maxResults` asks.
pub const MAX_GREP_RESULTS: usize = 2000;

fn sandbox_root() -> String {
    "/sandbox".to_owned()
}

fn default_limit() -> usize {
    DEFAULT_READ_LINES
}

fn default_max_results() -> usize {
    DEFAULT_GREP_RESULTS
}

/// `ls`: one folder's entries.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LsInput {
    /// The folder to list: /sandbox (the default), a folder below it, /spaces (the user's
    /// spaces) or /spaces/{space}/… .
    #[serde(default = "sandbox_root")]
    #[cfg_attr(
        feature = "openapi",
        schema(default = "/sandbox", example = "/sandbox/outputs")
    )]
    pub path: String,
}

/// `read_file`: a text file's lines, an image, or a document's text.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadFileInput {
    /// The file, e.g. /sandbox/user_uploads/q3.csv or /spaces/notes/ideas/a.md.
    pub path: String,
    /// Lines to skip before the first one returned (0-based); negative counts from the end
    /// (-20: the last 20 lines).
    #[serde(default)]
    pub offset: i64,
    /// Lines to return at most (default 2000).
    #[serde(default = "default_limit")]
    #[cfg_attr(feature = "openapi", schema(default = 2000, minimum = 1))]
    pub limit: usize,
    /// PDF or PPTX only: the pages (a deck's slides) to show as images beside their text, e.g.
    /// "1-3,7" (at most 100).
    /// Without it a PDF is read as its extracted text, by lines.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Option<String>, example = "1-3,7")
    )]
    pub pages: Option<crate::page_selection::PageSelection>,
}

/// How `content` is written or carried: "utf-8" (the default), the text itself, or "base64",
/// the bytes base64-encoded (written with padding; read with padding optional).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Encoding {
    /// The text itself, stored as UTF-8.
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    /// The bytes, base64-encoded (standard alphabet, padding optional).
    #[serde(rename = "base64")]
    Base64,
}

impl Encoding {
    /// The serialized name: `utf-8` or `base64`.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Base64 => "base64",
        }
    }
}

/// `write_file`: create or replace a file.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WriteFileInput {
    /// Where to write, e.g. /sandbox/outputs/report.md; the folders on the way are made.
    pub path: String,
    /// The file's content: text, or base64 with encoding "base64".
    pub content: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub encoding: Encoding,
    /// "*": write only if nothing is at the path (ALREADY_EXISTS otherwise).
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// Write only if the file's ETag is still this one (PRECONDITION_FAILED otherwise).
    #[serde(default)]
    pub if_match: Option<String>,
    /// The media type a space file is kept and served with, e.g. text/csv (default: its
    /// name's). A sandbox file is always served with its name's type.
    #[serde(default)]
    pub content_type: Option<String>,
}

/// `edit_file`: replace an exact string in a text file.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EditFileInput {
    /// The text file to edit.
    pub path: String,
    /// The exact text to replace; it must occur exactly once unless replace_all.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one.
    #[serde(default)]
    pub replace_all: bool,
    /// Edit only if the file's ETag is still this one.
    #[serde(default, rename = "ifMatch")]
    pub if_match: Option<String>,
}

/// `glob`: the files whose paths match a pattern.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GlobInput {
    /// A glob relative to path: * and ? within a segment, ** across folders, {a,b}
    /// alternatives, [abc] classes; e.g. **/*.md or outputs/*.{csv,xlsx}.
    pub pattern: String,
    /// The folder to search below (default /sandbox).
    #[serde(default = "sandbox_root")]
    #[cfg_attr(feature = "openapi", schema(default = "/sandbox"))]
    pub path: String,
}

/// `grep`: the lines that hold a text (or match a regular expression).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GrepInput {
    /// The text to look for (a regular expression with regex: true).
    pub pattern: String,
    /// The folder (or file) to search (default /sandbox).
    #[serde(default = "sandbox_root")]
    #[cfg_attr(feature = "openapi", schema(default = "/sandbox"))]
    pub path: String,
    /// Only files matching this glob, as ripgrep's --glob: without a '/' it matches the file's
    /// name at any depth (*.csv), with one its path below `path` (data/*.csv, **/*.md).
    #[serde(default)]
    pub glob: Option<String>,
    /// Match letters regardless of case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Read pattern as a regular expression (linear-time: no pattern can make it hang).
    #[serde(default)]
    pub regex: bool,
    /// Search PDF, Word, Excel and PowerPoint files in their text as a model reads it (a
    /// page's text, a sheet as a Markdown table, a slide with its notes) rather than skip them
    /// as binary; each match then names its page, sheet (and row) or slide.
    #[serde(default)]
    pub documents: bool,
    /// Matches to return at most (default 200, at most 2000).
    #[serde(default = "default_max_results")]
    #[cfg_attr(
        feature = "openapi",
        schema(default = 200, minimum = 1, maximum = 2000)
    )]
    pub max_results: usize,
}

/// `move_file`: rename a file or folder within the sandbox or within one space.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MoveFileInput {
    /// The file or folder to move.
    pub source: String,
    /// Its new path, in the same place (the sandbox, or the same space).
    pub destination: String,
    /// Replace a file already at destination (never a folder).
    #[serde(default)]
    pub overwrite: bool,
}

/// `delete_file`: remove a file, or a folder with recursive.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteFileInput {
    /// The file or folder to delete.
    pub path: String,
    /// Required to delete a folder and everything in it.
    #[serde(default)]
    pub recursive: bool,
    /// Delete only if the file's ETag is still this one.
    #[serde(default)]
    pub if_match: Option<String>,
}

/// How long a `file_url` works when `expiresIn` is not given, in seconds.
pub const DEFAULT_URL_SECONDS: u64 = 900;
/// The longest a `file_url` works, in seconds.
pub const MAX_URL_SECONDS: u64 = 3600;

fn default_url_seconds() -> u64 {
    DEFAULT_URL_SECONDS
}

/// What the URL lets its holder do: "GET" reads the file, "PUT" creates or replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum TransferMethod {
    /// Read the file.
    #[serde(rename = "GET")]
    Get,
    /// Create or replace the file.
    #[serde(rename = "PUT")]
    Put,
}

impl TransferMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            TransferMethod::Get => "GET",
            TransferMethod::Put => "PUT",
        }
    }
}

/// `file_url`: a short-lived URL for one path and one method, for a process that holds no
/// ferry credentials (the agent's own code sandbox with `curl`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FileUrlInput {
    /// The file the URL reads or writes, e.g. /sandbox/outputs/chart.png.
    pub path: String,
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub method: TransferMethod,
    /// Seconds the URL works (default 900, at most 3600).
    #[serde(default = "default_url_seconds")]
    #[cfg_attr(
        feature = "openapi",
        schema(default = 900, minimum = 1, maximum = 3600)
    )]
    pub expires_in: u64,
}

/// An ETag as a client may send it back: quoted as in a header or a listing, or bare. A weak
/// tag (`W/"…"`) is kept whole, so it matches nothing, as in the HTTP routes.
pub fn bare_etag(tag: &str) -> &str {
    let tag = tag.trim();
    tag.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_names_are_the_tools_ones() {
        let read: ReadFileInput = serde_json::from_str(r#"{"path":"a.md"}"#).unwrap();
        assert_eq!((read.offset, read.limit), (0, DEFAULT_READ_LINES));
        let edit: EditFileInput = serde_json::from_str(
            r#"{"path":"a","old_string":"x","new_string":"y","replace_all":true,"ifMatch":"\"t\""}"#,
        )
        .unwrap();
        assert!(edit.replace_all);
        assert_eq!(bare_etag(edit.if_match.as_deref().unwrap()), "t");
        let write: WriteFileInput =
            serde_json::from_str(r#"{"path":"a","content":"eA==","encoding":"base64"}"#).unwrap();
        assert_eq!(write.encoding, Encoding::Base64);
        let unknown = serde_json::from_str::<LsInput>(r#"{"path":"/sandbox","x":1}"#);
        assert!(unknown.is_err(), "unknown fields are refused, not ignored");
        let ls: LsInput = serde_json::from_str("{}").unwrap();
        assert_eq!(ls.path, "/sandbox");
    }
}

/// Files one `upload_files` or `download_files` request names at most.
pub const MAX_BATCH_FILES: usize = 1000;

/// `upload_files`: several writes in one request, each done (or refused) on its own.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UploadFilesInput {
    /// The writes, done in order (1 to 1,000); each is a `write_file` input.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 1000))]
    pub files: Vec<WriteFileInput>,
}

/// `download_files`: several files' bytes in one request, each read (or refused) on its own.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DownloadFilesInput {
    /// The files to read, in the order their results come back (1 to 1,000).
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 1000))]
    pub paths: Vec<String>,
}
