//! Exact previews and HTML renderings of the committed fixtures, made
//! through the worker process as the server makes them. The fixtures come
//! from tests/fixtures/make_fixtures.py (openpyxl, xlwt, python-docx,
//! python-pptx, reportlab) and make_images.py (Pillow).

mod common;

use common::{assert_safe_document, extractor, fixture};
use ferry_extract::{ExtractError, Extractor, Preview};

async fn text(name: &str, max_chars: usize) -> String {
    let preview = extractor()
        .preview("test", &fixture(name), name, max_chars)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    preview.text.unwrap_or_else(|| panic!("{name}: no text"))
}

async fn html(ex: &Extractor, name: &str) -> String {
    let html = ex
        .render_html("test", &fixture(name), name)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_safe_document(&html);
    html
}

#[tokio::test]
async fn xlsx_preview_is_the_seed_format() {
    assert_eq!(
        text("seed.xlsx", 4000).await,
        "Sheet1: Revenue | Q1 | Q2 | Q3 | Q4\n\
         Row 1: North | 125000 | 132000 | 141000 | 156000\n\
         Row 2: South | 98000 | 103000 | 115000 | 122000\n\
         \n\
         Orders: Order | Amount\n\
         Row 1: A-001 | 10.5\n\
         Row 2: A-002 | 21\n\
         Row 3: A-003 | 31.5\n\
         Row 4: A-004 | 42\n\
         Row 5: A-005 | 52.5\n\
         Row 6: A-006 | 63\n\
         Row 7: A-007 | 73.5\n\
         Row 8: A-008 | 84\n\
         Row 9: A-009 | 94.5\n\
         Row 10: A-010 | 105\n\
         Row 11: A-011 | 115.5\n\
         Row 12: A-012 | 126\n\
         Row 13: A-013 | 136.5\n\
         Row 14: A-014 | 147\n\
         Row 15: A-015 | 157.5\n\
         Row 16: A-016 | 168\n\
         Row 17: A-017 | 178.5\n\
         Row 18: A-018 | 189\n\
         Row 19: A-019 | 199.5\n\
         ... (first 20 rows)\n\
         \n\
         Kinds: Kind | Value\n\
         Row 1: date | 2021-01-01\n\
         Row 2: datetime | 2021-01-01T10:30:00\n\
         Row 3: float | 0.1\n\
         Row 4: whole float | 42\n\
         Row 5: bool | TRUE\n\
         Row 6: error | #DIV/0!\n\
         Row 7: empty |  | after empty\n\
         Row 8: multi-line | one two"
    );
}

#[tokio::test]
async fn xls_preview_is_the_seed_format() {
    assert_eq!(
        text("seed.xls", 4000).await,
        "Sheet1: Revenue | Q1 | Q2 | Q3 | Q4\n\
         Row 1: North | 125000 | 132000 | 141000 | 156000\n\
         Row 2: South | 98000 | 103000 | 115000 | 122000"
    );
}

#[tokio::test]
async fn previews_are_cut_to_max_chars_with_a_mark() {
    let full = text("seed.xlsx", 4000).await;
    let cut = text("seed.xlsx", 60).await;
    assert_eq!(cut.chars().count(), 60);
    let expected: String = full.chars().take(59).chain(['…']).collect();
    assert_eq!(cut, expected);
    // Multi-byte characters are counted as characters.
    assert_eq!(text("report.docx", 3).await, "# …");
}

#[tokio::test]
async fn docx_preview_has_headings_paragraphs_and_table_rows() {
    assert_eq!(
        text("report.docx", 4000).await,
        "# Quarterly Report\n\
         # Summary\n\
         Revenue grew in every region this quarter.\n\
         The North region led with 156,000 in Q4.\n\
         ## Figures\n\
         Region | Q3 | Q4\n\
         North | 141000 | 156000\n\
         South | 115000 | 122000\n\
         Prepared for <script>alert(1)</script> & friends."
    );
}

