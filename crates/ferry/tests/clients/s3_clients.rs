//! The S3 door (docs/s3.md), driven by real S3 clients against the real binary: boto3
//! through `tests/s3/boto3_clients.py`.

use crate::python;
use crate::support::binary;
use std::path::Path;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_works_against_spaces_and_sandboxes() {
    let Some(python) = python::with_modules("the boto3 S3 test", &["boto3"]) else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    // Room for the 64 MiB multipart upload.
    let server = binary::start(data.path(), &[("FERRY_SPACE_MAX_BYTES", "134217728")]);
    let alice = binary::token(&["--user", "alice"]);
    let bob = binary::token(&["--user", "bob"]);
    let thread = binary::create_thread(server.addr, &alice).await;
    let other_thread = binary::create_thread(server.addr, &alice).await;
    let agent = binary::token(&["--agent", "--thread", &thread, "--user", "alice"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3/boto3_clients.py");
    let url = format!("http://{}", server.addr);
    let out = python::run(
        &python,
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
        Duration::from_secs(300),
    )
    .await;
    assert!(out.contains("all boto3 checks passed"), "{out}");
}
