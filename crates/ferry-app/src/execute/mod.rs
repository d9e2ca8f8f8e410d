//! Running a command in a thread's sandbox (docs/reference/execute.md): the agent's code runs
//! beside the files, confined by `ferry_exec`, and what it changes is seen through every door.
//!
//! One command runs at a time in a thread, and at most as many as the server has slots for
//! (one per core by default); beyond either the caller is told to come back later, never
//! queued behind someone else's long command. What the command created, changed or removed is
//! found by listing the sandbox before and after, and told on the thread's channel as the
//! other doors' changes are (`file_written`, `file_deleted`, with `door: "command"`), followed
//! by the `command_executed` event the person sees.
//!
//! A sandbox kept in the object store (several nodes, no shared folder) is copied into a
//! working folder on this node for the command, and what the command changed is written back
//! through the sandbox's own conditional writes ([`working_copy`]).

mod working_copy;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ferry_core::SandboxPath;
use ferry_core::change::ChangeKind;
use ferry_core::door::Door;
use ferry_core::execute::{DEFAULT_CWD, ExecuteInput, check_command, head_and_tail, shown_command};
pub use ferry_exec::output::Utf8Chunks;
use ferry_exec::{Finished, Job, Runner};
use ferry_store::sandbox::{PathKind, SandboxEntry};
use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::error::{Error, Result, in_sandbox};
use crate::events::Role;
use crate::events::thread_event;
use crate::files::sandbox::{Changed, announce};
use ferry_core::thread_event::{CommandExecuted, EventKind, StopReason, ThreadEvent};

/// The most of a command's output its event carries (events stay well under 32 KiB).
const EVENT_OUTPUT_BYTES: usize = 8 * 1024;

/// How a command ended.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteResult {
    /// Standard output and standard error, interleaved as written: at most the output limit
    /// (1 MiB by default), beyond which its head and tail are kept around a line saying how
    /// much was left out; ferry's note on a limit the command hit comes last, in brackets.
    pub output: String,
    /// `sh`'s exit status; null when a signal or the timeout ended it.
    #[schema(required = true)]
    pub exit_code: Option<i32>,
    /// Whether `output` leaves some of the output out.
    pub truncated: bool,
    /// Whether it was stopped at its timeout.
    pub timed_out: bool,
    pub duration_ms: u64,
    /// Every byte it wrote.
    pub output_bytes: u64,
    /// Why ferry stopped it, when it did.
    #[schema(required = true)]
    pub stopped_by: Option<StopReason>,
}

/// A command that may run: access, the command's text, its folder and the thread's turn and a
/// server slot are settled, so every refusal is known before anything runs (and before a
/// streamed answer has begun).
#[derive(Debug)]
pub struct Prepared {
    app: App,
    principal: Principal,
    thread_id: String,
    sandbox: ferry_store::sandbox::Sandbox,
    runner: Arc<dyn Runner>,
    /// The sandbox's folder on this host, or `None` for a sandbox in the object store (run in
    /// a working copy).
    folder: Option<std::path::PathBuf>,
    job: Job,
    _turn: Turn,
    _slot: OwnedSemaphorePermit,
}

/// Settles whether `input` may run in the thread's sandbox as its agent (or service_role).
pub async fn prepare(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    input: &ExecuteInput,
) -> Result<Prepared> {
    let thread = access::thread(app, principal, thread_id, Action::ActAsAgent).await?;
    let commands = &app.commands;
    let runner = match (&commands.runner, commands.availability.why_not()) {
        (Some(runner), None) => Arc::clone(runner),
        (_, why) => {
            return Err(Error::NotImplemented(why.unwrap_or_else(|| {
                "commands are not set up on this server".to_owned()
            })));
        }
    };
    let folder = app.sandboxes.host_path(&thread.id);
    let command = check_command(&input.command).map_err(|e| match e {
        ferry_core::execute::CommandError::TooLong(_) => Error::TooLarge(e.to_string()),
        _ => Error::invalid_request(e.to_string()),
    })?;
    let limits = runner.limits();
    let timeout = match input.timeout {
        None => limits.default_timeout,
        Some(secs) if secs >= 1 && secs <= limits.max_timeout.as_secs() => {
            Duration::from_secs(secs)
        }
        Some(secs) => {
            return Err(Error::invalid_request(format!(
                "timeout is {secs} s: give 1 to {} seconds",
                limits.max_timeout.as_secs()
            )));
        }
    };
    let cwd_text = input.cwd.as_deref().unwrap_or(DEFAULT_CWD);
    let cwd = SandboxPath::parse_dir(cwd_text)?;
    let sandbox = app.sandboxes.open(&thread.id).await?;
    // A working copy has every folder of the standard layout, even one that holds nothing.
    let in_layout = |dir: &SandboxPath| {
        folder.is_none() && ferry_core::path::SANDBOX_LAYOUT.contains(&dir.relative().as_str())
    };
    if let Some(dir) = &cwd
        && !in_layout(dir)
        && sandbox.find(dir.relative()).await.map_err(in_sandbox)? != Some(PathKind::Folder)
    {
        return Err(Error::not_found(format!(
            "cwd '{}' is not a folder of the sandbox: make it first (mkdir -p in a command \
             run from /sandbox/workspace)",
            dir.display()
        )));
    }
    let cwd = cwd.map_or_else(|| "/sandbox".to_owned(), |d| d.display());

    let turn = Turn::take(&commands.running, &thread.id).ok_or_else(|| {
        Error::TooManyRequests(
            "a command is already running in this thread: wait for it to end (one runs at a \
             time in a thread)"
                .to_owned(),
        )
    })?;
    let slot = Arc::clone(&commands.slots)
        .try_acquire_owned()
        .map_err(|_| {
            Error::TooManyRequests(format!(
                "the server is running as many commands as it runs at once ({}): try again \
                 shortly",
                limits.concurrent
            ))
        })?;

    Ok(Prepared {
        app: app.clone(),
        principal: principal.clone(),
        thread_id: thread.id,
        sandbox,
        runner,
        job: Job {
            sandbox: folder.clone().unwrap_or_default(),
            command: command.to_owned(),
            cwd,
            timeout,
        },
        folder,
        _turn: turn,
        _slot: slot,
    })
}

