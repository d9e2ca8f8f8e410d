//! User → agent uploads (docs/reference/uploads.md): the answer's fields, the original bytes in the
//! sandbox, safe names, limits, the hidden attachment note, previews of real and hostile
//! documents, and who may see what.
//!
//! Why one file: one route family, a thread's uploads: the upload, its listing and download, and
//! its preview, through the raw upload, the answer reader and the seed workbook's preview at the
//! top; each upload is followed from its answer to the sandbox, the download and the preview it
//! gets, hostile documents through the same route as any other.

use crate::support::{Reply, TestApp};
use crate::thread_support::{
    BIN, Thread, blob_files, blob_tmp_files, corpus_dir, docx_bomb, files_below, fixture, noise,
    pct, pct_decode, png, sandbox_dir, sha256_hex, stored_events, thread, upload_as, upload_one,
    xlsx_billion_laughs,
};
use axum::body::Body;
use serde_json::{Value, json};

const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const DOCX: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

/// The hidden note for an image, built from the answer's own fields.
fn image_note(name: &str, file_type: &str, storage: &str, sandbox: &str) -> String {
    format!(
        "<UserUploadedImage hidden=\"true\">\n  <FileName>{name}</FileName>\n  \
         <FileType>{file_type}</FileType>\n  <StoragePath>{storage}</StoragePath>\n  \
         <SandboxPath>{sandbox}</SandboxPath>\n</UserUploadedImage>"
    )
}

/// The hidden note for a document, with its preview.
fn document_note(
    name: &str,
    file_type: &str,
    storage: &str,
    sandbox: &str,
    preview: &str,
) -> String {
    format!(
        "<UserUploadedDocument hidden=\"true\">\n  <FileName>{name}</FileName>\n  \
         <FileType>{file_type}</FileType>\n  <StoragePath>{storage}</StoragePath>\n  \
         <SandboxPath>{sandbox}</SandboxPath>\n  <Preview>\n{preview}\n  </Preview>\n\
         </UserUploadedDocument>"
    )
}

/// Uploads raw bytes with `?filename=`.
async fn upload_raw(
    app: &TestApp,
    t: &Thread,
    name: &str,
    content_type: Option<&str>,
    bytes: &[u8],
) -> Reply {
    let headers: Vec<(&str, &str)> = content_type
        .map(|c| ("content-type", c))
        .into_iter()
        .collect();
    app.send(
        "POST",
        &t.url(&format!("/uploads?filename={}", pct(name))),
        Some(&t.user),
        &headers,
        Body::from(bytes.to_vec()),
    )
    .await
}

fn uploads_of(reply: &Reply) -> Vec<Value> {
    reply.json()["uploads"].as_array().unwrap().clone()
}

/// The spreadsheet preview of the committed fixture `seed.xlsx`.
const SEED_XLSX_PREVIEW: &str = "Sheet1: Revenue | Q1 | Q2 | Q3 | Q4\n\
Row 1: North | 125000 | 132000 | 141000 | 156000\n\
Row 2: South | 98000 | 103000 | 115000 | 122000\n\
\n\
Orders: Order | Amount\n\
Row 1: A-001 | 10.5\n\
Row 2: A-002 | 21\n\
Row 3: A-003 | 31.5\n\
Row 4: A-004 | 42\n\
Row 5: A-005 | 52.5\n\
Row 6: A-006 | 63\n\
Row 7: A-007 | 73.5\n\
Row 8: A-008 | 84\n\
Row 9: A-009 | 94.5\n\
Row 10: A-010 | 105\n\
Row 11: A-011 | 115.5\n\
Row 12: A-012 | 126\n\
Row 13: A-013 | 136.5\n\
Row 14: A-014 | 147\n\
Row 15: A-015 | 157.5\n\
Row 16: A-016 | 168\n\
Row 17: A-017 | 178.5\n\
Row 18: A-018 | 189\n\
Row 19: A-019 | 199.5\n\
... (first 20 rows)\n\
\n\
Kinds: Kind | Value\n\
Row 1: date | 2021-01-01\n\
Row 2: datetime | 2021-01-01T10:30:00\n\
Row 3: float | 0.1\n\
Row 4: whole float | 42\n\
Row 5: bool | TRUE\n\
Row 6: error | #DIV/0!\n\
Row 7: empty |  | after empty\n\
Row 8: multi-line | one two";

