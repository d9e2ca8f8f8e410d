//! `read_file`: what a model is handed of a file. Text comes numbered as `cat -n` prints it,
//! a window of lines at a time; an image comes as the image itself, made ready for a vision
//! model (as an upload's model content is); a PDF or Office document as its extracted text,
//! paged the same way; any other binary file as one line saying what it is, never as its
//! bytes read as text.

use ferry_core::AgentPath;
use ferry_core::agent_files::ReadFileInput;
use ferry_core::page_selection::PageSelection;
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::document_text::Searchable;
use super::{Caller, Current, READ_MAX_BYTES, open, parse};
use crate::error::{Error, Result};
use crate::previews::model_content::{ContentBlock, page_blocks};
use crate::previews::page_images::Pages;
use ferry_core::conditions::quoted_etag;

/// Characters of one line shown at most; the rest of a longer line is cut, and said to be.
pub const LINE_MAX_CHARS: usize = 10_000;
/// Lines one `read_file` returns at most, whatever `limit` asks.
pub const MAX_LINES: usize = 50_000;

/// What `read_file` answers.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ReadOutput {
    /// Lines of a text file, or of a document's extracted text.
    #[serde(rename_all = "camelCase")]
    Text {
        path: String,
        /// The lines `offset+1 …`, each as `cat -n` prints it: the number right-aligned in
        /// six columns, a tab, the line.
        content: String,
        total_lines: usize,
        /// Where the next window starts, when lines remain.
        #[serde(skip_serializing_if = "Option::is_none")]
        next_offset: Option<usize>,
        /// Quoted, as in an `ETag` header: what `edit_file` and `write_file` take as `ifMatch`.
        etag: String,
        /// For a document: that the text was extracted from it.
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// An image, scaled for a vision model.
    #[serde(rename_all = "camelCase")]
    Image {
        path: String,
        /// `image/png` or `image/jpeg`.
        mime_type: String,
        /// The image's bytes, base64.
        base64: String,
        width: u32,
        height: u32,
        etag: String,
        /// One line naming the image.
        note: String,
    },
    /// Pages of a PDF (asked for with `pages`): each page's image followed by its text, as
    /// content blocks ready for a model, the same blocks as an uploaded PDF's model content.
    #[serde(rename_all = "camelCase")]
    Pages {
        path: String,
        etag: String,
        /// How many pages the document has; absent when it cannot be opened to draw.
        #[serde(skip_serializing_if = "Option::is_none")]
        total_pages: Option<u32>,
        content: Vec<ContentBlock>,
    },
    /// A file that is neither text nor something ferry can show: its type and size only.
    #[serde(rename_all = "camelCase")]
    Binary {
        path: String,
        content_type: String,
        size: u64,
        etag: String,
        note: String,
    },
}

