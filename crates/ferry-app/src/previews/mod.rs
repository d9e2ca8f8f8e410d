//! What a person sees when they open a file in the preview panel: a published revision or one of
//! their own uploads, shown by its preview kind (`ferry_extract::preview_kind`, from the name's
//! extension): the image itself, the PDF, or sanitized HTML the extraction worker renders. Both
//! kinds of file are made a [`Preview`] here, so the one route handler that serves previews
//! cannot treat them differently.
//!
//! The room of previews, what a person or a model is shown of a stored file: the preview panel
//! (here), the pages of a PDF or a presentation drawn as images ([`page_images`]), the content
//! blocks a chat model is handed ([`model_content`]) and Markdown rendered for display
//! ([`markdown`]).

pub mod markdown;
pub mod model_content;
pub mod page_images;

use ferry_core::Timestamp;
use ferry_store::published::Revision;
use ferry_store::uploads::Upload;

use crate::app::App;
use crate::error::Result;
use crate::events::views::preview_kind;

/// A stored file as its preview is served.
#[derive(Debug, Clone)]
pub struct Preview {
    pub thread_id: String,
    pub blob_key: String,
    pub size: u64,
    pub sha256: String,
    /// The name's extension, lower-cased with its dot (`.docx`), or empty.
    pub extension: String,
    /// The name it is downloaded under.
    pub filename: String,
    /// `image`, `pdf`, `html` or `none`.
    pub kind: String,
    pub modified: Timestamp,
}

impl Preview {
    pub fn of_revision(revision: &Revision) -> Preview {
        Preview {
            thread_id: revision.thread_id.clone(),
            blob_key: revision.blob_key.clone(),
            size: revision.file_size,
            sha256: revision.sha256.clone(),
            extension: revision.file_type.clone(),
            filename: revision.filename.clone(),
            kind: revision.preview_kind.clone(),
            modified: revision.published_at,
        }
    }

    pub fn of_upload(upload: &Upload) -> Preview {
        Preview {
            thread_id: upload.thread_id.clone(),
            blob_key: upload.blob_key.clone(),
            size: upload.size,
            sha256: upload.sha256.clone(),
            extension: extension_of(&upload.file_name),
            filename: upload.file_name.clone(),
            kind: preview_kind(&upload.file_name),
            modified: upload.created_at,
        }
    }

    /// The image type an `image` preview is served as. It comes from ferry's own table, never
    /// from the file: an SVG is always image/svg+xml (and the preview's CSP keeps its script
    /// from running). `None`: not an image ferry shows.
    pub fn image_type(&self) -> Option<&'static str> {
        Some(match self.extension.as_str() {
            ".png" => "image/png",
            ".jpg" | ".jpeg" => "image/jpeg",
            ".gif" => "image/gif",
            ".webp" => "image/webp",
            ".svg" => "image/svg+xml",
            _ => return None,
        })
    }
}

/// The extension a preview is made by, as a published revision records it (`.docx`, or empty).
fn extension_of(file_name: &str) -> String {
    ferry_core::send_file::extension_of(file_name).unwrap_or_default()
}

/// The generation of the HTML renderings: raised when what a rendering holds changes (a
/// slide's charts named, its pictures shown), so renderings cached before are made again.
const RENDERING: u32 = 2;

/// The ETag of a file's HTML rendering: its content and the rendering's generation.
pub fn rendering_etag(preview: &Preview) -> String {
    format!("\"html-{RENDERING}-{}\"", preview.sha256)
}

/// The sanitized HTML rendering of a file. Renderings are cached by content and type, so a
/// document is read by the extraction worker once, not on every view; a document that cannot be
/// rendered is remembered too, so a hostile file costs a worker once, not on every view. A cache
/// entry is shared by everyone who has the same bytes, so nothing in it may be theirs: the
/// document is rendered under a neutral name (only its extension matters), never the name its
/// owner gave it.
pub async fn rendered_html(app: &App, preview: &Preview) -> Result<String> {
    let entry = format!(
        "html/{RENDERING}/{}{}.html",
        preview.sha256,
        preview.extension.replace('.', "-")
    );
    if let Some(html) = app
        .cache
        .read(&entry)
        .await
        .and_then(|bytes| String::from_utf8(bytes).ok())
    {
        return Ok(html);
    }
    let source = app.blobs.local_copy(&preview.blob_key).await?;
    let neutral_name = format!("document{}", preview.extension);
    let owner = app
        .db
        .thread(&preview.thread_id)
        .await?
        .map(|t| t.owner)
        .unwrap_or_default();
    let html = match app
        .extractor
        .render_html(&owner, source.path(), &neutral_name)
        .await
    {
        Ok(html) => html,
        // A document that cannot be rendered gets a page saying so.
        Err(e) => failure_page(&e.to_string()),
    };
    app.cache.write(&entry, html.clone().into_bytes()).await;
    Ok(html)
}

fn failure_page(reason: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Preview</title>\
         <style>{}</style></head>\
         <body><p>This preview could not be made: {}.</p><p>Download the file to view it.</p>\
         </body></html>",
        ferry_extract::PREVIEW_STYLE,
        ferry_core::attachment::escape(reason)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_uploads_extension_comes_from_its_name() {
        assert_eq!(extension_of("Report.DOCX"), ".docx");
        assert_eq!(extension_of("no-extension"), "");
    }
}
