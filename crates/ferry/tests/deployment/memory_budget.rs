//! The server's memory budget, measured on the real binary: sixty agents download a 16 MiB
//! file at once through `download_files` (base64 in JSON), and sixteen write one the same way.
//! Without the budget each download held the file three times over at once (2.9 GB and more);
//! with a 64 MiB budget the server's peak resident memory stays within the budget and a fixed
//! overhead, every download is answered (the file, or `UNAVAILABLE`: a `503` with
//! `Retry-After`, or within a batch the file's own refusal), every write is done (its JSON is
//! read as it arrives, the content streamed to a scratch file: it needs no share), and the
//! server keeps serving.

use crate::support::binary::{start, token, wait_healthy};
use base64::Engine as _;
use serde_json::json;

const BUDGET: u64 = 64 << 20;
const FILE: usize = 16 << 20;
/// What the server holds besides the budget: its code, its pools, the allocator's slack, one
/// serialized answer on its way out.
const OVERHEAD: u64 = 160 << 20;

/// A process's resident memory, now and at its peak, in bytes.
fn resident(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap()
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_large_answers_at_once_stay_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(
        &dir.path().join("data"),
        &[("FERRY_MEMORY_BUDGET_BYTES", &BUDGET.to_string())],
    );
    wait_healthy(server.addr).await;
    let base = format!("http://{}", server.addr);
    let client = reqwest::Client::new();
    let user = token(&["--user", "alice"]);
    let created: serde_json::Value = client
        .post(format!("{base}/api/threads"))
        .bearer_auth(&user)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let thread = created["id"].as_str().unwrap().to_owned();
    let agent = token(&["--agent", "--thread", &thread, "--user", "alice"]);
    let file: Vec<u8> = (0..FILE).map(|i| (i % 251) as u8).collect();
    let put = client
        .put(format!(
            "{base}/api/threads/{thread}/sandbox/outputs/big.bin"
        ))
        .bearer_auth(&agent)
        .header("content-type", "application/octet-stream")
        .body(file.clone())
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{}", put.status());
    let (before, _) = resident(server.child.id());

    let downloads: Vec<_> = (0..60)
        .map(|_| {
            let (client, base, agent) = (client.clone(), base.clone(), agent.clone());
            tokio::spawn(async move {
                let reply = client
                    .post(format!("{base}/api/fs/download_files"))
                    .bearer_auth(&agent)
                    .json(&json!({"paths": ["/sandbox/outputs/big.bin"]}))
                    .send()
                    .await
                    .unwrap();
                let status = reply.status().as_u16();
                let retry_after = reply.headers().contains_key("retry-after");
                let body: serde_json::Value = reply.json().await.unwrap();
                (status, retry_after, body)
            })
        })
        .collect();
    let content = base64::engine::general_purpose::STANDARD.encode(&file);
    let writes: Vec<_> = (0..16)
        .map(|i| {
            let (client, base, agent, content) =
                (client.clone(), base.clone(), agent.clone(), content.clone());
            tokio::spawn(async move {
                let reply = client
                    .post(format!("{base}/api/fs/write_file"))
                    .bearer_auth(&agent)
                    .json(&json!({
                        "path": format!("/sandbox/outputs/w{i}.bin"),
                        "content": content,
                        "encoding": "base64",
                    }))
                    .send()
                    .await
                    .unwrap();
                let status = reply.status().as_u16();
                let retry_after = reply.headers().contains_key("retry-after");
                (
                    status,
                    retry_after,
                    reply.json::<serde_json::Value>().await.unwrap(),
                )
            })
        })
        .collect();

    let mut answered = 0;
    for download in downloads {
        let (status, retry_after, body) = download.await.unwrap();
        match status {
            // A batch answers each file on its own: the file, or its own refusal.
            200 if body["files"][0]["error"]["code"] == "UNAVAILABLE" => {}
            200 => {
                let file_answer = &body["files"][0];
                assert_eq!(file_answer["size"], FILE, "{file_answer}");
                answered += 1;
            }
            503 => {
                assert!(retry_after, "a 503 says when to ask again");
                assert_eq!(body["error"]["code"], "UNAVAILABLE", "{body}");
            }
            other => panic!("download_files answered {other}: {body}"),
        }
    }
    for write in writes {
        let (status, _, body) = write.await.unwrap();
        assert_eq!(status, 200, "write_file answered {status}: {body}");
        assert_eq!(body["size"], FILE, "{body}");
    }
    assert!(answered > 0, "some downloads get through the budget");
    let (_, peak) = resident(server.child.id());
    eprintln!(
        "peak resident memory {} MiB, {} MiB before the load; {answered} of 60 downloads answered",
        peak >> 20,
        before >> 20
    );
    assert!(
        peak < before + BUDGET + OVERHEAD,
        "peak resident memory {} MiB, from {} MiB before the load: more than the budget ({} MiB) \
         and {} MiB over it",
        peak >> 20,
        before >> 20,
        BUDGET >> 20,
        OVERHEAD >> 20
    );
    let health = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert!(health.status().is_success());
}

