//! Threads and agent tokens (docs/reference/auth.md, threads-and-sandbox.md): who may create, see and act in a thread, and the
//! sandbox each thread gets.
//!
//! Why one file: one resource from creation to deletion: making, seeing, renaming and deleting a
//! thread, minting its agents' tokens, and the sandbox and skills it is given, each step with who
//! may and who may not take it (its owner, another user, another thread's agent, the service
//! role), so the rules of a thread are read in one place.

use crate::support;
use crate::support::TestApp;
use crate::thread_support;
use crate::thread_support::{BIN, put_file, sandbox_dir, thread};
use axum::body::Body;
use serde_json::json;

#[tokio::test]
async fn create_list_and_get_with_an_optional_title() {
    let app = TestApp::new().await;
    let alice = app.user("alice");

    let titled = app
        .post_json("/api/threads", &alice, json!({ "title": "Q3 report" }))
        .await;
    titled.expect(201, None);
    let titled = titled.json();
    assert_eq!(titled["title"], "Q3 report");
    assert_eq!(titled["owner"], "alice");
    let id = titled["id"].as_str().unwrap().to_owned();
    assert!(!id.is_empty());
    assert!(
        titled["createdAt"].as_str().unwrap().ends_with('Z'),
        "{titled}"
    );

    // No title at all: an empty object, or no body.
    let untitled = app.post_json("/api/threads", &alice, json!({})).await;
    untitled.expect(201, None);
    assert_eq!(untitled.json()["title"], serde_json::Value::Null);
    let bare = app
        .send("POST", "/api/threads", Some(&alice), &[], Body::empty())
        .await;
    bare.expect(201, None);
    assert_eq!(bare.json()["title"], serde_json::Value::Null);
    assert_eq!(bare.json()["owner"], "alice");
    // `null` is what the document's optional body lets a generated client send.
    let nulled = app
        .post_json("/api/threads", &alice, serde_json::Value::Null)
        .await;
    nulled.expect(201, None);
    // Anything but an object is refused, even what serde would read as the fields in order.
    for not_an_object in [
        json!([null, null]),
        json!(["a title"]),
        json!("a title"),
        json!(3),
    ] {
        let refused = app.post_json("/api/threads", &alice, not_an_object).await;
        refused.expect(400, Some("INVALID_REQUEST"));
        assert_eq!(
            refused.json()["error"]["message"],
            "the JSON body must be an object"
        );
    }

    let one = app.get(&format!("/api/threads/{id}"), &alice).await;
    one.expect(200, None);
    let one = one.json();
    for field in ["id", "title", "owner", "createdAt"] {
        assert_eq!(one[field], titled[field], "{field}");
    }

    // Bob's thread is not in Alice's list.
    let bob = app.user("bob");
    app.post_json("/api/threads", &bob, json!({ "title": "bob's" }))
        .await
        .expect(201, None);
    let list = app.get("/api/threads", &alice).await;
    list.expect(200, None);
    let mut ids: Vec<String> = list.json()["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["owner"], "alice");
            t["id"].as_str().unwrap().to_owned()
        })
        .collect();
    ids.sort();
    let mut expected = vec![
        id,
        untitled.json()["id"].as_str().unwrap().to_owned(),
        bare.json()["id"].as_str().unwrap().to_owned(),
        nulled.json()["id"].as_str().unwrap().to_owned(),
    ];
    expected.sort();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn another_users_thread_is_not_found_never_forbidden() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let bob = app.user("bob");
    for path in [
        "",
        "/uploads",
        "/sandbox",
        "/sandbox/outputs/x.txt",
        "/events?format=json",
        "/published",
    ] {
        app.get(&t.url(path), &bob)
            .await
            .expect(404, Some("NOT_FOUND"));
    }
    app.post_json(&t.url("/agent-token"), &bob, json!({}))
        .await
        .expect(404, Some("NOT_FOUND"));
    app.post_json(&t.url("/messages"), &bob, json!({ "text": "hi" }))
        .await
        .expect(404, Some("NOT_FOUND"));
    // A thread that does not exist answers the same.
    app.get("/api/threads/no-such-thread", &bob)
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn service_role_creates_threads_for_an_owner() {
    let app = TestApp::new().await;
    let service = app.service(None);
    let created = app
        .post_json(
            "/api/threads",
            &service,
            json!({ "owner": "carol", "title": "for carol" }),
        )
        .await;
    created.expect(201, None);
    let created = created.json();
    assert_eq!(created["owner"], "carol");
    let id = created["id"].as_str().unwrap();
    // Carol sees and owns it.
    let carol = app.user("carol");
    let seen = app.get(&format!("/api/threads/{id}"), &carol).await;
    seen.expect(200, None);
    assert_eq!(seen.json()["owner"], "carol");
    // Someone else still does not.
    app.get(&format!("/api/threads/{id}"), &app.user("dave"))
        .await
        .expect(404, Some("NOT_FOUND"));

    // Without an owner, service_role has nobody to create it for.
    app.post_json("/api/threads", &service, json!({ "title": "orphan" }))
        .await
        .expect(400, Some("INVALID_REQUEST"));
}

