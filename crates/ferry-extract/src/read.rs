//! The in-process readers: from a file name and its bytes to a preview or an
//! HTML rendering. These run in whatever process calls them; for untrusted
//! documents use [`crate::Extractor`], which runs them in the worker.

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ExtractError;
use crate::html;
use crate::kind::{Format, format_of};
use crate::limits::{Limits, read_all};
use crate::model_image::{ModelImage, check_pixels, model_image};
use crate::pdf_pages::{PdfPage, pdf_page};
use crate::text::{decode_text, mark_cut};
use crate::{csvfile, docx, pdf, pptx, sheet};

/// What an upload's preview holds (docs/reference/uploads.md): the text the model reads, and
/// for images their size.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// The text preview, at most `max_chars` characters; `None` for images
    /// and for types that have no text preview.
    pub text: Option<String>,
    /// Image width in pixels.
    pub width: Option<u32>,
    /// Image height in pixels.
    pub height: Option<u32>,
}

impl Preview {
    fn text(text: String) -> Self {
        Preview {
            text: Some(text),
            ..Preview::default()
        }
    }
}

/// Whether the file's type is read in the calling process by
/// [`crate::Extractor`]: images (a header read by imagesize) and plain text
/// (a bounded prefix, decoded). Everything else goes to the worker.
pub(crate) fn preview_in_process(file_name: &str) -> bool {
    matches!(
        format_of(file_name),
        Format::Image
            | Format::Svg
            | Format::Text
            | Format::Markdown
            | Format::Json
            | Format::Other
    )
}

/// Makes the preview of the file at `path`, in this process.
pub fn preview_file(
    path: &Path,
    file_name: &str,
    max_chars: usize,
    limits: &Limits,
) -> Result<Preview, ExtractError> {
    let file = File::open(path).map_err(|e| ExtractError::io(&e))?;
    preview_reader(file, file_name, max_chars, limits)
}

/// Makes the preview of a document held in memory, in this process.
pub fn preview_bytes(
    bytes: &[u8],
    file_name: &str,
    max_chars: usize,
    limits: &Limits,
) -> Result<Preview, ExtractError> {
    preview_reader(Cursor::new(bytes), file_name, max_chars, limits)
}

/// Makes the preview of a document, in this process. The reader is chosen by
/// `file_name`'s extension (see [`crate::preview_kind`]).
pub fn preview_reader<R: Read + Seek>(
    mut reader: R,
    file_name: &str,
    max_chars: usize,
    limits: &Limits,
) -> Result<Preview, ExtractError> {
    Ok(match format_of(file_name) {
        Format::Pdf => Preview::text(pdf::preview(&read_all(reader, limits)?, max_chars)?),
        Format::Docx => Preview::text(docx::preview(reader, max_chars, limits)?),
        Format::Xlsx => Preview::text(sheet::preview(reader, false, max_chars, limits)?),
        Format::Xls => Preview::text(sheet::preview(reader, true, max_chars, limits)?),
        Format::Pptx => Preview::text(pptx::preview(reader, max_chars, limits)?),
        Format::Csv => Preview::text(csvfile::preview(reader, false, max_chars, limits)?),
        Format::Tsv => Preview::text(csvfile::preview(reader, true, max_chars, limits)?),
        Format::Markdown | Format::Json | Format::Text => {
            // A UTF-8 character is at most four bytes: this prefix always
            // holds more than `max_chars` characters when the file does.
            let want = max_chars
                .saturating_mul(4)
                .saturating_add(4)
                .min(usize::try_from(limits.max_file_bytes).unwrap_or(usize::MAX));
            let (bytes, more) = read_prefix(&mut reader, want)?;
            let text = decode_text(&bytes)?;
            let over = text.char_indices().nth(max_chars).is_some();
            Preview::text(if more || over {
                mark_cut(text, max_chars)
            } else {
                text
            })
        }
        Format::Image => {
            let size = imagesize::reader_size(BufReader::new(reader))
                .map_err(|e| ExtractError::invalid("image", e))?;
            check_pixels(size.width as u64, size.height as u64, limits)?;
            Preview {
                text: None,
                width: u32::try_from(size.width).ok(),
                height: u32::try_from(size.height).ok(),
            }
        }
        Format::Svg | Format::Other => Preview::default(),
    })
}

/// Renders the file at `path` as a sanitized HTML document, in this process.
pub fn render_html_file(
    path: &Path,
    file_name: &str,
    limits: &Limits,
) -> Result<String, ExtractError> {
    if crate::preview_kind(file_name) != crate::PreviewKind::Html {
        return Err(no_html());
    }
    let file = File::open(path).map_err(|e| ExtractError::io(&e))?;
    render_html_reader(file, file_name, limits)
}

/// Renders a document held in memory as a sanitized HTML document, in this
/// process.
pub fn render_html_bytes(
    bytes: &[u8],
    file_name: &str,
    limits: &Limits,
) -> Result<String, ExtractError> {
    render_html_reader(Cursor::new(bytes), file_name, limits)
}

