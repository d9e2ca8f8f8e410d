//! Why one file: the say-mode tag scanner is one linear-time state
//! machine, and its property and adversarial tests sit beside it.
//!
//! Tag extraction for say mode (docs/reference/say.md).
//!
//! A model in say mode answers with text such as
//! `<say>Here is the report</say><file mode="doc">/sandbox/outputs/report.pdf</file>`.
//! [`extract_tags`] finds every complete element of one tag name, with its attributes, and
//! [`parse_say`] turns a whole reply into the messages to send and the files to attach.
//!
//! This is not an XML or HTML parser: model output is rarely well-formed, so the scanner is
//! lenient where leniency is harmless and predictable where it is not. The rules, in full:
//!
//! - Tag names match ASCII case-insensitively (`<SAY>` … `</say>` is one element), and only as
//!   whole names: the name must be followed by whitespace, `>` or `/`, so `<sayings>` is not a
//!   `say` tag.
//! - Attributes are `name="value"`, `name='value'` or `name=value`, in any order, with any
//!   whitespace around `=` and between attributes. A bare `name` has the empty value. An unquoted
//!   value runs to the next whitespace or the end of the tag. Names keep their case; look-ups
//!   through [`Tag::attr`] ignore ASCII case and return the first of repeated names.
//! - A `>` inside a quoted value does not end the tag. A `<` anywhere inside an opening tag,
//!   even inside a quoted value, means it was not a tag after all (XML forbids `<` in attribute
//!   values too); scanning resumes at that `<`. This rule is also what keeps the scan linear.
//! - Content runs from the end of the opening tag to the next closing tag `</name>` (whitespace
//!   is allowed before its `>`). A closing tag belongs to the nearest opening tag before it, so
//!   an element is always the shortest complete one: an opening tag that is followed by another
//!   opening tag of the same name before any closing tag is treated as unclosed. Hence
//!   `<say>a<say>b</say>c</say>` yields only `b`, and the stray outer `</say>` is ignored.
//!   Content therefore never contains an opening tag of its own name.
//! - An unclosed opening tag, or an opening tag whose `>` never comes, yields nothing; scanning
//!   continues after it and later complete elements are still found.
//! - A self-closing tag (`<file/>`, `<file mode="doc" />`) has no content and yields nothing.
//! - Content and attribute values are returned verbatim: no entity decoding, no trimming. A model
//!   writes raw text, and decoding `&lt;` would corrupt a path that really contains it.
//!
//! The scan makes one pass over the text and examines each byte a bounded number of times, so it
//! is O(n) even for adversarial input such as 100,000 opening tags without a closing one.

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// One attribute of an opening tag, borrowed from the scanned text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr<'a> {
    /// The attribute name as written, case preserved.
    pub name: &'a str,
    /// The value as written between its quotes (or the unquoted run); empty for a bare attribute.
    pub value: &'a str,
}

/// One complete `<name …>content</name>` element found by [`extract_tags`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag<'a> {
    /// The text between the opening and the closing tag, verbatim.
    pub content: &'a str,
    /// The attributes of the opening tag, in the order they were written.
    pub attrs: Vec<Attr<'a>>,
    /// Byte range of the whole element, from the opening `<` to the closing `>`.
    pub span: Range<usize>,
    /// Byte range of [`Tag::content`] within the scanned text.
    pub content_span: Range<usize>,
}

impl<'a> Tag<'a> {
    /// The value of the first attribute called `name`, compared ASCII case-insensitively.
    pub fn attr(&self, name: &str) -> Option<&'a str> {
        self.attrs
            .iter()
            .find(|attr| attr.name.eq_ignore_ascii_case(name))
            .map(|attr| attr.value)
    }
}

