//! A local sandbox on a file system whose timestamps are to the second: ETags follow the bytes,
//! so of racing conditional writes exactly one wins, read-modify-write loops lose no
//! acknowledged edit, and a change made outside ferry within the same second gets a new ETag.
//! Each case writes contents of one size, so a file's times and size alone could not tell its
//! versions apart. The same cases run on the default file system of the temporary folder.

use std::path::Path;

use bytes::Bytes;
use ferry_core::ValidPath;
use ferry_core::write::WriteCondition;
use ferry_store::Error;
use ferry_store::sandbox::{Sandbox, SandboxLimits, Sandboxes};
use ferry_test_support::coarse_fs::coarse_timestamps_folder;
use futures::TryStreamExt;

fn path(text: &str) -> ValidPath {
    ValidPath::parse(text).unwrap()
}

fn body(text: String) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    futures::stream::iter([Ok(Bytes::from(text))])
}

async fn sandbox_in(root: &Path) -> (Sandboxes, Sandbox) {
    let sandboxes = Sandboxes::local(root.join("sandboxes"), SandboxLimits::default()).unwrap();
    sandboxes.create("thread-1", None).await.unwrap();
    let sandbox = sandboxes.open("thread-1").await.unwrap();
    (sandboxes, sandbox)
}

async fn read(sandbox: &Sandbox, target: &ValidPath) -> (String, String) {
    let opened = sandbox.open(target).await.unwrap();
    let etag = opened.etag.clone();
    let bytes: Vec<Bytes> = opened
        .stream(None)
        .await
        .unwrap()
        .stream
        .try_collect()
        .await
        .unwrap();
    (String::from_utf8(bytes.concat()).unwrap(), etag)
}

async fn racing_if_match_writes_have_one_winner(sandbox: &Sandbox) {
    let target = path("outputs/race.txt");
    let (_, first) = sandbox
        .write(
            &target,
            body("writer --".into()),
            1024,
            &WriteCondition::None,
            "text/plain",
        )
        .await
        .unwrap();
    let writers: Vec<_> = (0..50)
        .map(|i| {
            let (sandbox, target, etag) = (sandbox.clone(), target.clone(), first.etag.clone());
            tokio::spawn(async move {
                sandbox
                    .write(
                        &target,
                        body(format!("writer {i:02}")),
                        1024,
                        &WriteCondition::IfMatch(vec![etag]),
                        "text/plain",
                    )
                    .await
            })
        })
        .collect();
    let (mut won, mut refused) = (0, 0);
    for writer in writers {
        match writer.await.unwrap() {
            Ok(_) => won += 1,
            Err(Error::PreconditionFailed) => refused += 1,
            Err(other) => panic!("unexpected: {other}"),
        }
    }
    assert_eq!((won, refused), (1, 49));
}

async fn read_modify_write_loops_lose_no_edit(sandbox: &Sandbox) {
    // Each of 50 editors marks its own place in a line of dots; the size never changes.
    let target = path("workspace/marks.txt");
    sandbox
        .write(
            &target,
            body(".".repeat(50)),
            1024,
            &WriteCondition::None,
            "text/plain",
        )
        .await
        .unwrap();
    let editors: Vec<_> = (0..50)
        .map(|i| {
            let (sandbox, target) = (sandbox.clone(), target.clone());
            tokio::spawn(async move {
                loop {
                    let (text, etag) = read(&sandbox, &target).await;
                    let mut marks = text.into_bytes();
                    marks[i] = b'x';
                    let edited = String::from_utf8(marks).unwrap();
                    match sandbox
                        .write(
                            &target,
                            body(edited),
                            1024,
                            &WriteCondition::IfMatch(vec![etag]),
                            "text/plain",
                        )
                        .await
                    {
                        Ok(_) => return,
                        Err(Error::PreconditionFailed) => continue,
                        Err(other) => panic!("unexpected: {other}"),
                    }
                }
            })
        })
        .collect();
    for editor in editors {
        editor.await.unwrap();
    }
    assert_eq!(read(sandbox, &target).await.0, "x".repeat(50));
}

async fn a_change_outside_within_the_second_gets_a_new_etag(sandbox: &Sandbox, folder: &Path) {
    let target = path("outputs/outside.txt");
    let (_, written) = sandbox
        .write(
            &target,
            body("aaaa".into()),
            1024,
            &WriteCondition::None,
            "text/plain",
        )
        .await
        .unwrap();
    // An agent working in the folder rewrites the file in place, as `echo > file` does.
    std::fs::write(folder.join("outputs/outside.txt"), "bbbb").unwrap();
    let (text, etag) = read(sandbox, &target).await;
    assert_eq!(text, "bbbb");
    assert_ne!(etag, written.etag);
    let listed = sandbox.list(None, true).await.unwrap().entries;
    let entry = listed
        .iter()
        .find(|e| e.path == "outputs/outside.txt")
        .unwrap();
    assert_eq!(entry.etag, etag, "a listing tells the ETag a read answers");
    // The ETag is the SHA-256 of the bytes, as in the stored sandbox and the spaces.
    assert_eq!(
        etag,
        "81cc5b17018674b401b42f35ba07bb79e211239c23bffe658da1577e3e646877"
    );
    let stale = sandbox
        .write(
            &target,
            body("cccc".into()),
            1024,
            &WriteCondition::IfMatch(vec![written.etag]),
            "text/plain",
        )
        .await;
    assert!(matches!(stale, Err(Error::PreconditionFailed)), "{stale:?}");
}

async fn every_case(root: &Path) {
    let (sandboxes, sandbox) = sandbox_in(root).await;
    racing_if_match_writes_have_one_winner(&sandbox).await;
    read_modify_write_loops_lose_no_edit(&sandbox).await;
    let folder = sandboxes.host_path("thread-1").unwrap();
    a_change_outside_within_the_second_gets_a_new_etag(&sandbox, &folder).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_a_file_system_with_one_second_timestamps() {
    let Some(folder) = coarse_timestamps_folder() else {
        return;
    };
    every_case(folder.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_the_default_file_system() {
    let dir = tempfile::tempdir().unwrap();
    every_case(dir.path()).await;
}