#[tokio::test]
async fn pptx_preview_follows_presentation_order() {
    // The slide without text was moved to second place in sldIdLst; its
    // part is still the last one in the zip.
    assert_eq!(
        text("deck.pptx", 4000).await,
        "Slide 1: Quarterly Review\n\
         Slide 2: (untitled)\n\
         Slide 3: Revenue by Region\n\
         Slide 4: Only a text box here"
    );
}

#[tokio::test]
async fn pdf_preview_is_the_text_in_reading_order() {
    assert_eq!(
        text("two-pages.pdf", 4000).await,
        "Ferry fixture, page one.\n\
         The quick brown fox jumps over the lazy dog.\n\
         \n\
         Page two says hello."
    );
}

#[tokio::test]
async fn csv_preview_matches_the_sheet_style() {
    let t = text("orders.csv", 4000).await;
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 21);
    assert_eq!(lines[0], "Order | Customer | Amount");
    assert_eq!(lines[1], "Row 1: A-001 | Customer 1 | 3");
    assert_eq!(lines[5], "Row 5: A-005 | Customer 5, Ltd | 15");
    assert_eq!(lines[19], "Row 19: A-019 | Customer 19 | 57");
    assert_eq!(lines[20], "... (first 20 rows)");
}

#[tokio::test]
async fn images_give_their_size_in_process() {
    let dir = tempfile::tempdir().unwrap();
    // A 1x1 PNG header is enough for imagesize.
    let png = [
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0,
        2, 0x80, 0, 0, 1, 0xE0, 8, 2, 0, 0, 0,
    ];
    let path = common::write(dir.path(), "shot.png", &png);
    let p = extractor()
        .preview("test", &path, "shot.png", 4000)
        .await
        .unwrap();
    assert_eq!(
        p,
        Preview {
            text: None,
            width: Some(640),
            height: Some(480)
        }
    );
}

#[tokio::test]
async fn docx_renders_as_headings_paragraphs_and_a_table() {
    let h = html(&extractor(), "report.docx").await;
    assert!(h.contains("<h1>Quarterly Report</h1>"), "{h}");
    assert!(h.contains("<h2>Figures</h2>"), "{h}");
    assert!(
        h.contains("<p>The <strong>North</strong> region led with <em>156,000</em> in Q4.</p>"),
        "{h}"
    );
    assert!(
        h.contains("<tr><td>North</td><td>141000</td><td>156000</td></tr>"),
        "{h}"
    );
    assert!(
        h.contains("Prepared for &lt;script&gt;alert(1)&lt;/script&gt; &amp; friends."),
        "{h}"
    );
}

#[tokio::test]
async fn xlsx_renders_a_table_per_sheet_with_notes_when_cut() {
    let mut cfg = common::config();
    cfg.limits.html_rows = 10;
    let h = html(&Extractor::new(cfg), "seed.xlsx").await;
    assert_eq!(h.matches("<table>").count(), 3);
    assert!(h.contains("<h2>Sheet1</h2>"));
    assert!(
        h.contains("<tr><th class=\"ferry-rownum\">2</th><td>North</td><td>125000</td>"),
        "{h}"
    );
    assert!(
        h.contains("<th>A</th><th>B</th><th>C</th><th>D</th><th>E</th>"),
        "{h}"
    );
    assert_eq!(
        h.matches("This table is larger; the first 10 rows are shown.")
            .count(),
        1
    );

    let x = html(&extractor(), "seed.xls").await;
    assert!(x.contains("<td>South</td><td>98000</td>"), "{x}");
}

#[tokio::test]
async fn pptx_renders_a_section_per_slide() {
    let h = html(&extractor(), "deck.pptx").await;
    assert_eq!(h.matches("<section class=\"ferry-slide\">").count(), 4);
    assert!(
        h.contains("<h2>Slide 1: Quarterly Review</h2><p>Ferry fixture deck</p>"),
        "{h}"
    );
    assert!(
        h.contains("<h2>Slide 3: Revenue by Region</h2><p>North: 156,000</p><p>South: 122,000</p>"),
        "{h}"
    );
}

