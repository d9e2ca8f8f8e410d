//! ferry's command runner: one shell command, run as `sh -c COMMAND` in a thread's sandbox
//! folder, confined so that nothing it does reaches anything but that folder
//! (docs/security.md, "Commands").
//!
//! The layers, outermost first:
//! - **Resource limits.** A control group per command where the server can make one (cgroup v2,
//!   or the v1 `memory` and `pids` hierarchies) bounds its memory and processes as a whole;
//!   otherwise each process's address space and the user's process count are limited. Every
//!   process also has CPU-time, file-size and open-file limits ([`cgroup`], [`helper`]).
//! - **Namespaces and mounts (bubblewrap).** Its own user, PID, IPC, UTS, network and mount
//!   namespaces: it sees the sandbox at `/sandbox` (the uploads and skills read-only), a
//!   read-only runtime, its own `/tmp`, `/proc` and `/dev`, and an environment of four
//!   variables. No network but a loopback of its own; where the operator allowed hosts, a
//!   bridge on that loopback leads to ferry's filtering proxy ([`proxy`], [`network`]).
//! - **A seccomp filter** refusing the system calls a confined program never needs ([`seccomp`]).
//! - **A wall clock.** At the timeout the namespace's first process is killed, and with it every
//!   process of the namespace: daemons and double forks included, nothing outlives a command.
//!
//! The server calls a [`Runner`]; [`Bubblewrap`] is the one this crate provides. It starts the
//! ferry binary again as a small helper ([`helper::main`], `ferry __exec`) that takes its
//! limits, joins the control groups, opens the folders to bind without following symlinks and
//! then becomes `bwrap`, so that no code runs between `fork` and `exec` in the server itself.
//! A few helpers are started ahead, already in their control groups, waiting for a command
//! each (`ahead.rs`).

mod ahead;
pub mod bridge;
pub mod cgroup;
pub mod helper;
mod limits;
pub mod network;
pub mod output;
mod probe;
pub mod proxy;
mod runner;
pub mod seccomp;
mod spec;
mod walk;

pub use limits::{ExecLimits, Runtime};
pub use network::{AllowedHost, NetworkPolicy};
pub use probe::{Availability, probe};
pub use proxy::Proxy;
pub use runner::{Bubblewrap, Finished, Job, Runner, StopReason};
pub use spec::{BRIDGE_ARG, HELPER_ARG};
