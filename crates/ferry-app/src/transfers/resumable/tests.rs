//! The tests of `resumable`.

use super::*;
use crate::testing::{app, app_on_object_store, thread_of, user};
use sha2::Digest as _;

fn chunk(bytes: &'static [u8]) -> impl Stream<Item = std::io::Result<Bytes>> + Send {
    futures::stream::iter([Ok(Bytes::from_static(bytes))])
}

fn metadata(pairs: &[(&str, &str)]) -> Metadata {
    Metadata {
        pairs: pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect(),
        as_sent: format!("{pairs:?}"),
    }
}

/// A test app whose blobs are in an object store, or in a local folder.
async fn app_on(object_store: bool) -> (App, tempfile::TempDir) {
    if object_store {
        app_on_object_store().await
    } else {
        app().await
    }
}

/// The metadata of a text file at `path` in the space `notes`.
fn space_file(path: &str) -> Metadata {
    metadata(&[
        ("spaceName", "notes"),
        ("path", path),
        ("contentType", "text/plain"),
    ])
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    sha2::Sha256::digest(bytes).to_vec()
}

fn checksum_of(bytes: &[u8]) -> Option<Checksum> {
    Some(Checksum {
        algorithm: ChecksumAlgorithm::Sha256,
        digest: sha256(bytes),
    })
}

/// The bytes stored at `path` in alice's space `notes`.
async fn space_bytes(app: &App, path: &str) -> Vec<u8> {
    let space = SpaceName::parse("notes").unwrap();
    let path = ValidPath::parse(path).unwrap();
    let file = crate::files::spaces::file(app, &user("alice"), &space, &path)
        .await
        .unwrap();
    blob_bytes(app, &file.blob_key).await
}

async fn blob_bytes(app: &App, key: &str) -> Vec<u8> {
    let read = app.blobs.read(key, None).await.unwrap();
    let chunks: Vec<_> = read.stream.collect().await;
    chunks
        .into_iter()
        .flat_map(|c| c.unwrap().to_vec())
        .collect()
}

/// A space file in parts, with every refusal a `PATCH` can meet on the way, made once.
async fn a_space_file_in_parts_is_the_plain_write(app: &App) {
    let alice = user("alice");
    let metadata = space_file("drafts/tea.txt");
    let id = create(app, &alice, 11, metadata).await.unwrap().id;

    let wrong = append(app, &alice, &id, 0, checksum_of(b"other"), chunk(b"hello")).await;
    assert!(
        matches!(wrong, Err(Error::ChecksumMismatch(_))),
        "{wrong:?}"
    );
    assert_eq!(
        status(app, &alice, &id).await.unwrap().offset,
        0,
        "nothing kept"
    );
    let first = append(app, &alice, &id, 0, checksum_of(b"hello"), chunk(b"hello"));
    assert_eq!(first.await.unwrap().offset, 5);
    let stale = append(app, &alice, &id, 0, None, chunk(b"x")).await;
    assert!(matches!(stale, Err(Error::OffsetMismatch(_))), "{stale:?}");
    let other = append(app, &user("mallory"), &id, 5, None, chunk(b"x")).await;
    assert!(matches!(other, Err(Error::NotFound(_))), "{other:?}");
    let long = append(app, &alice, &id, 5, None, chunk(b" world, and more")).await;
    assert!(matches!(long, Err(Error::TooLarge(_))), "{long:?}");
    let last = append(app, &alice, &id, 5, None, chunk(b" world"))
        .await
        .unwrap();
    assert!(last.needs_finishing());

    let Some(Finished::SpaceFile { written }) = finish(app, &alice, &id).await.unwrap() else {
        panic!("a space file");
    };
    assert!(written.created);
    assert_eq!(written.size, 11);
    let sha = hex::encode(sha256(b"hello world"));
    assert_eq!(written.etag, format!("\"{sha}\""));
    assert_eq!(space_bytes(app, &written.path).await, b"hello world");
    assert!(
        finish(app, &alice, &id).await.unwrap().is_none(),
        "finished once"
    );
    // How it ended is kept with the upload, and its parts are gone.
    assert!(app.db.resumable_parts(&id).await.unwrap().is_empty());
    let Some(Finished::SpaceFile { written: kept }) = answer(app, &alice, &id).await.unwrap()
    else {
        panic!("the kept answer");
    };
    assert_eq!((kept.path, kept.etag), (written.path, written.etag));
}

#[tokio::test]
async fn a_space_file_in_parts_on_a_local_store() {
    let (app, dir) = app().await;
    a_space_file_in_parts_is_the_plain_write(&app).await;
    let gathering = dir.path().join("blobs").join(".resumable");
    assert_eq!(
        std::fs::read_dir(gathering).unwrap().count(),
        0,
        "removed once kept"
    );
}

#[tokio::test]
async fn a_space_file_in_parts_on_an_object_store() {
    let (app, _dir) = app_on_object_store().await;
    a_space_file_in_parts_is_the_plain_write(&app).await;
}

