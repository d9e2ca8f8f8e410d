//! The parent side: runs the worker as a child process with limits, a
//! wall-clock timeout and an output cap, and turns every way it can fail
//! into an [`ExtractError`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::error::ExtractError;
use crate::fair::FairQueue;
use crate::limits::{Limits, MIB};
use crate::model_image::ModelImage;
use crate::pdf_pages::PdfPage;
use crate::read::{Preview, preview_file, preview_in_process};
use crate::worker::{Op, ProcessLimits, WorkerRequest, WorkerResponse};

/// How the [`Extractor`] runs its worker.
#[derive(Debug, Clone)]
pub struct ExtractorConfig {
    /// The program that runs [`crate::worker_main`] (the ferry binary).
    pub program: PathBuf,
    /// Its arguments (`["__extract"]` for the ferry binary).
    pub args: Vec<OsString>,
    /// Address-space limit of the worker (`RLIMIT_AS`). Default 512 MiB.
    pub memory_bytes: u64,
    /// CPU-time limit of the worker (`RLIMIT_CPU`). Default 10 s.
    pub cpu_seconds: u64,
    /// Wall-clock limit, after which the worker and its process group are
    /// killed. Default 20 s.
    pub timeout: Duration,
    /// Most bytes read from the worker's output; past it the worker is
    /// killed. Default 8 MiB.
    pub output_bytes: usize,
    /// Workers running at once; further requests wait their turn, shared
    /// fairly between owners ([`FairQueue`]). Default: the number of CPUs.
    pub max_concurrent: usize,
    /// Reading limits passed to the worker.
    pub limits: Limits,
    /// The office renderer that draws a presentation's slides ([`Extractor::slides_pdf`]);
    /// `None`: slides are not drawn. Default `None`.
    pub office: Option<crate::OfficeRenderer>,
}

/// The hidden first argument under which a program that calls [`crate::worker_main`] runs
/// as the extraction worker.
pub const WORKER_ARG: &str = "__extract";

impl ExtractorConfig {
    /// A configuration that runs `program` with `args`, with the default limits.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        ExtractorConfig {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            memory_bytes: 512 * MIB,
            cpu_seconds: 10,
            timeout: Duration::from_secs(20),
            output_bytes: 8 * MIB as usize,
            max_concurrent: std::thread::available_parallelism().map_or(2, |n| n.get()),
            limits: Limits::default(),
            office: None,
        }
    }

    /// `program` run as the worker: `program __extract`, as the ferry binary runs itself.
    pub fn worker(program: impl Into<PathBuf>) -> Self {
        Self::new(program, [WORKER_ARG])
    }

    /// The running executable as the worker: what the ferry binary uses.
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self::worker(std::env::current_exe()?))
    }
}

/// Makes previews and HTML renderings of untrusted documents in a child
/// process. Cheap to clone; clones share the workers.
///
/// Every request names its owner (the user whose document it is): workers
/// are shared fairly between owners, so one user's burst of slow documents
/// does not hold back another user's preview.
#[derive(Debug, Clone)]
pub struct Extractor {
    config: Arc<ExtractorConfig>,
    slots: Arc<FairQueue>,
}

/// Bytes of the worker's standard error kept to tell why it died.
const STDERR_KEEP: usize = 16 * 1024;