#[tokio::test]
async fn csv_renders_a_table_with_its_header() {
    let h = html(&extractor(), "orders.csv").await;
    assert!(
        h.contains("<thead><tr><th>Order</th><th>Customer</th><th>Amount</th></tr></thead>"),
        "{h}"
    );
    assert!(h.contains("<td>Customer 5, Ltd</td>"));
    assert_eq!(h.matches("<tr>").count(), 26);
}

#[tokio::test]
async fn text_markdown_json_and_html_source_render_safely() {
    let dir = tempfile::tempdir().unwrap();
    let ex = extractor();
    let md = common::write(
        dir.path(),
        "notes.md",
        b"# Notes\n\n* one\n* two\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n\n<img src=\"https://tracker.example/p.gif\" onerror=\"alert(1)\">\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
    );
    let h = ex.render_html("test", &md, "notes.md").await.unwrap();
    assert_safe_document(&h);
    assert!(
        h.contains("<h1>Notes</h1>") && h.contains("<li>one</li>") && h.contains("<td>1</td>"),
        "{h}"
    );

    let js = common::write(
        dir.path(),
        "data.json",
        br#"{"z":1,"a":[true,null],"s":"<b>"}"#,
    );
    let h = ex.render_html("test", &js, "data.json").await.unwrap();
    assert_safe_document(&h);
    assert!(h.contains("<pre>{\n  &quot;z&quot;: 1,\n  &quot;a&quot;: [\n    true,\n    null\n  ],\n  &quot;s&quot;: &quot;&lt;b&gt;&quot;\n}</pre>"), "{h}");

    let page = common::write(
        dir.path(),
        "page.html",
        b"<html><body onload=\"x()\"><script src=\"https://e.com/a.js\"></script></body></html>",
    );
    let h = ex.render_html("test", &page, "page.html").await.unwrap();
    assert_safe_document(&h);
    assert!(
        h.contains("<pre>&lt;html&gt;&lt;body onload=&quot;x()&quot;&gt;"),
        "{h}"
    );

    let code = common::write(
        dir.path(),
        "main.rs",
        b"fn main() { println!(\"<hi>\"); }\n",
    );
    let h = ex.render_html("test", &code, "main.rs").await.unwrap();
    assert!(
        h.contains("<pre>fn main() { println!(&quot;&lt;hi&gt;&quot;); }\n</pre>"),
        "{h}"
    );
}

#[tokio::test]
async fn kinds_without_html_are_refused() {
    let ex = extractor();
    for name in ["two-pages.pdf", "shot.png", "logo.svg", "archive.zip"] {
        assert!(matches!(
            ex.render_html("test", &fixture("two-pages.pdf"), name)
                .await,
            Err(ExtractError::Unsupported(_))
        ));
    }
}

/// The image a model is shown of a fixture, decoded again.
async fn shown(name: &str) -> (String, image::DynamicImage) {
    use base64::Engine as _;
    let shown = extractor()
        .model_image("test", &fixture(name))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&shown.base64)
        .unwrap();
    assert!(bytes.len() <= ferry_extract::MODEL_MAX_BYTES);
    let image = image::load_from_memory(&bytes).unwrap();
    assert_eq!((image.width(), image.height()), (shown.width, shown.height));
    (shown.mime_type, image)
}

#[tokio::test]
async fn a_phone_photo_is_turned_upright_by_its_exif_orientation() {
    let (mime, image) = shown("photo-rotated.jpg").await;
    assert_eq!(mime, "image/jpeg");
    assert_eq!((image.width(), image.height()), (200, 300));
    // The yellow marker stored top-left is top-right once turned 90° clockwise.
    let [r, g, b] = image.to_rgb8().get_pixel(180, 20).0;
    assert!(r > 200 && g > 200 && b < 80, "{r} {g} {b}");
}

