//! Running one command: the [`Runner`] interface the server calls, and [`Bubblewrap`], which
//! runs the command on this machine.
//!
//! Another runner (a Kubernetes Job, a pool of microVMs, a hosted sandbox) would implement the
//! same trait: it is handed the sandbox folder, the command, its working folder and its
//! timeout, streams the output as it comes, and answers how the command ended.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::ahead::{self, GroupGuard, Pool, Ready, failed};
use crate::cgroup::Cgroups;
use crate::output::HeadTail;
use crate::spec::{Mount, Network, ProcessLimits, Spec, runtime_mounts};
use crate::{ExecLimits, NetworkPolicy, Proxy, Runtime, helper, walk};

/// One command to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// The thread's sandbox folder on this host.
    pub sandbox: PathBuf,
    /// Run as `sh -c COMMAND`.
    pub command: String,
    /// The working folder as the command sees it (`/sandbox/workspace`).
    pub cwd: String,
    pub timeout: Duration,
}

/// Why ferry stopped a command before it ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Its wall time ran out.
    Timeout,
    /// A process of it was killed for using more memory than the command may.
    Memory,
    /// The sandbox came to hold more than commands may leave in it.
    Disk,
}

/// How a command ended.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Standard output and standard error, interleaved as written; within the output limit,
    /// with the head and the tail kept beyond it, and ferry's notes on any limit it hit.
    pub output: String,
    pub truncated: bool,
    /// Every byte the command wrote.
    pub output_bytes: u64,
    /// `sh`'s exit status; `None` when a signal ended it or ferry stopped it at the timeout.
    pub exit_code: Option<i32>,
    pub stopped_by: Option<StopReason>,
    /// Whether the command was refused a process at its limit.
    pub hit_process_limit: bool,
    pub duration: Duration,
}

/// Runs commands in sandbox folders.
#[async_trait]
pub trait Runner: Send + Sync + std::fmt::Debug {
    /// The bounds of every command.
    fn limits(&self) -> &ExecLimits;

    /// How commands are confined and bounded, in words (for the server's start-up line).
    fn describe(&self) -> String;

    /// The hosts commands may reach, where they may reach any.
    fn network(&self) -> Option<&NetworkPolicy> {
        None
    }

    /// Runs `job`, sending its output to `live` as it comes (at most the output limit of it;
    /// the answer has the rest). Dropping the future stops the command and everything it
    /// started.
    async fn run(
        &self,
        job: Job,
        live: Option<mpsc::UnboundedSender<Bytes>>,
    ) -> io::Result<Finished>;
}

/// The runner of this machine: bubblewrap, a seccomp filter, control groups or resource
/// limits (see the crate's documentation).
#[derive(Debug, Clone)]
pub struct Bubblewrap {
    inner: Arc<Setup>,
}

#[derive(Debug)]
struct Setup {
    /// The ferry binary, started as the helper.
    helper: PathBuf,
    bwrap: PathBuf,
    mounts: Vec<Mount>,
    limits: ExecLimits,
    cgroups: Cgroups,
    /// The filtering proxy to the allowed hosts, where there are any.
    proxy: Option<Proxy>,
    /// Helpers started ahead, waiting for a command each.
    ahead: Pool,
}

/// The folders of a sandbox a command may read but not change.
const READ_ONLY: [&str; 2] = ["user_uploads", "skills"];

/// ferry's own folder in every sandbox (writes being assembled, the commit lock).
const HIDDEN: [&str; 1] = [".ferry-tmp"];

/// How long the output is read after the command's first process ended (its namespace, and
/// so every writer of the pipe, is gone by then).
const DRAIN: Duration = Duration::from_secs(2);

/// How often the sandbox's size is checked while a command runs.
const DISK_CHECK: Duration = Duration::from_secs(1);

impl Bubblewrap {
    /// A runner that starts `helper` (the ferry binary) as `helper __exec`, which becomes
    /// `bwrap`, over `runtime`, with `limits`, in control groups made under `cgroups`; with a
    /// `proxy`, commands reach its allowed hosts through it (the same binary is the bridge to
    /// it inside their namespace).
    pub fn new(
        helper: PathBuf,
        bwrap: PathBuf,
        runtime: &Runtime,
        limits: ExecLimits,
        cgroups: Cgroups,
        proxy: Option<Proxy>,
    ) -> Bubblewrap {
        Bubblewrap {
            inner: Arc::new(Setup {
                helper,
                bwrap,
                mounts: runtime_mounts(runtime),
                ahead: Pool::new(limits.concurrent),
                limits,
                cgroups,
                proxy,
            }),
        }
    }

