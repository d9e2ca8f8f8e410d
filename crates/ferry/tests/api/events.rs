//! The thread's event channel (docs/reference/events.md): SSE over a real socket with replay after a
//! reconnect, live delivery, keep-alives, JSON polling, messages and their limits, and
//! subscribers that are slow or many.

use crate::support::TestApp;
use crate::thread_support;
use crate::thread_support::{Frame, Sse, Thread, stored_events, thread, upload_one};
use serde_json::{Value, json};
use std::time::Duration;

async fn say(app: &TestApp, t: &Thread, token: &str, text: &str) -> Value {
    let reply = app
        .post_json(&t.url("/messages"), token, json!({ "text": text }))
        .await;
    reply.expect(201, None);
    reply.json()
}

fn texts(events: &[thread_support::SseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.json()["content"].as_str().unwrap().to_owned())
        .collect()
}

fn ids(events: &[thread_support::SseEvent]) -> Vec<i64> {
    events.iter().map(|e| e.id).collect()
}

#[tokio::test]
async fn a_reconnect_replays_what_was_missed_in_order_without_gaps_or_duplicates() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let addr = app.spawn().await;
    let client = reqwest::Client::new();

    for i in 1..=5 {
        say(&app, &t, &t.agent, &format!("m{i}")).await;
    }
    let mut sse = Sse::connect(&client, addr, &t.id, &t.user, "", None).await;
    assert!(
        sse.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let first = sse.events(5).await;
    assert_eq!(texts(&first), ["m1", "m2", "m3", "m4", "m5"]);
    // `id:` is the event's number in the thread, the same as in its data.
    assert_eq!(ids(&first), [1, 2, 3, 4, 5]);
    for e in &first {
        assert_eq!(e.json()["id"], e.id);
    }
    // Live, once caught up.
    say(&app, &t, &t.agent, "m6").await;
    let live = sse.next_event().await;
    assert_eq!((live.id, live.json()["content"].clone()), (6, json!("m6")));
    drop(sse);

    // Published while the client is away.
    for i in 7..=10 {
        say(&app, &t, &t.user, &format!("m{i}")).await;
    }
    let mut back = Sse::connect(&client, addr, &t.id, &t.user, "", Some(6)).await;
    let missed = back.events(4).await;
    assert_eq!(ids(&missed), [7, 8, 9, 10]);
    assert_eq!(texts(&missed), ["m7", "m8", "m9", "m10"]);
    say(&app, &t, &t.agent, "m11").await;
    let next = back.next_event().await;
    assert_eq!(next.id, 11, "no duplicate and no gap after the replay");

    // ?after=N does the same.
    let mut after = Sse::connect(&client, addr, &t.id, &t.agent, "?after=8", None).await;
    let got = after.events(3).await;
    assert_eq!(ids(&got), [9, 10, 11]);
    assert_eq!(texts(&got), ["m9", "m10", "m11"]);

    // What SSE delivers is what polling stores, byte for byte.
    let stored = stored_events(&app, &t, &t.user).await;
    assert_eq!(stored.len(), 11);
    for e in &got {
        assert_eq!(e.data, stored[(e.id - 1) as usize].to_string());
    }
}

#[tokio::test]
async fn a_replay_longer_than_one_batch_is_whole() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let addr = app.spawn().await;
    for i in 1..=1_200 {
        say(&app, &t, &t.agent, &format!("n{i}")).await;
    }
    let mut sse = Sse::connect(
        &reqwest::Client::new(),
        addr,
        &t.id,
        &t.user,
        "?after=100",
        None,
    )
    .await;
    let got = sse.events(1_100).await;
    assert_eq!(ids(&got), (101..=1_200).collect::<Vec<i64>>());
    say(&app, &t, &t.agent, "after the replay").await;
    assert_eq!(sse.next_event().await.id, 1_201);
}

