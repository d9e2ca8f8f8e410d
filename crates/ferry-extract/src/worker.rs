//! The extraction worker: the child process that reads untrusted documents.
//!
//! Protocol: the parent writes one JSON [`WorkerRequest`] to the worker's
//! standard input and closes it; the worker limits itself, does the work and
//! writes one JSON [`WorkerResponse`] as the last line of its standard
//! output. Exit code 0 means an answer was written (which may carry a
//! document error); 2 means the request could not be read.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use serde::{Deserialize, Serialize};

use crate::error::ExtractError;
use crate::limits::Limits;
use crate::model_image::ModelImage;
use crate::pdf_pages::PdfPage;
use crate::read::{Preview, model_image_file, pdf_page_file, preview_file, render_html_file};

/// What the worker is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// The text preview (and image size) of an upload.
    Preview,
    /// The sanitized HTML rendering for the preview panel.
    Html,
    /// An image made ready for a vision model.
    #[serde(rename = "model_image")]
    ModelImage,
    /// One page of a PDF drawn for a vision model, with its text.
    #[serde(rename = "pdf_page")]
    PdfPage,
    /// A presentation's slides exported as a PDF by the office renderer
    /// ([`crate::slides_pdf`]).
    #[serde(rename = "slides_pdf")]
    SlidesPdf,
    /// A document's text as a search reads it ([`crate::document_text_reader`]).
    #[serde(rename = "document_text")]
    DocumentText,
}

impl Op {
    /// The op's name on the wire and in metrics.
    pub fn name(self) -> &'static str {
        match self {
            Op::Preview => "preview",
            Op::Html => "html",
            Op::ModelImage => "model_image",
            Op::PdfPage => "pdf_page",
            Op::SlidesPdf => "slides_pdf",
            Op::DocumentText => "document_text",
        }
    }
}

/// Resource limits the worker applies to itself before reading anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessLimits {
    /// `RLIMIT_AS`: address space in bytes.
    pub memory_bytes: u64,
    /// `RLIMIT_CPU`: CPU seconds; the kernel sends SIGXCPU at this limit and
    /// SIGKILL one second later.
    pub cpu_seconds: u64,
    /// `RLIMIT_NOFILE`: open file descriptors.
    pub open_files: u64,
    /// `RLIMIT_FSIZE`: the largest file the process may write; 0, no writes at all.
    pub file_bytes: u64,
}

impl Default for ProcessLimits {
    fn default() -> Self {
        ProcessLimits {
            memory_bytes: 512 * crate::limits::MIB,
            cpu_seconds: 10,
            open_files: 16,
            file_bytes: 0,
        }
    }
}

impl ProcessLimits {
    /// The limits of a worker doing `op`, with `memory_bytes` and `cpu_seconds`. Only the office
    /// renderer writes files (its profile and the PDF, in the deck's scratch folder) and opens
    /// more than a few (its libraries and fonts).
    pub fn for_op(op: Op, memory_bytes: u64, cpu_seconds: u64) -> ProcessLimits {
        let base = ProcessLimits {
            memory_bytes,
            cpu_seconds,
            ..ProcessLimits::default()
        };
        match op {
            Op::SlidesPdf => ProcessLimits {
                open_files: 1024,
                file_bytes: SLIDES_MAX_FILE_BYTES,
                ..base
            },
            _ => base,
        }
    }
}

/// The largest file the office renderer may write: a deck's PDF, or a file of its profile.
const SLIDES_MAX_FILE_BYTES: u64 = 256 * crate::limits::MIB;

