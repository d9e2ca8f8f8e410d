//! Documents as a model reads them (`read_file`) and a search searches them (`grep` with
//! `documents: true`): the text of each part of the document, with where that part is.
//!
//! | type | sections |
//! | --- | --- |
//! | `.pdf` | one per page with text, numbered from 1 |
//! | `.xlsx .xlsm .xls` | one per sheet: its first [`SEARCH_ROWS`] rows from its first non-empty one as a Markdown table, the first row as the header, and a line counting the rows left out |
//! | `.pptx` | one per slide: its title, its text (a picture as `[picture: NAME]`, a chart as `[chart: …]`), then `Notes:` and its speaker notes |
//! | `.docx` | one for the whole document, read as its preview is (headings as `#`, table rows as `a \| b`) |
//!
//! A document's sections hold at most [`SEARCH_MAX_CHARS`] characters in all; the text past
//! them is not read, and [`DocumentText::cut`] says so.
//!
//! As one text ([`DocumentText::render`]), each section follows a heading line of its own
//! (`## Page 2`, `## Sheet: Orders`, `## Slide 3`; a Word document has none), with a blank line
//! between sections: what `read_file` pages through, and what `grep`'s line numbers count.

use std::io::{Read, Seek};

use serde::{Deserialize, Serialize};

use crate::error::ExtractError;
use crate::kind::{Format, format_of};
use crate::limits::Limits;
use crate::text::{CUT_MARK, one_line};
use crate::{docx, pptx};

/// Rows of each sheet a search reads (as OpenAI's file search reads a spreadsheet).
pub const SEARCH_ROWS: usize = 1_000;
/// Characters of one document a search reads at most.
pub const SEARCH_MAX_CHARS: usize = 2_000_000;

/// A document's text as a search reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentText {
    /// The document's parts, in order.
    pub sections: Vec<Section>,
    /// The text reached [`SEARCH_MAX_CHARS`]: what followed was not read.
    pub cut: bool,
}

/// One part of a document: a page, a sheet, a slide, or (a Word document) the whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Section {
    /// The PDF page, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The sheet's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// The slide, from 1, in presentation order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slide: Option<u32>,
    /// A sheet's table: the spreadsheet row (from 1, as a spreadsheet numbers it) of its header
    /// line and how many rows the table shows; see [`Section::row_of`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<(u32, u32)>,
    /// The text, lines separated by `\n`.
    pub text: String,
}

impl DocumentText {
    /// The document as one text: each section under its heading, a blank line between them.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (i, section) in self.sections.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            if let Some(heading) = section.heading() {
                out.push_str(&heading);
                out.push('\n');
            }
            out.push_str(section.text.trim_end_matches('\n'));
            out.push('\n');
        }
        out
    }

    /// The line (from 1) of [`DocumentText::render`]'s text on which each section's text
    /// starts.
    pub fn starts(&self) -> Vec<u64> {
        let mut line = 1u64;
        self.sections
            .iter()
            .enumerate()
            .map(|(i, section)| {
                line += u64::from(i > 0) + u64::from(section.heading().is_some());
                let start = line;
                line += section.text.trim_end_matches('\n').split('\n').count() as u64;
                start
            })
            .collect()
    }
}

impl Section {
    /// The line that heads the section in the document's text, if it has one.
    pub fn heading(&self) -> Option<String> {
        match (self.page, &self.sheet, self.slide) {
            (Some(page), _, _) => Some(format!("## Page {page}")),
            (_, Some(sheet), _) => Some(format!("## Sheet: {sheet}")),
            (_, _, Some(slide)) => Some(format!("## Slide {slide}")),
            _ => None,
        }
    }

    fn new(text: String) -> Section {
        Section {
            page: None,
            sheet: None,
            slide: None,
            rows: None,
            text,
        }
    }

    /// The spreadsheet row that line `line` (from 1) of a sheet's table shows: line 1 is the
    /// header, line 2 the Markdown separator (no row), line 3 the row below the header, and so
    /// on; `None` outside a sheet's table.
    pub fn row_of(&self, line: u64) -> Option<u32> {
        let (first, shown) = self.rows?;
        let row = match line {
            1 => 0,
            2 => return None,
            n if n - 2 < u64::from(shown) => u32::try_from(n - 2).ok()?,
            _ => return None,
        };
        first.checked_add(row)
    }
}

