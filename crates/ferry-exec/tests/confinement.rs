//! What a command can and cannot do, run for real under bubblewrap with the helper this crate
//! builds. Each hostile command must get a clear answer and reach nothing but its sandbox.
//! Without bubblewrap these say loudly that they were skipped (and fail under FERRY_CI).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferry_exec::cgroup::Cgroups;
use ferry_exec::{Bubblewrap, ExecLimits, Finished, Job, Runner, Runtime, StopReason};

use ferry_test_support::peers::bwrap;

fn runner_with(limits: ExecLimits) -> Option<Bubblewrap> {
    let cgroups = Cgroups::detect(None).unwrap_or(Cgroups::None);
    runner_in(cgroups, limits)
}

fn runner_in(cgroups: Cgroups, limits: ExecLimits) -> Option<Bubblewrap> {
    Some(Bubblewrap::new(
        PathBuf::from(env!("CARGO_BIN_EXE_ferry-exec-helper")),
        bwrap()?,
        &Runtime::Host,
        limits,
        cgroups,
        None,
    ))
}

fn runner() -> Option<Bubblewrap> {
    runner_with(ExecLimits::default())
}

/// A sandbox folder with the standard layout and one upload.
fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for folder in ["workspace", "outputs", "user_uploads", "skills", "shared"] {
        std::fs::create_dir(dir.path().join(folder)).unwrap();
    }
    std::fs::write(dir.path().join("user_uploads/q3.csv"), "fruit,n\napple,3\n").unwrap();
    dir
}

