//! PDF text through pdf-extract (on lopdf), in reading order; where it finds none, the text
//! hayro meets while drawing the pages ([`crate::pdf_drawn_text`]).
//!
//! The text of each page apart, for a search, is [`crate::pdf_page_text`]'s.
//!
//! pdf-extract lays characters out by their positions on the page, which
//! gives reading order for ordinary documents. Its output is tidied: trailing
//! spaces go, runs of blank lines shrink to one, and pages are separated by
//! a blank line. Extraction stops as soon as enough text for the preview has
//! been produced, so a long PDF costs little more than its first pages.
//!
//! pdf-extract answers some malformed files with a panic rather than an
//! error; that panic is caught here and becomes an ordinary
//! [`ExtractError::Invalid`]. Forms that draw themselves, or nest deeper than
//! a reader's stack allows, are cut before the text is read
//! ([`crate::pdf_forms`]); a PDF that recurses without end some other way can
//! still overflow the stack, which is why PDFs are read in the worker process.

use std::cell::RefCell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use pdf_extract::{
    ConvertToFmt, Document, Error as PdfError, MediaBox, Object, ObjectId, OutputDev, OutputError,
    PlainTextOutput, Transform,
};

use crate::error::ExtractError;
use crate::pdf_repair::repair_xref;
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
    /// Glyphs drawn, whether or not they map to text: a page that draws glyphs yet yields no
    /// text has text that could not be decoded, not no text.
    glyphs: usize,
    /// Where each page's text starts in the text collected: its number, and the byte offset.
    starts: Vec<(u32, usize)>,
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
        let at = self.sink.0.borrow().text.len();
        self.starts.push((page_num, at));
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
        self.glyphs += 1;
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

/// Loads the PDF and checks it can be read. lopdf tries the empty user
/// password on an encrypted file by itself (many PDFs are "encrypted" only
/// to carry permissions); one that needs a real password is refused. A file
/// whose cross-reference table is missing or broken gets one rebuilt from
/// its objects, as other readers do.
pub(crate) fn load(bytes: &[u8]) -> Result<Document, ExtractError> {
    let doc = match load_once(bytes) {
        Ok(doc) => doc,
        Err(first) => match repair_xref(bytes).map(|fixed| load_once(&fixed)) {
            Some(Ok(doc)) => doc,
            _ => return Err(first),
        },
    };
    if doc.trailer.get(b"Encrypt").is_ok() && !doc.was_encrypted() {
        return Err(ExtractError::Encrypted);
    }
    let mut doc = doc;
    inline_stream_filters(&mut doc);
    crate::pdf_content::make_readable(&mut doc);
    crate::pdf_forms::cut_endless_forms(&mut doc);
    // First to the Identity encodings, then a Unicode map for every Identity font lacking one.
    crate::pdf_predefined_cmaps::transcode_predefined_cmaps(&mut doc);
    crate::pdf_unicode::add_missing_unicode_maps(&mut doc);
    Ok(doc)
}

/// The keys of a stream's dictionary that say how to decode it.
const DECODING_KEYS: [&[u8]; 2] = [b"Filter", b"DecodeParms"];

