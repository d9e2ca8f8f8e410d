//! Helpers started ahead of their commands.
//!
//! Of what a command of nothing (`true`) costs beyond bubblewrap itself, most is spent before
//! the command is known: starting the ferry binary a second time as the helper (its dynamic
//! relocations alone take about 2 ms) and moving it into its control groups (under cgroup v1
//! each of the three moves waits for the kernel). So the runner keeps a few helpers started
//! ahead, each in fresh control groups of its own, blocked reading its spec on standard input:
//! running a command only hands one its spec. A helper serves one command and is never used
//! again; another is started off the command's path.
//!
//! A helper waiting for its command is an idle process of a few MiB in empty control groups.
//! Started ahead or not, a helper runs the same code with the same limits: the limits that
//! depend on the command (its CPU time) are taken from the spec, after it arrives.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;

use crate::ExecLimits;
use crate::cgroup::{Cgroups, RunGroup};
use crate::spec::HELPER_ARG;

/// The most helpers kept waiting, whatever the number of commands the server runs at once.
const MOST_WAITING: usize = 8;

/// A helper that has joined its control groups and waits for its spec.
#[derive(Debug)]
pub(crate) struct Ready {
    /// Killed when dropped.
    pub child: tokio::process::Child,
    /// The read end of the pipe that is the command's standard output and error.
    pub output: OwnedFd,
    pub group: GroupGuard,
}

/// Starts a helper in new control groups made with `limits` under `cgroups`.
pub(crate) async fn start(
    program: &Path,
    cgroups: &Cgroups,
    limits: &ExecLimits,
) -> io::Result<Ready> {
    let name = format!("cmd-{}", uuid::Uuid::now_v7().simple());
    let group = {
        let (cgroups, limits) = (cgroups.clone(), limits.clone());
        tokio::task::spawn_blocking(move || cgroups.create(&name, &limits))
            .await
            .map_err(io::Error::other)?
            .map_err(failed("making the command's control group"))?
    };
    // Whatever happens from here on, the group's processes are killed and the group removed.
    let group = GroupGuard(group);
    let folders = group.0.as_ref().map(RunGroup::folders).unwrap_or_default();
    let (reader, writer) = std::io::pipe()?;
    let mut command = tokio::process::Command::new(program);
    command
        .arg(HELPER_ARG)
        .args(folders)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .kill_on_drop(true);
    let child = command.spawn().map_err(failed("starting the helper"))?;
    // The command's ends of the pipe are the command's alone from here on: the pipe is at its
    // end once every process of the command is gone.
    drop(command);
    Ok(Ready {
        child,
        output: OwnedFd::from(reader),
        group,
    })
}

/// The helpers waiting for a command, and how many are being started.
#[derive(Debug)]
pub(crate) struct Pool {
    size: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    waiting: Vec<Ready>,
    starting: usize,
}

impl Pool {
    /// A pool that keeps as many helpers waiting as commands may run at once (at most
    /// [`MOST_WAITING`]).
    pub fn new(concurrent: usize) -> Pool {
        Pool {
            size: concurrent.clamp(1, MOST_WAITING),
            state: Mutex::default(),
        }
    }

    /// A waiting helper that is still alive, if there is one.
    pub fn take(&self) -> Option<Ready> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(mut ready) = state.waiting.pop() {
            // One that died while it waited (killed from outside) is dropped, group and all.
            if matches!(ready.child.try_wait(), Ok(None)) {
                return Some(ready);
            }
        }
        None
    }

    /// How many helpers to start now to fill the pool; each is counted as starting until
    /// [`Pool::started`] is called for it.
    pub fn to_start(&self) -> usize {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let missing = self
            .size
            .saturating_sub(state.waiting.len() + state.starting);
        state.starting += missing;
        missing
    }

    /// One of the helpers counted by [`Pool::to_start`] has started, or failed to.
    pub fn started(&self, ready: Option<Ready>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.starting -= 1;
        state.waiting.extend(ready);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Here and now, not on the blocking pool: a pool is dropped with its runner, often as
        // the runtime shuts down, when a task handed to it may never run and the groups would
        // be left behind.
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        for mut ready in state.waiting.drain(..) {
            let _ = ready.child.start_kill();
            drop(ready.group.0.take());
        }
    }
}

/// A command's control group, removed (its processes killed first) when dropped.
#[derive(Debug)]
pub(crate) struct GroupGuard(pub Option<RunGroup>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // On the blocking pool (or here when there is no runtime any more): a run that ended,
        // or one that was abandoned because its caller went away.
        if let Some(group) = self.0.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn_blocking(move || drop(group));
                }
                Err(_) => drop(group),
            }
        }
    }
}

/// Says which step of running a command an I/O error broke, so the server's answer and log
/// tell where to look.
pub(crate) fn failed(step: &'static str) -> impl FnOnce(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{step}: {e}"))
}
