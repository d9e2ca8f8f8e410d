//! A slide's speaker notes, which a search reads beside the slide's own text
//! ([`crate::searchable`]): the paragraphs of the body placeholder of the notes page the slide's
//! relationships name.

use std::io::{BufReader, Read, Seek};

use crate::drawingml::Paragraphs;
use crate::error::ExtractError;
use crate::limits::Limits;
use crate::opc::rels_of;
use crate::package::Package;
use crate::pptx::WHAT;
use crate::xml::{Ev, Xml, attr, local};

/// The speaker notes of the slide read from `part`: the paragraphs of its notes page's body
/// placeholder, without what else a notes page holds (the slide's picture, its number).
pub(crate) fn notes_of<R: Read + Seek>(
    pkg: &mut Package<R>,
    part: &str,
    limits: &Limits,
) -> Result<Vec<String>, ExtractError> {
    let notes = rels_of(pkg, part, limits.max_xml_depth)?
        .into_iter()
        .find(|r| !r.external && r.rel_type.ends_with("/notesSlide"));
    let Some(entry) = (match notes {
        Some(notes) => pkg.entry(&notes.target)?,
        None => None,
    }) else {
        return Ok(Vec::new());
    };
    let mut xml = Xml::new(BufReader::new(entry), WHAT, limits.max_xml_depth);
    let (mut out, mut in_body, mut paras) = (Vec::new(), false, Paragraphs::default());
    loop {
        match xml.next()? {
            Ev::Start(e) | Ev::Empty(e) if local(&e) == b"ph" => {
                in_body = attr(&e, b"type").as_deref() == Some("body");
            }
            Ev::Start(e) => match local(&e).as_slice() {
                b"sp" => in_body = false,
                name => paras.start(name),
            },
            Ev::Empty(e) => paras.empty(&local(&e)),
            Ev::Text(t) => paras.text(&t),
            Ev::End(name) => {
                if let Some(p) = paras.end(&name).filter(|_| in_body) {
                    let p = p.trim();
                    if !p.is_empty() {
                        out.push(p.to_owned());
                    }
                }
            }
            Ev::Eof => return Ok(out),
        }
    }
}
