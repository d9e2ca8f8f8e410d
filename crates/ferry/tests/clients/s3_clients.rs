//! The S3 door (docs/s3.md), driven by the real S3 clients agents and their runtimes use,
//! against the real binary: boto3, the AWS CLI, rclone, fsspec/s3fs and deepagents'
//! `S3Backend`, each through its script in `tests/s3/`. boto3 also runs on Postgres with an S3
//! blob store (where sandboxes live in the blob store too).

use crate::python;
use crate::support::{self, binary};
use std::path::Path;
use std::time::Duration;

/// Runs `tests/s3/{script}` against a `ferry serve` started with `env`, giving it two users'
/// tokens, an agent token and two threads, and checks it ends by printing `done`.
async fn script_against(python: &str, script: &str, done: &str, env: &[(&str, &str)]) {
    let data = tempfile::tempdir().unwrap();
    // Room for the 64 MiB multipart upload.
    let mut env = env.to_vec();
    env.push(("FERRY_SPACE_MAX_BYTES", "134217728"));
    let server = binary::start(data.path(), &env);
    let alice = binary::token(&["--user", "alice"]);
    let bob = binary::token(&["--user", "bob"]);
    let thread = binary::create_thread(server.addr, &alice).await;
    let other_thread = binary::create_thread(server.addr, &alice).await;
    let agent = binary::token(&["--agent", "--thread", &thread, "--user", "alice"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/s3")
        .join(script);
    let url = format!("http://{}", server.addr);
    let out = python::run(
        python,
        &script,
        &[
            "--url",
            &url,
            "--alice",
            &alice,
            "--bob",
            &bob,
            "--agent",
            &agent,
            "--thread",
            &thread,
            "--other-thread",
            &other_thread,
        ],
        &[],
        Duration::from_secs(600),
    )
    .await;
    assert!(out.contains(done), "{out}");
}

/// A program the script drives (`aws`, `rclone`), or `None` after a loud skip (a failure
/// under `FERRY_CI=1`).
fn program(test: &str, name: &str, install: &str) -> Option<()> {
    let found = std::process::Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if found {
        return Some(());
    }
    support::peers::skip(&format!(
        "{test} needs `{name}` on PATH; install it with: {install}"
    ));
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_works_against_spaces_and_sandboxes() {
    let Some(python) = python::with_modules("the boto3 S3 test", &["boto3"]) else {
        return;
    };
    script_against(&python, "boto3_clients.py", "all boto3 checks passed", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_works_on_postgres_and_an_s3_blob_store() {
    let Some(python) = python::with_modules("the boto3 S3 test", &["boto3"]) else {
        return;
    };
    let Some(s3) = support::peers::s3() else {
        return;
    };
    let Some(schema) = support::peers::postgres().await else {
        return;
    };
    let mut env: Vec<(&str, String)> = s3.env();
    env.push(("FERRY_DATABASE_URL", schema.url.clone()));
    env.push(("FERRY_BLOB_URL", format!("s3://{}/s3-door", s3.bucket)));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    script_against(&python, "boto3_clients.py", "all boto3 checks passed", &env).await;
    schema.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aws_cli_copies_syncs_lists_and_removes_trees() {
    let Some(python) = python::with_modules("the AWS CLI S3 test", &["boto3"]) else {
        return;
    };
    if program("the AWS CLI S3 test", "aws", python::INSTALL).is_none() {
        return;
    }
    script_against(&python, "aws_cli.py", "all AWS CLI checks passed", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rclone_copies_syncs_and_checks_both_ways() {
    let Some(python) = python::with_modules("the rclone S3 test", &["json"]) else {
        return;
    };
    if program("the rclone S3 test", "rclone", "apt-get install rclone").is_none() {
        return;
    }
    script_against(
        &python,
        "rclone_clients.py",
        "all rclone checks passed",
        &[],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fsspec_lists_finds_reads_and_writes() {
    let Some(python) = python::with_modules("the fsspec S3 test", &["s3fs"]) else {
        return;
    };
    script_against(
        &python,
        "fsspec_clients.py",
        "all fsspec checks passed",
        &[],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deepagents_s3_backend_runs_on_a_space_and_a_sandbox() {
    let Some(python) =
        python::with_modules("the deepagents S3Backend test", &["deepagents_contrib_aws"])
    else {
        return;
    };
    script_against(
        &python,
        "deepagents_backend.py",
        "all deepagents checks passed",
        &[],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rules_of_every_door_hold_through_s3() {
    let Some(python) = python::with_modules("the S3 door rules test", &["boto3"]) else {
        return;
    };
    script_against(&python, "door_rules.py", "all door rule checks passed", &[]).await;
}
