//! The web UI in a real browser: runs the Playwright suite in `e2e/` (playwright-core driving
//! Debian's Chromium) against the `ferry` binary this build made.
//!
//! It needs `/usr/bin/chromium` (or `FERRY_CHROMIUM`), `node` and `npm`; when `e2e/node_modules`
//! is missing it runs `npm ci` there itself (from the committed lock file). Without a browser or
//! node the test says so loudly and passes, unless `FERRY_CI=1`, where it fails: CI installs
//! them, so a skip there would hide a broken UI. Screenshots of each main screen land in
//! `target/e2e-artifacts/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/ferry sits two levels below the workspace")
        .to_path_buf()
}

/// What is missing for the browser tests, if anything.
fn missing_peers(e2e: &Path, chromium: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    if !chromium.exists() {
        missing.push(format!("{} (apt-get install chromium)", chromium.display()));
    }
    if Command::new("node").arg("--version").output().is_err() {
        missing.push("node".to_owned());
    }
    if !packages_installed(e2e) && !npm_ci(e2e) {
        missing.push("e2e/node_modules (run `npm ci` in e2e/)".to_owned());
    }
    missing
}

/// Whether every package of `e2e/package.json` is in `e2e/node_modules` (a checkout whose
/// node_modules predates a new package counts as not installed).
fn packages_installed(e2e: &Path) -> bool {
    let manifest: serde_json::Value = std::fs::read(e2e.join("package.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let Some(packages) = manifest["devDependencies"].as_object() else {
        return false;
    };
    packages.keys().all(|name| {
        e2e.join("node_modules")
            .join(name)
            .join("package.json")
            .exists()
    })
}

/// Installs the suite's npm packages from the committed lock file, as CI's fresh clone needs
/// (node_modules is not committed). Answers whether they are all there after.
fn npm_ci(e2e: &Path) -> bool {
    let _ = writeln!(
        std::io::stderr(),
        "e2e/node_modules is missing: running `npm ci` in {}",
        e2e.display()
    );
    let ran = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(e2e)
        .status();
    matches!(ran, Ok(status) if status.success()) && packages_installed(e2e)
}

#[test]
fn the_web_ui_works_in_chromium() {
    run_in_chromium("run.mjs", "the browser tests");
}

/// The file card as an MCP App, in a host page driven by the official MCP Apps host bridge.
#[test]
fn the_file_card_works_in_an_mcp_apps_host() {
    run_in_chromium("mcp-app.mjs", "the MCP App card tests");
}

/// Resumable uploads with tus-js-client, unchanged: across a dropped connection and a SIGKILL
/// of the server (`e2e/tus.mjs`; it needs node and the suite's packages, not the browser).
#[test]
fn tus_js_client_resumes_across_a_drop_and_a_kill() {
    run_in_chromium("tus.mjs", "the tus-js-client tests");
}

/// One suite at a time: they share `e2e/node_modules` (which the first may install), and a
/// browser suite beside another on a small machine only makes both slower.
static ONE_SUITE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs one suite of `e2e/` with node, or skips loudly without its peers (fails under CI).
fn run_in_chromium(suite: &str, what: &str) {
    let _turn = ONE_SUITE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let root = repo_root();
    let e2e = root.join("e2e");
    let chromium = std::env::var_os("FERRY_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let missing = missing_peers(&e2e, &chromium);
    if !missing.is_empty() {
        let ci = std::env::var("FERRY_CI").is_ok_and(|v| v == "1");
        let message = format!(
            "SKIPPED: {what} need chromium and `npm ci` in e2e/ — missing: {}",
            missing.join(", ")
        );
        assert!(!ci, "{message} (FERRY_CI=1: failing instead of skipping)");
        // Straight to stderr: libtest captures eprintln!, and a skip must be seen.
        let banner = "!".repeat(78);
        let _ = writeln!(std::io::stderr(), "\n{banner}\n{message}\n{banner}\n");
        return;
    }
    let artifacts = std::env::var_os("FERRY_E2E_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target").join("e2e-artifacts"));
    let status = Command::new("node")
        .arg(e2e.join(suite))
        .current_dir(&e2e)
        .env("FERRY_BIN", env!("CARGO_BIN_EXE_ferry"))
        .env("FERRY_CHROMIUM", &chromium)
        .env("FERRY_E2E_ARTIFACTS", &artifacts)
        // The suite starts its own servers with their own secret.
        .env_remove("FERRY_JWT_SECRET")
        .env_remove("FERRY_DATA")
        .status()
        .expect("node runs");
    assert!(
        status.success(),
        "{what} failed ({status}); screenshots are in {}",
        artifacts.display()
    );
}
