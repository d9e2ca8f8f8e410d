//! A thread's sandbox over HTTP (docs/reference/paths.md, threads-and-sandbox.md): listing, reading and writing by `/sandbox/…`
//! paths, and every way a path or a planted link could reach outside the sandbox.
//!
//! Why one file: one route family, a thread's `/sandbox/…` routes: the first part checks what they
//! list, read and write; the rest attacks the folder behind those same routes (planted links and
//! FIFOs, paths that climb out, racing and cut-off writes), so what the routes promise and each
//! way tried to break it are one suite.

use crate::support;
use crate::support::{TestApp, raw_http};
use crate::thread_support;
use crate::thread_support::{
    BIN, Thread, files_below, pairs, paths_and_types, put_file, sandbox_dir, thread,
};
use axum::body::Body;
use serde_json::json;
use std::os::unix::fs::symlink;

#[tokio::test]
async fn the_root_lists_the_seed_layout_as_folders() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for token in [&t.agent, &t.user] {
        let root = app.get(&t.url("/sandbox"), token).await;
        root.expect(200, None);
        assert_eq!(
            root.json(),
            json!({ "files": [
                { "path": "/sandbox/outputs", "type": "dir" },
                { "path": "/sandbox/shared", "type": "dir" },
                { "path": "/sandbox/skills", "type": "dir" },
                { "path": "/sandbox/user_uploads", "type": "dir" },
                { "path": "/sandbox/workspace", "type": "dir" },
            ]})
        );
    }
    let shared = app
        .get(&t.url("/sandbox?dir=/sandbox/shared"), &t.agent)
        .await
        .json();
    assert_eq!(
        paths_and_types(&shared),
        pairs(&[
            ("/sandbox/shared/drafts", "dir"),
            ("/sandbox/shared/research", "dir")
        ])
    );
}

#[tokio::test]
async fn listings_are_sorted_sandbox_paths_recursive_lists_files_only() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for (path, bytes) in [
        ("outputs/b.md", &b"bb"[..]),
        ("outputs/a.md", b"a"),
        ("outputs/sub/c.md", b"ccc"),
        ("outputs/sub/deep/d.md", b"dddd"),
        ("outputs/B.md", b"B"),
        ("workspace/elsewhere.txt", b"not listed"),
    ] {
        put_file(&app, &t, path, bytes).await;
    }
    let direct = app
        .get(&t.url("/sandbox?dir=/sandbox/outputs"), &t.agent)
        .await;
    direct.expect(200, None);
    let direct = direct.json();
    assert_eq!(
        paths_and_types(&direct),
        pairs(&[
            ("/sandbox/outputs/B.md", "file"),
            ("/sandbox/outputs/a.md", "file"),
            ("/sandbox/outputs/b.md", "file"),
            ("/sandbox/outputs/sub", "dir"),
        ])
    );
    let b = &direct["files"][2];
    assert_eq!(b["size"], 2);
    assert!(b["etag"].as_str().unwrap().starts_with('"'), "{b}");
    assert!(b["updatedAt"].as_str().unwrap().ends_with('Z'), "{b}");
    assert_eq!(
        direct["files"][3],
        json!({ "path": "/sandbox/outputs/sub", "type": "dir" })
    );

    let recursive = app
        .get(
            &t.url("/sandbox?dir=/sandbox/outputs&recursive=true"),
            &t.agent,
        )
        .await
        .json();
    assert_eq!(
        paths_and_types(&recursive),
        pairs(&[
            ("/sandbox/outputs/B.md", "file"),
            ("/sandbox/outputs/a.md", "file"),
            ("/sandbox/outputs/b.md", "file"),
            ("/sandbox/outputs/sub/c.md", "file"),
            ("/sandbox/outputs/sub/deep/d.md", "file"),
        ])
    );
    // The listed path is ready to hand to publish.
    let published = thread_support::publish(&app, &t, "/sandbox/outputs/sub/deep/d.md", "D").await;
    published.expect(201, None);
    assert_eq!(
        published.json()["sandbox_path"],
        "/sandbox/outputs/sub/deep/d.md"
    );

    // The whole sandbox, recursively: files only, including the other folder.
    let all = app
        .get(&t.url("/sandbox?recursive=true"), &t.agent)
        .await
        .json();
    let all_paths: Vec<String> = paths_and_types(&all).into_iter().map(|(p, _)| p).collect();
    let mut sorted = all_paths.clone();
    sorted.sort();
    assert_eq!(all_paths, sorted);
    assert!(all_paths.contains(&"/sandbox/workspace/elsewhere.txt".to_owned()));
    assert!(paths_and_types(&all).iter().all(|(_, kind)| kind == "file"));

    // A folder that does not exist lists nothing; a trailing slash is the same folder.
    let missing = app
        .get(
            &t.url("/sandbox?dir=/sandbox/outputs/nothing-here"),
            &t.agent,
        )
        .await;
    missing.expect(200, None);
    assert_eq!(missing.json()["files"], json!([]));
    let slash = app
        .get(&t.url("/sandbox?dir=/sandbox/outputs/"), &t.agent)
        .await
        .json();
    assert_eq!(slash, direct);

    // A folder outside the sandbox is a bad path, not an empty list.
    for dir in ["/etc", "/sandbox/../etc", "/sandbox/outputs/../../etc"] {
        app.get(&t.url(&format!("/sandbox?dir={dir}")), &t.agent)
            .await
            .expect(400, Some("INVALID_PATH"));
    }
}

