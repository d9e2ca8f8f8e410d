//! Say mode (docs/reference/say.md) and the webhook connector, against a local HTTP
//! receiver started by the test.

use crate::support::TestApp;
use axum::body::Body;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

const PDF: &[u8] = include_bytes!("../../../ferry-extract/tests/fixtures/two-pages.pdf");

struct Thread {
    id: String,
    user: String,
    agent: String,
}

async fn thread(app: &TestApp, user: &str) -> Thread {
    let token = app.user(user);
    let created = app
        .post_json("/api/threads", &token, json!({"title": "say"}))
        .await;
    created.expect(201, None);
    let id = created.json()["id"].as_str().unwrap().to_owned();
    let agent = app.agent(user, &id);
    Thread {
        id,
        user: token,
        agent,
    }
}

async fn put_sandbox(app: &TestApp, t: &Thread, path: &str, content_type: &str, bytes: &[u8]) {
    app.put(
        &format!("/api/threads/{}/sandbox/{path}", t.id),
        &t.agent,
        content_type,
        bytes,
    )
    .await
    .expect(201, None);
}

async fn say(app: &TestApp, t: &Thread, text: &str) -> Value {
    let reply = app
        .post_json(
            &format!("/api/threads/{}/say", t.id),
            &t.agent,
            json!({ "text": text }),
        )
        .await;
    reply.expect(200, None);
    reply.json()
}

/// The thread's messages (the sandbox writes that prepare them are events too, left out here).
async fn events(app: &TestApp, t: &Thread) -> Vec<Value> {
    let reply = app
        .get(
            &format!("/api/threads/{}/events?format=json", t.id),
            &t.user,
        )
        .await;
    reply.expect(200, None);
    reply
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] != "file_written")
        .cloned()
        .collect()
}

#[tokio::test]
async fn the_seed_example_gives_one_message_with_the_report_as_a_document() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_sandbox(&app, &t, "outputs/report.pdf", "application/pdf", PDF).await;
    let answer = say(
        &app,
        &t,
        "<say>Here is the report</say><file mode=\"doc\">/sandbox/outputs/report.pdf</file>",
    )
    .await;
    assert_eq!(answer["messages"].as_array().unwrap().len(), 1);
    assert_eq!(answer["warnings"], json!([]));
    let file = &answer["files"][0];
    assert_eq!(file["filename"], "report.pdf");
    assert_eq!(file["mimeType"], "application/pdf");
    assert_eq!(file["size"], PDF.len());
    assert_eq!(file["sendAs"], "document");
    assert!(
        file.get("publishedId").is_none(),
        "taken from the sandbox, not a published file"
    );

    let events = events(&app, &t).await;
    assert_eq!(events.len(), 1);
    let message = &events[0];
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "agent");
    assert_eq!(message["content"], "Here is the report");
    assert_eq!(message["id"], answer["messages"][0]);
    assert_eq!(message["files"], answer["files"]);

    // The attachment downloads with the safe-serving headers, as the original bytes.
    let url = file["url"].as_str().unwrap();
    let download = app.get(url, &t.user).await;
    download.expect(200, None);
    assert_eq!(download.body, PDF);
    assert!(
        download
            .header("content-disposition")
            .unwrap()
            .starts_with("attachment;")
    );
    assert_eq!(download.header("x-content-type-options"), Some("nosniff"));
    // Another user cannot.
    app.get(url, &app.user("mallory"))
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn blocks_become_messages_in_order_and_text_outside_is_never_sent() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_sandbox(
        &app,
        &t,
        "outputs/a.png",
        "image/png",
        b"\x89PNG\r\n\x1a\nfake",
    )
    .await;
    put_sandbox(&app, &t, "outputs/clip.mp4", "video/mp4", b"mp4").await;
    put_sandbox(&app, &t, "outputs/notes.md", "text/markdown", b"# n").await;
    let answer = say(
        &app,
        &t,
        "secret reasoning\n<say>first</say> hidden <SAY>second</SAY>\n\
         <file>/sandbox/outputs/a.png</file><file mode='video'>/sandbox/outputs/clip.mp4</file>\
         <file mode=\"weird\">notes.md</file><file> /sandbox/outputs/notes.md </file>",
    )
    .await;
    let events = events(&app, &t).await;
    let contents: Vec<&Value> = events.iter().map(|e| &e["content"]).collect();
    assert_eq!(contents, [&json!("first"), &json!("second")]);
    for e in &events {
        let text = e.to_string();
        assert!(!text.contains("secret reasoning") && !text.contains("hidden"));
    }
    // Files ride on the last message only.
    assert!(events[0].get("files").is_none());
    let send_as: Vec<&str> = events[1]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["sendAs"].as_str().unwrap())
        .collect();
    // `notes.md` relative → /sandbox/workspace/notes.md, which does not exist: skipped.
    assert_eq!(send_as, ["photo", "video", "document"]);
    let warnings = answer["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].as_str().unwrap().starts_with("notes.md:"));
}

