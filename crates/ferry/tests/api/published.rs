//! Agent → user: publish with revisions, downloads and previews (docs/reference/publish.md). The
//! previews are checked as a browser would receive them: body and headers.
//!
//! Why one file: one route family, a published file's: publishing it, its revisions, and the routes
//! that serve it (content, download, preview), through the helpers at the top; what a publish
//! stores is checked through the routes that serve it, and the previews with the headers a
//! browser gets.

use crate::support::{Reply, TestApp};
use crate::thread_support;
use crate::thread_support::{
    BIN, Thread, blob_files, fixture, noise, pct, pct_decode, png, publish, put_file, sandbox_dir,
    stored_events, thread,
};
use serde_json::{Value, json};

const CSP: &str = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox";
const DOCX: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

fn id_of(reply: &Reply) -> String {
    reply.json()["id"].as_str().unwrap().to_owned()
}

async fn content(app: &TestApp, t: &Thread, pid: &str, query: &str) -> Reply {
    app.get(&t.url(&format!("/published/{pid}/content{query}")), &t.user)
        .await
}

async fn preview(app: &TestApp, t: &Thread, pid: &str) -> Reply {
    app.get(&t.url(&format!("/published/{pid}/preview")), &t.user)
        .await
}

/// Publishes `bytes` as `/sandbox/outputs/{name}` and returns the published id.
async fn publish_bytes(app: &TestApp, t: &Thread, name: &str, bytes: &[u8]) -> String {
    put_file(app, t, &format!("outputs/{}", pct(name)), bytes).await;
    let reply = publish(app, t, &format!("/sandbox/outputs/{name}"), name).await;
    reply.expect(201, None);
    id_of(&reply)
}

