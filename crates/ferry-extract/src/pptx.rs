//! PowerPoint presentations (PPTX): slide titles and text, in presentation
//! order.
//!
//! The order is the one of `sldIdLst` in the presentation part, resolved
//! through its relationships, not the order of the zip entries. A slide's
//! title is the text of its title placeholder (`title`, `ctrTitle` or
//! `vertTitle`); a slide without one is named by its first text, or
//! `(untitled)`. A picture counts as the text `[picture: NAME]` (its
//! description, else its name, as the file gives them) and a chart as
//! `[chart]`, so that a slide made of pictures says what it holds.
//!
//! Text preview: one line per slide, `Slide N: Title`; a presentation with
//! no slides gives `(no slides)`.

use std::collections::HashMap;
use std::io::{BufReader, Read, Seek};

use crate::error::ExtractError;
use crate::html::Body;
use crate::limits::Limits;
use crate::opc::{main_part, rels_of};
use crate::package::Package;
use crate::text::{LineSink, one_line, push_capped};
use crate::xml::{Ev, Xml, attr, attr_prefixed, local};

const WHAT: &str = "PowerPoint presentation";

/// Most bytes of text kept of one paragraph: slides hold short texts, and
/// this bounds a crafted one.
const PARA_CAP: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slide {
    /// 1-based position in the presentation.
    pub(crate) number: usize,
    /// The line shown after `Slide N: `.
    pub(crate) title: String,
    /// The slide's other paragraphs, in shape order.
    pub(crate) paragraphs: Vec<String>,
}

#[derive(Debug, Default)]
struct Shape {
    is_title: bool,
    paras: Vec<String>,
    /// What a picture or a chart is shown as: `[picture: NAME]`, `[chart]`.
    figure: Option<String>,
}

/// What a picture is called before its name is read.
const PICTURE: &str = "[picture]";

/// Names the picture being read by its description (alt text), else its name.
fn name_picture(e: &quick_xml::events::BytesStart<'_>, open: &mut [Shape]) {
    if let Some(shape) = open.last_mut()
        && shape.figure.as_deref() == Some(PICTURE)
    {
        let named = [attr(e, b"descr"), attr(e, b"name")]
            .into_iter()
            .flatten()
            .map(|n| one_line(&n))
            .find(|n| !n.is_empty());
        if let Some(name) = named {
            shape.figure = Some(format!("[picture: {name}]"));
        }
    }
}

/// Marks the shape being read as a chart.
fn mark_chart(open: &mut [Shape]) {
    if let Some(shape) = open.last_mut() {
        shape.figure = Some("[chart]".to_owned());
    }
}

/// Reads the slides in order, handing each to `emit`; stops when `emit`
/// returns false. Returns the number of slides the presentation lists.
pub(crate) fn read_slides<R: Read + Seek>(
    reader: R,
    limits: &Limits,
    mut emit: impl FnMut(Slide) -> bool,
) -> Result<usize, ExtractError> {
    let mut pkg = Package::open(reader, WHAT, limits)?;
    let main = main_part(&mut pkg, "ppt/presentation.xml", limits.max_xml_depth)?;
    let targets: HashMap<String, String> = rels_of(&mut pkg, &main, limits.max_xml_depth)?
        .into_iter()
        .filter(|r| !r.external)
        .map(|r| (r.id, r.target))
        .collect();
    let presentation = pkg
        .read(&main)?
        .ok_or_else(|| ExtractError::invalid(WHAT, "it has no presentation part"))?;

    let mut slide_ids = Vec::new();
    let mut xml = Xml::new(presentation.as_slice(), WHAT, limits.max_xml_depth);
    loop {
        match xml.next()? {
            Ev::Start(e) | Ev::Empty(e) if local(&e) == b"sldId" => {
                slide_ids.push(attr_prefixed(&e, b"id").unwrap_or_default());
            }
            Ev::Eof => break,
            _ => {}
        }
    }

    let count = slide_ids.len();
    for (i, id) in slide_ids.iter().enumerate() {
        let shapes = match targets.get(id) {
            Some(part) => read_slide(&mut pkg, part, limits)?,
            None => Vec::new(),
        };
        if !emit(make_slide(i + 1, shapes)) {
            break;
        }
    }
    Ok(count)
}

