//! The pages of a PDF as a vision model is shown them (docs/reference/uploads.md, "Model
//! content"): each page drawn as an image, beside that page's text. An upload's model content,
//! `read_file` with `pages` and the preview panel's page images all come here, so a page is
//! drawn one way and kept once.
//!
//! A page is drawn by the extraction worker, one worker per page (a page is the unit a hostile
//! document can make expensive, and the worker's limits then bound one page, not a batch),
//! and kept in the derived cache by the content's SHA-256, the page number and the text
//! budget: the second ask, by anyone with the same bytes, reads a file.
//!
//! The preview panel also shows a presentation's slides this way: the office renderer exports
//! the deck as a PDF (kept in the cache by the deck's hash), whose pages are drawn as above.
//!
//! The cache is asked before the document's bytes are fetched ([`Document`]): on an object
//! store, a page already kept costs no download of the whole document.

use std::path::{Path, PathBuf};

use ferry_core::page_selection::{PageSelection, PagesError};
use ferry_extract::{ExtractError, PdfPage};
use ferry_store::blobs::LocalCopy;
use futures::future::try_join_all;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::access::principal::Principal;
use crate::app::App;
use crate::error::{Error, Result};

/// The pages shown of one PDF.
#[derive(Debug)]
pub(crate) enum Pages {
    /// The pages asked for, ascending; `count` is how many the document has.
    Shown { pages: Vec<PdfPage>, count: u32 },
    /// The document cannot be opened to draw (encrypted, broken): why.
    Refused { reason: String },
}

/// A document whose pages are shown: its content hash, which names everything kept of it, and
/// where its bytes are, fetched from the blob store only when a page must be drawn.
pub(crate) struct Document<'a> {
    sha256: &'a str,
    bytes: Bytes<'a>,
    /// The stored blob as a local file, once a page needed it (shared by the pages drawn
    /// together, so a document is downloaded at most once per request).
    fetched: OnceCell<LocalCopy>,
}

