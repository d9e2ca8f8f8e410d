//! PowerPoint presentations (PPTX): slide titles and text, in presentation
//! order.
//!
//! The order is the one of `sldIdLst` in the presentation part, resolved
//! through its relationships, not the order of the zip entries. A slide's
//! title is the text of its title placeholder (`title`, `ctrTitle` or
//! `vertTitle`); a slide without one is named by its first text, or
//! `(untitled)`. A picture counts as the text `[picture: NAME]` (its
//! description, else its name, as the file gives them) and a chart as
//! `[chart: TITLE; series: A, B]` (what its chart part names, as far as it
//! names them; `[chart]` when nothing), so that a slide made of pictures
//! and charts says what it holds.
//!
//! Text preview: one line per slide, `Slide N: Title`; a presentation with
//! no slides gives `(no slides)`.
//!
//! Why one file: one reader of a deck serves both the text preview and the HTML body: the slide
//! order, what a slide's shapes make of its title, text, pictures and charts, and the parts those
//! name are decided here together, and the tests build whole decks to hold both renderings to it;
//! speaker notes and slide images are modules of their own.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use std::collections::HashMap;
use std::io::{BufReader, Read, Seek};

use crate::drawingml::{PARA_CAP, Paragraphs};
use crate::error::ExtractError;
use crate::html::Body;
use crate::limits::Limits;
use crate::opc::{main_part, rels_of};
use crate::package::Package;
use crate::text::{LineSink, one_line, push_capped};
use crate::xml::{Ev, Xml, attr, attr_prefixed, local};

pub(crate) const WHAT: &str = "PowerPoint presentation";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slide {
    /// 1-based position in the presentation.
    pub(crate) number: usize,
    /// The line shown after `Slide N: `.
    pub(crate) title: String,
    /// The slide's other paragraphs, in shape order.
    pub(crate) paragraphs: Vec<String>,
    /// The slide's pictures (`[picture: NAME]`, and the package part holding the image), in
    /// shape order.
    pub(crate) pictures: Vec<(String, String)>,
    /// The package part the slide is read from (none when its relationship is missing).
    pub(crate) part: Option<String>,
}

