//! Word documents (DOCX): headings, paragraphs and tables from the main
//! document part, read as a stream.
//!
//! Text preview: one line per paragraph; headings prefixed with Markdown
//! `#` marks (`# Title`, `## Section`); each table row on its own line as
//! `a | b | c`, its cells' paragraphs joined by spaces, rows whose cells are
//! all empty left out. Deleted text (tracked changes), field codes and the
//! fallback copy of alternate content are skipped. Headers, footers,
//! footnotes and comments are not part of the preview.

use std::collections::HashMap;
use std::io::{BufReader, Read, Seek};

use crate::error::ExtractError;
use crate::html::Body;
use crate::limits::Limits;
use crate::opc::{main_part, rels_of};
use crate::package::Package;
use crate::text::{LineSink, one_line, push_capped};
use crate::xml::{Ev, Xml, attr, local, on_off};

const WHAT: &str = "Word document";

/// A run of text with the formatting the HTML rendering keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) text: String,
    pub(crate) bold: bool,
    pub(crate) italic: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Block {
    Heading {
        level: u8,
        text: String,
    },
    Paragraph {
        runs: Vec<Run>,
    },
    /// Rows of cells; a cell's paragraphs are separated by `\n`.
    Table {
        rows: Vec<Vec<String>>,
    },
}

impl Block {
    fn paragraph_text(runs: &[Run]) -> String {
        runs.iter().map(|r| r.text.as_str()).collect()
    }
}

#[derive(Debug, Default)]
struct Para {
    runs: Vec<Run>,
    style: Option<String>,
    outline: Option<u8>,
    /// Bytes of text held.
    len: usize,
}

impl Para {
    fn text(&self) -> String {
        Block::paragraph_text(&self.runs)
    }

    /// Adds text to the paragraph, which never grows past `cap` bytes.
    fn push(&mut self, text: &str, bold: bool, italic: bool, cap: usize) {
        let room = cap.saturating_sub(self.len);
        if room == 0 {
            return;
        }
        let mut piece = String::new();
        push_capped(&mut piece, text, room);
        self.len += piece.len();
        match self.runs.last_mut() {
            Some(last) if last.bold == bold && last.italic == italic => last.text.push_str(&piece),
            _ => self.runs.push(Run {
                text: piece,
                bold,
                italic,
            }),
        }
    }
}

#[derive(Debug, Default)]
struct TableState {
    rows: Vec<Vec<String>>,
    row: Option<Vec<String>>,
    cell: Option<Vec<String>>,
}

