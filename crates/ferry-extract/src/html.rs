//! Building sanitized HTML renderings.
//!
//! Safety comes from construction, not from filtering afterwards: every piece
//! of document text goes through [`escape`] before it touches the output, and
//! the only markup not written by this crate is Markdown's, which is
//! sanitized by ammonia with images, relative URLs and every scheme but
//! `http`, `https` and `mailto` removed. The shell adds one inline `<style>`
//! and nothing else: no script, no external resource, no event handler.
//!
//! Why one file: what every rendering is built from is here (the escaping, the budgeted body each
//! reader writes through, the one stylesheet and shell, and the text, Markdown and JSON bodies,
//! Markdown's being the one markup not written by this crate), so the safety argument above is
//! checked in one read, beside the hostile inputs that test it.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::code_highlight::is_language_name;
use crate::limits::{Limits, human_bytes};

/// Escapes text for HTML element content and quoted attribute values.
pub(crate) fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // NUL and other C0 controls (bar tab and newline) are not allowed
            // in HTML text; they carry nothing readable anyway.
            '\0'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{7f}' => {}
            c => out.push(c),
        }
    }
}

#[cfg(test)]
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    escape_into(&mut out, text);
    out
}

/// The body of a rendering, with a size budget. Readers check
/// [`Body::full`] and stop adding content once it is reached.
#[derive(Debug)]
pub(crate) struct Body {
    out: String,
    limit: usize,
    pub(crate) cut: bool,
}

impl Body {
    pub(crate) fn new(limits: &Limits) -> Self {
        Body {
            out: String::new(),
            limit: limits.html_body_bytes,
            cut: false,
        }
    }

    /// Bytes left before the body is full.
    pub(crate) fn room(&self) -> usize {
        self.limit.saturating_sub(self.out.len())
    }

    pub(crate) fn full(&self) -> bool {
        self.out.len() >= self.limit
    }

    /// Markup written by this crate.
    pub(crate) fn raw(&mut self, markup: &str) {
        self.out.push_str(markup);
    }

    /// Document text, escaped.
    pub(crate) fn text(&mut self, text: &str) {
        escape_into(&mut self.out, text);
    }

    /// Document text, escaped, with line breaks as `<br>`.
    pub(crate) fn text_lines(&mut self, text: &str) {
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                self.out.push_str("<br>");
            }
            escape_into(&mut self.out, line);
        }
    }

    /// `<tag>text</tag>` with the text escaped.
    pub(crate) fn element(&mut self, tag: &str, text: &str) {
        let _ = write!(self.out, "<{tag}>");
        self.text(text);
        let _ = write!(self.out, "</{tag}>");
    }

    /// A note to the reader about what the rendering leaves out.
    pub(crate) fn note(&mut self, text: &str) {
        self.raw("<p class=\"ferry-note\">");
        self.text(text);
        self.raw("</p>");
    }

    /// Ends the body; a body that ran past its budget gets a closing note.
    pub(crate) fn finish(mut self) -> String {
        if self.cut || self.full() {
            let limit = human_bytes(self.limit as u64);
            self.note(&format!(
                "This preview stops here: it is limited to about {limit} of HTML. Download the file to see all of it."
            ));
        }
        self.out
    }
}

/// The one stylesheet of every rendering. It is public so that a page framing renderings can
/// allow exactly this style by its hash in its Content-Security-Policy.
pub const STYLE: &str = "\
:root{color-scheme:light dark}\
body{font:15px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:1rem 1.25rem;overflow-wrap:anywhere}\
pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;margin:0}\
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}\
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:13px}\
th,td{border:1px solid #8884;padding:.2rem .45rem;text-align:left;vertical-align:top;white-space:pre-wrap;overflow-wrap:normal}\
thead th,th.ferry-rownum{background:#8881;font-weight:600}\
th.ferry-rownum{text-align:right;color:#888}\
:is(th,td).align-center{text-align:center}\
:is(th,td).align-right{text-align:right}\
section.ferry-slide{border:1px solid #8884;border-radius:6px;padding:.5rem 1rem;margin:0 0 1rem}\
.ferry-note{color:#888;font-style:italic}\
blockquote{border-left:3px solid #8886;margin:0;padding-left:1rem}\
img{max-width:100%}\
.hl-comment{color:light-dark(#59636e,#8b949e)}\
:is(.hl-keyword,.hl-storage){color:light-dark(#cf222e,#ff7b72)}\
.hl-string{color:light-dark(#0a3069,#a5d6ff)}\
:is(.hl-constant,.hl-support){color:light-dark(#0550ae,#79c0ff)}\
:is(.hl-entity.hl-name,.hl-meta.hl-function-call){color:light-dark(#8250df,#d2a8ff)}\
.hl-markup.hl-heading{font-weight:600}";