/// Every complete element named `tag` in `text`, in document order.
///
/// See the module documentation for the exact rules. An empty `tag` matches nothing.
pub fn extract_tags<'a>(text: &'a str, tag: &str) -> Vec<Tag<'a>> {
    let mut found = Vec::new();
    if tag.is_empty() {
        return found;
    }
    let scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        name: tag.as_bytes(),
    };
    // The most recent opening tag that has not met its closing tag yet. A newer opening tag
    // replaces it, which is what makes every element the shortest complete one.
    let mut pending: Option<(usize, usize, Vec<Attr<'a>>)> = None;
    let mut pos = 0;
    while let Some(offset) = scanner.bytes[pos..].iter().position(|&b| b == b'<') {
        let lt = pos + offset;
        match scanner.markup_at(lt) {
            Markup::Open { end, attrs } => {
                pending = Some((lt, end, attrs));
                pos = end;
            }
            Markup::SelfClosing { end } => pos = end,
            Markup::Close { end } => {
                if let Some((start, content_start, attrs)) = pending.take() {
                    found.push(Tag {
                        content: &text[content_start..lt],
                        attrs,
                        span: start..end,
                        content_span: content_start..lt,
                    });
                }
                pos = end;
            }
            Markup::Other => pos = lt + 1,
        }
    }
    found
}

/// What a `<` in the text turned out to start.
enum Markup<'a> {
    /// An opening tag of the wanted name; `end` is just past its `>`.
    Open { end: usize, attrs: Vec<Attr<'a>> },
    /// A self-closing tag of the wanted name; `end` is just past its `>`.
    SelfClosing { end: usize },
    /// A closing tag of the wanted name; `end` is just past its `>`.
    Close { end: usize },
    /// Anything else: another tag, a stray `<`, or a malformed tag of the wanted name.
    Other,
}

struct Scanner<'a, 'n> {
    text: &'a str,
    bytes: &'a [u8],
    name: &'n [u8],
}

impl<'a> Scanner<'a, '_> {
    /// Classifies the markup starting at the `<` at `lt`.
    ///
    /// Every path through here stops at the next `<` after `lt` or at the end of the text,
    /// which bounds the total work of a scan by a constant times the text's length.
    fn markup_at(&self, lt: usize) -> Markup<'a> {
        if self.byte(lt + 1) == Some(b'/') {
            return self.closing_at(lt + 2);
        }
        let after_name = lt + 1 + self.name.len();
        if !self.name_at(lt + 1) {
            return Markup::Other;
        }
        match self.byte(after_name) {
            Some(b) if b.is_ascii_whitespace() || b == b'>' || b == b'/' => {
                self.attributes_from(after_name)
            }
            _ => Markup::Other,
        }
    }

    /// A closing tag is `</name`, optional whitespace, then `>`; `at` is just past `</`.
    fn closing_at(&self, at: usize) -> Markup<'a> {
        if !self.name_at(at) {
            return Markup::Other;
        }
        let gt = self.skip_whitespace(at + self.name.len());
        match self.byte(gt) {
            Some(b'>') => Markup::Close { end: gt + 1 },
            _ => Markup::Other,
        }
    }

    fn name_at(&self, at: usize) -> bool {
        self.bytes
            .get(at..at + self.name.len())
            .is_some_and(|found| found.eq_ignore_ascii_case(self.name))
    }

    /// Parses attributes from `i` (just past the tag name) to the `>` that ends the tag.
    fn attributes_from(&self, mut i: usize) -> Markup<'a> {
        let mut attrs = Vec::new();
        loop {
            i = self.skip_whitespace(i);
            let Some(b) = self.byte(i) else {
                // The text ended inside the tag: it never became one.
                return Markup::Other;
            };
            match b {
                b'>' => return Markup::Open { end: i + 1, attrs },
                b'<' => return Markup::Other,
                b'/' => {
                    let gt = self.skip_whitespace(i + 1);
                    if self.byte(gt) == Some(b'>') {
                        return Markup::SelfClosing { end: gt + 1 };
                    }
                    // A slash that does not close the tag is noise; skip it as browsers do.
                    i += 1;
                }
                b'"' | b'\'' => {
                    // A quoted string with no name before it carries nothing, but it must still
                    // be skipped as a unit so that a `>` inside it does not end the tag.
                    match self.quoted_at(i) {
                        Some((_, next)) => i = next,
                        None => return Markup::Other,
                    }
                }
                b'=' => i += 1,
                _ => match self.attribute_at(i) {
                    Some((attr, next)) => {
                        attrs.push(attr);
                        i = next;
                    }
                    None => return Markup::Other,
                },
            }
        }
    }

    /// Parses one attribute whose name starts at `start`; `None` when its value is malformed.
    fn attribute_at(&self, start: usize) -> Option<(Attr<'a>, usize)> {
        let name_end = self.run_until(start, |b| {
            b.is_ascii_whitespace() || matches!(b, b'=' | b'>' | b'/' | b'<' | b'"' | b'\'')
        });
        let name = &self.text[start..name_end];
        let eq = self.skip_whitespace(name_end);
        // Empty values are empty slices of the text, like every other value: callers may rely
        // on an attribute's parts lying inside the text they parsed.
        if self.byte(eq) != Some(b'=') {
            let value = &self.text[name_end..name_end];
            return Some((Attr { name, value }, name_end));
        }
        let value_start = self.skip_whitespace(eq + 1);
        match self.byte(value_start) {
            Some(b'"' | b'\'') => {
                let (value, next) = self.quoted_at(value_start)?;
                Some((Attr { name, value }, next))
            }
            // `name=` with nothing after it: an empty value; the `>` or `<` is handled by the caller.
            None | Some(b'>' | b'<') => {
                let value = &self.text[value_start..value_start];
                Some((Attr { name, value }, value_start))
            }
            Some(_) => {
                let end = self.unquoted_end(value_start);
                let value = &self.text[value_start..end];
                Some((Attr { name, value }, end))
            }
        }
    }

    /// The inside of the quoted string opening at `open`, and the index just past its closing
    /// quote; `None` when the quote is unterminated or a `<` comes first.
    fn quoted_at(&self, open: usize) -> Option<(&'a str, usize)> {
        let quote = self.bytes[open];
        let close = self.run_until(open + 1, |b| b == quote || b == b'<');
        match self.byte(close) {
            Some(b) if b == quote => Some((&self.text[open + 1..close], close + 1)),
            _ => None,
        }
    }

    /// An unquoted value ends at whitespace, `>`, `<`, or a `/` that closes the tag (`/>`).
    fn unquoted_end(&self, start: usize) -> usize {
        let mut i = start;
        while let Some(b) = self.byte(i) {
            let closes_tag = b == b'/' && self.byte(i + 1) == Some(b'>');
            if b.is_ascii_whitespace() || b == b'>' || b == b'<' || closes_tag {
                break;
            }
            i += 1;
        }
        i
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    fn skip_whitespace(&self, at: usize) -> usize {
        self.run_until(at, |b| !b.is_ascii_whitespace())
    }

    /// The first index at or after `at` whose byte satisfies `stop`, or the text's length.
    fn run_until(&self, at: usize, stop: impl Fn(u8) -> bool) -> usize {
        self.bytes
            .get(at..)
            .and_then(|rest| rest.iter().position(|&b| stop(b)))
            .map_or(self.bytes.len(), |offset| at + offset)
    }
}

