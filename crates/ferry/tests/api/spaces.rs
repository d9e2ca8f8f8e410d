//! Spaces (docs/reference/spaces.md) through the router, in-process: every route and every
//! error it can give.
//!
//! Why one file: one route family, `/api/spaces/…`, from the user's side; each test is one
//! behaviour of those routes (listing, paging, conditional reads and writes, limits, isolation,
//! tokens, paths), so the family's whole contract reads in one place. The agent's file
//! operations on spaces are tested with the agent's file system (agent_files.rs), and the
//! router's own answers (unknown routes, operations routes, the OpenAPI document) at the end.

use crate::support::TestApp;
use axum::body::Body;

const MD: &str = "text/markdown; charset=utf-8";

#[tokio::test]
async fn write_read_list_round_trip() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    let created = app
        .put(
            "/api/spaces/notes/files/ideas/20261121-0930-tea-shop.md",
            &alice,
            MD,
            b"# Tea shop\n",
        )
        .await;
    created.expect(201, None);
    let body = created.json();
    assert_eq!(body["path"], "ideas/20261121-0930-tea-shop.md");
    assert_eq!(body["size"], 11);
    assert_eq!(body["contentType"], MD);
    let etag = body["etag"].as_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'));
    assert_eq!(created.header("etag"), Some(etag.as_str()));

    let read = app
        .get(
            "/api/spaces/notes/files/ideas/20261121-0930-tea-shop.md",
            &alice,
        )
        .await;
    read.expect(200, None);
    assert_eq!(read.body, b"# Tea shop\n");
    assert_eq!(read.header("content-type"), Some(MD));
    assert_eq!(read.header("etag"), Some(etag.as_str()));
    assert_eq!(read.header("content-length"), Some("11"));
    assert!(read.header("last-modified").unwrap().ends_with(" GMT"));

    let list = app.get("/api/spaces/notes/files?dir=ideas", &alice).await;
    list.expect(200, None);
    let files = &list.json()["files"];
    assert_eq!(files.as_array().unwrap().len(), 1);
    assert_eq!(files[0]["path"], "ideas/20261121-0930-tea-shop.md");
    assert_eq!(files[0]["type"], "file");
    assert_eq!(files[0]["size"], 11);
    assert_eq!(files[0]["contentType"], MD);
    assert_eq!(files[0]["etag"], etag.as_str());
    assert!(files[0]["updatedAt"].as_str().unwrap().ends_with('Z'));

    // Overwrite: 200, new bytes, new ETag.
    let over = app
        .put(
            "/api/spaces/notes/files/ideas/20261121-0930-tea-shop.md",
            &alice,
            MD,
            b"# Tea shop v2\n",
        )
        .await;
    over.expect(200, None);
    assert_ne!(over.json()["etag"], etag.as_str());
    let read = app
        .get(
            "/api/spaces/notes/files/ideas/20261121-0930-tea-shop.md",
            &alice,
        )
        .await;
    assert_eq!(read.body, b"# Tea shop v2\n");
}

#[tokio::test]
async fn listing_shapes_sorting_and_folders() {
    let app = TestApp::new().await;
    let u = app.user("u");
    for path in ["b.md", "a/2.md", "a/1.md", "a/deep/x.md", "c/y.md", "A.md"] {
        app.put(
            &format!("/api/spaces/s/files/{path}"),
            &u,
            "text/plain",
            b"x",
        )
        .await
        .expect(201, None);
    }
    let root = app.get("/api/spaces/s/files", &u).await.json();
    let entries: Vec<(String, String)> = root["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().into(),
                e["type"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("A.md", "file"),
            ("a", "dir"),
            ("b.md", "file"),
            ("c", "dir")
        ]
        .map(|(p, t)| (p.to_string(), t.to_string()))
    );
    // Folders carry only path and type.
    assert_eq!(
        root["files"][1],
        serde_json::json!({"path": "a", "type": "dir"})
    );

    let a = app.get("/api/spaces/s/files?dir=a", &u).await.json();
    let paths: Vec<&str> = a["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a/1.md", "a/2.md", "a/deep"]);

    let all = app
        .get("/api/spaces/s/files?recursive=true", &u)
        .await
        .json();
    let paths: Vec<&str> = all["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["A.md", "a/1.md", "a/2.md", "a/deep/x.md", "b.md", "c/y.md"]
    );
    assert!(
        all["files"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["type"] == "file")
    );

    let under_a = app
        .get("/api/spaces/s/files?dir=a&recursive=true", &u)
        .await
        .json();
    assert_eq!(under_a["files"].as_array().unwrap().len(), 3);

    // Missing space or folder: 200 and nothing.
    let none = app.get("/api/spaces/nothing-here/files", &u).await;
    none.expect(200, None);
    assert_eq!(none.json(), serde_json::json!({"files": []}));
    let none = app.get("/api/spaces/s/files?dir=zzz", &u).await;
    assert_eq!(none.json(), serde_json::json!({"files": []}));
}

