//! PDF pages as a vision model is shown them: each page drawn as a picture, beside its text.
//!
//! A scanned invoice has no text to extract and a chart's numbers are in its drawing, so a
//! model that is handed only a PDF's text misses what the user sent. A page is drawn by hayro
//! (a pure-Rust PDF renderer, chosen by measuring it against poppler's `pdftoppm`; see
//! bench/NOTES.md) at the size a vision model takes, its long edge [`MODEL_MAX_EDGE`] pixels
//! whatever the page's size in points, on white, and written as PNG, or as JPEG when that is
//! smaller (a photograph or a scan), at most [`crate::MODEL_MAX_BYTES`]. Its text is
//! pdf-extract's, as in the document's preview, for that page alone, or where that reader finds
//! none, the text hayro met while drawing it ([`crate::pdf_drawn_text`]).
//!
//! Drawing reads untrusted bytes and can be made slow at will (a page of a million paths), so
//! it runs in the extraction worker under its memory, CPU and time limits. A page that cannot
//! be drawn keeps its text and says why it has no picture; a document that cannot be opened,
//! or a page it does not have, is an error.

use std::panic::{AssertUnwindSafe, catch_unwind};

use hayro::hayro_syntax::{LoadPdfError, Pdf};
use hayro::vello_cpu::color::palette::css::WHITE;
use hayro::{PixmapSettings, RenderCache, RenderSettings};
use image::{DynamicImage, GrayImage, RgbImage};
use serde::{Deserialize, Serialize};

use crate::error::ExtractError;
use crate::model_image::{MODEL_MAX_EDGE, ModelImage, encode_drawing};

/// One page of a PDF as a model is shown it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PdfPage {
    /// The page's number, from 1.
    pub number: u32,
    /// How many pages the document has.
    pub pages: u32,
    /// The page drawn, when it could be.
    pub image: Option<ModelImage>,
    /// Why the page could not be drawn, when it could not.
    pub image_error: Option<String>,
    /// The page's text, at most the preview's budget of characters; empty when the page has
    /// none (a scan, or text drawn as shapes).
    pub text: String,
}

/// Draws page `number` (from 1) of the PDF in `bytes` and reads its text (at most
/// `max_chars` characters). The caller bounds the bytes' size (see
/// [`crate::pdf_page_file`]).
pub fn pdf_page(bytes: &[u8], number: u32, max_chars: usize) -> Result<PdfPage, ExtractError> {
    let pdf = Pdf::new(bytes.to_vec()).map_err(|e| match e {
        LoadPdfError::Decryption(_) => ExtractError::Encrypted,
        LoadPdfError::Invalid => {
            ExtractError::invalid("PDF", "its structure could not be understood")
        }
    })?;
    let pages = u32::try_from(pdf.pages().len()).unwrap_or(u32::MAX);
    if number == 0 || number > pages {
        return Err(ExtractError::NoSuchPage {
            page: number,
            pages,
        });
    }
    let (image, image_error) = match draw(&pdf, number) {
        Ok(image) => (Some(image), None),
        Err(e) => (None, Some(e.to_string())),
    };
    // The text reader has its own parser; a page whose text it cannot read (or a document it
    // cannot open) has the text hayro met while drawing it.
    let text = crate::pdf::load(bytes)
        .map(|doc| crate::pdf::page_text(&doc, number, max_chars))
        .unwrap_or_default();
    let text = if text.is_empty() {
        crate::pdf::drawn_page_text(&pdf, number, max_chars)
    } else {
        text
    };
    Ok(PdfPage {
        number,
        pages,
        image,
        image_error,
        text,
    })
}

fn draw(pdf: &Pdf, number: u32) -> Result<ModelImage, ExtractError> {
    let pages = pdf.pages();
    let page = pages
        .get(number as usize - 1)
        .ok_or(ExtractError::NoSuchPage {
            page: number,
            pages: u32::try_from(pages.len()).unwrap_or(u32::MAX),
        })?;
    // hayro gives every page a size of at least a point each way (an A4 page when it has none).
    let (width, height) = page.render_dimensions();
    let scale = MODEL_MAX_EDGE as f32 / width.max(height);
    // A sliver drawn with its long edge at the model's size would be less than a pixel wide.
    if width.min(height) * scale < 1.0 {
        return Err(ExtractError::invalid(
            "PDF page",
            format!("it measures {width} × {height} points, too narrow to draw"),
        ));
    }
    let cache = RenderCache::new();
    let pixmap = catch_unwind(AssertUnwindSafe(|| {
        hayro::render(
            page,
            &cache,
            &Default::default(),
            &RenderSettings::default(),
            &PixmapSettings {
                x_scale: scale,
                y_scale: scale,
                bg_color: WHITE,
            },
        )
    }))
    .map_err(|_| ExtractError::invalid("PDF page", "its content could not be drawn"))?;
    let (w, h) = (u32::from(pixmap.width()), u32::from(pixmap.height()));
    // Drawn over opaque white, so every pixel is opaque and premultiplied equals straight.
    let rgb: Vec<u8> = pixmap
        .data_as_u8_slice()
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    let rgb = RgbImage::from_raw(w, h, rgb)
        .ok_or_else(|| ExtractError::Worker("a drawn page had the wrong size".to_owned()))?;
    encode_drawing(&greyscale_if_grey(rgb))
}

