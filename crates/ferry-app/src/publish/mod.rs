//! Agent → user: publish with revisions, and the published files' records and previews
//! (docs/reference/publish.md).

use ferry_core::SandboxPath;
use ferry_store::events::Rendered;
use ferry_store::published::NewRevision;
pub use ferry_store::published::Revision;
use tracing::Instrument as _;

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::error::{Error, Result, describe_bytes};
use crate::events::Role;
use crate::events::thread_event;
use crate::events::views;
use ferry_core::thread_event::{
    EventError, EventKind, PublishAttempt, PublishFailed, PublishSucceeded, ThreadEvent,
};

/// The longest display name, in characters.
pub const MAX_DISPLAY_NAME_CHARS: usize = 200;

/// What to publish.
#[derive(Debug, Clone)]
pub struct Publication<'a> {
    /// The file in the sandbox, as the agent wrote it (`/sandbox/outputs/report.docx`).
    pub file_path: &'a str,
    /// The name the user sees; the same name again publishes a new revision.
    pub display_name: &'a str,
    pub description: String,
}

/// Publishes a sandbox file to the user (the thread's agent, or service_role): the bytes are
/// copied now, so later changes to the sandbox file do not reach the published copy.
///
/// A publish is seen while it happens. Once the request is well-formed (a display name, a
/// sandbox path) it is announced with a `file_publishing` event; it ends with
/// `file_published` (recorded in the same transaction as the revision) or
/// `file_publish_failed` carrying the error's envelope, all three sharing one `publishId`.
/// The work runs on its own task, so a caller that goes away mid-publish cannot leave the
/// user looking at a card that never finishes.
pub async fn publish(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    publication: Publication<'_>,
) -> Result<Revision> {
    let thread = access::thread(app, principal, thread_id, Action::ActAsAgent).await?;
    let display_name = publication.display_name.trim().to_owned();
    if display_name.is_empty() || display_name.chars().count() > MAX_DISPLAY_NAME_CHARS {
        return Err(Error::invalid_request(format!(
            "'display_name' must be 1 to {MAX_DISPLAY_NAME_CHARS} characters"
        )));
    }
    let path = SandboxPath::parse(publication.file_path)?;
    let attempt = Attempt {
        named: PublishAttempt {
            publish_id: uuid::Uuid::now_v7().simple().to_string(),
            display_name,
            file_path: publication.file_path.to_owned(),
        },
        thread_id: thread.id,
        agent: principal.agent_id().to_owned(),
    };
    let announced = attempt.clone();
    let started = app
        .db
        .append_event(&attempt.thread_id, move |id, at| {
            announced.event(
                id,
                at,
                &format!("Publishing {}…", announced.named.display_name),
                EventKind::FilePublishing(announced.named.clone()),
            )
        })
        .await?;
    app.announce(started);

    let (app, description) = (app.clone(), publication.description);
    // In the request's span, so its log lines keep the request id.
    let work = tokio::spawn(
        async move {
            let outcome = store_revision(&app, &attempt, path, description).await;
            if let Err(error) = &outcome {
                attempt.report_failure(&app, error).await;
            }
            outcome
        }
        .instrument(tracing::Span::current()),
    );
    work.await.map_err(Error::internal)?
}

/// One publish, from its `file_publishing` event to its end.
#[derive(Debug, Clone)]
struct Attempt {
    /// What every event of this publish names: its id, the display name and the path asked
    /// for.
    named: PublishAttempt,
    thread_id: String,
    agent: String,
}

impl Attempt {
    /// An event of this publish, spoken by its agent.
    fn event(
        &self,
        id: i64,
        at: ferry_core::Timestamp,
        content: &str,
        kind: EventKind,
    ) -> Rendered {
        thread_event::rendered(&ThreadEvent {
            head: thread_event::head(
                id,
                at,
                Role::Agent(&self.agent),
                &self.thread_id,
                Some(content),
            ),
            kind,
        })
    }

