//! PDF text through pdf-extract (on lopdf), in reading order.
//!
//! pdf-extract lays characters out by their positions on the page, which
//! gives reading order for ordinary documents. Its output is tidied: trailing
//! spaces go, runs of blank lines shrink to one, and pages are separated by
//! a blank line. Extraction stops as soon as enough text for the preview has
//! been produced, so a long PDF costs little more than its first pages.
//!
//! pdf-extract answers some malformed files with a panic rather than an
//! error; that panic is caught here and becomes an ordinary
//! [`ExtractError::Invalid`]. A PDF that recurses without end can still
//! overflow the stack, which is why PDFs are read in the worker process.

use std::cell::RefCell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use pdf_extract::{
    ConvertToFmt, Document, Error as PdfError, MediaBox, OutputDev, OutputError, PlainTextOutput,
    Transform,
};

use crate::error::ExtractError;
use crate::text::mark_cut;

const WHAT: &str = "PDF";

/// Text collected so far, shared between the layout engine's writer and the
/// page hooks.
#[derive(Debug, Default)]
struct Collected {
    text: String,
    chars: usize,
    limit: usize,
    stopped: bool,
}

#[derive(Debug, Clone)]
struct Sink(Rc<RefCell<Collected>>);

impl fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut c = self.0.borrow_mut();
        if c.chars > c.limit {
            // Enough text: an error here unwinds pdf-extract's loops cleanly.
            c.stopped = true;
            return Err(fmt::Error);
        }
        c.text.push_str(s);
        c.chars += s.chars().count();
        Ok(())
    }
}

impl ConvertToFmt for Sink {
    type Writer = Sink;
    fn convert(self) -> Sink {
        self
    }
}

/// pdf-extract's plain-text layout, plus a blank line between pages.
struct Pages {
    inner: PlainTextOutput<Sink>,
    sink: Sink,
    pages: u32,
}

impl OutputDev for Pages {
    fn begin_page(
        &mut self,
        page_num: u32,
        media_box: &MediaBox,
        art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        if self.pages > 0 {
            fmt::Write::write_str(&mut self.sink, "\n\n")?;
        }
        self.pages += 1;
        self.inner.begin_page(page_num, media_box, art_box)
    }
    fn end_page(&mut self) -> Result<(), OutputError> {
        self.inner.end_page()
    }
    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        spacing: f64,
        font_size: f64,
        char: &str,
    ) -> Result<(), OutputError> {
        self.inner
            .output_character(trm, width, spacing, font_size, char)
    }
    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.inner.begin_word()
    }
    fn end_word(&mut self) -> Result<(), OutputError> {
        self.inner.end_word()
    }
    fn end_line(&mut self) -> Result<(), OutputError> {
        self.inner.end_line()
    }
}

/// Loads the PDF and checks it can be read: decrypted with the empty user
/// password when it is encrypted, refused when that does not work.
fn load(bytes: &[u8]) -> Result<Document, ExtractError> {
    let loaded = catch_unwind(AssertUnwindSafe(|| Document::load_mem(bytes)))
        .map_err(|_| ExtractError::invalid(WHAT, "its structure could not be understood"))?;
    let mut doc = loaded.map_err(|e| match e {
        PdfError::Decryption(_)
        | PdfError::UnsupportedSecurityHandler(_)
        | PdfError::InvalidPassword => ExtractError::Encrypted,
        other => ExtractError::invalid(WHAT, other),
    })?;
    if doc.is_encrypted() {
        // Many PDFs are "encrypted" only to carry permissions, with an empty
        // password for reading; anything else cannot be previewed.
        let ok = catch_unwind(AssertUnwindSafe(|| doc.decrypt("")))
            .map(|r| r.is_ok())
            .unwrap_or(false);
        if !ok {
            return Err(ExtractError::Encrypted);
        }
    }
    Ok(doc)
}

/// The text of the PDF, at most `max_chars` characters (cut with `…`).
pub(crate) fn preview(bytes: &[u8], max_chars: usize) -> Result<String, ExtractError> {
    let doc = load(bytes)?;
    // Collect more than the budget: tidying removes some of it.
    let collected = Rc::new(RefCell::new(Collected {
        limit: max_chars.saturating_mul(2).saturating_add(256),
        ..Collected::default()
    }));
    let sink = Sink(collected.clone());
    let mut out = Pages {
        inner: PlainTextOutput::new(sink.clone()),
        sink,
        pages: 0,
    };
    let result = catch_unwind(AssertUnwindSafe(|| pdf_extract::output_doc(&doc, &mut out)));
    let stopped = collected.borrow().stopped;
    match result {
        Err(_) if collected.borrow().chars == 0 => {
            return Err(ExtractError::invalid(
                WHAT,
                "its content could not be understood",
            ));
        }
        // Text gathered before a later page failed is still worth showing.
        Err(_) => {}
        Ok(Err(_)) if stopped => {}
        Ok(Err(e)) if collected.borrow().chars == 0 => {
            return Err(ExtractError::invalid(WHAT, e));
        }
        Ok(_) => {}
    }
    let text = std::mem::take(&mut collected.borrow_mut().text);
    let tidy = tidy(&text);
    Ok(if stopped {
        mark_cut(tidy, max_chars)
    } else {
        crate::text::clip(tidy, max_chars)
    })
}

/// Trims line ends, keeps at most one blank line in a row, trims the ends.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_collapses_blank_runs() {
        assert_eq!(tidy("\n\n a  \n\n\n\nb\nc   \n\n"), " a\n\nb\nc");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [
            &b""[..],
            b"%PDF-1.4\n",
            b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF",
        ] {
            match preview(bytes, 100) {
                Ok(text) => assert!(text.is_empty()),
                Err(e) => assert!(e.to_string().contains("PDF"), "{e}"),
            }
        }
    }
}
