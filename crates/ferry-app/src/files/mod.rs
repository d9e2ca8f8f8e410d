//! The agent's file system (docs/agent-files.md): `ls`, `read_file`, `write_file`,
//! `edit_file`, `glob`, `grep`, `move_file` and `delete_file` over one path space — the thread's
//! sandbox under `/sandbox/…` and the user's spaces under `/spaces/{space}/…`.
//!
//! Nothing here is a second copy of a rule: a write is [`crate::files::sandbox::write`] or
//! [`crate::files::spaces::write`] (the validator, `skills/` read-only, who may write, limits,
//! atomicity, content types), reads go through the sandbox's jail or the spaces' records, and
//! access to a thread is decided by [`crate::access`]. Every door (HTTP, MCP) calls these
//! functions and only shapes their answers.
//!
//! The room of the file system: the user's spaces ([`spaces`]), a thread's sandbox
//! ([`sandbox`]) and the agent's one path space over both (here).

mod batch;
mod delete_file;
mod document_text;
mod edit;
mod entry;
mod listing;
mod move_file;
mod read;
pub mod sandbox;
mod search;
pub mod spaces;
mod write;

pub use batch::{
    BATCH_READ_MAX_BYTES, DownloadResult, Downloaded, Failed, Fetched, FileError, SpooledUpload,
    UploadResult, Uploaded, download_files, upload_files,
};
pub use delete_file::{Deleted, delete};
pub use edit::{Edited, edit};
pub use entry::{FileEntry, Written};
pub use listing::{Listing, MAX_LISTED, ls};
pub use move_file::{Moved, move_file};
pub use read::{ReadOutput, read};
pub use search::{Globbed, GrepMatch, Grepped, Skipped, glob, grep};
pub use write::{Base64Decoder, Fields, SpooledWrite, write, write_spooled};

use bytes::Bytes;
use ferry_core::agent_files::{FileUrlInput, MAX_URL_SECONDS, TransferMethod, bare_etag};
use ferry_core::door::Door;
use ferry_core::write::{FileMeta, WriteCondition};
use ferry_core::{AgentPath, SandboxPath, SpaceName, ValidPath};
use ferry_store::sandbox::{OpenedFile, PathKind};
use ferry_store::space_moves::Found;
use ferry_store::spaces::SpaceFile;
use futures::StreamExt;

use crate::access::principal::Principal;
use crate::app::App;
use crate::body::Incoming;
use crate::error::{Error, Result, in_sandbox};

/// Who asks, and which thread's sandbox `/sandbox` is: the thread of the route, or else the
/// agent token's own.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    pub app: &'a App,
    pub principal: &'a Principal,
    pub thread: Option<&'a str>,
    /// The door the request came through, for change feeds.
    pub door: Door,
}

impl<'a> Caller<'a> {
    /// Checks that the thread the caller named (a thread's route) is one it may read, whatever
    /// the paths: a route of someone else's thread answers nothing, not even for spaces.
    pub async fn named_thread_is_visible(&self) -> Result<()> {
        if let Some(thread) = self.thread {
            crate::access::thread(
                self.app,
                self.principal,
                thread,
                crate::access::Action::Read,
            )
            .await?;
        }
        Ok(())
    }

    fn thread(&self) -> Result<&'a str> {
        match (self.thread, self.principal) {
            (Some(thread), _) => Ok(thread),
            (None, Principal::Agent { thread, .. }) => Ok(thread),
            (None, _) => Err(Error::invalid_request(
                "a /sandbox path needs a thread: use an agent token, or the thread's route \
                 /api/threads/{id}/fs/…",
            )),
        }
    }

    fn owner(&self) -> Result<&'a str> {
        self.principal.space_owner()
    }
}

/// Parses a path of the agent's path space.
pub fn parse(text: &str) -> Result<AgentPath> {
    AgentPath::parse(text).map_err(|e| Error::InvalidPath(e.to_string()))
}

/// A path that must name a file to write: one ending in `/` names a folder.
fn file_path(text: &str) -> Result<AgentPath> {
    if text.len() > 1 && text.ends_with('/') {
        return Err(Error::InvalidPath(format!(
            "'{text}' ends with '/', so it names a folder: name the file to write inside it \
             (e.g. '{text}notes.md'); folders are made on the way"
        )));
    }
    parse(text)
}

