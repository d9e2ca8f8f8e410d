//! `delete_file`: removes a file, or with `recursive` a folder and everything in it.

use ferry_core::agent_files::{DeleteFileInput, bare_etag};
use ferry_core::change::ChangeKind;
use ferry_core::{AgentPath, SandboxPath};
use ferry_store::sandbox::PathKind;
use serde::Serialize;
use utoipa::ToSchema;

use super::{Caller, find, named, parse};
use crate::error::{Error, Result, in_sandbox};

/// `delete_file`'s answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Deleted {
    pub path: String,
    /// Files deleted.
    pub deleted: u64,
}

/// `delete_file`: removes a file (if `ifMatch` still holds), or with `recursive` a folder
/// and everything in it. A whole space goes with it when its root is named.
pub async fn delete(caller: Caller<'_>, input: &DeleteFileInput) -> Result<Deleted> {
    let path = parse(&input.path)?;
    let if_match = input
        .if_match
        .as_deref()
        .map(|tag| vec![bare_etag(tag).to_owned()]);
    let kind = find(caller, &path)
        .await?
        .ok_or_else(|| Error::not_found(format!("nothing at '{path}'")))?;
    if kind == PathKind::Folder && !input.recursive {
        return Err(Error::invalid_request(format!(
            "'{path}' is a folder; pass recursive: true to delete it and everything in it"
        )));
    }
    if kind == PathKind::Folder && if_match.is_some() {
        return Err(Error::invalid_request(
            "ifMatch names a file's version; a folder has none",
        ));
    }
    let deleted = match (&path, kind) {
        (AgentPath::Sandbox(None) | AgentPath::Spaces, _) => {
            return Err(Error::forbidden(format!(
                "'{path}' itself cannot be deleted; delete what is in it"
            )));
        }
        (AgentPath::Sandbox(Some(within)), PathKind::File) => {
            crate::files::sandbox::delete(
                caller.app,
                caller.principal,
                caller.thread()?,
                &SandboxPath::from_relative(within.clone()),
                if_match.as_deref(),
                caller.door,
            )
            .await
            .map_err(|e| named(e, &path))?;
            1
        }
        (AgentPath::Sandbox(Some(within)), PathKind::Folder) => {
            let thread = caller.thread()?;
            let sandbox =
                crate::files::sandbox::writable(caller.app, caller.principal, thread).await?;
            let removed = sandbox.remove_tree(within).await.map_err(in_sandbox)?;
            let changes = removed
                .iter()
                .map(|below| crate::files::sandbox::Changed {
                    kind: ChangeKind::FileDeleted,
                    path: format!("{path}/{below}"),
                    destination: None,
                    etag: None,
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
            removed.len() as u64
        }
        (
            AgentPath::Space {
                space,
                path: Some(within),
            },
            PathKind::File,
        ) => {
            crate::files::spaces::delete(
                caller.app,
                caller.principal,
                space,
                within,
                if_match.as_deref(),
                caller.door,
            )
            .await?;
            1
        }
        (AgentPath::Space { space, path: dir }, _) => {
            let owner = caller.owner()?;
            let removed = caller
                .app
                .db
                .space_remove_tree(owner, space, dir.as_ref(), caller.door)
                .await?;
            caller
                .app
                .events
                .poke(&ferry_store::space_events::channel_key(owner, space));
            if dir.is_none() {
                crate::files::spaces::remove(caller.app, caller.principal, space).await?;
            }
            removed.len() as u64
        }
    };
    Ok(Deleted {
        path: path.to_string(),
        deleted,
    })
}
