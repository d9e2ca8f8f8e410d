//! Finding a Python that has the packages a test drives ferry with, and running it.
//!
//! Without one a test prints a loud SKIPPED and passes, so `cargo test` works on a machine
//! with no Python; with `FERRY_CI=1` (set by `.ci/run`) it fails instead, so CI never skips.

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// The pip command that installs every package these tests use.
pub const INSTALL: &str = "python3 -m pip install -r crates/ferry/tests/mcp/requirements.txt \
                           -r crates/ferry/tests/s3/requirements.txt \
                           -r crates/ferry/tests/openapi/requirements.txt \
                           -r crates/ferry/tests/tus/requirements.txt \
                           -r examples/scripted-agent/requirements.txt \
                           -r examples/langgraph-agent/requirements.txt";

/// The Python to use (`FERRY_PYTHON`, else `python3`), if it can import every one of
/// `modules`; otherwise `None` after saying why (or a panic under `FERRY_CI=1`).
pub fn with_modules(test: &str, modules: &[&str]) -> Option<String> {
    let python = std::env::var("FERRY_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let probe = std::process::Command::new(&python)
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .output();
    let why = match probe {
        Ok(out) if out.status.success() => return Some(python),
        Ok(out) => String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("the import failed")
            .to_owned(),
        Err(e) => format!("cannot run {python}: {e}"),
    };
    let message = format!(
        "{test} needs {python} with the modules {modules:?} ({why}); install them with: {INSTALL}"
    );
    if std::env::var("FERRY_CI").as_deref() == Ok("1") {
        panic!("FERRY_CI=1 and {message}");
    }
    // Straight to stderr: the test harness captures print macros of passing tests, and a skip
    // must not pass unnoticed.
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\nSKIPPED: {message}\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
    );
    None
}

/// Runs `python script args…` with `env`, and fails the test, showing both streams, unless it
/// exits 0 within `limit`. Returns its standard output.
pub async fn run(
    python: &str,
    script: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> String {
    let mut command = tokio::process::Command::new(python);
    command
        .arg(script)
        .args(args)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {python}: {e}"));
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{} did not finish within {limit:?}", script.display()))
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        script.display(),
        out.status
    );
    stdout
}