#[tokio::test]
async fn a_user_cannot_create_a_thread_for_someone_else() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    app.post_json("/api/threads", &alice, json!({ "owner": "bob" }))
        .await
        .expect(403, Some("FORBIDDEN"));
    // Naming oneself is fine.
    let own = app
        .post_json("/api/threads", &alice, json!({ "owner": "alice" }))
        .await;
    own.expect(201, None);
    assert_eq!(own.json()["owner"], "alice");
    // Bob got nothing.
    let bobs = app.get("/api/threads", &app.user("bob")).await;
    assert_eq!(bobs.json()["threads"], json!([]));
}

#[tokio::test]
async fn agents_cannot_create_threads() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    app.post_json("/api/threads", &t.agent, json!({ "title": "mine" }))
        .await
        .expect(403, Some("FORBIDDEN"));
}

async fn mint(app: &TestApp, t: &thread_support::Thread, token: &str) -> support::Reply {
    app.post_json(&t.url("/agent-token"), token, json!({}))
        .await
}

#[tokio::test]
async fn agent_tokens_are_minted_by_the_owner_and_service_role_only() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;

    for minter in [t.user.clone(), app.service(None)] {
        let reply = mint(&app, &t, &minter).await;
        assert!(
            matches!(reply.status.as_u16(), 200 | 201),
            "{}",
            reply.text()
        );
        let body = reply.json();
        let token = body["token"].as_str().unwrap();
        assert!(body["expiresAt"].as_str().unwrap().ends_with('Z'), "{body}");
        // The token acts as the thread's agent: it may write the sandbox, which the owner
        // may not.
        app.put(
            &t.url("/sandbox/outputs/from-minted.txt"),
            token,
            "text/plain",
            b"ok",
        )
        .await
        .expect_created_or_ok();
        app.put(
            &t.url("/sandbox/outputs/from-owner.txt"),
            &t.user,
            "text/plain",
            b"no",
        )
        .await
        .expect(403, Some("FORBIDDEN"));
    }

    // The agent may not mint itself more tokens.
    mint(&app, &t, &t.agent)
        .await
        .expect(403, Some("FORBIDDEN"));
    // Another user does not even see the thread.
    mint(&app, &t, &app.user("mallory"))
        .await
        .expect(404, Some("NOT_FOUND"));
}

/// JSON does not tell `3600` from `3600.0`, and neither does the server; a fraction or a
/// negative number is still refused.
#[tokio::test]
async fn a_ttl_may_be_written_as_a_whole_float() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let minted = app
        .post_json(
            &t.url("/agent-token"),
            &t.user,
            json!({ "ttlSeconds": 944.0 }),
        )
        .await;
    minted.expect(200, None);
    for bad in [json!(944.5), json!(-1), json!("944")] {
        app.post_json(
            &t.url("/agent-token"),
            &t.user,
            json!({ "ttlSeconds": bad }),
        )
        .await
        .expect(400, Some("INVALID_REQUEST"));
    }
}

#[tokio::test]
async fn a_minted_agent_id_names_the_agent_in_events() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let reply = app
        .post_json(
            &t.url("/agent-token"),
            &t.user,
            json!({ "agentId": "researcher" }),
        )
        .await;
    let token = reply.json()["token"].as_str().unwrap().to_owned();
    let posted = app
        .post_json(&t.url("/messages"), &token, json!({ "text": "found it" }))
        .await;
    posted.expect(201, None);
    assert_eq!(posted.json()["agentId"], "researcher");
    assert_eq!(posted.json()["role"], "agent");
}