#[tokio::test]
async fn pagination_walks_every_entry_once() {
    let app = TestApp::new().await;
    let u = app.user("u");
    let mut expected = Vec::new();
    for i in 0..25 {
        let path = format!("p/{i:03}.txt");
        app.put(
            &format!("/api/spaces/s/files/{path}"),
            &u,
            "text/plain",
            b"x",
        )
        .await
        .expect(201, None);
        expected.push(path);
    }
    for recursive in [true, false] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let mut uri = format!("/api/spaces/s/files?dir=p&recursive={recursive}&limit=10");
            if let Some(c) = &cursor {
                uri.push_str(&format!("&cursor={c}"));
            }
            let page = app.get(&uri, &u).await.json();
            pages += 1;
            for e in page["files"].as_array().unwrap() {
                seen.push(e["path"].as_str().unwrap().to_owned());
            }
            match page.get("nextCursor").and_then(|c| c.as_str()) {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(seen, expected);
    }
    app.get("/api/spaces/s/files?limit=0", &u)
        .await
        .expect(400, Some("INVALID_REQUEST"));
    app.get("/api/spaces/s/files?cursor=bm9wZQ", &u)
        .await
        .expect(400, Some("INVALID_REQUEST"));
    app.get("/api/spaces/s/files?limit=abc", &u)
        .await
        .expect(400, Some("INVALID_REQUEST"));
    app.get("/api/spaces/s/files?recursive=maybe", &u)
        .await
        .expect(400, Some("INVALID_REQUEST"));
    // Above the maximum is lowered, not refused.
    app.get("/api/spaces/s/files?limit=20000", &u)
        .await
        .expect(200, None);
}

