//! A thread's sandbox (docs/reference/threads-and-sandbox.md): list, read and write files by
//! their `/sandbox/…` paths, through the jailed handle of `ferry_store::sandbox`. Everyone
//! who may read the thread may read its sandbox; only its agent (or service_role) writes.

use bytes::Bytes;
use ferry_core::SandboxPath;
use ferry_core::change::{ChangeKind, FileChange};
use ferry_core::conditions::quoted_etag;
use ferry_core::door::Door;
use ferry_core::write::WriteCondition;
pub use ferry_store::sandbox::{Listing, OpenedFile, SandboxEntry, Unaddressable};
use futures::Stream;

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::body::Incoming;
use crate::error::{Error, Result, in_sandbox};
use crate::events::Role;
use crate::events::thread_event;
use ferry_core::thread_event::{EventKind, ThreadEvent};

/// Lists `dir` (the sandbox's root when `None`): its direct children, or every file below it;
/// and apart, the names found there that no door can address (made by a command, say), for
/// listings to show escaped and marked.
pub async fn list(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    dir: Option<&SandboxPath>,
    recursive: bool,
) -> Result<Listing> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    let sandbox = app.sandboxes.open(&thread.id).await?;
    sandbox
        .list(dir.map(SandboxPath::relative), recursive)
        .await
        .map_err(in_sandbox)
}

/// Opens a sandbox file for reading.
pub async fn open(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    path: &SandboxPath,
) -> Result<OpenedFile> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    let sandbox = app.sandboxes.open(&thread.id).await?;
    sandbox.open(path.relative()).await.map_err(in_sandbox)
}

/// Writes a sandbox file atomically (readers see the old file or the new, never a part),
/// with the spaces' conditions, content type rule and limits (see [`crate::files::spaces::write`]);
/// `/sandbox/skills/` is refused by the sandbox itself. Answers whether the file was
/// created, and its new state; the thread's channel is told (`file_written`).
#[allow(clippy::too_many_arguments)]
pub async fn write<S, E>(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    path: &SandboxPath,
    content_type: &str,
    condition: &WriteCondition,
    body: Incoming<S>,
    door: Door,
) -> Result<(bool, SandboxEntry)>
where
    S: Stream<Item = std::result::Result<Bytes, E>>,
    E: std::fmt::Display,
{
    let thread = access::thread(app, principal, thread_id, Action::ActAsAgent).await?;
    let content_type = ferry_core::content_type::check(content_type)?;
    if matches!(condition, WriteCondition::IfMatchAndCreateOnly(_)) {
        return Err(Error::invalid_request(
            "send either If-None-Match: * or If-Match, not both",
        ));
    }
    let body = body.admit(app.limits.sandbox_max_bytes)?;
    let sandbox = app.sandboxes.open(&thread.id).await?;
    let (created, entry) = sandbox
        .write(
            path.relative(),
            body,
            app.limits.sandbox_max_bytes,
            condition,
            content_type,
        )
        .await
        .map_err(in_sandbox)?;
    let change = Changed {
        kind: ChangeKind::FileWritten,
        path: path.display(),
        destination: None,
        etag: Some(entry.etag.clone()),
        size: Some(entry.size),
    };
    announce(app, principal, &thread.id, door, vec![change]).await;
    Ok((created, entry))
}

/// A change to a sandbox file made through ferry, as the thread's channel shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Changed {
    pub kind: ChangeKind,
    /// `/sandbox/…`
    pub path: String,
    /// Where a moved file went.
    pub destination: Option<String>,
    /// The ETag value after a write or move, before a removal (when known).
    pub etag: Option<String>,
    pub size: Option<u64>,
}

/// Stores each change as an event of the thread and wakes its subscribers. The file system
/// has no transaction to share with the database, so the event is stored right after the
/// change: should that fail, the change stands (and is logged), only its event is missing.
pub(crate) async fn announce(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    door: Door,
    changes: Vec<Changed>,
) {
    for change in changes {
        let (agent, thread) = (principal.agent_id().to_owned(), thread_id.to_owned());
        let kind = change.kind;
        let stored = app
            .db
            .append_event(thread_id, move |id, at| {
                let what = FileChange {
                    path: change.path,
                    destination: change.destination,
                    etag: change.etag.as_deref().map(quoted_etag),
                    size: change.size,
                    door,
                };
                thread_event::rendered(&ThreadEvent {
                    head: thread_event::head(id, at, Role::Agent(&agent), &thread, None),
                    kind: EventKind::sandbox(kind, what),
                })
            })
            .await;
        match stored {
            Ok(event) => app.announce(event),
            Err(e) => {
                tracing::warn!(error = %e, thread = thread_id, "a sandbox change could not be announced")
            }
        }
    }
}

