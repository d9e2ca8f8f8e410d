//! The agent's file system over HTTP (docs/agent-files.md): every operation through its
//! route, seen at once through the sandbox and spaces routes with the same ETag, and each
//! refusal in the envelope.
//!
//! Why one file: one route family, `/api/fs/{operation}`, through the two helpers at the top: each
//! test is a short session of operations whose effect is checked at once through the sandbox and
//! spaces routes and a space's feed, so an operation's answer and what every other door sees are
//! read side by side; the zip of a folder is tested apart.

use crate::support::{Reply, TestApp};
use crate::thread_support::{fixture, put_file, sandbox_dir, thread};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

async fn fs(app: &TestApp, token: &str, tool: &str, body: Value) -> Reply {
    app.post_json(&format!("/api/fs/{tool}"), token, body).await
}

fn ok(reply: &Reply) -> Value {
    reply.expect(200, None);
    reply.json()
}

#[tokio::test]
async fn a_session_of_file_work_is_seen_at_once_through_the_other_routes() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let written = ok(&fs(
        &app,
        &t.agent,
        "write_file",
        json!({"path": "/sandbox/outputs/report.md", "content": "# Report\nSales: 10\n"}),
    )
    .await);
    assert_eq!(written["created"], true);
    let etag = written["etag"].as_str().unwrap().to_owned();
    // The sandbox route serves the same bytes under the same ETag.
    let read = app.get(&t.url("/sandbox/outputs/report.md"), &t.user).await;
    read.expect(200, None);
    assert_eq!(read.header("etag"), Some(etag.as_str()));
    assert_eq!(read.text(), "# Report\nSales: 10\n");

    let edited = ok(&fs(
        &app,
        &t.agent,
        "edit_file",
        json!({"path": "/sandbox/outputs/report.md", "old_string": "10", "new_string": "12", "ifMatch": etag}),
    )
    .await);
    assert_eq!(edited["replacements"], 1);
    let after = app
        .get(&t.url("/sandbox/outputs/report.md"), &t.agent)
        .await;
    assert_eq!(after.text(), "# Report\nSales: 12\n");
    assert_eq!(after.header("etag"), edited["etag"].as_str());

    let found = ok(&fs(&app, &t.agent, "grep", json!({"pattern": "Sales"})).await);
    assert_eq!(
        found["matches"],
        json!([{"path": "/sandbox/outputs/report.md", "line": 2, "text": "Sales: 12"}])
    );
    // The words agents know: ls of a file is its entry, ls of / the places it may reach, a
    // negative offset reads the tail, a path ending in / is a folder, never a file to write.
    let one = ok(&fs(
        &app,
        &t.agent,
        "ls",
        json!({"path": "/sandbox/outputs/report.md"}),
    )
    .await);
    assert_eq!(one["entries"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["entries"][0]["path"], "/sandbox/outputs/report.md");
    assert_eq!(one["entries"][0]["etag"], edited["etag"]);
    let roots = ok(&fs(&app, &t.agent, "ls", json!({"path": "/"})).await);
    assert_eq!(
        roots["entries"],
        json!([{"path": "/sandbox", "type": "dir"}, {"path": "/spaces", "type": "dir"}])
    );
    let tail = ok(&fs(
        &app,
        &t.agent,
        "read_file",
        json!({"path": "/sandbox/outputs/report.md", "offset": -1}),
    )
    .await);
    assert_eq!(tail["content"], "     2\tSales: 12\n", "{tail}");
    let all = ok(&fs(
        &app,
        &t.agent,
        "read_file",
        json!({"path": "/sandbox/outputs/report.md", "offset": -50}),
    )
    .await);
    assert_eq!(
        all["content"], "     1\t# Report\n     2\tSales: 12\n",
        "{all}"
    );
    let folder = fs(
        &app,
        &t.agent,
        "write_file",
        json!({"path": "/sandbox/outputs/newdir/", "content": "x"}),
    )
    .await;
    folder.expect(400, Some("INVALID_PATH"));
    app.get(&t.url("/sandbox/outputs/newdir"), &t.agent)
        .await
        .expect(404, Some("NOT_FOUND"));
    // grep's glob reads as ripgrep's: without a '/' it is the file's name, at any depth.
    for (glob, hits) in [
        ("*.md", 1),
        ("outputs/*.md", 1),
        ("*.csv", 0),
        ("report.*", 1),
    ] {
        let found = ok(&fs(
            &app,
            &t.agent,
            "grep",
            json!({"pattern": "Sales", "path": "/sandbox", "glob": glob}),
        )
        .await);
        assert_eq!(
            found["matches"].as_array().unwrap().len(),
            hits,
            "{glob}: {found}"
        );
    }
    let moved = ok(&fs(
        &app,
        &t.agent,
        "move_file",
        json!({"source": "/sandbox/outputs/report.md", "destination": "/sandbox/outputs/final/report.md"}),
    )
    .await);
    assert_eq!(moved["etag"], edited["etag"]);
    app.get(&t.url("/sandbox/outputs/report.md"), &t.agent)
        .await
        .expect(404, Some("NOT_FOUND"));
    let listed = app
        .get(&t.url("/sandbox?dir=/sandbox/outputs/final"), &t.agent)
        .await;
    assert_eq!(listed.json()["files"][0]["etag"], edited["etag"]);

    // The thread's owner reads through the thread's route, and may not write.
    let owner_read = ok(&app
        .post_json(
            &t.url("/fs/read_file"),
            &t.user,
            json!({"path": "/sandbox/outputs/final/report.md"}),
        )
        .await);
    assert_eq!(
        owner_read["content"],
        "     1\t# Report\n     2\tSales: 12\n"
    );
    app.post_json(
        &t.url("/fs/delete_file"),
        &t.user,
        json!({"path": "/sandbox/outputs/final/report.md"}),
    )
    .await
    .expect(403, Some("FORBIDDEN"));

    let deleted = ok(&fs(
        &app,
        &t.agent,
        "delete_file",
        json!({"path": "/sandbox/outputs/final", "recursive": true}),
    )
    .await);
    assert_eq!(deleted["deleted"], 1);
    let empty = ok(&fs(&app, &t.agent, "ls", json!({"path": "/sandbox/outputs"})).await);
    assert_eq!(empty["entries"], json!([]));
}