#[tokio::test]
async fn three_files_at_once_with_every_field_of_the_answer() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let sheet = fixture("seed.xlsx");
    let image = png(3, 2);
    let text = b"Meeting notes: ship on Friday.\n".to_vec();
    let reply = upload_as(
        &app,
        &t,
        &t.user,
        &[
            ("quarterly_report.xlsx", XLSX, &sheet),
            ("screenshot.png", "image/png", &image),
            ("notes.txt", "text/plain", &text),
        ],
    )
    .await;
    reply.expect(201, None);
    let uploads = uploads_of(&reply);
    assert_eq!(uploads.len(), 3);
    let dir = sandbox_dir(&app, &t).await;

    let expected = [
        ("quarterly_report.xlsx", XLSX, &sheet, "document"),
        ("screenshot.png", "image/png", &image, "image"),
        ("notes.txt", "text/plain", &text, "document"),
    ];
    let mut ids = Vec::new();
    for (u, (name, file_type, bytes, kind)) in uploads.iter().zip(expected) {
        let id = u["id"].as_str().unwrap();
        assert!(!id.is_empty());
        ids.push(id.to_owned());
        assert_eq!(u["fileName"], name);
        assert_eq!(u["fileType"], file_type, "{u}");
        assert_eq!(u["size"], bytes.len(), "{u}");
        assert_eq!(u["sha256"], sha256_hex(bytes), "{u}");
        assert_eq!(u["kind"], kind);
        let storage = format!("chat-uploads/alice/{}/{id}_{name}", t.id);
        assert_eq!(u["storagePath"], storage.as_str());
        let sandbox = format!("/sandbox/user_uploads/{name}");
        assert_eq!(u["sandboxPath"], sandbox.as_str());
        // The original bytes are in the sandbox, on disk and through the API.
        assert_eq!(
            &std::fs::read(dir.join("user_uploads").join(name)).unwrap(),
            bytes
        );
        let read = app
            .get(&t.url(&format!("/sandbox/user_uploads/{name}")), &t.agent)
            .await;
        read.expect(200, None);
        assert_eq!(&read.body, bytes);
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3, "upload ids are distinct");

    // The spreadsheet: the documented preview and its note.
    let sheet_u = &uploads[0];
    assert_eq!(sheet_u["preview"], SEED_XLSX_PREVIEW);
    assert!(sheet_u.get("previewError").is_none(), "{sheet_u}");
    assert!(sheet_u.get("width").is_none());
    assert_eq!(
        sheet_u["attachmentXml"],
        document_note(
            "quarterly_report.xlsx",
            XLSX,
            sheet_u["storagePath"].as_str().unwrap(),
            "/sandbox/user_uploads/quarterly_report.xlsx",
            SEED_XLSX_PREVIEW,
        )
        .as_str()
    );
    // The image: no preview, its size, the image note.
    let image_u = &uploads[1];
    assert_eq!(image_u["preview"], Value::Null);
    assert!(image_u.get("previewError").is_none(), "{image_u}");
    assert_eq!(image_u["width"], 3);
    assert_eq!(image_u["height"], 2);
    assert_eq!(
        image_u["attachmentXml"],
        image_note(
            "screenshot.png",
            "image/png",
            image_u["storagePath"].as_str().unwrap(),
            "/sandbox/user_uploads/screenshot.png",
        )
        .as_str()
    );
    // The text: its first characters.
    let text_u = &uploads[2];
    assert_eq!(text_u["preview"], "Meeting notes: ship on Friday.\n");
}

