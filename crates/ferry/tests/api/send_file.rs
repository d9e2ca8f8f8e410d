//! send_file (docs/reference/send-file.md) through `POST /api/threads/{id}/send-file`: every rule
//! and message of docs/reference/send-file.md, and the `file_send` event byte for byte.

use crate::support::{Reply, TestApp};
use crate::thread_support::{Sse, Thread, pct, put_file, stored_events, thread};
use base64::Engine;
use serde_json::{Value, json};

/// The 38 extensions and their MIME types, in the documented order.
const SEED_TYPES: [(&str, &str); 38] = [
    (".txt", "text/plain"),
    (".md", "text/markdown"),
    (".json", "application/json"),
    (".xml", "application/xml"),
    (".html", "text/html"),
    (".htm", "text/html"),
    (".css", "text/css"),
    (".js", "text/javascript"),
    (".ts", "text/x-typescript"),
    (".jsx", "text/javascript"),
    (".tsx", "text/x-typescript"),
    (".csv", "text/csv"),
    (".tsv", "text/tab-separated-values"),
    (".yaml", "text/yaml"),
    (".yml", "text/yaml"),
    (".toml", "text/x-toml"),
    (".ini", "text/plain"),
    (".cfg", "text/plain"),
    (".conf", "text/plain"),
    (".log", "text/plain"),
    (".sh", "text/x-shellscript"),
    (".bash", "text/x-shellscript"),
    (".zsh", "text/x-shellscript"),
    (".py", "text/x-python"),
    (".rb", "text/x-ruby"),
    (".go", "text/x-go"),
    (".rs", "text/x-rust"),
    (".java", "text/x-java"),
    (".c", "text/x-c"),
    (".cpp", "text/x-c++"),
    (".h", "text/x-c"),
    (".hpp", "text/x-c++"),
    (".sql", "text/x-sql"),
    (".graphql", "text/x-graphql"),
    (".env", "text/plain"),
    (".gitignore", "text/plain"),
    (".dockerfile", "text/x-dockerfile"),
    (".svg", "image/svg+xml"),
];

/// The list as the refusal prints it: `[...TEXT_EXTENSIONS].sort().join(', ')`.
fn sorted_list() -> String {
    let mut list: Vec<&str> = SEED_TYPES.iter().map(|(e, _)| *e).collect();
    list.sort_unstable();
    list.join(", ")
}

async fn send(app: &TestApp, t: &Thread, token: &str, path: &str) -> Reply {
    app.post_json(&t.url("/send-file"), token, json!({ "filePath": path }))
        .await
}

fn message(reply: &Reply) -> String {
    reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn file_sends(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == "file_send")
        .cloned()
        .collect()
}

/// The `file_send` event, in the documented field order (docs/reference/events.md).
#[allow(clippy::too_many_arguments)]
fn expected_event(
    id: i64,
    timestamp: &str,
    thread: &str,
    agent: &str,
    filename: &str,
    content: &str,
    encoding: &str,
    mime: &str,
    size: usize,
) -> String {
    json!({
        "id": id,
        "type": "file_send",
        "role": "agent",
        "agentId": agent,
        "sessionId": thread,
        "content": format!("Sent file: {filename}"),
        "timestamp": timestamp,
        "fileContents": {
            "filename": filename,
            "content": content,
            "encoding": encoding,
            "mimeType": mime,
            "sizeBytes": size,
        },
    })
    .to_string()
}

