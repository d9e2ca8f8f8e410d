//! Markdown rendered for display (docs/reference/web-ui.md, "Markdown"): agents write their
//! messages in Markdown, and a client that shows them asks for sanitized HTML, rendered here by
//! the renderer the file previews use (`ferry_extract::markdown_html`), so a message and a
//! Markdown file obey one set of rules.

use crate::error::{Error, Result};
use crate::events::MAX_EVENT_BYTES;

/// Texts one request renders at most.
pub const MAX_TEXTS: usize = 200;

/// Characters one text may hold: as many as an event's bytes ([`MAX_EVENT_BYTES`]), so that
/// every message fits, however it is written.
pub const MAX_TEXT_CHARS: usize = MAX_EVENT_BYTES;

/// Each text as a sanitized HTML fragment, in order.
pub async fn render(texts: Vec<String>) -> Result<Vec<String>> {
    if texts.len() > MAX_TEXTS {
        return Err(Error::invalid_request(format!(
            "at most {MAX_TEXTS} texts are rendered at once; this request has {}",
            texts.len()
        )));
    }
    if let Some(i) = texts
        .iter()
        .position(|t| t.len() > MAX_TEXT_CHARS && t.chars().count() > MAX_TEXT_CHARS)
    {
        return Err(Error::invalid_request(format!(
            "text {i} is longer than {MAX_TEXT_CHARS} characters"
        )));
    }
    // Parsing and sanitizing is CPU work: it runs beside the request handlers, not on them.
    tokio::task::spawn_blocking(move || {
        texts
            .iter()
            .map(|t| ferry_extract::markdown_html(t))
            .collect()
    })
    .await
    .map_err(Error::internal)
}
