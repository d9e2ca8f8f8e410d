//! The tests of `uploads`: the bytes reach the sandbox, names never overwrite, only the owner
//! uploads, and a refused request keeps nothing.

use super::*;
use crate::testing::{app, body, thread_of, user};
use ferry_core::SandboxPath;

/// Uploads files as `principal`, kept in one request.
async fn upload(
    app: &App,
    principal: &Principal,
    thread: &str,
    files: &[(&str, &[u8])],
) -> Result<Vec<UploadView>> {
    let mut receiver = receive(app, principal, thread).await?;
    for (name, bytes) in files {
        receiver
            .spool(ValidPath::parse(name).unwrap(), body(bytes))
            .await?;
    }
    receiver.keep().await
}

async fn sandbox_bytes(app: &App, agent: &Principal, thread: &str, path: &str) -> Vec<u8> {
    let path = SandboxPath::parse(path).unwrap();
    crate::files::sandbox::open(app, agent, thread, &path)
        .await
        .unwrap()
        .read_to_end(1 << 20)
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn an_upload_lands_in_the_sandbox_as_it_was_sent_and_a_name_is_never_overwritten() {
    let (app, _dir) = app().await;
    let (thread, agent) = thread_of(&app, "alice").await;
    let owner = user("alice");
    let first = upload(&app, &owner, &thread, &[("notes.txt", b"first")])
        .await
        .unwrap();
    assert_eq!(first[0].sandbox_path, "/sandbox/user_uploads/notes.txt");
    assert_eq!(first[0].file_type, "text/plain");
    assert_eq!(first[0].size, 5);
    // A text file's preview is its text; the hidden note hands the agent the preview and where
    // the file is.
    assert_eq!(first[0].preview.as_deref(), Some("first"));
    assert_eq!(first[0].preview_error, None);
    assert!(first[0].attachment_xml.contains("first"));
    assert!(
        first[0]
            .attachment_xml
            .contains("/sandbox/user_uploads/notes.txt")
    );

    let second = upload(&app, &owner, &thread, &[("notes.txt", b"second")])
        .await
        .unwrap();
    assert_eq!(
        second[0].sandbox_path,
        "/sandbox/user_uploads/notes (1).txt"
    );
    assert_eq!(
        sandbox_bytes(&app, &agent, &thread, "/sandbox/user_uploads/notes.txt").await,
        b"first"
    );
    assert_eq!(
        sandbox_bytes(&app, &agent, &thread, "/sandbox/user_uploads/notes (1).txt").await,
        b"second"
    );
    // Listed oldest first, each announced by an `upload` event.
    let listed = list(&app, &agent, &thread).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|u| u.id.as_str()).collect();
    assert_eq!(ids, [first[0].id.as_str(), second[0].id.as_str()]);
    let kinds: Vec<String> = app
        .db
        .events_after(&thread, 0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["upload", "upload"]);
}

#[tokio::test]
async fn only_the_owner_uploads_and_a_refused_request_keeps_nothing() {
    let (app, _dir) = app().await;
    let (thread, agent) = thread_of(&app, "alice").await;
    assert!(matches!(
        receive(&app, &agent, &thread).await,
        Err(Error::Forbidden(_))
    ));
    assert!(matches!(
        receive(&app, &user("bob"), &thread).await,
        Err(Error::NotFound(_))
    ));
    // The second file declares more than the limit: refused before it is read, and the first
    // file of the request is not kept either.
    let mut receiver = receive(&app, &user("alice"), &thread).await.unwrap();
    receiver
        .spool(ValidPath::parse("a.txt").unwrap(), body(b"a"))
        .await
        .unwrap();
    let limit = receiver.limit();
    let declared = Incoming::new(
        futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"b"))]),
        Some(limit + 1),
    );
    let refused = receiver
        .spool(ValidPath::parse("b.txt").unwrap(), declared)
        .await;
    assert!(matches!(refused, Err(Error::TooLarge(_))), "{refused:?}");
    drop(receiver);
    assert!(list(&app, &agent, &thread).await.unwrap().is_empty());
    let listing = crate::files::sandbox::list(
        &app,
        &agent,
        &thread,
        Some(&SandboxPath::parse("/sandbox/user_uploads").unwrap()),
        false,
    )
    .await
    .unwrap();
    assert!(listing.entries.is_empty(), "{:?}", listing.entries);
}
