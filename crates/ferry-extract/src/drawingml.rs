//! DrawingML text, the markup slides and notes pages write their text in.

use crate::text::push_capped;

/// Most bytes of text kept of one paragraph: slides hold short texts, and
/// this bounds a crafted one.
pub(crate) const PARA_CAP: usize = 64 * 1024;

/// The text of DrawingML paragraphs (`a:p`, its runs' `a:t`, `a:br` line breaks), gathered
/// from the events a slide's or a notes page's reader meets.
#[derive(Debug, Default)]
pub(crate) struct Paragraphs {
    para: Option<String>,
    in_text: bool,
}

impl Paragraphs {
    /// An element opened: a paragraph, or a run's text.
    pub(crate) fn start(&mut self, name: &[u8]) {
        match name {
            b"p" => self.para = Some(String::new()),
            b"t" => self.in_text = true,
            _ => {}
        }
    }

    /// An empty element: a line break inside the paragraph.
    pub(crate) fn empty(&mut self, name: &[u8]) {
        if name == b"br"
            && let Some(p) = self.para.as_mut()
        {
            p.push('\n');
        }
    }

    pub(crate) fn text(&mut self, text: &str) {
        if self.in_text
            && let Some(p) = self.para.as_mut()
        {
            push_capped(p, text, PARA_CAP);
        }
    }

    /// An element closed: a paragraph's text when it was the paragraph.
    pub(crate) fn end(&mut self, name: &[u8]) -> Option<String> {
        match name {
            b"t" => {
                self.in_text = false;
                None
            }
            b"p" => self.para.take(),
            _ => None,
        }
    }
}