/// A path that must name a file or folder below a place's root.
fn below_root(path: &AgentPath) -> Result<&ValidPath> {
    path.within().ok_or_else(|| {
        Error::InvalidPath(format!(
            "'{path}' is a folder the server keeps; name a file or folder inside it"
        ))
    })
}

/// Largest file `read_file` and `edit_file` read whole; a larger one is read with a ranged GET.
pub const READ_MAX_BYTES: u64 = 64 << 20;

/// The state of a file as read: what a conditional write of it names.
#[derive(Debug)]
pub(crate) struct Current {
    pub size: u64,
    /// The ETag value, without quotes.
    pub etag: String,
    /// The stored content type (spaces), or the one its name implies (the sandbox).
    pub content_type: String,
    source: Source,
}

#[derive(Debug)]
enum Source {
    Sandbox(OpenedFile),
    Space(SpaceFile),
}

impl Current {
    /// The first `n` bytes of the file (fewer when it is shorter).
    pub async fn head(self, app: &App, n: usize) -> Result<Vec<u8>> {
        let range = Some(0..(n as u64).min(self.size));
        let mut read = match self.source {
            Source::Sandbox(opened) => opened.stream(range).await?,
            Source::Space(file) => app.blobs.read(&file.blob_key, range).await?,
        };
        let mut out = Vec::with_capacity(n);
        while let Some(chunk) = read.stream.next().await {
            out.extend_from_slice(&chunk?);
            if out.len() >= n {
                out.truncate(n);
                break;
            }
        }
        Ok(out)
    }

    /// The whole file for an answer that carries it (`read_file`, `download_files`,
    /// `edit_file`): its share of the server's memory budget is taken first, and kept until
    /// the answer has been sent ([`crate::memory`]).
    pub async fn bytes_for_answer(self, app: &App, limit: u64) -> Result<Vec<u8>> {
        app.memory
            .hold_answer(self.size.min(limit))
            .await?
            .until_answered();
        self.bytes(app, limit).await
    }

    /// The whole file, or `TooLarge` past `limit` bytes (checked again while reading: a
    /// sandbox file may grow after it was opened).
    pub async fn bytes(self, app: &App, limit: u64) -> Result<Vec<u8>> {
        let too_large = || {
            Error::TooLarge(format!(
                "the file is larger than the {} an agent tool reads whole; read it in byte \
                 ranges with GET and a Range header",
                crate::error::describe_bytes(limit)
            ))
        };
        if self.size > limit {
            return Err(too_large());
        }
        let mut read = match self.source {
            Source::Sandbox(opened) => opened.stream(None).await?,
            Source::Space(file) => app.blobs.read(&file.blob_key, None).await?,
        };
        let mut out = Vec::with_capacity(self.size as usize);
        while let Some(chunk) = read.stream.next().await {
            out.extend_from_slice(&chunk?);
            if out.len() as u64 > limit {
                return Err(too_large());
            }
        }
        Ok(out)
    }
}

/// Opens the file at `path` for reading.
pub(crate) async fn open(caller: Caller<'_>, path: &AgentPath) -> Result<Current> {
    match path {
        AgentPath::Sandbox(_) => {
            let within = below_root(path)?;
            let thread = caller.thread()?;
            let opened = crate::files::sandbox::open(
                caller.app,
                caller.principal,
                thread,
                &SandboxPath::from_relative(within.clone()),
            )
            .await
            .map_err(|e| named(e, path))?;
            Ok(Current {
                size: opened.size,
                etag: opened.etag.clone(),
                content_type: ferry_core::mime::mime_for_name(within.file_name()),
                source: Source::Sandbox(opened),
            })
        }
        AgentPath::Space { space, .. } => {
            let within = below_root(path)?;
            let file = crate::files::spaces::file(caller.app, caller.principal, space, within)
                .await
                .map_err(|e| named(e, path))?;
            Ok(Current {
                size: file.size,
                etag: file.sha256.clone(),
                content_type: file.content_type.clone(),
                source: Source::Space(file),
            })
        }
        AgentPath::Spaces => Err(is_a_folder(path)),
    }
}