impl Prepared {
    /// Runs the command, sending its output to `live` as it comes; then tells the thread what
    /// it changed and that it ran. Dropping the future stops the command and everything it
    /// started.
    pub async fn run(self, live: Option<mpsc::UnboundedSender<Bytes>>) -> Result<ExecuteResult> {
        let (app, principal, thread_id) = (&self.app, &self.principal, &self.thread_id);
        let finished = match &self.folder {
            Some(_) => {
                let started = Instant::now();
                let before = listing(&self.sandbox).await;
                let listed = started.elapsed();
                let finished = self
                    .runner
                    .run(self.job.clone(), live)
                    .await
                    .map_err(Error::internal)?;
                let ran = started.elapsed();
                let after = listing(&self.sandbox).await;
                if let (Some(before), Some(after)) = (before, after) {
                    let changed = changes(&before, &after);
                    announce(app, principal, thread_id, Door::Command, changed).await;
                }
                // Where a command's time goes besides its own run (for tuning; debug level).
                tracing::debug!(
                    listing_us = listed.as_micros() as u64,
                    run_us = (ran - listed).as_micros() as u64,
                    command_us = finished.duration.as_micros() as u64,
                    changes_us = (started.elapsed() - ran).as_micros() as u64,
                    "a command's time"
                );
                finished
            }
            None => {
                let limit = self.runner.limits().sandbox_bytes;
                let copy = working_copy::WorkingCopy::make(app, &self.sandbox, limit).await?;
                let job = Job {
                    sandbox: copy.folder().to_owned(),
                    ..self.job.clone()
                };
                let mut finished = self.runner.run(job, live).await.map_err(Error::internal)?;
                for note in copy.write_back(app, principal, thread_id).await {
                    if !finished.output.is_empty() && !finished.output.ends_with('\n') {
                        finished.output.push('\n');
                    }
                    finished.output.push_str(&format!("[ferry: {note}]\n"));
                }
                finished
            }
        };
        let result = result_of(&finished);
        record(
            app,
            principal,
            thread_id,
            &self.job.command,
            &self.job.cwd,
            &result,
        )
        .await;
        Ok(result)
    }
}

/// Runs `input` in the thread's sandbox and answers how it ended (see [`prepare`] and
/// [`Prepared::run`]).
pub async fn execute(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    input: &ExecuteInput,
) -> Result<ExecuteResult> {
    prepare(app, principal, thread_id, input)
        .await?
        .run(None)
        .await
}

/// The sandbox's files and their state, or `None` when it cannot be listed (too many
/// entries): the command still runs, only its changes are not told one by one.
async fn listing(sandbox: &ferry_store::sandbox::Sandbox) -> Option<HashMap<String, SandboxEntry>> {
    match sandbox.list(None, true).await {
        Ok(listing) => Some(
            listing
                .entries
                .into_iter()
                .filter(|e| !e.is_dir)
                .map(|e| (e.path.clone(), e))
                .collect(),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "the sandbox could not be listed around a command");
            None
        }
    }
}