#[tokio::test]
async fn revisions_keep_their_own_bytes() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/report.md", b"revision one").await;
    let first = publish(&app, &t, "/sandbox/outputs/report.md", "Quarterly Report").await;
    first.expect(201, None);
    assert_eq!(first.json()["revision"], 1);
    let pid = id_of(&first);

    put_file(&app, &t, "outputs/report.md", b"revision two, longer").await;
    let second = publish(&app, &t, "/sandbox/outputs/report.md", "Quarterly Report").await;
    second.expect(200, None);
    assert_eq!(second.json()["revision"], 2);
    assert_eq!(id_of(&second), pid);
    assert_eq!(second.json()["file_size"], 20);

    // A later change in the sandbox leaks into neither revision.
    put_file(
        &app,
        &t,
        "outputs/report.md",
        b"revision three, never published",
    )
    .await;
    let one = content(&app, &t, &pid, "?revision=1").await;
    one.expect(200, None);
    assert_eq!(one.body, b"revision one");
    let two = content(&app, &t, &pid, "?revision=2").await;
    two.expect(200, None);
    assert_eq!(two.body, b"revision two, longer");
    // Without a revision: the latest.
    assert_eq!(
        content(&app, &t, &pid, "").await.body,
        b"revision two, longer"
    );
    content(&app, &t, &pid, "?revision=3")
        .await
        .expect(404, Some("NOT_FOUND"));
    let storage = app
        .get(
            &format!(
                "/api/storage/thread-file?storage_path=deepagent-outputs/{}/report.md",
                t.id
            ),
            &t.user,
        )
        .await;
    storage.expect(200, None);
    assert_eq!(storage.body, b"revision two, longer");

    // Even with the sandbox file gone, every revision stays downloadable.
    std::fs::remove_file(sandbox_dir(&app, &t).await.join("outputs/report.md")).unwrap();
    assert_eq!(
        content(&app, &t, &pid, "?revision=1").await.body,
        b"revision one"
    );

    // Another display name is another published file.
    put_file(&app, &t, "outputs/other.md", b"other").await;
    let other = publish(&app, &t, "/sandbox/outputs/other.md", "Other").await;
    other.expect(201, None);
    assert_ne!(id_of(&other), pid);
    assert_eq!(other.json()["revision"], 1);

    // Latest of each, or every revision.
    let latest = app.get(&t.url("/published"), &t.user).await;
    latest.expect(200, None);
    let latest = latest.json()["files"].as_array().unwrap().clone();
    let mut seen: Vec<(String, u64)> = latest
        .iter()
        .map(|f| {
            (
                f["display_name"].as_str().unwrap().to_owned(),
                f["revision"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [("Other".to_owned(), 1), ("Quarterly Report".to_owned(), 2)]
    );
    let all = app
        .get(&t.url("/published?revisions=all"), &t.user)
        .await
        .json()["files"]
        .as_array()
        .unwrap()
        .clone();
    let mut seen: Vec<(String, u64, u64)> = all
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_owned(),
                f["revision"].as_u64().unwrap(),
                f["file_size"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    let mut expected = vec![
        (pid.clone(), 1, 12),
        (pid.clone(), 2, 20),
        (id_of(&other), 1, 5),
    ];
    expected.sort();
    assert_eq!(seen, expected);

    // Each publish is a file_published event carrying the answer.
    let events = stored_events(&app, &t, &t.user).await;
    let published: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "file_published")
        .collect();
    assert_eq!(published.len(), 3);
    assert_eq!(published[0]["file"], first.json());
    assert_eq!(published[1]["file"], second.json());
    assert_eq!(published[2]["file"], other.json());
    assert_eq!(published[0]["role"], "agent");
}

#[tokio::test]
async fn the_answer_has_the_seeds_fields() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let docx = fixture("report.docx");
    put_file(&app, &t, "outputs/report.docx", &docx).await;
    let reply = app
        .post_json(
            &t.url("/published"),
            &t.agent,
            json!({
                "file_path": "/sandbox/outputs/report.docx",
                "display_name": "Quarterly Report",
                "description": "Analysis of Q3 performance",
            }),
        )
        .await;
    reply.expect(201, None);
    let body = reply.json();
    let mut keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "description",
            "display_name",
            "file_size",
            "file_type",
            "filename",
            "id",
            "mime_type",
            "preview_kind",
            "published_at",
            "revision",
            "sandbox_path",
            "storage_path",
            "success"
        ]
    );
    assert_eq!(body["success"], true);
    assert_eq!(body["display_name"], "Quarterly Report");
    assert_eq!(body["description"], "Analysis of Q3 performance");
    assert_eq!(body["filename"], "report.docx");
    assert_eq!(body["file_type"], ".docx");
    assert_eq!(body["mime_type"], DOCX);
    assert_eq!(body["file_size"], docx.len());
    assert_eq!(
        body["storage_path"],
        format!("deepagent-outputs/{}/report.docx", t.id).as_str()
    );
    assert_eq!(body["sandbox_path"], "/sandbox/outputs/report.docx");
    assert_eq!(body["revision"], 1);
    assert!(body["published_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(body["preview_kind"], "html");

    // The description is optional; a path relative to /sandbox/workspace/ works too.
    put_file(&app, &t, "workspace/draft.txt", b"draft").await;
    let relative = publish(&app, &t, "draft.txt", "Draft").await;
    relative.expect(201, None);
    assert_eq!(relative.json()["description"], "");
    assert_eq!(
        relative.json()["sandbox_path"],
        "/sandbox/workspace/draft.txt"
    );
    assert_eq!(relative.json()["file_type"], ".txt");

    // Kinds for the other preview paths.
    for (name, kind) in [
        ("chart.png", "image"),
        ("logo.svg", "image"),
        ("paper.pdf", "pdf"),
        ("data.csv", "html"),
        ("blob.bin", "none"),
    ] {
        put_file(&app, &t, &format!("outputs/{name}"), b"x").await;
        let reply = publish(&app, &t, &format!("/sandbox/outputs/{name}"), name).await;
        reply.expect(201, None);
        assert_eq!(reply.json()["preview_kind"], kind, "{name}");
    }
}

#[tokio::test]
async fn publish_errors() {
    let app = TestApp::with(|c| c.app.limits.publish_max_bytes = 1024).await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/ok.txt", b"ok").await;
    put_file(&app, &t, "outputs/big.bin", &[0u8; 1025]).await;
    let ask = |path: &str| json!({ "file_path": path, "display_name": "X" });

    let missing = app
        .post_json(
            &t.url("/published"),
            &t.agent,
            ask("/sandbox/outputs/nope.docx"),
        )
        .await;
    missing.expect(404, Some("NOT_FOUND"));
    assert!(
        missing.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/sandbox/outputs/nope.docx")
    );
    for outside in [
        "/etc/passwd",
        "/sandbox/../etc/passwd",
        "/sandbox/outputs/../../etc/passwd",
        "../../etc/passwd",
        "/sandbox/outputs/a\\b.txt",
        "/sandbox/outputs/nul\u{0}.txt",
    ] {
        app.post_json(&t.url("/published"), &t.agent, ask(outside))
            .await
            .expect(400, Some("INVALID_PATH"));
    }
    app.post_json(
        &t.url("/published"),
        &t.user,
        ask("/sandbox/outputs/ok.txt"),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    app.post_json(
        &t.url("/published"),
        &t.agent,
        ask("/sandbox/outputs/big.bin"),
    )
    .await
    .expect(413, Some("REQUEST_TOO_LARGE"));
    app.post_json(
        &t.url("/published"),
        &app.user("bob"),
        ask("/sandbox/outputs/ok.txt"),
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    // Nothing was published by any of those.
    assert_eq!(
        app.get(&t.url("/published?revisions=all"), &t.user)
            .await
            .json()["files"],
        json!([])
    );
    // service_role may publish for the agent.
    app.post_json(
        &t.url("/published"),
        &app.service(None),
        ask("/sandbox/outputs/ok.txt"),
    )
    .await
    .expect(201, None);
}

/// The events of a thread of one kind among the publish lifecycle's, in order.
fn lifecycle(events: &[Value]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter(|e| e["type"].as_str().unwrap_or("").starts_with("file_publish"))
        .map(|e| (e["type"].as_str().unwrap().to_owned(), e.clone()))
        .collect()
}

#[tokio::test]
async fn a_publish_is_announced_then_ends_with_the_same_publish_id() {
    let app = TestApp::with(|c| c.app.limits.publish_max_bytes = 1024).await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/r.md", b"# R").await;
    put_file(&app, &t, "outputs/big.bin", &[0u8; 2048]).await;
    let ask = |path: &str, name: &str| json!({ "file_path": path, "display_name": name });

    app.post_json(
        &t.url("/published"),
        &t.agent,
        ask("/sandbox/outputs/r.md", "Report"),
    )
    .await
    .expect(201, None);
    app.post_json(
        &t.url("/published"),
        &t.agent,
        ask("/sandbox/outputs/none.md", "Ghost"),
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    let too_large = app
        .post_json(
            &t.url("/published"),
            &t.agent,
            ask("/sandbox/outputs/big.bin", "Big"),
        )
        .await;
    too_large.expect(413, Some("REQUEST_TOO_LARGE"));
    // Refused before it started (a malformed request, a caller who may not publish): no events.
    app.post_json(
        &t.url("/published"),
        &t.agent,
        ask("/sandbox/outputs/r.md", " "),
    )
    .await
    .expect(400, Some("INVALID_REQUEST"));
    app.post_json(&t.url("/published"), &t.agent, ask("/etc/passwd", "Escape"))
        .await
        .expect(400, Some("INVALID_PATH"));
    app.post_json(
        &t.url("/published"),
        &t.user,
        ask("/sandbox/outputs/r.md", "Mine"),
    )
    .await
    .expect(403, Some("FORBIDDEN"));

    let events = lifecycle(&stored_events(&app, &t, &t.user).await);
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "file_publishing",
            "file_published",
            "file_publishing",
            "file_publish_failed",
            "file_publishing",
            "file_publish_failed"
        ]
    );
    for pair in events.chunks(2) {
        let (start, end) = (&pair[0].1, &pair[1].1);
        let id = start["publishId"].as_str().unwrap();
        assert!(!id.is_empty());
        assert_eq!(end["publishId"], id, "{start} {end}");
        assert_eq!(end["display_name"], start["display_name"]);
        assert_eq!(end["file_path"], start["file_path"]);
        assert_eq!(start["role"], "agent");
    }
    assert_ne!(events[0].1["publishId"], events[2].1["publishId"]);
    let started = &events[0].1;
    assert_eq!(started["display_name"], "Report");
    assert_eq!(started["file_path"], "/sandbox/outputs/r.md");
    assert_eq!(started["content"], "Publishing Report…");
    assert_eq!(events[1].1["file"]["display_name"], "Report");
    let ghost = &events[3].1;
    assert_eq!(
        ghost["error"],
        json!({ "code": "NOT_FOUND", "message": "File not found: /sandbox/outputs/none.md" })
    );
    assert_eq!(
        ghost["content"],
        "Could not publish Ghost: File not found: /sandbox/outputs/none.md"
    );
    // The failed event carries the envelope the agent was answered with.
    assert_eq!(events[5].1["error"], too_large.json()["error"]);
    assert!(
        events[5].1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("over the publish limit of 1 KiB"),
        "{}",
        events[5].1
    );
}

#[tokio::test]
async fn thread_file_checks_ownership() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let other = thread(&app, "alice").await;
    publish_bytes(&app, &t, "notes.md", b"# notes").await;
    let url = format!(
        "/api/storage/thread-file?storage_path=deepagent-outputs/{}/notes.md",
        t.id
    );
    for token in [&t.user, &t.agent, &app.service(None)] {
        let reply = app.get(&url, token).await;
        reply.expect(200, None);
        assert_eq!(reply.body, b"# notes");
        assert!(
            reply
                .header("content-disposition")
                .unwrap()
                .starts_with("attachment")
        );
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    }
    for stranger in [
        app.user("bob"),
        other.agent.clone(),
        thread(&app, "bob").await.agent,
    ] {
        app.get(&url, &stranger)
            .await
            .expect(404, Some("NOT_FOUND"));
    }
    // A name never published in that thread, and a file of another thread under this one's id.
    publish_bytes(&app, &other, "elsewhere.md", b"other thread").await;
    for path in [
        format!("deepagent-outputs/{}/missing.md", t.id),
        format!("deepagent-outputs/{}/elsewhere.md", t.id),
    ] {
        app.get(
            &format!("/api/storage/thread-file?storage_path={path}"),
            &t.user,
        )
        .await
        .expect(404, Some("NOT_FOUND"));
    }
    for bad in [
        "chat-uploads/alice/x/y.txt".to_owned(),
        format!("deepagent-outputs/{}", t.id),
        format!("deepagent-outputs/{}/a/b.md", t.id),
    ] {
        let reply = app
            .get(
                &format!("/api/storage/thread-file?storage_path={}", pct(&bad)),
                &t.user,
            )
            .await;
        assert_eq!(reply.status.as_u16() / 100, 4, "{bad}: {}", reply.text());
        assert_ne!(reply.body, b"# notes");
    }
}

/// The parameters of a `Content-Disposition` value, quoted strings unescaped.
fn disposition_params(value: &str) -> (String, Vec<(String, String)>) {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            '\\' if quoted => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            ';' if !quoted => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    assert!(!quoted, "an unterminated quoted string in {value}");
    parts.push(current);
    let kind = parts.remove(0).trim().to_ascii_lowercase();
    let params = parts
        .into_iter()
        .map(|p| {
            let (name, raw) = p
                .trim()
                .split_once('=')
                .unwrap_or_else(|| panic!("{value}"));
            let raw = raw.trim();
            let value = match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                Some(inner) => inner.replace("\\\"", "\"").replace("\\\\", "\\"),
                None => raw.to_owned(),
            };
            (name.trim().to_ascii_lowercase(), value)
        })
        .collect();
    (kind, params)
}