/// Over MCP a tool's answer is carried once more, into the JSON-RPC reply (a space file as
/// base64, as text and as structured content, then serialized): thirty agents reading a 16 MiB
/// note at once through `read_space_file` held about 1.6 GB before the replies took their
/// share of the budget. With it, the peak stays within the budget and the fixed overhead, and
/// every call is answered: the file, the tool's `UNAVAILABLE` envelope, or (the message itself
/// refused its share) a 503 `UNAVAILABLE`.
///
/// The budget here holds one reply's share whole (six times 16 MiB): a request that needs more
/// than all of the budget runs alone, and then what it really holds (the file, its base64 and
/// the serialized reply, a few times its size) is not the budget's to bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_mcp_replies_at_once_stay_within_the_budget() {
    const BUDGET: u64 = 128 << 20;
    let dir = tempfile::tempdir().unwrap();
    let server = start(
        &dir.path().join("data"),
        &[
            ("FERRY_MEMORY_BUDGET_BYTES", &BUDGET.to_string()),
            ("FERRY_SPACE_MAX_BYTES", &(2 * FILE).to_string()),
        ],
    );
    wait_healthy(server.addr).await;
    let base = format!("http://{}", server.addr);
    let client = reqwest::Client::new();
    let user = token(&["--user", "alice"]);
    let file: Vec<u8> = (0..FILE).map(|i| (i % 251) as u8).collect();
    let put = client
        .put(format!("{base}/api/spaces/notes/files/big.bin"))
        .bearer_auth(&user)
        .header("content-type", "application/octet-stream")
        .body(file)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 201);
    let (before, _) = resident(server.child.id());

    let reads: Vec<_> = (0..30)
        .map(|i| {
            let (client, base, user) = (client.clone(), base.clone(), user.clone());
            tokio::spawn(async move {
                let call = json!({
                    "jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {
                        "name": "read_space_file",
                        "arguments": {"spaceName": "notes", "path": "big.bin"}
                    }
                });
                let reply = client
                    .post(format!("{base}/mcp"))
                    .bearer_auth(&user)
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-protocol-version", "2025-06-18")
                    .json(&call)
                    .send()
                    .await
                    .unwrap();
                // The message itself takes its share before it is read: refused, the whole
                // request is answered 503 in the API's envelope rather than a tool error.
                let status = reply.status();
                let body = reply.json::<serde_json::Value>().await.unwrap();
                assert!(status == 200 || status == 503, "{status}: {body}");
                body
            })
        })
        .collect();
    let mut answered = 0;
    for read in reads {
        let reply = read.await.unwrap();
        let result = &reply["result"];
        if reply["error"]["code"].is_string() {
            assert_eq!(reply["error"]["code"], "UNAVAILABLE", "{reply}");
        } else if result["isError"] == true {
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            assert!(text.contains("UNAVAILABLE"), "{reply}");
        } else {
            assert_eq!(result["structuredContent"]["size"], FILE, "{result}");
            answered += 1;
        }
    }
    assert!(answered > 0, "some reads get through the budget");
    let (_, peak) = resident(server.child.id());
    eprintln!(
        "peak resident memory {} MiB, {} MiB before the load; {answered} of 30 reads answered",
        peak >> 20,
        before >> 20
    );
    assert!(
        peak < before + BUDGET + OVERHEAD,
        "peak resident memory {} MiB, from {} MiB before the load: more than the budget ({} MiB) \
         and {} MiB over it",
        peak >> 20,
        before >> 20,
        BUDGET >> 20,
        OVERHEAD >> 20
    );
}
