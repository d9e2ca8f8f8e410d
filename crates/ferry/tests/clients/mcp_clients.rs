//! The agent tools over MCP, driven by real clients (docs/mcp.md).
//!
//! The official MCP Python SDK drives both transports of the real binary — `ferry mcp` on
//! stdio and `/mcp` on `ferry serve` — through `tests/mcp/mcp_clients.py`. The JSON-RPC tests
//! below need no Python: they speak the streamable HTTP transport by hand, so `/mcp` is checked
//! on every machine.

use crate::python;
use crate::support;
use crate::support::TestApp;
use crate::support::binary;
use crate::support::stdio_mcp::StdioMcp;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_drives_both_transports() {
    let Some(python) = python::with_modules(
        "the MCP Python SDK test",
        &["mcp", "mcp.client.streamable_http", "httpx"],
    ) else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let server = binary::start(data.path(), &[]);
    let user = binary::token(&["--user", "mcp-tester"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/mcp_clients.py");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ferry-extract/tests/fixtures");
    let url = format!("http://{}", server.addr);
    let out = python::run(
        &python,
        &script,
        &[
            "--ferry",
            support::ferry_exe(),
            "--url",
            &url,
            "--token",
            &user,
            "--fixtures",
            fixtures.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(240),
    )
    .await;
    assert!(out.contains("stdio: ok"), "{out}");
    assert!(out.contains("http: ok"), "{out}");
    // The seed's checklist, where the server runs commands (else said loudly, and a failure
    // under FERRY_CI).
    assert!(
        out.contains("seed checklist over http: ok")
            || out.contains("SKIPPED: the seed's checklist"),
        "{out}"
    );
    assert!(out.contains("all MCP client checks passed"), "{out}");
}

/// The Python snippets of docs/mcp.md, run as they are written (inside an async function, with
/// the server's URL and an agent token put in) against the real binary, on the SDK versions the
/// tests pin: a reader who copies them gets code that works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_snippets_of_the_mcp_docs_run() {
    let Some(python) = python::with_modules(
        "the docs/mcp.md snippets",
        &["mcp", "httpx", "langchain_mcp_adapters"],
    ) else {
        return;
    };
    let docs = include_str!("../../../../docs/mcp.md");
    let snippets: Vec<&str> = docs
        .split("```python\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert_eq!(
        snippets.len(),
        2,
        "docs/mcp.md has the SDK and the LangGraph snippet"
    );

    let data = tempfile::tempdir().unwrap();
    let server = binary::start(data.path(), &[]);
    let owner = binary::token(&["--user", "docs-reader"]);
    let thread = binary::create_thread(server.addr, &owner).await;
    let agent = binary::token(&["--agent", "--thread", &thread, "--user", "docs-reader"]);
    let url = format!("http://{}/mcp", server.addr);
    for (snippet, shows) in snippets
        .iter()
        .zip([r#""uploads""#, "publish_file_to_user"])
    {
        let body: String = snippet
            .replace("https://files.example.com/mcp", &url)
            .lines()
            .map(|line| format!("    {line}\n"))
            .collect();
        let script = format!(
            "import asyncio, sys\ntoken = sys.argv[1]\n\nasync def main():\n{body}    \
             print(repr(locals().get('result') or locals().get('tools')))\n\nasyncio.run(main())\n"
        );
        let file = data.path().join("snippet.py");
        std::fs::write(&file, &script).unwrap();
        let out = python::run(&python, &file, &[&agent], &[], Duration::from_secs(120)).await;
        assert!(out.contains(shows), "the snippet\n{script}\nprinted\n{out}");
    }
}

/// One JSON-RPC request to `/mcp`; the answer's status and body.
async fn rpc(addr: std::net::SocketAddr, token: Option<&str>, message: Value) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&message);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let reply = request.send().await.unwrap();
    let status = reply.status().as_u16();
    let text = reply.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, body)
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments }
    })
}

