//! ferry-extract: the text previews the model reads and the sanitized HTML
//! renderings the preview panel shows (docs/reference/uploads.md and publish.md).
//!
//! # The boundary
//!
//! This crate is pure computation plus one child-process runner. It opens no
//! network connection and reads only the path it is given (in the worker:
//! the one path named in its request). Untrusted documents are read in a
//! worker process started by [`Extractor`]; the worker enters at
//! [`worker_main`] (the ferry binary calls it for `ferry __extract`, before it
//! starts any runtime), limits itself with `setrlimit`, reads one JSON
//! request from standard input and writes one JSON answer to standard
//! output. The parent bounds the worker's wall-clock time and output, kills
//! its whole process group when it must, reaps it, and turns every failure
//! into an [`ExtractError`] whose message reads plainly as a `previewError`.
//!
//! The worker is started with an empty environment and `/` as its working
//! directory; its standard output must be a pipe (as [`Extractor`] makes
//! it), because `RLIMIT_FSIZE` is 0 and writing to a regular file would
//! kill it. Images and plain text are previewed in the calling process
//! (imagesize reads a header; text is a bounded prefix, decoded), since
//! there is nothing there for a hostile file to exploit and a process
//! start would cost more than the work; see [`Extractor::preview`]. Decoding
//! an image's pixels, to show it to a model ([`Extractor::model_image`]), and
//! drawing a PDF page for one ([`Extractor::pdf_page`], one worker per page)
//! are worker work like any document.
//!
//! The readers themselves are public too ([`preview_bytes`],
//! [`render_html_bytes`] and friends). They run in the calling process and
//! are bounded by [`Limits`], but a library below them (calamine, lopdf,
//! pdf-extract) can still exhaust memory or the stack on a crafted file:
//! call them directly only for trusted input and in tests.
//!
//! # Limits and their defaults
//!
//! Process limits ([`ExtractorConfig`]), applied to the worker:
//!
//! | limit | default | on breach |
//! | --- | --- | --- |
//! | address space (`RLIMIT_AS`) | 512 MiB | "the document needs more memory than allowed" |
//! | CPU time (`RLIMIT_CPU`) | 10 s (SIGXCPU, SIGKILL 1 s later) | "the document took too long to read" |
//! | wall clock | 20 s, then the process group is killed | "the document took too long to read" |
//! | output read by the parent | 8 MiB, then the worker is killed | "the document produced more preview output than allowed" |
//! | file writes (`RLIMIT_FSIZE`), core dumps | 0 | — |
//! | open files (`RLIMIT_NOFILE`) | 16 | — |
//! | workers at once | number of CPUs | requests wait, shared fairly between owners; one owner holds at most all but one |
//!
//! Reading limits ([`Limits`]), applied inside the readers while they read:
//! zip packages may hold at most 10,000 entries and unpack to at most
//! 256 MiB in all, counted while inflating; an entry that has unpacked past
//! 4 MiB may not exceed 100 times its packed size (the packed size taken
//! from the header but never above the archive's own size). XML with a DTD
//! is refused (quick-xml never expands entities anyway), as is XML nested
//! more than 256 levels or with a single text or tag over 16 MiB (parsers
//! hold a whole text node in memory). One paragraph keeps at most what the
//! preview or the HTML budget can show. A spreadsheet reader visits at most 2,000,000
//! cells of a sheet; a PDF or XLS is read into memory only up to 128 MiB.
//! HTML renderings show at most 1,000 rows × 100 columns per table, 50
//! sheets, 2,000 characters per cell, 2 MiB of a text file and about 4 MiB
//! of HTML, each time with a note saying what was left out.
//!
//! # Preview formats
//!
//! | type | preview |
//! | --- | --- |
//! | `.pdf` | the text in reading order (pdf-extract's layout), pages separated by a blank line |
//! | `.docx` | one line per paragraph; headings as `# Title`, `## Section`; table rows as `a \| b \| c` |
//! | `.xlsx .xlsm .xls` | per sheet: `Sheet1: Revenue \| Q1`, `Row 1: North \| 125000`, ... `... (first 20 rows)`; sheets separated by a blank line |
//! | `.pptx` | `Slide 1: Title` per slide, in presentation order (a picture is `[picture: NAME]`, a chart `[chart: TITLE; series: A, B]`) |
//! | `.csv .tsv` | like a sheet without its name: `Revenue \| Q1`, `Row 1: ...`, `... (first 20 rows)` |
//! | `.txt .md .json` and code | the first characters |
//! | `.png .jpg .jpeg .gif .webp` | no text; width and height from the header (more than [`Limits::max_image_pixels`] is an error) |
//! | anything else, `.svg` included | no preview (`Preview::default()`) |
//!
//! "First 20 rows" counts a sheet's first non-empty row, the one printed
//! after its name: the preview shows it and `Row 1` to `Row 19`, and
//! `... (first 20 rows)` only when the sheet has more. Whole numbers print
//! whole (`125000`), other numbers in their shortest form (`0.1`, `1e-7`),
//! booleans as `TRUE`/`FALSE`, dates as ISO 8601 (`2021-01-01`,
//! `2021-01-01T10:30:00`), durations as `250:10:10`, errors as Excel shows
//! them (`#DIV/0!`), empty cells as empty strings. Line breaks inside a cell,
//! a title or a table cell become spaces, so one row stays one line.
//!
//! Every preview is at most `max_chars` characters (Unicode scalar values).
//! A longer one is cut at a character boundary and ends with `…` (U+2026),
//! the mark counting toward the limit; an untouched preview never ends with
//! an added mark.

mod code_highlight;
mod compound;
mod csvfile;
mod docx;
mod drawingml;
mod error;
mod extractor;
mod fair;
mod html;
mod kind;
mod limits;
mod model_image;
mod opc;
mod package;
mod pdf;
mod pdf_content;
mod pdf_drawn_text;
mod pdf_forms;
mod pdf_page_text;
mod pdf_pages;
mod pdf_predefined_cmaps;
mod pdf_repair;
mod pdf_unicode;
mod pptx;
mod pptx_notes;
mod read;
mod searchable;
mod sheet;
mod sheet_markdown;
mod slides;
mod text;
mod worker;
mod xml;

pub use error::ExtractError;
pub use extractor::{Extractor, ExtractorConfig, WORKER_ARG};
pub use html::{STYLE as PREVIEW_STYLE, markdown_html};
pub use kind::{PreviewKind, is_document, is_pdf, is_raster_image, is_slides, preview_kind};
pub use limits::{Limits, PREVIEW_ROWS};
pub use model_image::{MODEL_MAX_BYTES, MODEL_MAX_EDGE, ModelImage, model_image};
pub use pdf_pages::{PdfPage, pdf_page};
pub use read::{
    Preview, document_text_file, model_image_file, pdf_page_file, preview_bytes, preview_file,
    preview_reader, render_html_bytes, render_html_file, render_html_reader,
};
pub use searchable::{DocumentText, SEARCH_MAX_CHARS, SEARCH_ROWS, Section, document_text_reader};
pub use slides::{OfficeRenderer, slides_pdf};
pub use text::{CUT_MARK, clip};
pub use worker::{Op, ProcessLimits, WorkerRequest, WorkerResponse, handle, worker_main};