#[tokio::test]
async fn conditional_reads() {
    let app = TestApp::new().await;
    let u = app.user("u");
    let etag = app
        .put("/api/spaces/s/files/f.txt", &u, "text/plain", b"0123456789")
        .await
        .json()["etag"]
        .as_str()
        .unwrap()
        .to_owned();
    let not_modified = app
        .send(
            "GET",
            "/api/spaces/s/files/f.txt",
            Some(&u),
            &[("if-none-match", &etag)],
            Body::empty(),
        )
        .await;
    not_modified.expect(304, None);
    assert!(not_modified.body.is_empty());
    assert_eq!(not_modified.header("etag"), Some(etag.as_str()));
    app.send(
        "GET",
        "/api/spaces/s/files/f.txt",
        Some(&u),
        &[("if-none-match", "\"other\"")],
        Body::empty(),
    )
    .await
    .expect(200, None);

    // If-Match (strong), and the dates, as RFC 9110 orders them — the evaluation the S3
    // door uses too.
    let read = |headers: Vec<(&'static str, String)>| {
        let (app, u) = (&app, &u);
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            app.send(
                "GET",
                "/api/spaces/s/files/f.txt",
                Some(u),
                &headers,
                Body::empty(),
            )
            .await
        }
    };
    read(vec![("if-match", etag.clone())])
        .await
        .expect(200, None);
    read(vec![("if-match", "\"other\"".into())])
        .await
        .expect(412, Some("PRECONDITION_FAILED"));
    read(vec![("if-match", format!("W/{etag}"))])
        .await
        .expect(412, Some("PRECONDITION_FAILED"));
    let long_ago = "Mon, 01 Jan 2001 00:00:00 GMT".to_owned();
    let to_come = "Fri, 01 Jan 2100 00:00:00 GMT".to_owned();
    read(vec![("if-unmodified-since", long_ago.clone())])
        .await
        .expect(412, Some("PRECONDITION_FAILED"));
    read(vec![("if-unmodified-since", to_come.clone())])
        .await
        .expect(200, None);
    read(vec![("if-modified-since", to_come.clone())])
        .await
        .expect(304, None);
    read(vec![("if-modified-since", long_ago.clone())])
        .await
        .expect(200, None);
    // A matching If-Match wins over a stale date; a malformed condition is ignored.
    read(vec![
        ("if-match", etag.clone()),
        ("if-unmodified-since", long_ago),
    ])
    .await
    .expect(200, None);
    read(vec![
        ("if-match", "not a tag".into()),
        ("if-modified-since", "yesterday".into()),
    ])
    .await
    .expect(200, None);

    let part = app
        .send(
            "GET",
            "/api/spaces/s/files/f.txt",
            Some(&u),
            &[("range", "bytes=2-5")],
            Body::empty(),
        )
        .await;
    part.expect(206, None);
    assert_eq!(part.body, b"2345");
    assert_eq!(part.header("content-range"), Some("bytes 2-5/10"));
    assert_eq!(part.header("content-length"), Some("4"));
    let tail = app
        .send(
            "GET",
            "/api/spaces/s/files/f.txt",
            Some(&u),
            &[("range", "bytes=-3")],
            Body::empty(),
        )
        .await;
    assert_eq!(tail.body, b"789");
    let beyond = app
        .send(
            "GET",
            "/api/spaces/s/files/f.txt",
            Some(&u),
            &[("range", "bytes=50-")],
            Body::empty(),
        )
        .await;
    beyond.expect(416, Some("RANGE_NOT_SATISFIABLE"));
    assert_eq!(beyond.header("content-range"), Some("bytes */10"));

    let head = app
        .send(
            "HEAD",
            "/api/spaces/s/files/f.txt",
            Some(&u),
            &[],
            Body::empty(),
        )
        .await;
    head.expect(200, None);
    assert!(head.body.is_empty());
    assert_eq!(head.header("content-length"), Some("10"));
    assert_eq!(head.header("etag"), Some(etag.as_str()));
    app.send(
        "HEAD",
        "/api/spaces/s/files/nope.txt",
        Some(&u),
        &[],
        Body::empty(),
    )
    .await
    .expect(404, None);
    app.get("/api/spaces/s/files/nope.txt", &u)
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn conditional_writes() {
    let app = TestApp::new().await;
    let u = app.user("u");
    let create_only = |body: &'static [u8]| {
        app.send(
            "PUT",
            "/api/spaces/s/files/new.md",
            Some(&u),
            &[("content-type", MD), ("if-none-match", "*")],
            Body::from(body),
        )
    };
    create_only(b"first").await.expect(201, None);
    create_only(b"second")
        .await
        .expect(409, Some("ALREADY_EXISTS"));
    assert_eq!(
        app.get("/api/spaces/s/files/new.md", &u).await.body,
        b"first"
    );

    app.send(
        "PUT",
        "/api/spaces/s/files/x.md",
        Some(&u),
        &[("content-type", MD), ("if-none-match", "\"abc\"")],
        Body::from("x"),
    )
    .await
    .expect(400, Some("INVALID_REQUEST"));

    let etag = app
        .get("/api/spaces/s/files/new.md", &u)
        .await
        .header("etag")
        .unwrap()
        .to_owned();
    app.send(
        "PUT",
        "/api/spaces/s/files/new.md",
        Some(&u),
        &[("content-type", MD), ("if-match", "\"stale\"")],
        Body::from("nope"),
    )
    .await
    .expect(412, Some("PRECONDITION_FAILED"));
    let ok = app
        .send(
            "PUT",
            "/api/spaces/s/files/new.md",
            Some(&u),
            &[("content-type", MD), ("if-match", &etag)],
            Body::from("third"),
        )
        .await;
    ok.expect(200, None);
    // The old ETag is now stale.
    app.send(
        "PUT",
        "/api/spaces/s/files/new.md",
        Some(&u),
        &[("content-type", MD), ("if-match", &etag)],
        Body::from("fourth"),
    )
    .await
    .expect(412, Some("PRECONDITION_FAILED"));
    assert_eq!(
        app.get("/api/spaces/s/files/new.md", &u).await.body,
        b"third"
    );
    // If-Match on a missing file fails; `*` matches any existing file.
    app.send(
        "PUT",
        "/api/spaces/s/files/missing.md",
        Some(&u),
        &[("content-type", MD), ("if-match", "*")],
        Body::from("x"),
    )
    .await
    .expect(412, Some("PRECONDITION_FAILED"));
    app.send(
        "PUT",
        "/api/spaces/s/files/new.md",
        Some(&u),
        &[("content-type", MD), ("if-match", "*")],
        Body::from("fifth"),
    )
    .await
    .expect(200, None);
    app.send(
        "PUT",
        "/api/spaces/s/files/new.md",
        Some(&u),
        &[("content-type", MD), ("if-match", "garbage")],
        Body::from("x"),
    )
    .await
    .expect(400, Some("INVALID_REQUEST"));
}

