//! The S3 door (docs/s3.md), one test per family of operations, signed as any SigV4 client
//! signs (presigned URLs, from the rusty-s3 crate) and sent over a real socket: buckets,
//! objects, listings, multipart uploads, checksums, and who reaches what. The suites of real
//! S3 clients (boto3, the AWS CLI, rclone, fsspec) run beside these in tests/clients.

use crate::support::TestApp;
use crate::thread_support::thread;
use rusty_s3::actions::{CreateMultipartUpload, ListObjectsV2};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::time::Duration;

const LIFETIME: Duration = Duration::from_secs(300);
const MIB: usize = 1024 * 1024;

/// A person's (or an agent's) S3 access: its key, and the server's address.
struct Door {
    client: reqwest::Client,
    base: url::Url,
    credentials: Credentials,
}

impl Door {
    /// A new access key of `token`'s principal, on the server at `addr`.
    async fn of(app: &TestApp, addr: std::net::SocketAddr, token: &str) -> Door {
        let key = app.post_json("/api/s3/keys", token, json!({})).await;
        key.expect(201, None);
        let key = key.json();
        Door {
            client: reqwest::Client::new(),
            base: format!("http://{addr}/s3/").parse().unwrap(),
            credentials: Credentials::new(
                key["accessKeyId"].as_str().unwrap(),
                key["secretAccessKey"].as_str().unwrap(),
            ),
        }
    }

    fn bucket(&self, name: &str) -> Bucket {
        Bucket::new(
            self.base.clone(),
            UrlStyle::Path,
            name.to_owned(),
            "us-east-1",
        )
        .unwrap()
    }

    /// Sends a signed action with `body`, answering the status and the body as text.
    async fn send<'a, A: S3Action<'a>>(&self, action: &A, body: Vec<u8>) -> (u16, String) {
        let method = match A::METHOD {
            rusty_s3::Method::Get => reqwest::Method::GET,
            rusty_s3::Method::Head => reqwest::Method::HEAD,
            rusty_s3::Method::Put => reqwest::Method::PUT,
            rusty_s3::Method::Post => reqwest::Method::POST,
            rusty_s3::Method::Delete => reqwest::Method::DELETE,
        };
        self.request(method, action.sign(LIFETIME), body).await
    }

    /// Sends a request to a signed URL.
    async fn request(
        &self,
        method: reqwest::Method,
        url: url::Url,
        body: Vec<u8>,
    ) -> (u16, String) {
        let reply = self
            .client
            .request(method, url)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = reply.status().as_u16();
        (status, reply.text().await.unwrap())
    }

    async fn put(&self, bucket: &str, key: &str, bytes: &[u8]) -> (u16, String) {
        let bucket = self.bucket(bucket);
        self.send(
            &bucket.put_object(Some(&self.credentials), key),
            bytes.to_vec(),
        )
        .await
    }

    async fn get(&self, bucket: &str, key: &str) -> (u16, String) {
        let bucket = self.bucket(bucket);
        self.send(&bucket.get_object(Some(&self.credentials), key), Vec::new())
            .await
    }

    /// Uploads one part of a multipart upload, answering its ETag.
    async fn upload_part(
        &self,
        bucket: &Bucket,
        key: &str,
        number: u16,
        upload_id: &str,
        bytes: &[u8],
    ) -> String {
        let action = bucket.upload_part(Some(&self.credentials), key, number, upload_id);
        let reply = self
            .client
            .put(action.sign(LIFETIME))
            .body(bytes.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status().as_u16(), 200);
        reply.headers()["etag"].to_str().unwrap().to_owned()
    }

    /// Completes a multipart upload from the parts of these ETags, in this order.
    async fn complete(
        &self,
        bucket: &Bucket,
        key: &str,
        upload_id: &str,
        etags: &[&str],
    ) -> (u16, String) {
        let action = bucket.complete_multipart_upload(
            Some(&self.credentials),
            key,
            upload_id,
            etags.iter().copied(),
        );
        let url = action.sign(LIFETIME);
        let xml = action.body();
        self.request(reqwest::Method::POST, url, xml.into_bytes())
            .await
    }
}

