//! The agent's file operations mean one thing whichever door they come through: the same calls,
//! made through the HTTP routes (`/api/fs/{operation}`) by one user's agent and through the MCP
//! tools of the same names by another's, each on a fresh thread and spaces, answer the same —
//! the same entries, lines, ETags and counts, and the same refusal envelopes. Only the
//! modification times are left out of the comparison: the two sides write a moment apart.

use crate::support::TestApp;
use crate::thread_support::thread;
use serde_json::{Value, json};

/// One call's answer as a door gives it: the HTTP status, or for MCP 200 unless the tool said
/// `isError` (then the envelope's own status is not in the reply, only the envelope).
#[derive(Debug, PartialEq)]
enum Answer {
    Done(Value),
    Refused(Value),
}

async fn over_http(app: &TestApp, token: &str, operation: &str, arguments: &Value) -> Answer {
    let reply = app
        .post_json(&format!("/api/fs/{operation}"), token, arguments.clone())
        .await;
    let body = normalised(reply.json());
    if reply.status.is_success() {
        Answer::Done(body)
    } else {
        Answer::Refused(body)
    }
}

async fn over_mcp(app: &TestApp, token: &str, operation: &str, arguments: &Value) -> Answer {
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": operation, "arguments": arguments }
    });
    let reply = app
        .send(
            "POST",
            "/mcp",
            Some(token),
            &[
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2025-06-18"),
                // Links in answers point at the host the request was sent to.
                ("host", "ferry.test"),
            ],
            call.to_string(),
        )
        .await;
    reply.expect(200, None);
    let result = reply.json()["result"].clone();
    let structured = normalised(result["structuredContent"].clone());
    if result["isError"] == true {
        Answer::Refused(structured)
    } else {
        Answer::Done(structured)
    }
}

/// `value` with every `modifiedAt` and `updatedAt` replaced by a mark: the only fields that may
/// differ between two sides that do the same a moment apart.
fn normalised(mut value: Value) -> Value {
    match &mut value {
        Value::Object(fields) => {
            for (name, field) in fields.iter_mut() {
                *field = if name == "modifiedAt" || name == "updatedAt" {
                    json!("<time>")
                } else {
                    normalised(field.take())
                };
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = normalised(item.take());
            }
        }
        _ => {}
    }
    value
}

#[tokio::test]
async fn the_same_calls_answer_the_same_over_http_and_mcp() {
    let app = TestApp::new().await;
    let http_side = thread(&app, "alice").await;
    let mcp_side = thread(&app, "bob").await;
    // Each call, and the refusal it must get (none: it is done).
    let calls = [
        (
            "write_file",
            json!({"path": "/sandbox/outputs/report.md", "content": "# Q3\nApples 50\nBananas 20\n"}),
            None,
        ),
        (
            "write_file",
            json!({"path": "/sandbox/workspace/data/q3.csv", "content": "fruit,n\napple,50\nbanana,20\n"}),
            None,
        ),
        (
            "write_file",
            json!({"path": "/sandbox/outputs/report.md", "content": "x", "ifNoneMatch": "*"}),
            Some("ALREADY_EXISTS"),
        ),
        (
            "write_file",
            json!({"path": "/sandbox/outputs/newdir/", "content": "x"}),
            Some("INVALID_PATH"),
        ),
        (
            "write_file",
            json!({"path": "/spaces/notes/ideas/a.md", "content": "# Ideas\nbanana bread\n"}),
            None,
        ),
        (
            "write_file",
            json!({"path": "/sandbox/outputs/logo.png", "content": "iVBORw0KGgo=", "encoding": "base64"}),
            None,
        ),
        ("ls", json!({"path": "/"}), None),
        ("ls", json!({"path": "/sandbox/outputs"}), None),
        ("ls", json!({"path": "/sandbox/outputs/report.md"}), None),
        ("ls", json!({"path": "/spaces/notes"}), None),
        ("ls", json!({"path": "/sandbox/missing"}), None),
        (
            "read_file",
            json!({"path": "/sandbox/outputs/report.md", "offset": -2}),
            None,
        ),
        (
            "read_file",
            json!({"path": "/sandbox/outputs/report.md", "offset": 1, "limit": 1}),
            None,
        ),
        (
            "read_file",
            json!({"path": "/spaces/notes/ideas/a.md"}),
            None,
        ),
        (
            "read_file",
            json!({"path": "/sandbox/outputs/missing.md"}),
            Some("NOT_FOUND"),
        ),
        (
            "read_file",
            json!({"path": "/etc/passwd"}),
            Some("INVALID_PATH"),
        ),
        (
            "edit_file",
            json!({"path": "/sandbox/outputs/report.md", "old_string": "Bananas 20", "new_string": "Bananas 25"}),
            None,
        ),
        (
            "edit_file",
            json!({"path": "/sandbox/outputs/report.md", "old_string": "Cherries", "new_string": "x"}),
            Some("INVALID_REQUEST"),
        ),
        (
            "glob",
            json!({"pattern": "**/*.csv", "path": "/sandbox"}),
            None,
        ),
        (
            "glob",
            json!({"pattern": "**/*.md", "path": "/spaces"}),
            None,
        ),
        (
            "grep",
            json!({"pattern": "banana", "path": "/sandbox", "glob": "*.csv", "ignoreCase": true}),
            None,
        ),
        (
            "grep",
            json!({"pattern": "banana", "path": "/spaces/notes"}),
            None,
        ),
        (
            "grep",
            json!({"pattern": "(", "regex": true}),
            Some("INVALID_REQUEST"),
        ),
        (
            "move_file",
            json!({"source": "/sandbox/outputs/report.md", "destination": "/sandbox/outputs/final.md"}),
            None,
        ),
        (
            "move_file",
            json!({"source": "/sandbox/outputs/final.md", "destination": "/spaces/notes/final.md"}),
            Some("INVALID_REQUEST"),
        ),
        (
            "delete_file",
            json!({"path": "/sandbox/workspace/data"}),
            Some("INVALID_REQUEST"),
        ),
        (
            "delete_file",
            json!({"path": "/sandbox/workspace/data", "recursive": true}),
            None,
        ),
        (
            "delete_file",
            json!({"path": "/sandbox/outputs/final.md"}),
            None,
        ),
        ("ls", json!({"path": "/sandbox/outputs"}), None),
    ];
    for (operation, arguments, refusal) in &calls {
        let http = over_http(&app, &http_side.agent, operation, arguments).await;
        let mcp = over_mcp(&app, &mcp_side.agent, operation, arguments).await;
        assert_eq!(
            http, mcp,
            "{operation} {arguments}: HTTP answered {http:?}, MCP {mcp:?}"
        );
        // Neither side may agree by answering nothing.
        match (&http, refusal) {
            (Answer::Done(body), None) => {
                assert!(body.as_object().is_some_and(|o| !o.is_empty()), "{body}")
            }
            (Answer::Refused(envelope), Some(code)) => {
                assert_eq!(envelope["error"]["code"], *code, "{operation} {arguments}")
            }
            (answer, _) => panic!("{operation} {arguments}: expected {refusal:?}, got {answer:?}"),
        }
    }
}
