//! The shared corpus of real-world documents (PDF, DOCX, XLSX/XLS, PPTX made by other
//! projects' tools) that the preview and upload suites read when it is in reach.
//!
//! It is not part of the repository, so a fresh clone runs without it: like a missing peer,
//! a missing corpus skips the tests that need it, loudly, and fails them under `FERRY_CI=1`.

use std::path::{Path, PathBuf};

use crate::peers::skip;

/// `FERRY_CORPUS_DIR`, or `shared/corpus` beside the repository; `None` (after saying so)
/// when neither is there.
pub fn dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("FERRY_CORPUS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    skip(&format!(
        "the shared document corpus is not at {}; set FERRY_CORPUS_DIR to run this test",
        dir.display()
    ));
    None
}