/// Renders a document as a complete, self-contained, sanitized HTML
/// document, in this process. Only types whose [`crate::preview_kind`] is
/// `html` have a rendering; the others give [`ExtractError::Unsupported`].
pub fn render_html_reader<R: Read + Seek>(
    mut reader: R,
    file_name: &str,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let (class, body) = match format_of(file_name) {
        Format::Docx => ("docx", docx::html_body(reader, limits)?),
        Format::Xlsx => ("sheet", sheet::html_body(reader, false, limits)?),
        Format::Xls => ("sheet", sheet::html_body(reader, true, limits)?),
        Format::Pptx => ("pptx", pptx::html_body(reader, limits)?),
        Format::Csv => ("csv", csvfile::html_body(reader, false, limits)?),
        Format::Tsv => ("csv", csvfile::html_body(reader, true, limits)?),
        format @ (Format::Markdown | Format::Json | Format::Text) => {
            let (bytes, more) = read_prefix(&mut reader, limits.html_text_bytes)?;
            let text = decode_text(&bytes)?;
            match format {
                Format::Markdown => ("markdown", html::markdown_body(&text, more, limits)),
                Format::Json => ("json", html::json_body(&text, more, limits)),
                _ => ("text", html::text_body(&text, more, limits)),
            }
        }
        Format::Pdf | Format::Image | Format::Svg | Format::Other => return Err(no_html()),
    };
    Ok(html::document(file_name, class, &body))
}

/// Makes the image at `path` ready for a model ([`crate::model_image`]), in this process.
pub fn model_image_file(path: &Path, limits: &Limits) -> Result<ModelImage, ExtractError> {
    let file = File::open(path).map_err(|e| ExtractError::io(&e))?;
    model_image(&read_all(file, limits)?, limits)
}

/// The text of the document at `path` as a search reads it ([`crate::document_text_reader`]),
/// in this process.
pub fn document_text_file(
    path: &Path,
    file_name: &str,
    limits: &Limits,
) -> Result<crate::DocumentText, ExtractError> {
    let file = File::open(path).map_err(|e| ExtractError::io(&e))?;
    crate::searchable::document_text_reader(BufReader::new(file), file_name, limits)
}

/// Draws page `number` of the PDF at `path` and reads its text, in this process
/// ([`crate::pdf_page`]).
pub fn pdf_page_file(
    path: &Path,
    number: u32,
    max_chars: usize,
    limits: &Limits,
) -> Result<PdfPage, ExtractError> {
    let file = File::open(path).map_err(|e| ExtractError::io(&e))?;
    pdf_page(&read_all(file, limits)?, number, max_chars)
}

fn no_html() -> ExtractError {
    ExtractError::Unsupported("there is no HTML preview for this kind of file".to_owned())
}

/// Reads at most `max` bytes; the flag says whether the file has more.
fn read_prefix<R: Read>(reader: &mut R, max: usize) -> Result<(Vec<u8>, bool), ExtractError> {
    let mut buf = Vec::with_capacity(max.min(1 << 20) + 1);
    reader
        .take((max as u64).saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| ExtractError::io(&e))?;
    let more = buf.len() > max;
    buf.truncate(max);
    Ok((buf, more))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(bytes: &[u8], name: &str, max: usize) -> String {
        preview_bytes(bytes, name, max, &Limits::default())
            .unwrap()
            .text
            .unwrap()
    }

    #[test]
    fn text_files_give_their_first_characters() {
        assert_eq!(text_of(b"hello world", "a.txt", 100), "hello world");
        assert_eq!(text_of(b"hello world", "a.md", 5), "hell…");
        assert_eq!(text_of("ééééé".as_bytes(), "a.txt", 5), "ééééé");
        assert_eq!(text_of("éééééé".as_bytes(), "a.txt", 5), "éééé…");
        assert_eq!(text_of(b"", "a.txt", 5), "");
    }

    #[test]
    fn any_max_chars_is_accepted() {
        for name in ["a.txt", "a.csv", "a.json"] {
            assert_eq!(text_of(b"x,y", name, usize::MAX).replace(" | ", ","), "x,y");
        }
    }

    #[test]
    fn types_without_text_have_no_preview() {
        let p = preview_bytes(b"whatever", "a.zip", 10, &Limits::default()).unwrap();
        assert_eq!(p, Preview::default());
        let p = preview_bytes(b"<svg/>", "a.svg", 10, &Limits::default()).unwrap();
        assert_eq!(p, Preview::default());
    }

    #[test]
    fn image_sizes_come_from_the_header() {
        // A 1x1 GIF.
        let gif = b"GIF89a\x03\x00\x02\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
        let p = preview_bytes(gif, "dot.gif", 10, &Limits::default()).unwrap();
        assert_eq!((p.text, p.width, p.height), (None, Some(3), Some(2)));
        assert!(preview_bytes(b"not an image", "x.png", 10, &Limits::default()).is_err());
    }

    #[test]
    fn html_source_is_shown_as_text() {
        let html = render_html_bytes(
            b"<script>alert(1)</script><img src=x onerror=alert(1)>",
            "page.html",
            &Limits::default(),
        )
        .unwrap();
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!html.contains("<script"));
        assert!(!html.contains("<img"));
    }

    #[test]
    fn long_text_rendering_is_cut_with_a_note() {
        let limits = Limits {
            html_text_bytes: 10,
            ..Limits::default()
        };
        let html = render_html_bytes(b"0123456789abcdef", "a.log", &limits).unwrap();
        assert!(html.contains("<pre>0123456789</pre>"), "{html}");
        assert!(html.contains("only its beginning is shown"));
    }

    #[test]
    fn no_html_for_pdf_images_and_others() {
        for name in ["a.pdf", "a.png", "a.svg", "a.bin"] {
            assert!(matches!(
                render_html_bytes(b"x", name, &Limits::default()),
                Err(ExtractError::Unsupported(_))
            ));
        }
    }
}