/// Checks that a download names `name` and nothing else can be read into the header.
fn check_attachment(reply: &Reply, name: &str) {
    reply.expect(200, None);
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert!(reply.headers.get("set-cookie").is_none());
    let raw = reply
        .headers
        .get("content-disposition")
        .expect("a Content-Disposition")
        .to_str()
        .expect("the header is visible ASCII");
    assert!(!raw.contains('\r') && !raw.contains('\n'));
    let (kind, params) = disposition_params(raw);
    assert_eq!(kind, "attachment", "{raw}");
    for (param, _) in &params {
        assert!(
            param == "filename" || param == "filename*",
            "forged parameter {param} in {raw}"
        );
        assert_eq!(
            params.iter().filter(|(p, _)| p == param).count(),
            1,
            "{param} twice in {raw}"
        );
    }
    let star = params
        .iter()
        .find(|(p, _)| p == "filename*")
        .unwrap_or_else(|| panic!("no filename* in {raw}"));
    let encoded = star
        .1
        .strip_prefix("UTF-8''")
        .unwrap_or_else(|| panic!("{raw}"));
    assert_eq!(
        String::from_utf8(pct_decode(encoded)).unwrap(),
        name,
        "{raw}"
    );
}

#[tokio::test]
async fn download_names_cannot_split_or_forge_the_header() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for name in [
        "report.docx",
        "evil\"; filename=\"x.exe\"; Set-Cookie: a=b.txt",
        "quote\"only.txt",
        "résumé ✓.md",
        "%22%0D%0A.txt",
        "日本語のファイル.csv",
    ] {
        let pid = publish_bytes(&app, &t, name, b"payload").await;
        let reply = content(&app, &t, &pid, "").await;
        check_attachment(&reply, name);
        assert_eq!(reply.body, b"payload");
        let by_path = app
            .get(
                &format!(
                    "/api/storage/thread-file?storage_path={}",
                    pct(&format!("deepagent-outputs/{}/{name}", t.id))
                ),
                &t.user,
            )
            .await;
        check_attachment(&by_path, name);
    }
    // Names with CR or LF cannot even be published: the path rules refuse them, even when such
    // a file exists in the sandbox.
    let dir = sandbox_dir(&app, &t).await;
    std::fs::write(dir.join("outputs/evil\r\nSet-Cookie: x.txt"), b"x").unwrap();
    publish(
        &app,
        &t,
        "/sandbox/outputs/evil\r\nSet-Cookie: x.txt",
        "Evil",
    )
    .await
    .expect(400, Some("INVALID_PATH"));
}