#[tokio::test]
async fn reads_have_validators_ranges_and_head() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let written = app
        .put(
            &t.url("/sandbox/outputs/report.md"),
            &t.agent,
            "text/markdown",
            b"# Report\nline two\n",
        )
        .await;
    written.expect(201, None);
    let etag = written.json()["etag"].as_str().unwrap().to_owned();
    assert_eq!(written.json()["path"], "/sandbox/outputs/report.md");
    assert_eq!(written.json()["size"], 18);

    // The owner and the agent both read it.
    for token in [&t.agent, &t.user] {
        let read = app.get(&t.url("/sandbox/outputs/report.md"), token).await;
        read.expect(200, None);
        assert_eq!(read.body, b"# Report\nline two\n");
        assert_eq!(read.header("etag"), Some(etag.as_str()));
        assert_eq!(read.header("content-length"), Some("18"));
        assert!(
            read.header("content-type")
                .unwrap()
                .starts_with("text/markdown")
        );
        assert!(read.header("last-modified").unwrap().ends_with(" GMT"));
    }

    let cached = app
        .send(
            "GET",
            &t.url("/sandbox/outputs/report.md"),
            Some(&t.agent),
            &[("if-none-match", etag.as_str())],
            Body::empty(),
        )
        .await;
    cached.expect(304, None);
    assert!(cached.body.is_empty());
    let stale = app
        .send(
            "GET",
            &t.url("/sandbox/outputs/report.md"),
            Some(&t.agent),
            &[("if-none-match", "\"not-the-tag\"")],
            Body::empty(),
        )
        .await;
    stale.expect(200, None);

    let part = app
        .send(
            "GET",
            &t.url("/sandbox/outputs/report.md"),
            Some(&t.agent),
            &[("range", "bytes=2-7")],
            Body::empty(),
        )
        .await;
    part.expect(206, None);
    assert_eq!(part.body, b"Report");
    assert_eq!(part.header("content-range"), Some("bytes 2-7/18"));
    assert_eq!(part.header("content-length"), Some("6"));
    let tail = app
        .send(
            "GET",
            &t.url("/sandbox/outputs/report.md"),
            Some(&t.agent),
            &[("range", "bytes=-4")],
            Body::empty(),
        )
        .await;
    tail.expect(206, None);
    assert_eq!(tail.body, b"two\n");

    let head = app
        .send(
            "HEAD",
            &t.url("/sandbox/outputs/report.md"),
            Some(&t.agent),
            &[],
            Body::empty(),
        )
        .await;
    head.expect(200, None);
    assert!(head.body.is_empty());
    assert_eq!(head.header("content-length"), Some("18"));
    assert_eq!(head.header("etag"), Some(etag.as_str()));

    app.get(&t.url("/sandbox/outputs/missing.md"), &t.agent)
        .await
        .expect(404, Some("NOT_FOUND"));
    // A folder is not a file.
    let folder = app.get(&t.url("/sandbox/outputs"), &t.agent).await;
    assert_eq!(folder.status.as_u16() / 100, 4, "{}", folder.text());
}