/// One request to the worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRequest {
    /// Preview or HTML.
    pub op: Op,
    /// Absolute path of the document; the only file the worker opens.
    pub path: PathBuf,
    /// The document's name, which picks the reader.
    pub file_name: String,
    /// Character budget of a text preview (of a PDF page's text, for [`Op::PdfPage`]).
    #[serde(default)]
    pub max_chars: usize,
    /// The page to draw, from 1 ([`Op::PdfPage`] only).
    #[serde(default)]
    pub page: u32,
    /// The office renderer ([`Op::SlidesPdf`] only).
    #[serde(default)]
    pub office: Option<crate::OfficeRenderer>,
    /// Reading limits.
    #[serde(default)]
    pub limits: Limits,
    /// Process limits.
    #[serde(default)]
    pub process: ProcessLimits,
}

/// The worker's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum WorkerResponse {
    /// A preview was made.
    Preview {
        /// The preview.
        preview: Preview,
    },
    /// An HTML rendering was made.
    Html {
        /// The complete HTML document.
        html: String,
    },
    /// An image was made ready for a model.
    Image {
        /// The image as the model is shown it.
        image: ModelImage,
    },
    /// A PDF page was drawn.
    Page {
        /// The page's picture and text.
        page: PdfPage,
    },
    /// A document's text was read for a search.
    Text {
        /// Its sections.
        text: crate::DocumentText,
    },
    /// A presentation's slides were exported as a PDF.
    Pdf {
        /// Where the PDF was written, beside the deck.
        path: PathBuf,
    },
    /// The document could not be read.
    Error {
        /// Why.
        error: ExtractError,
    },
}

/// Largest request the worker reads from standard input.
const MAX_REQUEST_BYTES: u64 = 1024 * 1024;

/// The entry point of the hidden worker (`ferry __extract`).
///
/// Call it before starting an async runtime or any thread: the limits it
/// sets apply to the whole process, and a lone thread keeps the address
/// space small. It reads one [`WorkerRequest`] from standard input, applies
/// [`ProcessLimits`] to itself with `setrlimit` (address space, CPU time,
/// no file writes but the office renderer's, few open files, no core dumps), runs the reader and
/// writes one [`WorkerResponse`] line to standard output.
pub fn worker_main() -> ExitCode {
    let mut raw = Vec::new();
    if std::io::stdin()
        .take(MAX_REQUEST_BYTES)
        .read_to_end(&mut raw)
        .is_err()
    {
        return ExitCode::from(2);
    }
    let request: WorkerRequest = match serde_json::from_slice(&raw) {
        Ok(r) => r,
        Err(e) => {
            let error = ExtractError::Worker(format!("the request was not understood ({e})"));
            answer(&WorkerResponse::Error { error });
            return ExitCode::from(2);
        }
    };
    if let Err(e) = limit_self(&request.process) {
        let error = ExtractError::Worker(format!("its resource limits could not be set ({e})"));
        answer(&WorkerResponse::Error { error });
        return ExitCode::from(2);
    }
    // A reader that panics is reported as an error; the message (which may
    // name source files of this machine) is not printed.
    std::panic::set_hook(Box::new(|_| {}));
    let response =
        std::panic::catch_unwind(|| handle(&request)).unwrap_or_else(|_| WorkerResponse::Error {
            error: ExtractError::invalid(
                what_for(&request),
                "the reader could not make sense of its contents",
            ),
        });
    answer(&response);
    ExitCode::SUCCESS
}

/// Runs one request in this process (the worker's work, without its limits).
pub fn handle(request: &WorkerRequest) -> WorkerResponse {
    let result = match request.op {
        Op::Preview => preview_file(
            &request.path,
            &request.file_name,
            request.max_chars,
            &request.limits,
        )
        .map(|preview| WorkerResponse::Preview { preview }),
        Op::Html => render_html_file(&request.path, &request.file_name, &request.limits)
            .map(|html| WorkerResponse::Html { html }),
        Op::ModelImage => model_image_file(&request.path, &request.limits)
            .map(|image| WorkerResponse::Image { image }),
        Op::PdfPage => pdf_page_file(
            &request.path,
            request.page,
            request.max_chars,
            &request.limits,
        )
        .map(|page| WorkerResponse::Page { page }),
        Op::DocumentText => {
            crate::read::document_text_file(&request.path, &request.file_name, &request.limits)
                .map(|text| WorkerResponse::Text { text })
        }
        Op::SlidesPdf => match &request.office {
            Some(renderer) => crate::slides::slides_pdf(&request.path, renderer)
                .map(|path| WorkerResponse::Pdf { path }),
            None => Err(crate::slides::no_renderer()),
        },
    };
    result.unwrap_or_else(|error| WorkerResponse::Error { error })
}

