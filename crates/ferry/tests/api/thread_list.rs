//! The thread list (docs/reference/threads-and-sandbox.md): sorted by last activity, searched by
//! what a person sees of each thread, and followed live by every tab.

use crate::support::TestApp;
use crate::thread_support::{Frame, Sse, Thread, put_file, thread, upload_one};
use serde_json::{Value, json};
use std::time::Duration;

async fn message(app: &TestApp, t: &Thread, token: &str, text: &str) {
    app.post_json(&t.url("/messages"), token, json!({ "text": text }))
        .await
        .expect(201, None);
}

/// The agent writes `name` into outputs and sends it inline.
async fn send_file(app: &TestApp, t: &Thread, name: &str, text: &str) {
    let in_url = name.replace('%', "%25");
    put_file(app, t, &format!("outputs/{in_url}"), text.as_bytes()).await;
    app.post_json(
        &t.url("/send-file"),
        &t.agent,
        json!({ "filePath": format!("/sandbox/outputs/{name}") }),
    )
    .await
    .expect(200, None);
}

async fn listed(app: &TestApp, token: &str, query: &str) -> Vec<String> {
    let reply = app.get(&format!("/api/threads{query}"), token).await;
    reply.expect(200, None);
    reply.json()["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_most_recently_active_thread_comes_first() {
    let app = TestApp::new().await;
    let (a, b, c) = (
        thread(&app, "alice").await,
        thread(&app, "alice").await,
        thread(&app, "alice").await,
    );
    // Unused, newest first; the timestamps are milliseconds, so ids order same-time threads.
    assert_eq!(
        listed(&app, &a.user, "").await,
        [c.id.as_str(), b.id.as_str(), a.id.as_str()],
        "threads without events come newest first"
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    message(&app, &a, &a.agent, "a is busy").await;
    assert_eq!(
        listed(&app, &a.user, "").await,
        [a.id.as_str(), c.id.as_str(), b.id.as_str()]
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    upload_one(&app, &b, "notes.txt", b"b").await;
    assert_eq!(
        listed(&app, &a.user, "").await,
        [b.id.as_str(), a.id.as_str(), c.id.as_str()]
    );

    let one = app.get(&b.url(""), &b.user).await.json();
    let created = one["createdAt"].as_str().unwrap();
    let active = one["lastActivityAt"].as_str().unwrap();
    assert!(active > created, "{one}");
    let untouched = app.get(&c.url(""), &c.user).await.json();
    assert_eq!(untouched["lastActivityAt"], untouched["createdAt"]);
}

#[tokio::test]
async fn a_search_finds_threads_by_title_message_and_file_names() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    let titled = app
        .post_json("/api/threads", &alice, json!({ "title": "Budget Review" }))
        .await
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (talk, upload, sent) = (
        thread(&app, "alice").await,
        thread(&app, "alice").await,
        thread(&app, "alice").await,
    );
    message(
        &app,
        &talk,
        &talk.user,
        "Please check the QUARTERLY numbers",
    )
    .await;
    upload_one(&app, &upload, "invoice-2026.pdf", b"%PDF-").await;
    send_file(&app, &sent, "summary_50%.md", "the text is not searched").await;
    let bob = thread(&app, "bob").await;
    message(&app, &bob, &bob.user, "quarterly numbers of bob").await;

    let search = |q: &str| {
        let query = format!("?q={q}");
        let (app, alice) = (&app, &alice);
        async move { listed(app, alice, &query).await }
    };
    assert_eq!(search("budget").await, [titled.as_str()]);
    assert_eq!(
        search("quarterly").await,
        [talk.id.as_str()],
        "case, and only alice's"
    );
    assert_eq!(search("INVOICE-2026").await, [upload.id.as_str()]);
    assert_eq!(search("summary_50%25").await, [sent.id.as_str()]);
    // `%` and `_` are letters, not wildcards.
    assert!(search("summary%25md").await.is_empty());
    assert!(search("_50_").await.is_empty());
    // JSON keys and other fields are not text a person sees.
    assert!(search("content").await.is_empty());
    assert!(search("not%20searched").await.is_empty());
    // Blank is everything; the search keeps the activity order.
    assert_eq!(search("%20%20").await.len(), 4);
    message(&app, &upload, &upload.user, "numbers, quarterly").await;
    assert_eq!(
        search("quarterly").await,
        [upload.id.as_str(), talk.id.as_str()]
    );

    // An agent searches its one thread only; a text too long is refused.
    assert_eq!(
        listed(&app, &talk.agent, "?q=quarterly").await,
        [talk.id.as_str()]
    );
    assert!(listed(&app, &upload.agent, "?q=budget").await.is_empty());
    app.get(&format!("/api/threads?q={}", "x".repeat(501)), &alice)
        .await
        .expect(400, Some("INVALID_REQUEST"));
}

/// The next list event of a live thread list, skipping keep-alives.
async fn next(sse: &mut Sse) -> Value {
    loop {
        match sse.next_frame_within(Duration::from_secs(10)).await {
            Frame::Event { id, data } => {
                assert_eq!(id, None, "the thread list has no event ids");
                return serde_json::from_str(&data).unwrap();
            }
            Frame::Comment(_) => continue,
        }
    }
}

#[tokio::test]
async fn every_tab_hears_of_threads_made_renamed_active_and_deleted() {
    let app = TestApp::new().await;
    let first = thread(&app, "alice").await;
    let addr = app.spawn().await;
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/api/threads/live");
    let mut tab = Sse::open(&client, &url, &first.user, None).await;
    let mut bobs_tab = Sse::open(&client, &url, &app.user("bob"), None).await;

    let listed = next(&mut tab).await;
    assert_eq!(listed["type"], "threads");
    assert_eq!(listed["threads"][0]["id"], first.id.as_str());
    assert_eq!(listed["threads"].as_array().unwrap().len(), 1);
    assert_eq!(next(&mut bobs_tab).await["threads"], json!([]));

    let made = thread(&app, "alice").await;
    let event = next(&mut tab).await;
    assert_eq!(event["type"], "thread");
    assert_eq!(event["thread"]["id"], made.id.as_str());

    app.send(
        "PATCH",
        &made.url(""),
        Some(&made.user),
        &[("content-type", "application/json")],
        axum::body::Body::from(r#"{"title":"Renamed"}"#),
    )
    .await
    .expect(200, None);
    let event = next(&mut tab).await;
    assert_eq!(
        (&event["type"], &event["thread"]["title"]),
        (&json!("thread"), &json!("Renamed"))
    );

    message(&app, &first, &first.agent, "work goes on").await;
    let event = next(&mut tab).await;
    assert_eq!(event["thread"]["id"], first.id.as_str());
    assert_eq!(event["thread"]["lastEventId"], 1);

    app.send(
        "DELETE",
        &made.url(""),
        Some(&made.user),
        &[],
        axum::body::Body::empty(),
    )
    .await
    .expect(204, None);
    assert_eq!(
        next(&mut tab).await,
        json!({ "type": "thread_deleted", "id": made.id })
    );

    // Bob's tab heard nothing of alice's threads: its next frame is a keep-alive or nothing.
    let quiet = tokio::time::timeout(
        Duration::from_millis(800),
        bobs_tab.next_frame_within(Duration::from_secs(1)),
    )
    .await;
    assert!(matches!(quiet, Err(_) | Ok(Frame::Comment(_))), "{quiet:?}");

    // A reconnect starts with the whole list as it is now.
    let mut again = Sse::open(&client, &url, &first.user, None).await;
    let listed = next(&mut again).await;
    assert_eq!(listed["threads"].as_array().unwrap().len(), 1);
    assert_eq!(listed["threads"][0]["lastEventId"], 1);
}

#[tokio::test]
async fn many_events_at_once_reach_a_tab_as_few_changes() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let addr = app.spawn().await;
    let client = reqwest::Client::new();
    let mut tab = Sse::open(
        &client,
        &format!("http://{addr}/api/threads/live"),
        &t.user,
        None,
    )
    .await;
    next(&mut tab).await;
    for i in 0..40 {
        message(&app, &t, &t.agent, &format!("m{i}")).await;
    }
    let mut changes = 0;
    loop {
        let event = next(&mut tab).await;
        changes += 1;
        if event["thread"]["lastEventId"] == 40 {
            break;
        }
    }
    assert!(changes < 40, "{changes} changes for 40 events");
}

#[tokio::test]
async fn only_a_person_has_a_thread_list_to_follow() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    app.get("/api/threads/live", &t.agent)
        .await
        .expect(403, Some("FORBIDDEN"));
    app.get("/api/threads/live", &app.service(None))
        .await
        .expect(403, Some("FORBIDDEN"));
    // service_role for a user follows that user's list.
    let addr = app.spawn().await;
    let mut tab = Sse::open(
        &reqwest::Client::new(),
        &format!("http://{addr}/api/threads/live"),
        &app.service(Some("alice")),
        None,
    )
    .await;
    assert_eq!(next(&mut tab).await["threads"][0]["id"], t.id.as_str());
}