    /// Starts helpers in the background until as many wait as the pool keeps.
    fn start_ahead(&self) {
        for _ in 0..self.inner.ahead.to_start() {
            let setup = Arc::clone(&self.inner);
            tokio::spawn(async move {
                let ready = ahead::start(&setup.helper, &setup.cgroups, &setup.limits).await;
                if let Err(e) = &ready {
                    tracing::warn!(error = %e, "a helper could not be started ahead");
                }
                setup.ahead.started(ready.ok());
            });
        }
    }

    fn spec(&self, job: &Job) -> Spec {
        let setup = &self.inner;
        let limits = &setup.limits;
        Spec {
            bwrap: setup.bwrap.clone(),
            sandbox: job.sandbox.clone(),
            read_only: READ_ONLY.iter().map(|name| (*name).to_owned()).collect(),
            hidden: HIDDEN.iter().map(|name| (*name).to_owned()).collect(),
            mounts: setup.mounts.clone(),
            cwd: job.cwd.clone(),
            command: job.command.clone(),
            limits: ProcessLimits {
                address_space: (!setup.cgroups.bounds_memory()).then_some(limits.memory_bytes),
                processes: (!setup.cgroups.bounds_processes()).then_some(limits.processes),
                cpu_seconds: job.timeout.as_secs() + 1,
                file_bytes: limits.file_bytes,
                tmp_bytes: limits.tmp_bytes,
            },
            network: setup.proxy.as_ref().map(|proxy| Network {
                proxy_socket: proxy.socket().to_owned(),
                bridge: setup.helper.clone(),
            }),
        }
    }
}

#[async_trait]
impl Runner for Bubblewrap {
    fn limits(&self) -> &ExecLimits {
        &self.inner.limits
    }

    fn describe(&self) -> String {
        let network = match &self.inner.proxy {
            Some(proxy) => format!("network only to {}", proxy.policy().describe()),
            None => "no network".to_owned(),
        };
        format!(
            "bubblewrap ({}), a seccomp filter, {}, {network}",
            self.inner.bwrap.display(),
            self.inner.cgroups.describe()
        )
    }

    fn network(&self) -> Option<&NetworkPolicy> {
        self.inner.proxy.as_ref().map(Proxy::policy)
    }

    async fn run(
        &self,
        job: Job,
        live: Option<mpsc::UnboundedSender<Bytes>>,
    ) -> io::Result<Finished> {
        let started = Instant::now();
        let setup = Arc::clone(&self.inner);
        for folder in READ_ONLY.iter().chain(&HIDDEN) {
            // Each is a mount point inside, so it must exist (a link in its place is refused
            // by the helper, which binds it without following links).
            let path = job.sandbox.join(folder);
            if std::fs::symlink_metadata(&path).is_err() {
                std::fs::create_dir(&path)?;
            }
        }
        if !walk::is_real_dir(&job.sandbox)? {
            return Err(io::Error::other("the sandbox is not a folder"));
        }
        let spec = serde_json::to_vec(&self.spec(&job)).map_err(io::Error::other)?;
        let waiting = setup.ahead.take();
        let was_waiting = waiting.is_some();
        let Ready {
            mut child,
            output,
            group,
        } = match waiting {
            Some(ready) => ready,
            None => ahead::start(&setup.helper, &setup.cgroups, &setup.limits).await?,
        };
        self.start_ahead();
        let helped = started.elapsed();
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(&spec)
                .await
                .map_err(failed("handing the helper the command"))?;
        }
        rustix::fs::fcntl_setfl(&output, rustix::fs::OFlags::NONBLOCK)?;
        let mut reader = tokio::net::unix::pipe::Receiver::from_owned_fd(output)?;

