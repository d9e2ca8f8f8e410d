//! Resumable uploads through tuspy, the tus project's Python client (`tests/tus/tuspy_client.py`:
//! a SIGKILL of the server mid-upload, a restart, the upload finished byte for byte). The
//! tus-js-client suite runs beside the browser suites (`e2e_browser.rs`).

use std::path::Path;
use std::time::Duration;

use crate::python;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tuspy_resumes_an_upload_after_the_server_is_killed() {
    let Some(python) = python::with_modules("the tuspy test", &["tusclient", "httpx"]) else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tus/tuspy_client.py");
    let out = python::run(
        &python,
        &script,
        &[],
        &[("FERRY_BIN", env!("CARGO_BIN_EXE_ferry"))],
        Duration::from_secs(180),
    )
    .await;
    assert!(out.contains("resumed and finished byte for byte"), "{out}");
}