#[tokio::test]
async fn files_without_a_say_block_travel_in_one_message_with_null_content() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_sandbox(&app, &t, "outputs/report.pdf", "application/pdf", PDF).await;
    let answer = say(&app, &t, "<file>/sandbox/outputs/report.pdf</file>").await;
    let events = events(&app, &t).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["content"], Value::Null);
    assert_eq!(events[0]["files"][0]["sendAs"], "document");
    assert_eq!(answer["messages"], json!([events[0]["id"]]));
    // Nothing at all: no message, and a warning that says so.
    let empty = say(&app, &t, "no tags here").await;
    assert_eq!(empty["messages"], json!([]));
    assert_eq!(empty["files"], json!([]));
    assert_eq!(
        empty["warnings"],
        json!([ferry_app::threads::say::NOTHING_SENT])
    );
    // Tags whose files all fail to attach send nothing either: their warnings, then that one.
    let skipped = say(&app, &t, "<file>/sandbox/outputs/missing.pdf</file>").await;
    assert_eq!(skipped["messages"], json!([]));
    let warnings = skipped["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2);
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("/sandbox/outputs/missing.pdf:")
    );
    assert_eq!(warnings[1], ferry_app::threads::say::NOTHING_SENT);
    assert_eq!(self::events(&app, &t).await.len(), 1, "nothing was stored");
}

#[tokio::test]
async fn unresolvable_files_are_skipped_with_warnings_and_never_fail_the_reply() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let answer = say(
        &app,
        &t,
        "<say>done</say><file>/etc/passwd</file><file>/sandbox/../etc/passwd</file>\
         <file>/sandbox/outputs/missing.pdf</file>",
    )
    .await;
    assert_eq!(answer["messages"].as_array().unwrap().len(), 1);
    assert_eq!(answer["files"], json!([]));
    assert_eq!(answer["warnings"].as_array().unwrap().len(), 3);
    // A symlink out of the sandbox is skipped too (the jail refuses it).
    let info = app
        .get(&format!("/api/threads/{}", t.id), &t.agent)
        .await
        .json();
    let dir = std::path::PathBuf::from(info["sandboxDir"].as_str().unwrap());
    std::os::unix::fs::symlink("/etc/passwd", dir.join("outputs/passwd")).unwrap();
    let answer = say(&app, &t, "<say>x</say><file>/sandbox/outputs/passwd</file>").await;
    assert_eq!(answer["files"], json!([]));
    assert!(
        answer["warnings"][0]
            .as_str()
            .unwrap()
            .contains("outside the sandbox")
    );
}

