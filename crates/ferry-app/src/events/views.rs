//! What clients are shown of the files of a thread, made from the stored records: an upload,
//! a published revision and a message's attachment. The views' types are
//! `ferry_core::file_views`, shared with the clients that read them; events carry them
//! ([`super::thread_event`]) and routes answer them, so they are made here, below both.

use ferry_core::file_views::{AttachmentView, PublishedView, UploadView};
use ferry_store::published::Revision;
use ferry_store::say::Attachment;
use ferry_store::uploads::Upload;

/// The preview kind of a file by its name: `image`, `pdf`, `html` or `none`. Every view of a
/// file names it, and the preview panel serves the file by it.
pub fn preview_kind(file_name: &str) -> String {
    ferry_extract::preview_kind(file_name).as_str().to_owned()
}

/// An upload as clients see it, with the attachment note the agent is handed.
pub fn upload(u: &Upload) -> UploadView {
    let mut view = UploadView {
        id: u.id.clone(),
        file_name: u.file_name.clone(),
        file_type: u.file_type.clone(),
        size: u.size,
        sha256: u.sha256.clone(),
        kind: u.kind.clone(),
        preview_kind: preview_kind(&u.file_name),
        storage_path: u.storage_path.clone(),
        sandbox_path: u.sandbox_path.clone(),
        preview: u.preview.clone(),
        preview_error: u.preview_error.clone(),
        width: u.width,
        height: u.height,
        attachment_xml: String::new(),
        created_at: u.created_at.rfc3339(),
    };
    view.attachment_xml =
        view.attachment_note(view.preview.as_deref(), view.preview_error.as_deref());
    view
}

/// A published revision as clients see it.
pub fn published(r: &Revision) -> PublishedView {
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

/// A message's attachment as clients see it, with the route it is downloaded from.
pub fn attachment(a: &Attachment) -> AttachmentView {
    AttachmentView {
        id: a.id.clone(),
        filename: a.filename.clone(),
        mime_type: a.mime_type.clone(),
        size: a.size,
        send_as: a.send_as.clone(),
        url: format!("/api/threads/{}/attachments/{}/content", a.thread_id, a.id),
        published_id: a.published.as_ref().map(|(id, _)| id.clone()),
        revision: a.published.as_ref().map(|(_, revision)| *revision),
        expires_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::preview_kind;

    #[test]
    fn a_files_preview_kind_comes_from_its_name() {
        assert_eq!(preview_kind("Report.DOCX"), "html");
        assert_eq!(preview_kind("scan.pdf"), "pdf");
        assert_eq!(preview_kind("shop.png"), "image");
        assert_eq!(preview_kind("tool.exe"), "none");
    }
}