fn check_preview_headers(reply: &Reply, content_type: &str) {
    reply.expect(200, None);
    assert_eq!(reply.header("content-type"), Some(content_type));
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    let csp: Vec<&str> = reply
        .headers
        .get_all("content-security-policy")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(csp, [CSP], "CSP of a {content_type} preview");
}

#[tokio::test]
async fn markdown_previews_are_sanitized() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let md = "# Notes\n\nSome **bold** text.\n\n<script>alert(document.cookie)</script>\n\n\
              [click me](javascript:alert(1))\n\n<a href=\"JaVaScRiPt:alert(2)\">mixed case</a>\n\n\
              <img src=\"x\" onerror=\"alert(3)\">\n\n<p onclick=\"alert(4)\">para</p>\n\n\
              <iframe src=\"https://evil.example\"></iframe>\n";
    let pid = publish_bytes(&app, &t, "notes.md", md.as_bytes()).await;
    let reply = preview(&app, &t, &pid).await;
    check_preview_headers(&reply, "text/html; charset=utf-8");
    let body = reply.text();
    let lower = body.to_ascii_lowercase();
    for banned in ["<script", "javascript:", "onerror", "onclick", "<iframe"] {
        assert!(!lower.contains(banned), "{banned} in {body}");
    }
    assert!(
        body.contains("Notes") && body.contains("<strong>bold</strong>"),
        "{body}"
    );
}