#[tokio::test]
async fn delete_removes_a_file_and_the_folders_it_leaves_empty() {
    let app = TestApp::new().await;
    let u = app.user("u");
    let other = app.user("other");
    let written = app.put("/api/spaces/s/files/a/b/c.md", &u, MD, b"c").await;
    let tag = written.json()["etag"].as_str().unwrap().to_owned();
    app.put("/api/spaces/s/files/a/keep.md", &u, MD, b"k")
        .await
        .expect(201, None);
    let delete = |path: &'static str, user, headers: &'static [(&'static str, &'static str)]| {
        app.send("DELETE", path, Some(user), headers, Body::empty())
    };

    // Another user cannot reach it; a stale etag or a create-only header leaves it alone.
    delete("/api/spaces/s/files/a/b/c.md", &other, &[])
        .await
        .expect(404, Some("NOT_FOUND"));
    delete(
        "/api/spaces/s/files/a/b/c.md",
        &u,
        &[("if-match", "\"0000\"")],
    )
    .await
    .expect(412, Some("PRECONDITION_FAILED"));
    delete(
        "/api/spaces/s/files/a/b/c.md",
        &u,
        &[("if-none-match", "*")],
    )
    .await
    .expect(400, Some("INVALID_REQUEST"));
    delete("/api/spaces/s/files/a/../c.md", &u, &[])
        .await
        .expect(400, Some("INVALID_PATH"));
    assert_eq!(app.get("/api/spaces/s/files/a/b/c.md", &u).await.body, b"c");

    let removed = app
        .send(
            "DELETE",
            "/api/spaces/s/files/a/b/c.md",
            Some(&u),
            &[("if-match", tag.as_str())],
            Body::empty(),
        )
        .await;
    removed.expect(204, None);
    assert!(removed.body.is_empty());
    app.get("/api/spaces/s/files/a/b/c.md", &u)
        .await
        .expect(404, Some("NOT_FOUND"));
    delete("/api/spaces/s/files/a/b/c.md", &u, &[])
        .await
        .expect(404, Some("NOT_FOUND"));

    // a/b held nothing else and is gone; a/ still holds keep.md.
    let listing = app.get("/api/spaces/s/files?dir=a", &u).await.json();
    let paths: Vec<_> = listing["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a/keep.md"]);
    delete("/api/spaces/s/files/a/keep.md", &u, &[])
        .await
        .expect(204, None);
    let top = app.get("/api/spaces/s/files", &u).await.json();
    assert_eq!(top["files"], serde_json::json!([]));
    // A folder is not a file.
    app.put("/api/spaces/s/files/d/e.md", &u, MD, b"e").await;
    delete("/api/spaces/s/files/d", &u, &[])
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn content_type_is_required() {
    let app = TestApp::new().await;
    let u = app.user("u");
    app.send(
        "PUT",
        "/api/spaces/s/files/a.bin",
        Some(&u),
        &[],
        Body::from("x"),
    )
    .await
    .expect(415, Some("UNSUPPORTED_MEDIA_TYPE"));
    app.put("/api/spaces/s/files/a.bin", &u, "nonsense", b"x")
        .await
        .expect(415, Some("UNSUPPORTED_MEDIA_TYPE"));
    app.put(
        "/api/spaces/s/files/a.bin",
        &u,
        "application/octet-stream",
        b"\x00\x01",
    )
    .await
    .expect(201, None);
    let read = app.get("/api/spaces/s/files/a.bin", &u).await;
    assert_eq!(
        read.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(read.body, b"\x00\x01");
}

#[tokio::test]
async fn size_limit_from_content_length() {
    let app = TestApp::with(|c| c.app.limits.space_max_bytes = 1024).await;
    let u = app.user("u");
    app.put(
        "/api/spaces/s/files/ok.bin",
        &u,
        "application/octet-stream",
        &[7; 1024],
    )
    .await
    .expect(201, None);
    let big = vec![7u8; 1025];
    let reply = app
        .send(
            "PUT",
            "/api/spaces/s/files/big.bin",
            Some(&u),
            &[
                ("content-type", "application/octet-stream"),
                ("content-length", "1025"),
            ],
            Body::from(big),
        )
        .await;
    reply.expect(413, Some("REQUEST_TOO_LARGE"));
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1 KiB")
    );
    app.get("/api/spaces/s/files/big.bin", &u)
        .await
        .expect(404, None);
}

