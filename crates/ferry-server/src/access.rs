//! Who may do what in a thread (docs/reference/auth.md, who may do what).
//!
//! A thread the caller may not see answers 404, never 403, so that its existence does not
//! leak; a caller who may see it but whose role may not perform the action gets 403.

use ferry_store::threads::Thread;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// What the caller wants to do in the thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read the thread, its uploads, published files, previews, events and sandbox.
    Read,
    /// Upload, or post a message as the user.
    ActAsUser,
    /// Write the sandbox, publish, send a file, speak: the agent's side.
    ActAsAgent,
    /// Mint an agent token for the thread.
    Manage,
}

/// Loads the thread if `principal` may perform `action` in it.
pub async fn thread_for(
    state: &AppState,
    principal: &Principal,
    thread_id: &str,
    action: Action,
) -> ApiResult<Thread> {
    let missing = || ApiError::not_found(format!("no thread '{thread_id}'"));
    let thread = state.db.thread(thread_id).await?.ok_or_else(missing)?;
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
        return Err(ApiError::forbidden(match action {
            Action::ActAsUser => {
                "only the thread's owner (or service_role) may do this; agents publish, send files or speak instead"
            }
            Action::ActAsAgent => {
                "only the thread's agent (or service_role) may do this; use an agent token from POST /api/threads/{id}/agent-token"
            }
            Action::Manage => "only the thread's owner (or service_role) may mint agent tokens",
            Action::Read => "not allowed",
        }));
    }
    Ok(thread)
}