#[tokio::test]
async fn a_raw_body_with_a_filename() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let csv = b"name,amount\nNorth,125000\n";
    let reply = upload_raw(&app, &t, "report v2.csv", Some("text/csv"), csv).await;
    reply.expect(201, None);
    let u = &uploads_of(&reply)[0];
    assert_eq!(u["fileName"], "report v2.csv");
    assert_eq!(u["sandboxPath"], "/sandbox/user_uploads/report v2.csv");
    assert_eq!(u["size"], csv.len());
    assert_eq!(u["sha256"], sha256_hex(csv));
    assert_eq!(u["kind"], "document");
    assert_eq!(u["preview"], "name | amount\nRow 1: North | 125000");
    let dir = sandbox_dir(&app, &t).await;
    assert_eq!(
        std::fs::read(dir.join("user_uploads/report v2.csv")).unwrap(),
        csv
    );

    // Without a Content-Type, or without a name, nothing is kept.
    upload_raw(&app, &t, "x.csv", None, csv)
        .await
        .expect(415, Some("UNSUPPORTED_MEDIA_TYPE"));
    app.send(
        "POST",
        &t.url("/uploads"),
        Some(&t.user),
        &[("content-type", "text/csv")],
        Body::from(csv.to_vec()),
    )
    .await
    .expect(400, Some("INVALID_REQUEST"));
    let listed = app.get(&t.url("/uploads"), &t.user).await.json();
    assert_eq!(listed["uploads"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn binary_bytes_reach_the_sandbox_and_the_download_unchanged() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let data = noise(300 * 1024);
    let u = upload_one(&app, &t, "data.bin", &data).await;
    assert_eq!(u["sha256"], sha256_hex(&data));
    let dir = sandbox_dir(&app, &t).await;
    assert_eq!(
        std::fs::read(dir.join("user_uploads/data.bin")).unwrap(),
        data
    );
    assert_eq!(
        app.get(&t.url("/sandbox/user_uploads/data.bin"), &t.agent)
            .await
            .body,
        data
    );
    let id = u["id"].as_str().unwrap();
    let download = app
        .get(&t.url(&format!("/uploads/{id}/content")), &t.user)
        .await;
    download.expect(200, None);
    assert_eq!(download.body, data);
    assert_eq!(download.header("content-length"), Some("307200"));
}

#[tokio::test]
async fn name_clashes_are_numbered() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let mut paths = Vec::new();
    for i in 0..3 {
        let u = upload_one(&app, &t, "notes.txt", format!("version {i}").as_bytes()).await;
        assert_eq!(u["fileName"], "notes.txt");
        assert!(
            u["attachmentXml"].as_str().unwrap().contains(&format!(
                "<SandboxPath>{}</SandboxPath>",
                u["sandboxPath"].as_str().unwrap()
            )),
            "{u}"
        );
        paths.push(u["sandboxPath"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        paths,
        [
            "/sandbox/user_uploads/notes.txt",
            "/sandbox/user_uploads/notes (1).txt",
            "/sandbox/user_uploads/notes (2).txt"
        ]
    );
    let dir = sandbox_dir(&app, &t).await;
    for (i, name) in ["notes.txt", "notes (1).txt", "notes (2).txt"]
        .iter()
        .enumerate()
    {
        assert_eq!(
            std::fs::read(dir.join("user_uploads").join(name)).unwrap(),
            format!("version {i}").as_bytes()
        );
    }
    // Two of the same name in one request, and a name without an extension.
    let reply = upload_as(
        &app,
        &t,
        &t.user,
        &[("README", BIN, b"one"), ("README", BIN, b"two")],
    )
    .await;
    reply.expect(201, None);
    let u = uploads_of(&reply);
    assert_eq!(u[0]["sandboxPath"], "/sandbox/user_uploads/README");
    assert_eq!(u[1]["sandboxPath"], "/sandbox/user_uploads/README (1)");
    assert_eq!(
        std::fs::read(dir.join("user_uploads/README (1)")).unwrap(),
        b"two"
    );
}

#[tokio::test]
async fn folder_parts_of_a_name_are_dropped_and_nothing_lands_outside() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let outside = tempfile::tempdir().unwrap();
    let absolute = outside.path().join("escape.txt");
    let multipart = upload_as(&app, &t, &t.user, &[("../../x.txt", BIN, b"dots")]).await;
    multipart.expect(201, None);
    let cases = [
        (uploads_of(&multipart)[0].clone(), "x.txt", &b"dots"[..]),
        (
            uploads_of(&upload_raw(&app, &t, "C:\\fakepath\\a.txt", Some(BIN), b"windows").await)
                [0]
            .clone(),
            "a.txt",
            b"windows",
        ),
        (
            uploads_of(&upload_raw(&app, &t, "../../../../y.txt", Some(BIN), b"raw dots").await)[0]
                .clone(),
            "y.txt",
            b"raw dots",
        ),
        (
            uploads_of(
                &upload_raw(&app, &t, absolute.to_str().unwrap(), Some(BIN), b"absolute").await,
            )[0]
            .clone(),
            "escape.txt",
            b"absolute",
        ),
    ];
    let dir = sandbox_dir(&app, &t).await;
    for (u, name, bytes) in cases {
        assert_eq!(u["fileName"], name, "{u}");
        assert_eq!(
            u["sandboxPath"],
            format!("/sandbox/user_uploads/{name}").as_str()
        );
        assert!(
            u["storagePath"]
                .as_str()
                .unwrap()
                .ends_with(&format!("_{name}")),
            "{u}"
        );
        assert!(!u["storagePath"].as_str().unwrap().contains(".."), "{u}");
        assert_eq!(
            std::fs::read(dir.join("user_uploads").join(name)).unwrap(),
            bytes
        );
    }
    assert!(!absolute.exists());
    // Every copy of these names under the data folder is in user_uploads.
    for file in files_below(app.dir.path(), &[]) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if ["x.txt", "a.txt", "y.txt", "escape.txt"].contains(&name.as_str()) {
            assert_eq!(
                file.parent().unwrap(),
                dir.join("user_uploads"),
                "{}",
                file.display()
            );
        }
    }
}

#[tokio::test]
async fn names_with_control_characters_are_refused() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for name in [
        "a\0b.txt",
        "a\u{1}b.txt",
        "line\nbreak.txt",
        "cr\r.txt",
        "del\u{7f}.txt",
        "..",
        ".",
        "",
    ] {
        let reply = upload_raw(&app, &t, name, Some(BIN), b"x").await;
        reply.expect(400, Some("INVALID_PATH"));
    }
    // The same in a multipart filename. A tab may stand in a part's header and reaches the
    // path rules; other control characters make the part's header malformed HTTP, which is
    // refused as a bad request before any name is read.
    let reply = upload_as(&app, &t, &t.user, &[("tab\tname.txt", BIN, b"x")]).await;
    reply.expect(400, Some("INVALID_PATH"));
    let reply = upload_as(
        &app,
        &t,
        &t.user,
        &[("ok.txt", BIN, b"fine"), ("tab\t.txt", BIN, b"x")],
    )
    .await;
    reply.expect(400, Some("INVALID_PATH"));
    for name in [
        "bell\u{7}.txt",
        "nul\0.txt",
        "esc\u{1b}.txt",
        "del\u{7f}.txt",
    ] {
        let reply = upload_as(
            &app,
            &t,
            &t.user,
            &[("ok.txt", BIN, b"fine"), (name, BIN, b"x")],
        )
        .await;
        assert_eq!(reply.status.as_u16(), 400, "{name:?}: {}", reply.text());
        let code = reply.json()["error"]["code"].clone();
        assert!(
            code == "INVALID_PATH" || code == "INVALID_REQUEST",
            "{name:?}: {code}"
        );
    }
    // Nothing was kept, not even the good file of the refused request.
    assert_eq!(
        app.get(&t.url("/uploads"), &t.user).await.json()["uploads"],
        json!([])
    );
    let dir = sandbox_dir(&app, &t).await;
    assert!(files_below(&dir.join("user_uploads"), &[]).is_empty());
}