/// The page as one grey channel when it holds no colour (most text pages): a third of the
/// bytes to encode and to send.
fn greyscale_if_grey(rgb: RgbImage) -> DynamicImage {
    if rgb.pixels().all(|p| p[0] == p[1] && p[1] == p[2]) {
        let (w, h) = rgb.dimensions();
        let grey: Vec<u8> = rgb.pixels().map(|p| p[0]).collect();
        if let Some(grey) = GrayImage::from_raw(w, h, grey) {
            return DynamicImage::ImageLuma8(grey);
        }
    }
    DynamicImage::ImageRgb8(rgb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_test_support::documents::pdf_of;

    fn one_page(width: f32, height: f32, content: &str) -> Vec<u8> {
        pdf_of(&[ferry_test_support::documents::PdfPage {
            width,
            height,
            content,
        }])
    }

    fn decoded(image: &ModelImage) -> DynamicImage {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&image.base64)
            .unwrap();
        image::load_from_memory(&bytes).unwrap()
    }

    #[test]
    fn a_page_is_drawn_at_the_models_size_beside_its_text() {
        let pdf = one_page(
            612.0,
            792.0,
            "BT /F1 24 Tf 72 700 Td (Total due: 1,234.56) Tj ET",
        );
        let page = pdf_page(&pdf, 1, 1000).unwrap();
        assert_eq!((page.number, page.pages), (1, 1));
        assert!(page.text.contains("Total due: 1,234.56"), "{:?}", page.text);
        let image = page.image.expect("the page is drawn");
        assert_eq!(image.height, MODEL_MAX_EDGE);
        assert_eq!(image.width, (612.0 * MODEL_MAX_EDGE as f32 / 792.0) as u32);
        // Black text on white: some pixels are dark, most are white.
        let grey = decoded(&image).to_luma8();
        let dark = grey.pixels().filter(|p| p[0] < 128).count();
        assert!(dark > 100, "{dark} dark pixels");
        assert!(dark < grey.pixels().count() / 10);
    }

    #[test]
    fn a_drawing_without_text_is_a_picture_with_empty_text() {
        // A filled red square and no text: a scan or a chart, as far as text goes.
        let pdf = one_page(200.0, 100.0, "1 0 0 rg 20 20 60 60 re f");
        let page = pdf_page(&pdf, 1, 1000).unwrap();
        assert_eq!(page.text, "");
        let image = decoded(page.image.as_ref().unwrap()).to_rgb8();
        assert_eq!(image.width(), MODEL_MAX_EDGE);
        // The square's middle, at (50, 50) points from the bottom left, is red.
        let s = MODEL_MAX_EDGE as f32 / 200.0;
        let red = image.get_pixel((50.0 * s) as u32, image.height() - (50.0 * s) as u32);
        assert!(red[0] > 200 && red[1] < 60 && red[2] < 60, "{red:?}");
    }

    #[test]
    fn a_page_the_document_does_not_have_is_a_clear_error() {
        let pdf = one_page(100.0, 100.0, "");
        for number in [0, 2, 99] {
            let e = pdf_page(&pdf, number, 1000).unwrap_err();
            assert_eq!(
                e,
                ExtractError::NoSuchPage {
                    page: number,
                    pages: 1
                }
            );
        }
    }

    #[test]
    fn a_huge_page_is_drawn_at_the_models_size() {
        let pdf = one_page(100_000.0, 100_000.0, "0 0 1 rg 0 0 50000 50000 re f");
        let page = pdf_page(&pdf, 1, 1000).unwrap();
        let image = page.image.unwrap();
        assert_eq!(
            (image.width, image.height),
            (MODEL_MAX_EDGE, MODEL_MAX_EDGE)
        );
    }

    #[test]
    fn a_sliver_of_a_page_has_its_text_and_says_why_it_has_no_picture() {
        // A point wide and 10,000 tall: at a long edge of 1,568 pixels, 0.16 of a pixel wide.
        let pdf = one_page(1.0, 10_000.0, "BT /F1 12 Tf 0 9000 Td (hello) Tj ET");
        let page = pdf_page(&pdf, 1, 1000).unwrap();
        assert!(page.image.is_none());
        assert!(page.image_error.unwrap().contains("too narrow to draw"));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [&b""[..], b"%PDF-1.4\n", b"not a pdf at all", &[0xff; 4096]] {
            assert!(pdf_page(bytes, 1, 100).is_err());
        }
    }
}