#[tokio::test]
async fn svg_is_only_ever_an_image() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)" width="10" height="10"><script>alert(2)</script><rect width="10" height="10"/></svg>"#;
    let pid = publish_bytes(&app, &t, "logo.svg", svg).await;
    let reply = preview(&app, &t, &pid).await;
    check_preview_headers(&reply, "image/svg+xml");
    assert_eq!(reply.body, svg);
    let download = content(&app, &t, &pid, "").await;
    check_attachment(&download, "logo.svg");
}

#[tokio::test]
async fn an_html_file_is_shown_as_text() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let page =
        b"<html><body onload=\"steal()\"><script>alert(1)</script><h1>Title</h1></body></html>";
    let pid = publish_bytes(&app, &t, "page.html", page).await;
    let reply = preview(&app, &t, &pid).await;
    check_preview_headers(&reply, "text/html; charset=utf-8");
    let body = reply.text();
    assert!(!body.to_ascii_lowercase().contains("<script"), "{body}");
    assert!(!body.contains("<body onload"), "{body}");
    assert!(
        !body.contains("<h1>Title</h1>"),
        "the page's own markup is not rendered: {body}"
    );
    assert!(
        body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{body}"
    );
    // Its download is an attachment, never rendered.
    check_attachment(&content(&app, &t, &pid, "").await, "page.html");
}