fn read_slide<R: Read + Seek>(
    pkg: &mut Package<R>,
    part: &str,
    limits: &Limits,
) -> Result<Vec<Shape>, ExtractError> {
    let Some(entry) = pkg.entry(part)? else {
        return Ok(Vec::new());
    };
    let mut xml = Xml::new(BufReader::new(entry), WHAT, limits.max_xml_depth);
    let mut done: Vec<Shape> = Vec::new();
    let mut open: Vec<Shape> = Vec::new();
    let mut para: Option<String> = None;
    let mut in_text = false;
    loop {
        match xml.next()? {
            Ev::Start(e) => match local(&e).as_slice() {
                b"sp" | b"graphicFrame" | b"cxnSp" => open.push(Shape::default()),
                b"pic" => open.push(Shape {
                    figure: Some(PICTURE.to_owned()),
                    ..Shape::default()
                }),
                b"cNvPr" => name_picture(&e, &mut open),
                b"chart" => mark_chart(&mut open),
                b"p" => para = Some(String::new()),
                b"t" => in_text = true,
                b"ph" => mark_title(&e, &mut open),
                b"Fallback" => xml.skip_element()?,
                _ => {}
            },
            Ev::Empty(e) => match local(&e).as_slice() {
                b"ph" => mark_title(&e, &mut open),
                b"cNvPr" => name_picture(&e, &mut open),
                b"chart" => mark_chart(&mut open),
                b"br" => {
                    if let Some(p) = para.as_mut() {
                        p.push('\n');
                    }
                }
                _ => {}
            },
            Ev::Text(t) => {
                if in_text && let Some(p) = para.as_mut() {
                    push_capped(p, &t, PARA_CAP);
                }
            }
            Ev::End(name) => match name.as_slice() {
                b"t" => in_text = false,
                b"p" => {
                    if let Some(p) = para.take() {
                        match open.last_mut() {
                            Some(shape) => shape.paras.push(p),
                            None => {
                                done.push(Shape {
                                    paras: vec![p],
                                    ..Shape::default()
                                });
                            }
                        }
                    }
                }
                b"sp" | b"graphicFrame" | b"cxnSp" | b"pic" => {
                    if let Some(shape) = open.pop() {
                        done.push(shape);
                    }
                }
                _ => {}
            },
            Ev::Eof => break,
        }
    }
    done.extend(open);
    Ok(done)
}

fn mark_title(e: &quick_xml::events::BytesStart<'_>, open: &mut [Shape]) {
    if let Some(shape) = open.last_mut()
        && matches!(
            attr(e, b"type").as_deref(),
            Some("title" | "ctrTitle" | "vertTitle")
        )
    {
        shape.is_title = true;
    }
}

fn make_slide(number: usize, shapes: Vec<Shape>) -> Slide {
    let mut title = None;
    let mut paragraphs = Vec::new();
    for shape in shapes {
        let text = shape
            .paras
            .iter()
            .map(|p| one_line(p))
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if shape.is_title && title.is_none() && !text.is_empty() {
            title = Some(text);
            continue;
        }
        paragraphs.extend(
            shape
                .paras
                .into_iter()
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty()),
        );
        // A chart's own text (a table's cells, say) is read above; a figure says what it is.
        paragraphs.extend(shape.figure);
    }
    let title = match title {
        Some(t) => t,
        None if !paragraphs.is_empty() => one_line(&paragraphs.remove(0)),
        None => "(untitled)".to_owned(),
    };
    Slide {
        number,
        title,
        paragraphs,
    }
}

/// The text preview: `Slide N: Title` per slide.
pub(crate) fn preview<R: Read + Seek>(
    reader: R,
    max_chars: usize,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let mut sink = LineSink::new(max_chars);
    let count = read_slides(reader, limits, |slide| {
        sink.line(&format!("Slide {}: {}", slide.number, slide.title));
        !sink.full()
    })?;
    if count == 0 {
        sink.line("(no slides)");
    }
    Ok(sink.finish())
}

