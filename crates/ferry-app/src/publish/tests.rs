//! The tests of `publish`: revisions by display name, bytes copied when published, who may
//! publish, and the events every attempt ends in.

use super::*;
use crate::testing::{agent, app, body, thread_of, user};
use ferry_core::door::Door;
use ferry_core::write::WriteCondition;
use sha2::Digest as _;

/// The agent writes `bytes` at `path` of its sandbox.
async fn write(app: &App, agent: &Principal, thread: &str, path: &str, bytes: &[u8]) {
    let path = SandboxPath::parse(path).unwrap();
    crate::files::sandbox::write(
        app,
        agent,
        thread,
        &path,
        "text/markdown",
        &WriteCondition::None,
        body(bytes),
        Door::Http,
    )
    .await
    .unwrap();
}

fn publication<'a>(file_path: &'a str, display_name: &'a str) -> Publication<'a> {
    Publication {
        file_path,
        display_name,
        description: String::new(),
    }
}

/// The thread's publish events as (type, publishId) pairs (the sandbox's own events left out).
async fn publish_events(app: &App, thread: &str) -> Vec<(String, String)> {
    app.db
        .events_after(thread, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind.starts_with("file_publish"))
        .map(|e| {
            let json: serde_json::Value = serde_json::from_str(&e.json).unwrap();
            let id = json["publishId"].as_str().unwrap_or_default().to_owned();
            (e.kind, id)
        })
        .collect()
}

#[tokio::test]
async fn the_same_display_name_makes_a_new_revision_of_the_bytes_as_they_were_then() {
    let (app, _dir) = app().await;
    let (thread, agent) = thread_of(&app, "alice").await;
    let report = "/sandbox/outputs/report.md";
    write(&app, &agent, &thread, report, b"# One").await;
    let first = publish(&app, &agent, &thread, publication(report, "Report"))
        .await
        .unwrap();
    write(&app, &agent, &thread, report, b"# Two, longer").await;
    let second = publish(&app, &agent, &thread, publication(report, " Report "))
        .await
        .unwrap();
    assert_eq!((first.revision, second.revision), (1, 2));
    assert_eq!(first.file_id, second.file_id, "one file, two revisions");

    // The first revision keeps the bytes it was published with.
    let owner = user("alice");
    let kept = revision(&app, &owner, &thread, &first.file_id, Some(1))
        .await
        .unwrap();
    assert_eq!(kept.file_size, 5);
    assert_eq!(kept.sha256, hex(&sha2::Sha256::digest(b"# One")));
    let latest = revision(&app, &owner, &thread, &first.file_id, None)
        .await
        .unwrap();
    assert_eq!(latest.revision, 2);
    assert_eq!(list(&app, &owner, &thread, false).await.unwrap().len(), 1);
    assert_eq!(list(&app, &owner, &thread, true).await.unwrap().len(), 2);
    assert!(matches!(
        revision(&app, &owner, &thread, &first.file_id, Some(3)).await,
        Err(Error::NotFound(_))
    ));

    // Another display name is another file.
    let other = publish(&app, &agent, &thread, publication(report, "Summary"))
        .await
        .unwrap();
    assert_ne!(other.file_id, first.file_id);
    assert_eq!(other.revision, 1);
    // Found by its storage path too, by whoever may read the thread.
    let found = by_storage_path(&app, &owner, &other.storage_path)
        .await
        .unwrap();
    assert_eq!(found.file_id, other.file_id);
}

#[tokio::test]
async fn only_the_threads_agent_publishes_and_every_attempt_ends_in_an_event() {
    let (app, _dir) = app().await;
    let (thread, its_agent) = thread_of(&app, "alice").await;
    write(&app, &its_agent, &thread, "/sandbox/outputs/a.md", b"a").await;
    let a = publication("/sandbox/outputs/a.md", "A");
    assert!(matches!(
        publish(&app, &user("alice"), &thread, a.clone()).await,
        Err(Error::Forbidden(_))
    ));
    for stranger in [user("bob"), agent("alice", "another-thread")] {
        assert!(matches!(
            publish(&app, &stranger, &thread, a.clone()).await,
            Err(Error::NotFound(_))
        ));
    }
    // A request that is not well-formed is refused before anything is announced.
    for (path, name) in [("/sandbox/outputs/a.md", "  "), ("../a.md", "A")] {
        let refused = publish(&app, &its_agent, &thread, publication(path, name)).await;
        assert!(
            matches!(
                refused,
                Err(Error::InvalidRequest(_) | Error::InvalidPath(_))
            ),
            "{refused:?}"
        );
    }
    assert!(publish_events(&app, &thread).await.is_empty());

    // A missing file: the attempt is announced, then its failure, under one publishId.
    let missing = publish(
        &app,
        &its_agent,
        &thread,
        publication("/sandbox/outputs/gone.md", "Gone"),
    )
    .await;
    assert!(matches!(missing, Err(Error::NotFound(_))), "{missing:?}");
    let published = publish(&app, &its_agent, &thread, a).await.unwrap();
    let events = publish_events(&app, &thread).await;
    let kinds: Vec<&str> = events.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "file_publishing",
            "file_publish_failed",
            "file_publishing",
            "file_published"
        ]
    );
    assert_eq!(events[0].1, events[1].1);
    assert_eq!(events[2].1, events[3].1);
    assert_ne!(events[0].1, events[2].1);
    assert_eq!(published.revision, 1);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