impl Extractor {
    /// An extractor with this configuration.
    pub fn new(config: ExtractorConfig) -> Self {
        let slots = FairQueue::new(config.max_concurrent);
        Extractor {
            config: Arc::new(config),
            slots,
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &ExtractorConfig {
        &self.config
    }

    /// Requests waiting for a worker.
    pub fn waiting(&self) -> usize {
        self.slots.waiting()
    }

    /// The preview of `owner`'s document at `path`, named `file_name`, of at
    /// most `max_chars` characters.
    ///
    /// Images (only their header is read, by imagesize), plain text (a
    /// bounded prefix is decoded) and types without a preview are handled in
    /// this process on the blocking pool: their readers do no parsing that a
    /// hostile file could turn against us, and a child process would cost
    /// more than the work. Every other type is read by the worker.
    pub async fn preview(
        &self,
        owner: &str,
        path: &Path,
        file_name: &str,
        max_chars: usize,
    ) -> Result<Preview, ExtractError> {
        if preview_in_process(file_name) {
            let (path, name, limits) = (
                path.to_owned(),
                file_name.to_owned(),
                self.config.limits.clone(),
            );
            return tokio::task::spawn_blocking(move || {
                preview_file(&path, &name, max_chars, &limits)
            })
            .await
            .map_err(|_| ExtractError::Crashed)?;
        }
        match self
            .run(owner, Op::Preview, path, file_name, max_chars, 0)
            .await?
        {
            WorkerResponse::Preview { preview } => Ok(preview),
            WorkerResponse::Error { error } => Err(error),
            _ => Err(protocol_error()),
        }
    }

    /// The sanitized HTML rendering of `owner`'s document at `path`, named
    /// `file_name`, for the preview panel. Always made by the worker.
    pub async fn render_html(
        &self,
        owner: &str,
        path: &Path,
        file_name: &str,
    ) -> Result<String, ExtractError> {
        if crate::preview_kind(file_name) != crate::PreviewKind::Html {
            return Err(ExtractError::Unsupported(
                "there is no HTML preview for this kind of file".to_owned(),
            ));
        }
        match self.run(owner, Op::Html, path, file_name, 0, 0).await? {
            WorkerResponse::Html { html } => Ok(html),
            WorkerResponse::Error { error } => Err(error),
            _ => Err(protocol_error()),
        }
    }

    /// The image at `path` made ready for a vision model ([`crate::model_image`]), decoded
    /// in the worker: image decoders read untrusted bytes too.
    pub async fn model_image(&self, owner: &str, path: &Path) -> Result<ModelImage, ExtractError> {
        match self.run(owner, Op::ModelImage, path, "image", 0, 0).await? {
            WorkerResponse::Image { image } => Ok(image),
            WorkerResponse::Error { error } => Err(error),
            _ => Err(protocol_error()),
        }
    }

    /// Page `number` (from 1) of `owner`'s PDF at `path`, drawn for a vision model, with the
    /// page's text cut to `max_chars` ([`crate::pdf_page`]); drawn in the worker, under its
    /// limits, since a hostile page can make drawing as slow or as large as it likes.
    pub async fn pdf_page(
        &self,
        owner: &str,
        path: &Path,
        number: u32,
        max_chars: usize,
    ) -> Result<PdfPage, ExtractError> {
        match self
            .run(owner, Op::PdfPage, path, "document.pdf", max_chars, number)
            .await?
        {
            WorkerResponse::Page { page } => Ok(page),
            WorkerResponse::Error { error } => Err(error),
            _ => Err(protocol_error()),
        }
    }

    /// The text of `owner`'s document at `path`, named `file_name` (a PDF, DOCX, XLSX/XLS or
    /// PPTX), as a search reads it ([`crate::document_text_reader`]): read in the worker, under
    /// its limits.
    pub async fn document_text(
        &self,
        owner: &str,
        path: &Path,
        file_name: &str,
    ) -> Result<crate::DocumentText, ExtractError> {
        if !crate::is_document(file_name) {
            return Err(ExtractError::Unsupported(format!(
                "{file_name} is not a document whose text is extracted (PDF, DOCX, XLSX, XLS, \
                 PPTX)"
            )));
        }
        match self
            .run(owner, Op::DocumentText, path, file_name, 0, 0)
            .await?
        {
            WorkerResponse::Text { text } => Ok(text),
            WorkerResponse::Error { error } => Err(error),
            _ => Err(protocol_error()),
        }
    }

    /// Whether a presentation's slides can be drawn: an office renderer is configured.
    pub fn draws_slides(&self) -> bool {
        self.config.office.is_some()
    }

    /// The slides of `owner`'s presentation at `deck` exported as a PDF, written beside it
    /// ([`crate::slides_pdf`]); the deck's folder must be its own, made for this conversion.
    /// The office renderer runs in the worker, under its limits.
    pub async fn slides_pdf(&self, owner: &str, deck: &Path) -> Result<PathBuf, ExtractError> {
        if !self.draws_slides() {
            return Err(crate::slides::no_renderer());
        }
        match self
            .run(owner, Op::SlidesPdf, deck, "deck.pptx", 0, 0)
            .await?
        {
            WorkerResponse::Pdf { path } => Ok(path),
            WorkerResponse::Error { error } => Err(error),
            _ => Err(protocol_error()),
        }
    }

    async fn run(
        &self,
        owner: &str,
        op: Op,
        path: &Path,
        file_name: &str,
        max_chars: usize,
        page: u32,
    ) -> Result<WorkerResponse, ExtractError> {
        let _turn = self.slots.turn(owner).await;
        let started = std::time::Instant::now();
        let answer = self.run_worker(op, path, file_name, max_chars, page).await;
        let outcome = match &answer {
            Ok(_) => "ok",
            Err(ExtractError::TimedOut) => "timeout",
            Err(_) => "error",
        };
        metrics::histogram!(
            "ferry_extract_duration_seconds",
            "op" => op.name(),
            "outcome" => outcome
        )
        .record(started.elapsed().as_secs_f64());
        answer
    }

    /// Runs one worker over one document, its slot already held.
    async fn run_worker(
        &self,
        op: Op,
        path: &Path,
        file_name: &str,
        max_chars: usize,
        page: u32,
    ) -> Result<WorkerResponse, ExtractError> {
        let cfg = &*self.config;
        let path = std::path::absolute(path).map_err(|e| ExtractError::io(&e))?;
        let request = WorkerRequest {
            op,
            path,
            file_name: file_name.to_owned(),
            max_chars,
            page,
            limits: cfg.limits.clone(),
            office: (op == Op::SlidesPdf).then(|| cfg.office.clone()).flatten(),
            process: ProcessLimits::for_op(op, cfg.memory_bytes, cfg.cpu_seconds),
        };
        let request = serde_json::to_vec(&request)
            .map_err(|e| ExtractError::Worker(format!("the request could not be written ({e})")))?;

        let mut cmd = Command::new(&cfg.program);
        cmd.args(&cfg.args)
            // The worker needs nothing from our environment, and a process
            // reading hostile input should not see secrets kept there.
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a timeout kills whatever it started.
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| ExtractError::Worker(format!("the worker could not be started ({e})")))?;
        // Declared after `child`, so it is dropped first: if this future is
        // cancelled, the group is killed while the worker is not yet reaped.
        let mut group = GroupGuard(
            child
                .id()
                .and_then(|p| i32::try_from(p).ok())
                .and_then(rustix::process::Pid::from_raw),
        );
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ExtractError::Worker(
                "the worker's pipes are missing".to_owned(),
            ));
        };