/// How a file attached in say mode should be presented (`sendAs`, docs/reference/say.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SendAs {
    /// Decide from the file's MIME type; see [`SendAs::resolve`].
    #[default]
    Auto,
    /// A downloadable document.
    Document,
    /// An image shown inline.
    Photo,
    /// A video shown inline.
    Video,
}

impl SendAs {
    /// Maps a `<file mode="…">` value: `doc`, `photo` and `video` (any ASCII case, surrounding
    /// whitespace ignored) choose a presentation; an absent or unknown mode is [`SendAs::Auto`].
    pub fn from_mode(mode: Option<&str>) -> SendAs {
        let Some(mode) = mode.map(str::trim) else {
            return SendAs::Auto;
        };
        if mode.eq_ignore_ascii_case("doc") {
            SendAs::Document
        } else if mode.eq_ignore_ascii_case("photo") {
            SendAs::Photo
        } else if mode.eq_ignore_ascii_case("video") {
            SendAs::Video
        } else {
            SendAs::Auto
        }
    }

    /// Resolves [`SendAs::Auto`] by MIME type: `image/*` is a photo, `video/*` a video, anything
    /// else a document. An explicit mode is kept as it is.
    /// This includes SVG (`image/svg+xml`), as docs/reference/say.md says; ferry itself only ever
    /// serves SVG as an image, never as a document that can run script.
    pub fn resolve(self, mime: &str) -> SendAs {
        if self != SendAs::Auto {
            return self;
        }
        // Parameters such as `; charset=utf-8` do not change what kind of media this is.
        let essence = mime.split(';').next().unwrap_or("").trim();
        let is_type = |prefix: &str| {
            essence
                .get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
        };
        if is_type("image/") {
            SendAs::Photo
        } else if is_type("video/") {
            SendAs::Video
        } else {
            SendAs::Document
        }
    }

