//! Helpers started ahead of their commands: a runner keeps some waiting, never uses one that
//! died while it waited, and takes them and their control groups away when it goes.
//!
//! One test in a binary of its own, so that every helper this process starts is the runner's
//! under test (the helpers are found as this process's children).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ferry_exec::cgroup::Cgroups;
use ferry_exec::{Bubblewrap, ExecLimits, Job, Runner, Runtime};

use ferry_test_support::peers::bwrap;

/// The helpers waiting now: this process's children started as `… __exec`, each with the
/// control-group folders it joined.
fn waiting_helpers() -> Vec<(i32, Vec<PathBuf>)> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // The parent's pid is the second field after the command name's closing paren.
            let parent = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?;
            if parent != me {
                return None;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            (args.get(1).map(String::as_str) == Some(ferry_exec::HELPER_ARG))
                .then(|| (pid, args[2..].iter().map(PathBuf::from).collect()))
        })
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helpers_wait_ahead_are_replaced_when_killed_and_go_with_their_runner() {
    let Some(bwrap) = bwrap() else { return };
    let limits = ExecLimits {
        concurrent: 2,
        ..ExecLimits::default()
    };
    let runner = Bubblewrap::new(
        PathBuf::from(env!("CARGO_BIN_EXE_ferry-exec-helper")),
        bwrap,
        &Runtime::Host,
        limits,
        Cgroups::detect(None).unwrap_or(Cgroups::None),
        None,
    );
    let dir = tempfile::tempdir().unwrap();
    for folder in ["workspace", "outputs", "user_uploads", "skills"] {
        std::fs::create_dir(dir.path().join(folder)).unwrap();
    }
    let job = |command: &str| Job {
        sandbox: dir.path().to_owned(),
        command: command.to_owned(),
        cwd: "/sandbox/workspace".to_owned(),
        timeout: Duration::from_secs(30),
    };

    let first = runner.run(job("echo one"), None).await.unwrap();
    assert_eq!((first.exit_code, first.output.as_str()), (Some(0), "one\n"));
    // As many wait as commands may run at once.
    wait_for("two helpers wait after the first command", || {
        waiting_helpers().len() == 2
    });

    // Helpers killed while they wait are never handed a command: the next one still runs.
    for (pid, _) in waiting_helpers() {
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
    }
    wait_for("the killed helpers are gone", || {
        waiting_helpers().is_empty()
    });
    let after_kill = runner.run(job("echo two"), None).await.unwrap();
    assert_eq!(
        (after_kill.exit_code, after_kill.output.as_str()),
        (Some(0), "two\n")
    );
    // A helper started ahead takes the command's own limits: its CPU time follows the
    // command's timeout (one second more).
    wait_for("helpers wait again", || waiting_helpers().len() == 2);
    let mut limited = job("ulimit -t");
    limited.timeout = Duration::from_secs(7);
    let seen = runner.run(limited, None).await.unwrap();
    assert_eq!(seen.output, "8\n");

    // Dropping the runner ends the waiting helpers and removes their control groups.
    wait_for("helpers wait again", || waiting_helpers().len() == 2);
    let groups: Vec<PathBuf> = waiting_helpers()
        .into_iter()
        .flat_map(|(_, groups)| groups)
        .collect();
    drop(runner);
    wait_for("no helper is left once its runner is gone", || {
        waiting_helpers().is_empty()
    });
    for group in groups {
        assert!(!group.exists(), "{} is left behind", group.display());
    }
}
