//! `ls`: one level of a folder of the sandbox or of a space, a file's own entry, or the places
//! the caller may reach.

use ferry_core::agent_files::LsInput;
use ferry_core::{AgentPath, SandboxPath, SpaceName};
use ferry_store::sandbox::PathKind;
use ferry_store::spaces::ListQuery;
use serde::Serialize;
use utoipa::ToSchema;

use super::{Caller, FileEntry, Source, find, open, parse};
use crate::error::Result;

/// `ls`'s answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Listing {
    /// One level, sorted by path.
    pub entries: Vec<FileEntry>,
    /// Present (true) when the folder holds more than [`MAX_LISTED`] entries.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Entries `ls` answers at most.
pub const MAX_LISTED: usize = 10_000;

fn space_prefix(space: &SpaceName) -> String {
    format!("/spaces/{space}/")
}

/// `ls`: the direct children of a folder, sorted. A folder that does not exist lists nothing,
/// as in spaces and S3; a file lists as its one entry (as `ls FILE` prints it); `/` lists the
/// places the caller may reach.
pub async fn ls(caller: Caller<'_>, input: &LsInput) -> Result<Listing> {
    if input.path.trim() == "/" {
        let mut entries = Vec::new();
        if caller.thread().is_ok() {
            entries.push(FileEntry::dir("/sandbox".to_owned()));
        }
        if caller.principal.space_owner().is_ok() {
            entries.push(FileEntry::dir("/spaces".to_owned()));
        }
        return Ok(Listing {
            entries,
            truncated: false,
        });
    }
    let path = &parse(&input.path)?;
    if find(caller, path).await? == Some(PathKind::File) {
        let entry = match open(caller, path).await?.source {
            Source::Sandbox(file) => {
                FileEntry::sandbox_file(path.to_string(), file.size, &file.etag, file.modified)
            }
            Source::Space(file) => FileEntry::file(
                path.to_string(),
                file.size,
                file.content_type,
                &file.sha256,
                file.updated_at,
            ),
        };
        return Ok(Listing {
            entries: vec![entry],
            truncated: false,
        });
    }
    let mut entries = match path {
        AgentPath::Sandbox(dir) => {
            let dir = dir.clone().map(SandboxPath::from_relative);
            let listing = crate::files::sandbox::list(
                caller.app,
                caller.principal,
                caller.thread()?,
                dir.as_ref(),
                false,
            )
            .await?;
            let unaddressable = listing.unaddressable.iter().map(FileEntry::unaddressable);
            let mut entries: Vec<FileEntry> = listing
                .entries
                .into_iter()
                .map(|entry| {
                    let shown = format!("/sandbox/{}", entry.path);
                    if entry.is_dir {
                        FileEntry::dir(shown)
                    } else {
                        FileEntry::sandbox_file(shown, entry.size, &entry.etag, entry.modified)
                    }
                })
                .chain(unaddressable)
                .collect();
            entries.sort_by(|a, b| a.path.cmp(&b.path));
            entries
        }
        AgentPath::Spaces => crate::files::spaces::list_spaces(caller.app, caller.principal)
            .await?
            .into_iter()
            .map(|space| FileEntry::dir(format!("/spaces/{}", space.name)))
            .collect(),
        AgentPath::Space { space, path: dir } => {
            let prefix = space_prefix(space);
            let mut entries = Vec::new();
            let mut after = None;
            loop {
                let query = ListQuery {
                    dir: dir.as_ref(),
                    recursive: false,
                    limit: 1000,
                    after,
                };
                let page =
                    crate::files::spaces::list(caller.app, caller.principal, space, &query).await?;
                entries.extend(
                    page.entries
                        .into_iter()
                        .map(|entry| FileEntry::of_space(entry, &prefix)),
                );
                match page.next {
                    Some(next) if entries.len() <= MAX_LISTED => after = Some(next),
                    _ => break,
                }
            }
            entries
        }
    };
    let truncated = entries.len() > MAX_LISTED;
    entries.truncate(MAX_LISTED);
    Ok(Listing { entries, truncated })
}