        let stderr_task = tokio::spawn(read_stderr(stderr));
        let cap = cfg.output_bytes;
        let exchange = async move {
            // A worker that dies before reading makes this write fail; its
            // exit status tells the story, so the error is not ours to report.
            let _ = stdin.write_all(&request).await;
            drop(stdin);
            read_capped(stdout, cap).await
        };
        let outcome = tokio::time::timeout(cfg.timeout, exchange).await;

        // Whatever happened, nothing of the worker's may outlive this call:
        // kill its process group while the worker, even exited, is not yet
        // reaped and so still holds the group's id; then reap it.
        group.kill();
        let _ = child.start_kill();
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        let stderr_text = match tokio::time::timeout(Duration::from_secs(1), stderr_task).await {
            Ok(Ok(text)) => text,
            _ => String::new(),
        };

        let stdout = match outcome {
            Err(_elapsed) => return Err(ExtractError::TimedOut),
            Ok(Err(error)) => return Err(error),
            Ok(Ok(bytes)) => bytes,
        };
        if let Some(response) = last_line(&stdout).and_then(|l| serde_json::from_slice(l).ok()) {
            return Ok(response);
        }
        let status = match status {
            Ok(Ok(status)) => Some(status),
            _ => None,
        };
        Err(diagnose(status, &stderr_text))
    }
}

/// Kills a worker's process group, once.
#[derive(Debug)]
struct GroupGuard(Option<rustix::process::Pid>);

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pid) = self.0.take() {
            // ESRCH (the group is already empty) is the usual answer.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

fn protocol_error() -> ExtractError {
    ExtractError::Worker("the worker gave an answer of the wrong kind".to_owned())
}

/// Reads the worker's output up to `cap` bytes; more is an error.
async fn read_capped<R: AsyncRead + Unpin>(mut r: R, cap: usize) -> Result<Vec<u8>, ExtractError> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = r
            .read(&mut buf)
            .await
            .map_err(|e| ExtractError::Worker(format!("its output could not be read ({e})")))?;
        if n == 0 {
            return Ok(out);
        }
        if out.len() + n > cap {
            return Err(ExtractError::OutputTooLarge);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Keeps the first bytes of the worker's standard error and drains the rest,
/// so a chatty worker never blocks on a full pipe.
async fn read_stderr<R: AsyncRead + Unpin>(mut r: R) -> String {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8 * 1024];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = STDERR_KEEP.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The last non-empty line: the worker writes its answer last, after
/// anything a library may have printed.
fn last_line(out: &[u8]) -> Option<&[u8]> {
    out.split(|&b| b == b'\n')
        .rev()
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))
}