#[tokio::test]
async fn images_and_pdfs_are_served_as_themselves() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let image = png(8, 8);
    let pid = publish_bytes(&app, &t, "chart.png", &image).await;
    let reply = preview(&app, &t, &pid).await;
    check_preview_headers(&reply, "image/png");
    assert_eq!(reply.body, image);

    let pdf = fixture("two-pages.pdf");
    let pid = publish_bytes(&app, &t, "paper.pdf", &pdf).await;
    let reply = preview(&app, &t, &pid).await;
    reply.expect(200, None);
    assert_eq!(reply.header("content-type"), Some("application/pdf"));
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    for csp in reply.headers.get_all("content-security-policy") {
        assert!(!csp.to_str().unwrap().contains("sandbox"), "{csp:?}");
    }
    assert!(
        !reply
            .header("content-disposition")
            .unwrap_or("inline")
            .starts_with("attachment")
    );
    assert_eq!(reply.body, pdf);
}

#[tokio::test]
async fn documents_render_as_sanitized_html() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for (name, expect) in [
        ("orders.csv", &["<table", "Customer 5, Ltd", "A-019"][..]),
        ("seed.xlsx", &["<table", "Revenue", "North", "125000"]),
        (
            "report.docx",
            &[
                "Quarterly Report",
                "Revenue grew in every region",
                "&lt;script&gt;",
            ],
        ),
        (
            "deck.pptx",
            &["Quarterly Review", "Revenue by Region", "South: 122,000"],
        ),
    ] {
        let pid = publish_bytes(&app, &t, name, &fixture(name)).await;
        let reply = preview(&app, &t, &pid).await;
        check_preview_headers(&reply, "text/html; charset=utf-8");
        let body = reply.text();
        for needle in expect {
            assert!(body.contains(needle), "{name}: {needle} not in {body}");
        }
        assert!(
            !body.to_ascii_lowercase().contains("<script"),
            "{name}: {body}"
        );
    }
    // JSON and code are shown as text.
    let pid = publish_bytes(&app, &t, "data.json", br#"{"a":"<b>"}"#).await;
    let reply = preview(&app, &t, &pid).await;
    check_preview_headers(&reply, "text/html; charset=utf-8");
    assert!(reply.text().contains("&lt;b&gt;"), "{}", reply.text());
}

#[tokio::test]
async fn an_unknown_binary_has_no_preview() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let data = noise(4096);
    let pid = publish_bytes(&app, &t, "blob.bin", &data).await;
    let reply = preview(&app, &t, &pid).await;
    reply.expect(404, Some("NOT_FOUND"));
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Preview not available"),
        "{}",
        reply.text()
    );
    // It still downloads.
    let download = content(&app, &t, &pid, "").await;
    check_attachment(&download, "blob.bin");
    assert_eq!(download.body, data);
}

#[tokio::test]
async fn older_revisions_preview_their_own_content() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/plan.md", b"# Plan A\n").await;
    let pid = id_of(&publish(&app, &t, "/sandbox/outputs/plan.md", "Plan").await);
    put_file(&app, &t, "outputs/plan.md", b"# Plan B\n").await;
    publish(&app, &t, "/sandbox/outputs/plan.md", "Plan")
        .await
        .expect(200, None);
    let old = app
        .get(
            &t.url(&format!("/published/{pid}/preview?revision=1")),
            &t.user,
        )
        .await;
    check_preview_headers(&old, "text/html; charset=utf-8");
    assert!(old.text().contains("Plan A") && !old.text().contains("Plan B"));
    let new = preview(&app, &t, &pid).await;
    assert!(new.text().contains("Plan B") && !new.text().contains("Plan A"));
}

