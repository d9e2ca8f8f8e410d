//! A client generated from the OpenAPI document (openapi-python-client) writes, reads, lists
//! and removes a binary space file against the real binary, through the generated code alone
//! (`tests/openapi/generated_client.py`).

use crate::python;
use crate::support::binary;
use std::path::Path;
use std::time::Duration;

#[tokio::test]
async fn a_generated_client_round_trips_a_binary_file() {
    let Some(python) = python::with_modules(
        "a_generated_client_round_trips_a_binary_file",
        &["openapi_python_client", "httpx", "attrs"],
    ) else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let server = binary::start(data.path(), &[]);
    let token = binary::token(&["--user", "generated"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openapi/generated_client.py");
    let url = format!("http://{}", server.addr);
    let out = python::run(
        &python,
        &script,
        &[&url, &token],
        &[],
        Duration::from_secs(300),
    )
    .await;
    assert!(out.contains(r#""roundTrip": "ok""#), "{out}");
}