#[tokio::test]
async fn a_subscriber_connected_first_receives_events_live() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let other = thread(&app, "alice").await;
    let addr = app.spawn().await;
    let client = reqwest::Client::new();
    let mut sse = Sse::connect(&client, addr, &t.id, &t.user, "", None).await;

    // Another thread's events do not reach this subscriber.
    say(&app, &other, &other.agent, "elsewhere").await;
    let posted = say(&app, &t, &t.agent, "hello").await;
    thread_support::put_file(&app, &t, "outputs/a.md", b"# a").await;
    let published = thread_support::publish(&app, &t, "/sandbox/outputs/a.md", "A").await;
    published.expect(201, None);
    let upload = upload_one(&app, &t, "u.txt", b"u").await;

    let got = sse.events(5).await;
    assert_eq!(got[0].json(), posted);
    assert_eq!(got[0].json()["sessionId"], t.id.as_str());
    // The agent's write to its sandbox is announced, with the file's new ETag.
    let written = got[1].json();
    assert_eq!(
        (
            &written["type"],
            &written["path"],
            &written["door"],
            &written["role"]
        ),
        (
            &json!("file_written"),
            &json!("/sandbox/outputs/a.md"),
            &json!("http"),
            &json!("agent")
        )
    );
    assert_eq!(written["size"], 3);
    assert_eq!(got[2].json()["type"], "file_publishing");
    assert_eq!(got[3].json()["type"], "file_published");
    assert_eq!(got[3].json()["publishId"], got[2].json()["publishId"]);
    assert_eq!(got[3].json()["file"], published.json());
    assert_eq!(got[4].json()["type"], "upload");
    assert_eq!(got[4].json()["upload"]["id"], upload["id"]);
}

#[tokio::test]
async fn strangers_cannot_subscribe() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let other = thread(&app, "alice").await;
    for token in [app.user("bob"), other.agent.clone()] {
        app.get(&t.url("/events"), &token)
            .await
            .expect(404, Some("NOT_FOUND"));
        app.get(&t.url("/events?format=json"), &token)
            .await
            .expect(404, Some("NOT_FOUND"));
    }
}

#[tokio::test]
async fn an_idle_stream_carries_keep_alive_comments() {
    // The server sends a comment every 15 s; this waits for one, once.
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let addr = app.spawn().await;
    let mut sse = Sse::connect(&reqwest::Client::new(), addr, &t.id, &t.user, "", None).await;
    match sse.next_frame_within(Duration::from_secs(40)).await {
        Frame::Comment(_) => {}
        other => panic!("expected a keep-alive comment, got {other:?}"),
    }
    // The stream is still alive afterwards.
    say(&app, &t, &t.agent, "still there").await;
    assert_eq!(sse.next_event().await.json()["content"], "still there");
}

#[tokio::test]
async fn json_polling() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for i in 1..=4 {
        say(&app, &t, &t.agent, &format!("p{i}")).await;
    }
    let all = stored_events(&app, &t, &t.user).await;
    assert_eq!(all.len(), 4);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e["id"], i as i64 + 1);
        assert_eq!(e["type"], "message");
        assert_eq!(e["sessionId"], t.id.as_str());
        assert_eq!(e["content"], format!("p{}", i + 1).as_str());
        assert!(e["timestamp"].as_str().unwrap().ends_with('Z'));
        // The documented field order.
        let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "id",
                "type",
                "role",
                "agentId",
                "sessionId",
                "content",
                "timestamp"
            ]
        );
    }
    let after = app
        .get(&t.url("/events?after=2&format=json"), &t.user)
        .await;
    after.expect(200, None);
    assert!(
        after
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(after.json().as_array().unwrap().clone(), all[2..].to_vec());
    let none = app
        .get(&t.url("/events?after=4&format=json"), &t.agent)
        .await;
    assert_eq!(none.json(), json!([]));
    app.get(&t.url("/events?after=abc&format=json"), &t.user)
        .await
        .expect(400, Some("INVALID_REQUEST"));
}

