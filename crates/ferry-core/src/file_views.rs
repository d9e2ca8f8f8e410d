//! What clients are shown of the files of a thread: an upload, a published revision and a
//! message's attachment, as the API answers them and the thread's events carry them. They are
//! wire types, declared once here so that the server that sends them and a client that reads
//! them (the MCP tools) share one declaration; the server builds them from its records.

use serde::{Deserialize, Serialize};

use crate::attachment::AttachmentNote;

/// An upload as clients see it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

impl UploadView {
    /// The same upload without its preview text, for events that would pass the size limit
    /// with it (the thread's upload list still has the preview).
    pub fn without_preview(&self) -> UploadView {
        UploadView {
            preview: None,
            attachment_xml: self.attachment_note(
                None,
                Some("the preview is too long for an event; list the thread's uploads to read it"),
            ),
            ..self.clone()
        }
    }

    /// The hidden attachment note the agent is handed, with this preview (or its error).
    pub fn attachment_note(&self, preview: Option<&str>, preview_error: Option<&str>) -> String {
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
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// A file attached to a message.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// On a webhook's copy of a message: when `url`, then a signed link that needs no token,
    /// stops working.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}