        let limits = &setup.limits;
        let mut kept = HeadTail::new(limits.output_bytes);
        let mut streamed = 0usize;
        let mut buffer = vec![0u8; 64 * 1024];
        let deadline = tokio::time::Instant::now() + job.timeout;
        let mut disk_check = tokio::time::interval(DISK_CHECK);
        let mut status = None;
        let mut drain_until = None;
        let mut stopped_by = None;
        let mut at_end = false;
        // A sandbox already over the quota may still be cleaned up: a command is stopped only
        // for growing it past the quota, or past what it held when the command began.
        let mut disk_limit = None;
        while !(at_end && status.is_some()) {
            tokio::select! {
                read = reader.read(&mut buffer), if !at_end => {
                    let n = read.map_err(failed("reading the command's output"))?;
                    if n == 0 {
                        at_end = true;
                        continue;
                    }
                    kept.push(&buffer[..n]);
                    if let Some(live) = &live && streamed < limits.output_bytes {
                        let part = n.min(limits.output_bytes - streamed);
                        streamed += part;
                        let _ = live.send(Bytes::copy_from_slice(&buffer[..part]));
                    }
                }
                exited = child.wait(), if status.is_none() => {
                    status = Some(exited.map_err(failed("waiting for the command"))?);
                    drain_until = Some(tokio::time::Instant::now() + DRAIN);
                }
                () = tokio::time::sleep_until(deadline), if stopped_by.is_none() && status.is_none() => {
                    stopped_by = Some(StopReason::Timeout);
                    stop(&mut child, &group).await;
                }
                () = sleep_until_some(drain_until) => break,
                _ = disk_check.tick(), if stopped_by.is_none() && status.is_none() => {
                    let sandbox = job.sandbox.clone();
                    let used = tokio::task::spawn_blocking(move || walk::disk_usage(&sandbox))
                        .await
                        .unwrap_or(0);
                    let limit = *disk_limit.get_or_insert(used.max(limits.sandbox_bytes));
                    if used > limit {
                        stopped_by = Some(StopReason::Disk);
                        stop(&mut child, &group).await;
                    }
                }
            }
        }
        let status = match status {
            Some(status) => status,
            None => child
                .wait()
                .await
                .map_err(failed("waiting for the command"))?,
        };
        let exited = started.elapsed();
        let (out_of_memory, hit_process_limit) = match &group.0 {
            Some(g) => (g.ran_out_of_memory(), g.hit_process_limit()),
            None => (false, false),
        };
        // The group is removed off the answer's path (its processes are gone with the
        // namespace; removing it can still wait for the kernel to let go of them).
        drop(group);
        let sandbox = job.sandbox.clone();
        let changed = tokio::task::spawn_blocking(move || walk::drop_set_id_bits(&sandbox))
            .await
            .unwrap_or(0);
        if changed > 0 {
            tracing::info!(
                files = changed,
                "a command left set-id bits; they were taken off"
            );
        }
        // Where the runner's time goes (for tuning; debug level).
        tracing::debug!(
            started_ahead = was_waiting,
            helper_us = helped.as_micros() as u64,
            until_exit_us = (exited - helped).as_micros() as u64,
            after_us = (started.elapsed() - exited).as_micros() as u64,
            "a command's run"
        );
        if status.code() == Some(i32::from(helper::CANNOT_START))
            && kept
                .text()
                .starts_with("ferry: the command could not be started")
        {
            return Err(io::Error::other(kept.text().trim().to_owned()));
        }
        if stopped_by.is_none() && out_of_memory {
            stopped_by = Some(StopReason::Memory);
        }
        let mut output = kept.text();
        let mut note = |text: String| {
            if !output.is_empty() && !output.ends_with('\n') {
                output.push('\n');
            }
            output.push_str(&format!("[ferry: {text}]\n"));
        };
        match stopped_by {
            Some(StopReason::Timeout) => note(format!(
                "stopped after {} s, the command's time limit",
                job.timeout.as_secs()
            )),
            Some(StopReason::Memory) => note(format!(
                "a process was killed: the command used more than {} of memory",
                size(limits.memory_bytes)
            )),
            Some(StopReason::Disk) => note(format!(
                "stopped: the sandbox came to hold more than {}, what commands may fill it to",
                size(limits.sandbox_bytes)
            )),
            None => {}
        }
        if hit_process_limit {
            note(format!(
                "the command reached its limit of {} processes; some could not start",
                limits.processes
            ));
        }
        Ok(Finished {
            output,
            truncated: kept.truncated(),
            output_bytes: kept.total(),
            exit_code: if stopped_by == Some(StopReason::Timeout) {
                None
            } else {
                status.code()
            },
            stopped_by,
            hit_process_limit,
            duration: started.elapsed(),
        })
    }
}

/// Kills the command: its first process (bubblewrap, whose namespace dies with it) and
/// everything in its control group.
async fn stop(child: &mut tokio::process::Child, group: &GroupGuard) {
    let _ = child.start_kill();
    if let Some(g) = &group.0 {
        let folders = g.folders().to_vec();
        let _ = tokio::task::spawn_blocking(move || kill_in(&folders)).await;
    }
}

fn kill_in(folders: &[PathBuf]) {
    for folder in folders {
        let procs = std::fs::read_to_string(folder.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A size in words: `2 GiB`, `512 MiB`.
fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= 1024 * MIB && bytes.is_multiple_of(1024 * MIB) {
        format!("{} GiB", bytes / (1024 * MIB))
    } else {
        format!("{} MiB", bytes.div_ceil(MIB))
    }
}