#[tokio::test]
async fn writes_follow_the_spaces_rules() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let url = t.url("/sandbox/outputs/notes.md");

    let untyped = app
        .send("PUT", &url, Some(&t.agent), &[], Body::from("x"))
        .await;
    untyped.expect(415, Some("UNSUPPORTED_MEDIA_TYPE"));
    app.get(&url, &t.agent).await.expect(404, Some("NOT_FOUND"));

    let created = app.put(&url, &t.agent, "text/markdown", b"v1").await;
    created.expect(201, None);
    assert_eq!(created.json()["contentType"], "text/markdown");
    let v1 = created.json()["etag"].as_str().unwrap().to_owned();
    assert_eq!(created.header("etag"), Some(v1.as_str()));

    let over = app.put(&url, &t.agent, "text/markdown", b"v2!").await;
    over.expect(200, None);
    let v2 = over.json()["etag"].as_str().unwrap().to_owned();
    assert_ne!(v1, v2);
    assert_eq!(app.get(&url, &t.agent).await.body, b"v2!");

    // Create-only: refused when it exists, allowed when it does not.
    app.send(
        "PUT",
        &url,
        Some(&t.agent),
        &[("content-type", "text/plain"), ("if-none-match", "*")],
        Body::from("v3"),
    )
    .await
    .expect(409, Some("ALREADY_EXISTS"));
    assert_eq!(app.get(&url, &t.agent).await.body, b"v2!");
    app.send(
        "PUT",
        &t.url("/sandbox/outputs/fresh.md"),
        Some(&t.agent),
        &[("content-type", "text/plain"), ("if-none-match", "*")],
        Body::from("fresh"),
    )
    .await
    .expect(201, None);

    // Optimistic concurrency.
    app.send(
        "PUT",
        &url,
        Some(&t.agent),
        &[("content-type", "text/plain"), ("if-match", v1.as_str())],
        Body::from("stale writer"),
    )
    .await
    .expect(412, Some("PRECONDITION_FAILED"));
    assert_eq!(app.get(&url, &t.agent).await.body, b"v2!");
    app.send(
        "PUT",
        &url,
        Some(&t.agent),
        &[("content-type", "text/plain"), ("if-match", v2.as_str())],
        Body::from("current writer"),
    )
    .await
    .expect(200, None);
    assert_eq!(app.get(&url, &t.agent).await.body, b"current writer");
    app.send(
        "PUT",
        &t.url("/sandbox/outputs/never.md"),
        Some(&t.agent),
        &[("content-type", "text/plain"), ("if-match", v2.as_str())],
        Body::from("x"),
    )
    .await
    .expect(412, Some("PRECONDITION_FAILED"));

    // Parent folders are made as needed; the write shows up on the host.
    app.put(
        &t.url("/sandbox/shared/drafts/a/b/c.txt"),
        &t.agent,
        "text/plain",
        b"deep",
    )
    .await
    .expect(201, None);
    let dir = sandbox_dir(&app, &t).await;
    assert_eq!(
        std::fs::read(dir.join("shared/drafts/a/b/c.txt")).unwrap(),
        b"deep"
    );
}