/// Why a worker that gave no answer died.
fn diagnose(status: Option<ExitStatus>, stderr: &str) -> ExtractError {
    use std::os::unix::process::ExitStatusExt;
    // Rust's allocation-failure handler and its stack-overflow handler both
    // print a line before aborting; RLIMIT_AS makes allocations fail.
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return ExtractError::OutOfMemory;
    }
    if stderr.contains("has overflowed its stack") {
        return ExtractError::TooDeep;
    }
    let Some(status) = status else {
        return ExtractError::Crashed;
    };
    match status.signal() {
        Some(sig) if sig == rustix::process::Signal::XCPU.as_raw() => ExtractError::TimedOut,
        Some(_) => ExtractError::Crashed,
        None => ExtractError::Worker(format!(
            "the worker stopped without an answer (exit code {})",
            status.code().unwrap_or(-1)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn last_line_skips_library_chatter() {
        assert_eq!(last_line(b"noise\n{\"a\":1}\n\n"), Some(&b"{\"a\":1}"[..]));
        assert_eq!(last_line(b""), None);
    }

    #[test]
    fn deaths_are_diagnosed() {
        let sig = |s: i32| Some(ExitStatus::from_raw(s));
        assert_eq!(
            diagnose(sig(6), "memory allocation of 1073741824 bytes failed\n"),
            ExtractError::OutOfMemory
        );
        assert_eq!(
            diagnose(
                sig(6),
                "\nthread 'main' has overflowed its stack\nfatal runtime error: stack overflow"
            ),
            ExtractError::TooDeep
        );
        assert_eq!(diagnose(sig(24), ""), ExtractError::TimedOut);
        assert_eq!(diagnose(sig(11), ""), ExtractError::Crashed);
        assert!(matches!(
            diagnose(Some(ExitStatus::from_raw(3 << 8)), ""),
            ExtractError::Worker(m) if m.contains("exit code 3")
        ));
    }

    #[tokio::test]
    async fn a_missing_program_is_a_clear_error() {
        let ex = Extractor::new(ExtractorConfig::worker("/nonexistent/ferry-worker"));
        let err = ex
            .preview("test", Path::new("/tmp/x.docx"), "x.docx", 100)
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the document reader could not be run"),
            "{err}"
        );
        assert!(!err.to_string().contains("/nonexistent"), "{err}");
    }

    #[tokio::test]
    async fn output_is_capped_and_slow_workers_time_out() {
        // `yes` prints without end; the cap stops it.
        let mut cfg = ExtractorConfig::new("yes", Vec::<String>::new());
        cfg.output_bytes = 1024;
        let err = Extractor::new(cfg)
            .preview("test", Path::new("/tmp/x.docx"), "x.docx", 100)
            .await
            .unwrap_err();
        assert_eq!(err, ExtractError::OutputTooLarge);

        let mut cfg = ExtractorConfig::new("sleep", ["30"]);
        cfg.timeout = Duration::from_millis(300);
        let started = std::time::Instant::now();
        let err = Extractor::new(cfg)
            .preview("test", Path::new("/tmp/x.docx"), "x.docx", 100)
            .await
            .unwrap_err();
        assert_eq!(err, ExtractError::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn cancelling_a_call_kills_the_worker_group() {
        let dir = std::env::temp_dir().join(format!("ferry-extract-cancel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("pid");
        // The grandchild is only reached by killing the process group;
        // kill_on_drop alone would leave it running.
        let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
        let ex = Extractor::new(ExtractorConfig::new("sh", ["-c", script.as_str()]));
        let call = ex.preview("test", Path::new("/tmp/x.docx"), "x.docx", 10);
        // Give the worker time to start, then drop the call.
        let _ = tokio::time::timeout(Duration::from_millis(500), call).await;
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while std::fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z")) {
            assert!(
                std::time::Instant::now() < deadline,
                "the grandchild still runs"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