#[tokio::test]
async fn mcp_over_http_needs_a_bearer_token() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "raw", "version": "1" }
        }
    });
    let (status, body) = rpc(addr, None, initialize.clone()).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "UNAUTHENTICATED");
    let (status, body) = rpc(addr, Some("not-a-jwt"), initialize.clone()).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "UNAUTHENTICATED");
    let (status, body) = rpc(addr, Some(&app.user("u")), initialize).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["serverInfo"]["name"], "ferry");
    assert!(
        body["result"]["instructions"]
            .as_str()
            .unwrap()
            .contains("YYYYMMDD-HHmm-<short-title>.md")
    );
}

#[tokio::test]
async fn mcp_over_http_acts_with_the_callers_token() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let (alice, bob) = (app.user("alice"), app.user("bob"));

    let (_, listed) = rpc(
        addr,
        Some(&alice),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "send_file",
            "publish_file_to_user",
            "list_space_files",
            "read_space_file",
            "write_space_file",
            "delete_space_file",
            "say",
            "list_uploads",
            "read_upload",
            "ls",
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "grep",
            "move_file",
            "delete_file",
            "file_url"
        ]
    );

    let (_, written) = rpc(
        addr,
        Some(&alice),
        call(
            2,
            "write_space_file",
            json!({"spaceName": "notes", "path": "ideas/a b.md", "content": "# A", "contentType": "text/markdown; charset=utf-8"}),
        ),
    )
    .await;
    let result = &written["result"];
    assert_eq!(result["isError"], false, "{written}");
    assert_eq!(result["structuredContent"]["path"], "ideas/a b.md");
    assert_eq!(result["structuredContent"]["size"], 3);

    // `encoding` says how the content is carried, as write_file's does: text of a binary type.
    let (_, plain) = rpc(
        addr,
        Some(&alice),
        call(
            20,
            "write_space_file",
            json!({"spaceName": "notes", "path": "raw.bin", "content": "not base64!",
                   "contentType": "application/octet-stream", "encoding": "utf-8"}),
        ),
    )
    .await;
    assert_eq!(plain["result"]["isError"], false, "{plain}");
    let raw = app.get("/api/spaces/notes/files/raw.bin", &alice).await;
    assert_eq!(raw.text(), "not base64!");

    // The file is alice's: the HTTP API shows it to her, and bob's token does not reach it.
    let direct = app
        .get("/api/spaces/notes/files/ideas/a%20b.md", &alice)
        .await;
    direct.expect(200, None);
    assert_eq!(direct.text(), "# A");
    let (_, bobs) = rpc(
        addr,
        Some(&bob),
        call(
            3,
            "read_space_file",
            json!({"spaceName": "notes", "path": "ideas/a b.md"}),
        ),
    )
    .await;
    assert_eq!(bobs["result"]["isError"], true, "{bobs}");
    let envelope: Value =
        serde_json::from_str(bobs["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["error"]["code"], "NOT_FOUND");

    let (_, read) = rpc(
        addr,
        Some(&alice),
        call(
            4,
            "read_space_file",
            json!({"spaceName": "notes", "path": "ideas/a b.md"}),
        ),
    )
    .await;
    assert_eq!(
        read["result"]["structuredContent"],
        json!({"contentBase64": "IyBB", "contentType": "text/markdown; charset=utf-8", "size": 3})
    );

    // The traversal reaches the server's validator as written.
    let (_, traversal) = rpc(
        addr,
        Some(&alice),
        call(
            5,
            "read_space_file",
            json!({"spaceName": "notes", "path": "../x"}),
        ),
    )
    .await;
    assert_eq!(traversal["result"]["isError"], true);
    assert_eq!(
        traversal["result"]["structuredContent"]["error"]["code"],
        "INVALID_PATH"
    );

    // An unknown tool is a protocol error, not a tool result.
    let (_, unknown) = rpc(addr, Some(&alice), call(6, "delete_everything", json!({}))).await;
    assert!(unknown["error"]["code"].is_i64(), "{unknown}");
}

/// The JSON-RPC messages of an event stream, read as they arrive.
struct EventStream {
    response: reqwest::Response,
    buffered: String,
}

impl EventStream {
    /// The next message within `wait` (comment lines, which keep the stream open, skipped).
    async fn next(&mut self, wait: Duration) -> Value {
        tokio::time::timeout(wait, async {
            loop {
                if let Some(end) = self.buffered.find("\n\n") {
                    let event: String = self.buffered.drain(..end + 2).collect();
                    let data: String = event
                        .lines()
                        .filter_map(|line| line.strip_prefix("data:"))
                        .map(str::trim_start)
                        .collect();
                    if !data.is_empty() {
                        return serde_json::from_str(&data).unwrap();
                    }
                    continue;
                }
                let chunk = self
                    .response
                    .chunk()
                    .await
                    .unwrap()
                    .expect("the stream is open");
                self.buffered
                    .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
            }
        })
        .await
        .expect("a message within the wait")
    }
}

/// A `subscriptions/listen` request (protocol 2026-07-28) for `uris`.
fn listen_request(uris: &[&str]) -> Value {
    json!({
        "jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {}
            },
            "notifications": { "resourceSubscriptions": uris, "toolsListChanged": true }
        }
    })
}