#[tokio::test]
async fn the_owner_and_strangers_cannot_write() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    app.put(
        &t.url("/sandbox/outputs/x.txt"),
        &t.user,
        "text/plain",
        b"x",
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    app.put(
        &t.url("/sandbox/outputs/x.txt"),
        &app.user("bob"),
        "text/plain",
        b"x",
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    // service_role acts for the agent.
    app.put(
        &t.url("/sandbox/outputs/x.txt"),
        &app.service(None),
        "text/plain",
        b"from the orchestrator",
    )
    .await
    .expect(201, None);
    app.get(&t.url("/sandbox/outputs/x.txt"), &t.user)
        .await
        .expect(200, None);
}

fn tmp_left(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    files_below(&dir.join(".ferry-tmp"), &[])
}

#[tokio::test]
async fn over_the_limit_is_413_from_content_length_and_while_streaming() {
    const LIMIT: u64 = 64 * 1024;
    let app = TestApp::with(|c| c.app.limits.sandbox_max_bytes = LIMIT).await;
    let t = thread(&app, "alice").await;
    let dir = sandbox_dir(&app, &t).await;
    let addr = app.spawn().await;
    let client = reqwest::Client::new();
    let url = |name: &str| format!("http://{addr}/api/threads/{}/sandbox/outputs/{name}", t.id);

    // Exactly the limit is fine.
    let exact = client
        .put(url("exact.bin"))
        .bearer_auth(&t.agent)
        .header("content-type", BIN)
        .body(vec![7u8; LIMIT as usize])
        .send()
        .await
        .unwrap();
    assert_eq!(exact.status().as_u16(), 201);

    // One byte more, with a Content-Length.
    let declared = client
        .put(url("declared.bin"))
        .bearer_auth(&t.agent)
        .header("content-type", BIN)
        .body(vec![7u8; LIMIT as usize + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(declared.status().as_u16(), 413);
    let body: serde_json::Value = declared.json().await.unwrap();
    assert_eq!(body["error"]["code"], "REQUEST_TOO_LARGE");

    // A Content-Length alone decides it: the body is not read.
    app.send(
        "PUT",
        &t.url("/sandbox/outputs/claimed.bin"),
        Some(&t.agent),
        &[("content-type", BIN), ("content-length", "10000000")],
        Body::from(vec![1u8; 10]),
    )
    .await
    .expect(413, Some("REQUEST_TOO_LARGE"));

    // Chunked, twice the limit, no Content-Length.
    let chunks = futures::stream::iter((0..16).map(|_| Ok::<_, std::io::Error>(vec![1u8; 8192])));
    let sent = client
        .put(url("chunked.bin"))
        .bearer_auth(&t.agent)
        .header("content-type", BIN)
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await;
    // The server answers 413 as soon as the limit is passed; the client may see that answer or
    // a connection closed under its remaining chunks.
    if let Ok(reply) = sent {
        assert_eq!(reply.status().as_u16(), 413);
        let body: serde_json::Value = reply.json().await.unwrap();
        assert_eq!(body["error"]["code"], "REQUEST_TOO_LARGE");
    }

    // Nothing was left behind: no file, no partial file, nothing listed.
    for name in ["declared.bin", "claimed.bin", "chunked.bin"] {
        assert!(!dir.join("outputs").join(name).exists(), "{name}");
        app.get(&t.url(&format!("/sandbox/outputs/{name}")), &t.agent)
            .await
            .expect(404, Some("NOT_FOUND"));
    }
    assert_eq!(tmp_left(&dir), Vec::<std::path::PathBuf>::new());
    let listed = app
        .get(
            &t.url("/sandbox?dir=/sandbox/outputs&recursive=true"),
            &t.agent,
        )
        .await
        .json();
    assert_eq!(
        paths_and_types(&listed),
        pairs(&[("/sandbox/outputs/exact.bin", "file")])
    );
}

#[tokio::test]
async fn an_overwrite_over_the_limit_keeps_the_old_bytes() {
    let app = TestApp::with(|c| c.app.limits.sandbox_max_bytes = 1024).await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/keep.txt", b"old").await;
    app.put(
        &t.url("/sandbox/outputs/keep.txt"),
        &t.agent,
        BIN,
        &[0u8; 2048],
    )
    .await
    .expect(413, Some("REQUEST_TOO_LARGE"));
    assert_eq!(
        app.get(&t.url("/sandbox/outputs/keep.txt"), &t.agent)
            .await
            .body,
        b"old"
    );
}

// ---------------------------------------------------------------------------------------------
// Links planted inside the sandbox, and paths that try to leave it.

/// A thread whose sandbox holds a real file `workspace/real.txt`, and its host folder.
async fn planted() -> (TestApp, Thread, std::path::PathBuf) {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "workspace/real.txt", b"inside the sandbox").await;
    let dir = sandbox_dir(&app, &t).await;
    (app, t, dir)
}

async fn expect_invalid_path(app: &TestApp, t: &Thread, rel: &str) {
    for token in [&t.agent, &t.user] {
        let read = app.get(&t.url(&format!("/sandbox/{rel}")), token).await;
        read.expect(400, Some("INVALID_PATH"));
        assert!(!read.text().contains("root:"), "{}", read.text());
    }
    let head = app
        .send(
            "HEAD",
            &t.url(&format!("/sandbox/{rel}")),
            Some(&t.agent),
            &[],
            Body::empty(),
        )
        .await;
    assert_eq!(head.status.as_u16(), 400, "HEAD {rel}");
}

#[tokio::test]
async fn a_symlinked_folder_to_etc_is_refused() {
    let (app, t, dir) = planted().await;
    symlink("/etc", dir.join("outputs/etc-link")).unwrap();
    expect_invalid_path(&app, &t, "outputs/etc-link/passwd").await;
    expect_invalid_path(&app, &t, "outputs/etc-link/hostname").await;
    // Listing through it shows nothing of /etc.
    let listed = app
        .get(&t.url("/sandbox?dir=/sandbox/outputs/etc-link"), &t.agent)
        .await;
    listed.expect(400, Some("INVALID_PATH"));
    let all = app.get(&t.url("/sandbox?recursive=true"), &t.agent).await;
    all.expect(200, None);
    assert!(!all.text().contains("passwd"), "{}", all.text());
    assert!(!all.text().contains("etc-link"), "{}", all.text());
}

#[tokio::test]
async fn a_symlink_to_a_file_outside_is_refused() {
    let (app, t, dir) = planted().await;
    symlink("/etc/passwd", dir.join("outputs/passwd")).unwrap();
    expect_invalid_path(&app, &t, "outputs/passwd").await;
}

#[tokio::test]
async fn a_relative_symlink_climbing_out_is_refused() {
    let (app, t, dir) = planted().await;
    symlink(
        "../../../../../../../../../../etc/passwd",
        dir.join("outputs/climb.txt"),
    )
    .unwrap();
    expect_invalid_path(&app, &t, "outputs/climb.txt").await;

    // Climbing just far enough to reach another thread's sandbox is refused too.
    let other = thread(&app, "bob").await;
    put_file(&app, &other, "outputs/secret.txt", b"bob's secret").await;
    symlink(
        format!("../../{}/outputs/secret.txt", other.id),
        dir.join("outputs/neighbour.txt"),
    )
    .unwrap();
    symlink("../..", dir.join("outputs/all-sandboxes")).unwrap();
    for rel in [
        "outputs/neighbour.txt".to_owned(),
        format!("outputs/all-sandboxes/{}/outputs/secret.txt", other.id),
    ] {
        let read = app.get(&t.url(&format!("/sandbox/{rel}")), &t.agent).await;
        read.expect(400, Some("INVALID_PATH"));
        assert!(!read.text().contains("bob's secret"));
    }
}

#[tokio::test]
async fn a_dangling_symlink_is_refused() {
    let (app, t, dir) = planted().await;
    symlink("no-such-file.txt", dir.join("outputs/dangling.txt")).unwrap();
    expect_invalid_path(&app, &t, "outputs/dangling.txt").await;
    symlink("/no/such/place.txt", dir.join("outputs/dangling-abs.txt")).unwrap();
    expect_invalid_path(&app, &t, "outputs/dangling-abs.txt").await;
}

#[tokio::test]
async fn a_hard_link_to_a_file_outside_is_refused() {
    let (app, t, dir) = planted().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), b"outside secret").unwrap();
    std::fs::hard_link(
        outside.path().join("secret.txt"),
        dir.join("outputs/hard.txt"),
    )
    .expect("the test's temporary folders share a file system");
    expect_invalid_path(&app, &t, "outputs/hard.txt").await;
    let listed = app
        .get(&t.url("/sandbox?dir=/sandbox/outputs"), &t.agent)
        .await;
    assert!(!listed.text().contains("outside secret"));
}