/// Writes each stream's `/Filter` and `/DecodeParms` in place when they are references (or
/// arrays holding references) to other objects. PDF allows it and some writers do it
/// (`/Filter 5 0 R` with `5 0 obj [/FlateDecode]`), but lopdf's decoder reads the values only
/// in place: without this every such stream stays compressed and its text is lost.
fn inline_stream_filters(doc: &mut Document) {
    let mut resolved: Vec<(ObjectId, &'static [u8], Object)> = Vec::new();
    for (id, object) in &doc.objects {
        let Object::Stream(stream) = object else {
            continue;
        };
        for key in DECODING_KEYS {
            if let Some(value) = stream.dict.get(key).ok().and_then(|v| inlined(doc, v)) {
                resolved.push((*id, key, value));
            }
        }
    }
    for (id, key, value) in resolved {
        if let Some(Object::Stream(stream)) = doc.objects.get_mut(&id) {
            stream.dict.set(key, value);
        }
    }
}

/// `value` with its references followed, one level into an array; `None` when it holds none
/// (or one that leads nowhere, which the decoder then reports as it would have).
fn inlined(doc: &Document, value: &Object) -> Option<Object> {
    let follow = |v: &Object| doc.dereference(v).ok().map(|(_, target)| target.clone());
    match value {
        Object::Reference(_) => {
            let target = follow(value)?;
            Some(match &target {
                Object::Array(items) => Object::Array(
                    items
                        .iter()
                        .map(|i| follow(i).unwrap_or(Object::Null))
                        .collect(),
                ),
                _ => target,
            })
        }
        Object::Array(items) if items.iter().any(|i| matches!(i, Object::Reference(_))) => {
            Some(Object::Array(
                items
                    .iter()
                    .map(|i| follow(i).unwrap_or(Object::Null))
                    .collect(),
            ))
        }
        _ => None,
    }
}

fn load_once(bytes: &[u8]) -> Result<Document, ExtractError> {
    let loaded = catch_unwind(AssertUnwindSafe(|| Document::load_mem(bytes)))
        .map_err(|_| ExtractError::invalid(WHAT, "its structure could not be understood"))?;
    loaded.map_err(|e| match e {
        PdfError::Decryption(_)
        | PdfError::UnsupportedSecurityHandler(_)
        | PdfError::InvalidPassword => ExtractError::Encrypted,
        other => ExtractError::invalid(WHAT, other),
    })
}

/// The text of the PDF, at most `max_chars` characters (cut with `…`). When pdf-extract finds
/// none — lopdf cannot parse the file, its fonts have no Unicode map pdf-extract reads, or the
/// text is in annotations — the text hayro meets while drawing the pages is read instead
/// ([`crate::pdf_drawn_text`]).
pub(crate) fn preview(bytes: &[u8], max_chars: usize) -> Result<String, ExtractError> {
    match load(bytes).and_then(|doc| text_of(&doc, None, max_chars)) {
        Err(e @ (ExtractError::Invalid { .. } | ExtractError::NoTextLayer { .. })) => {
            drawn_or(bytes, e, max_chars)
        }
        read => read,
    }
}

/// The text drawn on the PDF's pages, or (when none is) `first`, pdf-extract's reason; a
/// document whose glyphs were drawn but map to no character has no "no text layer".
fn drawn_or(bytes: &[u8], first: ExtractError, max_chars: usize) -> Result<String, ExtractError> {
    let Some(drawn) = crate::pdf_drawn_text::drawn_text(bytes, None, enough(max_chars)) else {
        return Err(first);
    };
    let text = tidy(&drawn.text);
    if !text.is_empty() {
        return Ok(crate::text::clip(text, max_chars));
    }
    Err(match first {
        ExtractError::NoTextLayer { pages } if drawn.unmapped > 0 => {
            undecoded(drawn.unmapped, pages)
        }
        first => first,
    })
}

/// The text of page `number` of a document hayro has opened, as [`page_text`] gives it: for a
/// page whose text pdf-extract cannot read.
pub(crate) fn drawn_page_text(
    pdf: &hayro::hayro_syntax::Pdf,
    number: u32,
    max_chars: usize,
) -> String {
    let drawn = crate::pdf_drawn_text::text_of(pdf, Some(number), enough(max_chars));
    crate::text::clip(tidy(&drawn.text), max_chars)
}

/// How much text to collect for `max_chars` of preview: more than the budget, since tidying
/// removes some of it.
fn enough(max_chars: usize) -> usize {
    max_chars.saturating_mul(2).saturating_add(256)
}

fn undecoded(glyphs: usize, pages: usize) -> ExtractError {
    ExtractError::invalid(
        WHAT,
        format!(
            "its text could not be decoded: {glyphs} characters on {pages} pages use fonts \
             without a Unicode map"
        ),
    )
}

/// The text of page `number` (from 1) of a loaded PDF, at most `max_chars` characters; empty
/// when the page holds none (the caller shows the page's picture instead).
pub(crate) fn page_text(doc: &Document, number: u32, max_chars: usize) -> String {
    text_of(doc, Some(number), max_chars).unwrap_or_default()
}

/// The text of the whole document (`page: None`) or of one page, tidied and cut to
/// `max_chars`; an error that says why when there is none.
fn text_of(doc: &Document, page: Option<u32>, max_chars: usize) -> Result<String, ExtractError> {
    let gathered = gather(doc, page, max_chars)?;
    let tidy = tidy(&gathered.text);
    if tidy.is_empty() {
        return Err(no_text(doc, gathered.glyphs));
    }
    Ok(if gathered.stopped {
        mark_cut(tidy, max_chars)
    } else {
        crate::text::clip(tidy, max_chars)
    })
}

/// What pdf-extract's layout wrote of a document or a page, untidied.
pub(crate) struct Gathered {
    pub(crate) text: String,
    /// Where each page's text starts in `text` (see [`Pages`]).
    pub(crate) starts: Vec<(u32, usize)>,
    /// The text reached the budget and the rest was not read.
    pub(crate) stopped: bool,
    pub(crate) glyphs: usize,
}

/// Runs pdf-extract's layout over the whole document (`page: None`) or one page, collecting
/// somewhat more than `max_chars` characters at most.
pub(crate) fn gather(
    doc: &Document,
    page: Option<u32>,
    max_chars: usize,
) -> Result<Gathered, ExtractError> {
    let collected = Rc::new(RefCell::new(Collected {
        limit: enough(max_chars),
        ..Collected::default()
    }));
    let sink = Sink(collected.clone());
    let mut out = Pages {
        inner: PlainTextOutput::new(sink.clone()),
        sink,
        pages: 0,
        glyphs: 0,
        starts: Vec::new(),
    };
    let result = catch_unwind(AssertUnwindSafe(|| match page {
        None => pdf_extract::output_doc(doc, &mut out),
        Some(number) => pdf_extract::output_doc_page(doc, &mut out, number),
    }));
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
    Ok(Gathered {
        text,
        starts: out.starts,
        stopped,
        glyphs: out.glyphs,
    })
}

/// Why a document whose tidied text is empty has none: an empty preview would read as "this
/// document is blank".
pub(crate) fn no_text(doc: &Document, glyphs: usize) -> ExtractError {
    match (doc.get_pages().len(), glyphs) {
        (0, _) => ExtractError::invalid(WHAT, "it has no pages"),
        (pages, 0) => ExtractError::NoTextLayer { pages },
        (pages, glyphs) => undecoded(glyphs, pages),
    }
}

/// Trims line ends, keeps at most one blank line in a row, trims the ends.
pub(crate) fn tidy(text: &str) -> String {
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
    fn a_missing_xref_table_is_rebuilt() {
        let pdf = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>\nendobj\n4 0 obj\n<< /Length 44 >>\nstream\nBT /F1 24 Tf 100 700 Td (Rebuilt text) Tj ET\nendstream\nendobj\n5 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n%%EOF\n";
        assert!(load_once(pdf).is_err());
        let fixed = repair_xref(pdf).unwrap();
        assert!(fixed.ends_with(b"%%EOF\n"));
        assert_eq!(preview(pdf, 100).unwrap(), "Rebuilt text");
    }

    #[test]
    fn a_page_without_text_says_there_is_no_text_layer() {
        let blank = b"%PDF-1.4\n\
            1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
            2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n\
            3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] >> endobj\n\
            trailer << /Root 1 0 R >>\n%%EOF";
        let e = preview(blank, 100).unwrap_err();
        assert_eq!(e, ExtractError::NoTextLayer { pages: 1 });
        assert!(e.to_string().starts_with("no text layer (1 pages)"), "{e}");
    }

    #[test]
    fn a_filter_named_by_reference_is_followed() {
        // Object 4's /Filter is `6 0 R`, and object 6 is `[/ASCII85Decode]`.
        let pdf = "%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>\nendobj\n4 0 obj\n<< /Length 67 /Filter 6 0 R >>\nstream\n6<#'\\7PQ#@1a#b0+>GQ(+?(u.+B2ko-q7oeFCfK6+C]U=Eb/ioEb0,uALSa$C*5rE~>\nendstream\nendobj\n5 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n6 0 obj\n[/ASCII85Decode]\nendobj\n%%EOF\n";
        assert_eq!(
            preview(pdf.as_bytes(), 100).unwrap(),
            "Filters by reference"
        );
    }

    #[test]
    fn text_drawn_by_a_form_in_a_font_with_a_predefined_cmap_is_read() {
        // The page draws form X1, which shows JIS codes 0x2422 0x2424 (あい) in a Type0 font
        // encoded by the predefined CMap `H`, over a non-embedded Adobe-Japan1 CIDFont.
        let page = "q /X1 Do Q";
        let form = "BT /F1 24 Tf 72 700 Td <24222424> Tj ET";
        let pdf = format!(
            "%PDF-1.4\n\
             1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
             2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n\
             3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
             /Resources << /XObject << /X1 5 0 R >> >> >> endobj\n\
             4 0 obj << /Length {} >>\nstream\n{page}\nendstream\nendobj\n\
             5 0 obj << /Type /XObject /Subtype /Form /BBox [0 0 612 792] \
             /Resources << /Font << /F1 6 0 R >> >> /Length {} >>\nstream\n{form}\nendstream\nendobj\n\
             6 0 obj << /Type /Font /Subtype /Type0 /BaseFont /Ryumin-Light-H /Encoding /H \
             /DescendantFonts [7 0 R] >> endobj\n\
             7 0 obj << /Type /Font /Subtype /CIDFontType0 /BaseFont /Ryumin-Light \
             /CIDSystemInfo << /Registry (Adobe) /Ordering (Japan1) /Supplement 2 >> >> endobj\n\
             trailer << /Root 1 0 R >>\n%%EOF\n",
            page.len(),
            form.len()
        );
        let text = preview(pdf.as_bytes(), 100).unwrap();
        assert!(text.contains("あい"), "{text:?}");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [
            &b""[..],
            b"%PDF-1.4\n",
            b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF",
        ] {
            let e = preview(bytes, 100).unwrap_err();
            assert!(e.to_string().contains("PDF"), "{e}");
        }
    }
}
