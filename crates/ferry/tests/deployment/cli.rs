//! The command line an operator meets first.

use std::process::Command;

use crate::support::ferry_exe;

/// `ferry token` signs with the secret the server made; with none there, it says how to get
/// one and invents nothing (an invented secret would sign tokens the server refuses).
#[test]
fn token_refuses_to_invent_a_secret() {
    let data = tempfile::tempdir().unwrap();
    let out = Command::new(ferry_exe())
        .args(["token", "--user", "alice", "--data"])
        .arg(data.path())
        .env_remove("FERRY_JWT_SECRET")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "no token is printed");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("there is no secret in"), "{said}");
    assert!(said.contains("ferry serve --data"), "{said}");
    assert!(
        std::fs::read_dir(data.path()).unwrap().next().is_none(),
        "nothing was written to the data folder"
    );

    // With the server's secret in place, the same command mints a token.
    std::fs::write(data.path().join("jwt-secret"), "the-server-secret").unwrap();
    let out = Command::new(ferry_exe())
        .args(["token", "--user", "alice", "--data"])
        .arg(data.path())
        .env_remove("FERRY_JWT_SECRET")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap();
    let auth = ferry_server::Auth::new(b"the-server-secret");
    let verified = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(auth.verify(token.trim()));
    assert!(verified.is_ok());
}

/// The first two lines `ferry serve` prints on standard output (a pipe here, not a terminal)
/// with the generated secret of `data`; the server is stopped once they are read.
fn first_printed_lines(data: &std::path::Path, extra: &[&str]) -> (String, String) {
    use std::io::{BufRead, BufReader};
    let mut server = Command::new(ferry_exe())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(extra)
        .arg("--data")
        .arg(data)
        .env_remove("FERRY_JWT_SECRET")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let second = lines.next().unwrap().unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    (first, second)
}

/// Behind a proxy the sign-in link must be one the browser can open: the public URL, not the
/// address the server listens on.
#[test]
fn the_sign_in_link_uses_the_public_url() {
    let data = tempfile::tempdir().unwrap();
    let (running, sign_in) =
        first_printed_lines(data.path(), &["--public-url", "https://files.example.com/"]);
    assert_eq!(running, "ferry is running at https://files.example.com/");
    assert!(
        sign_in.contains(": https://files.example.com/#token="),
        "{sign_in}"
    );

    // A restart whose output is not a terminal (a service manager's journal, say) writes no
    // new token there: it says how to get one.
    let (_running, hint) = first_printed_lines(data.path(), &[]);
    assert!(!hint.contains("#token=ey"), "{hint}");
    assert!(hint.contains("ferry token --user local --data"), "{hint}");
}