#[tokio::test]
async fn a_symlink_that_stays_inside_still_works() {
    let (app, t, dir) = planted().await;
    symlink("../workspace/real.txt", dir.join("outputs/alias.txt")).unwrap();
    symlink("../workspace", dir.join("outputs/ws")).unwrap();
    for rel in ["outputs/alias.txt", "outputs/ws/real.txt"] {
        let read = app.get(&t.url(&format!("/sandbox/{rel}")), &t.agent).await;
        read.expect(200, None);
        assert_eq!(read.body, b"inside the sandbox", "{rel}");
    }
    // It can be published and sent like any file.
    thread_support::publish(&app, &t, "/sandbox/outputs/alias.txt", "Alias")
        .await
        .expect(201, None);
    app.post_json(
        &t.url("/send-file"),
        &t.agent,
        json!({ "filePath": "/sandbox/outputs/alias.txt" }),
    )
    .await
    .expect(200, None);
}

#[tokio::test]
async fn traversal_in_the_url_is_refused_before_anything_is_touched() {
    let (app, t, dir) = planted().await;
    let addr = app.spawn().await;
    for path in [
        "outputs/../../../../etc/passwd",
        "../../../../etc/passwd",
        "..",
        "%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "outputs/%2E%2E/%2E%2E/%2E%2E/etc/passwd",
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "outputs%5C..%5C..%5Cetc%5Cpasswd",
        "outputs%5Cx.txt",
        "outputs/a%00.txt",
        "outputs/a%00/../../x",
        "outputs/a%01.txt",
        "outputs/a%7F.txt",
        "outputs/./x.txt",
        "outputs//x.txt",
        "%2Fetc%2Fpasswd",
    ] {
        for method in ["GET", "PUT"] {
            let request = format!(
                "{method} /api/threads/{}/sandbox/{path} HTTP/1.1\r\nHost: x\r\n\
                 Authorization: Bearer {}\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\
                 Connection: close\r\n\r\nx",
                t.id, t.agent
            );
            let (status, body) = raw_http(addr, &request).await;
            assert_eq!(status, 400, "{method} {path}: {body}");
            let json: serde_json::Value = serde_json::from_str(&body)
                .unwrap_or_else(|e| panic!("{method} {path}: {e}: {body}"));
            assert_eq!(json["error"]["code"], "INVALID_PATH", "{method} {path}");
            assert!(!body.contains("root:"));
        }
    }
    // Nothing was written: the sandbox holds only what the test put there.
    let written: Vec<String> = files_below(&dir, &[".ferry-tmp"])
        .iter()
        .map(|p| p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, ["workspace/real.txt"]);
    assert!(!dir.parent().unwrap().join("x").exists());
}