#[tokio::test]
async fn over_the_limit_is_413_and_leaves_nothing_behind() {
    const LIMIT: u64 = 64 * 1024;
    let app = TestApp::with(|c| c.app.limits.upload_max_bytes = LIMIT).await;
    let t = thread(&app, "alice").await;
    let blobs_before = blob_files(&app);
    let big = vec![b'z'; LIMIT as usize + 1];

    upload_as(&app, &t, &t.user, &[("big.txt", "text/plain", &big)])
        .await
        .expect(413, Some("REQUEST_TOO_LARGE"));
    // A small file before the big one in the same request is not kept either.
    upload_as(
        &app,
        &t,
        &t.user,
        &[
            ("small.txt", "text/plain", b"small"),
            ("big.txt", "text/plain", &big),
        ],
    )
    .await
    .expect(413, Some("REQUEST_TOO_LARGE"));
    upload_raw(&app, &t, "big.txt", Some("text/plain"), &big)
        .await
        .expect(413, Some("REQUEST_TOO_LARGE"));

    // Chunked over a real socket, with no Content-Length.
    let addr = app.spawn().await;
    let chunks = futures::stream::iter((0..16).map(|_| Ok::<_, std::io::Error>(vec![b'c'; 8192])));
    let sent = reqwest::Client::new()
        .post(format!(
            "http://{addr}/api/threads/{}/uploads?filename=chunked.txt",
            t.id
        ))
        .bearer_auth(&t.user)
        .header("content-type", "text/plain")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await;
    if let Ok(reply) = sent {
        assert_eq!(reply.status().as_u16(), 413);
    }

    assert_eq!(
        app.get(&t.url("/uploads"), &t.user).await.json()["uploads"],
        json!([])
    );
    let dir = sandbox_dir(&app, &t).await;
    assert!(files_below(&dir.join("user_uploads"), &[]).is_empty());
    assert!(
        blob_tmp_files(&app).is_empty(),
        "{:?}",
        blob_tmp_files(&app)
    );
    assert_eq!(blob_files(&app), blobs_before);
    let events = stored_events(&app, &t, &t.user).await;
    assert!(events.iter().all(|e| e["type"] != "upload"), "{events:?}");

    // Exactly the limit is accepted.
    let exact = vec![b'e'; LIMIT as usize];
    let u = upload_one(&app, &t, "exact.txt", &exact).await;
    assert_eq!(u["size"], LIMIT);
}

#[tokio::test]
async fn the_note_is_xml_escaped() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let u = upload_one(&app, &t, "a&b<c>.txt", b"x < y & \"z\" > 'w'").await;
    assert_eq!(u["fileName"], "a&b<c>.txt");
    let id = u["id"].as_str().unwrap();
    assert_eq!(u["preview"], "x < y & \"z\" > 'w'");
    let xml = u["attachmentXml"].as_str().unwrap();
    assert_eq!(
        xml,
        format!(
            "<UserUploadedDocument hidden=\"true\">\n  <FileName>a&amp;b&lt;c&gt;.txt</FileName>\n  \
             <FileType>text/plain</FileType>\n  \
             <StoragePath>chat-uploads/alice/{}/{id}_a&amp;b&lt;c&gt;.txt</StoragePath>\n  \
             <SandboxPath>/sandbox/user_uploads/a&amp;b&lt;c&gt;.txt</SandboxPath>\n  \
             <Preview>\nx &lt; y &amp; &quot;z&quot; &gt; &apos;w&apos;\n  </Preview>\n\
             </UserUploadedDocument>",
            t.id
        )
    );
    // The file itself keeps its real name.
    let dir = sandbox_dir(&app, &t).await;
    assert!(dir.join("user_uploads/a&b<c>.txt").is_file());
}

