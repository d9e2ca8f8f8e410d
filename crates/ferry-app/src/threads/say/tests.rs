//! The tests of `say`: `<say>` blocks become messages, `<file>` tags attach files to the last
//! of them, nothing else is sent, and a tag that cannot be attached is skipped with a warning.

use super::*;
use crate::testing::{app, body, thread_of, user};
use ferry_core::door::Door;
use ferry_core::write::WriteCondition;

async fn message_events(app: &App, thread: &str) -> Vec<serde_json::Value> {
    app.db
        .events_after(thread, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "message")
        .map(|e| serde_json::from_str(&e.json).unwrap())
        .collect()
}

#[tokio::test]
async fn say_blocks_become_messages_and_files_go_with_the_last() {
    let (app, _dir) = app().await;
    let (thread, agent) = thread_of(&app, "alice").await;
    crate::files::sandbox::write(
        &app,
        &agent,
        &thread,
        &SandboxPath::parse("/sandbox/outputs/report.md").unwrap(),
        "text/markdown",
        &WriteCondition::None,
        body(b"# Report"),
        Door::Http,
    )
    .await
    .unwrap();
    let reply = "thinking, never sent <say>Here it is.</say> also unsent \
                 <say>Anything else?</say><file mode=\"doc\">/sandbox/outputs/report.md</file>\
                 <file>/sandbox/outputs/missing.pdf</file>";
    let said = deliver(&app, &agent, &thread, reply).await.unwrap();
    assert_eq!(said.messages.len(), 2);
    assert_eq!(said.files.len(), 1);
    assert_eq!(said.files[0].filename, "report.md");
    assert_eq!(said.warnings.len(), 1, "{:?}", said.warnings);
    assert!(said.warnings[0].starts_with("/sandbox/outputs/missing.pdf: "));

    let events = message_events(&app, &thread).await;
    let contents: Vec<&str> = events
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["Here it is.", "Anything else?"]);
    assert!(
        events[0].get("files").is_none(),
        "files go with the last message"
    );
    assert_eq!(events[1]["files"][0]["filename"], "report.md");
    assert_eq!(events[1]["role"], "agent");
    // The attachment reads back as the file's bytes, for whoever may read the thread.
    let attachment = attachment(&app, &user("alice"), &thread, &said.files[0].id)
        .await
        .unwrap();
    assert_eq!(attachment.size, 8);
}

#[tokio::test]
async fn a_reply_with_nothing_to_send_says_so_and_stores_nothing() {
    let (app, _dir) = app().await;
    let (thread, agent) = thread_of(&app, "alice").await;
    let said = deliver(&app, &agent, &thread, "just thinking aloud")
        .await
        .unwrap();
    assert!(said.messages.is_empty() && said.files.is_empty());
    assert_eq!(said.warnings, [NOTHING_SENT]);
    assert!(message_events(&app, &thread).await.is_empty());
    // Only the thread's agent (or service_role) speaks in say mode.
    assert!(matches!(
        deliver(&app, &user("alice"), &thread, "<say>hi</say>").await,
        Err(Error::Forbidden(_))
    ));
    // A block too long for an event fails the whole reply before anything is stored.
    let long = format!("<say>short</say><say>{}</say>", "x".repeat(MAX_EVENT_BYTES));
    assert!(matches!(
        deliver(&app, &agent, &thread, &long).await,
        Err(Error::TooLarge(_))
    ));
    assert!(message_events(&app, &thread).await.is_empty());
}