/// Wraps a body into a complete, self-contained HTML document.
pub(crate) fn document(title: &str, class: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + STYLE.len() + 300);
    out.push_str("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str("<title>");
    escape_into(&mut out, title);
    out.push_str("</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body class=\"ferry-preview ferry-");
    escape_into(&mut out, class);
    out.push_str("\">\n");
    out.push_str(body);
    out.push_str("\n</body></html>\n");
    out
}

/// Plain text or source code in a `<pre>`, escaped.
pub(crate) fn text_body(text: &str, was_cut: bool, limits: &Limits) -> String {
    let mut body = Body::new(limits);
    body.raw("<pre>");
    body.text(text);
    body.raw("</pre>");
    if was_cut {
        body.note(&format!(
            "The file is longer than {}; only its beginning is shown.",
            human_bytes(limits.html_text_bytes as u64)
        ));
    }
    body.finish()
}

/// Markdown rendered by pulldown-cmark and sanitized by ammonia.
pub(crate) fn markdown_body(text: &str, was_cut: bool, limits: &Limits) -> String {
    let clean = markdown_html(text);
    let mut body = Body::new(limits);
    body.raw(&clean);
    if was_cut {
        body.note(&format!(
            "The file is longer than {}; only its beginning is shown.",
            human_bytes(limits.html_text_bytes as u64)
        ));
    }
    body.finish()
}

/// Markdown as a sanitized HTML fragment: CommonMark with tables (a column's alignment as its
/// cells' class `align-left`, `align-center` or `align-right`), strikethrough, task lists (an
/// item's box as `☐` or `☑`) and footnotes; a fenced code block
/// keeps its language as `class="language-NAME"`, and is highlighted when its language is
/// known (`span class="hl-…"`, crate::code_highlight); bare `http(s)://` URLs become links. ammonia
/// then keeps only safe markup: no raw HTML that could run or load anything, no images, no
/// style attribute, links only to `http`, `https` and `mailto` (never
/// `javascript:` or a relative URL), each opening in a new tab with
/// `rel="noopener noreferrer nofollow"`.
pub fn markdown_html(text: &str) -> String {
    use pulldown_cmark::{Options, Parser, TextMergeStream, html::push_html};
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    options.insert(Options::ENABLE_FOOTNOTES);
    let mut raw = String::with_capacity(text.len() * 3 / 2);
    // The parser cuts running text where emphasis might start (`a_(b)`): merged back first, so
    // a URL is seen whole.
    let events = TextMergeStream::new(Parser::new_ext(text, options));
    push_html(
        &mut raw,
        crate::code_highlight::highlighted(autolinked(events).map(task_box)),
    );
    let raw = aligned_by_class(&raw);

    let mut builder = ammonia::Builder::default();
    builder
        .rm_tags(["img"])
        .add_allowed_classes("th", ALIGNMENTS)
        .add_allowed_classes("td", ALIGNMENTS)
        .add_tag_attributes("code", ["class"])
        .add_tag_attributes("span", ["class"])
        .attribute_filter(|element, attribute, value| match (element, attribute) {
            ("code", "class") => is_language_class(value).then_some(value.into()),
            ("span", "class") => {
                crate::code_highlight::is_highlight_class(value).then_some(value.into())
            }
            _ => Some(value.into()),
        })
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow"))
        .set_tag_attribute_value("a", "target", "_blank")
        .strip_comments(true);
    builder.clean(&raw).to_string()
}

/// The classes a table cell's alignment is written with.
const ALIGNMENTS: [&str; 3] = ["align-left", "align-center", "align-right"];

/// A table column's alignment as a class of its cells rather than the `style` attribute the
/// renderer writes: no page showing the fragment lets inline styles apply (its
/// Content-Security-Policy), while a class meets its style sheet.
fn aligned_by_class(html: &str) -> String {
    html.replace(" style=\"text-align: left\">", " class=\"align-left\">")
        .replace(" style=\"text-align: center\">", " class=\"align-center\">")
        .replace(" style=\"text-align: right\">", " class=\"align-right\">")
}