#[derive(Debug, Default)]
struct Shape {
    is_title: bool,
    paras: Vec<String>,
    /// What a picture or a chart is shown as: `[picture: NAME]`, `[chart]`.
    figure: Option<String>,
    /// The relationship id of the chart part a chart frame shows.
    chart: Option<String>,
    /// The relationship id of the image a picture shows, then (resolved) its part.
    image: Option<String>,
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

/// Marks the shape being read as a chart, and keeps which part holds it.
fn mark_chart(e: &quick_xml::events::BytesStart<'_>, open: &mut [Shape]) {
    if let Some(shape) = open.last_mut() {
        shape.figure = Some("[chart]".to_owned());
        shape.chart = attr_prefixed(e, b"id");
    }
}

/// Keeps which image a picture shows (`a:blip r:embed`).
fn mark_image(e: &quick_xml::events::BytesStart<'_>, open: &mut [Shape]) {
    if let Some(shape) = open.last_mut()
        && shape.figure.is_some()
        && shape.image.is_none()
    {
        shape.image = attr_prefixed(e, b"embed");
    }
}

/// Most series a chart is named with; a chart of more says how many more.
const SERIES_NAMED: usize = 8;

/// What a chart part names: its title and its series' names.
#[derive(Debug, Default, PartialEq, Eq)]
struct ChartNames {
    title: String,
    series: Vec<String>,
    more_series: usize,
}

impl ChartNames {
    /// `[chart: Revenue; series: North, South]`, or `[chart]` when the part names nothing.
    fn figure(&self) -> String {
        let mut said = Vec::new();
        if !self.title.is_empty() {
            said.push(self.title.clone());
        }
        if !self.series.is_empty() {
            let mut series = self.series.join(", ");
            if self.more_series > 0 {
                series.push_str(&format!(" and {} more", self.more_series));
            }
            said.push(format!("series: {series}"));
        }
        if said.is_empty() {
            "[chart]".to_owned()
        } else {
            format!("[chart: {}]", said.join("; "))
        }
    }
}

/// Reads a chart part (`c:chartSpace`): the text of the chart's own title
/// (not an axis's), and each series' name (`c:ser/c:tx`), whether written
/// out or cached from the workbook behind the chart.
fn read_chart<R: Read + Seek>(
    pkg: &mut Package<R>,
    part: &str,
    limits: &Limits,
) -> Result<ChartNames, ExtractError> {
    let Some(entry) = pkg.entry(part)? else {
        return Ok(ChartNames::default());
    };
    let mut xml = Xml::new(BufReader::new(entry), WHAT, limits.max_xml_depth);
    let mut names = ChartNames::default();
    let mut path: Vec<Vec<u8>> = Vec::new();
    let mut series_name: Option<String> = None;
    loop {
        match xml.next()? {
            Ev::Start(e) => {
                let name = local(&e);
                if name == b"ser" {
                    series_name = Some(String::new());
                }
                path.push(name);
            }
            Ev::Text(t) => {
                let within = |names: &[&[u8]]| {
                    path.windows(names.len())
                        .any(|w| w.iter().zip(names).all(|(a, b)| a.as_slice() == *b))
                };
                let leaf = path.last().map(Vec::as_slice);
                if !matches!(leaf, Some(b"t" | b"v")) {
                    continue;
                }
                if within(&[b"chart", b"title"]) {
                    push_capped(&mut names.title, &t, PARA_CAP);
                } else if within(&[b"ser", b"tx"])
                    && let Some(name) = series_name.as_mut()
                {
                    push_capped(name, &t, PARA_CAP);
                }
            }
            Ev::End(name) => {
                path.pop();
                if name.as_slice() == b"ser"
                    && let Some(series) = series_name.take().map(|n| one_line(&n))
                    && !series.is_empty()
                {
                    if names.series.len() < SERIES_NAMED {
                        names.series.push(series);
                    } else {
                        names.more_series += 1;
                    }
                }
            }
            Ev::Empty(_) => {}
            Ev::Eof => break,
        }
    }
    names.title = one_line(&names.title);
    Ok(names)
}

/// Reads the slides in order, handing each to `emit` with the package (to
/// read a picture's bytes); stops when `emit` returns false. Returns the
/// number of slides the presentation lists.
pub(crate) fn read_slides<R: Read + Seek>(
    reader: R,
    limits: &Limits,
    mut emit: impl FnMut(Slide, &mut Package<R>) -> Result<bool, ExtractError>,
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
    // Each chart part is read once, however many frames of however many slides show it.
    let mut charts = HashMap::new();
    for (i, id) in slide_ids.iter().enumerate() {
        let part = targets.get(id).cloned();
        let shapes = match &part {
            Some(part) => read_slide(&mut pkg, part, &mut charts, limits)?,
            None => Vec::new(),
        };
        let slide = Slide {
            part,
            ..make_slide(i + 1, shapes)
        };
        if !emit(slide, &mut pkg)? {
            break;
        }
    }
    Ok(count)
}

fn read_slide<R: Read + Seek>(
    pkg: &mut Package<R>,
    part: &str,
    charts: &mut HashMap<String, String>,
    limits: &Limits,
) -> Result<Vec<Shape>, ExtractError> {
    let Some(entry) = pkg.entry(part)? else {
        return Ok(Vec::new());
    };
    let mut xml = Xml::new(BufReader::new(entry), WHAT, limits.max_xml_depth);
    let mut done: Vec<Shape> = Vec::new();
    let mut open: Vec<Shape> = Vec::new();
    let mut paras = Paragraphs::default();
    loop {
        match xml.next()? {
            Ev::Start(e) => match local(&e).as_slice() {
                b"sp" | b"graphicFrame" | b"cxnSp" => open.push(Shape::default()),
                b"pic" => open.push(Shape {
                    figure: Some(PICTURE.to_owned()),
                    ..Shape::default()
                }),
                b"cNvPr" => name_picture(&e, &mut open),
                b"chart" => mark_chart(&e, &mut open),
                b"blip" => mark_image(&e, &mut open),
                name @ (b"p" | b"t") => paras.start(name),
                b"ph" => mark_title(&e, &mut open),
                b"Fallback" => xml.skip_element()?,
                _ => {}
            },
            Ev::Empty(e) => match local(&e).as_slice() {
                b"ph" => mark_title(&e, &mut open),
                b"cNvPr" => name_picture(&e, &mut open),
                b"chart" => mark_chart(&e, &mut open),
                b"blip" => mark_image(&e, &mut open),
                name => paras.empty(name),
            },
            Ev::Text(t) => paras.text(&t),
            Ev::End(name) => match name.as_slice() {
                name @ (b"t" | b"p") => {
                    if let Some(p) = paras.end(name) {
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
    // The slide's entry is read to its end: the package can open the chart parts.
    drop(xml);
    resolve_parts(pkg, part, &mut done, charts, limits)?;
    Ok(done)
}

/// Names each chart of a slide from its chart part, and finds each
/// picture's image part, through the slide's relationships; `charts` keeps
/// what each chart part read said.
fn resolve_parts<R: Read + Seek>(
    pkg: &mut Package<R>,
    slide: &str,
    shapes: &mut [Shape],
    charts: &mut HashMap<String, String>,
    limits: &Limits,
) -> Result<(), ExtractError> {
    if shapes
        .iter()
        .all(|s| s.chart.is_none() && s.image.is_none())
    {
        return Ok(());
    }
    let parts: HashMap<String, String> = rels_of(pkg, slide, limits.max_xml_depth)?
        .into_iter()
        .filter(|r| !r.external)
        .map(|r| (r.id, r.target))
        .collect();
    for shape in shapes {
        shape.image = shape.image.take().and_then(|id| parts.get(&id).cloned());
        let Some(part) = shape.chart.as_ref().and_then(|id| parts.get(id)) else {
            continue;
        };
        if !charts.contains_key(part) {
            let figure = read_chart(pkg, part, limits)?.figure();
            charts.insert(part.clone(), figure);
        }
        shape.figure = charts.get(part).cloned();
    }
    Ok(())
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
    let mut pictures = Vec::new();
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
        if let (Some(figure), Some(part)) = (&shape.figure, shape.image) {
            pictures.push((figure.clone(), part));
        }
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
        pictures,
        part: None,
    }
}

/// Most bytes of one picture shown in the HTML preview.
const PICTURE_BYTES: usize = 2 * 1024 * 1024;

/// Shows a slide's picture in the HTML preview as the image itself (a
/// `data:` URL, which the preview's CSP allows and under which nothing
/// runs) when it is a PNG, JPEG, GIF or WebP (by its bytes, not its name)
/// of at most [`PICTURE_BYTES`] that fits in what is left of the body; its
/// `[picture: NAME]` paragraph stays either way.
fn show_picture<R: Read + Seek>(
    body: &mut Body,
    pkg: &mut Package<R>,
    figure: &str,
    part: &str,
) -> Result<(), ExtractError> {
    // base64 makes 3 bytes 4; keep room for the markup around it.
    let room = (body.room().saturating_sub(1024) / 4) * 3;
    let Some(bytes) = pkg.read_binary(part, PICTURE_BYTES.min(room))? else {
        return Ok(());
    };
    let mime = match image::guess_format(&bytes) {
        Ok(image::ImageFormat::Png) => "image/png",
        Ok(image::ImageFormat::Jpeg) => "image/jpeg",
        Ok(image::ImageFormat::Gif) => "image/gif",
        Ok(image::ImageFormat::WebP) => "image/webp",
        _ => return Ok(()),
    };
    body.raw("<figure><img alt=\"");
    body.text(figure);
    body.raw(&format!("\" src=\"data:{mime};base64,"));
    body.raw(&STANDARD.encode(&bytes));
    body.raw("\"></figure>");
    Ok(())
}

/// The text preview: `Slide N: Title` per slide.
pub(crate) fn preview<R: Read + Seek>(
    reader: R,
    max_chars: usize,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let mut sink = LineSink::new(max_chars);
    let count = read_slides(reader, limits, |slide, _| {
        sink.line(&format!("Slide {}: {}", slide.number, slide.title));
        Ok(!sink.full())
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
    let count = read_slides(reader, limits, |slide, pkg| {
        body.raw("<section class=\"ferry-slide\">");
        body.element("h2", &format!("Slide {}: {}", slide.number, slide.title));
        for p in &slide.paragraphs {
            body.raw("<p>");
            body.text_lines(p);
            body.raw("</p>");
        }
        for (figure, part) in &slide.pictures {
            show_picture(&mut body, pkg, figure, part)?;
        }
        body.raw("</section>\n");
        if body.full() {
            body.cut = true;
            return Ok(false);
        }
        Ok(true)
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
    fn a_chart_is_named_by_its_title_and_series() {
        let pres = r#"<p:presentation xmlns:p="p" xmlns:r="r"><p:sldIdLst><p:sldId id="256" r:id="rId1"/></p:sldIdLst></p:presentation>"#;
        let rels = r#"<Relationships><Relationship Id="rId1" Type="s" Target="slides/slide1.xml"/></Relationships>"#;
        let frame = |rid: &str| {
            format!(
                r#"<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="5" name="Chart 4"/></p:nvGraphicFramePr><a:graphic><a:graphicData uri="c"><c:chart xmlns:c="c" r:id="{rid}"/></a:graphicData></a:graphic></p:graphicFrame>"#
            )
        };
        let s1 = slide(&(frame("rId2") + &frame("rId3") + &frame("rId9")));
        let slide_rels = r#"<Relationships><Relationship Id="rId2" Type="c" Target="../charts/chart1.xml"/><Relationship Id="rId3" Type="c" Target="../charts/chart2.xml"/></Relationships>"#;
        // A written-out title, an axis title (not the chart's), series named both ways, and
        // values that are no names.
        let chart1 = r#"<c:chartSpace xmlns:c="c" xmlns:a="a"><c:chart><c:title><c:tx><c:rich><a:p><a:r><a:t>Revenue </a:t></a:r><a:r><a:t>by region</a:t></a:r></a:p></c:rich></c:tx></c:title><c:plotArea><c:barChart><c:ser><c:tx><c:strRef><c:f>Sheet1!$B$1</c:f><c:strCache><c:pt idx="0"><c:v>North</c:v></c:pt></c:strCache></c:strRef></c:tx><c:cat><c:strRef><c:strCache><c:pt idx="0"><c:v>Q1</c:v></c:pt></c:strCache></c:strRef></c:cat><c:val><c:numRef><c:numCache><c:pt idx="0"><c:v>125000</c:v></c:pt></c:numCache></c:numRef></c:val></c:ser><c:ser><c:tx><c:v>South</c:v></c:tx></c:ser></c:barChart><c:valAx><c:title><c:tx><c:rich><a:p><a:r><a:t>EUR</a:t></a:r></a:p></c:rich></c:tx></c:title></c:valAx></c:plotArea></c:chart></c:chartSpace>"#;
        let chart2 = r#"<c:chartSpace xmlns:c="c"><c:chart><c:plotArea><c:lineChart/></c:plotArea></c:chart></c:chartSpace>"#;
        let deck = zip_of(&[
            ("ppt/presentation.xml", pres.as_bytes()),
            ("ppt/_rels/presentation.xml.rels", rels.as_bytes()),
            ("ppt/slides/slide1.xml", s1.as_bytes()),
            ("ppt/slides/_rels/slide1.xml.rels", slide_rels.as_bytes()),
            ("ppt/charts/chart1.xml", chart1.as_bytes()),
            ("ppt/charts/chart2.xml", chart2.as_bytes()),
        ]);
        let text = preview(Cursor::new(deck.clone()), 4000, &Limits::default()).unwrap();
        assert_eq!(
            text,
            "Slide 1: [chart: Revenue by region; series: North, South]"
        );
        let html = html_body(Cursor::new(deck), &Limits::default()).unwrap();
        // A chart whose part names nothing, and one whose part is missing, stay `[chart]`.
        assert_eq!(html.matches("<p>[chart]</p>").count(), 2, "{html}");
    }

    #[test]
    fn the_html_shows_a_slides_pictures_themselves() {
        let pres = r#"<p:presentation xmlns:p="p" xmlns:r="r"><p:sldIdLst><p:sldId id="256" r:id="rId1"/></p:sldIdLst></p:presentation>"#;
        let rels = r#"<Relationships><Relationship Id="rId1" Type="s" Target="slides/slide1.xml"/></Relationships>"#;
        let pic = |name: &str, rid: &str| {
            format!(
                r#"<p:pic><p:nvPicPr><p:cNvPr id="4" name="{name}"/></p:nvPicPr><p:blipFill><a:blip r:embed="{rid}"/></p:blipFill></p:pic>"#
            )
        };
        let s1 = slide(
            &(pic("chart.png", "rId2")
                + &pic("logo.emf", "rId3")
                + &pic("huge.png", "rId4")
                + &pic("fake.png", "rId5")),
        );
        let slide_rels = r#"<Relationships><Relationship Id="rId2" Type="i" Target="../media/image1.png"/><Relationship Id="rId3" Type="i" Target="../media/image2.emf"/><Relationship Id="rId4" Type="i" Target="../media/image3.png"/><Relationship Id="rId5" Type="i" Target="../media/image4.png"/></Relationships>"#;
        let png = ferry_test_support::documents::png(3, 2);
        let mut huge = png.clone();
        huge.resize(PICTURE_BYTES + 1, 0);
        let deck = zip_of(&[
            ("ppt/presentation.xml", pres.as_bytes()),
            ("ppt/_rels/presentation.xml.rels", rels.as_bytes()),
            ("ppt/slides/slide1.xml", s1.as_bytes()),
            ("ppt/slides/_rels/slide1.xml.rels", slide_rels.as_bytes()),
            ("ppt/media/image1.png", &png),
            (
                "ppt/media/image2.emf",
                b"\x01\x00\x00\x00 not a raster image",
            ),
            ("ppt/media/image3.png", &huge),
            ("ppt/media/image4.png", b"<svg onload=alert(1)>"),
        ]);
        let html = html_body(Cursor::new(deck.clone()), &Limits::default()).unwrap();
        // The PNG is shown; an EMF, one over the limit and one that is no image by its bytes
        // are named only.
        assert_eq!(html.matches("<img").count(), 1, "{html}");
        let shown = format!(
            r#"<img alt="[picture: chart.png]" src="data:image/png;base64,{}">"#,
            STANDARD.encode(&png)
        );
        assert!(html.contains(&shown), "{html}");
        for named in ["logo.emf", "huge.png", "fake.png"] {
            assert!(
                html.contains(&format!("<p>[picture: {named}]</p>")),
                "{html}"
            );
        }
        // A body with no room left shows no picture, and still names it.
        let tight = Limits {
            html_body_bytes: 600,
            ..Limits::default()
        };
        let html = html_body(Cursor::new(deck), &tight).unwrap();
        assert!(!html.contains("<img"), "{html}");
    }

    #[test]
    fn a_chart_of_many_series_says_how_many_more() {
        let names = ChartNames {
            title: String::new(),
            series: vec!["A".into(), "B".into()],
            more_series: 3,
        };
        assert_eq!(names.figure(), "[chart: series: A, B and 3 more]");
        assert_eq!(ChartNames::default().figure(), "[chart]");
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