/// `subscriptions/listen` on `/mcp`, with the headers the 2026-07-28 revision asks for.
async fn listen(addr: std::net::SocketAddr, token: &str, uris: &[&str]) -> EventStream {
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .bearer_auth(token)
        .json(&listen_request(uris))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    EventStream {
        response,
        buffered: String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_listen_on_mcp_over_http_tells_of_changes() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let alice = app.user("alice");
    let note = "/api/spaces/notes/files/ideas/plan.md";
    let uri = "ferry://spaces/notes/ideas/plan.md";

    // A client of an older revision subscribes with resources/subscribe, which needs a session
    // /mcp does not keep: it is not offered one.
    let (_, initialized) = rpc(
        addr,
        Some(&alice),
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": { "name": "raw", "version": "1" }
            }
        }),
    )
    .await;
    let resources = &initialized["result"]["capabilities"]["resources"];
    assert!(resources.is_object(), "{initialized}");
    assert!(resources.get("subscribe").is_none(), "{initialized}");

    // The acknowledgment names what will be told: ferry's resources, no list changes.
    let mut stream = listen(addr, &alice, &[uri, "file:///etc/passwd"]).await;
    let acknowledged = stream.next(Duration::from_secs(10)).await;
    assert_eq!(
        acknowledged["method"], "notifications/subscriptions/acknowledged",
        "{acknowledged}"
    );
    assert_eq!(
        acknowledged["params"]["notifications"],
        json!({ "resourceSubscriptions": [uri] })
    );

    // A change through another door (HTTP) is told on the stream, with the request's id.
    app.put(note, &alice, "text/markdown", b"# Plan")
        .await
        .expect(201, None);
    let updated = stream.next(Duration::from_secs(15)).await;
    assert_eq!(
        updated["method"], "notifications/resources/updated",
        "{updated}"
    );
    assert_eq!(updated["params"]["uri"], uri);
    assert_eq!(
        updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    // A change of another file is not; the next one of this file is.
    app.put(
        "/api/spaces/notes/files/ideas/other.md",
        &alice,
        "text/markdown",
        b"x",
    )
    .await
    .expect(201, None);
    app.send("DELETE", note, Some(&alice), &[], Vec::<u8>::new())
        .await
        .expect(204, None);
    let deleted = stream.next(Duration::from_secs(15)).await;
    assert_eq!(deleted["params"]["uri"], uri, "{deleted}");
    drop(stream);

    // A resource of a thread, asked for with a token that names none, ends the request with
    // an error that says why.
    let mut refused = listen(addr, &alice, &["ferry://sandbox/outputs/a.md"]).await;
    let acknowledged = refused.next(Duration::from_secs(10)).await;
    assert_eq!(
        acknowledged["method"],
        "notifications/subscriptions/acknowledged"
    );
    let error = refused.next(Duration::from_secs(10)).await;
    assert_eq!(error["id"], "listen-1", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the token names none"),
        "{error}"
    );
}