/// Says which path a "not found" or "is a folder" was about.
fn named(e: Error, path: &AgentPath) -> Error {
    match e {
        Error::NotFound(_) => Error::not_found(format!("no file at '{path}'")),
        Error::AlreadyExists(_) => Error::AlreadyExists(format!("'{path}' already exists")),
        Error::InvalidPath(message) if message.contains("folder") => is_a_folder(path),
        other => other,
    }
}

fn is_a_folder(path: &AgentPath) -> Error {
    Error::InvalidPath(format!("'{path}' is a folder, not a file"))
}

/// What is at a path.
async fn find(caller: Caller<'_>, path: &AgentPath) -> Result<Option<PathKind>> {
    match path {
        AgentPath::Sandbox(None) | AgentPath::Spaces => Ok(Some(PathKind::Folder)),
        AgentPath::Space { space, path: None } => {
            let exists = crate::files::spaces::exists(caller.app, caller.principal, space).await?;
            Ok(exists.then_some(PathKind::Folder))
        }
        AgentPath::Sandbox(Some(within)) => {
            let sandbox =
                crate::files::sandbox::readable(caller.app, caller.principal, caller.thread()?)
                    .await?;
            Ok(sandbox.find(within).await.map_err(in_sandbox)?)
        }
        AgentPath::Space {
            space,
            path: Some(within),
        } => Ok(
            match caller
                .app
                .db
                .space_find(caller.owner()?, space, within)
                .await?
            {
                Found::File(_) => Some(PathKind::File),
                Found::Folder => Some(PathKind::Folder),
                Found::Nothing => None,
            },
        ),
    }
}

/// The write condition of a tool's `ifNoneMatch` / `ifMatch`.
fn condition(if_none_match: Option<&str>, if_match: Option<&str>) -> Result<WriteCondition> {
    let create_only = match if_none_match.map(str::trim) {
        None => false,
        Some("*") => true,
        Some(other) => {
            return Err(Error::invalid_request(format!(
                "ifNoneMatch takes only \"*\" (write only if nothing is there), not '{other}'"
            )));
        }
    };
    let if_match = if_match.map(|tag| vec![bare_etag(tag).to_owned()]);
    if create_only && if_match.is_some() {
        return Err(Error::invalid_request(
            "send either ifNoneMatch or ifMatch, not both",
        ));
    }
    Ok(WriteCondition::of(create_only, if_match))
}

/// Bytes already in memory as a body to write.
fn in_memory(
    bytes: Vec<u8>,
) -> Incoming<impl futures::Stream<Item = std::result::Result<Bytes, std::convert::Infallible>>> {
    let len = bytes.len() as u64;
    Incoming::new(futures::stream::iter([Ok(Bytes::from(bytes))]), Some(len))
}

/// Writes `body` at `path` through the place's own write, with its rules; answers whether it
/// created the file, its size and its ETag value.
async fn put<S, E>(
    caller: Caller<'_>,
    path: &AgentPath,
    content_type: &str,
    condition: &WriteCondition,
    body: Incoming<S>,
) -> Result<(bool, u64, String)>
where
    S: futures::Stream<Item = std::result::Result<Bytes, E>>,
    E: std::fmt::Display,
{
    match path {
        AgentPath::Sandbox(_) => {
            let within = SandboxPath::from_relative(below_root(path)?.clone());
            let (created, entry) = crate::files::sandbox::write(
                caller.app,
                caller.principal,
                caller.thread()?,
                &within,
                content_type,
                condition,
                body,
                caller.door,
            )
            .await
            .map_err(|e| named(e, path))?;
            Ok((created, entry.size, entry.etag))
        }
        AgentPath::Space { space, .. } => {
            let within = below_root(path)?;
            let written = crate::files::spaces::write(
                caller.app,
                caller.principal,
                space,
                within,
                FileMeta {
                    door: caller.door,
                    ..FileMeta::typed(content_type)
                },
                condition,
                body,
            )
            .await?;
            Ok((written.created, written.file.size, written.file.sha256))
        }
        AgentPath::Spaces => Err(is_a_folder(path)),
    }
}

