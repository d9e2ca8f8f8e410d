//! Who may do what in a thread (docs/reference/auth.md, who may do what): decided here, once,
//! for every door.
//!
//! A thread the caller may not see is "not found", never "forbidden", so that its existence
//! does not leak; a caller who may see it but whose role may not perform the action is
//! refused as forbidden.

use ferry_store::threads::Thread;

use crate::App;
use crate::error::{Error, Result};
use crate::principal::Principal;

/// What the caller wants to do in the thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read the thread, its uploads, published files, previews, events and sandbox.
    Read,
    /// Upload, or post a message as the user.
    ActAsUser,
    /// Write the sandbox, publish, send a file, speak: the agent's side.
    ActAsAgent,
    /// Mint an agent token, manage connectors, rename or delete the thread.
    Manage,
}

/// Whether a verified principal still stands for something. An agent's token is bound to its
/// thread: once the thread is deleted, the token, and all that was made with it (its S3 keys,
/// its file URLs), reaches nothing through any door, spaces included. Every door asks this
/// after it has verified who is calling, and refuses the caller as unauthenticated when not.
pub async fn is_live(app: &App, principal: &Principal) -> Result<bool> {
    match principal {
        Principal::Agent { thread, sub, .. } => Ok(app
            .db
            .thread(thread)
            .await?
            .is_some_and(|t| t.owner == *sub)),
        Principal::User { .. } | Principal::Service { .. } => Ok(true),
    }
}

/// What a door tells a caller whose principal is no longer live.
pub const THREAD_GONE: &str = "this agent token's thread does not exist (deleted, or never made): \
     the token reaches nothing; use a token of an existing thread";

/// Loads the thread if `principal` may perform `action` in it.
pub async fn thread(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    action: Action,
) -> Result<Thread> {
    let missing = || Error::not_found(format!("no thread '{thread_id}'"));
    let thread = app.db.thread(thread_id).await?.ok_or_else(missing)?;
    let (visible, role_may) = match principal {
        Principal::User { sub } => (
            *sub == thread.owner,
            matches!(action, Action::Read | Action::ActAsUser | Action::Manage),
        ),
        Principal::Agent {
            thread: bound, sub, ..
        } => (
            *bound == thread.id && *sub == thread.owner,
            matches!(action, Action::Read | Action::ActAsAgent),
        ),
        Principal::Service { .. } => (true, true),
    };
    if !visible {
        return Err(missing());
    }
    if !role_may {
        return Err(Error::forbidden(match action {
            Action::ActAsUser => {
                "only the thread's owner (or service_role) may do this; agents publish, send files or speak instead"
            }
            Action::ActAsAgent => {
                "only the thread's agent (or service_role) may do this; use an agent token from POST /api/threads/{id}/agent-token"
            }
            Action::Manage => {
                "only the thread's owner (or service_role) may do this: mint agent tokens, manage connectors, rename or delete the thread"
            }
            Action::Read => "not allowed",
        }));
    }
    Ok(thread)
}
