//! Two `ferry serve` nodes on one Postgres and one S3 store (moto on loopback): nothing a user
//! sees differs from one node.
//!
//! Why one file: it is the suite of one deployment shape: every test starts the same two-node
//! cluster (the fixture at the top) and checks, through both nodes, one family of what a user sees
//! (spaces, threads, uploads, events and publishes; the agent's files and a space's feed; a
//! command's working copy).

use crate::support;
use crate::support::binary::{Running, start, token, wait_healthy};
use futures::StreamExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

struct Cluster {
    a: Running,
    b: Running,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    _s3: support::peers::S3Server,
    schema: support::peers::PgSchema,
}

async fn cluster() -> Option<Cluster> {
    let s3 = support::peers::s3()?;
    let schema = support::peers::postgres().await?;
    let mut env: Vec<(&str, String)> = s3.env();
    env.push(("FERRY_DATABASE_URL", schema.url.clone()));
    env.push(("FERRY_BLOB_URL", format!("s3://{}/deployment", s3.bucket)));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = start(da.path(), &env);
    wait_healthy(a.addr).await;
    let b = start(db.path(), &env);
    wait_healthy(b.addr).await;
    Some(Cluster {
        a,
        b,
        _dirs: (da, db),
        _s3: s3,
        schema,
    })
}