#[tokio::test]
async fn the_default_limit_is_five_mebibytes() {
    let app = TestApp::new().await;
    let u = app.user("u");
    app.send(
        "PUT",
        "/api/spaces/s/files/big.bin",
        Some(&u),
        &[
            ("content-type", "application/octet-stream"),
            ("content-length", "5242881"),
        ],
        Body::from(vec![0u8; 5_242_881]),
    )
    .await
    .expect(413, Some("REQUEST_TOO_LARGE"));
    app.put(
        "/api/spaces/s/files/max.bin",
        &u,
        "application/octet-stream",
        &vec![0u8; 5_242_880],
    )
    .await
    .expect(201, None);
}

#[tokio::test]
async fn the_callers_spaces_are_listed() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    assert_eq!(
        app.get("/api/spaces", &alice).await.json(),
        serde_json::json!({"spaces": []})
    );
    app.put("/api/spaces/notes/files/a.md", &alice, MD, b"12345")
        .await
        .expect(201, None);
    app.put("/api/spaces/notes/files/b/c.md", &alice, MD, b"123")
        .await
        .expect(201, None);
    app.put("/api/spaces/drafts/files/x.md", &alice, MD, b"1")
        .await
        .expect(201, None);
    app.put("/api/spaces/other/files/x.md", &app.user("bob"), MD, b"1")
        .await
        .expect(201, None);
    let list = app.get("/api/spaces", &alice).await;
    list.expect(200, None);
    let spaces = list.json()["spaces"].clone();
    assert_eq!(spaces.as_array().unwrap().len(), 2);
    assert_eq!(spaces[0]["name"], "drafts");
    assert_eq!(spaces[1]["name"], "notes");
    assert_eq!(spaces[1]["files"], 2);
    assert_eq!(spaces[1]["size"], 8);
    assert!(spaces[1]["updatedAt"].as_str().unwrap().ends_with('Z'));
    // A space stays when its last file goes: listed, empty.
    app.send(
        "DELETE",
        "/api/spaces/drafts/files/x.md",
        Some(alice.as_str()),
        &[],
        Body::empty(),
    )
    .await
    .expect(204, None);
    let spaces = app.get("/api/spaces", &alice).await.json()["spaces"].clone();
    assert_eq!(spaces.as_array().unwrap().len(), 2);
    assert_eq!(
        (&spaces[0]["name"], &spaces[0]["files"], &spaces[0]["size"]),
        (&"drafts".into(), &0.into(), &0.into())
    );
    app.send("GET", "/api/spaces", None, &[], Body::empty())
        .await
        .expect(401, Some("UNAUTHENTICATED"));
}

