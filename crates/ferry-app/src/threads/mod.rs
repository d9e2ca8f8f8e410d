//! Threads (docs/reference/threads-and-sandbox.md): a conversation between a user and an
//! agent, with its sandbox.
//!
//! The room of threads and what is said in them: the thread itself (here), the live list of a
//! person's threads ([`list`]), messages ([`messages`]), the user's uploads ([`uploads`]), say
//! mode ([`say`]) and small files sent inline ([`send_file`]).

pub mod list;
pub mod messages;
pub mod say;
pub mod send_file;
pub mod uploads;

use ferry_store::threads::Thread;
use serde::Serialize;
use utoipa::ToSchema;

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::error::{Error, Result};

/// The longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 500;

/// A thread as clients see it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadView {
    pub id: String,
    pub title: Option<String>,
    pub owner: String,
    pub created_at: String,
    /// When its newest event was stored (`createdAt` while it has none): thread lists are
    /// sorted on it, most recent first.
    pub last_activity_at: String,
    /// The id of the thread's newest event when this was read (0: none yet). A client that
    /// replays the event stream has caught up once it has seen this id.
    pub last_event_id: i64,
    /// The sandbox's folder on the server's host; told to agent and service_role tokens only,
    /// and only where sandboxes are folders (not when they live in the blob store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_dir: Option<String>,
}

impl ThreadView {
    fn of(app: &App, principal: &Principal, thread: Thread) -> ThreadView {
        let sandbox_dir = match principal {
            Principal::Agent { .. } | Principal::Service { .. } => app
                .sandboxes
                .host_path(&thread.id)
                .map(|p| p.to_string_lossy().into_owned()),
            Principal::User { .. } => None,
        };
        ThreadView {
            id: thread.id,
            title: thread.title,
            owner: thread.owner,
            created_at: thread.created_at.rfc3339(),
            last_activity_at: thread.active_at.rfc3339(),
            last_event_id: thread.last_event,
            sandbox_dir,
        }
    }
}

/// Creates a thread with its sandbox. A user creates threads for themself; service_role
/// names the owner (or uses its `sub`); agents create none.
pub async fn create(
    app: &App,
    principal: &Principal,
    title: Option<String>,
    owner: Option<String>,
) -> Result<ThreadView> {
    let owner = match (principal, owner) {
        (Principal::User { sub }, None) => sub.clone(),
        (Principal::User { sub }, Some(owner)) if owner == *sub => owner,
        (Principal::User { .. }, Some(_)) => {
            return Err(Error::forbidden(
                "only service_role may create a thread for another user",
            ));
        }
        (Principal::Service { .. }, Some(owner)) if !owner.is_empty() => owner,
        (Principal::Service { sub: Some(sub) }, None) => sub.clone(),
        (Principal::Service { .. }, _) => {
            return Err(Error::invalid_request(
                "a service_role token must name the thread's owner in 'owner'",
            ));
        }
        (Principal::Agent { .. }, _) => {
            return Err(Error::forbidden("agents cannot create threads"));
        }
    };
    let title = usable_title(title)?;
    let thread = app.db.create_thread(&owner, title.as_deref()).await?;
    app.sandboxes
        .create(&thread.id, app.skills_dir.as_deref())
        .await?;
    list_changed(app, &thread.owner).await;
    Ok(ThreadView::of(app, principal, thread))
}

/// The longest search text, in characters.
pub const MAX_SEARCH_CHARS: usize = 500;

/// The caller's threads, most recently active first: an agent sees its one thread;
/// service_role sees its `sub`'s threads, or every thread without one. With `search`, only
/// those whose title, messages or file names hold that text.
pub async fn list(
    app: &App,
    principal: &Principal,
    search: Option<&str>,
) -> Result<Vec<ThreadView>> {
    let search = search.map(str::trim).filter(|s| !s.is_empty());
    if search.is_some_and(|s| s.chars().count() > MAX_SEARCH_CHARS) {
        return Err(Error::invalid_request(format!(
            "'q' is longer than {MAX_SEARCH_CHARS} characters"
        )));
    }
    let owner = match principal {
        Principal::User { sub } | Principal::Service { sub: Some(sub) } => Some(sub.as_str()),
        Principal::Service { sub: None } => None,
        Principal::Agent { thread, sub, .. } => {
            let own = app.db.thread(thread).await?.filter(|t| t.owner == *sub);
            let found = match (own, search) {
                (Some(own), Some(text)) => app
                    .db
                    .search_threads(Some(sub), text)
                    .await?
                    .into_iter()
                    .find(|t| t.id == own.id),
                (own, _) => own,
            };
            return Ok(found
                .into_iter()
                .map(|t| ThreadView::of(app, principal, t))
                .collect());
        }
    };
    let threads = match search {
        Some(text) => app.db.search_threads(owner, text).await?,
        None => app.db.threads(owner).await?,
    };
    Ok(threads
        .into_iter()
        .map(|t| ThreadView::of(app, principal, t))
        .collect())
}

/// One thread the caller may read.
pub async fn get(app: &App, principal: &Principal, thread_id: &str) -> Result<ThreadView> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    Ok(ThreadView::of(app, principal, thread))
}

/// A title as it is kept: trimmed, `None` when empty, refused when too long.
fn usable_title(title: Option<String>) -> Result<Option<String>> {
    let title = title.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    if title
        .as_ref()
        .is_some_and(|t| t.chars().count() > MAX_TITLE_CHARS)
    {
        return Err(Error::invalid_request(format!(
            "'title' is longer than {MAX_TITLE_CHARS} characters"
        )));
    }
    Ok(title)
}

/// Renames a thread (its owner, or service_role); an empty or blank title makes it untitled.
pub async fn rename(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    title: Option<String>,
) -> Result<ThreadView> {
    let mut thread = access::thread(app, principal, thread_id, Action::Manage).await?;
    let title = usable_title(title)?;
    if !app.db.rename_thread(&thread.id, title.as_deref()).await? {
        return Err(Error::not_found(format!("no thread '{thread_id}'")));
    }
    thread.title = title;
    list_changed(app, &thread.owner).await;
    Ok(ThreadView::of(app, principal, thread))
}

/// Deletes a thread (its owner, or service_role) with everything in it: its events, uploads,
/// published files and their revisions, connectors, the S3 keys acting in it, and its sandbox.
/// Tokens of its agent then reach nothing. The stored bytes are removed by the sweep, which
/// reclaims blobs no record names.
pub async fn delete(app: &App, principal: &Principal, thread_id: &str) -> Result<()> {
    let thread = access::thread(app, principal, thread_id, Action::Manage).await?;
    if !app.db.delete_thread(&thread.id).await? {
        return Err(Error::not_found(format!("no thread '{thread_id}'")));
    }
    // The records went first, so the thread is gone for every door at once; a sandbox folder
    // that cannot be removed now is logged, and reaches nobody (no thread names it).
    if let Err(e) = app.sandboxes.remove(&thread.id).await {
        tracing::warn!(error = %e, thread = %thread.id, "a deleted thread's sandbox folder was not removed");
    }
    list_changed(app, &thread.owner).await;
    Ok(())
}

/// Tells `owner`'s followers of the thread list ([`crate::threads::list`]), on every node,
/// that it changed. A failure to tell other nodes is logged, not answered: the change itself
/// is made, and their followers see it at their next change or reconnect.
async fn list_changed(app: &App, owner: &str) {
    app.events.poke(&ferry_store::threads::list_key(owner));
    if let Err(e) = app.db.notify_thread_list(owner).await {
        tracing::warn!(error = %e, "other nodes were not told of a thread list's change");
    }
}
