//! `move_file`: renames a file or folder within the sandbox or within one space.

use ferry_core::AgentPath;
use ferry_core::agent_files::MoveFileInput;
use ferry_core::change::ChangeKind;
use ferry_core::conditions::quoted_etag;
use serde::Serialize;
use utoipa::ToSchema;

use super::{Caller, below_root, is_a_folder, parse};
use crate::error::{Error, Result};

/// `move_file`'s answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Moved {
    pub source: String,
    pub destination: String,
    /// The moved file's ETag (a move keeps it); absent for a folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// Files moved (1 for a file).
    pub moved: u64,
}

/// `move_file`: renames a file or folder within the sandbox or within one space. A taken
/// destination is `ALREADY_EXISTS` unless `overwrite` (which replaces a file, never a folder).
pub async fn move_file(caller: Caller<'_>, input: &MoveFileInput) -> Result<Moved> {
    let (source, destination) = (parse(&input.source)?, parse(&input.destination)?);
    if !source.same_place(&destination) {
        return Err(Error::invalid_request(format!(
            "'{source}' and '{destination}' are in different places; move_file moves within the \
             sandbox or within one space. Copy the file across (write_file, or a GET file_url \
             fed to a PUT file_url), then delete the original"
        )));
    }
    let (from, to) = (below_root(&source)?, below_root(&destination)?);
    if from == to {
        return Err(Error::invalid_request(format!(
            "'{source}' is already at that path"
        )));
    }
    if to.starts_with(from) {
        return Err(Error::invalid_request(format!(
            "'{destination}' is inside '{source}': a folder cannot move into itself"
        )));
    }
    // What a move of either place answers for a taken destination or a missing source.
    let refused = |e: ferry_store::Error| match e {
        ferry_store::Error::AlreadyExists => {
            Error::AlreadyExists(format!("'{destination}' already exists"))
        }
        ferry_store::Error::NotFound => Error::not_found(format!("nothing at '{source}'")),
        other => other.into(),
    };
    let (moved, etag) = match &source {
        AgentPath::Sandbox(_) => {
            let thread = caller.thread()?;
            let sandbox =
                crate::files::sandbox::writable(caller.app, caller.principal, thread).await?;
            let moved = sandbox
                .rename(from, to, input.overwrite)
                .await
                .map_err(refused)?;
            let joined = |base: &AgentPath, below: &str| match below {
                "" => base.to_string(),
                below => format!("{base}/{below}"),
            };
            let changes = moved
                .files
                .iter()
                .map(|below| crate::files::sandbox::Changed {
                    kind: ChangeKind::FileMoved,
                    path: joined(&source, below),
                    destination: Some(joined(&destination, below)),
                    etag: moved.etag.clone(),
                    size: None,
                })
                .collect();
            crate::files::sandbox::announce(
                caller.app,
                caller.principal,
                thread,
                caller.door,
                changes,
            )
            .await;
            (moved.files.len() as u64, moved.etag)
        }
        AgentPath::Space { space, .. } => {
            let owner = caller.owner()?;
            let moved = caller
                .app
                .db
                .space_move(owner, space, from, to, input.overwrite, caller.door)
                .await
                .map_err(refused)?;
            caller
                .app
                .events
                .poke(&ferry_store::space_events::channel_key(owner, space));
            let etag = ferry_store::space_moves::moved_file_etag(&moved, to);
            (moved.len() as u64, etag)
        }
        AgentPath::Spaces => return Err(is_a_folder(&source)),
    };
    Ok(Moved {
        source: source.to_string(),
        destination: destination.to_string(),
        etag: etag.map(|tag| quoted_etag(&tag)),
        moved,
    })
}