fn url(node: &Running, path: &str) -> String {
    format!("http://{}{path}", node.addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_share_one_deployment() {
    let Some(cluster) = cluster().await else {
        return;
    };
    let (a, b) = (&cluster.a, &cluster.b);
    let user = token(&["--user", "alice"]);
    let client = reqwest::Client::new();

    // A space file written through A is read through B.
    let put = client
        .put(url(a, "/api/spaces/notes/files/ideas/tea.md"))
        .bearer_auth(&user)
        .header("content-type", "text/markdown")
        .body("# Tea shop")
        .send()
        .await
        .unwrap();
    assert_eq!(put.status().as_u16(), 201);
    let got = client
        .get(url(b, "/api/spaces/notes/files/ideas/tea.md"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status().as_u16(), 200);
    assert_eq!(got.text().await.unwrap(), "# Tea shop");

    // 32 racing create-only PUTs spread over both nodes: exactly one 201.
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(32));
    let racers: Vec<_> = (0..32)
        .map(|i| {
            let (client, user, barrier) = (client.clone(), user.clone(), barrier.clone());
            let target = url(
                if i % 2 == 0 { a } else { b },
                "/api/spaces/notes/files/race.md",
            );
            tokio::spawn(async move {
                barrier.wait().await;
                client
                    .put(target)
                    .bearer_auth(&user)
                    .header("content-type", "text/plain")
                    .header("if-none-match", "*")
                    .body(format!("racer {i}"))
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for racer in racers {
        statuses.push(racer.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        31,
        "{statuses:?}"
    );

    // A thread created on A; its sandbox lives in the blob store, reachable from B, and no
    // node claims a host folder for it.
    let thread: Value = client
        .post(url(a, "/api/threads"))
        .bearer_auth(&user)
        .json(&json!({"title": "two nodes"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = thread["id"].as_str().unwrap().to_owned();
    let agent = token(&["--agent", "--thread", &id, "--user", "alice"]);
    let info: Value = client
        .get(url(b, &format!("/api/threads/{id}")))
        .bearer_auth(&agent)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        info.get("sandboxDir").is_none(),
        "no local sandbox folder with a shared blob store: {info}"
    );
    let layout: Value = client
        .get(url(b, &format!("/api/threads/{id}/sandbox")))
        .bearer_auth(&agent)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let folders: Vec<&str> = layout["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        folders,
        [
            "/sandbox/outputs",
            "/sandbox/shared",
            "/sandbox/skills",
            "/sandbox/user_uploads",
            "/sandbox/workspace"
        ]
    );

    // An upload through B lands in the sandbox, readable through A.
    let uploaded: Value = client
        .post(url(
            b,
            &format!("/api/threads/{id}/uploads?filename=sales.csv"),
        ))
        .bearer_auth(&user)
        .header("content-type", "text/csv")
        .body(&b"region,q1\nNorth,125000\n"[..])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        uploaded["uploads"][0]["preview"],
        "region | q1\nRow 1: North | 125000"
    );
    let bytes = client
        .get(url(
            a,
            &format!("/api/threads/{id}/sandbox/user_uploads/sales.csv"),
        ))
        .bearer_auth(&agent)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(bytes.as_ref(), b"region,q1\nNorth,125000\n");

    // An SSE subscriber on B receives what is published through A.
    let mut stream = client
        .get(url(b, &format!("/api/threads/{id}/events")))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .bytes_stream();
    let mut received = String::new();
    let mut ids = Vec::new();
    let read_until = |want: usize, received: &mut String, ids: &mut Vec<i64>| {
        for line in received.lines() {
            if let Some(n) = line.strip_prefix("id: ").and_then(|n| n.parse().ok())
                && !ids.contains(&n)
            {
                ids.push(n);
            }
        }
        ids.len() >= want
    };
    // The replay first: the upload event.
    while !read_until(1, &mut received, &mut ids) {
        received.push_str(&String::from_utf8_lossy(
            &stream.next().await.unwrap().unwrap(),
        ));
    }
    let sent = Instant::now();
    let posted = client
        .post(url(a, &format!("/api/threads/{id}/messages")))
        .bearer_auth(&agent)
        .json(&json!({"text": "from node A"}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status().as_u16(), 201);
    tokio::time::timeout(Duration::from_secs(10), async {
        while !read_until(2, &mut received, &mut ids) {
            received.push_str(&String::from_utf8_lossy(
                &stream.next().await.unwrap().unwrap(),
            ));
        }
    })
    .await
    .expect("the event published through A reached the subscriber on B");
    eprintln!("cross-node event delivery took {:?}", sent.elapsed());
    assert!(received.contains("from node A"));
    drop(stream);

    // Events published while away are replayed by the other node, in order, without gaps.
    for n in 0..5 {
        client
            .post(url(b, &format!("/api/threads/{id}/messages")))
            .bearer_auth(&agent)
            .json(&json!({"text": format!("away {n}")}))
            .send()
            .await
            .unwrap();
    }
    let replay: Vec<Value> = client
        .get(url(
            a,
            &format!("/api/threads/{id}/events?after=2&format=json"),
        ))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        replay
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [3, 4, 5, 6, 7]
    );

    // Publish through A, download through B.
    client
        .put(url(
            a,
            &format!("/api/threads/{id}/sandbox/outputs/report.md"),
        ))
        .bearer_auth(&agent)
        .header("content-type", "text/markdown")
        .body("# Report")
        .send()
        .await
        .unwrap();
    let published: Value = client
        .post(url(b, &format!("/api/threads/{id}/published")))
        .bearer_auth(&agent)
        .json(&json!({"file_path": "/sandbox/outputs/report.md", "display_name": "Report"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let pid = published["id"].as_str().unwrap();
    let content = client
        .get(url(
            a,
            &format!("/api/threads/{id}/published/{pid}/content"),
        ))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap();
    assert_eq!(content.text().await.unwrap(), "# Report");
    let preview = client
        .get(url(
            a,
            &format!("/api/threads/{id}/published/{pid}/preview"),
        ))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap();
    assert!(preview.text().await.unwrap().contains("<h1>Report</h1>"));

    drop(cluster.a);
    drop(cluster.b);
    cluster.schema.drop_now().await;
}

/// The agent's file system on two nodes, with sandboxes in the blob store: a file written,
/// edited and moved through one node is read, searched and listed through the other with the
/// same ETag, and a subscriber of the space's feed on one node receives every change made
/// through the other, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_agents_files_and_the_space_feed_are_one_across_nodes() {
    let Some(cluster) = cluster().await else {
        return;
    };
    let (a, b) = (&cluster.a, &cluster.b);
    let user = token(&["--user", "alice"]);
    let client = reqwest::Client::new();
    let made: Value = client
        .post(url(a, "/api/threads"))
        .bearer_auth(&user)
        .json(&json!({"title": "files"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = made["id"].as_str().unwrap().to_owned();
    let agent = token(&["--agent", "--thread", &id, "--user", "alice"]);
    let fs = |node: &Running, tool: &str, body: Value| {
        let request = client
            .post(url(node, &format!("/api/fs/{tool}")))
            .bearer_auth(&agent)
            .json(&body);
        async move {
            let reply = request.send().await.unwrap();
            let status = reply.status().as_u16();
            let body: Value = reply.json().await.unwrap();
            assert_eq!(status, 200, "{body}");
            body
        }
    };

    // The space's feed, followed on A from its start.
    let mut feed = client
        .get(url(a, "/api/spaces/notes/events"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .bytes_stream();

    let written = fs(
        b,
        "write_file",
        json!({"path": "/sandbox/outputs/r.md", "content": "total: 1\n"}),
    )
    .await;
    let edited = fs(
        a,
        "edit_file",
        json!({"path": "/sandbox/outputs/r.md", "old_string": "1", "new_string": "2", "ifMatch": written["etag"]}),
    )
    .await;
    let read = fs(b, "read_file", json!({"path": "/sandbox/outputs/r.md"})).await;
    assert_eq!(
        (&read["content"], &read["etag"]),
        (&json!("     1\ttotal: 2\n"), &edited["etag"])
    );
    fs(
        b,
        "move_file",
        json!({"source": "/sandbox/outputs/r.md", "destination": "/sandbox/outputs/final/r.md"}),
    )
    .await;
    let found = fs(a, "grep", json!({"pattern": "total"})).await;
    assert_eq!(found["matches"][0]["path"], "/sandbox/outputs/final/r.md");
    let globbed = fs(a, "glob", json!({"pattern": "**/*.md"})).await;
    assert_eq!(globbed["paths"], json!(["/sandbox/outputs/final/r.md"]));

    fs(
        b,
        "write_file",
        json!({"path": "/spaces/notes/a.md", "content": "a"}),
    )
    .await;
    fs(
        a,
        "move_file",
        json!({"source": "/spaces/notes/a.md", "destination": "/spaces/notes/b.md"}),
    )
    .await;
    fs(b, "delete_file", json!({"path": "/spaces/notes/b.md"})).await;
    let mut received = String::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while received.matches("\ndata: ").count() + usize::from(received.starts_with("data: ")) < 3
        {
            received.push_str(&String::from_utf8_lossy(
                &feed.next().await.unwrap().unwrap(),
            ));
        }
    })
    .await
    .expect("the changes made through B (and A) reached the feed's subscriber on A");
    let kinds: Vec<String> = received
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| {
            serde_json::from_str::<Value>(data).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds, ["file_written", "file_moved", "file_deleted"]);

    // The sandbox's changes are on the thread's channel, through either node.
    let events: Value = client
        .get(url(a, &format!("/api/threads/{id}/events?format=json")))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let changes: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|t| t.starts_with("file_"))
        .collect();
    assert_eq!(changes, ["file_written", "file_written", "file_moved"]);
}

/// Commands where sandboxes live in the object store: the node that runs one copies the
/// sandbox into a working folder, runs, and writes back what changed, conditionally, so a
/// file changed meanwhile through another door is kept and reported, never overwritten.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_command_runs_on_a_working_copy_and_writes_back_what_it_changed() {
    let Some(cluster) = cluster().await else {
        return;
    };
    let (a, b) = (&cluster.a, &cluster.b);
    let user = token(&["--user", "alice"]);
    let client = reqwest::Client::new();
    let limits: Value = client
        .get(url(b, "/api/limits"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    if limits["execute"]["enabled"] != true {
        support::peers::skip(&format!("commands on this machine: {}", limits["execute"]));
        return;
    }
    let made: Value = client
        .post(url(a, "/api/threads"))
        .bearer_auth(&user)
        .json(&json!({"title": "commands"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = made["id"].as_str().unwrap().to_owned();
    let agent = token(&["--agent", "--thread", &id, "--user", "alice"]);
    let put = |node: &Running, rel: &str, body: &'static str| {
        client
            .put(url(node, &format!("/api/threads/{id}/sandbox/{rel}")))
            .bearer_auth(&agent)
            .header("content-type", "text/plain")
            .body(body)
            .send()
    };
    assert!(
        put(a, "workspace/keep.txt", "v1\n")
            .await
            .unwrap()
            .status()
            .is_success()
    );
    assert!(
        put(a, "workspace/old.txt", "old\n")
            .await
            .unwrap()
            .status()
            .is_success()
    );
    let execute = |node: &Running, command: &str| {
        client
            .post(url(node, &format!("/api/threads/{id}/execute")))
            .bearer_auth(&agent)
            .json(&json!({ "command": command }))
            .send()
    };
    let ran: Value = execute(
        b,
        "cat keep.txt; echo more >> keep.txt; rm old.txt; echo new > /sandbox/outputs/made.txt",
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(ran["exitCode"], 0, "{ran}");
    assert_eq!(ran["output"], "v1\n", "{ran}");
    let read = |node: &Running, rel: &str| {
        client
            .get(url(node, &format!("/api/threads/{id}/sandbox/{rel}")))
            .bearer_auth(&user)
            .send()
    };
    // Read through the other node: the changes are in the shared store.
    assert_eq!(
        read(a, "workspace/keep.txt")
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "v1\nmore\n"
    );
    assert_eq!(
        read(a, "outputs/made.txt")
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "new\n"
    );
    assert_eq!(
        read(a, "workspace/old.txt")
            .await
            .unwrap()
            .status()
            .as_u16(),
        404
    );

    // A write through another door while the command runs wins; the command's is reported.
    let slow = execute(b, "sleep 2; echo mine > keep.txt");
    let meanwhile = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(
            put(a, "workspace/keep.txt", "theirs\n")
                .await
                .unwrap()
                .status()
                .is_success()
        );
    };
    let (ran, ()) = tokio::join!(slow, meanwhile);
    let ran: Value = ran.unwrap().json().await.unwrap();
    assert!(
        ran["output"]
            .as_str()
            .unwrap()
            .contains("/sandbox/workspace/keep.txt was changed through another door"),
        "{ran}"
    );
    assert_eq!(
        read(a, "workspace/keep.txt")
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "theirs\n"
    );
    // The thread was told of each change, as the command's.
    let events: Value = client
        .get(url(a, &format!("/api/threads/{id}/events?format=json")))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let events = events.as_array().unwrap();
    assert!(events.iter().any(|e| e["type"] == "file_written"
        && e["path"] == "/sandbox/outputs/made.txt"
        && e["door"] == "command"));
    assert!(events.iter().any(|e| e["type"] == "file_deleted"
        && e["path"] == "/sandbox/workspace/old.txt"
        && e["door"] == "command"));
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "command_executed")
            .count(),
        2
    );
}
