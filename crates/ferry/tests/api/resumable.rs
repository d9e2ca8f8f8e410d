//! Resumable uploads, tus 1.0 (docs/reference/resumable-uploads.md): the protocol's headers,
//! uploads into a thread and into a space that finish as the plain routes' own, and every
//! refusal, driven in process.

use axum::body::Body;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::Digest as _;

use crate::support::{Reply, TestApp};
use crate::thread_support::thread;

const TUS: (&str, &str) = ("tus-resumable", "1.0.0");
const OCTETS: (&str, &str) = ("content-type", "application/offset+octet-stream");

fn metadata(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k} {}", STANDARD.encode(v)))
        .collect::<Vec<_>>()
        .join(",")
}

async fn create(app: &TestApp, token: &str, length: usize, meta: &str) -> Reply {
    let length = length.to_string();
    app.send(
        "POST",
        "/api/uploads/resumable",
        Some(token),
        &[TUS, ("upload-length", &length), ("upload-metadata", meta)],
        Body::empty(),
    )
    .await
}

async fn patch(app: &TestApp, token: &str, location: &str, offset: u64, bytes: &[u8]) -> Reply {
    let offset = offset.to_string();
    app.send(
        "PATCH",
        location,
        Some(token),
        &[TUS, OCTETS, ("upload-offset", &offset)],
        Body::from(bytes.to_vec()),
    )
    .await
}

async fn head(app: &TestApp, token: &str, location: &str) -> Reply {
    app.send("HEAD", location, Some(token), &[TUS], Body::empty())
        .await
}

fn offset(reply: &Reply) -> u64 {
    reply.header("upload-offset").unwrap().parse().unwrap()
}

fn created(reply: &Reply) -> String {
    reply.expect(201, None);
    assert_eq!(reply.header("tus-resumable"), Some("1.0.0"));
    assert!(
        reply
            .header("upload-expires")
            .is_some_and(|d| d.ends_with("GMT"))
    );
    reply.header("location").unwrap().to_owned()
}

