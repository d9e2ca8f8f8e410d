//! Say mode (docs/reference/say.md): `<say>` blocks become messages, `<file>` tags attach
//! files, and each message goes to every connector of the thread. Text outside `<say>` is
//! never sent, and nothing is attached unless a tag names it.

use ferry_core::SandboxPath;
use ferry_core::tags::{FileTag, parse_say};
pub use ferry_store::say::Attachment;
use ferry_store::threads::Thread;
use serde::Serialize;
use utoipa::ToSchema;

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::error::{Error, Result, describe_bytes};
use crate::events::connectors;
use crate::events::views;
use crate::events::{MAX_EVENT_BYTES, Role};
use crate::threads::messages::fits_in_an_event;
use ferry_core::file_views::AttachmentView;

/// The warning of a reply that sent nothing.
pub const NOTHING_SENT: &str = "nothing was sent: the text has no <say>…</say> block and no <file> \
     tag that could be attached; text outside <say> is never sent to the user";

/// What a say-mode reply became.
#[derive(Debug, Serialize, ToSchema)]
pub struct SayResult {
    /// The ids of the message events, in order.
    pub messages: Vec<i64>,
    pub files: Vec<AttachmentView>,
    /// Files that were skipped, and why.
    pub warnings: Vec<String>,
}

/// Delivers a say-mode reply (the thread's agent, or service_role). A block too long for an
/// event fails the whole reply before anything is stored; a `<file>` tag that cannot be
/// attached is skipped with a warning; the files go with the last message.
pub async fn deliver(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    text: &str,
) -> Result<SayResult> {
    let thread = access::thread(app, principal, thread_id, Action::ActAsAgent).await?;
    let role = Role::Agent(principal.agent_id());
    let reply = parse_say(text);
    for block in &reply.says {
        if !fits_in_an_event(role, &thread.id, Some(block), &[], &[]) {
            return Err(Error::TooLarge(format!(
                "a <say> block is longer than an event may be ({} KiB); publish long text as a file",
                MAX_EVENT_BYTES / 1024
            )));
        }
    }

    let mut files = Vec::new();
    let mut warnings = Vec::new();
    for tag in &reply.files {
        match attach(app, &thread, tag).await {
            Ok(attachment) => files.push(views::attachment(&attachment)),
            Err(why) => {
                tracing::warn!(thread = %thread.id, path = %tag.path, %why, "say: skipped a <file> tag");
                warnings.push(format!("{}: {why}", tag.path));
            }
        }
    }

    let mut contents: Vec<Option<&str>> = reply.says.iter().map(|s| Some(s.as_str())).collect();
    if contents.is_empty() && !files.is_empty() {
        contents.push(None);
    }
    if contents.is_empty() {
        // Nothing to send: say so, or the agent believes the user heard it.
        warnings.push(NOTHING_SENT.to_owned());
    }
    let connectors = connectors::of_thread(app, &thread.id).await?;
    let mut messages = Vec::new();
    let last = contents.len().saturating_sub(1);
    for (i, content) in contents.into_iter().enumerate() {
        let attached = if i == last { files.clone() } else { Vec::new() };
        let event =
            crate::threads::messages::append(app, &thread.id, role, content, Vec::new(), attached)
                .await?;
        for connector in &connectors {
            connector.deliver(app, &thread.id, &event).await?;
        }
        messages.push(event.id);
    }
    Ok(SayResult {
        messages,
        files,
        warnings,
    })
}

/// Why a `<file>` tag was skipped, in words the agent can act on. Failures that are the
/// server's own are logged in full and reported only as such: no database or file system
/// error text reaches the caller.
#[derive(Debug, thiserror::Error)]
enum Skipped {
    #[error("{0}")]
    Path(#[from] ferry_core::path::PathError),
    #[error("{0}")]
    Sandbox(String),
    #[error("the file is larger than the publish limit of {}", describe_bytes(*.0))]
    TooLarge(u64),
    #[error("the server's disk is full; try again later")]
    DiskFull,
    #[error(
        "the file could not be attached because of an internal error; the server log has the details"
    )]
    Internal,
}

impl Skipped {
    /// An internal failure: logged here, answered generically.
    fn internal(cause: impl std::fmt::Display) -> Skipped {
        tracing::error!(%cause, "say: a <file> tag failed internally");
        Skipped::Internal
    }
}

impl From<ferry_store::Error> for Skipped {
    fn from(e: ferry_store::Error) -> Self {
        use ferry_store::Error as Store;
        match e {
            e if e.is_disk_full() => Skipped::DiskFull,
            Store::TooLarge { limit } => Skipped::TooLarge(limit),
            Store::NotFound => Skipped::Sandbox(
                "no such file in the sandbox, and nothing published under that path".into(),
            ),
            other @ (Store::Config(_)
            | Store::Database(_)
            | Store::Migrate(_)
            | Store::Io(_)
            | Store::Body(_)) => Skipped::internal(other),
            // The other refusals describe the caller's path and are safe to repeat.
            other => Skipped::Sandbox(other.to_string()),
        }
    }
}

/// Finds the file a `<file>` tag names: first among what the thread already published (by
/// sandbox or storage path), then in the sandbox, through the jail. The bytes are kept
/// permanently as the attachment's own copy.
async fn attach(app: &App, thread: &Thread, tag: &FileTag) -> Result<Attachment, Skipped> {
    let mut attachment =
        if let Some(revision) = app.db.published_by_path(&thread.id, &tag.path).await? {
            Attachment {
                id: uuid::Uuid::now_v7().simple().to_string(),
                thread_id: thread.id.clone(),
                filename: revision.filename,
                mime_type: revision.mime_type,
                size: revision.file_size,
                sha256: revision.sha256,
                send_as: String::new(),
                blob_key: revision.blob_key,
                published: Some((revision.file_id, revision.revision)),
                created_at: ferry_core::Timestamp::now(),
            }
        } else {
            let path = SandboxPath::parse(&tag.path)?;
            let sandbox = app.sandboxes.open(&thread.id).await?;
            let opened = sandbox.open(path.relative()).await?;
            let limit = app.limits.publish_max_bytes;
            if opened.size > limit {
                return Err(Skipped::TooLarge(limit));
            }
            let read = opened.stream(None).await.map_err(ferry_store::Error::Io)?;
            let blob = app.blobs.write(read.stream, limit).await?;
            Attachment {
                id: uuid::Uuid::now_v7().simple().to_string(),
                thread_id: thread.id.clone(),
                filename: path.file_name().to_owned(),
                mime_type: ferry_core::mime::mime_for_name(path.file_name()),
                size: blob.size,
                sha256: blob.sha256,
                send_as: String::new(),
                blob_key: blob.key,
                published: None,
                created_at: ferry_core::Timestamp::now(),
            }
        };
    attachment.send_as = tag.mode.resolve(&attachment.mime_type).as_str().to_owned();
    app.db.insert_attachment(&attachment).await?;
    Ok(attachment)
}

/// A message attachment of a thread the caller may read.
pub async fn attachment(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    attachment_id: &str,
) -> Result<Attachment> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    app.db
        .attachment(attachment_id, Some(&thread.id))
        .await?
        .ok_or_else(|| Error::not_found(format!("no attachment '{attachment_id}' in this thread")))
}

/// An attachment by id alone, for a link whose signature the door has already checked.
pub async fn signed_attachment(app: &App, attachment_id: &str) -> Result<Attachment> {
    app.db
        .attachment(attachment_id, None)
        .await?
        .ok_or_else(|| Error::not_found(format!("no attachment '{attachment_id}'")))
}

#[cfg(test)]
mod tests;