/// The same request over stdio: `ferry mcp` answers a client of 2026-07-28, which sends no
/// `initialize`, and writes the notifications as lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn subscriptions_listen_on_ferry_mcp_tells_of_changes() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let alice = app.user("alice");
    let uri = "ferry://spaces/notes/ideas/plan.md";
    let mut mcp = StdioMcp::spawn(addr, &alice);
    mcp.send(&listen_request(&[uri]));
    let acknowledged = mcp.answer();
    assert_eq!(
        acknowledged["params"]["notifications"],
        json!({ "resourceSubscriptions": [uri] }),
        "{acknowledged}"
    );
    app.put(
        "/api/spaces/notes/files/ideas/plan.md",
        &alice,
        "text/markdown",
        b"# Plan",
    )
    .await
    .expect(201, None);
    let updated = mcp.answer();
    assert_eq!(
        updated["method"], "notifications/resources/updated",
        "{updated}"
    );
    assert_eq!(updated["params"]["uri"], uri);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ferry_mcp_on_stdio_reports_a_bad_url_on_stderr() {
    // Without a server the command still speaks MCP on stdout; configuration errors that stop
    // it go to stderr, never into the protocol stream.
    let out = tokio::process::Command::new(support::ferry_exe())
        .args(["mcp", "--url", "not a url", "--token", "t"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "stdout must stay clean");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a URL"));
}

/// What following costs is bounded by what is followed: on a feed far longer than a page, a
/// stream of 1,000 resources starts at the feed's end (nothing old is told), tells of a new
/// change, and a caller's ninth stream at once is refused with the cap named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_streams_start_at_the_feeds_end_and_each_caller_has_a_bounded_number() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let alice = app.user("alice");
    // 1,500 changes of one file: the feed is longer than a page.
    for i in 0..1500 {
        app.put(
            "/api/spaces/notes/files/busy.md",
            &alice,
            "text/markdown",
            format!("# {i}").as_bytes(),
        )
        .await;
    }
    // Past the look-back: none of those changes is one a listen request tells of.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let uris: Vec<String> = (0..1000)
        .map(|i| format!("ferry://spaces/notes/f{i}.md"))
        .collect();
    let mut uris: Vec<&str> = uris.iter().map(String::as_str).collect();
    uris[0] = "ferry://spaces/notes/busy.md";
    let mut streams = Vec::new();
    for _ in 0..8 {
        let mut stream = listen(addr, &alice, &uris).await;
        let acknowledged = stream.next(Duration::from_secs(30)).await;
        assert_eq!(
            acknowledged["method"], "notifications/subscriptions/acknowledged",
            "{acknowledged}"
        );
        streams.push(stream);
    }
    let mut ninth = listen(addr, &alice, &uris[..1]).await;
    let _ = ninth.next(Duration::from_secs(10)).await;
    let refused = ninth.next(Duration::from_secs(10)).await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("already has 8 subscriptions/listen streams open"),
        "{refused}"
    );
    // A new change is the first thing told, on every stream.
    app.put(
        "/api/spaces/notes/files/f7.md",
        &alice,
        "text/markdown",
        b"new",
    )
    .await
    .expect(201, None);
    for stream in &mut streams {
        let updated = stream.next(Duration::from_secs(15)).await;
        assert_eq!(
            updated["params"]["uri"], "ferry://spaces/notes/f7.md",
            "{updated}"
        );
    }
}