/// Checks that the caller may now do what a `file_url` for `input` would let its holder do
/// (read the file, which must exist; or write there), and answers the path. The URL, when
/// used, does it as this caller, through the same read or write, so every rule holds again
/// then; this check only keeps a URL from being handed out for what would be refused.
pub async fn check_transfer(caller: Caller<'_>, input: &FileUrlInput) -> Result<AgentPath> {
    if !(1..=MAX_URL_SECONDS).contains(&input.expires_in) {
        return Err(Error::invalid_request(format!(
            "expiresIn must be from 1 to {MAX_URL_SECONDS} seconds"
        )));
    }
    let path = match input.method {
        TransferMethod::Put => file_path(&input.path)?,
        TransferMethod::Get => parse(&input.path)?,
    };
    let within = below_root(&path)?;
    match (input.method, &path) {
        (TransferMethod::Get, _) => {
            open(caller, &path).await?;
        }
        (TransferMethod::Put, AgentPath::Sandbox(_)) => {
            crate::files::sandbox::writable(caller.app, caller.principal, caller.thread()?).await?;
            // Refused now as the write would refuse it: a URL is never handed out for a path
            // it could not write (the uploads, skills, ferry's own folder).
            if SandboxPath::from_relative(within.clone()).is_read_only() {
                return Err(ferry_store::Error::ReadOnly.into());
            }
            ferry_store::sandbox::changeable(within)?;
        }
        (TransferMethod::Put, _) => {
            caller.owner()?;
        }
    }
    if input.method == TransferMethod::Put && find(caller, &path).await? == Some(PathKind::Folder) {
        return Err(is_a_folder(&path));
    }
    Ok(path)
}

/// The files below a folder, each with its path in the agent's path space, its path relative
/// to the folder (what a glob is matched against) and its size; and how many names below it
/// no door can address, left out (only a sandbox folder on disk can hold such names).
#[derive(Debug, Default)]
pub(crate) struct FilesBelow {
    pub files: Vec<(AgentPath, String, u64)>,
    pub unaddressable: u64,
}

/// Every file below `path` (or `path` itself when it is a file).
pub(crate) async fn files_below(caller: Caller<'_>, path: &AgentPath) -> Result<FilesBelow> {
    let kind = find(caller, path)
        .await?
        .ok_or_else(|| Error::not_found(format!("nothing at '{path}'")))?;
    if kind == PathKind::File {
        let name = path.file_name().to_owned();
        let size = open(caller, path).await?.size;
        return Ok(FilesBelow {
            files: vec![(path.clone(), name, size)],
            unaddressable: 0,
        });
    }
    let relative_to = |full: &str, base: Option<&ValidPath>| -> String {
        match base {
            Some(base) => full[base.as_str().len() + 1..].to_owned(),
            None => full.to_owned(),
        }
    };
    let mut out = Vec::new();
    let mut unaddressable = 0;
    match path {
        AgentPath::Sandbox(dir) => {
            // Names and sizes are all a search or a zip needs: no file is read for its ETag.
            let sandbox =
                crate::files::sandbox::readable(caller.app, caller.principal, caller.thread()?)
                    .await?;
            let listing = sandbox
                .list_untagged(dir.as_ref(), true)
                .await
                .map_err(crate::error::in_sandbox)?;
            unaddressable = listing.unaddressable.len() as u64;
            for entry in listing.entries {
                if entry.is_dir {
                    continue;
                }
                let relative = relative_to(&entry.path, dir.as_ref());
                let full = AgentPath::Sandbox(Some(ValidPath::parse(&entry.path)?));
                out.push((full, relative, entry.size));
            }
        }
        AgentPath::Space { space, path: dir } => {
            let files = caller
                .app
                .db
                .space_files_below(caller.owner()?, space, dir.as_ref())
                .await?;
            for file in files {
                let relative = relative_to(&file.path, dir.as_ref());
                let full = AgentPath::Space {
                    space: space.clone(),
                    path: Some(ValidPath::parse(&file.path)?),
                };
                out.push((full, relative, file.size));
            }
        }
        AgentPath::Spaces => {
            let owner = caller.owner()?;
            for summary in crate::files::spaces::list_spaces(caller.app, caller.principal).await? {
                let space = SpaceName::parse(&summary.name)?;
                for file in caller.app.db.space_files_below(owner, &space, None).await? {
                    let relative = format!("{space}/{}", file.path);
                    let full = AgentPath::Space {
                        space: space.clone(),
                        path: Some(ValidPath::parse(&file.path)?),
                    };
                    out.push((full, relative, file.size));
                }
            }
        }
    }
    Ok(FilesBelow {
        files: out,
        unaddressable,
    })
}

#[cfg(test)]
mod tests;