#[tokio::test]
async fn list_and_download() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let first = upload_one(&app, &t, "résumé ✓.md", "# Hi\n".as_bytes()).await;
    let second = upload_one(&app, &t, "b.png", &png(4, 4)).await;

    for token in [&t.user, &t.agent, &app.service(None)] {
        let listed = app.get(&t.url("/uploads"), token).await;
        listed.expect(200, None);
        let listed = listed.json()["uploads"].clone();
        assert_eq!(listed.as_array().unwrap().len(), 2);
        for (got, want) in listed.as_array().unwrap().iter().zip([&first, &second]) {
            for field in [
                "id",
                "fileName",
                "fileType",
                "size",
                "sha256",
                "kind",
                "storagePath",
                "sandboxPath",
                "preview",
                "attachmentXml",
            ] {
                assert_eq!(got[field], want[field], "{field}");
            }
        }
    }

    let id = first["id"].as_str().unwrap();
    let download = app
        .get(&t.url(&format!("/uploads/{id}/content")), &t.user)
        .await;
    download.expect(200, None);
    assert_eq!(download.body, "# Hi\n".as_bytes());
    assert_eq!(download.header("x-content-type-options"), Some("nosniff"));
    let disposition = download
        .header("content-disposition")
        .expect("ASCII-only header");
    assert!(disposition.starts_with("attachment"), "{disposition}");
    let encoded = disposition
        .split("filename*=UTF-8''")
        .nth(1)
        .expect("an RFC 8187 filename*")
        .split(';')
        .next()
        .unwrap();
    assert_eq!(
        String::from_utf8(pct_decode(encoded)).unwrap(),
        "résumé ✓.md"
    );

    app.get(&t.url("/uploads/no-such-upload/content"), &t.user)
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn uploads_are_isolated_between_users_and_threads() {
    let app = TestApp::new().await;
    let a = thread(&app, "alice").await;
    let a2 = thread(&app, "alice").await;
    let b = thread(&app, "bob").await;
    let u = upload_one(&app, &a, "private.txt", b"alice's").await;
    let id = u["id"].as_str().unwrap();

    // Bob and the agents of other threads see nothing.
    for token in [&b.user, &b.agent, &a2.agent] {
        app.get(&a.url("/uploads"), token)
            .await
            .expect(404, Some("NOT_FOUND"));
        app.get(&a.url(&format!("/uploads/{id}/content")), token)
            .await
            .expect(404, Some("NOT_FOUND"));
        upload_as(&app, &a, token, &[("intruder.txt", BIN, b"x")])
            .await
            .expect(404, Some("NOT_FOUND"));
    }
    // The upload belongs to its thread: another thread of the same owner does not serve it.
    app.get(&a2.url(&format!("/uploads/{id}/content")), &a2.user)
        .await
        .expect(404, Some("NOT_FOUND"));
    assert_eq!(
        app.get(&a2.url("/uploads"), &a2.user).await.json()["uploads"],
        json!([])
    );
    assert!(files_below(&sandbox_dir(&app, &a2).await.join("user_uploads"), &[]).is_empty());
    assert!(files_below(&sandbox_dir(&app, &b).await.join("user_uploads"), &[]).is_empty());
    assert_eq!(
        app.get(&a.url("/uploads"), &a.user).await.json()["uploads"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // The thread's own agent reads uploads but does not upload; service_role may.
    upload_as(&app, &a, &a.agent, &[("agent.txt", BIN, b"x")])
        .await
        .expect(403, Some("FORBIDDEN"));
    let service = upload_as(&app, &a, &app.service(None), &[("svc.txt", BIN, b"svc")]).await;
    service.expect(201, None);
    assert!(
        uploads_of(&service)[0]["storagePath"]
            .as_str()
            .unwrap()
            .starts_with(&format!("chat-uploads/alice/{}/", a.id))
    );
}

#[tokio::test]
async fn each_upload_is_recorded_as_an_event() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let reply = upload_as(
        &app,
        &t,
        &t.user,
        &[("one.txt", BIN, b"1"), ("two.png", "image/png", &png(1, 1))],
    )
    .await;
    reply.expect(201, None);
    let third = upload_one(&app, &t, "three.csv", b"a,b\n1,2\n").await;
    let mut answers = uploads_of(&reply);
    answers.push(third);

    let events = stored_events(&app, &t, &t.agent).await;
    let uploads: Vec<&Value> = events.iter().filter(|e| e["type"] == "upload").collect();
    assert_eq!(uploads.len(), 3, "{events:?}");
    let mut last_id = 0;
    for (event, answer) in uploads.iter().zip(&answers) {
        let id = event["id"].as_i64().unwrap();
        assert!(id > last_id);
        last_id = id;
        assert_eq!(event["sessionId"], t.id.as_str());
        assert_eq!(event["role"], "user");
        assert!(event["timestamp"].as_str().unwrap().ends_with('Z'));
        for field in [
            "id",
            "fileName",
            "sha256",
            "storagePath",
            "sandboxPath",
            "attachmentXml",
        ] {
            assert_eq!(event["upload"][field], answer[field], "{field}");
        }
    }
}

#[tokio::test]
async fn fixtures_preview_with_the_exact_lines() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let names = [
        "seed.xlsx",
        "seed.xls",
        "report.docx",
        "deck.pptx",
        "orders.csv",
        "two-pages.pdf",
    ];
    let files: Vec<(String, Vec<u8>)> = names.iter().map(|n| (n.to_string(), fixture(n))).collect();
    let parts: Vec<(&str, &str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), BIN, b.as_slice()))
        .collect();
    let reply = upload_as(&app, &t, &t.user, &parts).await;
    reply.expect(201, None);
    let u = uploads_of(&reply);
    let preview = |i: usize| {
        u[i]["preview"]
            .as_str()
            .unwrap_or_else(|| panic!("{}", u[i]))
            .to_owned()
    };

    assert_eq!(preview(0), SEED_XLSX_PREVIEW);
    assert!(preview(0).starts_with(
        "Sheet1: Revenue | Q1 | Q2 | Q3 | Q4\nRow 1: North | 125000 | 132000 | 141000 | 156000\n"
    ));
    assert_eq!(
        preview(1),
        "Sheet1: Revenue | Q1 | Q2 | Q3 | Q4\n\
         Row 1: North | 125000 | 132000 | 141000 | 156000\n\
         Row 2: South | 98000 | 103000 | 115000 | 122000"
    );
    assert_eq!(u[1]["fileType"], "application/vnd.ms-excel");
    assert_eq!(
        preview(2),
        "# Quarterly Report\n\
         # Summary\n\
         Revenue grew in every region this quarter.\n\
         The North region led with 156,000 in Q4.\n\
         ## Figures\n\
         Region | Q3 | Q4\n\
         North | 141000 | 156000\n\
         South | 115000 | 122000\n\
         Prepared for <script>alert(1)</script> & friends."
    );
    assert_eq!(u[2]["fileType"], DOCX);
    // The note escapes what the preview holds.
    assert!(u[2]["attachmentXml"].as_str().unwrap().contains(
        "Prepared for &lt;script&gt;alert(1)&lt;/script&gt; &amp; friends.\n  </Preview>"
    ));
    assert_eq!(
        preview(3),
        "Slide 1: Quarterly Review\n\
         Slide 2: (untitled)\n\
         Slide 3: Revenue by Region\n\
         Slide 4: Only a text box here"
    );
    let csv = preview(4);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 21, "{csv}");
    assert_eq!(lines[0], "Order | Customer | Amount");
    assert_eq!(lines[1], "Row 1: A-001 | Customer 1 | 3");
    assert_eq!(lines[5], "Row 5: A-005 | Customer 5, Ltd | 15");
    assert_eq!(lines[19], "Row 19: A-019 | Customer 19 | 57");
    assert_eq!(lines[20], "... (first 20 rows)");
    assert_eq!(
        preview(5),
        "Ferry fixture, page one.\n\
         The quick brown fox jumps over the lazy dog.\n\
         \n\
         Page two says hello."
    );
    assert_eq!(u[5]["fileType"], "application/pdf");
    for upload in &u {
        assert_eq!(upload["kind"], "document");
        assert!(upload.get("previewError").is_none(), "{upload}");
    }
}

