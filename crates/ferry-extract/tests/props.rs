//! Property tests: arbitrary bytes, and damaged copies of real documents,
//! fed to every in-process reader must give a value (a preview, a rendering
//! or an error), never a panic; and no Markdown, however hostile, survives
//! sanitizing with anything that runs.

mod common;

use ferry_extract::{Limits, preview_bytes, render_html_bytes};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

const NAMES: &[&str] = &[
    "a.pdf", "a.docx", "a.xlsx", "a.xls", "a.pptx", "a.csv", "a.tsv", "a.txt", "a.md", "a.json",
    "a.png", "a.gif", "a.jpg", "a.webp", "a.html",
];

/// Damaged copies of these are read in this process. Legacy XLS is not
/// among them: calamine sizes some allocations from values in the file, so
/// a damaged one can ask for a hundred gigabytes and abort the process.
/// That is what the worker's address-space limit is for, and
/// `damaged_xls_is_answered_by_the_worker` checks it there.
const FIXTURES: &[&str] = &[
    "seed.xlsx",
    "report.docx",
    "deck.pptx",
    "two-pages.pdf",
    "orders.csv",
];

/// Small limits keep each case fast; the property is about not panicking.
fn limits() -> Limits {
    Limits {
        max_unpacked_bytes: 16 << 20,
        html_rows: 50,
        html_body_bytes: 256 << 10,
        html_text_bytes: 64 << 10,
        ..Limits::default()
    }
}

/// 48 cases from a fixed seed by default, so a run in CI is quick and
/// repeatable; `PROPTEST_CASES` and `PROPTEST_RNG_SEED` explore further.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 48;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x00f3_7713);
    }
    config.failure_persistence = None;
    config
}

fn run_all_readers(bytes: &[u8], name: &str) {
    let limits = limits();
    if let Ok(p) = preview_bytes(bytes, name, 300, &limits)
        && let Some(t) = p.text
    {
        assert!(t.chars().count() <= 300);
    }
    if let Ok(html) = render_html_bytes(bytes, name, &limits) {
        common::assert_safe_document(&html);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096), which in 0..NAMES.len()) {
        run_all_readers(&bytes, NAMES[which]);
    }

    #[test]
    fn damaged_documents_never_panic(
        which in 0..FIXTURES.len(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..24),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let name = FIXTURES[which];
        let mut bytes = std::fs::read(common::fixture(name)).unwrap();
        for (at, value) in edits {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        run_all_readers(&bytes, name);
    }

    #[test]
    fn damaged_xml_inside_valid_packages_never_panics(
        which in 0..3usize,
        part in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0..PIECES.len()), 1..12),
    ) {
        let name = ["report.docx", "deck.pptx", "seed.xlsx"][which];
        let mut entries = unzip(&std::fs::read(common::fixture(name)).unwrap());
        let xml_parts: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].0.ends_with(".xml")).collect();
        let target = xml_parts[part.index(xml_parts.len())];
        let data = &mut entries[target].1;
        for (at, piece) in edits {
            let i = at.index(data.len() + 1);
            data.splice(i..(i + 3).min(data.len()), PIECES[piece].bytes());
        }
        let borrowed: Vec<(&str, &[u8])> = entries.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
        run_all_readers(&common::zip_of(&borrowed), name);
    }

    #[test]
    fn damaged_xls_is_answered_by_the_worker(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..24),
    ) {
        let mut bytes = std::fs::read(common::fixture("seed.xls")).unwrap();
        for (at, value) in edits {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = common::write(dir.path(), "damaged.xls", &bytes);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let result = runtime.block_on(common::extractor().preview("test", &path, "damaged.xls", 300));
        if let Ok(p) = result {
            prop_assert!(p.text.is_some_and(|t| t.chars().count() <= 300));
        }
    }

    #[test]
    fn markdown_never_keeps_active_content(parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..40)) {
        let md: String = parts.iter().map(|&i| FRAGMENTS[i]).collect();
        let html = render_html_bytes(md.as_bytes(), "notes.md", &limits()).unwrap();
        prop_assert_eq!(html.matches("<style>").count(), 1);
        for tag in html.split('<').skip(1).map(|t| t.split('>').next().unwrap_or("").to_ascii_lowercase()) {
            let name = tag.split_whitespace().next().unwrap_or("");
            prop_assert!(!["script", "iframe", "img", "svg", "object", "embed", "link", "form", "math"].contains(&name), "<{}>", tag);
            for attr in tag.split_whitespace().skip(1) {
                prop_assert!(!attr.starts_with("on") && !attr.starts_with("style") && !attr.starts_with("src"), "<{}>", tag);
                prop_assert!(!attr.contains("javascript:") && !attr.contains("data:"), "<{}>", tag);
            }
        }
    }
}

/// Replacements spliced into XML parts: markup, references and junk.
const PIECES: &[&str] = &[
    "<",
    ">",
    "</",
    "/>",
    "<w:p>",
    "</w:p>",
    "<w:t>",
    "</w:t>",
    "<w:tbl><w:tr><w:tc>",
    "</w:tc></w:tr>",
    "<a:p>",
    "<p:sp>",
    "<c r=\"A1\" t=\"s\"><v>99</v></c>",
    "<row r=\"4294967295\">",
    "r=\"XFD1048576\"",
    "&amp;",
    "&#0;",
    "&#x110000;",
    "&undefined;",
    "\"",
    "'",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "\u{0}",
    "\u{feff}",
    "é",
    "<?pi x?>",
    " xmlns:w=\"x\"",
    "<!DOCTYPE x>",
];

fn unzip(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut f = zip.by_index(i).unwrap();
            let mut data = Vec::new();
            f.read_to_end(&mut data).unwrap();
            (f.name().unwrap().into_owned(), data)
        })
        .collect()
}

const FRAGMENTS: &[&str] = &[
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[link](javascript:alert(1))",
    "[ok](https://example.com)",
    "<a href=\"javascript:alert(1)\">x</a>",
    "<a href=\"data:text/html,<script>x</script>\">d</a>",
    "<svg onload=alert(1)>",
    "<iframe src=\"https://e.com\"></iframe>",
    "<style>body{}</style>",
    "<div style=\"background:url(x)\">s</div>",
    "<math><mi xlink:href=\"javascript:1\">m</mi></math>",
    "<!--",
    "-->",
    "```\n",
    "`",
    "\n\n",
    "# ",
    "> ",
    "* ",
    "| a | b |\n|---|---|\n",
    "text ",
    "<b onclick=\"x()\">bold</b>",
    "<form action=\"https://e.com\"><input></form>",
    "![i](https://e.com/i.png)",
    "&lt;",
    "<",
    ">",
    "\"",
];
