//! A PDF's text as hayro meets it while drawing the pages: the second reader of a PDF's text.
//!
//! pdf-extract (over lopdf) reads most PDFs' text, but gives up on files lopdf cannot parse and
//! on fonts whose codes it cannot map to Unicode, and it never reads annotations (form fields,
//! free-text notes), which are drawn from appearance streams of their own. hayro, which draws
//! the page images, parses more of what real files hold, maps a font's codes to Unicode through
//! its ToUnicode map, its glyph names or its font program, and draws annotations; it hands every
//! glyph it draws to a device, with where it goes. [`Glyphs`] is such a device: it keeps each
//! glyph's text, position, size and advance, and [`lay_out`] writes them as lines in the order
//! they were drawn (as `pdftotext -raw` does), with a space where a gap is wider than a fifth
//! of the text's size and a new line where the baseline moves.
//!
//! It runs when the first reader finds no text, so a scan still says it has no text layer only
//! when nothing on its pages was drawn as text.

use std::panic::{AssertUnwindSafe, catch_unwind};

use hayro::hayro_interpret::font::{Glyph, GlyphRun};
use hayro::hayro_interpret::hayro_cmap::BfString;
use hayro::hayro_interpret::hayro_syntax::Pdf;
use hayro::hayro_interpret::hayro_syntax::page::Page;
use hayro::hayro_interpret::kurbo::{Affine, BezPath, Point, Vec2};
use hayro::hayro_interpret::{
    BlendMode, ClipPath, Context, Device, DrawMode, DrawProps, Image, ImageDrawProps,
    InterpreterCache, InterpreterSettings, RectExt, SoftMask, TransformExt, interpret_page,
};

/// A glyph's units per em: hayro places glyphs in a space of 1,000 units to the em.
const UNITS_PER_EM: f64 = 1000.0;

/// The most pages read for a whole document's text: a scan of a thousand pages, which has
/// none, is not drawn a thousand times to say so.
const MAX_PAGES: usize = 100;

/// What the drawn glyphs of some pages said.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct DrawnText {
    /// The text, a line per baseline.
    pub(crate) text: String,
    /// Glyphs drawn whose text no map gave.
    pub(crate) unmapped: usize,
}

/// The text drawn on the pages of the PDF in `bytes` (the first [`MAX_PAGES`], or only page
/// `number`, from 1), stopping once `limit` characters are read; `None` when hayro cannot open
/// the document.
pub(crate) fn drawn_text(bytes: &[u8], number: Option<u32>, limit: usize) -> Option<DrawnText> {
    let pdf = Pdf::new(bytes.to_vec()).ok()?;
    Some(text_of(&pdf, number, limit))
}

/// [`drawn_text`] of a document hayro has opened.
pub(crate) fn text_of(pdf: &Pdf, number: Option<u32>, limit: usize) -> DrawnText {
    let pages = pdf.pages();
    let chosen: Vec<&Page<'_>> = match number {
        Some(n) => (n as usize)
            .checked_sub(1)
            .and_then(|i| pages.get(i))
            .into_iter()
            .collect(),
        None => pages.iter().take(MAX_PAGES).collect(),
    };
    let mut out = DrawnText::default();
    let cache = InterpreterCache::new();
    let mut read = 0;
    for page in chosen {
        if read >= limit {
            break;
        }
        let mut glyphs = Glyphs {
            room: limit - read,
            ..Glyphs::default()
        };
        let mut context = Context::new(
            page.initial_transform(true).to_kurbo(),
            page.intersected_crop_box().to_kurbo(),
            &cache,
            page.xref(),
            InterpreterSettings::default(),
        );
        // A page the interpreter cannot finish still gave the glyphs drawn before it stopped.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            interpret_page(page, &mut context, &mut glyphs);
        }));
        out.unmapped += glyphs.unmapped;
        read += glyphs.placed.len();
        let page_text = lay_out(&glyphs.placed);
        if !page_text.is_empty() {
            if !out.text.is_empty() {
                out.text.push_str("\n\n");
            }
            out.text.push_str(&page_text);
        }
    }
    out
}

/// One glyph as drawn: its text, where its baseline starts and ends, and its size.
#[derive(Debug, Clone, PartialEq)]
struct Placed {
    text: String,
    origin: Point,
    end: Point,
    /// The em's height on the page, in points.
    em: f64,
    /// The baseline's direction, of length 1.
    along: Vec2,
}

/// The device that keeps what the glyphs say and draws nothing.
#[derive(Debug, Default)]
struct Glyphs {
    placed: Vec<Placed>,
    unmapped: usize,
    /// How many more glyphs to keep: a page that draws millions (through nested forms, say)
    /// costs the interpreter's time, not memory past what the preview can show.
    room: usize,
}

