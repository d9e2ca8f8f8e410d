//! The helper the server starts for each command (`ferry __exec`): it sets up what must be in
//! place before bubblewrap runs, then becomes bubblewrap. It runs as a process of its own so
//! that the server never runs code between `fork` and `exec`.
//!
//! In order: start a session of its own (no terminal's signals reach the command); join the
//! control groups named on its command line (`ferry __exec GROUP…`), so that everything the
//! command starts is counted from its first process on; read the [`Spec`] from standard input,
//! which may come much later (the runner starts helpers ahead of their commands); take its
//! limits, which every process inherits; open the sandbox folder and its read-only folders
//! without following a symbolic link (a command that left `user_uploads` as a link to `/` must
//! not have the host bound in its place next time), and the seccomp programs and generated
//! `/etc` files as memory files; then `exec` bubblewrap with those descriptors.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::process::{Resource, Rlimit};

use crate::seccomp;
use crate::spec::{ETC_FILES, Fds, Spec, bwrap_args};

/// The largest spec read: a command is at most a few hundred KiB.
const MAX_SPEC_BYTES: u64 = 4 * 1024 * 1024;

/// The exit status when the command could not be started at all (as `env` and `nohup` use).
pub const CANNOT_START: u8 = 125;

/// Open files each process of the command may have.
const OPEN_FILES: u64 = 4096;

/// The entry point of `ferry __exec`. Only returns when something failed before bubblewrap
/// took over; what failed is on standard error, which the server reads as the command's
/// output.
pub fn main() -> ExitCode {
    let error = match start() {
        Ok(never) => match never {},
        Err(e) => e,
    };
    // Standard error is the command's output pipe: the caller reads this.
    let _ = writeln!(
        io::stderr(),
        "ferry: the command could not be started: {error}"
    );
    ExitCode::from(CANNOT_START)
}

fn start() -> io::Result<std::convert::Infallible> {
    rustix::process::setsid()?;
    // The control groups are named on the command line: the helper joins them while it waits
    // for its command (it may be started ahead of one).
    let me = std::process::id().to_string();
    for group in std::env::args_os().skip(2) {
        std::fs::write(Path::new(&group).join("cgroup.procs"), &me)?;
    }
    let mut raw = Vec::new();
    io::stdin().take(MAX_SPEC_BYTES).read_to_end(&mut raw)?;
    let spec: Spec = serde_json::from_slice(&raw).map_err(io::Error::other)?;
    // Descriptors first: bubblewrap inherits them (none is close-on-exec).
    let sandbox = rustix::fs::open(
        &spec.sandbox,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW,
        Mode::empty(),
    )?;
    let mut read_only = Vec::new();
    for name in &spec.read_only {
        let fd = rustix::fs::openat2(
            &sandbox,
            name.as_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .map_err(|e| {
            io::Error::other(format!(
                "/sandbox/{name} is not a folder of the sandbox ({e})"
            ))
        })?;
        read_only.push((fd, name.clone()));
    }
    let programs = seccomp::programs().map_err(io::Error::other)?;
    let seccomp: Vec<OwnedFd> = programs
        .iter()
        .map(|p| memory_file("ferry-seccomp", p))
        .collect::<io::Result<_>>()?;
    let etc: Vec<OwnedFd> = ETC_FILES
        .iter()
        .map(|(_, content)| memory_file("ferry-etc", content.as_bytes()))
        .collect::<io::Result<_>>()?;
    limit(Resource::Core, 0)?;
    limit(Resource::Cpu, spec.limits.cpu_seconds)?;
    limit(Resource::Fsize, spec.limits.file_bytes)?;
    limit(Resource::Nofile, OPEN_FILES)?;
    if let Some(bytes) = spec.limits.address_space {
        limit(Resource::As, bytes)?;
    }
    if let Some(count) = spec.limits.processes {
        limit(Resource::Nproc, count)?;
    }
    let fds = Fds {
        sandbox: sandbox.as_raw_fd(),
        read_only: read_only
            .iter()
            .map(|(fd, name)| (fd.as_raw_fd(), name.clone()))
            .collect(),
        seccomp: seccomp.iter().map(AsRawFd::as_raw_fd).collect(),
        etc: [
            (etc[0].as_raw_fd(), ETC_FILES[0].0),
            (etc[1].as_raw_fd(), ETC_FILES[1].0),
            (etc[2].as_raw_fd(), ETC_FILES[2].0),
        ],
    };
    let error = Command::new(&spec.bwrap)
        .args(bwrap_args(&spec, &fds))
        .env_clear()
        .stdin(Stdio::null())
        .exec();
    Err(io::Error::new(
        error.kind(),
        format!("{} did not start: {error}", spec.bwrap.display()),
    ))
}

/// A file in memory holding `content`, read from its start, inherited across `exec`.
fn memory_file(name: &str, content: &[u8]) -> io::Result<OwnedFd> {
    let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::empty())?;
    let mut file = std::fs::File::from(fd);
    file.write_all(content)?;
    rustix::fs::seek(&file, rustix::fs::SeekFrom::Start(0))?;
    Ok(OwnedFd::from(file))
}

fn limit(resource: Resource, value: u64) -> io::Result<()> {
    let value = Some(value);
    rustix::process::setrlimit(
        resource,
        Rlimit {
            current: value,
            maximum: value,
        },
    )?;
    Ok(())
}
