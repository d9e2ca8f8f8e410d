//! The pages of a PDF as a vision model is shown them (docs/reference/uploads.md, "Model
//! content"): each page drawn as an image, beside that page's text. An upload's model content
//! and `read_file` with `pages` both come here, so a page is drawn one way and kept once.
//!
//! A page is drawn by the extraction worker, one worker per page (a page is the unit a hostile
//! document can make expensive, and the worker's limits then bound one page, not a batch),
//! and kept in the derived cache by the content's SHA-256, the page number and the text
//! budget: the second ask, by anyone with the same bytes, reads a file.

use std::path::Path;

use ferry_core::pages::{PageSelection, PagesError};
use ferry_extract::{ExtractError, PdfPage};
use futures::future::try_join_all;
use serde::{Deserialize, Serialize};

use crate::App;
use crate::error::{Error, Result};

/// The pages shown of one PDF.
#[derive(Debug)]
pub(crate) enum Pages {
    /// The pages asked for, ascending; `count` is how many the document has.
    Shown { pages: Vec<PdfPage>, count: u32 },
    /// The document cannot be opened to draw (encrypted, broken): why.
    Refused { reason: String },
}

/// What the cache keeps of one page: the page, or why the document cannot be drawn (so that a
/// hostile file costs the worker once, not on every ask).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
enum Kept {
    Page(PdfPage),
    Refused { reason: String },
}

/// The PDF with content hash `sha256` (its bytes at `source`), owned by `owner` (whose share
/// of the workers the drawing takes), shown at the pages `selection` asks for: without one the
/// first pages (`ferry_core::pages::DEFAULT_PAGES`). A page the document does not have is an
/// invalid request, said with the document's page count.
pub(crate) async fn show(
    app: &App,
    owner: &str,
    sha256: &str,
    source: &Path,
    selection: Option<&PageSelection>,
) -> Result<Pages> {
    // Opening the document at the first page asked for tells how many it has.
    let first = PageSelection::first(selection);
    let opened = match page(app, owner, sha256, source, first).await? {
        Kept::Page(page) => page,
        Kept::Refused { reason } => return Ok(Pages::Refused { reason }),
    };
    let pages = opened.pages;
    let numbers = PageSelection::resolve(selection, pages).map_err(|e| out_of_range(&e))?;
    let mut opened = Some(opened);
    let shown = try_join_all(numbers.into_iter().map(|number| {
        let known = opened.take_if(|p| p.number == number);
        async move {
            if let Some(known) = known {
                return Ok::<PdfPage, Error>(known);
            }
            match page(app, owner, sha256, source, number).await? {
                Kept::Page(page) => Ok(page),
                // The document opened for its first page; failing later is this page's failure.
                Kept::Refused { reason } => Ok(PdfPage {
                    number,
                    pages,
                    image: None,
                    image_error: Some(reason),
                    text: String::new(),
                }),
            }
        }
    }))
    .await?;
    Ok(Pages::Shown {
        pages: shown,
        count: pages,
    })
}

fn out_of_range(e: &PagesError) -> Error {
    Error::invalid_request(e.to_string())
}

async fn page(app: &App, owner: &str, sha256: &str, source: &Path, number: u32) -> Result<Kept> {
    let max_chars = app.limits.preview_max_chars;
    let entry = format!("pdf-pages/{sha256}/{number}.{max_chars}.json");
    if let Some(kept) = app
        .cache
        .read(&entry)
        .await
        .and_then(|bytes| serde_json::from_slice::<Kept>(&bytes).ok())
    {
        return Ok(kept);
    }
    let kept = match app
        .extractor
        .pdf_page(owner, source, number, max_chars)
        .await
    {
        Ok(page) => Kept::Page(page),
        Err(ExtractError::NoSuchPage { page, pages }) => {
            return Err(out_of_range(&PagesError::OutOfRange { page, pages }));
        }
        // The worker failing to start says nothing about the document: try again next time.
        Err(e @ ExtractError::Worker(_)) => {
            tracing::warn!(error = %e, "a PDF page could not be drawn");
            return Ok(Kept::Refused {
                reason: e.to_string(),
            });
        }
        Err(e) => Kept::Refused {
            reason: e.to_string(),
        },
    };
    if let Ok(bytes) = serde_json::to_vec(&kept) {
        app.cache.write(&entry, bytes).await;
    }
    Ok(kept)
}

/// The line that heads a page's text for a model: which page of which document it is, and,
/// when the page has no text, that its image is all there is.
pub(crate) fn page_heading(file_name: &str, page: &PdfPage) -> String {
    let (number, pages) = (page.number, page.pages);
    if page.text.is_empty() {
        format!(
            "Page {number} of {pages} of {file_name}: no text on this page; what it shows is in \
             its image"
        )
    } else {
        format!("Page {number} of {pages} of {file_name}:")
    }
}

/// What is said of a page that could not be drawn.
pub(crate) fn not_drawn(file_name: &str, page: &PdfPage) -> Option<String> {
    page.image_error.as_ref().map(|reason| {
        format!(
            "[Page {} of {file_name} cannot be shown as an image: {reason}]",
            page.number
        )
    })
}

/// What is said after the pages shown when the document has more and none were asked for.
pub(crate) fn more_pages(file_name: &str, shown: &[PdfPage], pages: u32) -> Option<String> {
    let last = shown.last()?.number;
    (last < pages).then(|| {
        format!(
            "[{file_name} has {pages} pages; pages 1-{last} are shown. Ask for others with \
             pages, e.g. pages={}-{}]",
            last + 1,
            pages.min(last + ferry_core::pages::DEFAULT_PAGES)
        )
    })
}