#[tokio::test]
async fn user_and_agent_messages() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let user = say(&app, &t, &t.user, "please summarise").await;
    assert_eq!(user["role"], "user");
    assert_eq!(user["type"], "message");
    assert_eq!(user["content"], "please summarise");
    assert_eq!(user["sessionId"], t.id.as_str());

    let agent = say(&app, &t, &t.agent, "Here is the report").await;
    assert_eq!(agent["role"], "agent");
    assert_eq!(agent["agentId"], "agent");
    let named = app
        .state
        .auth
        .mint_agent("alice", &t.id, Some("researcher"), Duration::from_secs(600))
        .token;
    let from_named = say(&app, &t, &named, "found three sources").await;
    assert_eq!(from_named["role"], "agent");
    assert_eq!(from_named["agentId"], "researcher");

    // A body naming a role cannot make the agent speak as the user, or the user as the agent.
    for (token, role) in [(&t.agent, "user"), (&t.user, "agent")] {
        let reply = app
            .post_json(
                &t.url("/messages"),
                token,
                json!({ "text": "spoof", "role": role }),
            )
            .await;
        assert_eq!(reply.status.as_u16() / 100, 4, "{}", reply.text());
    }
    // An empty message is refused.
    app.post_json(&t.url("/messages"), &t.user, json!({ "text": "  " }))
        .await
        .expect(400, Some("INVALID_REQUEST"));
    let stored = stored_events(&app, &t, &t.user).await;
    assert_eq!(stored, [user, agent, from_named]);
}

#[tokio::test]
async fn a_user_message_brings_its_uploads() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let sheet = upload_one(&app, &t, "q.csv", b"region,q1\nNorth,125000\n").await;
    let image = upload_one(&app, &t, "shot.png", &thread_support::png(2, 2)).await;
    let reply = app
        .post_json(
            &t.url("/messages"),
            &t.user,
            json!({ "text": "see attached", "uploadIds": [sheet["id"], image["id"]] }),
        )
        .await;
    reply.expect(201, None);
    let event = reply.json();
    assert_eq!(event["role"], "user");
    let uploads = event["uploads"].as_array().unwrap();
    assert_eq!(uploads.len(), 2);
    for (got, want) in uploads.iter().zip([&sheet, &image]) {
        assert_eq!(got["id"], want["id"]);
        assert_eq!(got["attachmentXml"], want["attachmentXml"]);
        assert_eq!(got["sandboxPath"], want["sandboxPath"]);
    }
    assert!(
        uploads[0]["attachmentXml"]
            .as_str()
            .unwrap()
            .starts_with("<UserUploadedDocument hidden=\"true\">")
    );
    assert!(
        uploads[1]["attachmentXml"]
            .as_str()
            .unwrap()
            .starts_with("<UserUploadedImage hidden=\"true\">")
    );
    // Uploads alone make a message too.
    app.post_json(
        &t.url("/messages"),
        &t.user,
        json!({ "uploadIds": [sheet["id"]] }),
    )
    .await
    .expect(201, None);
}

#[tokio::test]
async fn bad_upload_ids_are_refused_and_store_nothing() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let other = thread(&app, "alice").await;
    let mine = upload_one(&app, &t, "mine.txt", b"mine").await;
    let theirs = upload_one(&app, &other, "theirs.txt", b"theirs").await;
    let before = stored_events(&app, &t, &t.user).await.len();

    for ids in [
        json!(["no-such-upload"]),
        json!([mine["id"], "no-such-upload"]),
        json!([theirs["id"]]),
    ] {
        app.post_json(
            &t.url("/messages"),
            &t.user,
            json!({ "text": "x", "uploadIds": ids }),
        )
        .await
        .expect(400, Some("INVALID_REQUEST"));
    }
    // The agent does not attach uploads; it publishes or sends files.
    app.post_json(
        &t.url("/messages"),
        &t.agent,
        json!({ "text": "x", "uploadIds": [mine["id"]] }),
    )
    .await
    .expect(400, Some("INVALID_REQUEST"));
    assert_eq!(stored_events(&app, &t, &t.user).await.len(), before);
}