enum Bytes<'a> {
    /// A blob in the store, by key.
    Stored(&'a str),
    /// A file on this machine.
    File(&'a Path),
}

impl<'a> Document<'a> {
    /// The blob with key `blob_key` in the store, whose content hash is `sha256`.
    pub(crate) fn stored(sha256: &'a str, blob_key: &'a str) -> Self {
        Self::new(sha256, Bytes::Stored(blob_key))
    }

    /// The file at `path`, whose content hash is `sha256`.
    pub(crate) fn file(sha256: &'a str, path: &'a Path) -> Self {
        Self::new(sha256, Bytes::File(path))
    }

    fn new(sha256: &'a str, bytes: Bytes<'a>) -> Self {
        Self {
            sha256,
            bytes,
            fetched: OnceCell::new(),
        }
    }

    /// The document's bytes as a file the worker can read.
    async fn path(&self, app: &App) -> Result<&Path> {
        match self.bytes {
            Bytes::File(path) => Ok(path),
            Bytes::Stored(key) => {
                let copy = self
                    .fetched
                    .get_or_try_init(|| app.blobs.local_copy(key))
                    .await?;
                Ok(copy.path())
            }
        }
    }
}

/// What the cache keeps of one page: the page, or why the document cannot be drawn (so that a
/// hostile file costs the worker once, not on every ask).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
enum Kept {
    Page(PdfPage),
    Refused { reason: String },
}

/// The PDF `document`, owned by `owner` (whose share of the workers the drawing takes), shown
/// at the pages `selection` asks for: without one the first pages
/// (`ferry_core::page_selection::DEFAULT_PAGES`). A page the document does not have is an invalid
/// request, said with the document's page count.
pub(crate) async fn show(
    app: &App,
    owner: &str,
    document: &Document<'_>,
    selection: Option<&PageSelection>,
) -> Result<Pages> {
    // Opening the document at the first page asked for tells how many it has.
    let first = PageSelection::first(selection);
    let opened = match page(app, owner, document, first).await? {
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
            match page(app, owner, document, number).await? {
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

async fn page(app: &App, owner: &str, document: &Document<'_>, number: u32) -> Result<Kept> {
    let max_chars = app.limits.preview_max_chars;
    let entry = format!("pdf-pages/{}/{number}.{max_chars}.json", document.sha256);
    if let Some(kept) = app.cache.read_json::<Kept>(&entry).await {
        return Ok(kept);
    }
    let source = document.path(app).await?;
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
    app.cache.write_json(&entry, &kept).await;
    Ok(kept)
}

/// The pages of `document`, named `file_name`, shown as [`show`] shows a PDF's: a PDF's own
/// pages, or a presentation's slides as the office renderer draws them (their PDF kept under
/// the deck's hash, as the preview panel's slide images are). A deck that cannot be drawn (no
/// office renderer, or one that cannot read it) is `Refused`, with why.
pub(crate) async fn show_document(
    app: &App,
    owner: &str,
    file_name: &str,
    document: &Document<'_>,
    selection: Option<&PageSelection>,
) -> Result<Pages> {
    if !ferry_extract::is_slides(file_name) {
        return show(app, owner, document, selection).await;
    }
    match slides_pdf(app, owner, file_name, document).await {
        Ok(pdf) => {
            show(
                app,
                owner,
                &Document::file(document.sha256, &pdf),
                selection,
            )
            .await
        }
        Err(Error::UnsupportedFileType(reason)) => Ok(Pages::Refused { reason }),
        Err(e) => Err(e),
    }
}

/// Whether `pages` applies to a file of this name: a PDF, or a presentation.
pub(crate) fn has_pages(file_name: &str) -> bool {
    ferry_extract::is_pdf(file_name) || ferry_extract::is_slides(file_name)
}

/// What a document's pages are called: a presentation's are slides.
fn unit(file_name: &str) -> (&'static str, &'static str) {
    if ferry_extract::is_slides(file_name) {
        ("Slide", "slides")
    } else {
        ("Page", "pages")
    }
}

/// The line that heads a page's text for a model: which page (or slide) of which document it
/// is, and, when the page has no text, that its image is all there is.
pub(crate) fn page_heading(file_name: &str, page: &PdfPage) -> String {
    let (number, pages) = (page.number, page.pages);
    let (one, _) = unit(file_name);
    if page.text.is_empty() {
        format!(
            "{one} {number} of {pages} of {file_name}: no text on this {}; what it shows is in \
             its image",
            one.to_lowercase()
        )
    } else {
        format!("{one} {number} of {pages} of {file_name}:")
    }
}

/// What is said of a page that could not be drawn.
pub(crate) fn not_drawn(file_name: &str, page: &PdfPage) -> Option<String> {
    page.image_error.as_ref().map(|reason| {
        format!(
            "[{} {} of {file_name} cannot be shown as an image: {reason}]",
            unit(file_name).0,
            page.number
        )
    })
}

/// What is said after the pages shown when the document has more and none were asked for.
pub(crate) fn more_pages(file_name: &str, shown: &[PdfPage], pages: u32) -> Option<String> {
    let last = shown.last()?.number;
    let (_, many) = unit(file_name);
    (last < pages).then(|| {
        format!(
            "[{file_name} has {pages} {many}; {many} 1-{last} are shown. Ask for others with \
             pages, e.g. pages={}-{}]",
            last + 1,
            pages.min(last + ferry_core::page_selection::DEFAULT_PAGES)
        )
    })
}

/// One page of a PDF as the preview panel shows it: the drawing's bytes and type, and how many
/// pages the document has.
#[derive(Debug)]
pub struct PageImage {
    /// PNG or JPEG bytes.
    pub bytes: Vec<u8>,
    /// `image/png` or `image/jpeg`.
    pub mime_type: String,
    /// How many pages the document has.
    pub pages: u32,
    /// The content's SHA-256, which names this drawing for caches (with the page number).
    pub sha256: String,
}

/// Page `number` of an upload that is a PDF (or slide `number` of a presentation), drawn, for
/// whoever may read its thread.
pub async fn upload_page(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    upload_id: &str,
    number: u32,
) -> Result<PageImage> {
    let upload = crate::threads::uploads::get(app, principal, thread_id, upload_id).await?;
    let document = Document::stored(&upload.sha256, &upload.blob_key);
    drawn(app, principal, &upload.file_name, &document, number).await
}

/// Page `number` of a published file's revision (the latest when `revision` is `None`) that
/// is a PDF (or a presentation's slide), drawn, for whoever may read its thread.
pub async fn published_page(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    file_id: &str,
    revision: Option<u32>,
    number: u32,
) -> Result<PageImage> {
    let revision = crate::publish::revision(app, principal, thread_id, file_id, revision).await?;
    let document = Document::stored(&revision.sha256, &revision.blob_key);
    drawn(app, principal, &revision.filename, &document, number).await
}

async fn drawn(
    app: &App,
    principal: &Principal,
    file_name: &str,
    document: &Document<'_>,
    number: u32,
) -> Result<PageImage> {
    if number == 0 {
        return Err(out_of_range(&PagesError::Zero(number.to_string())));
    }
    let owner = principal.identity_key();
    let kept = if ferry_extract::is_pdf(file_name) {
        page(app, &owner, document, number).await?
    } else if ferry_extract::is_slides(file_name) {
        // The slides' PDF is kept under the deck's hash, and so are its pages.
        let pdf = slides_pdf(app, &owner, file_name, document).await?;
        page(app, &owner, &Document::file(document.sha256, &pdf), number).await?
    } else {
        return Err(Error::UnsupportedFileType(format!(
            "{file_name} is neither a PDF nor a presentation; only their pages are drawn"
        )));
    };
    let page = match kept {
        Kept::Page(page) => page,
        Kept::Refused { reason } => {
            return Err(Error::UnsupportedFileType(format!(
                "the pages of {file_name} cannot be drawn: {reason}"
            )));
        }
    };
    let Some(image) = page.image else {
        let reason = page.image_error.unwrap_or_default();
        return Err(Error::UnsupportedFileType(format!(
            "page {number} of {file_name} cannot be drawn: {reason}"
        )));
    };
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&image.base64)
        .map_err(|e| {
            tracing::error!(error = %e, "a kept page drawing is not base64");
            Error::Internal
        })?;
    Ok(PageImage {
        bytes,
        mime_type: image.mime_type,
        pages: page.pages,
        sha256: document.sha256.to_owned(),
    })
}

/// The PDF a presentation's slides were drawn into by the office renderer
/// ([`ferry_extract::Extractor::slides_pdf`]), kept in the derived cache by the deck's content
/// hash: its pages are then drawn and kept as a PDF's are, under the deck's hash. A deck the
/// renderer cannot read is remembered too, so a hostile file costs it once; running out of
/// time or memory is not remembered (a less busy moment, or higher limits, may do).
async fn slides_pdf(
    app: &App,
    owner: &str,
    file_name: &str,
    deck: &Document<'_>,
) -> Result<PathBuf> {
    let cannot = |reason: &str| {
        Error::UnsupportedFileType(format!(
            "the slides of {file_name} cannot be drawn: {reason}"
        ))
    };
    let entry = format!("slides-pdf/{}.pdf", deck.sha256);
    let refused = format!("slides-pdf/{}.refused", deck.sha256);
    if let Some(pdf) = app.cache.path_of(&entry).await {
        return Ok(pdf);
    }
    if let Some(reason) = app.cache.read(&refused).await {
        return Err(cannot(&String::from_utf8_lossy(&reason)));
    }
    // The renderer names its PDF after the deck and writes beside it, in a folder of its own.
    let scratch = app.cache.scratch_dir().await?;
    let copy = scratch.path().join("deck.pptx");
    tokio::fs::copy(deck.path(app).await?, &copy).await?;
    let made = app.extractor.slides_pdf(owner, &copy).await;
    let kept = match made {
        Ok(pdf) if pdf == copy.with_extension("pdf") => app
            .cache
            .keep_file(&entry, &pdf)
            .await
            .ok_or(Error::Internal),
        Ok(pdf) => {
            tracing::error!(path = %pdf.display(), "the office renderer answered a PDF outside its folder");
            Err(Error::Internal)
        }
        // A renderer that cannot be started is the server's fault, not the deck's.
        Err(e @ ExtractError::Worker(_)) => {
            tracing::error!(error = %e, "the office renderer could not be run");
            Err(Error::Internal)
        }
        Err(e @ ExtractError::Invalid { .. }) => {
            let reason = e.to_string();
            app.cache.write(&refused, reason.clone().into_bytes()).await;
            Err(cannot(&reason))
        }
        Err(e) => Err(cannot(&e.to_string())),
    };
    // The profile LibreOffice leaves is many small files: removed off the request's thread.
    let _ = tokio::task::spawn_blocking(move || drop(scratch)).await;
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::app_on_object_store;

    const SHA: &str = "5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef";

    /// A document whose blob is not in the store: fetching it is an error, so an answer
    /// proves nothing was fetched.
    fn missing() -> Document<'static> {
        Document::stored(SHA, "no-such-blob")
    }

    #[tokio::test]
    async fn a_kept_page_is_answered_without_fetching_the_document() {
        let (app, _dir) = app_on_object_store().await;
        let kept = Kept::Page(PdfPage {
            number: 1,
            pages: 3,
            image: None,
            image_error: Some("kept".to_owned()),
            text: "the kept page".to_owned(),
        });
        let max_chars = app.limits.preview_max_chars;
        let entry = format!("pdf-pages/{SHA}/1.{max_chars}.json");
        app.cache.write_json(&entry, &kept).await;

        let document = missing();
        let Kept::Page(page_one) = page(&app, "alice", &document, 1).await.unwrap() else {
            panic!("the kept page was not answered");
        };
        assert_eq!(page_one.text, "the kept page");
        assert!(document.fetched.get().is_none());
        // A page not kept needs the bytes (without them the worker is never asked).
        assert!(page(&app, "alice", &document, 2).await.is_err());
    }

    #[tokio::test]
    async fn a_decks_kept_pdf_or_refusal_is_answered_without_fetching_the_deck() {
        let (app, _dir) = app_on_object_store().await;
        let deck = missing();
        let refused = format!("slides-pdf/{SHA}.refused");
        app.cache.write(&refused, b"not a deck".to_vec()).await;
        let err = slides_pdf(&app, "alice", "d.pptx", &deck)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a deck"), "{err}");

        let scratch = app.cache.scratch_dir().await.unwrap();
        let made = scratch.path().join("deck.pdf");
        std::fs::write(&made, b"%PDF-1.7").unwrap();
        let kept = app
            .cache
            .keep_file(&format!("slides-pdf/{SHA}.pdf"), &made)
            .await
            .unwrap();
        assert_eq!(
            slides_pdf(&app, "alice", "d.pptx", &deck).await.unwrap(),
            kept
        );
        assert!(deck.fetched.get().is_none());
    }
}
