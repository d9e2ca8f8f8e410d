//! User → agent uploads (docs/reference/uploads.md).
//!
//! An upload happens in two steps so that a request that fails keeps nothing: every file of
//! the request is first spooled ([`Receiver::spool`]: streamed to a local spool, hashed on
//! the way, refused past the limit), then all are kept ([`Receiver::keep`]): each is previewed
//! by the extraction worker, committed as a permanent blob, copied into
//! `/sandbox/user_uploads/`, and recorded with its `upload` event in one transaction.

use bytes::Bytes;
use ferry_core::ValidPath;
use ferry_core::mime::{is_vision_image, mime_for_name};
use ferry_store::Spooled;
use ferry_store::events::Rendered;
use ferry_store::threads::Thread;
use ferry_store::uploads::{Upload, new_upload_id};
use futures::Stream;

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::body::Incoming;
use crate::error::{Error, Result};
use crate::events::thread_event;
use crate::events::views;
use crate::events::{MAX_EVENT_BYTES, Role};
use ferry_core::file_views::UploadView;
use ferry_core::thread_event::{EventKind, ThreadEvent};

/// The files of one upload request, spooled and waiting to be kept.
#[derive(Debug)]
pub struct Receiver {
    app: App,
    thread: Thread,
    received: Vec<(ValidPath, Spooled)>,
}

/// Starts an upload into a thread: only its owner (or service_role) uploads.
pub async fn receive(app: &App, principal: &Principal, thread_id: &str) -> Result<Receiver> {
    let thread = access::thread(app, principal, thread_id, Action::ActAsUser).await?;
    Ok(Receiver {
        app: app.clone(),
        thread,
        received: Vec::new(),
    })
}

impl Receiver {
    /// The largest file this upload accepts, in bytes.
    pub fn limit(&self) -> u64 {
        self.app.limits.upload_max_bytes
    }

    /// Spools one file named `name` (already checked by the upload name rules), held to the
    /// upload limit and to its declared length (see [`Incoming::admit`]).
    pub async fn spool<S, E>(&mut self, name: ValidPath, body: Incoming<S>) -> Result<()>
    where
        S: Stream<Item = std::result::Result<Bytes, E>>,
        E: std::fmt::Display,
    {
        let limit = self.limit();
        let spooled = self.app.blobs.spool(body.admit(limit)?, limit).await?;
        self.adopt(name, spooled)
    }

    /// Takes one file named `name` that is spooled already (a finished resumable upload),
    /// held to the upload limit as [`Receiver::spool`] holds a body.
    pub fn adopt(&mut self, name: ValidPath, spooled: Spooled) -> Result<()> {
        let limit = self.limit();
        if spooled.size() > limit {
            return Err(Error::too_large(limit));
        }
        self.received.push((name, spooled));
        Ok(())
    }

    /// Whether no file is spooled yet.
    pub fn is_empty(&self) -> bool {
        self.received.is_empty()
    }

    /// Keeps every spooled file, in order.
    pub async fn keep(self) -> Result<Vec<UploadView>> {
        let mut views = Vec::with_capacity(self.received.len());
        for (name, spooled) in self.received {
            views.push(keep(&self.app, &self.thread, name, spooled).await?);
        }
        Ok(views)
    }
}

/// Puts one spooled file where it belongs and records it.
async fn keep(app: &App, thread: &Thread, name: ValidPath, spooled: Spooled) -> Result<UploadView> {
    // Extraction is shared fairly between users, and the wait for it is bounded: past it the
    // upload is kept without a preview (the worker is stopped), so a busy server delays an
    // upload by at most the preview wait.
    let previewed = tokio::time::timeout(
        app.limits.preview_wait,
        app.extractor.preview(
            &thread.owner,
            spooled.path(),
            name.as_str(),
            app.limits.preview_max_chars,
        ),
    )
    .await;
    let (preview, preview_error, width, height) = match previewed {
        Ok(Ok(p)) => (p.text, None, p.width, p.height),
        Ok(Err(e)) => (None, Some(e.to_string()), None, None),
        Err(_) => (
            None,
            Some(format!(
                "the preview was skipped: the document reader was busy for more than {} s; \
                 the file itself is in the sandbox",
                app.limits.preview_wait.as_secs()
            )),
            None,
            None,
        ),
    };
    let blob = app.blobs.commit(spooled).await?;
    let file_type = mime_for_name(name.as_str());
    let sandbox = app.sandboxes.open(&thread.id).await?;
    let sandbox_path = sandbox
        .copy_in_unique("user_uploads", &name, &blob, &app.blobs, &file_type)
        .await?;
    let id = new_upload_id();
    let upload = Upload {
        storage_path: ferry_core::storage_path::upload(
            &thread.owner,
            &thread.id,
            &id,
            name.as_str(),
        ),
        id,
        thread_id: thread.id.clone(),
        owner: thread.owner.clone(),
        file_type,
        kind: if is_vision_image(name.as_str()) {
            "image"
        } else {
            "document"
        }
        .to_owned(),
        file_name: name.into_string(),
        size: blob.size,
        sha256: blob.sha256.clone(),
        sandbox_path: format!("/sandbox/{sandbox_path}"),
        preview,
        preview_error,
        width,
        height,
        blob_key: blob.key.clone(),
        created_at: ferry_core::Timestamp::now(),
    };
    let (upload, event) = app.db.insert_upload(upload, upload_event).await?;
    app.announce(event);
    Ok(views::upload(&upload))
}

/// The `upload` event. When the upload with its preview would pass the event size limit, the
/// preview is left out of the event (the upload itself keeps it).
fn upload_event(upload: &Upload, id: i64, at: ferry_core::Timestamp) -> Rendered {
    let content = format!("Uploaded {}", upload.file_name);
    let render = |view: UploadView| {
        thread_event::rendered(&ThreadEvent {
            head: thread_event::head(id, at, Role::User, &upload.thread_id, Some(&content)),
            kind: EventKind::Upload { upload: view },
        })
    };
    let view = views::upload(upload);
    let slim = view.without_preview();
    let event = render(view);
    if event.json.len() <= MAX_EVENT_BYTES {
        return event;
    }
    render(slim)
}

/// A thread's uploads, oldest first, with their previews.
pub async fn list(app: &App, principal: &Principal, thread_id: &str) -> Result<Vec<UploadView>> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    let uploads = app.db.uploads(&thread.id).await?;
    Ok(uploads.iter().map(views::upload).collect())
}

/// One upload's record (its bytes are the blob it names).
pub async fn get(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    upload_id: &str,
) -> Result<Upload> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    app.db
        .upload(&thread.id, upload_id)
        .await?
        .ok_or_else(|| Error::not_found(format!("no upload '{upload_id}' in this thread")))
}

#[cfg(test)]
mod tests;
