//! A presentation's slides exported as a PDF by LibreOffice, run by the worker under its
//! limits (`Extractor::slides_pdf`). Needs `soffice`: skipped loudly without it, a failure
//! under `FERRY_CI=1`.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{config, fixture};
use ferry_extract::{ExtractError, Extractor};

/// `deck` written as `deck.pptx` in a folder of its own, as the conversion needs.
fn deck_in_own_folder(deck: &[u8]) -> (PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deck.pptx");
    std::fs::write(&path, deck).unwrap();
    (path, dir)
}

/// The extractor with the office renderer (adjusted), or `None` when it is not installed.
fn with_office(adjust: impl FnOnce(&mut ferry_extract::ExtractorConfig)) -> Option<Extractor> {
    let (program, sandbox) = ferry_test_support::peers::office_renderer()?;
    let mut cfg = config();
    cfg.office = Some(ferry_extract::OfficeRenderer { program, sandbox });
    adjust(&mut cfg);
    Some(Extractor::new(cfg))
}

/// Processes whose command line names `folder`: what a conversion there left running.
fn running_in(folder: &Path) -> Vec<String> {
    let needle = folder.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|line| line.contains(&needle))
        .collect()
}

/// Asserts that no process started in `folder` is left, within five seconds. The worker's
/// process group is killed before its call returns, but SIGKILL is delivered, not awaited: a
/// killed LibreOffice can still be tearing down its memory for a moment afterwards.
fn assert_nothing_left_running_in(folder: &Path) {
    let mut left = running_in(folder);
    for _ in 0..50 {
        if left.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
        left = running_in(folder);
    }
    assert_eq!(left, Vec::<String>::new());
}

#[tokio::test]
async fn a_decks_slides_become_the_pages_of_a_pdf() {
    let Some(extractor) = with_office(|_| {}) else {
        return;
    };
    let (deck, dir) = deck_in_own_folder(&std::fs::read(fixture("deck.pptx")).unwrap());
    let pdf = extractor.slides_pdf("alice", &deck).await.unwrap();
    assert_eq!(pdf, dir.path().join("deck.pdf"));
    let page = extractor.pdf_page("alice", &pdf, 1, 4000).await.unwrap();
    assert_eq!(page.pages, 4, "one page per slide");
    assert!(page.image.is_some(), "{:?}", page.image_error);
    assert_nothing_left_running_in(dir.path());
}

#[tokio::test]
async fn a_file_that_is_not_a_deck_is_refused_and_leaves_nothing_running() {
    let Some(extractor) = with_office(|_| {}) else {
        return;
    };
    let (deck, dir) = deck_in_own_folder(b"PK\x03\x04 this is no deck");
    let err = extractor.slides_pdf("alice", &deck).await.unwrap_err();
    assert!(
        matches!(&err, ExtractError::Invalid { detail, .. } if detail.contains("LibreOffice could not draw its slides")),
        "{err:?}"
    );
    assert_nothing_left_running_in(dir.path());
}

#[tokio::test]
async fn a_conversion_past_the_timeout_is_killed_with_everything_it_started() {
    let Some(extractor) = with_office(|cfg| cfg.timeout = Duration::from_millis(300)) else {
        return;
    };
    let (deck, dir) = deck_in_own_folder(&std::fs::read(fixture("deck.pptx")).unwrap());
    let err = extractor.slides_pdf("alice", &deck).await.unwrap_err();
    assert!(matches!(err, ExtractError::TimedOut), "{err:?}");
    // Killed with the worker's group, and (inside the sandbox) with the sandbox's own parent.
    assert_nothing_left_running_in(dir.path());
}

#[tokio::test]
async fn without_an_office_renderer_slides_are_not_drawn() {
    let extractor = Extractor::new(config());
    assert!(!extractor.draws_slides());
    let (deck, _dir) = deck_in_own_folder(b"anything");
    let err = extractor.slides_pdf("alice", &deck).await.unwrap_err();
    assert!(
        matches!(&err, ExtractError::Unsupported(m) if m.contains("no office renderer")),
        "{err:?}"
    );
}
