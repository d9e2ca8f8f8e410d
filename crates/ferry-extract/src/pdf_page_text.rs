//! The text of each page of a PDF apart, as a search reads it ([`crate::searchable`]): one run
//! of the text reader's layout over the whole document, cut where each page began.

use crate::error::ExtractError;
use crate::pdf::{drawn_page_text, gather, load, no_text, tidy};

/// The text of each page of the PDF in `bytes` (numbered from 1), tidied, in all at most
/// `max_chars` characters: pages past the budget are left out, and the flag says so. A page
/// without text is left out; a document where pdf-extract finds none has the text hayro meets
/// while drawing each page, as the preview does.
pub(crate) fn pages_text(
    bytes: &[u8],
    max_chars: usize,
) -> Result<(Vec<(u32, String)>, bool), ExtractError> {
    let read = load(bytes).and_then(|doc| {
        let gathered = gather(&doc, None, max_chars)?;
        let mut pages = Vec::new();
        for (i, &(number, from)) in gathered.starts.iter().enumerate() {
            let to = gathered
                .starts
                .get(i + 1)
                .map_or(gathered.text.len(), |next| next.1);
            let text = tidy(gathered.text.get(from..to).unwrap_or_default());
            if !text.is_empty() {
                pages.push((number, text));
            }
        }
        if pages.is_empty() {
            return Err(no_text(&doc, gathered.glyphs));
        }
        Ok((pages, gathered.stopped))
    });
    match read {
        Err(first @ (ExtractError::Invalid { .. } | ExtractError::NoTextLayer { .. })) => {
            drawn_pages_text(bytes, first, max_chars)
        }
        read => read,
    }
}

/// Each page's drawn text, for a document whose text pdf-extract cannot read; `first` when
/// none of them has any.
fn drawn_pages_text(
    bytes: &[u8],
    first: ExtractError,
    max_chars: usize,
) -> Result<(Vec<(u32, String)>, bool), ExtractError> {
    let Ok(pdf) = hayro::hayro_syntax::Pdf::new(bytes.to_vec()) else {
        return Err(first);
    };
    let count = u32::try_from(pdf.pages().len()).unwrap_or(u32::MAX);
    let (mut pages, mut left) = (Vec::new(), max_chars);
    for number in 1..=count {
        if left == 0 {
            return Ok((pages, true));
        }
        let text = drawn_page_text(&pdf, number, left);
        left = left.saturating_sub(text.chars().count());
        if !text.is_empty() {
            pages.push((number, text));
        }
    }
    if pages.is_empty() {
        return Err(first);
    }
    Ok((pages, false))
}
