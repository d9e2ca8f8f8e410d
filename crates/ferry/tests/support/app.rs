//! A server in a temporary directory, reachable in-process (through the router) or over a
//! real socket on 127.0.0.1:0.

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use ferry_server::{AppState, Config};
use http_body_util::BodyExt;
use std::net::SocketAddr;
use std::time::Duration;
use tower::ServiceExt;

use super::{SECRET, ferry_exe};

pub struct TestApp {
    pub state: AppState,
    pub dir: tempfile::TempDir,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status and, for errors, that the body is the envelope with `code`.
    pub fn expect(&self, status: u16, code: Option<&str>) -> &Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text()
        );
        if let Some(code) = code {
            let json = self.json();
            assert_eq!(json["error"]["code"], code, "body: {json}");
            assert!(
                json["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "the envelope needs a message: {json}"
            );
        }
        self
    }

    /// Asserts a 400 `INVALID_REQUEST` whose message holds `said`.
    pub fn expect_invalid(&self, said: &str) -> &Self {
        self.expect(400, Some("INVALID_REQUEST"));
        let message = self.json()["error"]["message"].clone();
        assert!(
            message.as_str().is_some_and(|m| m.contains(said)),
            "the message should say {said:?}; it is {message}"
        );
        self
    }
}

pub fn config(dir: &std::path::Path) -> Config {
    let mut config = Config::embedded(dir.to_path_buf(), SECRET.as_bytes().to_vec());
    config.app.extract = ferry_extract::ExtractorConfig::worker(ferry_exe());
    config
}

/// The server's errors go to the test's captured output: an internal error's cause is only
/// logged, and a failing test then shows it.
fn capture_errors() {
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::ERROR)
        .with_test_writer()
        .try_init();
}

impl TestApp {
    pub async fn new() -> TestApp {
        Self::with(|_| {}).await
    }

    pub async fn with(adjust: impl FnOnce(&mut Config)) -> TestApp {
        capture_errors();
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path());
        adjust(&mut config);
        let state = AppState::open(config).await.unwrap();
        TestApp { state, dir }
    }

    /// A server whose data directory is `data` (on a file system the test chose); `dir` is
    /// then an empty folder of its own.
    pub async fn with_data(data: std::path::PathBuf, adjust: impl FnOnce(&mut Config)) -> TestApp {
        capture_errors();
        let mut config = config(&data);
        adjust(&mut config);
        let state = AppState::open(config).await.unwrap();
        TestApp {
            state,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn user(&self, sub: &str) -> String {
        self.state
            .auth
            .mint_user(sub, Duration::from_secs(600))
            .token
    }

    pub fn agent(&self, owner: &str, thread: &str) -> String {
        self.state
            .auth
            .mint_agent(owner, thread, None, Duration::from_secs(600))
            .token
    }

    pub fn service(&self, sub: Option<&str>) -> String {
        self.state
            .auth
            .mint_service(sub, Duration::from_secs(600))
            .token
    }

    /// Sends one request through the router, in-process.
    pub async fn send(
        &self,
        method: &str,
        uri: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: impl Into<Body>,
    ) -> Reply {
        let mut builder = Request::builder()
            .method(Method::from_bytes(method.as_bytes()).unwrap())
            .uri(uri);
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let response = ferry_server::router::router(self.state.clone())
            .oneshot(builder.body(body.into()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, uri: &str, token: &str) -> Reply {
        self.send("GET", uri, Some(token), &[], Body::empty()).await
    }

    pub async fn put(&self, uri: &str, token: &str, content_type: &str, body: &[u8]) -> Reply {
        self.send(
            "PUT",
            uri,
            Some(token),
            &[("content-type", content_type)],
            Body::from(body.to_vec()),
        )
        .await
    }

    pub async fn post_json(&self, uri: &str, token: &str, json: serde_json::Value) -> Reply {
        self.send(
            "POST",
            uri,
            Some(token),
            &[("content-type", "application/json")],
            Body::from(json.to_string()),
        )
        .await
    }

    /// Serves over a real socket on 127.0.0.1:0; the server stops when the app is dropped.
    pub async fn spawn(&self) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = self.state.clone();
        tokio::spawn(async move {
            ferry_server::serve(state, listener, std::future::pending())
                .await
                .unwrap();
        });
        addr
    }
}

/// Sends raw bytes as an HTTP/1.1 request and returns the status line's code and the body.
/// HTTP client libraries normalise `..` and `%2e%2e` out of URLs; this does not.
pub async fn raw_http(addr: SocketAddr, request: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    (status, body)
}