#[tokio::test]
async fn a_markdown_file_is_sent_with_the_seeds_answer_and_event() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let addr = app.spawn().await;
    let mut sse = Sse::connect(&reqwest::Client::new(), addr, &t.id, &t.user, "", None).await;

    // 100 bytes of Markdown with characters JSON must escape and non-ASCII text.
    let mut text = String::from("# Notes\n\"quoted\" & <b>tags</b>\ttab \\ backslash é ✓\n");
    while text.len() < 100 {
        text.push('.');
    }
    assert_eq!(text.len(), 100);
    put_file(&app, &t, "outputs/notes.md", text.as_bytes()).await;
    let reply = send(&app, &t, &t.agent, "/sandbox/outputs/notes.md").await;
    reply.expect(200, None);
    assert_eq!(
        reply.json(),
        json!({
            "filename": "notes.md",
            "mimeType": "text/markdown",
            "sizeBytes": 100,
            "encoding": "utf-8",
            "message": "Sent \"notes.md\" to the user (0.1KB, text/markdown).",
        })
    );

    // The write is an event of its own, before the send.
    let written = sse.next_event().await.json();
    assert_eq!(written["type"], "file_written");
    assert_eq!(written["path"], "/sandbox/outputs/notes.md");
    let event = sse.next_event().await;
    let parsed = event.json();
    assert_eq!(
        event.data,
        expected_event(
            event.id,
            parsed["timestamp"].as_str().unwrap(),
            &t.id,
            "agent",
            "notes.md",
            &text,
            "utf-8",
            "text/markdown",
            100,
        )
    );
    // Polling stores the same event.
    let stored = file_sends(&stored_events(&app, &t, &t.user).await);
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].to_string(), event.data);
}

#[tokio::test]
async fn the_seeds_hello_world() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/test.txt", b"Hello, world!").await;
    let reply = send(&app, &t, &t.agent, "/sandbox/outputs/test.txt").await;
    reply.expect(200, None);
    let answer = reply.json();
    assert!(answer["message"].as_str().unwrap().contains("Sent"));
    assert_eq!(
        answer["message"],
        "Sent \"test.txt\" to the user (0.0KB, text/plain)."
    );
    let sent = &file_sends(&stored_events(&app, &t, &t.user).await)[0];
    assert_eq!(
        sent["fileContents"],
        json!({
            "filename": "test.txt",
            "content": "Hello, world!",
            "encoding": "utf-8",
            "mimeType": "text/plain",
            "sizeBytes": 13,
        })
    );
    assert_eq!(sent["content"], "Sent file: test.txt");
    assert_eq!(sent["role"], "agent");
}

#[tokio::test]
async fn non_text_extensions_are_refused_with_the_list_and_the_hint() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for name in [
        "test.png",
        "photo.JPG",
        "app.exe",
        "archive.zip",
        "report.pdf",
        "noext",
        ".gitignore",
        "Dockerfile",
        "notes.md.bak",
    ] {
        put_file(&app, &t, &format!("outputs/{}", pct(name)), b"not really").await;
        let reply = send(&app, &t, &t.agent, &format!("/sandbox/outputs/{name}")).await;
        reply.expect(422, Some("UNSUPPORTED_FILE_TYPE"));
        let text = message(&reply);
        assert!(
            text.starts_with(&format!(
                "\"{name}\" is not a supported text file type.\n\nSupported extensions: {}",
                sorted_list()
            )),
            "{text}"
        );
        assert!(text.contains("publish_file_to_user"), "{text}");
    }
    assert!(file_sends(&stored_events(&app, &t, &t.user).await).is_empty());
}

#[tokio::test]
async fn files_over_20_kb_are_refused_with_their_size() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for (size, kb) in [(21_000, "20.5"), (20_481, "20.0"), (1_000_000, "976.6")] {
        put_file(&app, &t, "outputs/big.txt", &vec![b'x'; size]).await;
        let reply = send(&app, &t, &t.agent, "/sandbox/outputs/big.txt").await;
        reply.expect(413, Some("REQUEST_TOO_LARGE"));
        let text = message(&reply);
        assert!(
            text.starts_with(&format!(
                "File exceeds the 20KB size limit ({kb}KB). Consider sending a smaller file or a relevant excerpt."
            )),
            "{text}"
        );
        assert!(text.contains("publish_file_to_user"), "{text}");
    }
    // The type is checked before the size: a large image is refused for its type.
    put_file(&app, &t, "outputs/big.png", &vec![0u8; 30_000]).await;
    send(&app, &t, &t.agent, "/sandbox/outputs/big.png")
        .await
        .expect(422, Some("UNSUPPORTED_FILE_TYPE"));
    assert!(file_sends(&stored_events(&app, &t, &t.user).await).is_empty());
}