/// A task list item's box as a character rather than a form control, which no sanitized
/// fragment keeps.
fn task_box(event: pulldown_cmark::Event<'_>) -> pulldown_cmark::Event<'_> {
    use pulldown_cmark::Event;
    match event {
        Event::TaskListMarker(done) => Event::Text(if done { "☑ " } else { "☐ " }.into()),
        other => other,
    }
}

/// Whether a code element's class names a language and nothing else: `language-` and a
/// language's name ([`is_language_name`]).
fn is_language_class(value: &str) -> bool {
    value
        .strip_prefix("language-")
        .is_some_and(is_language_name)
}

/// Makes each bare `http://` or `https://` URL in running text a link (as GitHub does), but
/// not inside code or an existing link.
fn autolinked<'a>(
    events: impl Iterator<Item = pulldown_cmark::Event<'a>>,
) -> impl Iterator<Item = pulldown_cmark::Event<'a>> {
    use pulldown_cmark::{Event, Tag, TagEnd};
    let mut depth_without_links = 0usize;
    events.flat_map(move |event| {
        match &event {
            Event::Start(Tag::Link { .. } | Tag::CodeBlock(_) | Tag::Image { .. }) => {
                depth_without_links += 1;
            }
            Event::End(TagEnd::Link | TagEnd::CodeBlock | TagEnd::Image) => {
                depth_without_links = depth_without_links.saturating_sub(1);
            }
            _ => {}
        }
        match event {
            Event::Text(text) if depth_without_links == 0 => link_urls(&text),
            other => vec![other],
        }
    })
}

/// Text split into plain runs and links around each URL it holds.
fn link_urls<'a>(text: &str) -> Vec<pulldown_cmark::Event<'a>> {
    use pulldown_cmark::{CowStr, Event, LinkType, Tag, TagEnd};
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = find_url(rest) {
        let (before, from) = rest.split_at(start);
        let end = url_end(from);
        let (url, after) = from.split_at(end);
        if !before.is_empty() {
            out.push(Event::Text(CowStr::from(before.to_owned())));
        }
        out.push(Event::Start(Tag::Link {
            link_type: LinkType::Autolink,
            dest_url: CowStr::from(url.to_owned()),
            title: CowStr::Borrowed(""),
            id: CowStr::Borrowed(""),
        }));
        out.push(Event::Text(CowStr::from(url.to_owned())));
        out.push(Event::End(TagEnd::Link));
        rest = after;
    }
    if !rest.is_empty() || out.is_empty() {
        out.push(Event::Text(CowStr::from(rest.to_owned())));
    }
    out
}

