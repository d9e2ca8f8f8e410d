//! Helpers for the thread suites (threads, sandbox, uploads, published, events, send_file):
//! threads with their agents, multipart bodies, documents built in the test (zips, PNGs), an
//! SSE reader over a real socket, and where the shared corpus lives.
#![allow(dead_code, unreachable_pub)]

use axum::body::Body;
use futures::{Stream, StreamExt};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use crate::support::{Reply, TestApp};

#[allow(unused_imports)] // not every test target builds documents
pub use ferry_test_support::documents::*;

/// The content type of sandbox writes that do not care about it.
pub const BIN: &str = "application/octet-stream";

/// A thread, its owner's token and its agent's token.
#[derive(Debug, Clone)]
pub struct Thread {
    pub id: String,
    pub owner: String,
    pub user: String,
    pub agent: String,
}

impl Thread {
    pub fn url(&self, rest: &str) -> String {
        format!("/api/threads/{}{rest}", self.id)
    }
}

/// Creates a thread for `owner` through the API and mints its agent's token.
pub async fn thread(app: &TestApp, owner: &str) -> Thread {
    let user = app.user(owner);
    let reply = app
        .post_json("/api/threads", &user, serde_json::json!({ "title": "t" }))
        .await;
    reply.expect(201, None);
    let id = reply.json()["id"].as_str().unwrap().to_owned();
    let agent = app.agent(owner, &id);
    Thread {
        id,
        owner: owner.to_owned(),
        user,
        agent,
    }
}

/// The sandbox folder on this host, as `GET /api/threads/{id}` tells the agent.
pub async fn sandbox_dir(app: &TestApp, t: &Thread) -> PathBuf {
    let reply = app.get(&t.url(""), &t.agent).await;
    reply.expect(200, None);
    PathBuf::from(
        reply.json()["sandboxDir"]
            .as_str()
            .expect("agents are told sandboxDir"),
    )
}

/// Writes a sandbox file as the agent (`rel` is relative to `/sandbox/`).
pub async fn put_file(app: &TestApp, t: &Thread, rel: &str, bytes: &[u8]) -> Reply {
    let reply = app
        .put(&t.url(&format!("/sandbox/{rel}")), &t.agent, BIN, bytes)
        .await;
    assert!(
        matches!(reply.status.as_u16(), 200 | 201),
        "writing {rel}: {} {}",
        reply.status,
        reply.text()
    );
    reply
}

/// Publishes a sandbox file as the agent.
pub async fn publish(app: &TestApp, t: &Thread, file_path: &str, display_name: &str) -> Reply {
    app.post_json(
        &t.url("/published"),
        &t.agent,
        serde_json::json!({ "file_path": file_path, "display_name": display_name }),
    )
    .await
}

