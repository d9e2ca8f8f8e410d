//! The S3 door (docs/s3.md), driven by real S3 clients against the real binary: boto3
//! through `tests/s3/boto3_clients.py`, on the embedded default (SQLite, local files) and on
//! Postgres with an S3 blob store (where sandboxes live in the blob store too).

use crate::python;
use crate::support::{self, binary};
use std::path::Path;
use std::time::Duration;

/// Runs the boto3 script against a `ferry serve` started with `env`.
async fn boto3_against(python: &str, env: &[(&str, &str)]) {
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
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3/boto3_clients.py");
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
    assert!(out.contains("all boto3 checks passed"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_works_against_spaces_and_sandboxes() {
    let Some(python) = python::with_modules("the boto3 S3 test", &["boto3"]) else {
        return;
    };
    boto3_against(&python, &[]).await;
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
    boto3_against(&python, &env).await;
    schema.drop_now().await;
}