#[tokio::test]
async fn writes_through_planted_links_never_land_outside() {
    let (app, t, dir) = planted().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("target.txt"), b"original").unwrap();
    symlink(outside.path(), dir.join("outputs/linkdir")).unwrap();
    symlink(
        outside.path().join("target.txt"),
        dir.join("outputs/file-link.txt"),
    )
    .unwrap();
    symlink(
        outside.path().join("created.txt"),
        dir.join("outputs/dangling-out.txt"),
    )
    .unwrap();

    for rel in [
        "outputs/linkdir/x.txt",
        "outputs/linkdir/target.txt",
        "outputs/linkdir/sub/y.txt",
        "outputs/file-link.txt",
        "outputs/dangling-out.txt",
    ] {
        let reply = app
            .put(
                &t.url(&format!("/sandbox/{rel}")),
                &t.agent,
                "text/plain",
                b"pwned",
            )
            .await;
        // Refused; which error is checked below and in
        // `a_write_into_a_symlinked_folder_is_an_invalid_path`.
        assert_eq!(
            reply.status.as_u16() / 100,
            4,
            "PUT {rel}: {}",
            reply.text()
        );
        if !rel.starts_with("outputs/linkdir/") || rel.matches('/').count() > 2 {
            assert_eq!(
                reply.json()["error"]["code"],
                "INVALID_PATH",
                "PUT {rel}: {}",
                reply.text()
            );
        }
        let created_only = app
            .send(
                "PUT",
                &t.url(&format!("/sandbox/{rel}")),
                Some(&t.agent),
                &[("content-type", "text/plain"), ("if-none-match", "*")],
                Body::from("pwned"),
            )
            .await;
        assert_eq!(
            created_only.status.as_u16() / 100,
            4,
            "{rel}: {}",
            created_only.text()
        );
    }
    // The outside folder is exactly as it was.
    let outside_files: Vec<_> = files_below(outside.path(), &[]);
    assert_eq!(outside_files, [outside.path().join("target.txt")]);
    assert_eq!(
        std::fs::read(outside.path().join("target.txt")).unwrap(),
        b"original"
    );
    assert!(tmp_left(&dir).is_empty());
}