    /// Records `file_publish_failed` with the error's envelope. A failure to record it is
    /// logged: the publish's own error is what the caller must hear.
    async fn report_failure(&self, app: &App, error: &Error) {
        let kind = EventKind::FilePublishFailed(PublishFailed {
            attempt: self.named.clone(),
            error: EventError {
                code: error.code(),
                message: error.to_string(),
            },
        });
        let content = format!("Could not publish {}: {error}", self.named.display_name);
        let attempt = self.clone();
        match app
            .db
            .append_event(&self.thread_id, move |id, at| {
                attempt.event(id, at, &content, kind)
            })
            .await
        {
            Ok(event) => app.announce(event),
            Err(e) => {
                tracing::error!(error = %e, publish = %self.named.publish_id, "could not record a failed publish")
            }
        }
    }
}

/// Copies the sandbox file into a permanent blob and records the revision with its
/// `file_published` event.
async fn store_revision(
    app: &App,
    attempt: &Attempt,
    path: SandboxPath,
    description: String,
) -> Result<Revision> {
    let sandbox = app.sandboxes.open(&attempt.thread_id).await?;
    let opened = sandbox.open(path.relative()).await.map_err(|e| match e {
        ferry_store::Error::NotFound => {
            Error::not_found(format!("File not found: {}", attempt.named.file_path))
        }
        other => other.into(),
    })?;
    let limit = app.limits.publish_max_bytes;
    if opened.size > limit {
        return Err(Error::TooLarge(format!(
            "the file is {}, over the publish limit of {}",
            describe_bytes(opened.size),
            describe_bytes(limit)
        )));
    }
    // Unchanged bytes reuse the blob an earlier revision already stored.
    let spooled = app
        .blobs
        .spool(opened.stream(None).await?.stream, limit)
        .await?;
    let (blob_key, sha256, size) = match app
        .db
        .published_blob_with_sha(&attempt.thread_id, spooled.sha256())
        .await?
    {
        Some(key) => (key, spooled.sha256().to_owned(), spooled.size()),
        None => {
            let blob = app.blobs.commit(spooled).await?;
            (blob.key, blob.sha256, blob.size)
        }
    };
    let filename = path.file_name().to_owned();
    let new = NewRevision {
        thread_id: attempt.thread_id.clone(),
        display_name: attempt.named.display_name.clone(),
        description,
        file_type: ferry_core::send_file::extension_of(&filename).unwrap_or_default(),
        mime_type: ferry_core::mime::mime_for_name(&filename),
        file_size: size,
        sha256,
        storage_path: ferry_core::storage_path::published(&attempt.thread_id, &filename),
        sandbox_path: path.display(),
        blob_key,
        preview_kind: crate::events::views::preview_kind(&filename),
        filename,
    };
    let (revision, event) = app
        .db
        .publish(new, |revision, id, at| {
            let kind = EventKind::FilePublished(PublishSucceeded {
                attempt: attempt.named.clone(),
                file: views::published(revision),
            });
            attempt.event(
                id,
                at,
                &format!("Published {}", revision.display_name),
                kind,
            )
        })
        .await?;
    app.announce(event);
    Ok(revision)
}

/// The thread's published files: the latest revision of each, or with `all` every revision.
pub async fn list(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    all: bool,
) -> Result<Vec<Revision>> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    Ok(app.db.published(&thread.id, all).await?)
}

/// One revision of a published file (the latest when `revision` is `None`).
pub async fn revision(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    file_id: &str,
    revision: Option<u32>,
) -> Result<Revision> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    app.db
        .published_revision(&thread.id, file_id, revision)
        .await?
        .ok_or_else(|| match revision {
            Some(n) => Error::not_found(format!("published file '{file_id}' has no revision {n}")),
            None => Error::not_found(format!("no published file '{file_id}' in this thread")),
        })
}

/// The newest revision stored under a storage path (`deepagent-outputs/{thread}/{filename}`),
/// for whoever may read that thread.
pub async fn by_storage_path(
    app: &App,
    principal: &Principal,
    storage_path: &str,
) -> Result<Revision> {
    let thread_id = ferry_core::storage_path::published_thread(storage_path).ok_or_else(|| {
        Error::InvalidPath(format!(
            "storage_path must be {}/{{thread}}/{{filename}}",
            ferry_core::storage_path::PUBLISHED_BUCKET
        ))
    })?;
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    app.db
        .published_by_storage_path(storage_path)
        .await?
        .filter(|r| r.thread_id == thread.id)
        .ok_or_else(|| Error::not_found(format!("File not found: {storage_path}")))
}

#[cfg(test)]
mod tests;