/// The S3 error code of an XML error answer.
fn code_of(body: &str) -> &str {
    body.split("<Code>")
        .nth(1)
        .and_then(|rest| rest.split("</Code>").next())
        .unwrap_or_default()
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Alice's door to a running `app`, and her bucket `notes`, made.
async fn alice_with_notes(app: &TestApp) -> (Door, Bucket) {
    let addr = app.spawn().await;
    let alice = Door::of(app, addr, &app.user("alice")).await;
    let notes = alice.bucket("notes");
    let made = alice
        .send(&notes.create_bucket(&alice.credentials), Vec::new())
        .await;
    assert_eq!(made.0, 200, "{}", made.1);
    (alice, notes)
}

#[tokio::test]
async fn buckets_are_the_callers_spaces() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let alice = Door::of(&app, addr, &app.user("alice")).await;
    let bob = Door::of(&app, addr, &app.user("bob")).await;

    let notes = alice.bucket("notes");
    assert_eq!(
        alice
            .send(&notes.create_bucket(&alice.credentials), Vec::new())
            .await
            .0,
        200
    );
    // The HTTP API sees the same space.
    let listed = app.get("/api/spaces", &app.user("alice")).await.json();
    assert_eq!(listed["spaces"][0]["name"], "notes");
    // Another user's space of that name is not reachable: to Bob, it does not exist.
    let (status, body) = bob.put("notes", "x.md", b"x").await;
    assert_eq!((status, code_of(&body)), (404, "NoSuchBucket"), "{body}");
    // A bucket holding objects is not removed; an empty one is.
    alice.put("notes", "a.md", b"a").await;
    let (status, body) = alice
        .send(&notes.delete_bucket(&alice.credentials), Vec::new())
        .await;
    assert_eq!((status, code_of(&body)), (409, "BucketNotEmpty"), "{body}");
    let a = notes.delete_object(Some(&alice.credentials), "a.md");
    assert_eq!(alice.send(&a, Vec::new()).await.0, 204);
    let (status, _) = alice
        .send(&notes.delete_bucket(&alice.credentials), Vec::new())
        .await;
    assert_eq!(status, 204);
    // A thread's sandbox name is reserved.
    let sandbox = alice.bucket("sandbox-anything");
    let (status, body) = alice
        .send(&sandbox.create_bucket(&alice.credentials), Vec::new())
        .await;
    assert_eq!(
        (status, code_of(&body)),
        (400, "InvalidBucketName"),
        "{body}"
    );
}