#[tokio::test]
async fn exactly_20_480_bytes_are_accepted() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let bytes = vec![b'a'; 20_480];
    put_file(&app, &t, "outputs/limit.txt", &bytes).await;
    let reply = send(&app, &t, &t.agent, "/sandbox/outputs/limit.txt").await;
    reply.expect(200, None);
    assert_eq!(reply.json()["sizeBytes"], 20_480);
    assert_eq!(
        reply.json()["message"],
        "Sent \"limit.txt\" to the user (20.0KB, text/plain)."
    );
    let sent = &file_sends(&stored_events(&app, &t, &t.user).await)[0];
    assert_eq!(
        sent["fileContents"]["content"].as_str().unwrap().len(),
        20_480
    );
    assert!(sent.to_string().len() <= 32 * 1024);
}

#[tokio::test]
async fn a_missing_file_is_not_found_with_its_path() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for path in [
        "/sandbox/outputs/nonexistent-file.txt",
        // Existence is checked first: a missing image is missing, not unsupported.
        "/sandbox/outputs/missing.png",
        "/sandbox/no-folder/x.md",
    ] {
        let reply = send(&app, &t, &t.agent, path).await;
        reply.expect(404, Some("NOT_FOUND"));
        assert_eq!(message(&reply), format!("File not found: {path}"));
    }
}

#[tokio::test]
async fn json_has_its_mime_type() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/data.json", br#"{"key": "value"}"#).await;
    let reply = send(&app, &t, &t.agent, "/sandbox/outputs/data.json").await;
    reply.expect(200, None);
    assert_eq!(reply.json()["mimeType"], "application/json");
    assert_eq!(reply.json()["filename"], "data.json");
    let sent = &file_sends(&stored_events(&app, &t, &t.user).await)[0];
    assert_eq!(sent["fileContents"]["mimeType"], "application/json");
    assert_eq!(sent["fileContents"]["content"], r#"{"key": "value"}"#);
}

#[tokio::test]
async fn every_seed_extension_has_the_seeds_mime_type() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for (ext, mime) in SEED_TYPES {
        let name = format!("file{ext}");
        put_file(&app, &t, &format!("outputs/{name}"), b"text").await;
        let reply = send(&app, &t, &t.agent, &format!("/sandbox/outputs/{name}")).await;
        reply.expect(200, None);
        assert_eq!(reply.json()["mimeType"], mime, "{ext}");
        assert_eq!(
            reply.json()["message"],
            format!("Sent \"{name}\" to the user (0.0KB, {mime}).").as_str()
        );
    }
    // Extensions are compared without case.
    put_file(&app, &t, "outputs/README.MD", b"# hi").await;
    let reply = send(&app, &t, &t.agent, "/sandbox/outputs/README.MD").await;
    reply.expect(200, None);
    assert_eq!(reply.json()["mimeType"], "text/markdown");
    assert_eq!(
        file_sends(&stored_events(&app, &t, &t.user).await).len(),
        SEED_TYPES.len() + 1
    );
}

#[tokio::test]
async fn bytes_that_are_not_utf8_travel_as_base64() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let bytes = [0xFFu8, 0xFE, 0x00, b'a', 0x80, b'\n', 0xC3];
    put_file(&app, &t, "outputs/latin.txt", &bytes).await;
    let reply = send(&app, &t, &t.agent, "/sandbox/outputs/latin.txt").await;
    reply.expect(200, None);
    assert_eq!(reply.json()["encoding"], "base64");
    assert_eq!(reply.json()["sizeBytes"], bytes.len());
    let sent = &file_sends(&stored_events(&app, &t, &t.user).await)[0];
    assert_eq!(sent["fileContents"]["encoding"], "base64");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(sent["fileContents"]["content"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, bytes);

    // Valid UTF-8 with a NUL and control characters stays text.
    let text = "a\u{0}b\u{1}c ✓";
    put_file(&app, &t, "outputs/odd.txt", text.as_bytes()).await;
    let reply = send(&app, &t, &t.agent, "/sandbox/outputs/odd.txt").await;
    assert_eq!(reply.json()["encoding"], "utf-8");
    let sent = &file_sends(&stored_events(&app, &t, &t.user).await)[1];
    assert_eq!(sent["fileContents"]["content"], text);
}

