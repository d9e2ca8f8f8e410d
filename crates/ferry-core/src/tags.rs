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

// Its property and adversarial tests: tags/tests.rs.
#[cfg(test)]
mod tests;