#[tokio::test]
async fn an_event_is_at_most_32_kib() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let before = stored_events(&app, &t, &t.user).await;

    let long = "x".repeat(40_000);
    for token in [&t.user, &t.agent] {
        app.post_json(&t.url("/messages"), token, json!({ "text": long }))
            .await
            .expect(413, Some("REQUEST_TOO_LARGE"));
    }
    // Escaping counts: 10,000 quotes are 20,000 bytes of JSON.
    let quotes = "\"".repeat(17_000);
    app.post_json(&t.url("/messages"), &t.user, json!({ "text": quotes }))
        .await
        .expect(413, Some("REQUEST_TOO_LARGE"));
    assert_eq!(stored_events(&app, &t, &t.user).await, before);

    // Just under the limit is fine.
    let fits = say(&app, &t, &t.user, &"y".repeat(30_000)).await;
    assert!(fits.to_string().len() <= 32 * 1024);

    // Many uploads with long previews: the event still fits.
    let mut ids = Vec::new();
    for i in 0..6 {
        let text: String = format!("{i}").repeat(5_000);
        ids.push(
            upload_one(&app, &t, &format!("long{i}.txt"), text.as_bytes()).await["id"].clone(),
        );
    }
    let reply = app
        .post_json(
            &t.url("/messages"),
            &t.user,
            json!({ "text": "all of them", "uploadIds": ids }),
        )
        .await;
    if reply.status.as_u16() == 201 {
        let event = reply.json();
        assert_eq!(event["uploads"].as_array().unwrap().len(), 6);
        for u in event["uploads"].as_array().unwrap() {
            assert!(
                u["attachmentXml"]
                    .as_str()
                    .unwrap()
                    .contains("<SandboxPath>")
            );
        }
    } else {
        reply.expect(413, Some("REQUEST_TOO_LARGE"));
    }
    for e in stored_events(&app, &t, &t.user).await {
        assert!(
            e.to_string().len() <= 32 * 1024,
            "{} bytes",
            e.to_string().len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_never_reads_does_not_block_publishers() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let addr = app.spawn().await;
    // Subscribe and never read a byte.
    let mut stuck = tokio::net::TcpStream::connect(addr).await.unwrap();
    stuck
        .write_all(
            format!(
                "GET /api/threads/{}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
                 Accept: text/event-stream\r\n\r\n",
                t.id, t.user
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    // A reader that does keep up, to see the same events arrive.
    let mut reader = Sse::connect(&reqwest::Client::new(), addr, &t.id, &t.agent, "", None).await;

    // 16 MB in all: more than the socket buffers between server and client can hold.
    let text = "z".repeat(8_000);
    let posting = async {
        for _ in 0..2_000 {
            let reply = app
                .post_json(&t.url("/messages"), &t.agent, json!({ "text": text }))
                .await;
            assert_eq!(reply.status.as_u16(), 201);
        }
    };
    // A guard against a hang, not a timing: 2,000 messages go through however slow the machine.
    tokio::time::timeout(Duration::from_secs(300), posting)
        .await
        .expect("publishers were blocked by a subscriber that does not read");
    let got = reader.events(2_000).await;
    assert_eq!(ids(&got), (1..=2_000).collect::<Vec<i64>>());
    drop(stuck);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_subscribers_all_receive_an_event() {
    // One token holds all 200 streams: above the default share of one principal.
    let app = TestApp::with(|config| config.max_streams_per_principal = 256).await;
    let t = thread(&app, "alice").await;
    let addr = app.spawn().await;
    let client = reqwest::Client::new();
    let mut subscribers = Vec::new();
    for _ in 0..200 {
        subscribers.push(Sse::connect(&client, addr, &t.id, &t.user, "", None).await);
    }
    let posted = say(&app, &t, &t.agent, "to everyone").await;
    let tasks: Vec<_> = subscribers
        .into_iter()
        .map(|mut sse| tokio::spawn(async move { sse.next_event().await }))
        .collect();
    for task in tasks {
        let event = task.await.unwrap();
        assert_eq!(event.id, posted["id"].as_i64().unwrap());
        assert_eq!(event.json(), posted);
    }
}

/// `Last-Event-ID` is an event id: digits alone. Anything else, a sign included, is refused
/// before the stream opens.
#[tokio::test]
async fn a_last_event_id_is_digits_alone() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for bad in ["-1", "+3", "abc", "1.5", ""] {
        let reply = app
            .send(
                "GET",
                &t.url("/events?format=json"),
                Some(&t.user),
                &[("last-event-id", bad)],
                axum::body::Body::empty(),
            )
            .await;
        reply.expect(400, Some("INVALID_REQUEST"));
        assert_eq!(
            reply.json()["error"]["message"],
            "Last-Event-ID must be an event id",
            "{bad:?}"
        );
    }
    app.send(
        "GET",
        &t.url("/events?format=json"),
        Some(&t.user),
        &[("last-event-id", " 0 ")],
        axum::body::Body::empty(),
    )
    .await
    .expect(200, None);
}