#[tokio::test]
async fn options_say_what_is_spoken() {
    let app = TestApp::new().await;
    let reply = app
        .send(
            "OPTIONS",
            "/api/uploads/resumable",
            None,
            &[],
            Body::empty(),
        )
        .await;
    reply.expect(204, None);
    assert_eq!(reply.header("tus-version"), Some("1.0.0"));
    assert_eq!(reply.header("tus-resumable"), Some("1.0.0"));
    assert_eq!(
        reply.header("tus-extension"),
        Some("creation,creation-with-upload,termination,expiration,checksum")
    );
    assert_eq!(reply.header("tus-checksum-algorithm"), Some("sha1,sha256"));
    assert!(
        reply
            .header("tus-max-size")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
}

#[tokio::test]
async fn a_thread_upload_in_parts_is_the_plain_upload() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let meta = metadata(&[
        ("threadId", &t.id),
        ("filename", "big data.bin"),
        ("filetype", "x"),
    ]);
    let location = created(&create(&app, &t.user, bytes.len(), &meta).await);
    assert!(
        location.starts_with("/api/uploads/resumable/"),
        "{location}"
    );

    let first = patch(&app, &t.user, &location, 0, &bytes[..100_000]).await;
    first.expect(204, None);
    assert_eq!(offset(&first), 100_000);
    let asked = head(&app, &t.user, &location).await;
    asked.expect(200, None);
    assert_eq!(offset(&asked), 100_000);
    assert_eq!(asked.header("upload-length"), Some("300000"));
    assert_eq!(asked.header("upload-metadata"), Some(meta.as_str()));
    assert_eq!(asked.header("cache-control"), Some("no-store"));

    // The second part names its checksum (SHA-1, as tus asks every server to take).
    let sum = STANDARD.encode(sha1_of(&bytes[100_000..200_000]));
    let second = app
        .send(
            "PATCH",
            &location,
            Some(&t.user),
            &[
                TUS,
                OCTETS,
                ("upload-offset", "100000"),
                ("upload-checksum", &format!("sha1 {sum}")),
            ],
            Body::from(bytes[100_000..200_000].to_vec()),
        )
        .await;
    second.expect(204, None);
    assert_eq!(offset(&second), 200_000);
    let last = patch(&app, &t.user, &location, 200_000, &bytes[200_000..]).await;
    last.expect(204, None);
    assert_eq!(offset(&last), 300_000);

    // The answer is the plain upload's, and the upload is one of the thread's like any other.
    let answer = app.get(&location, &t.user).await;
    answer.expect(201, None);
    let upload = answer.json()["uploads"][0].clone();
    assert_eq!(upload["fileName"], "big data.bin");
    assert_eq!(upload["size"], 300_000);
    assert_eq!(upload["sha256"], hex(&sha2::Sha256::digest(&bytes)));
    let listed = app.get(&t.url("/uploads"), &t.user).await.json();
    assert_eq!(listed["uploads"][0]["id"], upload["id"]);
    let copy = app
        .get(&t.url("/sandbox/user_uploads/big%20data.bin"), &t.agent)
        .await;
    assert_eq!(copy.body, bytes);
    // A HEAD after the end still answers the whole length; a PATCH at the end changes nothing.
    assert_eq!(offset(&head(&app, &t.user, &location).await), 300_000);
    patch(&app, &t.user, &location, 300_000, b"")
        .await
        .expect(204, None);
    assert_eq!(
        app.get(&t.url("/uploads"), &t.user).await.json()["uploads"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

fn sha1_of(bytes: &[u8]) -> Vec<u8> {
    use sha1::Digest as _;
    sha1::Sha1::digest(bytes).to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_space_file_in_one_request_is_the_plain_write() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    let meta = metadata(&[
        ("spaceName", "notes"),
        ("path", "ideas/tea.md"),
        ("contentType", "text/markdown; charset=utf-8"),
        ("ifNoneMatch", "*"),
    ]);
    // creation-with-upload: the bytes come with the creation.
    let reply = app
        .send(
            "POST",
            "/api/uploads/resumable",
            Some(&alice),
            &[
                TUS,
                OCTETS,
                ("upload-length", "5"),
                ("upload-metadata", &meta),
            ],
            Body::from("# Tea"),
        )
        .await;
    let location = created(&reply);
    assert_eq!(offset(&reply), 5);
    let file = app
        .get("/api/spaces/notes/files/ideas/tea.md", &alice)
        .await;
    file.expect(200, None);
    assert_eq!(file.text(), "# Tea");
    assert_eq!(
        file.header("content-type"),
        Some("text/markdown; charset=utf-8")
    );
    let answer = app.get(&location, &alice).await;
    answer.expect(201, None);
    assert_eq!(answer.json()["path"], "ideas/tea.md");
    assert_eq!(answer.header("etag"), file.header("etag"));
    // Create-only: the path is taken now, so a second such upload is refused at creation.
    create(&app, &alice, 5, &meta)
        .await
        .expect(409, Some("ALREADY_EXISTS"));
}

#[tokio::test]
async fn every_refusal_is_clear_and_keeps_nothing() {
    let app = TestApp::with(|c| c.app.limits.space_max_bytes = 1000).await;
    let t = thread(&app, "alice").await;
    let alice = t.user.clone();
    let meta = metadata(&[("threadId", &t.id), ("filename", "a.bin")]);

    // Without the protocol's version.
    let bare = app
        .send(
            "POST",
            "/api/uploads/resumable",
            Some(&alice),
            &[("upload-length", "3"), ("upload-metadata", &meta)],
            Body::empty(),
        )
        .await;
    bare.expect(412, Some("PRECONDITION_FAILED"));
    assert_eq!(bare.header("tus-version"), Some("1.0.0"));
    // Targets that cannot be written.
    let space = |path: &str| {
        metadata(&[
            ("spaceName", "notes"),
            ("path", path),
            ("contentType", "text/plain"),
        ])
    };
    create(&app, &alice, 3, &space("../x"))
        .await
        .expect(400, Some("INVALID_PATH"));
    create(&app, &alice, 1001, &space("big.txt"))
        .await
        .expect(413, Some("REQUEST_TOO_LARGE"));
    create(
        &app,
        &alice,
        3,
        &metadata(&[
            ("spaceName", "notes"),
            ("path", "a"),
            ("contentType", "<x>"),
        ]),
    )
    .await
    .expect(415, Some("UNSUPPORTED_MEDIA_TYPE"));
    create(&app, &alice, 3, &metadata(&[("filename", "a.bin")]))
        .await
        .expect(400, Some("INVALID_REQUEST"));
    create(&app, &alice, 3, "threadId !!!")
        .await
        .expect(400, Some("INVALID_REQUEST"));
    // Metadata longer than any target needs (every HEAD would answer it again).
    let padded = format!("{meta},filetype {}", STANDARD.encode("x".repeat(4000)));
    let long = create(&app, &alice, 3, &padded).await;
    long.expect(400, Some("INVALID_REQUEST"));
    assert!(long.text().contains("at most 4096"), "{}", long.text());
    // Another user's thread does not exist for them; the thread's agent may not upload.
    create(&app, &app.user("mallory"), 3, &meta)
        .await
        .expect(404, Some("NOT_FOUND"));
    create(&app, &t.agent, 3, &meta)
        .await
        .expect(403, Some("FORBIDDEN"));

    let location = created(&create(&app, &alice, 10, &meta).await);
    // Only its maker sees it.
    for token in [app.user("mallory"), t.agent.clone()] {
        head(&app, &token, &location).await.expect(404, None);
        patch(&app, &token, &location, 0, b"abc")
            .await
            .expect(404, Some("NOT_FOUND"));
        app.send("DELETE", &location, Some(&token), &[TUS], Body::empty())
            .await
            .expect(404, Some("NOT_FOUND"));
    }
    // A wrong offset, a wrong type, a bad checksum, too many bytes: nothing is kept.
    patch(&app, &alice, &location, 3, b"abc")
        .await
        .expect(409, Some("OFFSET_MISMATCH"));
    // An offset is digits only: a sign is not a number of bytes.
    for written in ["+0", "-0", " 0x0", ""] {
        app.send(
            "PATCH",
            &location,
            Some(&alice),
            &[TUS, OCTETS, ("upload-offset", written)],
            Body::from("abc"),
        )
        .await
        .expect(400, Some("INVALID_REQUEST"));
    }
    app.send(
        "PATCH",
        &location,
        Some(&alice),
        &[
            TUS,
            ("content-type", "application/octet-stream"),
            ("upload-offset", "0"),
        ],
        Body::from("abc"),
    )
    .await
    .expect(415, Some("UNSUPPORTED_MEDIA_TYPE"));
    let wrong = STANDARD.encode(sha1_of(b"xyz"));
    app.send(
        "PATCH",
        &location,
        Some(&alice),
        &[
            TUS,
            OCTETS,
            ("upload-offset", "0"),
            ("upload-checksum", &format!("sha1 {wrong}")),
        ],
        Body::from("abc"),
    )
    .await
    .expect(460, Some("CHECKSUM_MISMATCH"));
    app.send(
        "PATCH",
        &location,
        Some(&alice),
        &[
            TUS,
            OCTETS,
            ("upload-offset", "0"),
            ("upload-checksum", "md5 AAAA"),
        ],
        Body::from("abc"),
    )
    .await
    .expect(400, Some("INVALID_REQUEST"));
    patch(&app, &alice, &location, 0, b"0123456789X")
        .await
        .expect(413, Some("REQUEST_TOO_LARGE"));
    assert_eq!(offset(&head(&app, &alice, &location).await), 0);

    // A body that breaks off keeps what arrived.
    let cut = futures::stream::iter(vec![
        Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"0123")),
        Err(std::io::Error::other("the connection dropped")),
    ]);
    let _ = app
        .send(
            "PATCH",
            &location,
            Some(&alice),
            &[TUS, OCTETS, ("upload-offset", "0")],
            Body::from_stream(cut),
        )
        .await;
    assert_eq!(offset(&head(&app, &alice, &location).await), 4);

    // Termination removes it.
    app.send("DELETE", &location, Some(&alice), &[TUS], Body::empty())
        .await
        .expect(204, None);
    head(&app, &alice, &location).await.expect(404, None);
    patch(&app, &alice, &location, 4, b"x")
        .await
        .expect(404, Some("NOT_FOUND"));
    assert!(
        app.get(&t.url("/uploads"), &alice).await.json()["uploads"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn unfinished_uploads_are_capped_and_expire() {
    let app = TestApp::with(|c| {
        c.app.limits.resumable_max_unfinished = 2;
        c.app.limits.resumable_expiry = std::time::Duration::from_secs(1);
    })
    .await;
    let t = thread(&app, "alice").await;
    let meta = metadata(&[("threadId", &t.id), ("filename", "a.bin")]);
    let first = created(&create(&app, &t.user, 3, &meta).await);
    created(&create(&app, &t.user, 3, &meta).await);
    create(&app, &t.user, 3, &meta)
        .await
        .expect(429, Some("TOO_MANY_REQUESTS"));
    // Another principal has a share of its own.
    created(&create(&app, &app.service(Some("alice")), 3, &meta).await);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    head(&app, &t.user, &first).await.expect(404, None);
    patch(&app, &t.user, &first, 0, b"abc")
        .await
        .expect(404, Some("NOT_FOUND"));
    // Expired ones no longer count.
    created(&create(&app, &t.user, 3, &meta).await);
}