#[tokio::test]
async fn images_record_width_and_height() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for (w, h) in [(1, 1), (17, 5), (640, 3)] {
        let u = upload_one(&app, &t, &format!("img-{w}x{h}.png"), &png(w, h)).await;
        assert_eq!(
            (u["width"].as_u64(), u["height"].as_u64()),
            (Some(w as u64), Some(h as u64))
        );
        assert_eq!(u["kind"], "image");
        assert_eq!(u["fileType"], "image/png");
        assert_eq!(u["preview"], Value::Null);
    }
    // A document has neither.
    let doc = upload_one(&app, &t, "a.txt", b"text").await;
    assert!(
        doc.get("width").is_none() && doc.get("height").is_none(),
        "{doc}"
    );
}

#[tokio::test]
async fn previews_honour_preview_max_chars() {
    let app = TestApp::with(|c| c.app.limits.preview_max_chars = 60).await;
    let t = thread(&app, "alice").await;
    let sheet = upload_one(&app, &t, "seed.xlsx", &fixture("seed.xlsx")).await;
    let preview = sheet["preview"].as_str().unwrap();
    assert!(preview.chars().count() <= 60, "{preview}");
    assert!(preview.chars().count() >= 50, "{preview}");
    assert!(
        SEED_XLSX_PREVIEW.starts_with(preview.trim_end_matches('…')),
        "{preview}"
    );
    let long: String = "0123456789".repeat(1000);
    let text = upload_one(&app, &t, "long.txt", long.as_bytes()).await;
    let preview = text["preview"].as_str().unwrap();
    assert!(preview.chars().count() <= 60, "{preview}");
    assert!(long.starts_with(preview.trim_end_matches('…')));
    // The bytes are whole, whatever the preview's length.
    assert_eq!(text["size"], 10_000);

    // The default is 4,000 characters.
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let text = upload_one(&app, &t, "long.txt", long.as_bytes()).await;
    let count = text["preview"].as_str().unwrap().chars().count();
    assert!((3_900..=4_000).contains(&count), "{count}");
}

/// An upload that must be kept whatever its preview: 201, the bytes whole in the sandbox, and
/// either a preview or `preview: null` with a `previewError` (never both, never neither).
fn check_kept(u: &Value, bytes: &[u8], dir: &std::path::Path) {
    assert_eq!(u["size"], bytes.len());
    assert_eq!(u["sha256"], sha256_hex(bytes));
    let rel = u["sandboxPath"]
        .as_str()
        .unwrap()
        .strip_prefix("/sandbox/")
        .unwrap();
    assert_eq!(std::fs::read(dir.join(rel)).unwrap(), bytes);
    match (&u["preview"], u.get("previewError")) {
        (Value::String(p), None) => assert!(p.chars().count() <= 4000),
        (Value::Null, Some(Value::String(e))) => {
            assert!(!e.is_empty());
            // The reason is for a person; it names no host path.
            assert!(!e.contains(dir.to_str().unwrap()), "{e}");
            assert!(u["attachmentXml"].as_str().unwrap().contains("<Preview>"));
        }
        other => panic!("preview and previewError: {other:?} in {u}"),
    }
}

async fn healthy(app: &TestApp) {
    app.send("GET", "/healthz", None, &[], Body::empty())
        .await
        .expect(200, None);
}

