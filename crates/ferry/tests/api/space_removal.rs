//! Removing a space with everything in it, and making empty folders
//! (docs/reference/spaces.md, "Removing a space" and "Making a folder").

use crate::support::TestApp;
use crate::thread_support::{pairs, paths_and_types};
use axum::body::Body;
use serde_json::{Value, json};

const MD: &str = "text/markdown";

async fn entries(app: &TestApp, token: &str, query: &str) -> Vec<(String, String)> {
    let reply = app
        .get(&format!("/api/spaces/notes/files{query}"), token)
        .await;
    reply.expect(200, None);
    paths_and_types(&reply.json())
}

async fn delete_space(app: &TestApp, token: &str, space: &str) -> crate::support::Reply {
    app.send(
        "DELETE",
        &format!("/api/spaces/{space}"),
        Some(token),
        &[],
        Body::empty(),
    )
    .await
}

async fn make_folder(app: &TestApp, token: &str, body: Value) -> crate::support::Reply {
    app.post_json("/api/spaces/notes/folders", token, body)
        .await
}

#[tokio::test]
async fn a_space_is_removed_with_every_file_and_folder_in_it() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    for path in ["a.md", "deep/er/b.md", "deep/c.md"] {
        app.put(&format!("/api/spaces/notes/files/{path}"), &alice, MD, b"x")
            .await
            .expect(201, None);
    }
    make_folder(&app, &alice, json!({ "path": "empty/inside" }))
        .await
        .expect(201, None);
    // Bob's space of the same name is another space.
    let bob = app.user("bob");
    app.put("/api/spaces/notes/files/bob.md", &bob, MD, b"b")
        .await
        .expect(201, None);

    delete_space(&app, &alice, "notes").await.expect(204, None);
    let spaces = app.get("/api/spaces", &alice).await.json();
    assert_eq!(spaces["spaces"], json!([]), "{spaces}");
    assert!(entries(&app, &alice, "?recursive=true").await.is_empty());
    assert!(
        entries(&app, &alice, "").await.is_empty(),
        "no folder is left"
    );
    app.get("/api/spaces/notes/files/a.md", &alice)
        .await
        .expect(404, Some("NOT_FOUND"));
    delete_space(&app, &alice, "notes")
        .await
        .expect(404, Some("NOT_FOUND"));
    assert_eq!(
        entries(&app, &bob, "").await,
        pairs(&[("bob.md", "file")]),
        "bob's notes are untouched"
    );

    // Its name is free again: a write makes a new, empty-but-for-it space.
    app.put("/api/spaces/notes/files/new.md", &alice, MD, b"n")
        .await
        .expect(201, None);
    assert_eq!(
        entries(&app, &alice, "").await,
        pairs(&[("new.md", "file")])
    );
}

#[tokio::test]
async fn an_empty_space_is_removed_and_bad_names_are_refused() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    make_folder(&app, &alice, json!({ "path": "x" }))
        .await
        .expect(201, None);
    delete_space(&app, &alice, "notes").await.expect(204, None);
    delete_space(&app, &alice, "nothing-here")
        .await
        .expect(404, Some("NOT_FOUND"));
    delete_space(&app, &alice, ".hidden")
        .await
        .expect(400, Some("INVALID_PATH"));
    delete_space(&app, &app.service(None), "notes")
        .await
        .expect(403, Some("FORBIDDEN"));
}

#[tokio::test]
async fn a_made_folder_is_listed_while_empty() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    let made = make_folder(&app, &alice, json!({ "path": "reports/2026" })).await;
    made.expect(201, None);
    assert_eq!(made.json(), json!({ "path": "reports/2026" }));
    // The space exists now, and the folder and its parent are listed.
    let spaces = app.get("/api/spaces", &alice).await.json();
    assert_eq!(spaces["spaces"][0]["name"], "notes");
    assert_eq!(
        entries(&app, &alice, "").await,
        pairs(&[("reports", "dir")])
    );
    assert_eq!(
        entries(&app, &alice, "?dir=reports").await,
        pairs(&[("reports/2026", "dir")])
    );
    // Made again (a trailing slash is dropped): already there.
    let again = make_folder(&app, &alice, json!({ "path": "reports/2026/" })).await;
    again.expect(200, None);
    assert_eq!(again.json(), json!({ "path": "reports/2026" }));
    // A file written into it, then deleted, takes the empty folder along.
    app.put(
        "/api/spaces/notes/files/reports/2026/q1.md",
        &alice,
        MD,
        b"q",
    )
    .await
    .expect(201, None);
    app.send(
        "DELETE",
        "/api/spaces/notes/files/reports/2026/q1.md",
        Some(&alice),
        &[],
        Body::empty(),
    )
    .await
    .expect(204, None);
    assert!(entries(&app, &alice, "").await.is_empty());
}

#[tokio::test]
async fn a_folder_cannot_go_where_a_file_is() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    app.put("/api/spaces/notes/files/plan.md", &alice, MD, b"p")
        .await
        .expect(201, None);
    for path in ["plan.md", "plan.md/sub"] {
        make_folder(&app, &alice, json!({ "path": path }))
            .await
            .expect(409, Some("ALREADY_EXISTS"));
    }
    assert_eq!(
        entries(&app, &alice, "").await,
        pairs(&[("plan.md", "file")])
    );
    for bad in [
        json!({ "path": "../up" }),
        json!({ "path": "" }),
        json!({ "path": "/abs" }),
    ] {
        make_folder(&app, &alice, bad)
            .await
            .expect(400, Some("INVALID_PATH"));
    }
    make_folder(&app, &alice, json!({ "path": "a", "extra": 1 }))
        .await
        .expect(400, Some("INVALID_REQUEST"));
}