/// Where the first URL in `text` starts: `http://` or `https://` at a word's start, followed by
/// something.
fn find_url(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find("http") {
        let at = from + found;
        let tail = &text[at..];
        let scheme = ["https://", "http://"]
            .into_iter()
            .find(|s| tail.starts_with(s))
            .map(str::len);
        let at_word_start = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        if let Some(len) = scheme
            && at_word_start
            && tail[len..]
                .chars()
                .next()
                .is_some_and(|c| !c.is_whitespace())
        {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// How long the URL at the start of `text` is: up to whitespace or `<`, less the punctuation
/// that ends a sentence (and a closing parenthesis that does not close one the URL opened).
fn url_end(text: &str) -> usize {
    let mut end = text
        .find(|c: char| c.is_whitespace() || c == '<' || c == '"')
        .unwrap_or(text.len());
    loop {
        let url = &text[..end];
        let Some(last) = url.chars().next_back() else {
            break;
        };
        let unbalanced_paren = last == ')' && url.matches('(').count() < url.matches(')').count();
        if matches!(last, '.' | ',' | ';' | ':' | '!' | '?' | '\'' | '*' | '_') || unbalanced_paren
        {
            end -= last.len_utf8();
        } else {
            break;
        }
    }
    end
}

/// JSON, pretty-printed when valid; otherwise shown as text with a note.
pub(crate) fn json_body(text: &str, was_cut: bool, limits: &Limits) -> String {
    let mut body = Body::new(limits);
    let valid = !was_cut && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
    if valid || was_cut {
        // A cut file cannot be validated; its beginning is still re-indented.
        body.raw("<pre>");
        body.text(&reindent_json(text));
        body.raw("</pre>");
    } else {
        let reason = match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Err(e) => e.to_string(),
            Ok(_) => String::new(),
        };
        body.note(&format!(
            "This is not valid JSON ({reason}); it is shown as text."
        ));
        body.raw("<pre>");
        body.text(text);
        body.raw("</pre>");
    }
    if was_cut {
        body.note(&format!(
            "The file is longer than {}; only its beginning is shown.",
            human_bytes(limits.html_text_bytes as u64)
        ));
    }
    body.finish()
}

/// Re-indents JSON text by two spaces per level without parsing it into
/// values, so key order and number spelling stay exactly as written.
pub(crate) fn reindent_json(text: &str) -> String {
    const MAX_INDENT: usize = 64;
    let bytes = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + bytes.len() / 4);
    let mut depth = 0usize;
    let mut i = 0;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', 2 * depth.min(MAX_INDENT)));
    };
    let next_significant = |from: usize| {
        bytes[from..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map(|p| from + p)
    };
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                // Copy the string through its closing quote, escapes included.
                let start = i;
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => i += 2,
                        b'"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
                let end = i.min(bytes.len());
                out.extend_from_slice(&bytes[start..end]);
                continue;
            }
            b'{' | b'[' => {
                out.push(b);
                let close = if b == b'{' { b'}' } else { b']' };
                match next_significant(i + 1) {
                    Some(j) if bytes[j] == close => {
                        out.push(close);
                        i = j;
                    }
                    _ => {
                        depth += 1;
                        newline(&mut out, depth);
                    }
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(b);
            }
            b',' => {
                out.push(b);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            b if b.is_ascii_whitespace() => {}
            _ => out.push(b),
        }
        i += 1;
    }
    // Only ASCII bytes were inserted and strings were copied whole, so the
    // output is valid UTF-8 unless the input was cut inside an escape; the
    // lossy conversion covers that case.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\"\0"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }

    #[test]
    fn document_is_complete_and_self_contained() {
        let doc = document("a<b>.txt", "text", "<p>x</p>");
        assert!(doc.starts_with("<!DOCTYPE html>"));
        assert!(doc.contains("<title>a&lt;b&gt;.txt</title>"));
        assert!(doc.trim_end().ends_with("</html>"));
        assert!(!doc.contains("<script"));
        assert!(!doc.contains("http"));
    }

    #[test]
    fn markdown_fragments_render_what_chat_answers_hold() {
        let html = markdown_html(
            "## Plan\n\n- **bold** and `code`\n- see https://example.com/a_(b). Done\n\n\
             | a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nlet url = \"https://x.example\";\n```\n\n\
             [named](https://named.example) and http://plain.example, mailto:no\n",
        );
        assert!(html.contains("<h2>Plan</h2>"), "{html}");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<code>code</code>"), "{html}");
        assert!(html.contains("<table>"), "{html}");
        // Bare URLs are links, without the sentence's closing punctuation, opening a new tab.
        assert!(
            html.contains("href=\"https://example.com/a_(b)\"")
                && html.contains(">https://example.com/a_(b)</a>. Done"),
            "{html}"
        );
        assert!(html.contains(">http://plain.example</a>,"), "{html}");
        assert!(
            html.contains("href=\"https://named.example\"") && html.contains(">named</a>"),
            "{html}"
        );
        assert_eq!(html.matches("target=\"_blank\"").count(), 3, "{html}");
        assert_eq!(
            html.matches("rel=\"noopener noreferrer nofollow\"").count(),
            3,
            "{html}"
        );
        // Nothing inside code becomes a link; the code is highlighted, and reads as written
        // once its spans are taken away.
        assert_eq!(html.matches("<a ").count(), 3, "{html}");
        assert!(
            html.contains("<code class=\"language-rust\"><span class=\"hl-"),
            "{html}"
        );
        let code = html.split("language-rust\">").nth(1).unwrap();
        let code = code.split("</code>").next().unwrap();
        let text: String = code
            .split('<')
            .map(|part| part.split_once('>').map_or(part, |(_, text)| text))
            .collect();
        assert_eq!(text, "let url = \"https://x.example\";\n");
    }

    #[test]
    fn task_lists_alignment_and_code_languages_survive_sanitizing() {
        let html = markdown_html(
            "- [x] done\n- [ ] to do\n\n| name | total |\n| :--- | ---: |\n| a | 12 |\n\n\
             ```python\nprint(1)\n```\n\n<code class=\"language-x onclick\">y</code> \
             <td style=\"color: red; text-align: center\">z</td> \
             <span class=\"hl-keyword evil\">w</span> <span class=\"hl-string\">v</span>\n\n\
             ```not-a-language\nplain\n```",
        );
        assert!(
            html.contains("☑ done") && html.contains("☐ to do"),
            "{html}"
        );
        assert!(
            html.contains("<th class=\"align-right\">total</th>"),
            "{html}"
        );
        assert!(html.contains("<td class=\"align-right\">12</td>"), "{html}");
        // A known language is highlighted; an unknown one keeps its class, plain.
        assert!(
            html.contains("<code class=\"language-python\"><span class=\"hl-source hl-python\">"),
            "{html}"
        );
        assert!(
            html.contains("<code class=\"language-not-a-language\">plain"),
            "{html}"
        );
        // A span keeps a class only when every one of its classes is a highlighter's.
        assert!(
            html.contains("<span>w</span>") && html.contains("<span class=\"hl-string\">v</span>"),
            "{html}"
        );
        assert!(
            !html.contains("onclick") && !html.contains("color") && !html.contains("evil"),
            "{html}"
        );
    }

    #[test]
    fn hostile_markdown_stays_inert() {
        for hostile in [
            "<script>alert(1)</script>",
            "[x](javascript:alert(1))",
            "[x](JaVaScRiPt:alert(1))",
            "[x](data:text/html,<script>alert(1)</script>)",
            "<a href=\"javascript:alert(1)\">x</a>",
            "<img src=x onerror=alert(1)>",
            "![i](https://e.com/i.png)",
            "<svg onload=alert(1)>",
            "<iframe src=\"https://e.com\"></iframe>",
            "<div style=\"background:url(javascript:alert(1))\">x</div>",
            "https://e.com/\"onmouseover=\"alert(1)",
            "[x](/relative/path)",
            "<form action=https://e.com><input name=a></form>",
        ] {
            let html = markdown_html(hostile);
            for bad in [
                "<script",
                "javascript:",
                "JaVaScRiPt",
                "data:",
                "onerror",
                "onload",
                " onmouseover",
                "<img",
                "<svg",
                "<iframe",
                "style=",
                "<form",
                "<input",
                "/relative",
            ] {
                assert!(!html.contains(bad), "{hostile:?} gave {html:?}");
            }
        }
    }

    #[test]
    fn markdown_is_sanitized() {
        let md = "# Hi\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) \
                  <img src=x onerror=alert(1)> ![i](https://e.com/i.png) \
                  <a href=\"https://ok.example\" onclick=\"evil()\">ok</a>\n\n<iframe src=\"https://e.com\"></iframe>";
        let html = markdown_body(md, false, &Limits::default());
        assert!(html.contains("<h1>Hi</h1>"), "{html}");
        for bad in [
            "<script",
            "javascript:",
            "onerror",
            "onclick",
            "<img",
            "<iframe",
        ] {
            assert!(!html.contains(bad), "{bad} survived in {html}");
        }
        assert!(html.contains("href=\"https://ok.example\""), "{html}");
    }

    #[test]
    fn json_keeps_order_and_numbers() {
        let pretty = reindent_json(r#"{"b":1.50,"a":[1,2,{}],"s":"x,\"{y}\"","e":[]}"#);
        assert_eq!(
            pretty,
            "{\n  \"b\": 1.50,\n  \"a\": [\n    1,\n    2,\n    {}\n  ],\n  \"s\": \"x,\\\"{y}\\\"\",\n  \"e\": []\n}"
        );
    }

    #[test]
    fn invalid_json_is_shown_as_text() {
        let html = json_body("{\"a\": <b>", false, &Limits::default());
        assert!(html.contains("not valid JSON"));
        assert!(html.contains("&lt;b&gt;"));
        assert!(!html.contains("<b>"));
    }

    #[test]
    fn body_budget_adds_a_note() {
        let limits = Limits {
            html_body_bytes: 10,
            ..Limits::default()
        };
        let mut b = Body::new(&limits);
        b.text("0123456789abc");
        assert!(b.full());
        assert!(b.finish().contains("This preview stops here"));
    }
}