#[tokio::test]
async fn spaces_are_the_same_files_through_the_spaces_routes() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let written = ok(&fs(
        &app,
        &t.agent,
        "write_file",
        json!({"path": "/spaces/notes/ideas/tea.md", "content": "green tea\n"}),
    )
    .await);
    let through_spaces = app
        .get("/api/spaces/notes/files/ideas/tea.md", &t.user)
        .await;
    through_spaces.expect(200, None);
    assert_eq!(through_spaces.header("etag"), written["etag"].as_str());
    assert_eq!(
        through_spaces.header("content-type"),
        Some("text/markdown; charset=utf-8")
    );
    // The user's own token reaches the user's spaces on the route without a thread.
    let listed = ok(&fs(&app, &t.user, "ls", json!({"path": "/spaces"})).await);
    assert_eq!(
        listed["entries"],
        json!([{"path": "/spaces/notes", "type": "dir"}])
    );
    let globbed = ok(&fs(
        &app,
        &t.user,
        "glob",
        json!({"pattern": "**/*.md", "path": "/spaces/notes"}),
    )
    .await);
    assert_eq!(globbed["paths"], json!(["/spaces/notes/ideas/tea.md"]));
    ok(&fs(
        &app,
        &t.user,
        "move_file",
        json!({"source": "/spaces/notes/ideas/tea.md", "destination": "/spaces/notes/done/tea.md"}),
    )
    .await);
    app.get("/api/spaces/notes/files/done/tea.md", &t.user)
        .await
        .expect(200, None);
    // A user token names no thread: its /sandbox is refused, clearly.
    fs(&app, &t.user, "ls", json!({"path": "/sandbox"}))
        .await
        .expect(400, Some("INVALID_REQUEST"));
}

