//! A thread's sandbox (docs/reference/threads-and-sandbox.md): list, read and write files by
//! their `/sandbox/…` paths, through the jailed handle of `ferry_store::sandbox`. Everyone
//! who may read the thread may read its sandbox; only its agent (or service_role) writes.

use bytes::Bytes;
use ferry_core::SandboxPath;
use ferry_store::sandbox::{OpenedFile, SandboxEntry};
use ferry_store::spaces::WriteCondition;
use futures::Stream;

use crate::App;
use crate::access::{self, Action};
use crate::body::Incoming;
use crate::error::{Error, Result, in_sandbox};
use crate::principal::Principal;

/// Lists `dir` (the sandbox's root when `None`): its direct children, or every file below it.
pub async fn list(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    dir: Option<&SandboxPath>,
    recursive: bool,
) -> Result<Vec<SandboxEntry>> {
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
/// with the spaces' conditions, content type rule and limits (see [`crate::spaces::write`]);
/// `/sandbox/skills/` is refused by the sandbox itself. Answers whether the file was
/// created, and its new state.
pub async fn write<S, E>(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    path: &SandboxPath,
    content_type: &str,
    condition: &WriteCondition,
    body: Incoming<S>,
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
    sandbox
        .write(
            path.relative(),
            body,
            app.limits.sandbox_max_bytes,
            condition,
            content_type,
        )
        .await
        .map_err(in_sandbox)
}

/// Removes a sandbox file (the thread's agent, or service_role); `/sandbox/skills/` is
/// refused by the sandbox itself.
pub async fn delete(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    path: &SandboxPath,
) -> Result<()> {
    let thread = access::thread(app, principal, thread_id, Action::ActAsAgent).await?;
    let sandbox = app.sandboxes.open(&thread.id).await?;
    sandbox.delete(path.relative()).await.map_err(in_sandbox)
}