#[tokio::test]
async fn published_files_are_found_first_and_keep_their_published_bytes() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_sandbox(
        &app,
        &t,
        "outputs/report.md",
        "text/markdown",
        b"version one",
    )
    .await;
    let published = app
        .post_json(
            &format!("/api/threads/{}/published", t.id),
            &t.agent,
            json!({"file_path": "/sandbox/outputs/report.md", "display_name": "Report"}),
        )
        .await
        .json();
    // The sandbox file changes after publishing; a <file> tag naming its path still resolves
    // to the published copy, by sandbox path and by storage path.
    app.put(
        &format!("/api/threads/{}/sandbox/outputs/report.md", t.id),
        &t.agent,
        "text/markdown",
        b"version two",
    )
    .await
    .expect(200, None);
    let storage_path = published["storage_path"].as_str().unwrap();
    let answer = say(
        &app,
        &t,
        &format!(
            "<say>see</say><file>/sandbox/outputs/report.md</file><file>{storage_path}</file>"
        ),
    )
    .await;
    for file in answer["files"].as_array().unwrap() {
        let bytes = app.get(file["url"].as_str().unwrap(), &t.user).await.body;
        assert_eq!(bytes, b"version one");
        // The attachment names the published file, so the preview panel can open it.
        assert_eq!(file["publishedId"], published["id"]);
        assert_eq!(file["revision"], 1);
    }
    assert_eq!(answer["files"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn only_the_agent_speaks() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    app.post_json(
        &format!("/api/threads/{}/say", t.id),
        &t.user,
        json!({"text": "<say>hi</say>"}),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    let other = thread(&app, "bob").await;
    app.post_json(
        &format!("/api/threads/{}/say", other.id),
        &t.agent,
        json!({"text": "<say>hi</say>"}),
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    app.post_json(
        &format!("/api/threads/{}/say", t.id),
        &t.agent,
        json!({"txt": "x"}),
    )
    .await
    .expect(400, Some("INVALID_REQUEST"));
    let long = format!("<say>{}</say>", "x".repeat(40_000));
    app.post_json(
        &format!("/api/threads/{}/say", t.id),
        &t.agent,
        json!({"text": long}),
    )
    .await
    .expect(413, Some("REQUEST_TOO_LARGE"));
    assert!(
        events(&app, &t).await.is_empty(),
        "a refused reply stores nothing"
    );
}

/// A webhook receiver: records each request; answers with the next status from `plan`
/// (200 once the plan is used up); optionally holds each answer until released.
struct Receiver {
    url: String,
    received: mpsc::UnboundedReceiver<(axum::http::HeaderMap, Value)>,
}

/// A server whose webhooks may reach the receivers these tests run on loopback.
async fn webhook_app() -> TestApp {
    TestApp::with(|config| config.webhooks.allow_private = true).await
}

async fn receiver(plan: Vec<u16>, hold: Option<Arc<tokio::sync::Notify>>) -> Receiver {
    let (tx, rx) = mpsc::unbounded_channel();
    let plan = Arc::new(Mutex::new(plan.into_iter()));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let tx = tx.clone();
                let plan = plan.clone();
                let hold = hold.clone();
                async move {
                    let _ = tx.send((headers, serde_json::from_slice::<Value>(&body).unwrap()));
                    if let Some(hold) = hold {
                        hold.notified().await;
                    }
                    let status = plan.lock().unwrap().next().unwrap_or(200);
                    axum::http::StatusCode::from_u16(status).unwrap()
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Receiver {
        url: format!("http://{addr}/hook"),
        received: rx,
    }
}

async fn next(receiver: &mut Receiver) -> (axum::http::HeaderMap, Value) {
    tokio::time::timeout(std::time::Duration::from_secs(30), receiver.received.recv())
        .await
        .expect("the webhook was called")
        .unwrap()
}

#[tokio::test]
async fn a_webhook_receives_each_message_with_signed_links() {
    use hmac::{Hmac, Mac};
    let app = webhook_app().await;
    let addr = app.spawn().await;
    let t = thread(&app, "alice").await;
    let mut hook = receiver(vec![], None).await;
    let created = app
        .post_json(
            &format!("/api/threads/{}/connectors", t.id),
            &t.user,
            json!({"type": "webhook", "url": hook.url}),
        )
        .await;
    created.expect(201, None);
    let secret = created.json()["secret"].as_str().unwrap().to_owned();
    // The agent cannot register connectors; listing hides the secret.
    app.post_json(
        &format!("/api/threads/{}/connectors", t.id),
        &t.agent,
        json!({"type": "webhook", "url": hook.url}),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    let listed = app
        .get(&format!("/api/threads/{}/connectors", t.id), &t.user)
        .await
        .json();
    assert!(listed["connectors"][0].get("secret").is_none());

    put_sandbox(&app, &t, "outputs/report.pdf", "application/pdf", PDF).await;
    say(
        &app,
        &t,
        "<say>Here is the report</say><file mode=\"doc\">/sandbox/outputs/report.pdf</file>",
    )
    .await;
    let (headers, payload) = next(&mut hook).await;

    // The signature is the HMAC of the body under the connector's secret.
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(serde_json::to_vec(&payload).unwrap().as_slice());
    let signature = headers["x-ferry-signature"].to_str().unwrap();
    assert!(signature.starts_with("sha256="));
    assert_eq!(payload["type"], "message");
    assert_eq!(payload["threadId"], t.id.as_str());
    let message = &payload["message"];
    assert_eq!(message["content"], "Here is the report");
    let file = &message["files"][0];
    assert_eq!(file["sendAs"], "document");
    assert!(file["expiresAt"].as_str().is_some());
    let url = file["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("http://{addr}/api/attachments/")),
        "{url}"
    );

    // The link works without a token…
    let client = reqwest::Client::new();
    let got = client.get(&url).send().await.unwrap();
    assert_eq!(got.status().as_u16(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), PDF);
    // …but not tampered with…
    let tampered = url.replace("signature=", "signature=0");
    let got = client.get(&tampered).send().await.unwrap();
    assert_eq!(got.status().as_u16(), 403);
    let other_expiry = url.replace("expires=", "expires=9");
    assert_eq!(
        client
            .get(&other_expiry)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        403
    );
    // …and not once expired.
    let id = file["id"].as_str().unwrap();
    let past = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 5;
    let expired = format!(
        "http://{addr}/api/attachments/{id}?{}",
        app.state.signer.sign_until(id, past)
    );
    let got = client.get(&expired).send().await.unwrap();
    assert_eq!(got.status().as_u16(), 403);
    let body: Value = got.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired")
    );
}

#[tokio::test]
async fn failed_deliveries_are_retried_with_backoff() {
    let app = webhook_app().await;
    app.spawn().await;
    let t = thread(&app, "alice").await;
    let mut hook = receiver(vec![500, 503], None).await;
    app.post_json(
        &format!("/api/threads/{}/connectors", t.id),
        &t.user,
        json!({"type": "webhook", "url": hook.url}),
    )
    .await
    .expect(201, None);
    say(&app, &t, "<say>retry me</say>").await;
    let (_, first) = next(&mut hook).await;
    let (_, second) = next(&mut hook).await;
    let (_, third) = next(&mut hook).await;
    for attempt in [&first, &second, &third] {
        assert_eq!(attempt["message"]["content"], "retry me");
        assert_eq!(attempt["deliveryId"], first["deliveryId"]);
    }
    // Delivered on the third attempt: no fourth.
    let more = tokio::time::timeout(std::time::Duration::from_secs(3), hook.received.recv()).await;
    assert!(more.is_err(), "a delivered message is not sent again");
}

#[tokio::test]
async fn a_slow_receiver_never_blocks_the_reply() {
    let app = webhook_app().await;
    app.spawn().await;
    let t = thread(&app, "alice").await;
    let release = Arc::new(tokio::sync::Notify::new());
    let mut hook = receiver(vec![], Some(release.clone())).await;
    app.post_json(
        &format!("/api/threads/{}/connectors", t.id),
        &t.user,
        json!({"type": "webhook", "url": hook.url}),
    )
    .await
    .expect(201, None);
    say(&app, &t, "<say>one</say>").await;
    // The receiver has the request and is holding its answer; the agent's next reply still
    // goes through.
    next(&mut hook).await;
    let answer = say(&app, &t, "<say>two</say>").await;
    assert_eq!(answer["messages"].as_array().unwrap().len(), 1);
    release.notify_waiters();
}

#[tokio::test]
async fn connectors_are_validated_and_removable() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for body in [
        json!({"type": "telegram", "url": "http://x"}),
        json!({"type": "webhook", "url": "ftp://x/y"}),
        json!({"type": "webhook", "url": "not a url"}),
    ] {
        app.post_json(&format!("/api/threads/{}/connectors", t.id), &t.user, body)
            .await
            .expect(400, Some("INVALID_REQUEST"));
    }
    let id = app
        .post_json(
            &format!("/api/threads/{}/connectors", t.id),
            &t.user,
            json!({"type": "webhook", "url": "https://hooks.example.com/hook"}),
        )
        .await
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let uri = format!("/api/threads/{}/connectors/{id}", t.id);
    app.send("DELETE", &uri, Some(&t.user), &[], Body::empty())
        .await
        .expect(204, None);
    app.send("DELETE", &uri, Some(&t.user), &[], Body::empty())
        .await
        .expect(404, Some("NOT_FOUND"));
}
