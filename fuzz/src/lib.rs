//! What the fuzz targets share: each document reader run on the fuzzer's bytes, with the
//! limits the extraction worker applies.
//!
//! The readers catch the panics some libraries answer malformed files with and turn them into
//! errors, as the worker relies on. libFuzzer's harness aborts at the first panic, caught or
//! not, so here the panic hook only records the message; a panic that escapes the reader is
//! then reported with that message and aborts, and is the fuzzer's finding.

use ferry_extract::{Limits, preview_bytes, render_html_bytes};
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Replaces the harness's aborting panic hook with one that records the message.
fn record_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            LAST_PANIC.with(|last| *last.borrow_mut() = Some(info.to_string()));
        }));
    });
}

/// Runs `work`; a panic that escapes it is printed and aborts the process (a crash to the
/// fuzzer).
pub fn no_escaping_panic(work: impl FnOnce()) {
    record_panics();
    if catch_unwind(AssertUnwindSafe(work)).is_err() {
        let message = LAST_PANIC.with(|last| last.borrow_mut().take());
        eprintln!(
            "a panic escaped the reader: {}",
            message.unwrap_or_default()
        );
        std::process::abort();
    }
}

/// Runs the preview and the HTML rendering of `data` as a document named `name`. Either may
/// refuse the bytes with an error; neither may panic, hang or exhaust memory.
pub fn document(data: &[u8], name: &str) {
    no_escaping_panic(|| {
        let limits = Limits::default();
        if let Ok(preview) = preview_bytes(data, name, 4000, &limits)
            && let Some(text) = &preview.text
        {
            // The preview keeps to its character budget, cut mark included.
            assert!(
                text.chars().count() <= 4000,
                "{} characters",
                text.chars().count()
            );
        }
        if let Ok(html) = render_html_bytes(data, name, &limits) {
            // The rendering is sanitized: no script survives, whatever the document held.
            assert!(!html.to_ascii_lowercase().contains("<script"), "{html}");
        }
    });
}