#[tokio::test]
async fn users_are_isolated() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    let bob = app.user("bob");
    app.put("/api/spaces/notes/files/secret.md", &alice, MD, b"alice's")
        .await
        .expect(201, None);
    app.get("/api/spaces/notes/files/secret.md", &bob)
        .await
        .expect(404, Some("NOT_FOUND"));
    assert_eq!(
        app.get("/api/spaces/notes/files", &bob).await.json()["files"],
        serde_json::json!([])
    );
    // Bob writing the same path makes his own file, leaving Alice's alone.
    app.put("/api/spaces/notes/files/secret.md", &bob, MD, b"bob's")
        .await
        .expect(201, None);
    assert_eq!(
        app.get("/api/spaces/notes/files/secret.md", &alice)
            .await
            .body,
        b"alice's"
    );
    // An agent reaches its owner's spaces; a service token only with a sub.
    let own_thread = crate::thread_support::thread(&app, "alice").await;
    let agent = own_thread.agent.clone();
    assert_eq!(
        app.get("/api/spaces/notes/files/secret.md", &agent)
            .await
            .body,
        b"alice's"
    );
    let service_as_alice = app.service(Some("alice"));
    assert_eq!(
        app.get("/api/spaces/notes/files/secret.md", &service_as_alice)
            .await
            .body,
        b"alice's"
    );
    app.get("/api/spaces/notes/files/secret.md", &app.service(None))
        .await
        .expect(403, Some("FORBIDDEN"));
}

#[tokio::test]
async fn every_route_needs_a_valid_token() {
    let app = TestApp::new().await;
    for (method, uri) in [
        ("GET", "/api/spaces/s/files"),
        ("GET", "/api/spaces/s/files/a.md"),
        ("PUT", "/api/spaces/s/files/a.md"),
    ] {
        let reply = app
            .send(method, uri, None, &[("content-type", MD)], Body::from("x"))
            .await;
        reply.expect(401, Some("UNAUTHENTICATED"));
        // No token: the challenge names the realm only (RFC 6750 §3.1).
        assert_eq!(
            reply.header("www-authenticate"),
            Some("Bearer realm=\"ferry\"")
        );
        let refused = app
            .send(
                method,
                uri,
                Some("garbage"),
                &[("content-type", MD)],
                Body::from("x"),
            )
            .await;
        refused.expect(401, Some("UNAUTHENTICATED"));
        // A refused token: invalid_token, with the reason, so a client asks for a new token
        // instead of starting an OAuth login.
        let challenge = refused.header("www-authenticate").unwrap();
        assert!(
            challenge.starts_with(
                "Bearer realm=\"ferry\", error=\"invalid_token\", error_description=\""
            ),
            "{challenge}"
        );
        app.send(
            method,
            uri,
            None,
            &[("authorization", "Basic dTpw"), ("content-type", MD)],
            Body::from("x"),
        )
        .await
        .expect(401, Some("UNAUTHENTICATED"));
    }
    let other_secret = ferry_server::Auth::new(b"another secret")
        .mint_user("alice", std::time::Duration::from_secs(60))
        .token;
    let refused = app.get("/api/spaces/s/files", &other_secret).await;
    refused.expect(401, Some("UNAUTHENTICATED"));
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\""),
    );
}

