//! Every file of the shared corpus (documents made by other people's tools,
//! from the test suites of calamine, python-docx, python-pptx and
//! pdfminer.six) goes through the worker, as an upload would. Readable
//! files must show what the source project's own reader shows; the hostile,
//! damaged and encrypted ones must end in an error or a preview within
//! seconds, never a crash or a hang of this process.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{corpus_dir, extractor};
use ferry_extract::{ExtractError, PreviewKind, preview_kind};

/// Generous: the worker's own wall-clock limit is 20 s and its CPU limit
/// 10 s; a corpus file that takes seconds is already a bug.
const PER_FILE: Duration = Duration::from_secs(15);

async fn preview_in(corpus: &Path, rel: &str) -> Result<String, ExtractError> {
    let p = corpus.join(rel);
    let name = p.file_name().unwrap().to_string_lossy().into_owned();
    let started = Instant::now();
    let result = extractor().preview("test", &p, &name, 4000).await;
    assert!(
        started.elapsed() < PER_FILE,
        "{rel} took {:?}",
        started.elapsed()
    );
    result.map(|p| p.text.unwrap_or_default())
}

async fn text_in(corpus: &Path, rel: &str) -> String {
    preview_in(corpus, rel)
        .await
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[tokio::test]
async fn docx_matches_python_docx() {
    let Some(corpus) = corpus_dir() else { return };
    let text = |rel| text_in(&corpus, rel);
    let t = text("docx/par-known-paragraphs.docx").await;
    assert_eq!(t, "# Heading Paragraph\nNormal paragraph");
    let t = text("docx/hdr-header-footer.docx").await;
    assert_eq!(t, "section with header\nsection without header of its own.");
    // Its tables have only empty cells, as python-docx shows them.
    assert_eq!(text("docx/tbl-having-tables.docx").await, "");
}

#[tokio::test]
async fn pptx_matches_python_pptx() {
    let Some(corpus) = corpus_dir() else { return };
    let text = |rel| text_in(&corpus, rel);
    assert_eq!(text("pptx/minimal.pptx").await, "(no slides)");
    // python-pptx finds no text on the slide; ferry says what it holds.
    assert_eq!(
        text("pptx/cht-charts.pptx").await,
        "Slide 1: [chart: series: Series 1, Series 2, Series 3]"
    );
    let t = text("pptx/ph-populated-placeholders.pptx").await;
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 9, "{t}");
    // python-pptx finds a title only on slide 5; slides 6 and 7 are named
    // by their first text, and slide 1, which holds only a picture, by it.
    assert_eq!(lines[4], "Slide 5: Title Text");
    assert_eq!(lines[5], "Slide 6: Content");
    assert_eq!(lines[6], "Slide 7: Body text");
    assert_eq!(lines[0], "Slide 1: [picture: monty-truth.png]");
}

#[tokio::test]
async fn xlsx_matches_openpyxl() {
    let Some(corpus) = corpus_dir() else { return };
    let text = |rel| text_in(&corpus, rel);
    assert_eq!(
        text("xlsx/date.xlsx").await,
        // openpyxl: datetime(2021, 1, 1), datetime(2021, 1, 2),
        // timedelta(days=10, seconds=54610).
        "Sheet1: 2021-01-01 | 15\nRow 1: 2021-01-02 | 16\nRow 2: 255:10:10 | 17"
    );
    assert_eq!(
        text("xlsx/inventory-table.xlsx").await,
        "Sheet1: Item | Type | Quantity\nRow 1: 1 | Apple | 50\nRow 2: 2 | Banana | 200\nRow 3: 3 | Orange | 60\nRow 4: 4 | Pear | 100"
    );
    assert_eq!(text("xlsx/empty_sheet.xlsx").await, "Sheet1: (empty)");
    // "&" and a lone line break, which becomes an empty cell.
    assert_eq!(text("xlsx/encoded_entities.xlsx").await, "Sheet1: &");
    let t = text("xlsx/any_sheets.xlsx").await;
    assert!(
        t.starts_with("Visible: 1 | 2\nRow 1: 3 | 4\nRow 2: 5 | 6\nRow 3:\nRow 4: This workbook contains 4 sheets: Visible, Hidden, VeryHidden and Chart"),
        "{t}"
    );
    assert!(
        t.contains("\n\nHidden: (empty)") && t.contains("\n\nVeryHidden: (empty)"),
        "{t}"
    );
    let t = text("xlsx/issue127.xls").await;
    assert!(t.starts_with("Sheet1:"), "{t}");
}

