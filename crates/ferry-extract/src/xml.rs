//! A small pull parser over quick-xml for the Office XML parts ferry reads
//! itself (DOCX, PPTX).
//!
//! quick-xml never expands entities declared in a DTD; on top of that this
//! wrapper refuses any document that has a DTD at all, resolves only the five
//! predefined entities and character references, and stops at a nesting
//! depth limit. Elements are matched by local name, so the namespace prefix a
//! producer chose (`w:`, `a:`, ...) does not matter.

use std::borrow::Cow;
use std::io::BufRead;

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use crate::error::ExtractError;
use crate::package::{dtd_error, io_to_extract};

/// One parse event, owned so callers can hold it across the next read.
#[derive(Debug)]
pub(crate) enum Ev {
    Start(BytesStart<'static>),
    Empty(BytesStart<'static>),
    /// The local name of the element that ends.
    End(Vec<u8>),
    Text(String),
    Eof,
}

pub(crate) struct Xml<R: BufRead> {
    reader: Reader<R>,
    buf: Vec<u8>,
    depth: usize,
    max_depth: usize,
    what: &'static str,
}

impl<R: BufRead> std::fmt::Debug for Xml<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Xml").field("depth", &self.depth).finish()
    }
}

impl<R: BufRead> Xml<R> {
    pub(crate) fn new(source: R, what: &'static str, max_depth: usize) -> Self {
        let mut reader = Reader::from_reader(source);
        // Office files are machine-written; a mismatched end tag still gets
        // an error, but stray whitespace handling stays as written.
        reader.config_mut().trim_text(false);
        Xml {
            reader,
            buf: Vec::with_capacity(4096),
            depth: 0,
            max_depth,
            what,
        }
    }

    pub(crate) fn next(&mut self) -> Result<Ev, ExtractError> {
        loop {
            self.buf.clear();
            let ev = self
                .reader
                .read_event_into(&mut self.buf)
                .map_err(|e| xml_error(self.what, e))?;
            return Ok(match ev {
                Event::Start(e) => {
                    self.depth += 1;
                    if self.depth > self.max_depth {
                        return Err(ExtractError::limit(format!(
                            "its XML is nested more than {} levels deep",
                            self.max_depth
                        )));
                    }
                    Ev::Start(e.into_owned())
                }
                Event::Empty(e) => Ev::Empty(e.into_owned()),
                Event::End(e) => {
                    self.depth = self.depth.saturating_sub(1);
                    Ev::End(e.local_name().as_ref().as_bytes().to_vec())
                }
                Event::Text(t) => Ev::Text(t.xml10_content().into_owned()),
                Event::CData(t) => Ev::Text(t.to_string()),
                Event::GeneralRef(r) => {
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => Some(c),
                        Ok(None) => predefined_entity(&r.xml10_content()),
                        Err(_) => None,
                    };
                    match resolved {
                        Some(c) => Ev::Text(c.to_string()),
                        // An entity that is neither predefined nor a character
                        // reference would need a DTD: it is dropped, never
                        // expanded.
                        None => continue,
                    }
                }
                Event::DocType(_) => return Err(dtd_error()),
                Event::Eof => Ev::Eof,
                Event::Comment(_) | Event::Decl(_) | Event::PI(_) => continue,
            });
        }
    }

    /// Skips everything up to the end of the element just started.
    pub(crate) fn skip_element(&mut self) -> Result<(), ExtractError> {
        let target = self.depth.saturating_sub(1);
        loop {
            match self.next()? {
                Ev::End(_) if self.depth == target => return Ok(()),
                Ev::Eof => return Ok(()),
                _ => {}
            }
        }
    }
}

fn predefined_entity(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => return None,
    })
}

pub(crate) fn xml_error(what: &str, e: quick_xml::Error) -> ExtractError {
    if let quick_xml::Error::Io(io) = &e
        && let Some(inner) = io.get_ref().and_then(|i| i.downcast_ref::<ExtractError>())
    {
        return inner.clone();
    }
    if let quick_xml::Error::Io(io) = e {
        let kind = io.kind();
        return io_to_extract(what, std::io::Error::new(kind, io.to_string()));
    }
    ExtractError::invalid(what, format!("its XML is malformed: {e}"))
}

/// The local name of an element.
pub(crate) fn local(e: &BytesStart<'_>) -> Vec<u8> {
    e.local_name().as_ref().as_bytes().to_vec()
}

/// The value of the attribute with this local name, if present.
pub(crate) fn attr(e: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes()
        .with_checks(false)
        .flatten()
        .find_map(|a| (a.key.local_name().as_ref().as_bytes() == name).then(|| value(&a)))
}

/// The value of a prefixed attribute with this local name (`r:id`, whatever
/// the prefix), as opposed to the unprefixed `id` an element may also have.
pub(crate) fn attr_prefixed(e: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes().with_checks(false).flatten().find_map(|a| {
        (a.key.prefix().is_some() && a.key.local_name().as_ref().as_bytes() == name)
            .then(|| value(&a))
    })
}

/// An attribute's value with predefined entities and character references
/// resolved; a value that cannot be resolved is kept as written.
fn value(a: &quick_xml::events::attributes::Attribute<'_>) -> String {
    a.normalized_value(XmlVersion::Implicit1_0)
        .map(Cow::into_owned)
        .unwrap_or_else(|_| a.value.to_string())
}

/// OOXML on/off values: absent `val` means on; "0", "false", "off" mean off.
pub(crate) fn on_off(e: &BytesStart<'_>) -> bool {
    !matches!(
        attr(e, b"val").as_deref(),
        Some("0" | "false" | "off" | "none")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(xml: &str) -> Result<String, ExtractError> {
        let mut x = Xml::new(xml.as_bytes(), "test", 8);
        let mut out = String::new();
        loop {
            match x.next()? {
                Ev::Text(t) => out.push_str(&t),
                Ev::Eof => return Ok(out),
                _ => {}
            }
        }
    }

    #[test]
    fn resolves_predefined_and_char_refs_only() {
        assert_eq!(
            texts("<a>x &amp; y &#65;&#x42; &custom; &lt;</a>").unwrap(),
            "x & y AB  <"
        );
    }

    #[test]
    fn refuses_doctype() {
        let bomb = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><a>&lol2;</a>"#;
        assert_eq!(texts(bomb).unwrap_err(), dtd_error());
    }

    #[test]
    fn depth_is_limited() {
        let deep = "<a>".repeat(9) + &"</a>".repeat(9);
        assert!(
            texts(&deep)
                .unwrap_err()
                .to_string()
                .contains("nested more than 8")
        );
        let ok = "<a>".repeat(8) + &"</a>".repeat(8);
        texts(&ok).unwrap();
    }

    #[test]
    fn attributes_by_local_and_qualified_name() {
        let mut x = Xml::new(
            &br#"<p:sldId id="256" rel:id="rId2" w:val="0"/>"#[..],
            "test",
            8,
        );
        let Ev::Empty(e) = x.next().unwrap() else {
            panic!("expected an empty element")
        };
        assert_eq!(local(&e), b"sldId");
        assert_eq!(attr_prefixed(&e, b"id").as_deref(), Some("rId2"));
        assert_eq!(attr(&e, b"id").as_deref(), Some("256"));
        assert!(!on_off(&e));
    }
}