/// The HTML body: one section per slide with its title and text.
pub(crate) fn html_body<R: Read + Seek>(
    reader: R,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let mut body = Body::new(limits);
    let count = read_slides(reader, limits, |slide| {
        body.raw("<section class=\"ferry-slide\">");
        body.element("h2", &format!("Slide {}: {}", slide.number, slide.title));
        for p in &slide.paragraphs {
            body.raw("<p>");
            body.text_lines(p);
            body.raw("</p>");
        }
        body.raw("</section>\n");
        if body.full() {
            body.cut = true;
            return false;
        }
        true
    })?;
    if count == 0 {
        body.note("This presentation has no slides.");
    }
    Ok(body.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::tests::zip_of;
    use std::io::Cursor;

    fn slide(shapes: &str) -> String {
        format!(
            r#"<p:sld xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree>{shapes}</p:spTree></p:cSld></p:sld>"#
        )
    }

    fn sp(ph: &str, paras: &[&str]) -> String {
        let ps: String = paras
            .iter()
            .map(|t| format!("<a:p><a:r><a:t>{t}</a:t></a:r></a:p>"))
            .collect();
        format!(
            r#"<p:sp><p:nvSpPr><p:nvPr>{ph}</p:nvPr></p:nvSpPr><p:txBody>{ps}</p:txBody></p:sp>"#
        )
    }

    /// Slides stored in zip order 1, 2, 3 but listed as 3, 1, 2.
    fn deck() -> Vec<u8> {
        let pres = r#"<p:presentation xmlns:p="p" xmlns:r="r"><p:sldIdLst><p:sldId id="256" r:id="rId9"/><p:sldId id="257" r:id="rId7"/><p:sldId id="258" r:id="rId8"/></p:sldIdLst></p:presentation>"#;
        let rels = r#"<Relationships><Relationship Id="rId7" Type="s" Target="slides/slide1.xml"/><Relationship Id="rId8" Type="s" Target="slides/slide2.xml"/><Relationship Id="rId9" Type="s" Target="/ppt/slides/slide3.xml"/></Relationships>"#;
        let s1 = slide(
            &(sp(r#"<p:ph type="title"/>"#, &["First", "line two"])
                + &sp(r#"<p:ph idx="1"/>"#, &["body"])),
        );
        let s2 = slide(&sp("", &["", "loose text"]));
        let s3 = slide(&sp(r#"<p:ph type="ctrTitle"/>"#, &["Cover &amp; more"]));
        zip_of(&[
            ("ppt/presentation.xml", pres.as_bytes()),
            ("ppt/_rels/presentation.xml.rels", rels.as_bytes()),
            ("ppt/slides/slide1.xml", s1.as_bytes()),
            ("ppt/slides/slide2.xml", s2.as_bytes()),
            ("ppt/slides/slide3.xml", s3.as_bytes()),
        ])
    }

    #[test]
    fn a_slide_of_pictures_and_charts_says_what_it_holds() {
        let pres = r#"<p:presentation xmlns:p="p" xmlns:r="r"><p:sldIdLst><p:sldId id="256" r:id="rId1"/><p:sldId id="257" r:id="rId2"/></p:sldIdLst></p:presentation>"#;
        let rels = r#"<Relationships><Relationship Id="rId1" Type="s" Target="slides/slide1.xml"/><Relationship Id="rId2" Type="s" Target="slides/slide2.xml"/></Relationships>"#;
        let pic = |attrs: &str| {
            format!(
                r#"<p:pic><p:nvPicPr><p:cNvPr id="4" {attrs}/></p:nvPicPr><p:blipFill/></p:pic>"#
            )
        };
        let chart = r#"<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="5" name="Chart 4"/></p:nvGraphicFramePr><a:graphic><a:graphicData uri="c"><c:chart xmlns:c="c" r:id="rId3"/></a:graphicData></a:graphic></p:graphicFrame>"#;
        let s1 = slide(&(pic(r#"name="Picture 3" descr="revenue by region.png""#) + chart));
        let s2 =
            slide(&(sp(r#"<p:ph type="title"/>"#, &["Results"]) + &pic(r#"name="Picture 1""#)));
        let deck = zip_of(&[
            ("ppt/presentation.xml", pres.as_bytes()),
            ("ppt/_rels/presentation.xml.rels", rels.as_bytes()),
            ("ppt/slides/slide1.xml", s1.as_bytes()),
            ("ppt/slides/slide2.xml", s2.as_bytes()),
        ]);
        let text = preview(Cursor::new(deck.clone()), 4000, &Limits::default()).unwrap();
        assert_eq!(
            text,
            "Slide 1: [picture: revenue by region.png]\nSlide 2: Results"
        );
        let html = html_body(Cursor::new(deck), &Limits::default()).unwrap();
        assert!(html.contains("<p>[chart]</p>"), "{html}");
        assert!(html.contains("<p>[picture: Picture 1]</p>"), "{html}");
    }

    #[test]
    fn titles_follow_presentation_order() {
        let text = preview(Cursor::new(deck()), 4000, &Limits::default()).unwrap();
        assert_eq!(
            text,
            "Slide 1: Cover & more\nSlide 2: First line two\nSlide 3: loose text"
        );
    }

    #[test]
    fn html_has_a_section_per_slide() {
        let html = html_body(Cursor::new(deck()), &Limits::default()).unwrap();
        assert_eq!(html.matches("<section").count(), 3);
        assert!(
            html.contains("<h2>Slide 1: Cover &amp; more</h2>"),
            "{html}"
        );
        assert!(html.contains("<p>body</p>"), "{html}");
    }

    #[test]
    fn empty_presentation() {
        let pres = r#"<p:presentation xmlns:p="p"/>"#;
        let bytes = zip_of(&[("ppt/presentation.xml", pres.as_bytes())]);
        assert_eq!(
            preview(Cursor::new(bytes), 100, &Limits::default()).unwrap(),
            "(no slides)"
        );
    }
}