/// What changed between two listings: written (new or changed) files, then removed ones, each
/// in path order.
fn changes(
    before: &HashMap<String, SandboxEntry>,
    after: &HashMap<String, SandboxEntry>,
) -> Vec<Changed> {
    let mut written: Vec<&SandboxEntry> = after
        .values()
        .filter(|now| {
            before
                .get(&now.path)
                .is_none_or(|then| then.etag != now.etag || then.size != now.size)
        })
        .collect();
    written.sort_by(|a, b| a.path.cmp(&b.path));
    let mut removed: Vec<&String> = before.keys().filter(|p| !after.contains_key(*p)).collect();
    removed.sort();
    written
        .into_iter()
        .map(|entry| Changed {
            kind: ChangeKind::FileWritten,
            path: format!("/sandbox/{}", entry.path),
            destination: None,
            etag: Some(entry.etag.clone()),
            size: Some(entry.size),
        })
        .chain(removed.into_iter().map(|path| Changed {
            kind: ChangeKind::FileDeleted,
            path: format!("/sandbox/{path}"),
            destination: None,
            etag: None,
            size: None,
        }))
        .collect()
}

fn result_of(finished: &Finished) -> ExecuteResult {
    ExecuteResult {
        output: finished.output.clone(),
        exit_code: finished.exit_code,
        truncated: finished.truncated,
        timed_out: finished.stopped_by == Some(ferry_exec::StopReason::Timeout),
        duration_ms: finished.duration.as_millis() as u64,
        output_bytes: finished.output_bytes,
        stopped_by: finished.stopped_by.map(|s| match s {
            ferry_exec::StopReason::Timeout => StopReason::Timeout,
            ferry_exec::StopReason::Memory => StopReason::Memory,
            ferry_exec::StopReason::Disk => StopReason::Disk,
        }),
    }
}

/// Stores the `command_executed` event and wakes the thread's subscribers. The command has
/// run whatever happens here: a failure to store the event is logged, not answered.
async fn record(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    command: &str,
    cwd: &str,
    result: &ExecuteResult,
) {
    let (output, output_truncated) = head_and_tail(&result.output, EVENT_OUTPUT_BYTES);
    let executed = CommandExecuted {
        command: shown_command(command),
        cwd: cwd.to_owned(),
        exit_code: result.exit_code,
        duration_ms: result.duration_ms,
        output_bytes: result.output_bytes,
        timed_out: result.timed_out,
        output,
        output_truncated: output_truncated || result.truncated,
        stopped_by: result.stopped_by,
    };
    let agent = principal.agent_id().to_owned();
    let thread = thread_id.to_owned();
    let stored = app
        .db
        .append_event(thread_id, move |id, at| {
            thread_event::rendered(&ThreadEvent {
                head: thread_event::head(id, at, Role::Agent(&agent), &thread, None),
                kind: EventKind::CommandExecuted(executed),
            })
        })
        .await;
    match stored {
        Ok(event) => app.announce(event),
        Err(e) => {
            tracing::warn!(error = %e, thread = thread_id, "a command's event could not be stored")
        }
    }
}

/// A thread's turn to run a command: at most one is held per thread.
#[derive(Debug)]
struct Turn {
    running: Arc<Mutex<HashSet<String>>>,
    thread: String,
}

impl Turn {
    fn take(running: &Arc<Mutex<HashSet<String>>>, thread: &str) -> Option<Turn> {
        let mut set = running.lock().unwrap_or_else(|p| p.into_inner());
        set.insert(thread.to_owned()).then(|| Turn {
            running: Arc::clone(running),
            thread: thread.to_owned(),
        })
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut set = self.running.lock().unwrap_or_else(|p| p.into_inner());
        set.remove(&self.thread);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_core::Timestamp;

    fn entry(path: &str, etag: &str, size: u64) -> (String, SandboxEntry) {
        (
            path.to_owned(),
            SandboxEntry {
                path: path.to_owned(),
                is_dir: false,
                size,
                modified: Timestamp(0),
                etag: etag.to_owned(),
            },
        )
    }

    #[test]
    fn changes_are_the_new_the_changed_and_the_removed_files() {
        let before: HashMap<_, _> = [
            entry("workspace/same.txt", "a", 1),
            entry("workspace/edited.txt", "b", 2),
            entry("outputs/gone.csv", "c", 3),
        ]
        .into();
        let after: HashMap<_, _> = [
            entry("workspace/same.txt", "a", 1),
            entry("workspace/edited.txt", "b2", 5),
            entry("outputs/new.png", "d", 9),
        ]
        .into();
        let told: Vec<(ChangeKind, String)> = changes(&before, &after)
            .into_iter()
            .map(|c| (c.kind, c.path))
            .collect();
        assert_eq!(
            told,
            vec![
                (ChangeKind::FileWritten, "/sandbox/outputs/new.png".into()),
                (
                    ChangeKind::FileWritten,
                    "/sandbox/workspace/edited.txt".into()
                ),
                (ChangeKind::FileDeleted, "/sandbox/outputs/gone.csv".into()),
            ]
        );
    }

    #[test]
    fn a_thread_holds_one_turn_at_a_time() {
        let running = Arc::default();
        let first = Turn::take(&running, "t1").expect("the first turn");
        assert!(Turn::take(&running, "t1").is_none());
        assert!(Turn::take(&running, "t2").is_some());
        drop(first);
        assert!(Turn::take(&running, "t1").is_some());
    }
}
