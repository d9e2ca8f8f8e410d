//! A PDF's text where the first reader (pdf-extract) finds none: the text met while drawing the
//! pages is read instead, for the preview and for a page's text beside its image.

mod common;

use common::pdf_from_objects;
use ferry_extract::{ExtractError, Limits, pdf_page, preview_bytes};

/// A page with no content of its own and one free-text note whose appearance says `said`:
/// text that lives only in an annotation, as form fields' does.
fn note_saying(said: &str) -> Vec<u8> {
    let content = format!("BT /F1 18 Tf 5 40 Td ({said}) Tj ET");
    let form = format!(
        "<< /Type /XObject /Subtype /Form /BBox [0 0 280 90] \
         /Resources << /Font << /F1 5 0 R >> >> /Length {} >>\nstream\n{content}\nendstream",
        content.len()
    );
    pdf_from_objects(&[
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] /Annots [4 0 R] >>",
        b"<< /Type /Annot /Subtype /FreeText /Rect [10 10 290 100] /AP << /N 6 0 R >> >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        form.as_bytes(),
    ])
}

#[test]
fn text_that_lives_only_in_a_note_is_previewed() {
    let pdf = note_saying("Said in a note");
    let preview = preview_bytes(&pdf, "note.pdf", 100, &Limits::default()).unwrap();
    assert_eq!(preview.text.as_deref(), Some("Said in a note"));
}

#[test]
fn a_pages_text_beside_its_image_comes_from_the_drawing_too() {
    let pdf = note_saying("Said in a note");
    let page = pdf_page(&pdf, 1, 100).unwrap();
    assert_eq!(page.text, "Said in a note");
    assert!(page.image.is_some());
}

#[test]
fn a_page_with_nothing_drawn_as_text_still_has_no_text_layer() {
    let pdf = pdf_from_objects(&[
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] /Contents 4 0 R >>",
        b"<< /Length 22 >>\nstream\n0 0 m 100 100 l S 1 w\nendstream",
    ]);
    let err = preview_bytes(&pdf, "lines.pdf", 100, &Limits::default()).unwrap_err();
    assert_eq!(err, ExtractError::NoTextLayer { pages: 1 });
}

#[test]
fn a_long_drawn_text_is_cut_to_the_budget() {
    let pdf = note_saying(&"word ".repeat(40));
    let preview = preview_bytes(&pdf, "note.pdf", 20, &Limits::default()).unwrap();
    let text = preview.text.unwrap();
    assert_eq!(text.chars().count(), 20, "{text}");
    assert!(text.ends_with('…'), "{text}");
}