#[tokio::test]
async fn pdf_matches_pdfminer() {
    let Some(corpus) = corpus_dir() else { return };
    let text = |rel| text_in(&corpus, rel);
    let t = text("pdf/simple1.pdf").await;
    assert_eq!(t.matches("Hello").count(), 3, "{t}");
    assert_eq!(t.matches("World").count(), 3, "{t}");
    assert!(t.contains("H e l l o"), "{t}");
    let t = text("pdf/simple3.pdf").await;
    assert!(t.starts_with("Hello"), "{t}");
    // Its Japanese is shown through the predefined CMap `V` (JIS X 0208, vertical) in a font
    // with no descriptor: rewritten as CIDs, it reads through the Adobe-Japan1 table.
    assert!(t.contains("あいうえお"), "{t}");
    assert!(t.contains("World"), "{t}");
    let t = text("pdf/font-size-test.pdf").await;
    for s in ["OSX Styles", "Arial font", "Batang font", "10.5", "72"] {
        assert!(t.contains(s), "{s} not in {t}");
    }
    // jo.pdf's Japanese text uses a font of the Adobe-Japan1 collection, not embedded, with no
    // Unicode map of its own: the collection's CID → Unicode table reads it, in order.
    let t = text("pdf/jo.pdf").await;
    assert!(
        t.starts_with("\u{3000}\u{3000}序\nわたくしといふ現象は假定された有機交流電燈"),
        "{t}"
    );
    assert!(
        t.trim_end()
            .ends_with("大正十三年一月廿日\u{3000}\u{3000}宮澤賢治"),
        "{t}"
    );
    // Every stream's /Filter is a reference to [/FlateDecode]: followed, the text is there.
    let t = text("pdf-samples/contrib_issue-1062-filters.pdf").await;
    assert!(t.split_whitespace().count() > 300, "{t}");
    // Identity-H fonts with no usable /ToUnicode (a name stands there): their characters come
    // from the embedded TrueType font's own cmap, Polish letters included.
    let t = text("pdf-samples/contrib_issue-625-identity-cmap.pdf").await;
    for s in ["Faktura nr FV 1/2021", "Sprzedawca", "Kacza 11/2"] {
        assert!(t.contains(s), "{s} not in {t}");
    }
}

#[tokio::test]
async fn hostile_damaged_and_encrypted_files_end_quickly() {
    let Some(corpus) = corpus_dir() else { return };
    let preview = |rel| preview_in(&corpus, rel);
    assert_eq!(
        preview("pdf/aes-128.pdf").await,
        Err(ExtractError::Encrypted)
    );
    for rel in [
        "pdf/issue-1113-evil-xobjects.pdf",
        "pdf/zen_of_python_corrupted.pdf",
        "xlsx/OOM_alloc.xls",
    ] {
        // Either outcome is acceptable; the test is that it comes back.
        match preview(rel).await {
            Ok(t) => assert!(t.chars().count() <= 4000),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    if let Ok(t) = preview("pdf/zen_of_python_corrupted.pdf").await {
        assert!(t.contains("Beautiful is better than ugly."), "{t}");
    }
}

#[tokio::test]
async fn every_corpus_file_previews_and_renders_within_limits() {
    let Some(corpus) = corpus_dir() else { return };
    let ex = extractor();
    let mut seen = 0;
    for dir in ["docx", "pptx", "xlsx", "pdf"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for p in files {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let started = Instant::now();
            let preview = ex.preview("test", &p, &name, 4000).await;
            if preview_kind(&name) == PreviewKind::Html {
                match ex.render_html("test", &p, &name).await {
                    Ok(html) => {
                        assert!(html.starts_with("<!DOCTYPE html>"));
                        assert!(!html.contains("<script"));
                    }
                    // Only the crafted workbook may fail to render.
                    Err(e) => assert_eq!(name, "OOM_alloc.xls", "{name}: {e}"),
                }
            }
            assert!(
                started.elapsed() < PER_FILE * 2,
                "{name} took {:?}",
                started.elapsed()
            );
            if let Ok(p) = &preview {
                assert!(p.text.as_ref().is_some_and(|t| t.chars().count() <= 4000));
            }
            eprintln!(
                "{name}: {:?}",
                preview.map(|p| p.text.map(|t| t.chars().count()))
            );
            seen += 1;
        }
    }
    assert!(seen >= 20, "only {seen} corpus files found");
}