#[tokio::test]
async fn an_agent_of_thread_a_cannot_see_thread_b() {
    let app = TestApp::new().await;
    let a = thread(&app, "alice").await;
    let b = thread(&app, "alice").await;
    put_file(&app, &b, "outputs/b.txt", b"b's").await;
    let upload = thread_support::upload_one(&app, &b, "b.txt", b"b's upload").await;
    let published = thread_support::publish(&app, &b, "/sandbox/outputs/b.txt", "B").await;
    published.expect(201, None);
    let pid = published.json()["id"].as_str().unwrap().to_owned();
    let upload_id = upload["id"].as_str().unwrap();

    for path in [
        String::new(),
        "/uploads".into(),
        format!("/uploads/{upload_id}/content"),
        "/sandbox".into(),
        "/sandbox/outputs/b.txt".into(),
        "/events?format=json".into(),
        "/published".into(),
        format!("/published/{pid}/content"),
        format!("/published/{pid}/preview"),
    ] {
        app.get(&b.url(&path), &a.agent)
            .await
            .expect(404, Some("NOT_FOUND"));
    }
    app.put(&b.url("/sandbox/outputs/x.txt"), &a.agent, BIN, b"x")
        .await
        .expect(404, Some("NOT_FOUND"));
    app.post_json(
        &b.url("/published"),
        &a.agent,
        json!({ "file_path": "/sandbox/outputs/b.txt", "display_name": "stolen" }),
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    app.post_json(
        &b.url("/send-file"),
        &a.agent,
        json!({ "filePath": "/sandbox/outputs/b.txt" }),
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    app.post_json(&b.url("/messages"), &a.agent, json!({ "text": "hi" }))
        .await
        .expect(404, Some("NOT_FOUND"));
    app.get(
        &format!(
            "/api/storage/thread-file?storage_path=deepagent-outputs/{}/b.txt",
            b.id
        ),
        &a.agent,
    )
    .await
    .expect(404, Some("NOT_FOUND"));

    // The agent's list holds its own thread only.
    let list = app.get("/api/threads", &a.agent).await;
    list.expect(200, None);
    let threads = list.json()["threads"].clone();
    assert_eq!(threads.as_array().unwrap().len(), 1, "{threads}");
    assert_eq!(threads[0]["id"], a.id.as_str());
    // Nothing was written into B.
    assert_eq!(
        std::fs::read_dir(sandbox_dir(&app, &b).await.join("outputs"))
            .unwrap()
            .count(),
        1
    );
}

#[tokio::test]
async fn sandbox_dir_is_told_to_agents_and_service_role_only() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    let created = app.post_json("/api/threads", &alice, json!({})).await;
    assert!(
        created.json().get("sandboxDir").is_none(),
        "{}",
        created.text()
    );
    let id = created.json()["id"].as_str().unwrap().to_owned();
    let as_user = app.get(&format!("/api/threads/{id}"), &alice).await.json();
    assert!(as_user.get("sandboxDir").is_none(), "{as_user}");
    let listed = app.get("/api/threads", &alice).await.json();
    assert!(listed["threads"][0].get("sandboxDir").is_none(), "{listed}");

    let agent = app.agent("alice", &id);
    let as_agent = app.get(&format!("/api/threads/{id}"), &agent).await.json();
    let service = app.service(None);
    let as_service = app
        .get(&format!("/api/threads/{id}"), &service)
        .await
        .json();
    let dir = as_agent["sandboxDir"].as_str().unwrap();
    assert_eq!(as_service["sandboxDir"], dir);

    // The folder exists with the standard layout.
    let root = std::path::Path::new(dir);
    for folder in [
        "skills",
        "user_uploads",
        "shared",
        "shared/research",
        "shared/drafts",
        "outputs",
        "workspace",
    ] {
        assert!(root.join(folder).is_dir(), "{folder} missing in {dir}");
    }
    // And it is the folder the API reads: a file put there is served.
    std::fs::write(root.join("workspace/direct.txt"), b"written on the host").unwrap();
    let read = app
        .get(
            &format!("/api/threads/{id}/sandbox/workspace/direct.txt"),
            &agent,
        )
        .await;
    read.expect(200, None);
    assert_eq!(read.body, b"written on the host");
}

#[tokio::test]
async fn two_threads_get_two_sandboxes() {
    let app = TestApp::new().await;
    let a = thread(&app, "alice").await;
    let b = thread(&app, "alice").await;
    assert_ne!(sandbox_dir(&app, &a).await, sandbox_dir(&app, &b).await);
    put_file(&app, &a, "outputs/only-in-a.txt", b"a").await;
    app.get(&b.url("/sandbox/outputs/only-in-a.txt"), &b.agent)
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn skills_are_copied_in_and_read_only() {
    let skills = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(skills.path().join("pdf/scripts")).unwrap();
    std::fs::write(skills.path().join("pdf/SKILL.md"), b"# PDF skill\n").unwrap();
    std::fs::write(
        skills.path().join("pdf/scripts/fill.py"),
        b"print('fill')\n",
    )
    .unwrap();
    std::fs::write(skills.path().join("README.md"), b"skills index").unwrap();
    let skills_path = skills.path().to_path_buf();
    let app = TestApp::with(|c| c.app.skills_dir = Some(skills_path)).await;
    let t = thread(&app, "alice").await;

    let dir = sandbox_dir(&app, &t).await;
    assert_eq!(
        std::fs::read(dir.join("skills/pdf/SKILL.md")).unwrap(),
        b"# PDF skill\n"
    );
    let read = app
        .get(&t.url("/sandbox/skills/pdf/scripts/fill.py"), &t.agent)
        .await;
    read.expect(200, None);
    assert_eq!(read.body, b"print('fill')\n");
    let listed = app
        .get(
            &t.url("/sandbox?dir=/sandbox/skills&recursive=true"),
            &t.agent,
        )
        .await
        .json();
    let paths: Vec<&str> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "/sandbox/skills/README.md",
            "/sandbox/skills/pdf/SKILL.md",
            "/sandbox/skills/pdf/scripts/fill.py"
        ]
    );

    // Writes into /sandbox/skills/ are refused: new files, overwrites, new folders.
    for path in ["skills/new.md", "skills/pdf/SKILL.md", "skills/other/x.md"] {
        app.put(
            &t.url(&format!("/sandbox/{path}")),
            &t.agent,
            "text/markdown",
            b"hacked",
        )
        .await
        .expect(403, Some("FORBIDDEN"));
    }
    assert_eq!(
        std::fs::read(dir.join("skills/pdf/SKILL.md")).unwrap(),
        b"# PDF skill\n"
    );
    assert!(!dir.join("skills/new.md").exists());
    assert!(!dir.join("skills/other").exists());

    // A thread started later gets the skills too, each its own copy.
    let later = thread(&app, "bob").await;
    let later_dir = sandbox_dir(&app, &later).await;
    assert!(later_dir.join("skills/pdf/scripts/fill.py").is_file());
    assert_ne!(later_dir, dir);
}

