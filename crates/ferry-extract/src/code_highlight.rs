//! Syntax highlighting of Markdown's fenced code blocks, by syntect with its bundled grammars
//! (those of Sublime Text: Rust, Python, JavaScript, SQL, shell, JSON, YAML, C, Go, …).
//!
//! A highlighted block is the escaped code in `<span class="hl-…">` runs, one class per scope
//! part (`hl-keyword hl-control`, `hl-string hl-quoted`, …), so that colours come from the page's
//! style sheet and follow its theme; the fragment carries no colour and no style attribute.
//! Highlighting costs time that a hostile text could make large, so it is bounded: a block over
//! [`MAX_BLOCK_BYTES`], or blocks past [`MAX_TEXT_BYTES`] in one text, are shown plain.

use std::sync::OnceLock;
use syntect::html::{ClassStyle, ClassedHTMLGenerator};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

/// The largest code block that is highlighted.
pub(crate) const MAX_BLOCK_BYTES: usize = 32 * 1024;
/// Code highlighted in one text at most; later blocks are plain.
pub(crate) const MAX_TEXT_BYTES: usize = 128 * 1024;

/// The prefix of every class a highlighted block's spans carry.
pub(crate) const CLASS_PREFIX: &str = "hl-";

/// The grammars, read once (tens of milliseconds) on the first block that needs them.
fn syntaxes() -> &'static SyntaxSet {
    static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
    SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// What one text may still spend on highlighting.
#[derive(Debug)]
pub(crate) struct Budget {
    left: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            left: MAX_TEXT_BYTES,
        }
    }
}

impl Budget {
    /// `code` as highlighted HTML (the inside of its `<code>` element), when `language` names
    /// a grammar and the block fits the budget; `None` leaves it to be shown plain.
    pub(crate) fn highlight(&mut self, language: &str, code: &str) -> Option<String> {
        if language.is_empty() || code.len() > MAX_BLOCK_BYTES || code.len() > self.left {
            return None;
        }
        let syntaxes = syntaxes();
        let syntax = syntaxes.find_syntax_by_token(language)?;
        self.left -= code.len();
        let mut html = ClassedHTMLGenerator::new_with_class_style(
            syntax,
            syntaxes,
            ClassStyle::SpacedPrefixed {
                prefix: CLASS_PREFIX,
            },
        );
        for line in LinesWithEndings::from(code) {
            html.parse_html_for_line_which_includes_newline(line).ok()?;
        }
        Some(html.finalize())
    }
}

/// Markdown events with each fenced code block of a known language replaced by its highlighted
/// HTML (`<pre><code class="language-NAME">…</code></pre>`, as the renderer writes a block);
/// every other event passes unchanged.
pub(crate) fn highlighted<'a>(
    events: impl Iterator<Item = pulldown_cmark::Event<'a>>,
) -> impl Iterator<Item = pulldown_cmark::Event<'a>> {
    use pulldown_cmark::{CodeBlockKind, CowStr, Event, Tag, TagEnd};
    let mut budget = Budget::default();
    // The block being read: its opening event, its language and its text events.
    let mut block: Option<(Event<'a>, String, Vec<Event<'a>>)> = None;
    events.flat_map(move |event| match (&mut block, event) {
        (None, Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)))) => {
            let language = info.split_whitespace().next().unwrap_or("").to_owned();
            let start = Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)));
            block = Some((start, language, Vec::new()));
            Vec::new()
        }
        (Some(_), Event::End(TagEnd::CodeBlock)) => {
            let (start, language, texts) = block.take().expect("a block is open");
            let code: String = texts
                .iter()
                .filter_map(|e| match e {
                    Event::Text(text) => Some(text.as_ref()),
                    _ => None,
                })
                .collect();
            match budget.highlight(&language, &code) {
                Some(spans) if is_language_name(&language) => {
                    let mut html = String::with_capacity(spans.len() + language.len() + 40);
                    html.push_str("<pre><code class=\"language-");
                    html.push_str(&language);
                    html.push_str("\">");
                    html.push_str(&spans);
                    html.push_str("</code></pre>\n");
                    vec![Event::Html(CowStr::from(html))]
                }
                _ => {
                    let mut events = Vec::with_capacity(texts.len() + 2);
                    events.push(start);
                    events.extend(texts);
                    events.push(Event::End(TagEnd::CodeBlock));
                    events
                }
            }
        }
        (Some((_, _, texts)), event) => {
            texts.push(event);
            Vec::new()
        }
        (None, event) => vec![event],
    })
}

/// Whether a fenced block's language can name its code element's class (`language-NAME`): a
/// short name of letters, digits and `+ # - _ .`.
pub(crate) fn is_language_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+#-_.".contains(c))
}

/// Whether a span's class attribute is one a highlighted block writes: classes of
/// [`CLASS_PREFIX`] and a scope part (letters, digits, `-`, `_`, `+`, `#`, `.`), and nothing else.
pub(crate) fn is_highlight_class(value: &str) -> bool {
    let mut classes = value.split(' ').peekable();
    classes.peek().is_some()
        && classes.all(|class| {
            class.strip_prefix(CLASS_PREFIX).is_some_and(|part| {
                !part.is_empty()
                    && part.len() <= 64
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_+#.".contains(c))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_language_is_split_into_classed_spans_with_the_code_escaped() {
        let html = Budget::default()
            .highlight("rust", "fn main() { let s = \"<b>\"; }\n")
            .expect("rust is known");
        assert!(html.contains("<span class=\"hl-"), "{html}");
        assert!(
            html.contains("hl-keyword") || html.contains("hl-storage"),
            "{html}"
        );
        assert!(html.contains("&lt;b&gt;"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(!html.contains("style="), "{html}");
    }

    #[test]
    fn an_unknown_language_or_a_block_over_its_bound_stays_plain() {
        let mut budget = Budget::default();
        assert_eq!(budget.highlight("no-such-language", "x\n"), None);
        assert_eq!(budget.highlight("", "x\n"), None);
        let big = "x = 1\n".repeat(MAX_BLOCK_BYTES / 6 + 1);
        assert_eq!(budget.highlight("python", &big), None);
    }

    #[test]
    fn a_text_highlights_code_up_to_its_budget_then_shows_the_rest_plain() {
        let mut budget = Budget::default();
        let block = "x = 1\n".repeat(MAX_BLOCK_BYTES / 6);
        let highlighted = (0..10)
            .filter(|_| budget.highlight("python", &block).is_some())
            .count();
        assert_eq!(highlighted, MAX_TEXT_BYTES / block.len());
    }

    #[test]
    fn only_highlight_classes_pass() {
        assert!(is_highlight_class("hl-keyword hl-control hl-rust"));
        assert!(is_highlight_class("hl-source hl-c++"));
        assert!(!is_highlight_class(""));
        assert!(!is_highlight_class("hl-keyword evil"));
        assert!(!is_highlight_class("hl-"));
        assert!(!is_highlight_class("hl-a\"b"));
    }
}