async fn run(runner: &Bubblewrap, dir: &Path, command: &str, timeout: u64) -> Finished {
    runner
        .run(
            Job {
                sandbox: dir.to_owned(),
                command: command.to_owned(),
                cwd: "/sandbox/workspace".to_owned(),
                timeout: Duration::from_secs(timeout),
            },
            None,
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn a_command_reads_uploads_and_writes_its_outputs_but_never_the_uploads() {
    let Some(runner) = runner() else { return };
    let dir = sandbox();
    let done = run(
        &runner,
        dir.path(),
        "cat /sandbox/user_uploads/q3.csv; echo made > /sandbox/outputs/r.txt; \
         echo x > /sandbox/user_uploads/q3.csv; echo status $?; pwd; exit 3",
        30,
    )
    .await;
    assert_eq!(done.exit_code, Some(3), "{}", done.output);
    assert!(done.output.contains("apple,3"), "{}", done.output);
    assert!(
        done.output.contains("Read-only file system"),
        "{}",
        done.output
    );
    assert!(
        done.output.contains("/sandbox/workspace"),
        "{}",
        done.output
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("outputs/r.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("user_uploads/q3.csv")).unwrap(),
        "fruit,n\napple,3\n"
    );
}

#[tokio::test]
async fn the_command_sees_four_variables_no_network_and_none_of_the_host() {
    let Some(runner) = runner() else { return };
    let dir = sandbox();
    let done = run(
        &runner,
        dir.path(),
        "env | sort; echo ---; ls /sys/class/net 2>/dev/null || cat /proc/net/dev; echo ---; \
         cat /proc/1/environ | tr '\\0' '\\n'; echo ---; cat /etc/shadow; ls /root /home; \
         ls /work /data 2>&1; echo ---; id -u",
        30,
    )
    .await;
    let sections: Vec<&str> = done.output.split("---\n").collect();
    let env: Vec<&str> = sections[0]
        .lines()
        .filter_map(|l| l.split('=').next())
        .filter(|name| !["PWD", "SHLVL", "_", "OLDPWD"].contains(name))
        .collect();
    assert_eq!(env, ["HOME", "LANG", "PATH", "TMPDIR"], "{}", done.output);
    // The network namespace holds only a loopback of its own.
    assert!(
        !sections[1].contains("eth") && !sections[1].contains("ens"),
        "{}",
        done.output
    );
    // PID 1 is the sandbox's own init: no secret of the server's environment.
    assert!(!sections[2].contains("FERRY"), "{}", done.output);
    assert!(sections[3].contains("No such file"), "{}", done.output);
    assert_eq!(sections[4].trim(), "1000", "{}", done.output);
}

#[tokio::test]
async fn refused_system_calls_answer_not_permitted() {
    let Some(runner) = runner() else { return };
    let dir = sandbox();
    // Each attempt prints its outcome; none may succeed.
    let script = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, call):
    r = call()
    print(name, "ok" if r == 0 else "refused:" + os.strerror(ctypes.get_errno()))
attempt("ptrace", lambda: libc.ptrace(16, 1, 0, 0))
attempt("mount", lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
attempt("unshare", lambda: libc.unshare(0x10000000))
attempt("keyctl", lambda: libc.syscall(250, 0, 0, 0, 0, 0) if os.uname().machine == "x86_64" else -1)
open("/sandbox/workspace/tool", "w").write("x")
attempt("setuid-bit", lambda: libc.chmod(b"/sandbox/workspace/tool", 0o4755))
"#;
    std::fs::write(dir.path().join("workspace/probe.py"), script).unwrap();
    let done = run(&runner, dir.path(), "python3 probe.py", 30).await;
    for call in ["ptrace", "mount", "unshare", "keyctl", "setuid-bit"] {
        let line = done
            .output
            .lines()
            .find(|l| l.starts_with(call))
            .unwrap_or_else(|| panic!("no line for {call}: {}", done.output));
        assert!(line.contains("refused"), "{line}\n{}", done.output);
    }
}

#[tokio::test]
async fn at_the_timeout_every_process_dies_daemons_included() {
    let Some(runner) = runner() else { return };
    let dir = sandbox();
    let started = Instant::now();
    let done = run(
        &runner,
        dir.path(),
        "setsid sh -c 'sleep 4311 & sleep 4311' & (sleep 4312 &) ; echo started; sleep 4313",
        2,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(done.stopped_by, Some(StopReason::Timeout));
    assert_eq!(done.exit_code, None);
    assert!(done.output.contains("started"), "{}", done.output);
    assert!(done.output.contains("time limit"), "{}", done.output);
    assert_no_process_runs("sleep 431");
}

#[tokio::test]
async fn a_daemon_left_behind_dies_with_its_command() {
    let Some(runner) = runner() else { return };
    let dir = sandbox();
    let done = run(
        &runner,
        dir.path(),
        "setsid sh -c 'sleep 4321 &' ; (setsid sleep 4322 &); echo left",
        30,
    )
    .await;
    assert_eq!(done.exit_code, Some(0), "{}", done.output);
    assert_no_process_runs("sleep 432");
}

/// No process whose command line contains `needle` (within a few seconds: a kill is delivered,
/// not awaited).
fn assert_no_process_runs(needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let running: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            })
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(needle))
            .collect();
        if running.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "still running: {running:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test]
async fn output_over_the_limit_keeps_its_head_and_tail() {
    let Some(runner) = runner_with(ExecLimits {
        output_bytes: 64 * 1024,
        ..ExecLimits::default()
    }) else {
        return;
    };
    let dir = sandbox();
    let done = run(
        &runner,
        dir.path(),
        "echo FIRST; yes | head -c 5000000; echo; echo LAST",
        60,
    )
    .await;
    assert!(done.truncated);
    assert!(done.output_bytes > 5_000_000);
    assert!(done.output.starts_with("FIRST"), "{}", &done.output[..40]);
    assert!(done.output.trim_end().ends_with("LAST"));
    assert!(done.output.len() < 70 * 1024);
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_process_limit() {
    let Some(cgroups) = Cgroups::detect(None).ok().filter(Cgroups::bounds_processes) else {
        ferry_test_support::peers::skip(
            "a control group for processes (cgroup v2 delegated, or v1 pids): without one a \
             server running as root has no process limit",
        );
        return;
    };
    let limits = ExecLimits {
        processes: 64,
        ..ExecLimits::default()
    };
    let Some(runner) = runner_in(cgroups, limits) else {
        return;
    };
    let dir = sandbox();
    let done = run(
        &runner,
        dir.path(),
        "bomb() { bomb | bomb & }; bomb; sleep 3",
        8,
    )
    .await;
    assert!(done.hit_process_limit, "{}", done.output);
    assert!(
        done.output.contains("limit of 64 processes"),
        "{}",
        done.output
    );
    // The machine is still ours: a new command starts at once.
    let after = run(&runner, dir.path(), "echo alive", 10).await;
    assert_eq!(after.output.trim(), "alive");
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_and_said() {
    let Some(cgroups) = Cgroups::detect(None).ok().filter(Cgroups::bounds_memory) else {
        ferry_test_support::peers::skip("a control group for memory (cgroup v2 or v1 memory)");
        return;
    };
    let limits = ExecLimits {
        memory_bytes: 128 * 1024 * 1024,
        ..ExecLimits::default()
    };
    let Some(runner) = runner_in(cgroups, limits) else {
        return;
    };
    let dir = sandbox();
    let done = run(
        &runner,
        dir.path(),
        "python3 -c 'x = []\nwhile True: x.append(bytearray(16 * 1024 * 1024))'",
        60,
    )
    .await;
    assert_eq!(done.stopped_by, Some(StopReason::Memory), "{}", done.output);
    assert!(done.output.contains("128 MiB of memory"), "{}", done.output);
}

#[tokio::test]
async fn a_disk_filler_stops_at_the_sandbox_quota() {
    let Some(runner) = runner_with(ExecLimits {
        sandbox_bytes: 20 * 1024 * 1024,
        file_bytes: 8 * 1024 * 1024,
        ..ExecLimits::default()
    }) else {
        return;
    };
    let dir = sandbox();
    let done = run(
        &runner,
        dir.path(),
        "i=0; while true; do i=$((i+1)); head -c 4000000 /dev/zero > fill$i || true; done",
        60,
    )
    .await;
    assert_eq!(done.stopped_by, Some(StopReason::Disk), "{}", done.output);
    assert!(done.output.contains("more than 20 MiB"), "{}", done.output);
    // A sandbox already over the quota can still be cleaned up, and one file can never pass
    // its own limit either.
    let big = run(
        &runner,
        dir.path(),
        "rm -f fill*; head -c 9000000 /dev/zero > one",
        30,
    )
    .await;
    assert_eq!(big.stopped_by, None, "{}", big.output);
    assert_ne!(big.exit_code, Some(0), "{}", big.output);
    let kept = std::fs::metadata(dir.path().join("workspace/one"))
        .unwrap()
        .len();
    assert!(kept <= 8 * 1024 * 1024, "{kept}");
}

#[tokio::test]
async fn set_id_bits_and_links_left_by_a_command_reach_nothing_outside() {
    let Some(runner) = runner() else { return };
    let dir = sandbox();
    let done = run(
        &runner,
        dir.path(),
        "ln -s /etc/passwd link; ln -s / root; mkfifo fifo; mknod dev c 1 3 2>&1; \
         echo t > t; ln t hard; rm -rf /sandbox/skills; ln -s / /sandbox/skills 2>&1; ls -la",
        30,
    )
    .await;
    assert!(done.output.contains("fifo"), "{}", done.output);
    // A device node cannot be made inside a user namespace.
    assert!(!dir.path().join("workspace/dev").exists());
    // The read-only folders are mount points: they cannot be swapped for a link.
    assert!(
        std::fs::symlink_metadata(dir.path().join("skills"))
            .unwrap()
            .is_dir()
    );
    // A later command still starts (the folders it binds are checked not to be links).
    let next = run(&runner, dir.path(), "ls /sandbox/skills && echo fine", 30).await;
    assert!(next.output.contains("fine"), "{}", next.output);
}

#[tokio::test]
async fn a_read_only_folder_swapped_for_a_link_is_refused_not_followed() {
    let Some(runner) = runner() else { return };
    let dir = sandbox();
    // As if something outside the command had replaced the folder between two commands.
    std::fs::remove_dir_all(dir.path().join("user_uploads")).unwrap();
    std::os::unix::fs::symlink("/", dir.path().join("user_uploads")).unwrap();
    let outcome = runner
        .run(
            Job {
                sandbox: dir.path().to_owned(),
                command: "ls /sandbox/user_uploads".into(),
                cwd: "/sandbox/workspace".into(),
                timeout: Duration::from_secs(30),
            },
            None,
        )
        .await;
    match outcome {
        // The link is not bound: the host's root never appears.
        Ok(done) => assert!(!done.output.contains("proc"), "{}", done.output),
        Err(e) => assert!(e.to_string().contains("not a folder of the sandbox"), "{e}"),
    }
}

#[tokio::test]
async fn python_and_the_document_libraries_run_on_the_hosts_runtime() {
    let Some(runner) = runner() else { return };
    let dir = sandbox();
    let done = run(
        &runner,
        dir.path(),
        "python3 -c 'import sys; print(sys.version_info[0])'",
        60,
    )
    .await;
    assert_eq!(done.output.trim(), "3", "{}", done.output);
}

/// Servers that start at once in one process (as tests do) each find every hierarchy the
/// machine offers: one check never takes another's trial group for a folder it cannot use.
#[test]
fn servers_starting_at_once_find_the_same_control_groups() {
    let alone = Cgroups::detect(None).unwrap_or(Cgroups::None);
    let found: Vec<Cgroups> = std::thread::scope(|scope| {
        let checks: Vec<_> = (0..16)
            .map(|_| scope.spawn(|| Cgroups::detect(None).unwrap_or(Cgroups::None)))
            .collect();
        checks.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for cgroups in found {
        assert_eq!(cgroups, alone);
    }
}