#[tokio::test]
async fn publish_and_send_file_refuse_links_that_leave() {
    let (app, t, dir) = planted().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), b"outside secret").unwrap();
    symlink("/etc", dir.join("outputs/etc-link")).unwrap();
    symlink("/etc/hostname", dir.join("outputs/host.txt")).unwrap();
    symlink(
        "../../../../../../../etc/hostname",
        dir.join("outputs/climb.txt"),
    )
    .unwrap();
    symlink("missing.txt", dir.join("outputs/dangling.txt")).unwrap();
    std::fs::hard_link(
        outside.path().join("secret.txt"),
        dir.join("outputs/hard.txt"),
    )
    .unwrap();
    for path in [
        "/sandbox/outputs/etc-link/hostname",
        "/sandbox/outputs/host.txt",
        "/sandbox/outputs/climb.txt",
        "/sandbox/outputs/dangling.txt",
        "/sandbox/outputs/hard.txt",
        "/sandbox/../etc/hostname",
        "/etc/hostname",
    ] {
        app.post_json(
            &t.url("/published"),
            &t.agent,
            json!({ "file_path": path, "display_name": path }),
        )
        .await
        .expect(400, Some("INVALID_PATH"));
        app.post_json(&t.url("/send-file"), &t.agent, json!({ "filePath": path }))
            .await
            .expect(400, Some("INVALID_PATH"));
    }
    // Nothing was published or sent.
    assert_eq!(
        app.get(&t.url("/published"), &t.agent).await.json()["files"],
        json!([])
    );
    let events = thread_support::stored_events(&app, &t, &t.agent).await;
    assert!(
        events
            .iter()
            .all(|e| e["type"] != "file_published" && e["type"] != "file_send"),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_write_into_a_symlinked_folder_is_an_invalid_path() {
    let (app, t, dir) = planted().await;
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), dir.join("outputs/linkdir")).unwrap();
    for rel in ["outputs/linkdir/x.txt", "outputs/linkdir/y.md"] {
        app.put(
            &t.url(&format!("/sandbox/{rel}")),
            &t.agent,
            "text/plain",
            b"pwned",
        )
        .await
        .expect(400, Some("INVALID_PATH"));
    }
    assert!(files_below(outside.path(), &[]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_of_racing_create_only_writes_wins() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let addr = app.spawn().await;
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/api/threads/{}/sandbox/outputs/once.md", t.id);
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(16));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (client, url, token, barrier) = (
                client.clone(),
                url.clone(),
                t.agent.clone(),
                barrier.clone(),
            );
            tokio::spawn(async move {
                barrier.wait().await;
                let reply = client
                    .put(&url)
                    .bearer_auth(&token)
                    .header("content-type", "text/markdown")
                    .header("if-none-match", "*")
                    .body(format!("writer {i}"))
                    .send()
                    .await
                    .unwrap();
                (i, reply.status().as_u16())
            })
        })
        .collect();
    let mut winners = Vec::new();
    for task in tasks {
        let (i, status) = task.await.unwrap();
        match status {
            201 => winners.push(i),
            409 => {}
            other => panic!("writer {i}: {other}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let stored = app.get(&t.url("/sandbox/outputs/once.md"), &t.agent).await;
    assert_eq!(stored.body, format!("writer {}", winners[0]).as_bytes());
}

/// Runs a request on a FIFO planted in the sandbox; `None` when it never answers (then the FIFO
/// is opened for writing, which releases the server's reader).
async fn on_fifo(
    fifo: &std::path::Path,
    request: impl std::future::Future<Output = support::Reply>,
) -> Option<support::Reply> {
    // A guard against a request that never ends, not a timing.
    match tokio::time::timeout(std::time::Duration::from_secs(10), request).await {
        Ok(reply) => Some(reply),
        Err(_) => {
            let _ = std::fs::OpenOptions::new().write(true).open(fifo);
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_fifo_is_refused_not_waited_on() {
    let (app, t, dir) = planted().await;
    let fifo = dir.join("outputs/pipe.txt");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let read = on_fifo(
        &fifo,
        app.get(&t.url("/sandbox/outputs/pipe.txt"), &t.agent),
    )
    .await;
    let published = on_fifo(
        &fifo,
        thread_support::publish(&app, &t, "/sandbox/outputs/pipe.txt", "Pipe"),
    )
    .await;
    let sent = on_fifo(
        &fifo,
        app.post_json(
            &t.url("/send-file"),
            &t.agent,
            json!({ "filePath": "/sandbox/outputs/pipe.txt" }),
        ),
    )
    .await;
    let hung: Vec<&str> = [
        ("GET", &read),
        ("publish", &published),
        ("send-file", &sent),
    ]
    .iter()
    .filter(|(_, r)| r.is_none())
    .map(|(name, _)| *name)
    .collect();
    assert!(hung.is_empty(), "never answered: {hung:?}");
    for reply in [read, published, sent].into_iter().flatten() {
        reply.expect(400, Some("INVALID_PATH"));
    }
    // The listing skips it.
    let listed = app
        .get(&t.url("/sandbox?dir=/sandbox/outputs"), &t.agent)
        .await;
    assert!(!listed.text().contains("pipe.txt"), "{}", listed.text());
}

#[tokio::test]
async fn a_planted_temporary_folder_link_does_not_redirect_writes() {
    let (app, t, dir) = planted().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::remove_dir_all(dir.join(".ferry-tmp")).unwrap();
    symlink(outside.path(), dir.join(".ferry-tmp")).unwrap();
    let reply = app
        .put(
            &t.url("/sandbox/outputs/x.txt"),
            &t.agent,
            "text/plain",
            b"pwned",
        )
        .await;
    // Whether the write succeeds another way or is refused, nothing lands outside.
    assert_ne!(reply.status.as_u16(), 500, "{}", reply.text());
    assert!(files_below(outside.path(), &[]).is_empty());
}

/// Waits (with a generous guard) until `check` holds; the guard only catches a state that never
/// comes.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !check() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_write_cut_off_by_the_client_leaves_nothing() {
    use tokio::io::AsyncWriteExt;
    let (app, t, dir) = planted().await;
    put_file(&app, &t, "outputs/kept.txt", b"old bytes").await;
    let addr = app.spawn().await;
    for target in ["outputs/new.bin", "outputs/kept.txt"] {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(
                format!(
                    "PUT /api/threads/{}/sandbox/{target} HTTP/1.1\r\nHost: x\r\n\
                     Authorization: Bearer {}\r\nContent-Type: application/octet-stream\r\n\
                     Content-Length: 10000000\r\n\r\n",
                    t.id, t.agent
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        stream.write_all(&vec![b'p'; 2 << 20]).await.unwrap();
        eventually("the server spools the body", || !tmp_left(&dir).is_empty()).await;
        drop(stream);
        eventually("the partial body is removed", || tmp_left(&dir).is_empty()).await;
    }
    app.get(&t.url("/sandbox/outputs/new.bin"), &t.agent)
        .await
        .expect(404, Some("NOT_FOUND"));
    assert_eq!(
        app.get(&t.url("/sandbox/outputs/kept.txt"), &t.agent)
            .await
            .body,
        b"old bytes"
    );
}
