//! What a chat model is handed of what the user sent (docs/reference/uploads.md, "Model
//! content"): content blocks in LangChain's standard shape, ready to go into a model message.
//!
//! An image upload is the image itself, made ready for vision models (long edge at most
//! 1,568 px, at most 5,000,000 bytes; see `ferry_extract::model_image`), followed by its hidden
//! note; a document is its note, which carries its preview. The image is decoded by the
//! extraction worker once per content and kept in the derived cache by the content's hash,
//! so the second ask, by anyone with the same bytes, reads a file.

use ferry_core::page_selection::PageSelection;
use ferry_extract::{ExtractError, ModelImage};
use ferry_store::uploads::Upload;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::error::{Error, Result};
use crate::events::views;
use crate::previews::page_images::{self, Pages};

/// One content block of a model message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentBlock {
    /// Text the model reads.
    Text { text: String },
    /// An image the model looks at.
    Image {
        /// The image's bytes, base64 (standard alphabet, padded).
        base64: String,
        /// `image/png` or `image/jpeg` (or the original's type when it is sent unchanged).
        mime_type: String,
    },
}

/// The blocks of one upload: `[image, note]` for an image; for a PDF its note, then each page
/// shown (`pages`, by default the first five) as its image followed by its text; `[note]` for
/// another document.
pub async fn of_upload(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    upload_id: &str,
    pages: Option<&PageSelection>,
) -> Result<Vec<ContentBlock>> {
    let upload = crate::threads::uploads::get(app, principal, thread_id, upload_id).await?;
    blocks_of(app, &upload, pages).await
}

/// The blocks of one event: a message is its text followed by the blocks of each of its
/// uploads; an `upload` event is the blocks of its upload alone. Other events (files sent or
/// published to the user) hold nothing for the model and are refused as such.
pub async fn of_event(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    event_id: i64,
) -> Result<Vec<ContentBlock>> {
    let thread = access::thread(app, principal, thread_id, Action::Read).await?;
    let event = app
        .db
        .event(&thread.id, event_id)
        .await?
        .ok_or_else(|| Error::not_found(format!("no event {event_id} in this thread")))?;
    let body: Value = serde_json::from_str(&event.json).map_err(|e| {
        tracing::error!(error = %e, event_id, "a stored event is not JSON");
        Error::Internal
    })?;
    let upload_ids: Vec<&str> = match event.kind.as_str() {
        "message" => body["uploads"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|u| u["id"].as_str())
            .collect(),
        "upload" => body["upload"]["id"].as_str().into_iter().collect(),
        other => {
            return Err(Error::invalid_request(format!(
                "event {event_id} is a '{other}' event; model content is made of 'message' and \
                 'upload' events"
            )));
        }
    };
    let mut blocks = Vec::new();
    // An upload event's content ("Uploaded q.csv") is a caption for people, not something the
    // user said.
    let said = (event.kind == "message")
        .then(|| body["content"].as_str())
        .flatten();
    if let Some(text) = said.filter(|t| !t.is_empty()) {
        blocks.push(ContentBlock::Text {
            text: text.to_owned(),
        });
    }
    for upload_id in upload_ids {
        // Uploads are never removed; one missing is left out rather than failing the rest.
        if let Some(upload) = app.db.upload(&thread.id, upload_id).await? {
            blocks.extend(blocks_of(app, &upload, None).await?);
        }
    }
    Ok(blocks)
}

async fn blocks_of(
    app: &App,
    upload: &Upload,
    pages: Option<&PageSelection>,
) -> Result<Vec<ContentBlock>> {
    let note = ContentBlock::Text {
        text: views::upload(upload).attachment_xml,
    };
    // A PDF's pages are shown by default; a presentation's slides when asked for, since
    // drawing a deck runs the office renderer, which takes seconds.
    if ferry_extract::is_pdf(&upload.file_name)
        || (pages.is_some() && page_images::has_pages(&upload.file_name))
    {
        let document = page_images::Document::stored(&upload.sha256, &upload.blob_key);
        let shown =
            page_images::show_document(app, &upload.owner, &upload.file_name, &document, pages)
                .await?;
        let mut blocks = vec![note];
        blocks.extend(page_blocks(&upload.file_name, shown, pages.is_none()));
        return Ok(blocks);
    }
    if pages.is_some() {
        return Err(Error::invalid_request(format!(
            "pages applies to PDF files and presentations (PPTX); {} is neither",
            upload.file_name
        )));
    }
    if upload.kind != "image" {
        return Ok(vec![note]);
    }
    let image = match shown_image(app, upload).await? {
        Shown::Image(image) => ContentBlock::Image {
            base64: image.base64,
            mime_type: image.mime_type,
        },
        // The model still learns there was a picture, and why it cannot see it.
        Shown::Refused { reason } => ContentBlock::Text {
            text: format!("[The image {} cannot be shown: {reason}]", upload.file_name),
        },
    };
    Ok(vec![image, note])
}

/// A PDF's pages (or a deck's slides) as blocks: each page's image (or why it has none), then
/// its text; after
/// them, when the pages were not chosen and the document has more, how to ask for the rest.
pub(crate) fn page_blocks(file_name: &str, shown: Pages, by_default: bool) -> Vec<ContentBlock> {
    let (shown, pages) = match shown {
        Pages::Shown { pages, count } => (pages, count),
        Pages::Refused { reason } => {
            return vec![ContentBlock::Text {
                text: format!("[The pages of {file_name} cannot be shown as images: {reason}]"),
            }];
        }
    };
    let more = by_default
        .then(|| page_images::more_pages(file_name, &shown, pages))
        .flatten();
    let mut blocks = Vec::new();
    for page in shown {
        blocks.push(match page_images::not_drawn(file_name, &page) {
            Some(text) => ContentBlock::Text { text },
            None => match &page.image {
                Some(image) => ContentBlock::Image {
                    base64: image.base64.clone(),
                    mime_type: image.mime_type.clone(),
                },
                None => continue,
            },
        });
        let heading = page_images::page_heading(file_name, &page);
        blocks.push(ContentBlock::Text {
            text: if page.text.is_empty() {
                heading
            } else {
                format!("{heading}\n{}", page.text)
            },
        });
    }
    blocks.extend(more.map(|text| ContentBlock::Text { text }));
    blocks
}

/// What the cache keeps of an image: the image as shown, or why it cannot be shown (so that
/// a hostile image costs the worker once, not on every ask).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
enum Shown {
    Image(ModelImage),
    Refused { reason: String },
}

async fn shown_image(app: &App, upload: &Upload) -> Result<Shown> {
    let entry = format!("model/{}.json", upload.sha256);
    if let Some(shown) = app.cache.read_json::<Shown>(&entry).await {
        return Ok(shown);
    }
    let source = app.blobs.local_copy(&upload.blob_key).await?;
    let shown = match app
        .extractor
        .model_image(&upload.owner, source.path())
        .await
    {
        Ok(image) => Shown::Image(image),
        // The worker failing to start says nothing about the image: try again on the next
        // ask rather than remember it.
        Err(e @ ExtractError::Worker(_)) => {
            tracing::warn!(error = %e, upload = %upload.id, "an image could not be made ready for a model");
            return Ok(Shown::Refused {
                reason: e.to_string(),
            });
        }
        Err(e) => Shown::Refused {
            reason: e.to_string(),
        },
    };
    app.cache.write_json(&entry, &shown).await;
    Ok(shown)
}