#[tokio::test]
async fn objects_are_written_read_and_deleted_with_sha256_etags() {
    let app = TestApp::new().await;
    let (alice, notes) = alice_with_notes(&app).await;

    assert_eq!(alice.put("notes", "ideas/tea.md", b"# Tea\n").await.0, 200);
    assert_eq!(
        alice.get("notes", "ideas/tea.md").await,
        (200, "# Tea\n".to_owned())
    );
    // The ETag is the SHA-256 the HTTP API answers too.
    let head = alice
        .client
        .head(
            notes
                .head_object(Some(&alice.credentials), "ideas/tea.md")
                .sign(LIFETIME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        head.headers()["etag"].to_str().unwrap(),
        format!("\"{}\"", hex_sha256(b"# Tea\n"))
    );
    let api = app
        .get("/api/spaces/notes/files/ideas/tea.md", &app.user("alice"))
        .await;
    assert_eq!(api.text(), "# Tea\n");
    // A missing key: NoSuchKey; deleting it succeeds, as on S3.
    let (status, body) = alice.get("notes", "nothing.md").await;
    assert_eq!((status, code_of(&body)), (404, "NoSuchKey"), "{body}");
    let gone = notes.delete_object(Some(&alice.credentials), "nothing.md");
    assert_eq!(alice.send(&gone, Vec::new()).await.0, 204);
    // A key that breaks the path rules (a control character) is refused, and nothing is stored.
    let (status, body) = alice.put("notes", "tab\there.md", b"x").await;
    assert_eq!((status, code_of(&body)), (400, "InvalidArgument"), "{body}");
}

#[tokio::test]
async fn listings_page_through_prefixes_and_folders() {
    let app = TestApp::new().await;
    let (alice, notes) = alice_with_notes(&app).await;
    for key in ["a.md", "b.md", "drafts/c.md", "drafts/d.md", "e.md"] {
        assert_eq!(alice.put("notes", key, key.as_bytes()).await.0, 200);
    }
    // With a delimiter: the top level's files, and `drafts/` as a common prefix.
    let mut list = notes.list_objects_v2(Some(&alice.credentials));
    list.with_delimiter("/");
    let (status, body) = alice.send(&list, Vec::new()).await;
    assert_eq!(status, 200, "{body}");
    let page = ListObjectsV2::parse_response(&body).unwrap();
    let keys: Vec<_> = page.contents.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["a.md", "b.md", "e.md"]);
    let prefixes: Vec<_> = page
        .common_prefixes
        .iter()
        .map(|p| p.prefix.as_str())
        .collect();
    assert_eq!(prefixes, ["drafts/"]);
    // Two at a time, every key once, in order.
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut list = notes.list_objects_v2(Some(&alice.credentials));
        list.with_max_keys(2);
        if let Some(token) = &token {
            list.with_continuation_token(token.clone());
        }
        let (status, body) = alice.send(&list, Vec::new()).await;
        assert_eq!(status, 200, "{body}");
        let page = ListObjectsV2::parse_response(&body).unwrap();
        assert!(page.contents.len() <= 2);
        seen.extend(page.contents.into_iter().map(|o| o.key));
        match page.next_continuation_token {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["a.md", "b.md", "drafts/c.md", "drafts/d.md", "e.md"]);
    // A prefix narrows it.
    let mut list = notes.list_objects_v2(Some(&alice.credentials));
    list.with_prefix("drafts/");
    let page = ListObjectsV2::parse_response(&alice.send(&list, Vec::new()).await.1).unwrap();
    assert_eq!(page.contents.len(), 2);
}

#[tokio::test]
async fn a_multipart_upload_becomes_one_object_and_is_held_to_s3s_rules() {
    let app = TestApp::with(|c| c.app.limits.space_max_bytes = 32 * MIB as u64).await;
    let (alice, notes) = alice_with_notes(&app).await;
    let start = |key| notes.create_multipart_upload(Some(&alice.credentials), key);

    let (status, body) = alice.send(&start("big.bin"), Vec::new()).await;
    assert_eq!(status, 200, "{body}");
    let upload = CreateMultipartUpload::parse_response(&body).unwrap();
    let parts = [vec![b'a'; 5 * MIB], vec![b'b'; 5 * MIB], b"tail".to_vec()];
    let mut etags = Vec::new();
    for (number, part) in (1..).zip(&parts) {
        etags.push(
            alice
                .upload_part(&notes, "big.bin", number, upload.upload_id(), part)
                .await,
        );
    }
    // A completion naming the parts out of order is refused, and makes nothing.
    let (status, body) = alice
        .complete(
            &notes,
            "big.bin",
            upload.upload_id(),
            &[&etags[1], &etags[0], &etags[2]],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        ["InvalidPart", "InvalidPartOrder"].contains(&code_of(&body)),
        "{body}"
    );
    // In order: one object, the parts' bytes end to end.
    let in_order: Vec<&str> = etags.iter().map(String::as_str).collect();
    let (status, body) = alice
        .complete(&notes, "big.bin", upload.upload_id(), &in_order)
        .await;
    assert_eq!(status, 200, "{body}");
    let whole = app
        .get("/api/spaces/notes/files/big.bin", &app.user("alice"))
        .await;
    assert_eq!(whole.body, parts.concat());

    // A part under 5 MiB that is not the last makes the completion EntityTooSmall.
    let upload =
        CreateMultipartUpload::parse_response(&alice.send(&start("small.bin"), Vec::new()).await.1)
            .unwrap();
    let mut etags = Vec::new();
    for number in 1..=2 {
        etags.push(
            alice
                .upload_part(&notes, "small.bin", number, upload.upload_id(), b"tiny")
                .await,
        );
    }
    let small: Vec<&str> = etags.iter().map(String::as_str).collect();
    let (status, body) = alice
        .complete(&notes, "small.bin", upload.upload_id(), &small)
        .await;
    assert_eq!((status, code_of(&body)), (400, "EntityTooSmall"), "{body}");
    // Aborted, it is gone.
    let abort =
        notes.abort_multipart_upload(Some(&alice.credentials), "small.bin", upload.upload_id());
    assert_eq!(alice.send(&abort, Vec::new()).await.0, 204);
    let parts = notes.list_parts(Some(&alice.credentials), "small.bin", upload.upload_id());
    let (status, body) = alice.send(&parts, Vec::new()).await;
    assert_eq!((status, code_of(&body)), (404, "NoSuchUpload"), "{body}");
}