#[tokio::test]
async fn a_thread_upload_lands_in_the_sandbox_like_a_plain_one() {
    for object_store in [false, true] {
        let (app, _dir) = app_on(object_store).await;
        let (thread, _) = thread_of(&app, "alice").await;
        let alice = user("alice");
        let metadata = metadata(&[("threadId", &thread), ("filename", "notes.txt")]);
        let id = create(&app, &alice, 4, metadata).await.unwrap().id;
        append(&app, &alice, &id, 0, None, chunk(b"te"))
            .await
            .unwrap();
        append(&app, &alice, &id, 2, None, chunk(b"a!"))
            .await
            .unwrap();
        let Some(Finished::ThreadUpload { uploads: views }) =
            finish(&app, &alice, &id).await.unwrap()
        else {
            panic!("a thread upload");
        };
        assert_eq!(views[0].size, 4);
        assert_eq!(views[0].sha256, hex::encode(sha256(b"tea!")));
        assert_eq!(views[0].sandbox_path, "/sandbox/user_uploads/notes.txt");
    }
}

#[tokio::test]
async fn a_request_that_waited_for_another_never_writes_at_a_stale_offset() {
    let (app, _dir) = app().await;
    let alice = user("alice");
    let metadata = space_file("race.txt");
    let id = create(&app, &alice, 8, metadata).await.unwrap().id;
    // Another request holds the upload's file while this one arrives at offset 0.
    let Gather::InPlace(mut holder) = app.blobs.gathering(&id, LOCK_WAIT).await.unwrap() else {
        panic!("a local store gathers in place");
    };
    let late = {
        let (app, alice, id) = (app.clone(), alice.clone(), id.clone());
        tokio::spawn(async move { append(&app, &alice, &id, 0, None, chunk(b"XY")).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!late.is_finished(), "it waits for the lock");
    holder.write_at(0, chunk(b"abcd"), 8).await.unwrap();
    let recorded = app.db.append_resumable_part(&id, 0, 4, None).await.unwrap();
    assert_eq!(recorded, Appended::At(4));
    drop(holder);
    let refused = late.await.unwrap();
    assert!(
        matches!(refused, Err(Error::OffsetMismatch(_))),
        "{refused:?}"
    );
    append(&app, &alice, &id, 4, None, chunk(b"efgh"))
        .await
        .unwrap();
    let Some(Finished::SpaceFile { written }) = finish(&app, &alice, &id).await.unwrap() else {
        panic!("a space file");
    };
    assert_eq!(space_bytes(&app, &written.path).await, b"abcdefgh");
}

#[tokio::test]
async fn termination_removes_what_was_kept() {
    for object_store in [false, true] {
        let (app, dir) = app_on(object_store).await;
        let alice = user("alice");
        let metadata = space_file("gone.txt");
        let id = create(&app, &alice, 10, metadata).await.unwrap().id;
        append(&app, &alice, &id, 0, None, chunk(b"half"))
            .await
            .unwrap();
        let parts = app.db.resumable_parts(&id).await.unwrap();
        assert_eq!(parts.len(), usize::from(object_store));
        terminate(&app, &alice, &id).await.unwrap();
        assert!(matches!(
            status(&app, &alice, &id).await,
            Err(Error::NotFound(_))
        ));
        for part in parts {
            assert!(app.blobs.read(&part.blob_key, None).await.is_err());
        }
        assert!(!dir.path().join("blobs/.resumable").join(&id).exists());
    }
}

#[tokio::test]
async fn a_refusal_at_the_end_is_kept_as_the_answer() {
    let (app, _dir) = app().await;
    let alice = user("alice");
    let mut metadata = space_file("taken.txt");
    metadata.pairs.insert("ifNoneMatch".into(), "*".into());
    let id = create(&app, &alice, 3, metadata).await.unwrap().id;
    // Another write takes the path while the upload is under way.
    crate::files::spaces::write(
        &app,
        &alice,
        &SpaceName::parse("notes").unwrap(),
        &ValidPath::parse("taken.txt").unwrap(),
        FileMeta::typed("text/plain"),
        &WriteCondition::None,
        crate::testing::body(b"first"),
    )
    .await
    .unwrap();
    append(&app, &alice, &id, 0, None, chunk(b"new"))
        .await
        .unwrap();

    let Some(Finished::Refused { code, message }) = finish(&app, &alice, &id).await.unwrap() else {
        panic!("refused");
    };
    assert_eq!(code, ErrorCode::AlreadyExists, "{message}");
    let Some(Finished::Refused { code: kept, .. }) = answer(&app, &alice, &id).await.unwrap()
    else {
        panic!("the refusal, kept");
    };
    assert_eq!(kept, ErrorCode::AlreadyExists);
    assert_eq!(space_bytes(&app, "taken.txt").await, b"first");
}