fn what_for(request: &WorkerRequest) -> &'static str {
    if request.op == Op::ModelImage {
        return "image";
    }
    match crate::kind::format_of(&request.file_name) {
        crate::kind::Format::Pdf => "PDF",
        crate::kind::Format::Docx => "Word document",
        crate::kind::Format::Xlsx => "Excel workbook",
        crate::kind::Format::Xls => "Excel 97-2003 workbook",
        crate::kind::Format::Pptx => "PowerPoint presentation",
        _ => "document",
    }
}

fn answer(response: &WorkerResponse) {
    // serde_json escapes newlines inside strings, so the answer is one line.
    let Ok(mut line) = serde_json::to_vec(response) else {
        return;
    };
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&line);
    let _ = out.flush();
}

/// Lowers this process's limits; both the soft and the hard limit are set,
/// so the reader cannot raise them again.
fn limit_self(p: &ProcessLimits) -> rustix::io::Result<()> {
    lower(Resource::As, p.memory_bytes, p.memory_bytes)?;
    // SIGXCPU at the soft limit, SIGKILL at the hard one a second later.
    lower(
        Resource::Cpu,
        p.cpu_seconds,
        p.cpu_seconds.saturating_add(1),
    )?;
    lower(Resource::Fsize, p.file_bytes, p.file_bytes)?;
    lower(Resource::Core, 0, 0)?;
    lower(Resource::Nofile, p.open_files, p.open_files)?;
    Ok(())
}

fn lower(resource: Resource, soft: u64, hard: u64) -> rustix::io::Result<()> {
    // Never ask for more than the current hard limit: only root may raise it.
    let current = getrlimit(resource);
    let cap = |v: u64| match current.maximum {
        Some(max) => v.min(max),
        None => v,
    };
    setrlimit(
        resource,
        Rlimit {
            current: Some(cap(soft)),
            maximum: Some(cap(hard)),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_defaults_fill_in() {
        let r: WorkerRequest = serde_json::from_str(
            r#"{"op":"preview","path":"/tmp/x.txt","file_name":"x.txt","max_chars":10}"#,
        )
        .unwrap();
        assert_eq!(r.op, Op::Preview);
        assert_eq!(r.limits, Limits::default());
        assert_eq!(r.process, ProcessLimits::default());
    }

    #[test]
    fn responses_are_one_line_of_json() {
        let r = WorkerResponse::Html {
            html: "<p>\nline\n</p>".into(),
        };
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains('\n'));
        assert_eq!(serde_json::from_str::<WorkerResponse>(&json).unwrap(), r);
        let e = WorkerResponse::Error {
            error: ExtractError::TimedOut,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"status":"error","error":{"kind":"timed_out"}}"#
        );
    }

    #[test]
    fn handle_reports_missing_files_without_their_path() {
        let r = WorkerRequest {
            op: Op::Preview,
            path: "/nonexistent/secret/dir/a.txt".into(),
            file_name: "a.txt".into(),
            max_chars: 10,
            page: 0,
            office: None,
            limits: Limits::default(),
            process: ProcessLimits::default(),
        };
        let WorkerResponse::Error { error } = handle(&r) else {
            panic!("expected an error")
        };
        assert!(!error.to_string().contains("/nonexistent"), "{error}");
        assert!(error.to_string().starts_with("the file could not be read"));
    }
}
