//! send_file (docs/reference/send-file.md): a small text file straight over the thread's
//! event channel, as a `file_send` event.

use ferry_core::SandboxPath;
use ferry_core::send_file::{
    Encoding, MAX_SEND_FILE_BYTES, SendFileError, base64_encode, check_size, check_type,
    encode_content, sent_message,
};
use serde::Serialize;
use utoipa::ToSchema;

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::error::Result;
use crate::events::thread_event;
use crate::events::{MAX_EVENT_BYTES, Role};
use ferry_core::thread_event::{EventKind, FileContents, ThreadEvent};

/// What the agent is told once the file is sent.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendFileResult {
    pub filename: String,
    pub mime_type: String,
    pub size_bytes: u64,
    /// `utf-8` or `base64`.
    pub encoding: String,
    pub message: String,
}

/// Sends the sandbox file at `file_path` (the thread's agent, or service_role). The checks
/// run in the documented order: the file must exist, then be a text type, then be small
/// enough.
pub async fn send(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    file_path: &str,
) -> Result<SendFileResult> {
    let thread = access::thread(app, principal, thread_id, Action::ActAsAgent).await?;
    let path = SandboxPath::parse(file_path)?;
    let sandbox = app.sandboxes.open(&thread.id).await?;
    let opened = sandbox.open(path.relative()).await.map_err(|e| match e {
        ferry_store::Error::NotFound => SendFileError::NotFound {
            path: file_path.to_owned(),
        }
        .into(),
        other => crate::error::Error::from(other),
    })?;
    let filename = path.file_name().to_owned();
    let mime = check_type(&filename)?;
    check_size(opened.size)?;
    // The file may have grown since it was opened: read no more than the limit allows.
    let Some(bytes) = opened.read_to_end(MAX_SEND_FILE_BYTES).await? else {
        return Err(SendFileError::TooLarge {
            size: MAX_SEND_FILE_BYTES + 1,
        }
        .into());
    };
    let size = bytes.len() as u64;
    let (mut content, mut encoding) = encode_content(&bytes);
    let (agent, thread_id, sent) = (
        principal.agent_id().to_owned(),
        thread.id.clone(),
        filename.clone(),
    );
    let render = move |id: i64, at: ferry_core::Timestamp, content: &str, encoding: Encoding| {
        thread_event::rendered(&ThreadEvent {
            head: thread_event::head(
                id,
                at,
                Role::Agent(&agent),
                &thread_id,
                Some(&format!("Sent file: {sent}")),
            ),
            kind: EventKind::FileSend {
                file_contents: FileContents {
                    filename: sent.clone(),
                    content: content.to_owned(),
                    encoding,
                    mime_type: mime.to_owned(),
                    size_bytes: size,
                },
            },
        })
    };
    // Text full of characters JSON must escape (control characters become six bytes each) can
    // pass the event limit; base64 of 20 KB always fits, so such text travels as base64.
    let probe = render(i64::MAX, ferry_core::Timestamp(0), &content, encoding);
    if probe.json.len() > MAX_EVENT_BYTES {
        content = base64_encode(&bytes);
        encoding = Encoding::Base64;
    }
    let event = app
        .db
        .append_event(&thread.id, move |id, at| render(id, at, &content, encoding))
        .await?;
    app.announce(event);
    Ok(SendFileResult {
        message: sent_message(&filename, size, mime),
        filename,
        mime_type: mime.to_owned(),
        size_bytes: size,
        encoding: encoding.as_str().to_owned(),
    })
}