#[tokio::test]
async fn bad_paths_and_names_are_invalid_path() {
    let app = TestApp::new().await;
    let u = app.user("u");
    for uri in [
        "/api/spaces/s/files/%2e%2e/etc/passwd",
        "/api/spaces/s/files/a/%2E%2E/b",
        "/api/spaces/s/files/..%2F..%2Fetc%2Fpasswd",
        "/api/spaces/s/files/%2Fetc%2Fpasswd",
        "/api/spaces/s/files/a%5Cb",
        "/api/spaces/s/files/a%00b",
        "/api/spaces/s/files/a%0Ab",
        "/api/spaces/s/files/a%7Fb",
        "/api/spaces/s/files/a//b",
        "/api/spaces/s/files/a/./b",
        "/api/spaces/s/files/a%zz",
        "/api/spaces/s/files/%ff",
        "/api/spaces/.hidden/files/a.md",
        "/api/spaces/bad%20name/files/a.md",
    ] {
        app.get(uri, &u).await.expect(400, Some("INVALID_PATH"));
        app.put(uri, &u, MD, b"x")
            .await
            .expect(400, Some("INVALID_PATH"));
    }
    let long = format!("/api/spaces/s/files/{}", "x".repeat(256));
    app.put(&long, &u, MD, b"x")
        .await
        .expect(400, Some("INVALID_PATH"));
    let too_long = format!("/api/spaces/s/files/{}", vec!["y".repeat(200); 6].join("/"));
    app.put(&too_long, &u, MD, b"x")
        .await
        .expect(400, Some("INVALID_PATH"));
    app.get("/api/spaces/s/files?dir=../x", &u)
        .await
        .expect(400, Some("INVALID_PATH"));
    app.get("/api/spaces/s/files?dir=/abs", &u)
        .await
        .expect(400, Some("INVALID_PATH"));
    let message =
        app.get("/api/spaces/s/files/%2e%2e/x", &u).await.json()["error"]["message"].clone();
    assert_eq!(message, "path segment '..' is not allowed");
    // An encoded slash decodes to a separator, once: `a%2Fb` is the file `b` in folder `a`.
    app.put("/api/spaces/s/files/a%2Fb.md", &u, MD, b"x")
        .await
        .expect(201, None);
    assert_eq!(app.get("/api/spaces/s/files/a/b.md", &u).await.body, b"x");
    // Double encoding stays literal.
    app.put("/api/spaces/s/files/%252e%252e", &u, MD, b"y")
        .await
        .expect(201, None);
    let list = app.get("/api/spaces/s/files", &u).await.json();
    assert!(
        list["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == "%2e%2e")
    );
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_the_envelope() {
    let app = TestApp::new().await;
    let u = app.user("u");
    app.get("/api/nothing", &u)
        .await
        .expect(404, Some("NOT_FOUND"));
    app.send("GET", "/nowhere", None, &[], Body::empty())
        .await
        .expect(404, Some("NOT_FOUND"));
    // A browser on a mistyped address gets the app's page (which says "Page not found"), still
    // with a 404; an API path never does.
    let browsing = [("accept", "text/html,application/xhtml+xml,*/*;q=0.8")];
    let page = app
        .send("GET", "/thread/typo", None, &browsing, Body::empty())
        .await;
    assert_eq!(page.status, 404);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(page.text().contains("<html"), "{}", page.text());
    app.send("GET", "/api/nothing", None, &browsing, Body::empty())
        .await
        .expect(404, Some("NOT_FOUND"));
    app.send(
        "PATCH",
        "/api/spaces/s/files/a.md",
        Some(&u),
        &[],
        Body::empty(),
    )
    .await
    .expect(405, Some("METHOD_NOT_ALLOWED"));
    app.send("POST", "/api/spaces/s/files", Some(&u), &[], Body::empty())
        .await
        .expect(405, Some("METHOD_NOT_ALLOWED"));
}

#[tokio::test]
async fn operations_routes() {
    let app = TestApp::new().await;
    let health = app.send("GET", "/healthz", None, &[], Body::empty()).await;
    health.expect(200, None);
    assert_eq!(health.json()["status"], "ok");
    let u = app.user("u");
    app.put("/api/spaces/s/files/m.md", &u, MD, b"x").await;
    // An upload runs an extraction worker for its preview.
    let t = crate::thread_support::thread(&app, "u").await;
    crate::thread_support::upload_one(&app, &t, "table.csv", b"a,b\n1,2\n").await;
    let metrics = app.send("GET", "/metrics", None, &[], Body::empty()).await;
    metrics.expect(200, None);
    let text = metrics.text();
    assert!(text.contains("ferry_http_requests_total"), "{text}");
    assert!(
        text.contains("ferry_http_request_duration_seconds_bucket"),
        "{text}"
    );
    assert!(text.contains("ferry_http_request_bytes_total"), "{text}");
    assert!(text.contains("ferry_http_response_bytes_total"), "{text}");
    // Every metric says what it counts, and the build says what it is.
    for name in [
        "ferry_http_requests_total",
        "ferry_http_request_duration_seconds",
        "ferry_http_requests_in_flight",
        "ferry_build_info",
        "ferry_extract_waiting",
        "ferry_extract_duration_seconds",
        "ferry_webhook_deliveries_pending",
    ] {
        assert!(text.contains(&format!("# HELP {name} ")), "{name}: {text}");
        assert!(text.contains(&format!("# TYPE {name} ")), "{name}: {text}");
    }
    assert!(
        text.contains(&format!(
            "ferry_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        )),
        "{text}"
    );
    assert!(
        text.contains("ferry_extract_duration_seconds_count{op=\"preview\",outcome=\"ok\"}"),
        "{text}"
    );
    // Durations are told apart by status, as the counts are.
    assert!(
        text.lines().any(
            |l| l.starts_with("ferry_http_request_duration_seconds_count{")
                && l.contains("route=\"/api/spaces/{space}/files/{*path}\"")
                && l.contains("status=\"201\"")
        ),
        "{text}"
    );
    // The scrape itself is in flight while it is answered (other tests of this process may
    // be too: the recorder is the process's).
    let in_flight: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("ferry_http_requests_in_flight "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_default();
    assert!(in_flight >= 1.0, "{text}");
}

#[tokio::test]
async fn openapi_documents_every_route() {
    let app = TestApp::new().await;
    let doc = app
        .send("GET", "/api/openapi.json", None, &[], Body::empty())
        .await
        .json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    // Every documented operation exists in the router: it answers something other than the
    // unknown-route 404 and the wrong-method 405.
    let u = app.user("u");
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            if !["get", "put", "post", "head", "delete"].contains(&method.as_str()) {
                continue;
            }
            let uri = path
                .replace("{space}", "s")
                .replace("{path}", "a.md")
                .replace("{id}", "t")
                .replace("{pid}", "p")
                .replace("{upload_id}", "u");
            // An event stream never ends; its JSON form answers at once.
            let uri = if uri.ends_with("/events") {
                format!("{uri}?format=json")
            } else {
                uri
            };
            // The live thread list never ends either: a token it refuses shows it is routed.
            let token = if uri == "/api/threads/live" {
                app.service(None)
            } else {
                u.clone()
            };
            let reply = app
                .send(
                    &method.to_uppercase(),
                    &uri,
                    Some(&token),
                    &[],
                    Body::empty(),
                )
                .await;
            let code = if reply.body.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::from_slice::<serde_json::Value>(&reply.body)
                    .map(|j| j["error"]["message"].clone())
                    .unwrap_or_default()
            };
            assert!(
                !(reply.status == 404
                    && code
                        .as_str()
                        .is_some_and(|m| m.starts_with("no such route")))
                    && reply.status != 405,
                "{method} {path} is documented but not routed"
            );
        }
    }
    for expected in [
        "/api/spaces/{space}/files",
        "/api/spaces/{space}/files/{path}",
        "/healthz",
        "/metrics",
    ] {
        assert!(
            paths.contains_key(expected),
            "{expected} missing from the document"
        );
    }
}