    /// The serialized name: `auto`, `document`, `photo` or `video`.
    pub fn as_str(self) -> &'static str {
        match self {
            SendAs::Auto => "auto",
            SendAs::Document => "document",
            SendAs::Photo => "photo",
            SendAs::Video => "video",
        }
    }
}

/// One `<file>` tag of a say-mode reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileTag {
    /// The tag's content with surrounding whitespace removed; never empty.
    pub path: String,
    /// The presentation the `mode` attribute asked for.
    pub mode: SendAs,
}

/// A say-mode reply taken apart: what to say, and what to attach.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SayReply {
    /// The text of each `<say>` block, in order; see [`parse_say`] for how it is cleaned.
    pub says: Vec<String>,
    /// Every `<file>` tag with a non-empty path, in document order.
    pub files: Vec<FileTag>,
}

/// Takes a say-mode reply apart (docs/reference/say.md).
///
/// - `files`: every `<file>` element anywhere in the text, inside `<say>` blocks or outside
///   them, as they are extracted from the full response before the text outside `<say>` is
///   suppressed. The content is trimmed and taken as the path; an empty path is dropped, and a
///   self-closing `<file/>` is no file at all.
/// - `says`: the content of each `<say>` block, in order, with any `<file>` elements inside it
///   removed (they are delivered as attachments, so showing their markup as well would only be
///   noise), then trimmed. A block left empty is dropped, since an
///   empty message tells the user nothing.
pub fn parse_say(text: &str) -> SayReply {
    let file_tags = extract_tags(text, "file");
    let files = file_tags
        .iter()
        .filter_map(|tag| {
            let path = tag.content.trim();
            (!path.is_empty()).then(|| FileTag {
                path: path.to_owned(),
                mode: SendAs::from_mode(tag.attr("mode")),
            })
        })
        .collect();

    // Both lists are in document order and neither overlaps itself, so one cursor over the file
    // elements serves every say block and the whole pass stays linear.
    let mut next_file = 0;
    let mut says = Vec::new();
    for say in extract_tags(text, "say") {
        let inside = say.content_span;
        while file_tags
            .get(next_file)
            .is_some_and(|file| file.span.start < inside.start)
        {
            next_file += 1;
        }
        let mut body = String::with_capacity(inside.len());
        let mut copied_to = inside.start;
        while let Some(file) = file_tags
            .get(next_file)
            .filter(|file| file.span.start < inside.end)
        {
            // A file element that starts inside the block but ends after it straddles the
            // block's boundary; it is not part of the block's text, so it stays in place.
            if file.span.end <= inside.end {
                body.push_str(&text[copied_to..file.span.start]);
                copied_to = file.span.end;
            }
            next_file += 1;
        }
        body.push_str(&text[copied_to..inside.end]);
        let body = body.trim();
        if !body.is_empty() {
            says.push(body.to_owned());
        }
    }
    SayReply { says, files }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn contents<'a>(text: &'a str, tag: &str) -> Vec<&'a str> {
        extract_tags(text, tag).iter().map(|t| t.content).collect()
    }

    fn attrs<'a>(tag: &Tag<'a>) -> Vec<(&'a str, &'a str)> {
        tag.attrs.iter().map(|a| (a.name, a.value)).collect()
    }

    #[test]
    fn basic_extraction() {
        let tags = extract_tags("before <say>hello</say> after", "say");
        assert_eq!(tags.len(), 1);
        assert_eq!(tags[0].content, "hello");
        assert!(tags[0].attrs.is_empty());
        assert_eq!(tags[0].span, 7..23);
        assert_eq!(tags[0].content_span, 12..17);
    }

    #[test]
    fn several_tags_in_order() {
        assert_eq!(
            contents("<say>one</say> x <say>two</say><say>three</say>", "say"),
            ["one", "two", "three"]
        );
    }

    #[test]
    fn no_matches() {
        assert!(extract_tags("", "say").is_empty());
        assert!(extract_tags("plain text, no tags", "say").is_empty());
        assert!(extract_tags("<file>x</file>", "say").is_empty());
        assert!(extract_tags("<say>x</say>", "").is_empty());
    }

    #[test]
    fn mixed_content_keeps_other_markup_verbatim() {
        let text = "intro <b>bold</b> <say>use <code>x < y</code> &amp; more</say> outro";
        assert_eq!(contents(text, "say"), ["use <code>x < y</code> &amp; more"]);
    }

    #[test]
    fn content_is_verbatim_untrimmed_and_may_span_lines() {
        assert_eq!(
            contents("<say>\n  line one\n  line two\n</say>", "say"),
            ["\n  line one\n  line two\n"]
        );
        assert_eq!(contents("<say></say>", "say"), [""]);
    }

    #[test]
    fn quoted_attributes_of_both_kinds() {
        let tags = extract_tags(
            r#"<file mode="doc" Title='Q3 "final"'>/a.pdf</file>"#,
            "file",
        );
        assert_eq!(tags.len(), 1);
        assert_eq!(
            attrs(&tags[0]),
            [("mode", "doc"), ("Title", "Q3 \"final\"")]
        );
        assert_eq!(tags[0].attr("MODE"), Some("doc"));
        assert_eq!(tags[0].attr("title"), Some("Q3 \"final\""));
        assert_eq!(tags[0].attr("missing"), None);
        assert_eq!(tags[0].content, "/a.pdf");
    }

    #[test]
    fn whitespace_around_equals_and_between_attributes() {
        let text = "<file\n  a = \"1\"\tb\n=\n'2'   c=\"3\"  >x</file>";
        let tags = extract_tags(text, "file");
        assert_eq!(attrs(&tags[0]), [("a", "1"), ("b", "2"), ("c", "3")]);
        assert_eq!(tags[0].content, "x");
    }

    #[test]
    fn unquoted_and_bare_attributes() {
        let tags = extract_tags("<file mode=doc hidden x=1>p</file>", "file");
        assert_eq!(
            attrs(&tags[0]),
            [("mode", "doc"), ("hidden", ""), ("x", "1")]
        );
        let tags = extract_tags("<file mode=>p</file>", "file");
        assert_eq!(attrs(&tags[0]), [("mode", "")]);
    }

    #[test]
    fn empty_values_are_slices_of_the_text() {
        // Found by the property test below: a bare attribute's value was a static "".
        for text in ["<say say></say>", "<say a=></say>"] {
            let tags = extract_tags(text, "say");
            let value = tags[0].attrs[0].value;
            let offset = value.as_ptr() as usize - text.as_ptr() as usize;
            assert!(
                offset <= text.len(),
                "{text}: the value lies outside the text"
            );
        }
    }

    #[test]
    fn first_of_repeated_attributes_wins() {
        let tags = extract_tags(r#"<file mode="photo" MODE="doc">p</file>"#, "file");
        assert_eq!(tags[0].attr("mode"), Some("photo"));
        assert_eq!(tags[0].attrs.len(), 2);
    }

    #[test]
    fn greater_than_inside_quotes_does_not_end_the_tag() {
        let tags = extract_tags(r#"<file note="a > b" other='>'>/x.md</file>"#, "file");
        assert_eq!(tags.len(), 1);
        assert_eq!(attrs(&tags[0]), [("note", "a > b"), ("other", ">")]);
        assert_eq!(tags[0].content, "/x.md");
    }

    #[test]
    fn less_than_inside_an_opening_tag_means_it_was_not_a_tag() {
        // `<` is not allowed in an attribute value; the candidate is dropped and scanning resumes
        // at that `<`, which here starts a stray closing tag that has nothing to close.
        assert!(extract_tags(r#"<file title="</file>">x</file>"#, "file").is_empty());
        // A later well-formed element is still found.
        assert_eq!(
            contents(r#"<file a="<">x</file><file>y</file>"#, "file"),
            ["y"]
        );
    }

    #[test]
    fn stray_quoted_strings_and_slashes_are_skipped() {
        let tags = extract_tags(r#"<file "junk>" / = mode="doc">p</file>"#, "file");
        assert_eq!(attrs(&tags[0]), [("mode", "doc")]);
        assert_eq!(tags[0].content, "p");
    }

    #[test]
    fn tag_names_are_case_insensitive() {
        assert_eq!(contents("<SAY>a</say><Say>b</SAY>", "say"), ["a", "b"]);
        assert_eq!(contents("<say>c</say>", "SAY"), ["c"]);
    }

    #[test]
    fn a_longer_name_is_another_tag() {
        assert!(extract_tags("<sayings>a</sayings>", "say").is_empty());
        assert!(extract_tags("<say-more>a</say-more>", "say").is_empty());
        assert!(extract_tags("<filename>a</filename>", "file").is_empty());
        // `</sayings>` does not close a `say` either.
        assert_eq!(contents("<say>a</sayings>b</say>", "say"), ["a</sayings>b"]);
    }

    #[test]
    fn tags_split_across_lines() {
        let text = "<say\n  tone=\"warm\"\n>first\nsecond</say\n>";
        let tags = extract_tags(text, "say");
        assert_eq!(tags.len(), 1);
        assert_eq!(tags[0].content, "first\nsecond");
        assert_eq!(tags[0].attr("tone"), Some("warm"));
        assert_eq!(tags[0].span, 0..text.len());
    }

    #[test]
    fn unclosed_tags_yield_nothing_and_scanning_continues() {
        assert!(extract_tags("<say>never closed", "say").is_empty());
        assert!(extract_tags("<say mode=\"x\" never closed", "say").is_empty());
        assert!(extract_tags("<say mode=\"unterminated>x</say>", "say").is_empty());
        assert_eq!(contents("<say>lost <say>kept</say>", "say"), ["kept"]);
        assert_eq!(contents("<say x=\"oops>a <say>b</say>", "say"), ["b"]);
        assert_eq!(contents("</say><say>a</say></say>", "say"), ["a"]);
    }

    #[test]
    fn nested_same_name_tags_yield_the_innermost_element() {
        let tags = extract_tags("<say>a<say>b</say>c</say>", "say");
        assert_eq!(tags.len(), 1);
        assert_eq!(tags[0].content, "b");
        assert_eq!(tags[0].span, 6..18);
        // Siblings after a nested mistake are unaffected.
        assert_eq!(
            contents("<say>a<say>b</say>c</say><say>d</say>", "say"),
            ["b", "d"]
        );
    }

    #[test]
    fn self_closing_tags_have_no_content() {
        assert!(extract_tags("<file/>", "file").is_empty());
        assert!(extract_tags("<file mode=\"doc\" />", "file").is_empty());
        assert!(extract_tags("<file mode=doc/>", "file").is_empty());
        assert_eq!(contents("<file/><file>/a.md</file>", "file"), ["/a.md"]);
        // A self-closing tag neither opens nor closes an element around it.
        assert_eq!(contents("<say>a<say/>b</say>", "say"), ["a<say/>b"]);
    }

    #[test]
    fn malformed_closing_tags_are_text() {
        assert!(extract_tags("<say>a</say x>", "say").is_empty());
        assert!(extract_tags("<say>a< /say>", "say").is_empty());
        assert_eq!(contents("<say>a</say   >", "say"), ["a"]);
    }

    #[test]
    fn non_ascii_text_around_and_inside_tags() {
        let text = "héllo <say dïa='ünï'>文件 ✓</say> ünïcødé";
        let tags = extract_tags(text, "say");
        assert_eq!(tags[0].content, "文件 ✓");
        assert_eq!(attrs(&tags[0]), [("dïa", "ünï")]);
    }

    #[test]
    fn many_unclosed_openers_are_handled_in_one_pass() {
        let n = 100_000;
        assert!(extract_tags(&"<say>".repeat(n), "say").is_empty());
        let closed_once = format!("{}x</say>", "<say>".repeat(n));
        assert_eq!(contents(&closed_once, "say"), ["x"]);
        // Unterminated quotes, endless openers and dangling closers are the other ways a naive
        // scanner rescans the rest of the text from every `<`.
        assert!(extract_tags(&"<say x=\"".repeat(n), "say").is_empty());
        assert!(extract_tags(&"<say x='>".repeat(n), "say").is_empty());
        assert!(extract_tags(&"<say a b c ".repeat(n), "say").is_empty());
        assert!(extract_tags(&"</say".repeat(n), "say").is_empty());
        let spaces = format!("<say{}", " ".repeat(n));
        assert!(extract_tags(&spaces.repeat(20), "say").is_empty());
        let pairs = "<say>a</say>".repeat(n);
        assert_eq!(extract_tags(&pairs, "say").len(), n);
    }

    #[test]
    fn send_as_modes() {
        assert_eq!(SendAs::from_mode(None), SendAs::Auto);
        assert_eq!(SendAs::from_mode(Some("doc")), SendAs::Document);
        assert_eq!(SendAs::from_mode(Some("DOC")), SendAs::Document);
        assert_eq!(SendAs::from_mode(Some(" Photo ")), SendAs::Photo);
        assert_eq!(SendAs::from_mode(Some("video")), SendAs::Video);
        assert_eq!(SendAs::from_mode(Some("document")), SendAs::Auto);
        assert_eq!(SendAs::from_mode(Some("")), SendAs::Auto);
        assert_eq!(SendAs::from_mode(Some("gif")), SendAs::Auto);
    }

    #[test]
    fn send_as_serializes_lowercase() {
        for mode in [SendAs::Auto, SendAs::Document, SendAs::Photo, SendAs::Video] {
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.as_str()));
            assert_eq!(serde_json::from_str::<SendAs>(&json).unwrap(), mode);
        }
    }

    #[test]
    fn send_as_resolves_auto_by_mime() {
        assert_eq!(SendAs::Auto.resolve("image/png"), SendAs::Photo);
        assert_eq!(SendAs::Auto.resolve("IMAGE/JPEG"), SendAs::Photo);
        assert_eq!(SendAs::Auto.resolve("video/mp4"), SendAs::Video);
        assert_eq!(SendAs::Auto.resolve("application/pdf"), SendAs::Document);
        assert_eq!(
            SendAs::Auto.resolve("text/markdown; charset=utf-8"),
            SendAs::Document
        );
        assert_eq!(SendAs::Auto.resolve("image/svg+xml"), SendAs::Photo);
        assert_eq!(SendAs::Auto.resolve(""), SendAs::Document);
        assert_eq!(SendAs::Auto.resolve("image"), SendAs::Document);
        // Explicit modes are kept whatever the MIME type says.
        assert_eq!(SendAs::Document.resolve("image/png"), SendAs::Document);
        assert_eq!(SendAs::Photo.resolve("application/pdf"), SendAs::Photo);
        assert_eq!(SendAs::Video.resolve("text/plain"), SendAs::Video);
    }

    #[test]
    fn parse_say_seed_example() {
        let reply = parse_say(
            r#"<say>Here is the report</say><file mode="doc">/sandbox/outputs/report.pdf</file>"#,
        );
        assert_eq!(reply.says, ["Here is the report"]);
        assert_eq!(
            reply.files,
            [FileTag {
                path: "/sandbox/outputs/report.pdf".to_owned(),
                mode: SendAs::Document,
            }]
        );
        let json = serde_json::to_value(&reply).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "says": ["Here is the report"],
                "files": [{ "path": "/sandbox/outputs/report.pdf", "mode": "document" }],
            })
        );
    }

    #[test]
    fn parse_say_orders_blocks_and_files() {
        let text = "thinking...\n<say>\n  First.\n</say>\nmore thinking\n\
                    <file>/sandbox/outputs/a.png</file>\n<say>Second.</say>\n\
                    <FILE Mode='VIDEO'> /sandbox/outputs/b.mp4 </FILE>\n\
                    <file mode=\"photo\">/sandbox/outputs/c.jpg</file>\n\
                    <file mode=\"weird\">/sandbox/outputs/d.txt</file>";
        let reply = parse_say(text);
        assert_eq!(reply.says, ["First.", "Second."]);
        let files: Vec<(&str, SendAs)> = reply
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.mode))
            .collect();
        assert_eq!(
            files,
            [
                ("/sandbox/outputs/a.png", SendAs::Auto),
                ("/sandbox/outputs/b.mp4", SendAs::Video),
                ("/sandbox/outputs/c.jpg", SendAs::Photo),
                ("/sandbox/outputs/d.txt", SendAs::Auto),
            ]
        );
    }

    #[test]
    fn parse_say_takes_files_from_inside_say_blocks_and_removes_their_markup() {
        let reply = parse_say(
            "<say>Here you go: <file mode=\"doc\">/sandbox/outputs/r.pdf</file> enjoy</say>\
             <say><file>/sandbox/outputs/only.png</file></say>",
        );
        assert_eq!(reply.says, ["Here you go:  enjoy"]);
        assert_eq!(reply.files.len(), 2);
        assert_eq!(reply.files[0].path, "/sandbox/outputs/r.pdf");
        assert_eq!(reply.files[0].mode, SendAs::Document);
        assert_eq!(reply.files[1].path, "/sandbox/outputs/only.png");
    }

    #[test]
    fn parse_say_keeps_a_file_element_that_straddles_a_block() {
        let reply = parse_say("<say>a <file>/x.md</say> b</file>");
        assert_eq!(reply.says, ["a <file>/x.md"]);
        assert_eq!(reply.files.len(), 1);
        assert_eq!(reply.files[0].path, "/x.md</say> b");
    }

    #[test]
    fn parse_say_drops_empty_paths_and_empty_blocks() {
        let reply = parse_say(
            "<say>   </say><file>  </file><file/><file mode=\"doc\"></file><say>hi</say>",
        );
        assert_eq!(reply.says, ["hi"]);
        assert!(reply.files.is_empty());
        assert_eq!(parse_say("no tags at all"), SayReply::default());
    }

    #[test]
    fn parse_say_files_without_say_blocks() {
        let reply = parse_say("<file>/sandbox/outputs/a.csv</file>");
        assert!(reply.says.is_empty());
        assert_eq!(reply.files[0].path, "/sandbox/outputs/a.csv");
    }

    /// Text made mostly of the characters that matter to the scanner, so that random cases hit
    /// real tags, near misses and malformed markup far more often than plain random strings do.
    fn markup_soup() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("<".to_owned()),
            Just(">".to_owned()),
            Just("/".to_owned()),
            Just("\"".to_owned()),
            Just("'".to_owned()),
            Just("=".to_owned()),
            Just(" ".to_owned()),
            Just("\n".to_owned()),
            Just("say".to_owned()),
            Just("SAY".to_owned()),
            Just("file".to_owned()),
            Just("mode".to_owned()),
            Just("<say>".to_owned()),
            Just("</say>".to_owned()),
            Just("<file mode=\"doc\">".to_owned()),
            Just("</file>".to_owned()),
            Just("é".to_owned()),
            "[a-z文]{1,3}",
            any::<char>().prop_map(String::from),
        ];
        proptest::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
    }

    fn check_invariants(text: &str, tag: &str) {
        let base = text.as_ptr() as usize;
        let within = |s: &str| {
            let start = s.as_ptr() as usize - base;
            text.get(start..start + s.len()) == Some(s)
        };
        let mut previous_end = 0;
        for found in extract_tags(text, tag) {
            assert_eq!(&text[found.content_span.clone()], found.content);
            assert!(within(found.content));
            assert!(found.span.start >= previous_end, "elements overlap");
            assert!(found.span.start < found.content_span.start);
            assert!(found.content_span.end < found.span.end);
            previous_end = found.span.end;
            let element = &text[found.span.clone()];
            assert!(element.starts_with('<') && element.ends_with('>'));
            for attr in &found.attrs {
                assert!(within(attr.name) && within(attr.value));
                assert!(!attr.name.is_empty());
            }
        }
    }

    proptest! {
        #[test]
        fn never_panics_and_content_is_a_substring(text in markup_soup()) {
            check_invariants(&text, "say");
            check_invariants(&text, "file");
            let reply = parse_say(&text);
            for say in &reply.says {
                prop_assert!(!say.is_empty());
            }
            for file in &reply.files {
                prop_assert!(text.contains(file.path.as_str()));
                prop_assert!(!file.path.is_empty());
            }
        }

        #[test]
        fn arbitrary_strings_never_panic(text in any::<String>(), tag in "[a-zA-Z]{0,4}") {
            check_invariants(&text, &tag);
            let _ = parse_say(&text);
        }
    }
}
