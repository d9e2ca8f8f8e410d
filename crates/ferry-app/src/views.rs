//! What clients are shown of the files of a thread: an upload, a published revision and a
//! message's attachment. Events carry them ([`crate::thread_event`]) and routes answer them, so
//! they live below both, built from the stored records alone.

use ferry_core::attachment::AttachmentNote;
use ferry_store::published::Revision;
use ferry_store::say::Attachment;
use ferry_store::uploads::Upload;
use serde::Serialize;
use utoipa::ToSchema;

/// An upload as clients see it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadView {
    pub id: String,
    pub file_name: String,
    pub file_type: String,
    pub size: u64,
    pub sha256: String,
    /// `image` or `document`.
    pub kind: String,
    /// How the preview panel shows it (`GET …/uploads/{id}/preview`): `image`, `pdf`, `html`
    /// (a rendered document) or `none`.
    pub preview_kind: String,
    pub storage_path: String,
    pub sandbox_path: String,
    pub preview: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    pub attachment_xml: String,
    pub created_at: String,
}

impl From<&Upload> for UploadView {
    fn from(u: &Upload) -> Self {
        let mut view = UploadView {
            id: u.id.clone(),
            file_name: u.file_name.clone(),
            file_type: u.file_type.clone(),
            size: u.size,
            sha256: u.sha256.clone(),
            kind: u.kind.clone(),
            preview_kind: crate::preview::kind_of(&u.file_name),
            storage_path: u.storage_path.clone(),
            sandbox_path: u.sandbox_path.clone(),
            preview: u.preview.clone(),
            preview_error: u.preview_error.clone(),
            width: u.width,
            height: u.height,
            attachment_xml: String::new(),
            created_at: u.created_at.rfc3339(),
        };
        view.attachment_xml = view.note(view.preview.as_deref(), view.preview_error.as_deref());
        view
    }
}

impl UploadView {
    /// The same upload without its preview text, for events that would pass the size limit
    /// with it (the thread's upload list still has the preview).
    pub fn without_preview(&self) -> UploadView {
        UploadView {
            preview: None,
            attachment_xml: self.note(
                None,
                Some("the preview is too long for an event; list the thread's uploads to read it"),
            ),
            ..self.clone()
        }
    }

    /// The hidden attachment note the agent is handed, with this preview (or its error).
    fn note(&self, preview: Option<&str>, preview_error: Option<&str>) -> String {
        AttachmentNote {
            file_name: &self.file_name,
            file_type: &self.file_type,
            storage_path: &self.storage_path,
            sandbox_path: &self.sandbox_path,
            is_image: self.kind == "image",
            preview,
            preview_error,
        }
        .to_xml()
    }
}

/// A published revision as clients see it: the tool result agents were built against (its
/// snake_case names included), plus `id`, `revision` and `preview_kind`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PublishedView {
    pub success: bool,
    pub id: String,
    pub display_name: String,
    pub description: String,
    pub filename: String,
    pub file_type: String,
    pub mime_type: String,
    pub file_size: u64,
    pub storage_path: String,
    pub sandbox_path: String,
    pub revision: u32,
    pub published_at: String,
    /// `image`, `pdf`, `html` or `none`.
    pub preview_kind: String,
}

impl From<&Revision> for PublishedView {
    fn from(r: &Revision) -> Self {
        PublishedView {
            success: true,
            id: r.file_id.clone(),
            display_name: r.display_name.clone(),
            description: r.description.clone(),
            filename: r.filename.clone(),
            file_type: r.file_type.clone(),
            mime_type: r.mime_type.clone(),
            file_size: r.file_size,
            storage_path: r.storage_path.clone(),
            sandbox_path: r.sandbox_path.clone(),
            revision: r.revision,
            published_at: r.published_at.rfc3339(),
            preview_kind: r.preview_kind.clone(),
        }
    }
}

/// A file attached to a message.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentView {
    pub id: String,
    pub filename: String,
    pub mime_type: String,
    pub size: u64,
    /// `document`, `photo` or `video`.
    pub send_as: String,
    /// Where a token holder downloads it.
    pub url: String,
    /// When the file was one the thread had published: its id and revision, so the user's
    /// preview panel can open it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
}

impl From<&Attachment> for AttachmentView {
    fn from(a: &Attachment) -> Self {
        AttachmentView {
            id: a.id.clone(),
            filename: a.filename.clone(),
            mime_type: a.mime_type.clone(),
            size: a.size,
            send_as: a.send_as.clone(),
            url: format!("/api/threads/{}/attachments/{}/content", a.thread_id, a.id),
            published_id: a.published.as_ref().map(|(id, _)| id.clone()),
            revision: a.published.as_ref().map(|(_, revision)| *revision),
        }
    }
}
