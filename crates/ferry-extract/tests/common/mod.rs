//! Helpers shared by the integration tests: the extractor wired to this
//! crate's worker binary, fixture paths, and builders for documents.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use ferry_extract::{Extractor, ExtractorConfig};

#[allow(unused_imports)] // not every test target builds documents
pub use ferry_test_support::documents::*;

/// An extractor that runs this crate's worker binary.
pub fn extractor() -> Extractor {
    Extractor::new(config())
}

pub fn config() -> ExtractorConfig {
    ExtractorConfig::new(
        env!("CARGO_BIN_EXE_ferry-extract-worker"),
        Vec::<String>::new(),
    )
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The shared corpus, when it is in reach (a fresh clone has none: the tests that need it
/// skip loudly, and fail under `FERRY_CI=1`).
pub fn corpus_dir() -> Option<PathBuf> {
    ferry_test_support::corpus::dir()
}

/// A PDF assembled from numbered object bodies (object 1 first) with a
/// correct cross-reference table; object 1 is the root.
pub fn pdf_of(objects: &[&[u8]]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f\r\n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n\r\n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// Writes bytes to a file in `dir` and returns its path.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// What every rendering must be: a complete document with one inline style
/// and no markup that runs or loads anything. Document text is escaped, so
/// only real tags start with `<`; each is checked.
pub fn assert_safe_document(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>\n<html>"), "{html}");
    assert!(html.trim_end().ends_with("</body></html>"));
    assert_eq!(html.matches("<style>").count(), 1);
    for tag in html
        .split('<')
        .skip(1)
        .map(|t| t.split('>').next().unwrap_or(""))
    {
        let tag = tag.to_ascii_lowercase();
        let name = tag.split_whitespace().next().unwrap_or("");
        assert!(
            ![
                "script",
                "iframe",
                "link",
                "object",
                "embed",
                "img",
                "svg",
                "base",
                "meta http-equiv",
                "form"
            ]
            .contains(&name),
            "<{tag}> in {html}"
        );
        for attr in tag.split_whitespace().skip(1) {
            assert!(
                !attr.starts_with("on") && !attr.starts_with("http-equiv"),
                "<{tag}> in {html}"
            );
            assert!(
                !attr.starts_with("src=") && !attr.starts_with("style="),
                "<{tag}> in {html}"
            );
            assert!(!attr.contains("javascript:"), "<{tag}> in {html}");
        }
    }
}
