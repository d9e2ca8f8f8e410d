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