#[tokio::test]
async fn paths_outside_the_sandbox_are_invalid() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for path in [
        "/etc/passwd",
        "/etc/hostname.txt",
        "/sandbox/../etc/passwd",
        "/sandbox/outputs/../../etc/hosts.txt",
        "../../etc/passwd.txt",
        "/sandbox/outputs/a\\b.txt",
        "/tmp/x.txt",
    ] {
        send(&app, &t, &t.agent, path)
            .await
            .expect(400, Some("INVALID_PATH"));
    }
    // A relative path is relative to /sandbox/workspace/.
    put_file(&app, &t, "workspace/scratch.md", b"scratch").await;
    let reply = send(&app, &t, &t.agent, "scratch.md").await;
    reply.expect(200, None);
    assert_eq!(reply.json()["filename"], "scratch.md");
}

#[tokio::test]
async fn only_the_agent_and_service_role_send_files() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/notes.md", b"# notes").await;
    send(&app, &t, &t.user, "/sandbox/outputs/notes.md")
        .await
        .expect(403, Some("FORBIDDEN"));
    send(&app, &t, &app.user("bob"), "/sandbox/outputs/notes.md")
        .await
        .expect(404, Some("NOT_FOUND"));
    let other = thread(&app, "alice").await;
    send(&app, &t, &other.agent, "/sandbox/outputs/notes.md")
        .await
        .expect(404, Some("NOT_FOUND"));
    assert!(file_sends(&stored_events(&app, &t, &t.user).await).is_empty());
    send(&app, &t, &app.service(None), "/sandbox/outputs/notes.md")
        .await
        .expect(200, None);
    // A named agent is named in its event.
    let named = app
        .state
        .auth
        .mint_agent(
            "alice",
            &t.id,
            Some("writer"),
            std::time::Duration::from_secs(600),
        )
        .token;
    send(&app, &t, &named, "/sandbox/outputs/notes.md")
        .await
        .expect(200, None);
    let sent = file_sends(&stored_events(&app, &t, &t.user).await);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["agentId"], "writer");
}

#[tokio::test]
async fn text_that_json_would_blow_up_still_fits_in_one_event() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    // 20,480 bytes of valid UTF-8 that JSON escapes to two or six bytes each.
    for (name, bytes) in [
        ("control.txt", vec![0x01u8; 20_480]),
        ("quotes.txt", vec![b'"'; 20_480]),
        ("backslashes.txt", vec![b'\\'; 20_480]),
    ] {
        put_file(&app, &t, &format!("outputs/{name}"), &bytes).await;
        send(&app, &t, &t.agent, &format!("/sandbox/outputs/{name}"))
            .await
            .expect(200, None);
        let events = file_sends(&stored_events(&app, &t, &t.user).await);
        let sent = events.last().unwrap();
        assert!(
            sent.to_string().len() <= 32 * 1024,
            "{name}: {} bytes",
            sent.to_string().len()
        );
        let contents = &sent["fileContents"];
        let content = contents["content"].as_str().unwrap();
        let decoded = match contents["encoding"].as_str().unwrap() {
            "utf-8" => content.as_bytes().to_vec(),
            "base64" => base64::engine::general_purpose::STANDARD
                .decode(content)
                .unwrap(),
            other => panic!("{other}"),
        };
        assert_eq!(decoded, bytes, "{name}");
        assert_eq!(contents["sizeBytes"], 20_480);
    }
}