#[tokio::test]
async fn a_body_that_does_not_match_its_checksum_is_refused_and_the_object_kept() {
    let app = TestApp::new().await;
    let (alice, notes) = alice_with_notes(&app).await;
    alice.put("notes", "kept.md", b"first").await;
    let url = notes
        .put_object(Some(&alice.credentials), "kept.md")
        .sign(LIFETIME);
    // The MD5 of other bytes.
    let reply = alice
        .client
        .put(url)
        .header("content-md5", "XUFAKrxLKna5cZ2REBfFkg==")
        .body(b"second".to_vec())
        .send()
        .await
        .unwrap();
    let status = reply.status().as_u16();
    let body = reply.text().await.unwrap();
    assert_eq!((status, code_of(&body)), (400, "BadDigest"), "{body}");
    assert_eq!(alice.get("notes", "kept.md").await.1, "first");
}

#[tokio::test]
async fn a_sandbox_bucket_is_its_agents_to_write_and_its_owners_to_read() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let t = thread(&app, "alice").await;
    let bucket = format!("sandbox-{}", t.id);
    let agent = Door::of(&app, addr, &t.agent).await;
    let owner = Door::of(&app, addr, &t.user).await;
    let stranger = Door::of(&app, addr, &app.user("mallory")).await;

    assert_eq!(
        agent.put(&bucket, "outputs/report.md", b"# Report").await.0,
        200
    );
    assert_eq!(owner.get(&bucket, "outputs/report.md").await.1, "# Report");
    // The owner reads but does not write; skills/ is nobody's to write.
    let (status, body) = owner.put(&bucket, "outputs/mine.md", b"x").await;
    assert_eq!((status, code_of(&body)), (403, "AccessDenied"), "{body}");
    let (status, body) = agent.put(&bucket, "skills/new.md", b"x").await;
    assert_eq!((status, code_of(&body)), (403, "AccessDenied"), "{body}");
    // To anyone else, the sandbox does not exist.
    let (status, body) = stranger.get(&bucket, "outputs/report.md").await;
    assert_eq!((status, code_of(&body)), (404, "NoSuchBucket"), "{body}");
}

#[tokio::test]
async fn an_unsigned_or_forged_request_is_refused() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let alice = Door::of(&app, addr, &app.user("alice")).await;
    let client = reqwest::Client::new();
    let unsigned = client
        .get(format!("http://{addr}/s3/notes/a.md"))
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status().as_u16(), 403);
    assert_eq!(code_of(&unsigned.text().await.unwrap()), "AccessDenied");
    let forged = Door {
        client,
        base: alice.base.clone(),
        credentials: Credentials::new(alice.credentials.key(), "not-the-secret"),
    };
    let (status, body) = forged.get("notes", "a.md").await;
    assert_eq!(
        (status, code_of(&body)),
        (403, "SignatureDoesNotMatch"),
        "{body}"
    );
}