/// The text of `bytes` if it is text: UTF-8 with no NUL byte (a byte order mark included, so
/// an edit keeps it).
pub(crate) fn as_text(bytes: &[u8]) -> Option<&str> {
    if memchr::memchr(0, bytes).is_some() {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// `read_file`.
pub async fn read(caller: Caller<'_>, input: &ReadFileInput) -> Result<ReadOutput> {
    let path = parse(&input.path)?;
    if input.limit == 0 {
        return Err(Error::invalid_request("limit must be at least 1"));
    }
    let current = open(caller, &path).await?;
    let etag = quoted_etag(&current.etag);
    let name = path.file_name().to_owned();
    if let Some(selection) = &input.pages {
        if !crate::previews::page_images::has_pages(&name) {
            return Err(Error::invalid_request(format!(
                "pages applies to PDF files and presentations (PPTX); {path} is neither"
            )));
        }
        return pdf_pages(caller, &path, current, selection).await;
    }
    if ferry_extract::is_raster_image(&name) {
        return image(caller, &path, current).await;
    }
    if ferry_extract::is_document(&name) {
        let text = document_text(caller, &name, current).await?;
        let pages = if ferry_extract::is_pdf(&name) {
            " (ask with pages, e.g. \"1-3\", to see its pages as images)"
        } else if ferry_extract::is_slides(&name) && caller.app.extractor.draws_slides() {
            " (ask with pages, e.g. \"1-3\", to see its slides as images)"
        } else {
            ""
        };
        let note = Some(format!(
            "the text extracted from {name}; its layout, images and charts are not in it{pages}"
        ));
        return Ok(window(&path, &text, input, etag, note));
    }
    let (content_type, size) = (current.content_type.clone(), current.size);
    let binary = || ReadOutput::Binary {
        path: path.to_string(),
        note: format!(
            "{path} is a binary file ({content_type}, {size} bytes); it has no text to show. \
             Publish it to the user, or process it with code in your sandbox"
        ),
        content_type: content_type.clone(),
        size,
        etag: etag.clone(),
    };
    if size > READ_MAX_BYTES {
        // Too large to read whole: its start says whether it is text (then it is refused as
        // too large to read this way) or binary (then it is described).
        let head = current.head(caller.app, 8192).await?;
        // A character cut at the end of the head is not a sign of binary; a bad byte is.
        let bad_utf8 = matches!(std::str::from_utf8(&head), Err(e) if e.error_len().is_some());
        if head.contains(&0) || bad_utf8 {
            return Ok(binary());
        }
        return Err(crate::error::Error::TooLarge(format!(
            "{path} is a text file of {size} bytes, more than the {} read_file reads; read \
             parts of it with grep, or with GET and a Range header",
            crate::error::describe_bytes(READ_MAX_BYTES)
        )));
    }
    let bytes = current.bytes_for_answer(caller.app, READ_MAX_BYTES).await?;
    match as_text(&bytes) {
        Some(text) => Ok(window(&path, text, input, etag.clone(), None)),
        None => Ok(binary()),
    }
}

/// The lines `offset+1 … offset+limit` of `text`, numbered.
fn window(
    path: &AgentPath,
    text: &str,
    input: &ReadFileInput,
    etag: String,
    note: Option<String>,
) -> ReadOutput {
    let limit = input.limit.min(MAX_LINES);
    // A byte order mark is not part of the first line.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = match usize::try_from(input.offset) {
        Ok(offset) => offset,
        // A negative offset counts from the end (-20: the last 20 lines), never before the
        // first line.
        Err(_) => {
            let from_end = usize::try_from(input.offset.unsigned_abs()).unwrap_or(usize::MAX);
            text.split_inclusive('\n').count().saturating_sub(from_end)
        }
    };
    let mut lines = text.split_inclusive('\n');
    let mut content = String::new();
    let mut total = 0;
    for (index, line) in lines.by_ref().enumerate() {
        total = index + 1;
        if index < first || index >= first.saturating_add(limit) {
            continue;
        }
        let line = line.trim_end_matches('\n').trim_end_matches('\r');
        content.push_str(&format!("{:>6}\t", index + 1));
        match line.char_indices().nth(LINE_MAX_CHARS) {
            Some((cut, _)) => {
                content.push_str(&line[..cut]);
                content.push_str(" … [line cut: longer than 10000 characters]");
            }
            None => content.push_str(line),
        }
        content.push('\n');
    }
    let end = first.saturating_add(limit);
    ReadOutput::Text {
        path: path.to_string(),
        content,
        total_lines: total,
        next_offset: (end < total).then_some(end),
        etag,
        note,
    }
}

/// An image made ready for a model, or (an image that cannot be decoded) a text answer
/// saying why.
async fn image(caller: Caller<'_>, path: &AgentPath, current: Current) -> Result<ReadOutput> {
    let etag = quoted_etag(&current.etag);
    let (content_type, size) = (current.content_type.clone(), current.size);
    let bytes = current.bytes_for_answer(caller.app, READ_MAX_BYTES).await?;
    let scratch = caller.app.cache.scratch(bytes).await?;
    let owner = caller.principal.identity_key();
    match caller.app.extractor.model_image(&owner, &scratch).await {
        Ok(image) => Ok(ReadOutput::Image {
            path: path.to_string(),
            note: format!(
                "{path}: an image, {}x{} as shown ({content_type}, {size} bytes stored)",
                image.width, image.height
            ),
            mime_type: image.mime_type,
            base64: image.base64,
            width: image.width,
            height: image.height,
            etag,
        }),
        Err(e) => Ok(ReadOutput::Binary {
            path: path.to_string(),
            note: format!("{path} is an image that cannot be shown: {e}"),
            content_type,
            size,
            etag,
        }),
    }
}

/// The pages of a PDF (or slides of a deck) asked for, drawn by the worker, kept by the
/// content's hash.
async fn pdf_pages(
    caller: Caller<'_>,
    path: &AgentPath,
    current: Current,
    selection: &PageSelection,
) -> Result<ReadOutput> {
    let etag = quoted_etag(&current.etag);
    let bytes = current.bytes_for_answer(caller.app, READ_MAX_BYTES).await?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let scratch = caller.app.cache.scratch(bytes).await?;
    let owner = caller.principal.identity_key();
    let document = crate::previews::page_images::Document::file(&sha256, &scratch);
    let name = path.file_name();
    let shown = crate::previews::page_images::show_document(
        caller.app,
        &owner,
        name,
        &document,
        Some(selection),
    )
    .await?;
    let total_pages = match &shown {
        Pages::Shown { count, .. } => Some(*count),
        Pages::Refused { .. } => None,
    };
    Ok(ReadOutput::Pages {
        path: path.to_string(),
        etag,
        total_pages,
        content: page_blocks(path.file_name(), shown, false),
    })
}

/// A document's text, extracted by the worker (and kept by content hash): the text `grep`
/// with `documents: true` searches, each page, sheet or slide under its heading.
async fn document_text(caller: Caller<'_>, name: &str, current: Current) -> Result<String> {
    let bytes = current.bytes_for_answer(caller.app, READ_MAX_BYTES).await?;
    match super::document_text::searchable(caller, name, bytes).await? {
        Searchable::Text(text) => Ok(text.render()),
        Searchable::Unreadable { reason } => {
            // A scan has no text, but its pages can still be looked at.
            let pages = if ferry_extract::is_pdf(name) {
                "; read its pages as images instead, with pages (e.g. \"1-5\")"
            } else {
                ""
            };
            Err(Error::invalid_request(format!(
                "the text of {name} cannot be read: {reason}{pages}"
            )))
        }
    }
}