/// A `multipart/form-data` body with one `file` part per (filename, content type, bytes);
/// returns the request's content type and the body.
pub fn multipart(files: &[(&str, &str, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "ferry-test-boundary-7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, content_type, bytes) in files {
        write!(
            body,
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
             Content-Type: {content_type}\r\n\r\n"
        )
        .unwrap();
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    write!(body, "--{boundary}--\r\n").unwrap();
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Uploads files in one multipart request as `token`.
pub async fn upload_as(
    app: &TestApp,
    t: &Thread,
    token: &str,
    files: &[(&str, &str, &[u8])],
) -> Reply {
    let (content_type, body) = multipart(files);
    app.send(
        "POST",
        &t.url("/uploads"),
        Some(token),
        &[("content-type", content_type.as_str())],
        Body::from(body),
    )
    .await
}

/// Uploads one file as the owner and returns its entry of the answer.
pub async fn upload_one(app: &TestApp, t: &Thread, name: &str, bytes: &[u8]) -> serde_json::Value {
    let reply = upload_as(app, t, &t.user, &[(name, BIN, bytes)]).await;
    reply.expect(201, None);
    let uploads = reply.json()["uploads"].clone();
    assert_eq!(uploads.as_array().unwrap().len(), 1, "{uploads}");
    uploads[0].clone()
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn pct(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (for reading `filename*`).
pub fn pct_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 3 <= bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every regular file below `dir`, recursively, skipping folders named in `skip`.
pub fn files_below(dir: &Path, skip: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if kind.is_dir() {
            if !skip.contains(&name.as_str()) {
                out.extend(files_below(&entry.path(), skip));
            }
        } else {
            out.push(entry.path());
        }
    }
    out.sort();
    out
}

/// The stored blobs of a test server (not its spool of temporary files).
pub fn blob_files(app: &TestApp) -> Vec<PathBuf> {
    files_below(&app.dir.path().join("blobs"), &[".tmp"])
}

/// The spool of temporary files a request uses before it keeps anything.
pub fn blob_tmp_files(app: &TestApp) -> Vec<PathBuf> {
    files_below(&app.dir.path().join("blobs/.tmp"), &[])
}

/// The committed fixtures of ferry-extract (made by tests/fixtures/make_fixtures.py).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ferry-extract/tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub use ferry_test_support::corpus::dir as corpus_dir;

// ---------------------------------------------------------------------------------------------
// Documents built in the test (zips, XLSX and the hostile ones come from `documents`).

/// Bytes that are no document at all: a fixed xorshift sequence.
pub fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Server-Sent Events over a real socket.

/// One SSE frame: an event (`id:` and `data:`) or a comment line (`:` keep-alive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Event { id: Option<i64>, data: String },
    Comment(String),
}

/// A stored event as the stream delivered it.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: i64,
    /// The `data:` text, exactly as sent.
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>;

/// A subscriber to a thread's event stream.
pub struct Sse {
    stream: ByteStream,
    buffer: String,
    pub headers: reqwest::header::HeaderMap,
}

impl std::fmt::Debug for Sse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sse").finish()
    }
}

/// How long a test waits for an event that should come before calling it lost.
pub const EVENT_WAIT: Duration = Duration::from_secs(20);

impl Sse {
    /// Opens `GET /api/threads/{thread}/events[?query]` with optional `Last-Event-ID`.
    pub async fn connect(
        client: &reqwest::Client,
        addr: SocketAddr,
        thread: &str,
        token: &str,
        query: &str,
        last_event_id: Option<i64>,
    ) -> Sse {
        let url = format!("http://{addr}/api/threads/{thread}/events{query}");
        Sse::open(client, &url, token, last_event_id).await
    }

    /// Opens any event stream at `url` with optional `Last-Event-ID`.
    pub async fn open(
        client: &reqwest::Client,
        url: &str,
        token: &str,
        last_event_id: Option<i64>,
    ) -> Sse {
        let mut request = client
            .get(url)
            .bearer_auth(token)
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        let reply = request.send().await.unwrap();
        assert_eq!(reply.status().as_u16(), 200);
        let headers = reply.headers().clone();
        Sse {
            stream: Box::pin(reply.bytes_stream()),
            buffer: String::new(),
            headers,
        }
    }

    /// The next frame; panics when none comes within `wait`.
    pub async fn next_frame_within(&mut self, wait: Duration) -> Frame {
        tokio::time::timeout(wait, self.next_frame())
            .await
            .unwrap_or_else(|_| panic!("no SSE frame within {wait:?}"))
    }

    async fn next_frame(&mut self) -> Frame {
        loop {
            let normalized = self.buffer.replace("\r\n", "\n");
            if let Some(end) = normalized.find("\n\n") {
                let block = normalized[..end].to_owned();
                self.buffer = normalized[end + 2..].to_owned();
                if block.is_empty() {
                    continue;
                }
                return parse_block(&block);
            }
            self.buffer = normalized;
            match self.stream.next().await {
                Some(Ok(bytes)) => self.buffer.push_str(std::str::from_utf8(&bytes).unwrap()),
                Some(Err(e)) => panic!("the event stream broke: {e}"),
                None => panic!("the event stream ended"),
            }
        }
    }

    /// The next event, skipping keep-alive comments.
    pub async fn next_event(&mut self) -> SseEvent {
        let deadline = tokio::time::Instant::now() + EVENT_WAIT;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_frame_within(left).await {
                Frame::Event { id, data } => {
                    return SseEvent {
                        id: id.expect("every event carries its id"),
                        data,
                    };
                }
                Frame::Comment(_) => continue,
            }
        }
    }

    /// The next `n` events.
    pub async fn events(&mut self, n: usize) -> Vec<SseEvent> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.next_event().await);
        }
        out
    }
}

fn parse_block(block: &str) -> Frame {
    let mut id = None;
    let mut data: Option<String> = None;
    let mut comment = None;
    for line in block.lines() {
        if let Some(rest) = line.strip_prefix(':') {
            comment = Some(rest.trim_start().to_owned());
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => id = Some(value.parse().expect("numeric event id")),
            "data" => {
                data = Some(match data {
                    Some(mut d) => {
                        d.push('\n');
                        d.push_str(value);
                        d
                    }
                    None => value.to_owned(),
                })
            }
            _ => {}
        }
    }
    match (data, comment) {
        (Some(data), _) => Frame::Event { id, data },
        (None, Some(c)) => Frame::Comment(c),
        (None, None) => Frame::Comment(String::new()),
    }
}

/// The thread's stored events, from `format=json`.
pub async fn stored_events(app: &TestApp, t: &Thread, token: &str) -> Vec<serde_json::Value> {
    let reply = app.get(&t.url("/events?format=json"), token).await;
    reply.expect(200, None);
    reply.json().as_array().unwrap().clone()
}

/// A listing's entries as (path, type) pairs, in its order.
pub fn paths_and_types(list: &serde_json::Value) -> Vec<(String, String)> {
    list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Expected (path, type) pairs, owned, to compare with [`paths_and_types`].
pub fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}