/// What is left of a document's character budget.
struct Budget {
    left: usize,
    cut: bool,
}

impl Budget {
    /// Takes `text` within what is left, cut with `…` when it does not fit.
    fn take(&mut self, text: String) -> String {
        let chars = text.chars().count();
        if chars <= self.left {
            self.left -= chars;
            return text;
        }
        self.cut = true;
        let kept = crate::text::clip(text, self.left);
        self.left = 0;
        kept
    }

    fn spent(&self) -> bool {
        self.left == 0
    }
}

/// The text of the document read from `reader`, named `file_name`, as a search reads it, in
/// this process (for untrusted documents, [`crate::Extractor::document_text`] runs it in the
/// worker).
pub fn document_text_reader<R: Read + Seek>(
    reader: R,
    file_name: &str,
    limits: &Limits,
) -> Result<DocumentText, ExtractError> {
    let mut budget = Budget {
        left: SEARCH_MAX_CHARS,
        cut: false,
    };
    let mut sections = Vec::new();
    match format_of(file_name) {
        Format::Pdf => {
            let bytes = crate::limits::read_all(reader, limits)?;
            let (pages, stopped) = crate::pdf_page_text::pages_text(&bytes, SEARCH_MAX_CHARS)?;
            budget.cut = stopped;
            for (number, text) in pages {
                if budget.spent() {
                    break;
                }
                sections.push(Section {
                    page: Some(number),
                    ..Section::new(budget.take(text))
                });
            }
        }
        Format::Docx => {
            let text = docx::preview(reader, SEARCH_MAX_CHARS, limits)?;
            budget.cut = text.ends_with(CUT_MARK) && text.chars().count() == SEARCH_MAX_CHARS;
            sections.push(Section::new(text));
        }
        format @ (Format::Xlsx | Format::Xls) => {
            crate::sheet_markdown::tables(
                reader,
                format == Format::Xls,
                SEARCH_ROWS,
                limits,
                |name, view| {
                    let (rows, text) = match view {
                        Some(view) => {
                            let header = view.first_row.saturating_add(1);
                            let shown = u32::try_from(view.rows.len()).unwrap_or(u32::MAX);
                            (Some((header, shown)), view.markdown())
                        }
                        None => (None, "(empty)\n".to_owned()),
                    };
                    sections.push(Section {
                        sheet: Some(one_line(&name)),
                        rows,
                        ..Section::new(budget.take(text))
                    });
                    !budget.spent()
                },
            )?;
        }
        Format::Pptx => {
            pptx::read_slides(reader, limits, |slide, pkg| {
                // A slide with no text at all is named "(untitled)" in a preview; a search
                // finds nothing on it.
                let untitled = slide.paragraphs.is_empty() && slide.title == "(untitled)";
                let mut lines = if untitled { vec![] } else { vec![slide.title] };
                lines.extend(slide.paragraphs.iter().map(|p| one_line(p)));
                let notes = match &slide.part {
                    Some(part) => crate::pptx_notes::notes_of(pkg, part, limits)?,
                    None => Vec::new(),
                };
                if !notes.is_empty() {
                    lines.push("Notes:".to_owned());
                    lines.extend(notes.iter().map(|p| one_line(p)));
                }
                sections.push(Section {
                    slide: u32::try_from(slide.number).ok(),
                    ..Section::new(budget.take(lines.join("\n")))
                });
                Ok(!budget.spent())
            })?;
        }
        _ => {
            return Err(ExtractError::Unsupported(format!(
                "{file_name} is not a document whose text is extracted (PDF, DOCX, XLSX, XLS, PPTX)"
            )));
        }
    }
    Ok(DocumentText {
        sections,
        cut: budget.cut,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::tests::zip_of;
    use std::io::Cursor;

    #[test]
    fn a_sheet_reads_as_a_markdown_table_whose_lines_name_their_rows() {
        let section = Section {
            rows: Some((3, 4)),
            ..Section::new(String::new())
        };
        assert_eq!(section.row_of(1), Some(3), "the header");
        assert_eq!(section.row_of(2), None, "the separator");
        assert_eq!(section.row_of(3), Some(4));
        assert_eq!(section.row_of(5), Some(6));
        assert_eq!(section.row_of(6), None, "the note below the table");
        assert_eq!(Section::new(String::new()).row_of(1), None);
    }

    #[test]
    fn a_deck_reads_slide_by_slide_with_its_notes() {
        let deck = zip_of(&[
            (
                "ppt/presentation.xml",
                br#"<p:presentation xmlns:p="p" xmlns:r="r"><p:sldIdLst><p:sldId r:id="rId1"/><p:sldId r:id="rId2"/></p:sldIdLst></p:presentation>"#,
            ),
            (
                "ppt/_rels/presentation.xml.rels",
                br#"<Relationships><Relationship Id="rId1" Type="t/slide" Target="slides/slide1.xml"/><Relationship Id="rId2" Type="t/slide" Target="slides/slide2.xml"/></Relationships>"#,
            ),
            (
                "ppt/slides/slide1.xml",
                br#"<p:sld xmlns:p="p" xmlns:a="a"><p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Results</a:t></a:r></a:p></p:txBody></p:sp><p:sp><p:txBody><a:p><a:r><a:t>Revenue grew</a:t></a:r></a:p></p:txBody></p:sp></p:sld>"#,
            ),
            (
                "ppt/slides/_rels/slide1.xml.rels",
                br#"<Relationships><Relationship Id="rId9" Type="http://x/notesSlide" Target="../notesSlides/notesSlide1.xml"/></Relationships>"#,
            ),
            (
                "ppt/notesSlides/notesSlide1.xml",
                br#"<p:notes xmlns:p="p" xmlns:a="a"><p:sp><p:nvSpPr><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Mention Banana</a:t></a:r></a:p></p:txBody></p:sp><p:sp><p:nvSpPr><p:nvPr><p:ph type="sldNum"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>1</a:t></a:r></a:p></p:txBody></p:sp></p:notes>"#,
            ),
            (
                "ppt/slides/slide2.xml",
                br#"<p:sld xmlns:p="p" xmlns:a="a"><p:sp><p:txBody><a:p><a:r><a:t>Next steps</a:t></a:r></a:p></p:txBody></p:sp></p:sld>"#,
            ),
        ]);
        let text = document_text_reader(Cursor::new(deck), "d.pptx", &Limits::default()).unwrap();
        assert!(!text.cut);
        let slides: Vec<_> = text
            .sections
            .iter()
            .map(|s| (s.slide, s.text.as_str()))
            .collect();
        assert_eq!(
            slides,
            [
                (Some(1), "Results\nRevenue grew\nNotes:\nMention Banana"),
                (Some(2), "Next steps"),
            ]
        );
    }

    #[test]
    fn a_document_renders_each_section_under_its_heading_and_says_where_each_starts() {
        let text = DocumentText {
            sections: vec![
                Section {
                    slide: Some(1),
                    ..Section::new("Title\nbody".into())
                },
                Section {
                    slide: Some(2),
                    ..Section::new(String::new())
                },
                Section {
                    slide: Some(3),
                    ..Section::new("Last\n".into())
                },
            ],
            cut: false,
        };
        let (rendered, starts) = (text.render(), text.starts());
        assert_eq!(
            rendered,
            "## Slide 1\nTitle\nbody\n\n## Slide 2\n\n\n## Slide 3\nLast\n"
        );
        assert_eq!(starts, [2, 6, 9]);
        let lines: Vec<&str> = rendered.lines().collect();
        assert_eq!(lines[8], "Last");
        let word = DocumentText {
            sections: vec![Section::new("# Report\ntext".into())],
            cut: false,
        };
        assert_eq!(word.render(), "# Report\ntext\n");
        assert_eq!(word.starts(), [1]);
    }

    #[test]
    fn a_budget_cuts_the_text_and_says_so() {
        let mut budget = Budget {
            left: 5,
            cut: false,
        };
        assert_eq!(budget.take("abc".into()), "abc");
        assert_eq!(budget.take("defg".into()), "d…");
        assert!(budget.cut && budget.spent());
    }

    #[test]
    fn other_files_are_not_read_as_documents() {
        let err = document_text_reader(Cursor::new(b"a,b"), "a.csv", &Limits::default());
        assert!(matches!(err, Err(ExtractError::Unsupported(_))));
    }
}
