//! Messages in a thread's event channel (docs/reference/events.md, messages): the owner
//! speaks as `user` (with uploads attached), the agent as `agent`, and say mode's replies are
//! messages too ([`crate::threads::say`]). Every message event is built here.

use ferry_store::events::{Rendered, StoredEvent};

use crate::access::principal::{DEFAULT_AGENT_ID, Principal};
use crate::access::{self, Action};
use crate::app::App;
use crate::error::{Error, Result};
use crate::events::thread_event;
use crate::events::views;
use crate::events::{MAX_EVENT_BYTES, Role, Speaker};
use ferry_core::file_views::{AttachmentView, UploadView};
use ferry_core::thread_event::{EventKind, ThreadEvent};

/// A message to post.
#[derive(Debug, Clone, Default)]
pub struct NewMessage<'a> {
    pub text: &'a str,
    /// Uploads of this thread to attach (user messages only).
    pub upload_ids: &'a [String],
    /// service_role only: speak as `user` or `agent` (default `agent`).
    pub role: Option<&'a str>,
}

/// Posts a message and wakes the thread's subscribers; answers the stored event.
pub async fn post(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    message: NewMessage<'_>,
) -> Result<StoredEvent> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    let role = match (principal, message.role) {
        (Principal::User { .. }, None | Some("user")) => Role::User,
        (Principal::Agent { agent_id, .. }, None | Some("agent")) => Role::Agent(agent_id),
        (Principal::Service { .. }, None | Some("agent")) => Role::Agent(DEFAULT_AGENT_ID),
        (Principal::Service { .. }, Some("user")) => Role::User,
        (Principal::Service { .. }, Some(other)) => {
            return Err(Error::invalid_request(format!(
                "'role' must be user or agent, not '{other}'"
            )));
        }
        (_, Some(_)) => {
            return Err(Error::forbidden(
                "only service_role may choose the role of a message",
            ));
        }
    };
    if message.text.trim().is_empty() && message.upload_ids.is_empty() {
        return Err(Error::invalid_request(
            "a message needs 'text' (or, from the user, 'uploadIds')",
        ));
    }
    let mut uploads = Vec::new();
    if !message.upload_ids.is_empty() {
        if role != Role::User {
            return Err(Error::invalid_request(
                "only user messages carry uploads; agents publish or send files",
            ));
        }
        for upload_id in message.upload_ids {
            let upload = app.db.upload(&thread.id, upload_id).await?.ok_or_else(|| {
                Error::invalid_request(format!("no upload '{upload_id}' in this thread"))
            })?;
            uploads.push(views::upload(&upload));
        }
    }
    let content = Some(message.text);
    if !fits_in_an_event(role, &thread.id, content, &uploads, &[]) {
        return Err(Error::TooLarge(format!(
            "the message is longer than an event may be ({} KiB); send long text as a file",
            MAX_EVENT_BYTES / 1024
        )));
    }
    let event = append(app, &thread.id, role, content, uploads, Vec::new()).await?;
    app.announce(event.clone());
    Ok(event)
}

/// Stores a `message` event (see [`message_event`]) and answers it; waking subscribers and
/// delivering to connectors is the caller's.
pub(crate) async fn append(
    app: &App,
    thread_id: &str,
    role: Role<'_>,
    content: Option<&str>,
    uploads: Vec<UploadView>,
    files: Vec<AttachmentView>,
) -> Result<StoredEvent> {
    // The event is rendered where it is stored, once its id is known: it owns what it shows.
    let (speaker, owned_thread, content) = (
        Speaker::from(role),
        thread_id.to_owned(),
        content.map(str::to_owned),
    );
    Ok(app
        .db
        .append_event(thread_id, move |id, at| {
            message_event(
                id,
                at,
                speaker.role(),
                &owned_thread,
                content.as_deref(),
                &uploads,
                &files,
            )
        })
        .await?)
}

/// Whether a message fits the event size limit. An event's size depends on its id and time
/// only through their length, which the largest id bounds: this is checked before anything
/// is stored.
pub(crate) fn fits_in_an_event(
    role: Role<'_>,
    thread_id: &str,
    content: Option<&str>,
    uploads: &[UploadView],
    files: &[AttachmentView],
) -> bool {
    let probe = message_event(
        i64::MAX,
        ferry_core::Timestamp(0),
        role,
        thread_id,
        content,
        uploads,
        files,
    );
    probe.json.len() <= MAX_EVENT_BYTES
}

/// A `message` event's JSON, with its uploads (user messages) or files (say mode). Uploads
/// whose previews would pass the event size limit travel without them (the thread's upload
/// list still has them).
pub(crate) fn message_event(
    id: i64,
    at: ferry_core::Timestamp,
    role: Role<'_>,
    thread_id: &str,
    content: Option<&str>,
    uploads: &[UploadView],
    files: &[AttachmentView],
) -> Rendered {
    let render = |uploads: &[UploadView]| {
        thread_event::rendered(&ThreadEvent {
            head: thread_event::head(id, at, role, thread_id, content),
            kind: EventKind::Message {
                uploads: uploads.to_vec(),
                files: files.to_vec(),
            },
        })
    };
    let event = render(uploads);
    if event.json.len() <= MAX_EVENT_BYTES || uploads.is_empty() {
        return event;
    }
    let slim: Vec<UploadView> = uploads.iter().map(UploadView::without_preview).collect();
    render(&slim)
}