#[tokio::test]
async fn every_refusal_is_in_the_envelope_and_changes_nothing() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/a.txt", b"one one\n").await;
    let cases = [
        (
            "read_file",
            json!({"path": "/etc/passwd"}),
            400,
            "INVALID_PATH",
        ),
        (
            "read_file",
            json!({"path": "/sandbox/../etc/passwd"}),
            400,
            "INVALID_PATH",
        ),
        (
            "read_file",
            json!({"path": "/sandbox/outputs"}),
            400,
            "INVALID_PATH",
        ),
        (
            "read_file",
            json!({"path": "/sandbox/none.md"}),
            404,
            "NOT_FOUND",
        ),
        (
            "read_file",
            json!({"path": "a", "surprise": 1}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "edit_file",
            json!({"path": "/sandbox/outputs/a.txt", "old_string": "one", "new_string": "1"}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "edit_file",
            json!({"path": "/sandbox/outputs/a.txt", "old_string": "two", "new_string": "2"}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "edit_file",
            json!({"path": "/sandbox/outputs/a.txt", "old_string": "one", "new_string": "1", "replace_all": true, "ifMatch": "\"stale\""}),
            412,
            "PRECONDITION_FAILED",
        ),
        (
            "write_file",
            json!({"path": "/sandbox/outputs/a.txt", "content": "x", "ifNoneMatch": "*"}),
            409,
            "ALREADY_EXISTS",
        ),
        (
            "write_file",
            json!({"path": "/sandbox/skills/x.md", "content": "x"}),
            403,
            "FORBIDDEN",
        ),
        (
            "write_file",
            json!({"path": "/sandbox/outputs/b.bin", "content": "@@", "encoding": "base64"}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "delete_file",
            json!({"path": "/sandbox/outputs"}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "move_file",
            json!({"source": "/sandbox/outputs/a.txt", "destination": "/spaces/notes/a.txt"}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "move_file",
            json!({"source": "/sandbox/outputs", "destination": "/sandbox/outputs/inner"}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "grep",
            json!({"pattern": "(", "regex": true}),
            400,
            "INVALID_REQUEST",
        ),
        (
            "glob",
            json!({"pattern": "[", "path": "/sandbox"}),
            400,
            "INVALID_REQUEST",
        ),
    ];
    for (tool, body, status, code) in cases {
        let reply = fs(&app, &t.agent, tool, body.clone()).await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{tool} {body}: {}",
            reply.text()
        );
        assert_eq!(reply.json()["error"]["code"], code, "{tool} {body}");
    }
    let left = app.get(&t.url("/sandbox/outputs/a.txt"), &t.agent).await;
    assert_eq!(left.text(), "one one\n");
    // Another user's agent, or another user, does not see the thread.
    let bob = app.user("bob");
    app.post_json(&t.url("/fs/ls"), &bob, json!({}))
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn images_documents_and_binaries_are_read_as_a_model_needs_them() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "user_uploads/wide.png", &fixture("wide.png")).await;
    put_file(
        &app,
        &t,
        "user_uploads/paper.pdf",
        &fixture("two-pages.pdf"),
    )
    .await;
    put_file(
        &app,
        &t,
        "user_uploads/report.docx",
        &fixture("report.docx"),
    )
    .await;
    put_file(&app, &t, "user_uploads/blob.bin", &[0, 159, 146, 150, 0, 1]).await;
    let image = ok(&fs(
        &app,
        &t.agent,
        "read_file",
        json!({"path": "/sandbox/user_uploads/wide.png"}),
    )
    .await);
    assert_eq!(image["kind"], "image", "{image}");
    let shown = STANDARD.decode(image["base64"].as_str().unwrap()).unwrap();
    assert!(image["width"].as_u64().unwrap() <= 1568, "{image}");
    assert!(!shown.is_empty());
    for document in ["paper.pdf", "report.docx"] {
        let text = ok(&fs(
            &app,
            &t.agent,
            "read_file",
            json!({"path": format!("/sandbox/user_uploads/{document}"), "limit": 3}),
        )
        .await);
        assert_eq!(text["kind"], "text", "{document}: {text}");
        assert!(
            text["content"].as_str().unwrap().starts_with("     1\t"),
            "{document}: {text}"
        );
        assert!(text["note"].as_str().unwrap().contains("extracted"));
    }
    let binary = ok(&fs(
        &app,
        &t.agent,
        "read_file",
        json!({"path": "/sandbox/user_uploads/blob.bin"}),
    )
    .await);
    assert_eq!(binary["kind"], "binary");
    assert_eq!(binary["size"], 6);
}

#[tokio::test]
async fn a_pdf_is_read_as_its_pages_when_asked_with_pages() {
    use ferry_test_support::documents::{letter_page_saying, letter_pdf};
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let said = ["First page", "Second page", "Third page"].map(letter_page_saying);
    put_file(&app, &t, "outputs/r.pdf", &letter_pdf(&said)).await;
    put_file(&app, &t, "outputs/r.txt", b"text").await;
    let read = |body: Value| fs(&app, &t.agent, "read_file", body);

    let got = ok(&read(json!({"path": "/sandbox/outputs/r.pdf", "pages": "3,2"})).await);
    assert_eq!(got["kind"], "pages", "{got}");
    assert_eq!(got["totalPages"], 3);
    assert!(got["etag"].as_str().unwrap().starts_with('"'));
    let content = got["content"].as_array().unwrap();
    assert_eq!(
        content.len(),
        4,
        "an image and a text per page: {content:?}"
    );
    assert_eq!(content[0]["type"], "image");
    assert_eq!(content[0]["mime_type"], "image/png");
    assert_eq!(
        content[1]["text"], "Page 2 of 3 of r.pdf:\nSecond page",
        "ascending, each page's own text"
    );
    assert_eq!(content[3]["text"], "Page 3 of 3 of r.pdf:\nThird page");

    // Without pages a PDF is its text, by lines, and says how to see its pages.
    let text = ok(&read(json!({"path": "/sandbox/outputs/r.pdf"})).await);
    assert_eq!(text["kind"], "text");
    assert!(text["note"].as_str().unwrap().contains("pages"), "{text}");

    read(json!({"path": "/sandbox/outputs/r.pdf", "pages": "4"}))
        .await
        .expect_invalid("the document has 3 pages; there is no page 4");
    read(json!({"path": "/sandbox/outputs/r.pdf", "pages": "one"}))
        .await
        .expect_invalid("pages must list page numbers and ranges");
    read(json!({"path": "/sandbox/outputs/r.txt", "pages": "1"}))
        .await
        .expect_invalid("pages applies to PDF files and presentations (PPTX); /sandbox/outputs/r.txt is neither");
}

#[tokio::test]
async fn a_planted_link_or_fifo_is_refused_within_the_operation() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let dir = sandbox_dir(&app, &t).await;
    std::os::unix::fs::symlink("/etc", dir.join("workspace/etc")).unwrap();
    fs(&app, &t.agent, "read_file", json!({"path": "etc/passwd"}))
        .await
        .expect(400, Some("INVALID_PATH"));
    let found = ok(&fs(&app, &t.agent, "grep", json!({"pattern": "root"})).await);
    assert_eq!(found["matches"], json!([]));
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("workspace/pipe"))
        .status();
    if made.is_ok_and(|s| s.success()) {
        fs(&app, &t.agent, "read_file", json!({"path": "pipe"}))
            .await
            .expect(400, Some("INVALID_PATH"));
        fs(
            &app,
            &t.agent,
            "edit_file",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        )
        .await
        .expect(400, Some("INVALID_PATH"));
    }
}

/// The path and query of an absolute URL (the in-process router takes those).
fn local(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    after_scheme[after_scheme.find('/').unwrap()..].to_owned()
}

#[tokio::test]
async fn a_file_url_reads_or_writes_one_path_without_credentials_until_it_expires() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let put_url = ok(&fs(
        &app,
        &t.agent,
        "file_url",
        json!({"path": "/sandbox/outputs/chart.png", "method": "PUT"}),
    )
    .await);
    assert_eq!(put_url["method"], "PUT");
    let chart = fixture("wide.png");
    // As `curl -T chart.png "$URL"` sends it: no token, no Content-Type.
    let stored = app
        .send(
            "PUT",
            &local(put_url["url"].as_str().unwrap()),
            None,
            &[],
            chart.clone(),
        )
        .await;
    assert_eq!(stored.status.as_u16(), 201, "{}", stored.text());
    let through_sandbox = app.get(&t.url("/sandbox/outputs/chart.png"), &t.user).await;
    assert_eq!(through_sandbox.body, chart);
    assert_eq!(through_sandbox.header("etag"), stored.header("etag"));
    // The URL is for PUT only, for that path only.
    let url = local(put_url["url"].as_str().unwrap());
    let refused = app.send("GET", &url, None, &[], Vec::new()).await;
    refused.expect(403, Some("FORBIDDEN"));
    let tampered = url.replace("transfer/", "transfer/x");
    app.send("PUT", &tampered, None, &[], b"x".to_vec())
        .await
        .expect(403, Some("FORBIDDEN"));

    let get_url = ok(&fs(
        &app,
        &t.agent,
        "file_url",
        json!({"path": "/sandbox/outputs/chart.png", "method": "GET", "expiresIn": 1}),
    )
    .await);
    let read = app
        .send(
            "GET",
            &local(get_url["url"].as_str().unwrap()),
            None,
            &[],
            Vec::new(),
        )
        .await;
    read.expect(200, None);
    assert_eq!(read.body, chart);
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    app.send(
        "GET",
        &local(get_url["url"].as_str().unwrap()),
        None,
        &[],
        Vec::new(),
    )
    .await
    .expect(403, Some("FORBIDDEN"));

    // What the asker may not do, no URL is handed out for.
    for (body, status, code) in [
        (
            json!({"path": "/sandbox/skills/x.md", "method": "PUT"}),
            403,
            "FORBIDDEN",
        ),
        (
            json!({"path": "/sandbox/none.md", "method": "GET"}),
            404,
            "NOT_FOUND",
        ),
        (
            json!({"path": "/sandbox/outputs", "method": "PUT"}),
            400,
            "INVALID_PATH",
        ),
        // ferry's own folder: no URL is handed out that its write would refuse.
        (
            json!({"path": "/sandbox/.ferry-tmp/x", "method": "PUT"}),
            400,
            "INVALID_PATH",
        ),
        (
            json!({"path": "/sandbox/a.md", "method": "PUT", "expiresIn": 3601}),
            400,
            "INVALID_REQUEST",
        ),
        (
            json!({"path": "/sandbox/a.md", "method": "DELETE"}),
            400,
            "INVALID_REQUEST",
        ),
    ] {
        let reply = fs(&app, &t.agent, "file_url", body.clone()).await;
        assert_eq!(reply.status.as_u16(), status, "{body}: {}", reply.text());
        assert_eq!(reply.json()["error"]["code"], code, "{body}");
    }
    app.post_json(
        &t.url("/fs/file_url"),
        &t.user,
        json!({"path": "/sandbox/outputs/x.md", "method": "PUT"}),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    // A space file, with a PUT URL that keeps the space's limit.
    let space_url = ok(&fs(
        &app,
        &t.user,
        "file_url",
        json!({"path": "/spaces/notes/big.bin", "method": "PUT"}),
    )
    .await);
    let too_big = vec![7u8; 6 << 20];
    app.send(
        "PUT",
        &local(space_url["url"].as_str().unwrap()),
        None,
        &[],
        too_big,
    )
    .await
    .expect(413, Some("REQUEST_TOO_LARGE"));
    app.get("/api/spaces/notes/files/big.bin", &t.user)
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn a_space_feed_replays_every_change_in_order_and_follows_live() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let as_mcp = |tool: &str, body: Value| {
        let uri = format!("/api/fs/{tool}");
        let token = t.agent.clone();
        let app = &app;
        async move {
            app.send(
                "POST",
                &uri,
                Some(&token),
                &[
                    ("content-type", "application/json"),
                    ("x-ferry-door", "mcp"),
                ],
                body.to_string(),
            )
            .await
        }
    };
    let written = ok(&as_mcp(
        "write_file",
        json!({"path": "/spaces/notes/a.md", "content": "a"}),
    )
    .await);
    app.put("/api/spaces/notes/files/b.md", &t.user, "text/plain", b"bb")
        .await
        .expect(201, None);
    ok(&as_mcp(
        "move_file",
        json!({"source": "/spaces/notes/a.md", "destination": "/spaces/notes/done/a.md"}),
    )
    .await);
    app.send(
        "DELETE",
        "/api/spaces/notes/files/b.md",
        Some(&t.user),
        &[],
        Vec::new(),
    )
    .await
    .expect(204, None);
    // Another space's changes are its own.
    app.put("/api/spaces/other/files/x.md", &t.user, "text/plain", b"x")
        .await
        .expect(201, None);

    let feed = app
        .get("/api/spaces/notes/events?format=json", &t.user)
        .await;
    feed.expect(200, None);
    let events = feed.json();
    let summary: Vec<(i64, &str, &str, &str)> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_i64().unwrap(),
                e["type"].as_str().unwrap(),
                e["path"].as_str().unwrap(),
                e["door"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (1, "file_written", "a.md", "mcp"),
            (2, "file_written", "b.md", "http"),
            (3, "file_moved", "a.md", "mcp"),
            (4, "file_deleted", "b.md", "http"),
        ]
    );
    assert_eq!(events[0]["etag"], written["etag"]);
    assert_eq!(events[2]["destination"], "done/a.md");
    assert_eq!(events[2]["etag"], written["etag"]);
    assert_eq!(events[1]["size"], 2);
    // Someone else's spaces: their feed is empty, never this one.
    let bob = app.user("bob");
    let theirs = app.get("/api/spaces/notes/events?format=json", &bob).await;
    assert_eq!(theirs.json(), json!([]));

    // A stream resumes after Last-Event-ID, then follows what happens next.
    let addr = app.spawn().await;
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/api/spaces/notes/events");
    let mut stream = crate::thread_support::Sse::open(&client, &url, &t.user, Some(2)).await;
    let replayed = stream.events(2).await;
    assert_eq!(replayed.iter().map(|e| e.id).collect::<Vec<_>>(), [3, 4]);
    ok(&fs(
        &app,
        &t.agent,
        "write_file",
        json!({"path": "/spaces/notes/c.md", "content": "c"}),
    )
    .await);
    let live = stream.next_event().await;
    assert_eq!(live.id, 5);
    assert_eq!(live.json()["path"], "c.md");
    assert_eq!(live.json()["type"], "file_written");
}

#[tokio::test]
async fn another_users_thread_route_answers_nothing_even_for_spaces() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let bob = app.user("bob");
    ok(&fs(
        &app,
        &bob,
        "write_file",
        json!({"path": "/spaces/mine/a.md", "content": "a"}),
    )
    .await);
    app.post_json(&t.url("/fs/ls"), &bob, json!({"path": "/spaces/mine"}))
        .await
        .expect(404, Some("NOT_FOUND"));
    app.post_json(
        &t.url("/fs/file_url"),
        &bob,
        json!({"path": "/spaces/mine/a.md", "method": "GET"}),
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    // A space that does not exist is nothing to delete.
    fs(
        &app,
        &bob,
        "delete_file",
        json!({"path": "/spaces/none", "recursive": true}),
    )
    .await
    .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn a_batch_answers_each_file_on_its_own() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let bytes: Vec<u8> = (0..=255u8).collect();
    let uploaded = ok(&fs(
        &app,
        &t.agent,
        "upload_files",
        json!({"files": [
            {"path": "/sandbox/outputs/a.bin", "content": STANDARD.encode(&bytes), "encoding": "base64"},
            {"path": "/sandbox/skills/nope.md", "content": "refused"},
            {"path": "/etc/passwd", "content": "refused"},
            {"path": "/spaces/notes/ideas/b.md", "content": "# B\n"},
            {"path": "/sandbox/outputs/a.bin", "content": "taken", "ifNoneMatch": "*"},
            {"path": "/sandbox/outputs/c.txt", "content": "not base64 !", "encoding": "base64"},
        ]}),
    )
    .await);
    let files = uploaded["files"].as_array().unwrap();
    assert_eq!(files.len(), 6);
    assert_eq!(files[0]["path"], "/sandbox/outputs/a.bin");
    assert_eq!(files[0]["created"], true);
    assert_eq!(files[0]["size"], 256);
    let codes: Vec<&str> = files
        .iter()
        .map(|f| f["error"]["code"].as_str().unwrap_or("ok"))
        .collect();
    assert_eq!(
        codes,
        [
            "ok",
            "FORBIDDEN",
            "INVALID_PATH",
            "ok",
            "ALREADY_EXISTS",
            "INVALID_REQUEST"
        ]
    );
    assert!(files.iter().all(|f| f["path"].is_string()));
    assert!(
        files[1]["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    // What landed is there; what was refused is not.
    let read = app.get(&t.url("/sandbox/outputs/a.bin"), &t.user).await;
    assert_eq!(read.body, bytes);
    app.get(&t.url("/sandbox/outputs/c.txt"), &t.user)
        .await
        .expect(404, Some("NOT_FOUND"));

    let downloaded = ok(&fs(
        &app,
        &t.agent,
        "download_files",
        json!({"paths": [
            "/sandbox/outputs/a.bin",
            "/sandbox/outputs/missing.bin",
            "/sandbox/outputs",
            "/spaces/notes/ideas/b.md",
            "/sandbox/../etc",
        ]}),
    )
    .await);
    let files = downloaded["files"].as_array().unwrap();
    assert_eq!(files.len(), 5);
    assert_eq!(files[0]["encoding"], "base64");
    assert_eq!(
        STANDARD
            .decode(files[0]["content"].as_str().unwrap())
            .unwrap(),
        bytes
    );
    assert_eq!(files[0]["etag"].as_str(), read.header("etag"));
    assert_eq!(files[1]["error"]["code"], "NOT_FOUND");
    assert_eq!(files[2]["error"]["code"], "INVALID_PATH");
    assert_eq!(
        STANDARD
            .decode(files[3]["content"].as_str().unwrap())
            .unwrap(),
        b"# B\n"
    );
    assert!(
        files[3]["contentType"]
            .as_str()
            .unwrap()
            .starts_with("text/markdown")
    );
    assert_eq!(files[4]["error"]["code"], "INVALID_PATH");
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths[4], "/sandbox/../etc");

    // The thread's owner reads its sandbox through the thread's route, and may not write it.
    let owner = app
        .post_json(
            &t.url("/fs/download_files"),
            &t.user,
            json!({"paths": ["/sandbox/outputs/a.bin"]}),
        )
        .await;
    assert!(ok(&owner)["files"][0]["content"].is_string());
    let refused = ok(&app
        .post_json(
            &t.url("/fs/upload_files"),
            &t.user,
            json!({"files": [{"path": "/sandbox/outputs/z.txt", "content": "z"}]}),
        )
        .await);
    assert_eq!(refused["files"][0]["error"]["code"], "FORBIDDEN");
    // Another user's thread is not there at all.
    app.post_json(
        &t.url("/fs/download_files"),
        &app.user("mallory"),
        json!({"paths": ["/sandbox/outputs/a.bin"]}),
    )
    .await
    .expect(404, Some("NOT_FOUND"));

    // An empty batch, or one too long, is refused whole.
    fs(&app, &t.agent, "download_files", json!({"paths": []}))
        .await
        .expect_invalid("a batch names 1 to 1000 files");
    let many: Vec<String> = (0..1001).map(|i| format!("/sandbox/f{i}")).collect();
    fs(&app, &t.agent, "download_files", json!({"paths": many}))
        .await
        .expect_invalid("this one names 1001");
}

/// `grep` with `documents: true` searches a workbook, a PDF, a Word file and a deck in their
/// text, each match naming its sheet and row, page or slide; a damaged document is counted
/// with its reason and the search goes on; without `documents` they are all binary.
#[tokio::test]
async fn grep_searches_documents_in_their_text_and_says_where_each_match_is() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for name in ["seed.xlsx", "two-pages.pdf", "report.docx", "deck.pptx"] {
        put_file(&app, &t, &format!("user_uploads/{name}"), &fixture(name)).await;
    }
    put_file(
        &app,
        &t,
        "user_uploads/broken.xlsx",
        b"PK\x03\x04 not a workbook",
    )
    .await;
    let grep = |pattern: &str, documents: bool| {
        fs(
            &app,
            &t.agent,
            "grep",
            json!({"pattern": pattern, "path": "/sandbox/user_uploads", "documents": documents}),
        )
    };

    // Without documents, their bytes: compressed, or skipped as binary.
    let plain = ok(&grep("South", false).await);
    assert_eq!(plain["matches"], json!([]), "{plain}");
    assert!(plain["skipped"]["binary"].as_u64().unwrap() >= 3, "{plain}");

    // Twice: the second search reads the texts kept by the first.
    for _ in 0..2 {
        let found = ok(&grep("South", true).await);
        assert_eq!(
            found["matches"],
            json!([
                {"path": "/sandbox/user_uploads/deck.pptx", "slide": 3, "line": 11,
                 "text": "South: 122,000"},
                {"path": "/sandbox/user_uploads/report.docx", "line": 8,
                 "text": "South | 115000 | 122000"},
                {"path": "/sandbox/user_uploads/seed.xlsx", "sheet": "Sheet1", "row": 3,
                 "line": 5, "text": "| South | 98000 | 103000 | 115000 | 122000 |"},
            ]),
            "{found}"
        );
        assert_eq!(found["filesSearched"], 4, "{found}");
        assert_eq!(found["skipped"]["unreadable"], 1, "{found}");
        assert_eq!(
            found["unreadable"][0]["path"],
            "/sandbox/user_uploads/broken.xlsx"
        );
        assert!(
            found["unreadable"][0]["reason"]
                .as_str()
                .is_some_and(|r| !r.is_empty()),
            "{found}"
        );
    }

    let page = ok(&grep("hello", true).await);
    assert_eq!(
        page["matches"],
        json!([{"path": "/sandbox/user_uploads/two-pages.pdf", "page": 2, "line": 6,
                "text": "Page two says hello."}])
    );
    let slide = ok(&grep("Revenue by", true).await);
    assert_eq!(
        slide["matches"],
        json!([{"path": "/sandbox/user_uploads/deck.pptx", "slide": 3, "line": 9,
                "text": "Revenue by Region"}])
    );
    // A sheet's rows past the first read as a table too: the Orders sheet's 25th order is on
    // its 26th row.
    let order = ok(&grep("A-025", true).await);
    assert_eq!(order["matches"][0]["sheet"], "Orders", "{order}");
    assert_eq!(order["matches"][0]["row"], 26, "{order}");

    // read_file shows the same text, so a match's line is where read_file shows it.
    let read = ok(&fs(
        &app,
        &t.agent,
        "read_file",
        json!({"path": "/sandbox/user_uploads/seed.xlsx", "offset": 4, "limit": 1}),
    )
    .await);
    assert_eq!(
        read["content"],
        "     5\t| South | 98000 | 103000 | 115000 | 122000 |\n"
    );
    let sheets = ok(&fs(
        &app,
        &t.agent,
        "grep",
        json!({"pattern": "## Sheet", "path": "/sandbox/user_uploads/seed.xlsx", "documents": true}),
    )
    .await);
    assert_eq!(
        sheets["matches"],
        json!([]),
        "headings are not the document's text"
    );
}

/// One file API: `ls` answers the entry the spaces and sandbox listings answer, and
/// `write_file` the answer a `PUT` gives, field for field.
#[tokio::test]
async fn every_listing_answers_one_entry_and_every_write_one_answer() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let put = app
        .put(
            "/api/spaces/notes/files/ideas/tea.md",
            &t.user,
            "text/markdown; charset=utf-8",
            b"# Tea\n",
        )
        .await;
    put.expect(201, None);
    let written = ok(&fs(
        &app,
        &t.user,
        "write_file",
        json!({"path": "/spaces/notes/ideas/cake.md", "content": "# Cake\n"}),
    )
    .await);
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&put.json()),
        keys(&written),
        "{} vs {written}",
        put.json()
    );
    assert_eq!(put.json()["created"], true);
    assert_eq!(written["contentType"], "text/markdown; charset=utf-8");

    let listed = app
        .get("/api/spaces/notes/files?dir=ideas", &t.user)
        .await
        .json();
    let ls = ok(&fs(&app, &t.user, "ls", json!({"path": "/spaces/notes/ideas"})).await);
    for (route, tool) in listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .zip(ls["entries"].as_array().unwrap())
    {
        let mut route = route.clone();
        route["path"] = json!(format!("/spaces/notes/{}", route["path"].as_str().unwrap()));
        assert_eq!(&route, tool);
        assert_eq!(tool["updatedAt"], tool["modifiedAt"]);
    }

    // write_file names a space file's type as a PUT does; a bad one is refused as a PUT's is.
    let typed = ok(&fs(
        &app,
        &t.user,
        "write_file",
        json!({"path": "/spaces/notes/data.txt", "content": "a,b\n", "contentType": "text/csv"}),
    )
    .await);
    assert_eq!(typed["contentType"], "text/csv");
    let served = app.get("/api/spaces/notes/files/data.txt", &t.user).await;
    assert_eq!(served.header("content-type"), Some("text/csv"));
    fs(
        &app,
        &t.user,
        "write_file",
        json!({"path": "/spaces/notes/bad.txt", "content": "x", "contentType": "not a type"}),
    )
    .await
    .expect(415, Some("UNSUPPORTED_MEDIA_TYPE"));

    // A sandbox file is served, listed and answered with its name's type, whatever was sent.
    let sent = app
        .put(
            &t.url("/sandbox/outputs/data.csv"),
            &t.agent,
            "application/octet-stream",
            b"a,b\n",
        )
        .await;
    sent.expect(201, None);
    assert_eq!(sent.json()["contentType"], "text/csv");
    let named = ok(&fs(
        &app,
        &t.agent,
        "write_file",
        json!({"path": "/sandbox/outputs/notes.md", "content": "x", "contentType": "text/plain"}),
    )
    .await);
    assert_eq!(named["contentType"], "text/markdown");
    let sandbox = app
        .get(&t.url("/sandbox?dir=/sandbox/outputs"), &t.agent)
        .await
        .json();
    let ls = ok(&fs(&app, &t.agent, "ls", json!({"path": "/sandbox/outputs"})).await);
    assert_eq!(sandbox["files"], ls["entries"]);
    assert_eq!(ls["entries"][0]["contentType"], "text/csv");
}