#[tokio::test]
async fn every_corpus_file_uploads_and_the_server_stays_healthy() {
    let Some(corpus) = corpus_dir() else { return };
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let dir = sandbox_dir(&app, &t).await;
    let mut seen = 0;
    let mut previews = std::collections::HashMap::new();
    for folder in ["docx", "pptx", "xlsx", "pdf"] {
        let mut files: Vec<_> = std::fs::read_dir(corpus.join(folder))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&path).unwrap();
            let u = upload_one(&app, &t, &name, &bytes).await;
            check_kept(&u, &bytes, &dir);
            previews.insert(name, u);
            seen += 1;
        }
    }
    assert!(seen >= 20, "only {seen} corpus files");

    // Encrypted: no preview, and a reason.
    let aes = &previews["aes-128.pdf"];
    assert_eq!(aes["preview"], Value::Null);
    assert!(
        aes["previewError"].as_str().unwrap().contains("encrypted"),
        "{aes}"
    );
    // Readable ones show what the source project's own reader shows.
    assert_eq!(
        previews["par-known-paragraphs.docx"]["preview"],
        "# Heading Paragraph\nNormal paragraph"
    );
    assert_eq!(
        previews["inventory-table.xlsx"]["preview"],
        "Sheet1: Item | Type | Quantity\nRow 1: 1 | Apple | 50\nRow 2: 2 | Banana | 200\nRow 3: 3 | Orange | 60\nRow 4: 4 | Pear | 100"
    );
    // A slide holding only a chart says so rather than "(untitled)".
    assert_eq!(
        previews["cht-charts.pptx"]["preview"],
        "Slide 1: [chart: series: Series 1, Series 2, Series 3]"
    );
    assert!(
        previews["simple3.pdf"]["preview"]
            .as_str()
            .unwrap()
            .starts_with("Hello"),
        "{}",
        previews["simple3.pdf"]
    );
    healthy(&app).await;
    // And it still previews a normal document afterwards.
    let after = upload_one(&app, &t, "after.xlsx", &fixture("seed.xlsx")).await;
    assert_eq!(after["preview"], SEED_XLSX_PREVIEW);
}

#[tokio::test]
async fn hostile_documents_upload_with_a_preview_error_and_the_server_stays_healthy() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let dir = sandbox_dir(&app, &t).await;
    let report = fixture("report.docx");
    let cyclic_pdf = {
        let objects: [&[u8]; 3] = [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Parent 2 0 R /Count 1 >>",
        ];
        let mut out = b"%PDF-1.4\n".to_vec();
        let mut offsets = Vec::new();
        for (i, body) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
            out.extend_from_slice(body);
            out.extend_from_slice(b"\nendobj\n");
        }
        let xref = out.len();
        out.extend_from_slice(b"xref\n0 4\n0000000000 65535 f\r\n");
        for off in offsets {
            out.extend_from_slice(format!("{off:010} 00000 n\r\n").as_bytes());
        }
        out.extend_from_slice(
            format!("trailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
        );
        out
    };
    let hostile: Vec<(&str, Vec<u8>, bool)> = vec![
        // (name, bytes, must the preview fail?)
        ("bomb.docx", docx_bomb(), true),
        ("laughs.xlsx", xlsx_billion_laughs(), true),
        ("truncated.docx", report[..report.len() / 2].to_vec(), true),
        ("noise.pdf", noise(64 * 1024), true),
        ("noise.xlsx", noise(16 * 1024), true),
        ("cyclic.pdf", cyclic_pdf, false),
    ];
    for (name, bytes, must_fail) in &hostile {
        let u = upload_one(&app, &t, name, bytes).await;
        check_kept(&u, bytes, &dir);
        if *must_fail {
            assert_eq!(u["preview"], Value::Null, "{name}: {u}");
        }
        healthy(&app).await;
    }
    // A real document still previews afterwards.
    let after = upload_one(&app, &t, "after.docx", &report).await;
    assert!(
        after["preview"]
            .as_str()
            .unwrap()
            .starts_with("# Quarterly Report")
    );
    assert_eq!(
        app.get(&t.url("/uploads"), &t.user).await.json()["uploads"]
            .as_array()
            .unwrap()
            .len(),
        hostile.len() + 1
    );
}

#[tokio::test]
async fn a_user_uploads_folder_replaced_by_a_link_is_not_followed() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let dir = sandbox_dir(&app, &t).await;
    let outside = tempfile::tempdir().unwrap();
    // The agent, working on the host, swaps its uploads folder for a link to somewhere else.
    std::fs::remove_dir(dir.join("user_uploads")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.join("user_uploads")).unwrap();
    let reply = upload_as(&app, &t, &t.user, &[("report.txt", BIN, b"private")]).await;
    assert!(
        files_below(outside.path(), &[]).is_empty(),
        "{}",
        reply.text()
    );
    assert_ne!(reply.status.as_u16(), 500, "{}", reply.text());
}

