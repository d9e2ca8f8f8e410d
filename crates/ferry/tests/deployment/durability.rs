//! What a `kill -9` of the server may and may not do to stored files.

use crate::support::binary::{Running, start, token, wait_healthy};
use std::time::Duration;

fn kill9(running: &mut Running) {
    // SIGKILL: no shutdown hook runs.
    running.child.kill().unwrap();
    running.child.wait().unwrap();
}

#[tokio::test]
async fn acknowledged_puts_survive_kill_9_and_interrupted_puts_leave_old_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let user = token(&["--user", "durable"]);
    let client = reqwest::Client::new();

    let mut server = start(&data, &[]);
    wait_healthy(server.addr).await;
    let base = format!("http://{}/api/spaces/notes/files", server.addr);
    let kept: Vec<u8> = (0..2_000_000u32).map(|i| (i % 253) as u8).collect();
    let reply = client
        .put(format!("{base}/kept.bin"))
        .bearer_auth(&user)
        .header("content-type", "application/octet-stream")
        .body(kept.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 201);
    let reply = client
        .put(format!("{base}/overwritten.md"))
        .bearer_auth(&user)
        .header("content-type", "text/markdown")
        .body("old bytes")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 201);

    // Start two uploads that stall half-way: one overwriting, one creating.
    let (stall_tx, stall_rx) = tokio::sync::oneshot::channel::<()>();
    let stalled_stream = |first: Vec<u8>, gate: Option<tokio::sync::oneshot::Receiver<()>>| {
        futures::stream::unfold((Some(first), gate), |(first, gate)| async move {
            if let Some(first) = first {
                return Some((Ok::<_, std::io::Error>(first), (None, gate)));
            }
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            // Never ends: the server dies first.
            std::future::pending::<()>().await;
            None
        })
    };
    let over = client
        .put(format!("{base}/overwritten.md"))
        .bearer_auth(&user)
        .header("content-type", "text/markdown")
        .body(reqwest::Body::wrap_stream(stalled_stream(
            vec![b'n'; 300_000],
            Some(stall_rx),
        )))
        .send();
    let fresh = client
        .put(format!("{base}/never.bin"))
        .bearer_auth(&user)
        .header("content-type", "application/octet-stream")
        .body(reqwest::Body::wrap_stream(stalled_stream(
            vec![b'p'; 300_000],
            None,
        )))
        .send();
    let over = tokio::spawn(over);
    let fresh = tokio::spawn(fresh);
    // Let the server receive and spool the first halves.
    tokio::time::sleep(Duration::from_millis(500)).await;
    kill9(&mut server);
    drop(stall_tx);
    assert!(
        over.await.unwrap().is_err(),
        "the interrupted PUT cannot have succeeded"
    );
    assert!(fresh.await.unwrap().is_err());

    let server = start(&data, &[]);
    wait_healthy(server.addr).await;
    let base = format!("http://{}/api/spaces/notes/files", server.addr);
    let got = client
        .get(format!("{base}/kept.bin"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status().as_u16(), 200);
    assert!(
        got.bytes().await.unwrap() == kept,
        "acknowledged bytes are intact"
    );
    let got = client
        .get(format!("{base}/overwritten.md"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap();
    assert_eq!(
        got.text().await.unwrap(),
        "old bytes",
        "old bytes or new, never a part"
    );
    let got = client
        .get(format!("{base}/never.bin"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status().as_u16(), 404);

    // Every listed file can be read in full: no row points at a missing or partial blob.
    let list: serde_json::Value = client
        .get(format!("{base}?recursive=true"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let files = list["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    for file in files {
        let path = file["path"].as_str().unwrap();
        let body = client
            .get(format!("{base}/{path}"))
            .bearer_auth(&user)
            .send()
            .await
            .unwrap();
        assert_eq!(body.status().as_u16(), 200);
        assert_eq!(
            body.bytes().await.unwrap().len() as u64,
            file["size"].as_u64().unwrap()
        );
    }
}

/// The bytes the kill-mid-batch test writes at a path: its name, repeated past one page.
fn batch_body(path: &str) -> Vec<u8> {
    path.repeat(5_000 / path.len() + 1).into_bytes()
}

/// Concurrent writes share commits (SQLite's group commit): the server is killed while 32
/// writers keep batches in flight, so the kill lands with writes queued, running or being
/// flushed. Every write that was answered is there with its bytes; of the rest, each is
/// either absent or whole.
#[tokio::test]
async fn a_kill_9_amid_group_commits_keeps_every_answered_write_and_no_partial_one() {
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let user = token(&["--user", "batched"]);
    let client = reqwest::Client::new();
    let mut server = start(&data, &[]);
    wait_healthy(server.addr).await;
    let base = format!("http://{}/api/spaces/batch/files", server.addr);

    let answered = Arc::new(Mutex::new(Vec::<String>::new()));
    let writers: Vec<_> = (0..32)
        .map(|writer| {
            let (client, base, user, answered) =
                (client.clone(), base.clone(), user.clone(), answered.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    let path = format!("w{writer}/f{i}.txt");
                    let reply = client
                        .put(format!("{base}/{path}"))
                        .bearer_auth(&user)
                        .header("content-type", "text/plain")
                        .header("if-none-match", "*")
                        .body(batch_body(&path))
                        .send()
                        .await;
                    match reply {
                        Ok(reply) if reply.status().as_u16() == 201 => {
                            answered.lock().unwrap().push(path)
                        }
                        Ok(reply) => panic!("{path}: {}", reply.status()),
                        Err(_) => return,
                    }
                }
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while answered.lock().unwrap().len() < 400 {
        assert!(std::time::Instant::now() < deadline, "the writers stalled");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    kill9(&mut server);
    for writer in writers {
        writer.await.unwrap();
    }
    let answered = answered.lock().unwrap().clone();

    let server = start(&data, &[]);
    wait_healthy(server.addr).await;
    let base = format!("http://{}/api/spaces/batch/files", server.addr);
    for path in &answered {
        let got = client
            .get(format!("{base}/{path}"))
            .bearer_auth(&user)
            .send()
            .await
            .unwrap();
        assert_eq!(got.status().as_u16(), 200, "{path} was answered 201");
        assert!(got.bytes().await.unwrap() == batch_body(path), "{path}");
    }
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        // Cursors are base64url: safe in a query as they are.
        let mut url = format!("{base}?recursive=true&limit=1000");
        if let Some(c) = cursor.take() {
            url.push_str(&format!("&cursor={c}"));
        }
        let page: serde_json::Value = client
            .get(url)
            .bearer_auth(&user)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for file in page["files"].as_array().unwrap() {
            listed.push(file["path"].as_str().unwrap().to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert!(listed.len() >= answered.len());
    for path in &listed {
        let got = client
            .get(format!("{base}/{path}"))
            .bearer_auth(&user)
            .send()
            .await
            .unwrap();
        assert_eq!(got.status().as_u16(), 200);
        assert!(
            got.bytes().await.unwrap() == batch_body(path),
            "{path} is listed, so it is whole"
        );
    }
}

#[tokio::test]
async fn sigterm_shuts_down_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(&dir.path().join("data"), &[]);
    wait_healthy(server.addr).await;
    let pid = server.child.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(exit) = server.child.try_wait().unwrap() {
            assert!(exit.success(), "ferry exits 0 on SIGTERM, got {exit}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "ferry did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn token_command_mints_each_kind() {
    let user = token(&["--user", "alice", "--ttl", "5m"]);
    let agent = token(&["--agent", "--thread", "t1", "--user", "alice"]);
    let service = token(&["--service"]);
    for t in [&user, &agent, &service] {
        assert_eq!(t.split('.').count(), 3);
    }
    let claims = |t: &str| -> serde_json::Value {
        use base64::Engine as _;
        let part = t.split('.').nth(1).unwrap();
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap();
        serde_json::from_slice(&json).unwrap()
    };
    let u = claims(&user);
    assert_eq!(u["sub"], "alice");
    assert_eq!(u["role"], "authenticated");
    assert_eq!(u["aud"], "authenticated");
    assert_eq!(u["exp"].as_u64().unwrap() - u["iat"].as_u64().unwrap(), 300);
    let a = claims(&agent);
    assert_eq!(a["role"], "agent");
    assert_eq!(a["thread"], "t1");
    assert_eq!(a["sub"], "alice");
    assert_eq!(claims(&service)["role"], "service_role");
}