#[tokio::test]
async fn an_animated_gif_is_its_first_frame_as_png() {
    let (mime, image) = shown("animated.gif").await;
    assert_eq!(mime, "image/png");
    assert_eq!((image.width(), image.height()), (64, 48));
    assert_eq!(image.to_rgb8().get_pixel(10, 10).0, [255, 0, 0]);
}

#[tokio::test]
async fn a_transparent_webp_is_sent_as_png_with_its_alpha() {
    let (mime, image) = shown("alpha.webp").await;
    assert_eq!(mime, "image/png");
    assert_eq!((image.width(), image.height()), (80, 60));
    assert!(image.color().has_alpha());
}

#[tokio::test]
async fn a_wide_png_is_scaled_to_1568_pixels_across() {
    let (mime, image) = shown("wide.png").await;
    assert_eq!(mime, "image/png");
    assert_eq!((image.width(), image.height()), (1568, 392));
    let rgba = image.to_rgba8();
    assert_eq!(
        rgba.get_pixel(10, 200).0,
        [200, 40, 40, 255],
        "the left half stays red"
    );
    assert_eq!(
        rgba.get_pixel(1500, 200).0[3],
        0,
        "the right half stays clear"
    );
}

#[tokio::test]
async fn documents_are_searched_page_by_page_sheet_by_sheet_and_slide_by_slide() {
    let text = |name: &'static str| async move {
        extractor()
            .document_text("test", &fixture(name), name)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let book = text("seed.xlsx").await;
    let sheets: Vec<_> = book
        .sections
        .iter()
        .map(|s| (s.sheet.as_deref().unwrap(), s.rows))
        .collect();
    assert_eq!(
        sheets,
        [
            ("Sheet1", Some((1, 3))),
            ("Orders", Some((1, 31))),
            ("Kinds", Some((1, 9)))
        ]
    );
    assert_eq!(
        book.sections[0].text,
        "| Revenue | Q1 | Q2 | Q3 | Q4 |\n\
         | --- | --- | --- | --- | --- |\n\
         | North | 125000 | 132000 | 141000 | 156000 |\n\
         | South | 98000 | 103000 | 115000 | 122000 |\n"
    );
    assert!(
        book.sections[2]
            .text
            .contains("| empty |  | after empty |\n| multi-line | one two |  |\n"),
        "{}",
        book.sections[2].text
    );
    assert!(!book.cut);

    let pdf = text("two-pages.pdf").await;
    let pages: Vec<_> = pdf
        .sections
        .iter()
        .map(|s| (s.page.unwrap(), s.text.as_str()))
        .collect();
    assert_eq!(
        pages,
        [
            (
                1,
                "Ferry fixture, page one.\nThe quick brown fox jumps over the lazy dog."
            ),
            (2, "Page two says hello."),
        ]
    );

    let deck = text("deck.pptx").await;
    let slides: Vec<_> = deck
        .sections
        .iter()
        .map(|s| (s.slide.unwrap(), s.text.as_str()))
        .collect();
    assert_eq!(
        slides,
        [
            (1, "Quarterly Review\nFerry fixture deck"),
            (2, ""),
            (3, "Revenue by Region\nNorth: 156,000\nSouth: 122,000"),
            (4, "Only a text box here"),
        ]
    );

    let report = text("report.docx").await;
    assert_eq!(report.sections.len(), 1);
    assert!(
        report.sections[0]
            .text
            .starts_with("# Quarterly Report\n# Summary\n")
    );

    let refused = extractor()
        .document_text("test", &fixture("orders.csv"), "orders.csv")
        .await;
    assert!(
        matches!(refused, Err(ExtractError::Unsupported(_))),
        "{refused:?}"
    );
}