impl Glyphs {
    fn keep(&mut self, glyph: &Glyph<'_>, to_page: Affine) {
        if self.placed.len() >= self.room {
            return;
        }
        let origin = to_page * Point::ORIGIN;
        let up = to_page * Point::new(0.0, UNITS_PER_EM) - origin;
        let right = to_page * Point::new(UNITS_PER_EM, 0.0) - origin;
        let em = up.hypot();
        if !(em.is_finite() && em > 0.0 && right.hypot() > 0.0) {
            return;
        }
        let Some(text) = glyph.as_unicode().map(|t| match t {
            BfString::Char(c) => c.to_string(),
            BfString::String(s) => s,
        }) else {
            self.unmapped += 1;
            return;
        };
        let advance = match glyph {
            Glyph::Outline(g) => g.advance_width(),
            Glyph::Type3(g) => g.advance_width(),
        }
        .map_or(UNITS_PER_EM / 2.0, f64::from);
        let placed = Placed {
            text,
            origin,
            end: to_page * Point::new(advance, 0.0),
            em,
            along: right / right.hypot(),
        };
        // Text drawn twice in place (filled then stroked, or a bold made by overprinting) is
        // read once.
        let again = self.placed.last().is_some_and(|last| {
            last.text == placed.text && (last.origin - placed.origin).hypot() < 0.1 * em
        });
        if !again {
            self.placed.push(placed);
        }
    }
}

impl<'a> Device<'a> for Glyphs {
    fn draw_glyph_run(&mut self, run: &GlyphRun<'_, 'a>, props: DrawProps<'a>, _: &DrawMode) {
        for glyph in run.glyphs() {
            self.keep(glyph, props.transform * glyph.transform());
        }
    }
    fn draw_path(&mut self, _: &BezPath, _: DrawProps<'a>, _: &DrawMode) {}
    fn push_clip_path(&mut self, _: &ClipPath) {}
    fn push_transparency_group(&mut self, _: f32, _: Option<SoftMask<'a>>, _: BlendMode) {}
    fn draw_image(&mut self, _: Image<'a, '_>, _: ImageDrawProps<'a>) {}
    fn pop_clip(&mut self) {}
    fn pop_transparency_group(&mut self) {}
}

/// The glyphs as lines of text, in the order they were drawn.
fn lay_out(glyphs: &[Placed]) -> String {
    let mut out = String::new();
    let mut previous: Option<&Placed> = None;
    for glyph in glyphs {
        if let Some(prev) = previous {
            // Distances in ems of the text before: across its baseline, and along it from
            // where that glyph ended.
            let across = (glyph.origin - prev.origin).cross(prev.along) / prev.em;
            let gap = (glyph.origin - prev.end).dot(prev.along) / prev.em;
            let spaced = |s: &str| s.chars().all(char::is_whitespace);
            if across.abs() > 0.5 || gap < -2.0 {
                out.push('\n');
            } else if gap > 0.2 && !spaced(&prev.text) && !spaced(&glyph.text) {
                out.push(' ');
            }
        }
        out.push_str(&glyph.text);
        previous = Some(glyph);
    }
    out.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_test_support::documents::{letter_page_saying, letter_pdf};

    fn glyph(text: &str, x: f64, y: f64, size: f64) -> Placed {
        Placed {
            text: text.to_owned(),
            origin: Point::new(x, y),
            end: Point::new(x + size / 2.0, y),
            em: size,
            along: Vec2::new(1.0, 0.0),
        }
    }

    #[test]
    fn glyphs_on_one_baseline_make_words_and_a_moved_baseline_a_new_line() {
        let placed = [
            glyph("H", 0.0, 100.0, 10.0),
            glyph("i", 5.0, 100.0, 10.0),
            // A gap of 5 points (half an em) after "i" ends: a space.
            glyph("y", 15.0, 100.0, 10.0),
            glyph("o", 20.0, 100.0, 10.0),
            // The next line, 12 points down.
            glyph("n", 0.0, 112.0, 10.0),
            glyph("e", 5.0, 112.0, 10.0),
            glyph("w", 10.0, 112.0, 10.0),
        ];
        assert_eq!(lay_out(&placed), "Hi yo\nnew");
    }

    #[test]
    fn a_space_drawn_as_a_glyph_is_not_doubled() {
        let placed = [
            glyph("a", 0.0, 0.0, 10.0),
            glyph(" ", 5.0, 0.0, 10.0),
            glyph("b", 20.0, 0.0, 10.0),
        ];
        assert_eq!(lay_out(&placed), "a b");
    }

    #[test]
    fn the_text_of_a_drawn_page_is_read() {
        let pdf = letter_pdf(&[letter_page_saying("Drawn text reads back")]);
        let read = drawn_text(&pdf, None, 1000).unwrap();
        assert_eq!(read.text, "Drawn text reads back");
        assert_eq!(read.unmapped, 0);
        assert_eq!(drawn_text(&pdf, Some(1), 1000).unwrap().text, read.text);
    }

    #[test]
    fn what_hayro_cannot_open_is_none() {
        assert_eq!(drawn_text(b"not a pdf", None, 100), None);
    }
}
