//! What the fuzz targets share: each document reader run on the fuzzer's bytes, with the
//! limits the extraction worker applies.
//!
//! The readers catch the panics some libraries answer malformed files with and turn them into
//! errors, as the worker relies on. libFuzzer's harness aborts at the first panic, caught or
//! not, so here the panic hook only records the message; a panic that escapes the reader is
//! then reported with that message and aborts, and is the fuzzer's finding.
//!
//! Memory is bounded as in the worker, whose address space is limited (512 MiB by default):
//! an allocation that would take the live total past [`MEMORY_LIMIT`] fails, as it would there.
//! The worker then stops with "needs more memory than allowed"; here the failure unwinds and
//! the reader's guard turns it into an error. So the fuzzer reports what the worker's limits
//! do not contain (an escaping panic, a hang, memory that is not given back), not the
//! documented containment itself.

#![feature(alloc_error_hook)]

use ferry_extract::{Limits, MODEL_MAX_EDGE, model_image, preview_bytes, render_html_bytes};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The worker's default address-space limit.
pub const MEMORY_LIMIT: usize = 512 * 1024 * 1024;

/// The system allocator, refusing what would take the live total past [`MEMORY_LIMIT`].
struct Bounded;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let before = LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        if before + layout.size() > MEMORY_LIMIT {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout is passed on unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if ptr.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Bounded = Bounded;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Replaces the harness's aborting panic hook with one that records the message, and makes a
/// refused allocation unwind (the worker's would end the worker).
fn record_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            LAST_PANIC.with(|last| *last.borrow_mut() = Some(info.to_string()));
        }));
        std::alloc::set_alloc_error_hook(|layout| {
            panic!(
                "an allocation of {} bytes would pass the worker's memory limit",
                layout.size()
            )
        });
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

/// Makes `data` ready for a model as an image. It may be refused with an error; it may not
/// panic, hang or exhaust memory, and what it makes keeps to the model's edge limit.
pub fn image(data: &[u8]) {
    no_escaping_panic(|| {
        if let Ok(shown) = model_image(data, &Limits::default()) {
            assert!(
                shown.width.max(shown.height) <= MODEL_MAX_EDGE,
                "{} × {}",
                shown.width,
                shown.height
            );
        }
    });
}

/// Draws page 1 of `data` as a PDF for a model. It may be refused with an error, and the page
/// may be drawn or say why not; it may not panic, hang or exhaust memory, and a drawn page
/// keeps to the model's edge and byte limits.
pub fn pdf_page(data: &[u8]) {
    no_escaping_panic(|| {
        if let Ok(page) = ferry_extract::pdf_page(data, 1, 4000)
            && let Some(image) = &page.image
        {
            assert!(
                image.width.max(image.height) <= MODEL_MAX_EDGE,
                "{} × {}",
                image.width,
                image.height
            );
            assert!(image.base64.len() / 4 * 3 <= ferry_extract::MODEL_MAX_BYTES);
        }
    });
}