/// Removes a sandbox file (the thread's agent, or service_role), if its ETag is one of
/// `if_match` when given; `/sandbox/skills/` is refused by the sandbox itself.
pub async fn delete(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    path: &SandboxPath,
    if_match: Option<&[String]>,
    door: Door,
) -> Result<()> {
    let sandbox = writable(app, principal, thread_id).await?;
    sandbox
        .delete(path.relative(), if_match)
        .await
        .map_err(|e| match e {
            ferry_store::Error::PreconditionFailed => Error::PreconditionFailed(format!(
                "the current ETag of '{path}' does not match If-Match"
            )),
            other => in_sandbox(other),
        })?;
    let change = Changed {
        kind: ChangeKind::FileDeleted,
        path: path.display(),
        destination: None,
        etag: None,
        size: None,
    };
    announce(app, principal, thread_id, door, vec![change]).await;
    Ok(())
}

/// The thread's sandbox, opened for its agent (or service_role) to change.
pub(crate) async fn writable(
    app: &App,
    principal: &Principal,
    thread_id: &str,
) -> Result<ferry_store::sandbox::Sandbox> {
    let thread = access::thread(app, principal, thread_id, Action::ActAsAgent).await?;
    Ok(app.sandboxes.open(&thread.id).await?)
}

/// The thread's sandbox, opened for anyone who may read the thread.
pub(crate) async fn readable(
    app: &App,
    principal: &Principal,
    thread_id: &str,
) -> Result<ferry_store::sandbox::Sandbox> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    Ok(app.sandboxes.open(&thread.id).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, agent, body, user};
    use ferry_core::ValidPath;

    fn at(path: &str) -> SandboxPath {
        SandboxPath::parse(path).unwrap()
    }

    #[tokio::test]
    async fn only_the_threads_agent_writes_and_everyone_of_the_thread_reads() {
        let (app, _dir) = testing::app().await;
        let alice = user("alice");
        let (thread_id, its_agent) = testing::thread_of(&app, "alice").await;
        let path = at("/sandbox/outputs/r.md");
        let (created, entry) = write(
            &app,
            &its_agent,
            &thread_id,
            &path,
            "text/markdown",
            &WriteCondition::None,
            body(b"# r"),
            Door::Http,
        )
        .await
        .unwrap();
        assert!(created && entry.size == 3);
        // The owner reads but does not write; another user does not even see the thread.
        assert!(open(&app, &alice, &thread_id, &path).await.is_ok());
        let by_owner = write(
            &app,
            &alice,
            &thread_id,
            &path,
            "text/plain",
            &WriteCondition::None,
            body(b"x"),
            Door::Http,
        )
        .await;
        assert!(matches!(by_owner, Err(Error::Forbidden(_))), "{by_owner:?}");
        let by_stranger = open(&app, &user("bob"), &thread_id, &path).await;
        assert!(matches!(by_stranger, Err(Error::NotFound(_))));
        // The agent of another thread is a stranger too.
        let other = agent("alice", "another-thread");
        let refused = write(
            &app,
            &other,
            &thread_id,
            &path,
            "text/plain",
            &WriteCondition::None,
            body(b"x"),
            Door::Http,
        )
        .await;
        assert!(matches!(refused, Err(Error::NotFound(_))), "{refused:?}");
    }

    #[tokio::test]
    async fn skills_are_read_only_and_the_spaces_rules_hold() {
        let (app, _dir) = testing::app().await;
        let alice = user("alice");
        let (thread_id, its_agent) = testing::thread_of(&app, "alice").await;
        let skill = write(
            &app,
            &its_agent,
            &thread_id,
            &at("/sandbox/skills/x.md"),
            "text/plain",
            &WriteCondition::None,
            body(b"x"),
            Door::Http,
        )
        .await;
        assert!(matches!(skill, Err(Error::Forbidden(_))), "{skill:?}");
        let typed = write(
            &app,
            &its_agent,
            &thread_id,
            &at("/sandbox/outputs/t.txt"),
            "foo",
            &WriteCondition::None,
            body(b"x"),
            Door::Http,
        )
        .await;
        assert!(
            matches!(typed, Err(Error::UnsupportedMediaType(_))),
            "{typed:?}"
        );
        let both = WriteCondition::IfMatchAndCreateOnly(vec!["*".into()]);
        let refused = write(
            &app,
            &its_agent,
            &thread_id,
            &at("/sandbox/outputs/t.txt"),
            "text/plain",
            &both,
            body(b"x"),
            Door::Http,
        )
        .await;
        assert!(
            matches!(refused, Err(Error::InvalidRequest(_))),
            "{refused:?}"
        );
        // Relative paths live under the workspace.
        let relative = SandboxPath::from_relative(ValidPath::parse("workspace/n.txt").unwrap());
        write(
            &app,
            &its_agent,
            &thread_id,
            &relative,
            "text/plain",
            &WriteCondition::None,
            body(b"n"),
            Door::Http,
        )
        .await
        .unwrap();
        let listed = list(
            &app,
            &alice,
            &thread_id,
            Some(&at("/sandbox/workspace")),
            false,
        )
        .await
        .unwrap()
        .entries;
        assert_eq!(listed.len(), 1, "{listed:?}");
    }
}