/// Reads the document's blocks, handing each to `emit`; reading stops when
/// `emit` returns false. A paragraph keeps at most `para_cap` bytes of text.
pub(crate) fn read_blocks<R: Read + Seek>(
    reader: R,
    limits: &Limits,
    para_cap: usize,
    mut emit: impl FnMut(Block) -> bool,
) -> Result<(), ExtractError> {
    let mut pkg = Package::open(reader, WHAT, limits)?;
    let main = main_part(&mut pkg, "word/document.xml", limits.max_xml_depth)?;
    if !pkg.has(&main) {
        return Err(ExtractError::invalid(WHAT, "it has no document part"));
    }
    let headings = heading_styles(&mut pkg, &main, limits)?;
    let entry = pkg
        .entry(&main)?
        .ok_or_else(|| ExtractError::invalid(WHAT, "it has no document part"))?;
    let mut xml = Xml::new(BufReader::new(entry), WHAT, limits.max_xml_depth);

    let mut paras: Vec<Para> = Vec::new();
    let mut tables: Vec<TableState> = Vec::new();
    let mut run_depth = 0usize;
    let mut in_text = false;
    let (mut bold, mut italic) = (false, false);

    loop {
        match xml.next()? {
            Ev::Start(e) => match local(&e).as_slice() {
                b"p" => paras.push(Para::default()),
                b"r" => {
                    run_depth += 1;
                    bold = false;
                    italic = false;
                }
                b"t" if run_depth > 0 => in_text = true,
                // The fallback repeats the choice's content for old readers.
                b"Fallback" => xml.skip_element()?,
                b"tbl" => tables.push(TableState::default()),
                b"tr" => {
                    if let Some(t) = tables.last_mut() {
                        t.row = Some(Vec::new());
                    }
                }
                b"tc" => {
                    if let Some(t) = tables.last_mut() {
                        t.cell = Some(Vec::new());
                    }
                }
                name => start_or_empty(name, &e, &mut paras, run_depth, &mut bold, &mut italic),
            },
            Ev::Empty(e) => {
                let name = local(&e);
                if name == b"tc"
                    && let Some(t) = tables.last_mut()
                {
                    t.row.get_or_insert_with(Vec::new).push(String::new());
                }
                start_or_empty(&name, &e, &mut paras, run_depth, &mut bold, &mut italic);
                if run_depth > 0 {
                    let insert = match name.as_slice() {
                        b"tab" => Some("\t"),
                        b"br" | b"cr" => Some("\n"),
                        b"noBreakHyphen" => Some("-"),
                        _ => None,
                    };
                    if let (Some(s), Some(p)) = (insert, paras.last_mut()) {
                        p.push(s, bold, italic, para_cap);
                    }
                }
            }
            Ev::Text(t) => {
                if in_text && let Some(p) = paras.last_mut() {
                    p.push(&t, bold, italic, para_cap);
                }
            }
            Ev::End(name) => match name.as_slice() {
                b"t" => in_text = false,
                b"r" => run_depth = run_depth.saturating_sub(1),
                b"p" => {
                    let Some(para) = paras.pop() else { continue };
                    if let Some(cell) = tables.last_mut().and_then(|t| t.cell.as_mut()) {
                        let text = para.text();
                        if !text.trim().is_empty() {
                            cell.push(text);
                        }
                        continue;
                    }
                    if let Some(block) = para_block(para, &headings)
                        && !emit(block)
                    {
                        return Ok(());
                    }
                }
                b"tc" => {
                    if let Some(t) = tables.last_mut()
                        && let Some(cell) = t.cell.take()
                    {
                        t.row.get_or_insert_with(Vec::new).push(cell.join("\n"));
                    }
                }
                b"tr" => {
                    if let Some(t) = tables.last_mut()
                        && let Some(row) = t.row.take()
                    {
                        t.rows.push(row);
                    }
                }
                b"tbl" => {
                    let Some(done) = tables.pop() else { continue };
                    if done.rows.is_empty() {
                        continue;
                    }
                    // A table nested in a cell becomes lines of that cell.
                    if let Some(cell) = tables.last_mut().and_then(|t| t.cell.as_mut()) {
                        for row in &done.rows {
                            let line: Vec<String> = row.iter().map(|c| one_line(c)).collect();
                            cell.push(line.join(" | "));
                        }
                        continue;
                    }
                    if !emit(Block::Table { rows: done.rows }) {
                        return Ok(());
                    }
                }
                _ => {}
            },
            Ev::Eof => return Ok(()),
        }
    }
}

/// Handles elements that matter whether written as start tags or empty tags.
fn start_or_empty(
    name: &[u8],
    e: &quick_xml::events::BytesStart<'_>,
    paras: &mut [Para],
    run_depth: usize,
    bold: &mut bool,
    italic: &mut bool,
) {
    match name {
        b"pStyle" => {
            if let Some(p) = paras.last_mut() {
                p.style = attr(e, b"val");
            }
        }
        b"outlineLvl" => {
            if let Some(p) = paras.last_mut() {
                p.outline = attr(e, b"val").and_then(|v| v.parse::<u8>().ok());
            }
        }
        b"b" if run_depth > 0 => *bold = on_off(e),
        b"i" if run_depth > 0 => *italic = on_off(e),
        _ => {}
    }
}

fn para_block(para: Para, headings: &HashMap<String, u8>) -> Option<Block> {
    let level = para
        .style
        .as_deref()
        .and_then(|s| headings.get(s).copied().or_else(|| heading_from_id(s)))
        .or(para.outline.filter(|&l| l < 9).map(|l| l + 1));
    let text = para.text();
    if text.trim().is_empty() {
        return None;
    }
    Some(match level {
        Some(level) => Block::Heading {
            level: level.clamp(1, 6),
            text,
        },
        None => Block::Paragraph { runs: para.runs },
    })
}