#[tokio::test]
async fn without_a_skills_dir_skills_is_an_empty_folder() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let listed = app
        .get(
            &t.url("/sandbox?dir=/sandbox/skills&recursive=true"),
            &t.agent,
        )
        .await;
    listed.expect(200, None);
    assert_eq!(listed.json()["files"], json!([]));
}

trait ExpectWrite {
    fn expect_created_or_ok(&self);
}

impl ExpectWrite for support::Reply {
    fn expect_created_or_ok(&self) {
        assert!(
            matches!(self.status.as_u16(), 200 | 201),
            "{} {}",
            self.status,
            self.text()
        );
    }
}

#[tokio::test]
async fn the_owner_renames_a_thread_and_no_one_else_does() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let renamed = app
        .send(
            "PATCH",
            &t.url(""),
            Some(&t.user),
            &[("content-type", "application/json")],
            Body::from(r#"{"title": "  Q3 launch  "}"#),
        )
        .await;
    renamed.expect(200, None);
    assert_eq!(renamed.json()["title"], "Q3 launch");
    assert_eq!(renamed.json()["id"], t.id.as_str());
    assert_eq!(
        app.get(&t.url(""), &t.user).await.json()["title"],
        "Q3 launch"
    );
    let listed = app.get("/api/threads", &t.user).await.json();
    assert_eq!(listed["threads"][0]["title"], "Q3 launch");

    let patch = |token: String, body: String| {
        let app = &app;
        let url = t.url("");
        async move {
            app.send(
                "PATCH",
                &url,
                Some(&token),
                &[("content-type", "application/json")],
                Body::from(body),
            )
            .await
        }
    };
    // Blank is untitled; service_role may rename; a title too long, or a stray field, is refused.
    let blank = patch(t.user.clone(), r#"{"title": "   "}"#.to_owned()).await;
    blank.expect(200, None);
    assert_eq!(blank.json()["title"], serde_json::Value::Null);
    patch(
        app.service(None),
        r#"{"title": "By the service"}"#.to_owned(),
    )
    .await
    .expect(200, None);
    let long = format!(r#"{{"title": "{}"}}"#, "x".repeat(501));
    patch(t.user.clone(), long)
        .await
        .expect_invalid("longer than 500 characters");
    patch(t.user.clone(), r#"{"name": "x"}"#.to_owned())
        .await
        .expect(400, Some("INVALID_REQUEST"));
    // The agent may not; another user does not see the thread.
    patch(t.agent.clone(), r#"{"title": "mine now"}"#.to_owned())
        .await
        .expect(403, Some("FORBIDDEN"));
    patch(app.user("mallory"), r#"{"title": "mine now"}"#.to_owned())
        .await
        .expect(404, Some("NOT_FOUND"));
    assert_eq!(
        app.get(&t.url(""), &t.user).await.json()["title"],
        "By the service"
    );
}

#[tokio::test]
async fn deleting_a_thread_removes_everything_in_it() {
    let skills = tempfile::tempdir().unwrap();
    std::fs::write(skills.path().join("SKILL.md"), b"# skill\n").unwrap();
    let skills_path = skills.path().to_path_buf();
    let app = TestApp::with(|c| c.app.skills_dir = Some(skills_path)).await;
    let t = thread(&app, "alice").await;
    let other = thread(&app, "alice").await;
    put_file(&app, &other, "outputs/keep.txt", b"kept").await;

    thread_support::upload_one(&app, &t, "notes.txt", b"uploaded").await;
    put_file(&app, &t, "outputs/report.md", b"# Report").await;
    thread_support::publish(&app, &t, "/sandbox/outputs/report.md", "Report")
        .await
        .expect(201, None);
    let dir = sandbox_dir(&app, &t).await;
    assert!(dir.join("skills/SKILL.md").is_file());

    // Only the owner (or service_role) deletes; another user does not see it.
    let delete = |token: String| {
        let app = &app;
        let url = t.url("");
        async move {
            app.send("DELETE", &url, Some(&token), &[], Body::empty())
                .await
        }
    };
    delete(t.agent.clone()).await.expect(403, Some("FORBIDDEN"));
    delete(app.user("mallory"))
        .await
        .expect(404, Some("NOT_FOUND"));
    let deleted = delete(t.user.clone()).await;
    deleted.expect(204, None);
    assert!(deleted.body.is_empty());

    // Gone for every route and every token, its sandbox folder with it (skills/ included).
    for route in [
        "",
        "/events?format=json",
        "/uploads",
        "/published",
        "/sandbox",
    ] {
        app.get(&t.url(route), &t.user)
            .await
            .expect(404, Some("NOT_FOUND"));
    }
    // Its agent's token is revoked with it: refused as unauthenticated on every route, so a
    // client knows to get a new token rather than look for the file.
    let refused = app
        .get(&t.url("/sandbox/outputs/report.md"), &t.agent)
        .await;
    refused.expect(401, Some("UNAUTHENTICATED"));
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("this agent token's thread does not exist"),
    );
    assert!(!dir.exists(), "{} should be gone", dir.display());
    let listed = app.get("/api/threads", &t.user).await.json();
    let ids: Vec<&str> = listed["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [other.id.as_str()]);
    delete(t.user.clone()).await.expect(404, Some("NOT_FOUND"));
    // The owner's other thread is untouched.
    assert_eq!(
        app.get(&other.url("/sandbox/outputs/keep.txt"), &other.user)
            .await
            .body,
        b"kept"
    );
}

/// A thread tells the id of its newest event, so a client replaying the stream knows when it has
/// caught up (and that a thread without events is empty, not loading).
#[tokio::test]
async fn a_thread_tells_its_newest_event() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let newest = |reply: support::Reply| reply.json()["lastEventId"].clone();
    assert_eq!(newest(app.get(&t.url(""), &t.user).await), 0);
    for text in ["one", "two"] {
        app.post_json(&t.url("/messages"), &t.agent, json!({ "text": text }))
            .await
            .expect(201, None);
    }
    assert_eq!(newest(app.get(&t.url(""), &t.user).await), 2);
    let listed = app.get("/api/threads", &t.user).await.json();
    assert_eq!(listed["threads"][0]["lastEventId"], 2);
}