/// Every request leaves one access line: method, route template, status, size, time, and the
/// request's id; with `FERRY_LOG_FORMAT=json` each line is a JSON object. The path's values and
/// the query never appear in the route.
#[tokio::test]
async fn each_request_leaves_one_access_line_in_json() {
    let data = tempfile::tempdir().unwrap();
    let server = crate::support::binary::start(data.path(), &[("FERRY_LOG_FORMAT", "json")]);
    let client = reqwest::Client::new();
    let url = format!("http://{}", server.addr);
    let ok = client
        .get(format!("{url}/healthz"))
        .header("x-request-id", "access-line-1")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let refused = client
        .get(format!(
            "{url}/api/threads/some-thread/uploads?sig=secret-value"
        ))
        .header("x-request-id", "access-line-2")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);

    let line_of = |id: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let found = server.log.lock().unwrap().iter().find_map(|line| {
                let json: serde_json::Value = serde_json::from_str(line)
                    .unwrap_or_else(|_| panic!("a log line is not JSON: {line}"));
                (json["target"] == "ferry::access" && json["span"]["id"] == id).then_some(json)
            });
            if let Some(json) = found {
                return json;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no access line for {id}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let health = line_of("access-line-1");
    assert_eq!(health["level"], "INFO");
    assert_eq!(health["fields"]["method"], "GET");
    assert_eq!(health["fields"]["route"], "/healthz");
    assert_eq!(health["fields"]["status"], 200);
    assert!(health["fields"]["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(health["fields"]["bytes"].as_u64().is_some(), "{health}");
    let uploads = line_of("access-line-2");
    assert_eq!(uploads["fields"]["route"], "/api/threads/{id}/uploads");
    assert_eq!(uploads["fields"]["status"], 401);
    let all = server.log.lock().unwrap().join("\n");
    assert!(!all.contains("secret-value"), "the query is never logged");
    let lines_for_2 = server
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("\"ferry::access\"") && l.contains("access-line-2"))
        .count();
    assert_eq!(lines_for_2, 1, "one line per request");
}

/// A client that closes its `subscriptions/listen` stream leaves as clients do: under the
/// server's default log filter, nothing is logged above info for it.
#[tokio::test]
async fn a_client_closing_its_listen_stream_logs_no_error() {
    let data = tempfile::tempdir().unwrap();
    let server = crate::support::binary::start(data.path(), &[("FERRY_LOG", "")]);
    let alice = crate::support::binary::token(&["--user", "alice"]);
    let listen = serde_json::json!({
        "jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {}
            },
            "notifications": { "resourceSubscriptions": ["ferry://spaces/notes/a.md"] }
        }
    });
    for _ in 0..3 {
        let mut stream = reqwest::Client::new()
            .post(format!("http://{}/mcp", server.addr))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .bearer_auth(&alice)
            .json(&listen)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        let acknowledged = stream.chunk().await.unwrap().expect("the acknowledgment");
        assert!(
            String::from_utf8_lossy(&acknowledged).contains("acknowledged"),
            "{acknowledged:?}"
        );
        // The client leaves.
        drop(stream);
    }
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let log = server.log.lock().unwrap().join("\n");
    assert!(
        !log.contains(" ERROR ") && !log.contains(" WARN "),
        "a client's departure logged above info:\n{log}"
    );
}

/// `FERRY_JWKS_URL` and `FERRY_JWT_ISSUER` are all a Supabase project with asymmetric keys
/// (or any OIDC provider) needs: the server reads the set at start and signs its people in.
#[tokio::test]
async fn serve_signs_people_in_with_an_identity_providers_jwks() {
    use crate::support::binary;
    use crate::support::identity::{ISSUER, ProviderKey, jwks, person};
    use std::io::{Read, Write};

    let key = ProviderKey::generate(jsonwebtoken::Algorithm::ES256, "project-key");
    let document = jwks(&[&key]).to_string();
    // The provider's endpoint: every request answered with the set.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/auth/v1/.well-known/jwks.json",
        listener.local_addr().unwrap()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{document}",
                document.len()
            );
        }
    });

    let data = tempfile::tempdir().unwrap();
    let server = binary::start(
        data.path(),
        &[("FERRY_JWKS_URL", &url), ("FERRY_JWT_ISSUER", ISSUER)],
    );
    binary::wait_healthy(server.addr).await;
    let log = server.log.lock().unwrap().join("\n");
    assert!(log.contains("read the identity provider's keys"), "{log}");

    let token = key.sign(&person("supabase-user"));
    let thread = binary::create_thread(server.addr, &token).await;
    let answer = reqwest::Client::new()
        .get(format!("http://{}/api/threads/{thread}", server.addr))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let thread: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(thread["owner"], "supabase-user");
}

/// On SQLite one process owns the database: a second `ferry serve` on the same data folder
/// stops at start and says why, and the first goes on serving.
#[tokio::test]
async fn a_second_server_on_one_sqlite_database_stops_at_start() {
    use crate::support::binary::{start, wait_healthy};
    let data = tempfile::tempdir().unwrap();
    let first = start(data.path(), &[]);
    wait_healthy(first.addr).await;
    let out = Command::new(ferry_exe())
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(data.path())
        .env("FERRY_JWT_SECRET", crate::support::SECRET)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("another process is serving the SQLite database"),
        "{said}"
    );
    wait_healthy(first.addr).await;
}