/// Built-in style ids when styles.xml says nothing ("Heading2", "Title").
fn heading_from_id(id: &str) -> Option<u8> {
    let lower = id.to_ascii_lowercase();
    if lower == "title" {
        return Some(1);
    }
    lower
        .strip_prefix("heading")
        .and_then(|n| n.trim().parse::<u8>().ok())
        .filter(|n| (1..=9).contains(n))
}

/// Style id → heading level, from the names of styles ("heading 2", "Title")
/// and their outline levels, which do not depend on the user's language.
fn heading_styles<R: Read + Seek>(
    pkg: &mut Package<R>,
    main: &str,
    limits: &Limits,
) -> Result<HashMap<String, u8>, ExtractError> {
    let rels = rels_of(pkg, main, limits.max_xml_depth)?;
    let styles_part = rels
        .iter()
        .find(|r| !r.external && r.rel_type.ends_with("/styles"))
        .map(|r| r.target.clone())
        .unwrap_or_else(|| "word/styles.xml".to_owned());
    let Some(entry) = pkg.entry(&styles_part)? else {
        return Ok(HashMap::new());
    };
    let mut xml = Xml::new(BufReader::new(entry), WHAT, limits.max_xml_depth);
    let mut map = HashMap::new();
    let mut current: Option<String> = None;
    loop {
        match xml.next()? {
            Ev::Start(e) if local(&e) == b"style" => current = attr(&e, b"styleId"),
            Ev::Start(e) | Ev::Empty(e) => {
                let Some(id) = current.as_ref() else { continue };
                match local(&e).as_slice() {
                    b"name" => {
                        if let Some(level) = attr(&e, b"val").and_then(|n| heading_from_name(&n)) {
                            map.insert(id.clone(), level);
                        }
                    }
                    b"outlineLvl" => {
                        if let Some(l) = attr(&e, b"val").and_then(|v| v.parse::<u8>().ok())
                            && l < 9
                        {
                            map.entry(id.clone()).or_insert(l + 1);
                        }
                    }
                    _ => {}
                }
            }
            Ev::End(name) if name == b"style" => current = None,
            Ev::Eof => return Ok(map),
            _ => {}
        }
    }
}

fn heading_from_name(name: &str) -> Option<u8> {
    let lower = name.to_ascii_lowercase();
    if lower == "title" {
        return Some(1);
    }
    lower
        .strip_prefix("heading ")
        .and_then(|n| n.trim().parse::<u8>().ok())
        .filter(|n| (1..=9).contains(n))
}

/// The text preview (see the module documentation for the format).
pub(crate) fn preview<R: Read + Seek>(
    reader: R,
    max_chars: usize,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let mut sink = LineSink::new(max_chars);
    // A paragraph longer than the preview cannot be shown whole anyway.
    let para_cap = max_chars.saturating_mul(4).saturating_add(8);
    read_blocks(reader, limits, para_cap, |block| {
        match block {
            Block::Heading { level, text } => {
                let marks = "#".repeat(usize::from(level));
                sink.line(&format!("{marks} {}", one_line(&text)));
            }
            Block::Paragraph { runs } => {
                let text = Block::paragraph_text(&runs);
                sink.line(text.trim_end());
            }
            Block::Table { rows } => {
                for row in rows {
                    if row.iter().all(|c| c.trim().is_empty()) {
                        continue;
                    }
                    let cells: Vec<String> = row.iter().map(|c| one_line(c)).collect();
                    sink.line(cells.join(" | ").trim_end());
                }
            }
        }
        !sink.full()
    })?;
    Ok(sink.finish())
}

