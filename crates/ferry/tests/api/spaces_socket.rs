//! Spaces over a real socket: racing writers, chunked bodies, and paths no client library
//! would send unaltered.

use crate::support::{TestApp, raw_http};
use futures::StreamExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_of_32_racing_create_only_puts_wins() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let token = app.user("racer");
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/api/spaces/race/files/ideas/only-once.md");
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(32));
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let (client, url, token, barrier) =
                (client.clone(), url.clone(), token.clone(), barrier.clone());
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
                let status = reply.status().as_u16();
                let body: serde_json::Value = reply.json().await.unwrap();
                (i, status, body)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for task in tasks {
        let (i, status, body) = task.await.unwrap();
        match status {
            201 => winners.push(i),
            409 => assert_eq!(body["error"]["code"], "ALREADY_EXISTS"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    let stored = client.get(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(
        stored.text().await.unwrap(),
        format!("writer {}", winners[0])
    );
}

#[tokio::test]
async fn chunked_body_over_the_limit_is_refused_while_streaming_and_leaves_nothing() {
    let app = TestApp::with(|c| c.app.limits.space_max_bytes = 64 * 1024).await;
    let addr = app.spawn().await;
    let token = app.user("u");
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/api/spaces/s/files/big.bin");
    // 16 chunks of 8 KiB: twice the limit, with no Content-Length.
    let chunks = futures::stream::iter((0..16).map(|_| Ok::<_, std::io::Error>(vec![1u8; 8192])));
    let sent = client
        .put(&url)
        .bearer_auth(&token)
        .header("content-type", "application/octet-stream")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await;
    // The server answers 413 as soon as the limit is passed; depending on timing the client
    // may see that answer or a connection closed under its remaining chunks.
    if let Ok(reply) = sent {
        assert_eq!(reply.status().as_u16(), 413);
        let body: serde_json::Value = reply.json().await.unwrap();
        assert_eq!(body["error"]["code"], "REQUEST_TOO_LARGE");
    }
    let after = client.get(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(after.status().as_u16(), 404);
    let tmp = app.dir.path().join("blobs/.tmp");
    assert_eq!(
        std::fs::read_dir(tmp).unwrap().count(),
        0,
        "no partial blob may remain"
    );

    // A chunked body under the limit is stored whole.
    let chunks = futures::stream::iter((0..4).map(|_| Ok::<_, std::io::Error>(vec![2u8; 8192])));
    let reply = client
        .put(&url)
        .bearer_auth(&token)
        .header("content-type", "application/octet-stream")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 201);
    let body = client
        .get(&url)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(body.len(), 32 * 1024);
}

#[tokio::test]
async fn traversal_attempts_on_the_wire_are_invalid_path() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let token = app.user("u");
    for path in [
        "../../etc/passwd",
        "a/../../b",
        "%2e%2e/%2e%2e/etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "%2Fetc%2Fpasswd",
        "a%5C..%5C..%5Cb",
        "a%00.md",
        "a%01.md",
        "a%1F.md",
        &"x".repeat(256),
    ] {
        for method in ["GET", "PUT"] {
            let request = format!(
                "{method} /api/spaces/s/files/{path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
                 Content-Type: text/plain\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx"
            );
            let (status, body) = raw_http(addr, &request).await;
            assert_eq!(status, 400, "{method} {path}: {body}");
            let json: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(json["error"]["code"], "INVALID_PATH", "{method} {path}");
        }
    }
    // Nothing was written anywhere.
    let list = reqwest::Client::new()
        .get(format!("http://{addr}/api/spaces/s/files?recursive=true"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(list["files"], serde_json::json!([]));
}

#[tokio::test]
async fn large_files_stream_in_and_out_intact() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let token = app.user("u");
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/api/spaces/s/files/data/five.bin");
    let data: Vec<u8> = (0..5 * 1024 * 1024u32)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let reply = client
        .put(&url)
        .bearer_auth(&token)
        .header("content-type", "application/octet-stream")
        .body(data.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 201);
    let mut got = Vec::new();
    let mut stream = client
        .get(&url)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .bytes_stream();
    while let Some(chunk) = stream.next().await {
        got.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(got.len(), data.len());
    assert!(got == data);
}