#[tokio::test]
async fn an_upload_cut_off_by_the_client_leaves_nothing() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let dir = sandbox_dir(&app, &t).await;
    let addr = app.spawn().await;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!(
                "POST /api/threads/{}/uploads?filename=cut.bin HTTP/1.1\r\nHost: x\r\n\
                 Authorization: Bearer {}\r\nContent-Type: application/octet-stream\r\n\
                 Content-Length: 10000000\r\n\r\n",
                t.id, t.user
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    stream.write_all(&vec![b'u'; 2 << 20]).await.unwrap();
    // Generous guards that only catch a state that never comes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while blob_tmp_files(&app).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never spooled the body"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    drop(stream);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !blob_tmp_files(&app).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the partial upload was never removed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        app.get(&t.url("/uploads"), &t.user).await.json()["uploads"],
        json!([])
    );
    assert!(files_below(&dir.join("user_uploads"), &[]).is_empty());
    assert!(blob_files(&app).is_empty(), "{:?}", blob_files(&app));
}

/// A person opens their own upload in the preview panel as they open a published file: by its
/// `previewKind`, through the one preview function, with the same headers.
#[tokio::test]
async fn an_upload_previews_by_its_kind_with_the_preview_headers() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let preview = |id: &str| t.url(&format!("/uploads/{id}/preview"));
    let csp = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox";

    // A document: sanitized HTML, under the sandboxing CSP.
    let md = b"# Plan\n\n<script>alert(1)</script>\n\n- **open** the shop\n";
    let doc = upload_one(&app, &t, "plan.md", md).await;
    assert_eq!(doc["previewKind"], "html");
    let reply = app
        .get(&preview(doc["id"].as_str().unwrap()), &t.user)
        .await;
    reply.expect(200, None);
    assert_eq!(
        reply.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(reply.header("content-security-policy"), Some(csp));
    let body = reply.text();
    assert!(body.contains("<strong>open</strong>"), "{body}");
    assert!(!body.to_ascii_lowercase().contains("<script"), "{body}");

    // An image: itself, its type from ferry's table.
    let image = png(6, 4);
    let img = upload_one(&app, &t, "shop.png", &image).await;
    assert_eq!(img["previewKind"], "image");
    let reply = app
        .get(&preview(img["id"].as_str().unwrap()), &t.user)
        .await;
    reply.expect(200, None);
    assert_eq!(reply.header("content-type"), Some("image/png"));
    assert_eq!(reply.header("content-security-policy"), Some(csp));
    assert_eq!(reply.body, image);

    // A PDF: inline, without the sandbox (the browser's viewer must run).
    let pdf = fixture("two-pages.pdf");
    let paper = upload_one(&app, &t, "paper.pdf", &pdf).await;
    assert_eq!(paper["previewKind"], "pdf");
    let reply = app
        .get(&preview(paper["id"].as_str().unwrap()), &t.user)
        .await;
    reply.expect(200, None);
    assert_eq!(reply.header("content-type"), Some("application/pdf"));
    assert!(
        reply
            .header("content-disposition")
            .unwrap()
            .starts_with("inline")
    );
    assert_eq!(reply.body, pdf);

    // No preview for a file of no known kind; nothing for another user.
    let raw = upload_one(&app, &t, "tool.exe", b"MZ\x90\x00").await;
    assert_eq!(raw["previewKind"], "none");
    app.get(&preview(raw["id"].as_str().unwrap()), &t.user)
        .await
        .expect(404, Some("NOT_FOUND"));
    app.get(&preview(doc["id"].as_str().unwrap()), &app.user("mallory"))
        .await
        .expect(404, Some("NOT_FOUND"));
    app.get(&preview("no-such-upload"), &t.user)
        .await
        .expect(404, Some("NOT_FOUND"));
}

/// `GET /api/limits` tells any caller the sizes the server enforces, so a client can refuse a
/// file before sending it.
#[tokio::test]
async fn the_limits_are_told_to_any_valid_token() {
    let app = TestApp::with(|c| c.app.limits.upload_max_bytes = 12_345).await;
    let t = thread(&app, "alice").await;
    for token in [&t.user, &t.agent] {
        let reply = app.get("/api/limits", token).await;
        reply.expect(200, None);
        let limits = reply.json();
        assert_eq!(limits["uploadMaxBytes"], 12_345);
        assert_eq!(limits["sendFileMaxBytes"], 20_480);
        for field in ["spaceMaxBytes", "sandboxMaxBytes", "publishMaxBytes"] {
            assert!(limits[field].as_u64().unwrap() > 0, "{field}: {limits}");
        }
    }
    app.send("GET", "/api/limits", None, &[], Body::empty())
        .await
        .expect(401, Some("UNAUTHENTICATED"));
}

#[tokio::test]
async fn a_filename_in_the_query_is_refused_beside_a_multipart_body() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let (content_type, body) = crate::thread_support::multipart(&[("a.txt", BIN, b"a")]);
    for query in ["?filename=", "?filename=b.txt"] {
        let refused = app
            .send(
                "POST",
                &t.url(&format!("/uploads{query}")),
                Some(&t.user),
                &[("content-type", content_type.as_str())],
                Body::from(body.clone()),
            )
            .await;
        refused.expect(400, Some("INVALID_REQUEST"));
    }
    let listed = app.get(&t.url("/uploads"), &t.user).await.json();
    assert_eq!(listed["uploads"], serde_json::json!([]), "nothing was kept");
}