/// The HTML body: headings, paragraphs with bold and italic, tables.
pub(crate) fn html_body<R: Read + Seek>(
    reader: R,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let mut body = Body::new(limits);
    let mut any = false;
    read_blocks(reader, limits, limits.html_body_bytes, |block| {
        any = true;
        match block {
            Block::Heading { level, text } => {
                body.element(&format!("h{level}"), text.trim());
            }
            Block::Paragraph { runs } => {
                body.raw("<p>");
                for run in runs {
                    let (open, close) = match (run.bold, run.italic) {
                        (true, true) => ("<strong><em>", "</em></strong>"),
                        (true, false) => ("<strong>", "</strong>"),
                        (false, true) => ("<em>", "</em>"),
                        (false, false) => ("", ""),
                    };
                    body.raw(open);
                    body.text_lines(&run.text);
                    body.raw(close);
                }
                body.raw("</p>\n");
            }
            Block::Table { rows } => {
                body.raw("<table>\n");
                for row in rows.iter().take(limits.html_rows) {
                    body.raw("<tr>");
                    for cell in row.iter().take(limits.html_columns) {
                        body.raw("<td>");
                        body.text_lines(cell);
                        body.raw("</td>");
                    }
                    body.raw("</tr>\n");
                }
                body.raw("</table>\n");
                if rows.len() > limits.html_rows {
                    body.note(&format!(
                        "This table has {} rows; the first {} are shown.",
                        rows.len(),
                        limits.html_rows
                    ));
                }
            }
        }
        if body.full() {
            body.cut = true;
            return false;
        }
        true
    })?;
    if !any {
        body.note("This document has no text.");
    }
    Ok(body.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::tests::zip_of;
    use std::io::Cursor;

    const NS: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

    fn docx(body: &str) -> Vec<u8> {
        let doc = format!(
            r#"<?xml version="1.0"?><w:document {NS}><w:body>{body}</w:body></w:document>"#
        );
        zip_of(&[("word/document.xml", doc.as_bytes())])
    }

    fn p(text: &str) -> String {
        format!("<w:p><w:r><w:t>{text}</w:t></w:r></w:p>")
    }

    #[test]
    fn headings_paragraphs_and_tables() {
        let body = format!(
            r#"<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Intro</w:t></w:r></w:p>{}<w:tbl><w:tr><w:tc>{}</w:tc><w:tc>{}{}</w:tc></w:tr><w:tr><w:tc>{}</w:tc><w:tc/></w:tr><w:tr><w:tc><w:p/></w:tc></w:tr></w:tbl>{}"#,
            p("Hello &lt;b&gt;world&lt;/b&gt; &amp; all"),
            p("a"),
            p("b"),
            p("c"),
            p("d"),
            p("after")
        );
        let text = preview(Cursor::new(docx(&body)), 4000, &Limits::default()).unwrap();
        assert_eq!(
            text,
            "# Intro\nHello <b>world</b> & all\na | b c\nd |\nafter"
        );
    }

    #[test]
    fn deleted_text_field_codes_and_fallbacks_are_skipped() {
        let body = r#"<w:p><w:r><w:t xml:space="preserve">kept </w:t></w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del><w:r><w:instrText>PAGE</w:instrText></w:r><w:r><w:tab/><w:t>x</w:t></w:r></w:p><mc:AlternateContent xmlns:mc="m"><mc:Choice><w:p><w:r><w:t>choice</w:t></w:r></w:p></mc:Choice><mc:Fallback><w:p><w:r><w:t>fallback</w:t></w:r></w:p></mc:Fallback></mc:AlternateContent>"#;
        let text = preview(Cursor::new(docx(body)), 4000, &Limits::default()).unwrap();
        assert_eq!(text, "kept \tx\nchoice");
    }

    #[test]
    fn preview_stops_at_the_budget() {
        let body: String = (0..1000).map(|i| p(&format!("paragraph {i}"))).collect();
        let text = preview(Cursor::new(docx(&body)), 30, &Limits::default()).unwrap();
        assert_eq!(text, "paragraph 0\nparagraph 1\nparag…");
    }

    #[test]
    fn html_escapes_document_text() {
        let body = r#"<w:p><w:r><w:rPr><w:b/></w:rPr><w:t>bold</w:t></w:r><w:r><w:t>&lt;script&gt;alert(1)&lt;/script&gt;</w:t></w:r></w:p>"#;
        let html = html_body(Cursor::new(docx(body)), &Limits::default()).unwrap();
        assert_eq!(
            html,
            "<p><strong>bold</strong>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"
        );
    }

    #[test]
    fn missing_document_part_is_an_error() {
        let bytes = zip_of(&[("other.xml", b"<a/>")]);
        let err = preview(Cursor::new(bytes), 100, &Limits::default()).unwrap_err();
        assert!(err.to_string().contains("no document part"), "{err}");
    }
}