#[tokio::test]
async fn unchanged_bytes_are_stored_once() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let bytes = noise(10_000);
    put_file(&app, &t, "outputs/same.bin", &bytes).await;
    put_file(&app, &t, "outputs/copy.bin", &bytes).await;
    let before = blob_files(&app).len();
    publish(&app, &t, "/sandbox/outputs/same.bin", "Same")
        .await
        .expect(201, None);
    let after_first = blob_files(&app).len();
    assert_eq!(
        after_first,
        before + 1,
        "the first publish stores the bytes"
    );

    publish(&app, &t, "/sandbox/outputs/same.bin", "Same")
        .await
        .expect(200, None);
    publish(&app, &t, "/sandbox/outputs/same.bin", "Same, again")
        .await
        .expect(201, None);
    publish(&app, &t, "/sandbox/outputs/copy.bin", "The copy")
        .await
        .expect(201, None);
    assert_eq!(
        blob_files(&app).len(),
        after_first,
        "unchanged bytes added a blob"
    );

    // New bytes are new blobs, and each revision still serves its own.
    put_file(&app, &t, "outputs/same.bin", b"changed").await;
    let changed = publish(&app, &t, "/sandbox/outputs/same.bin", "Same").await;
    changed.expect(200, None);
    assert_eq!(blob_files(&app).len(), after_first + 1);
    let pid = id_of(&changed);
    assert_eq!(content(&app, &t, &pid, "?revision=1").await.body, bytes);
    assert_eq!(content(&app, &t, &pid, "?revision=2").await.body, bytes);
    assert_eq!(
        content(&app, &t, &pid, "?revision=3").await.body,
        b"changed"
    );
}

#[tokio::test]
async fn other_users_and_other_threads_agents_get_404() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let sibling = thread(&app, "alice").await;
    let bob = thread(&app, "bob").await;
    let pid = publish_bytes(&app, &t, "secret.md", b"# secret").await;
    for token in [&bob.user, &bob.agent, &sibling.agent] {
        for path in [
            "/published".to_owned(),
            "/published?revisions=all".to_owned(),
            format!("/published/{pid}/content"),
            format!("/published/{pid}/content?revision=1"),
            format!("/published/{pid}/preview"),
        ] {
            let reply = app.get(&t.url(&path), token).await;
            reply.expect(404, Some("NOT_FOUND"));
            assert!(!reply.text().contains("secret"), "{path}: {}", reply.text());
        }
    }
    // The id is bound to its thread: another thread's URL does not serve it.
    app.get(
        &sibling.url(&format!("/published/{pid}/content")),
        &sibling.user,
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    // The owner and the thread's agent read it.
    for token in [&t.user, &t.agent] {
        app.get(&t.url(&format!("/published/{pid}/content")), token)
            .await
            .expect(200, None);
    }
    let _ = BIN;
}

#[tokio::test]
async fn a_hostile_document_previews_safely_and_the_server_stays_healthy() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for (name, bytes) in [
        ("bomb.docx", thread_support::docx_bomb()),
        ("laughs.xlsx", thread_support::xlsx_billion_laughs()),
        ("noise.pptx", noise(8192)),
    ] {
        let pid = publish_bytes(&app, &t, name, &bytes).await;
        let reply = preview(&app, &t, &pid).await;
        match reply.status.as_u16() {
            200 => {
                check_preview_headers(&reply, "text/html; charset=utf-8");
                assert!(!reply.text().to_ascii_lowercase().contains("<script"));
            }
            404 | 422 => {}
            other => panic!("{name}: {other} {}", reply.text()),
        }
        // The bytes still download whole.
        assert_eq!(content(&app, &t, &pid, "").await.body, bytes);
        app.send("GET", "/healthz", None, &[], axum::body::Body::empty())
            .await
            .expect(200, None);
    }
}
