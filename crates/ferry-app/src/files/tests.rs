//! The agent's file system on both kinds of sandbox (a local folder, the blob store) and in
//! spaces: every operation, its refusals, and that nothing stored is lost by one.
//!
//! Why one file: the operations live one to a module, and their tests share one fixture: each test
//! builds a `World` (an app, a thread, its owner and its agent), most of them on both kinds of
//! sandbox in turn, so every operation is held to the same answers wherever the files live.

use ferry_core::agent_files::*;
use serde_json::json;

use super::*;
use crate::testing::{self, Where, user};

struct World {
    app: App,
    agent: Principal,
    owner: Principal,
    thread: String,
    _dir: tempfile::TempDir,
}

impl World {
    async fn new(sandboxes: Where) -> World {
        let (app, dir) = testing::app_with(sandboxes).await;
        let (thread, agent) = testing::thread_of(&app, "alice").await;
        World {
            app,
            agent,
            owner: user("alice"),
            thread,
            _dir: dir,
        }
    }

    fn agent(&self) -> Caller<'_> {
        Caller {
            app: &self.app,
            principal: &self.agent,
            thread: None,
            door: Door::Mcp,
        }
    }

    fn owner(&self) -> Caller<'_> {
        Caller {
            app: &self.app,
            principal: &self.owner,
            thread: Some(&self.thread),
            door: Door::Http,
        }
    }
}

fn input<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

async fn write_text(caller: Caller<'_>, path: &str, text: &str) -> Written {
    write(caller, &input(json!({"path": path, "content": text})))
        .await
        .unwrap()
}

async fn text_of(caller: Caller<'_>, path: &str) -> String {
    match read(caller, &input(json!({"path": path, "limit": 50000})))
        .await
        .unwrap()
    {
        ReadOutput::Text { content, .. } => content,
        other => panic!("not text: {other:?}"),
    }
}

const PLACES: [Where; 2] = [Where::Local, Where::Stored];

#[tokio::test]
async fn write_read_and_edit_a_file_as_the_tools_say() {
    for place in PLACES {
        let w = World::new(place).await;
        for path in ["/sandbox/outputs/r.md", "/spaces/notes/r.md", "drafts/r.md"] {
            let made = write_text(w.agent(), path, "# Report\nline two\r\nthree\n").await;
            assert!(
                made.created && made.size == 25,
                "{place:?} {path}: {made:?}"
            );
            let read_back = read(
                w.agent(),
                &input(json!({"path": path, "offset": 1, "limit": 1})),
            )
            .await
            .unwrap();
            let ReadOutput::Text {
                content,
                total_lines,
                next_offset,
                etag,
                ..
            } = read_back
            else {
                panic!("{place:?}: {read_back:?}")
            };
            assert_eq!(content, "     2\tline two\n");
            assert_eq!((total_lines, next_offset), (3, Some(2)));
            assert_eq!(etag, made.etag, "{place:?} {path}");
            let edited = edit(
                w.agent(),
                &input(json!({"path": path, "old_string": "two", "new_string": "2"})),
            )
            .await
            .unwrap();
            assert_eq!(edited.replacements, 1);
            assert_ne!(edited.etag, made.etag);
            assert!(text_of(w.agent(), path).await.contains("     2\tline 2\n"));
        }
        // The relative path is the workspace's.
        let listed = ls(
            w.agent(),
            &input(json!({"path": "/sandbox/workspace/drafts"})),
        )
        .await
        .unwrap();
        assert_eq!(listed.entries[0].path, "/sandbox/workspace/drafts/r.md");
    }
}

#[tokio::test]
async fn an_edit_that_matches_zero_or_many_times_or_a_stale_version_changes_nothing() {
    for place in PLACES {
        let w = World::new(place).await;
        let path = "/sandbox/outputs/e.txt";
        let first = write_text(w.agent(), path, "a b a b a\n").await;
        let edit_of = |old: &str, all: bool| {
            input::<EditFileInput>(
                json!({"path": path, "old_string": old, "new_string": "x", "replace_all": all}),
            )
        };
        let none = edit(w.agent(), &edit_of("zzz", false)).await.unwrap_err();
        assert!(
            matches!(&none, Error::InvalidRequest(m) if m.contains("not found")),
            "{none:?}"
        );
        let many = edit(w.agent(), &edit_of("a", false)).await.unwrap_err();
        assert!(
            matches!(&many, Error::InvalidRequest(m) if m.contains("3 times")),
            "{many:?}"
        );
        assert_eq!(text_of(w.agent(), path).await, "     1\ta b a b a\n");
        // Someone writes after the agent read: the edit made against the old version fails.
        let newer = write_text(w.agent(), path, "a b a b a b\n").await;
        let stale = input::<EditFileInput>(json!({
            "path": path, "old_string": "b", "new_string": "c",
            "replace_all": true, "ifMatch": first.etag,
        }));
        let refused = edit(w.agent(), &stale).await.unwrap_err();
        assert!(
            matches!(refused, Error::PreconditionFailed(_)),
            "{refused:?}"
        );
        let current = input::<EditFileInput>(json!({
            "path": path, "old_string": "b", "new_string": "c",
            "replace_all": true, "ifMatch": newer.etag,
        }));
        assert_eq!(edit(w.agent(), &current).await.unwrap().replacements, 3);
        assert_eq!(text_of(w.agent(), path).await, "     1\ta c a c a c\n");
        // Binary files are not edited.
        write(
            w.agent(),
            &input(
                json!({"path": "/sandbox/outputs/b.bin", "content": "AAEC", "encoding": "base64"}),
            ),
        )
        .await
        .unwrap();
        let binary = edit(
            w.agent(),
            &input(json!({"path": "/sandbox/outputs/b.bin", "old_string": "a", "new_string": "b"})),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&binary, Error::InvalidRequest(m) if m.contains("not a text file")),
            "{binary:?}"
        );
    }
}

#[tokio::test]
async fn a_binary_file_is_described_never_dumped() {
    let w = World::new(Where::Local).await;
    write(
        w.agent(),
        &input(
            json!({"path": "/sandbox/outputs/x.bin", "content": "AP8A/w==", "encoding": "base64"}),
        ),
    )
    .await
    .unwrap();
    let read_back = read(w.agent(), &input(json!({"path": "/sandbox/outputs/x.bin"})))
        .await
        .unwrap();
    assert!(
        matches!(&read_back, ReadOutput::Binary { size: 4, .. }),
        "{read_back:?}"
    );
    let bad = write(
        w.agent(),
        &input(json!({"path": "/sandbox/outputs/y.bin", "content": "not base64!", "encoding": "base64"})),
    )
    .await
    .unwrap_err();
    assert!(matches!(bad, Error::InvalidRequest(_)), "{bad:?}");
}

#[tokio::test]
async fn glob_and_grep_find_across_folders_and_skip_binaries() {
    for place in PLACES {
        let w = World::new(place).await;
        write_text(
            w.agent(),
            "/sandbox/outputs/a.md",
            "Revenue rose\nrevenue fell\n",
        )
        .await;
        write_text(w.agent(), "/sandbox/outputs/deep/b.md", "no match here\n").await;
        write_text(w.agent(), "/sandbox/outputs/c.csv", "x,REVENUE\n").await;
        write_text(w.agent(), "/spaces/notes/ideas/n.md", "revenue idea\n").await;
        write(
            w.agent(),
            &input(json!({"path": "/sandbox/outputs/z.bin", "content": "cmV2ZW51ZQA=", "encoding": "base64"})),
        )
        .await
        .unwrap();
        let globbed = glob(
            w.agent(),
            &input(json!({"pattern": "**/*.md", "path": "/sandbox/outputs"})),
        )
        .await
        .unwrap();
        assert_eq!(
            globbed.paths,
            ["/sandbox/outputs/a.md", "/sandbox/outputs/deep/b.md"],
            "{place:?}"
        );
        let top = glob(w.agent(), &input(json!({"pattern": "outputs/*.{csv,md}"})))
            .await
            .unwrap();
        assert_eq!(
            top.paths,
            ["/sandbox/outputs/a.md", "/sandbox/outputs/c.csv"]
        );
        // A pattern written from the root is read relative to it; another leading '/' is refused.
        let rooted = glob(
            w.agent(),
            &input(json!({"pattern": "/sandbox/outputs/*.csv"})),
        )
        .await
        .unwrap();
        assert_eq!(rooted.paths, ["/sandbox/outputs/c.csv"]);
        let elsewhere = glob(w.agent(), &input(json!({"pattern": "/etc/*"})))
            .await
            .unwrap_err();
        assert!(
            matches!(elsewhere, Error::InvalidRequest(_)),
            "{elsewhere:?}"
        );
        let found = grep(
            w.agent(),
            &input(json!({"pattern": "revenue", "path": "/sandbox/outputs", "ignoreCase": true})),
        )
        .await
        .unwrap();
        let lines: Vec<_> = found
            .matches
            .iter()
            .map(|m| (m.path.as_str(), m.line))
            .collect();
        assert_eq!(
            lines,
            [
                ("/sandbox/outputs/a.md", 1),
                ("/sandbox/outputs/a.md", 2),
                ("/sandbox/outputs/c.csv", 1)
            ],
            "{place:?}"
        );
        assert_eq!(found.skipped.binary, 1);
        assert!(!found.truncated);
        // Literal by default: a regex's metacharacters are text.
        let literal = grep(w.agent(), &input(json!({"pattern": "rose|fell"})))
            .await
            .unwrap();
        assert!(literal.matches.is_empty());
        let regex = grep(
            w.agent(),
            &input(json!({"pattern": "(rose|fell)$", "regex": true, "maxResults": 1})),
        )
        .await
        .unwrap();
        assert_eq!(regex.matches.len(), 1);
        assert!(regex.truncated);
        // A pattern that would make a backtracking engine run for ever is just a pattern.
        let hostile = grep(
            w.agent(),
            &input(json!({"pattern": "(a+)+$", "regex": true})),
        )
        .await
        .unwrap();
        assert!(hostile.matches.is_empty());
        let spaces = grep(
            w.agent(),
            &input(json!({"pattern": "idea", "path": "/spaces"})),
        )
        .await
        .unwrap();
        assert_eq!(spaces.matches[0].path, "/spaces/notes/ideas/n.md");
        let invalid = grep(w.agent(), &input(json!({"pattern": "(", "regex": true})))
            .await
            .unwrap_err();
        assert!(matches!(invalid, Error::InvalidRequest(_)));
    }
}

#[tokio::test]
async fn moves_keep_the_bytes_and_the_etag_and_refuse_what_would_lose_data() {
    for place in PLACES {
        let w = World::new(place).await;
        for root in ["/sandbox/workspace", "/spaces/notes"] {
            let made = write_text(w.agent(), &format!("{root}/d/a.md"), "A\n").await;
            write_text(w.agent(), &format!("{root}/d/sub/b.md"), "B\n").await;
            write_text(w.agent(), &format!("{root}/taken.md"), "T\n").await;
            let mv = |source: String, destination: String, overwrite: bool| {
                input::<MoveFileInput>(
                    json!({"source": source, "destination": destination, "overwrite": overwrite}),
                )
            };
            let moved = move_file(
                w.agent(),
                &mv(format!("{root}/d/a.md"), format!("{root}/e/a2.md"), false),
            )
            .await
            .unwrap();
            assert_eq!(
                (moved.moved, moved.etag.as_deref()),
                (1, Some(made.etag.as_str()))
            );
            assert_eq!(
                text_of(w.agent(), &format!("{root}/e/a2.md")).await,
                "     1\tA\n"
            );
            let taken = move_file(
                w.agent(),
                &mv(format!("{root}/e/a2.md"), format!("{root}/taken.md"), false),
            )
            .await
            .unwrap_err();
            assert!(
                matches!(taken, Error::AlreadyExists(_)),
                "{place:?} {taken:?}"
            );
            assert_eq!(
                text_of(w.agent(), &format!("{root}/taken.md")).await,
                "     1\tT\n"
            );
            move_file(
                w.agent(),
                &mv(format!("{root}/e/a2.md"), format!("{root}/taken.md"), true),
            )
            .await
            .unwrap();
            assert_eq!(
                text_of(w.agent(), &format!("{root}/taken.md")).await,
                "     1\tA\n"
            );
            let into_itself = move_file(
                w.agent(),
                &mv(format!("{root}/d"), format!("{root}/d/sub/x"), false),
            )
            .await
            .unwrap_err();
            assert!(
                matches!(into_itself, Error::InvalidRequest(_)),
                "{into_itself:?}"
            );
            let folder = move_file(
                w.agent(),
                &mv(format!("{root}/d"), format!("{root}/f"), false),
            )
            .await
            .unwrap();
            assert_eq!((folder.moved, folder.etag), (1, None), "{place:?} {root}");
            assert_eq!(
                text_of(w.agent(), &format!("{root}/f/sub/b.md")).await,
                "     1\tB\n"
            );
            let gone = read(
                w.agent(),
                &input(json!({"path": format!("{root}/d/sub/b.md")})),
            )
            .await
            .unwrap_err();
            assert!(matches!(gone, Error::NotFound(_)), "{gone:?}");
        }
        let across = move_file(
            w.agent(),
            &input(json!({"source": "/sandbox/workspace/taken.md", "destination": "/spaces/notes/x.md"})),
        )
        .await
        .unwrap_err();
        assert!(matches!(across, Error::InvalidRequest(_)), "{across:?}");
        let skills = move_file(
            w.agent(),
            &input(json!({"source": "/sandbox/workspace/taken.md", "destination": "/sandbox/skills/x.md"})),
        )
        .await
        .unwrap_err();
        assert!(matches!(skills, Error::Forbidden(_)), "{skills:?}");
    }
}

#[tokio::test]
async fn a_folder_is_deleted_only_when_asked_recursively() {
    for place in PLACES {
        let w = World::new(place).await;
        for root in ["/sandbox/outputs", "/spaces/notes"] {
            let one = write_text(w.agent(), &format!("{root}/t/1.md"), "1").await;
            write_text(w.agent(), &format!("{root}/t/u/2.md"), "2").await;
            let folder = format!("{root}/t");
            let refused = delete(w.agent(), &input(json!({"path": folder})))
                .await
                .unwrap_err();
            assert!(
                matches!(&refused, Error::InvalidRequest(m) if m.contains("recursive")),
                "{refused:?}"
            );
            let stale = delete(
                w.agent(),
                &input(json!({"path": format!("{root}/t/1.md"), "ifMatch": "\"0-0\""})),
            )
            .await
            .unwrap_err();
            assert!(
                matches!(stale, Error::PreconditionFailed(_)),
                "{place:?} {stale:?}"
            );
            let exact = delete(
                w.agent(),
                &input(json!({"path": format!("{root}/t/1.md"), "ifMatch": one.etag})),
            )
            .await
            .unwrap();
            assert_eq!(exact.deleted, 1);
            let all = delete(
                w.agent(),
                &input(json!({"path": folder, "recursive": true})),
            )
            .await
            .unwrap();
            assert_eq!(all.deleted, 1, "{place:?} {root}");
            let missing = delete(w.agent(), &input(json!({"path": folder})))
                .await
                .unwrap_err();
            assert!(matches!(missing, Error::NotFound(_)), "{missing:?}");
        }
        // The standard folders come back after a recursive delete of one of them.
        delete(
            w.agent(),
            &input(json!({"path": "/sandbox/outputs", "recursive": true})),
        )
        .await
        .unwrap();
        let top = ls(w.agent(), &input(json!({"path": "/sandbox"})))
            .await
            .unwrap();
        assert!(
            top.entries.iter().any(|e| e.path == "/sandbox/outputs"),
            "{top:?}"
        );
        let root = delete(
            w.agent(),
            &input(json!({"path": "/sandbox", "recursive": true})),
        )
        .await
        .unwrap_err();
        assert!(matches!(root, Error::Forbidden(_)), "{root:?}");
    }
}

#[tokio::test]
async fn the_owner_reads_the_sandbox_but_only_the_agent_changes_it() {
    let w = World::new(Where::Local).await;
    write_text(w.agent(), "/sandbox/outputs/r.md", "r").await;
    assert_eq!(
        text_of(w.owner(), "/sandbox/outputs/r.md").await,
        "     1\tr\n"
    );
    let written = write(
        w.owner(),
        &input(json!({"path": "/sandbox/outputs/r.md", "content": "x"})),
    )
    .await
    .unwrap_err();
    assert!(matches!(written, Error::Forbidden(_)), "{written:?}");
    let moved = move_file(
        w.owner(),
        &input(json!({"source": "/sandbox/outputs/r.md", "destination": "/sandbox/outputs/s.md"})),
    )
    .await
    .unwrap_err();
    assert!(matches!(moved, Error::Forbidden(_)), "{moved:?}");
    // Another user does not even see the thread.
    let bob = user("bob");
    let stranger = Caller {
        app: &w.app,
        principal: &bob,
        thread: Some(&w.thread),
        door: Door::Http,
    };
    let hidden = read(stranger, &input(json!({"path": "/sandbox/outputs/r.md"})))
        .await
        .unwrap_err();
    assert!(matches!(hidden, Error::NotFound(_)), "{hidden:?}");
    // A user's call names no thread of its own.
    let alice = user("alice");
    let threadless = Caller {
        app: &w.app,
        principal: &alice,
        thread: None,
        door: Door::Http,
    };
    let refused = ls(threadless, &input(json!({"path": "/sandbox"})))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::InvalidRequest(_)), "{refused:?}");
    assert!(
        ls(threadless, &input(json!({"path": "/spaces"})))
            .await
            .is_ok()
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_out_of_the_sandbox_is_refused_by_every_operation() {
    let w = World::new(Where::Local).await;
    let host = w.app.sandboxes.host_path(&w.thread).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "secret\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), host.join("workspace/out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), host.join("workspace/s")).unwrap();
    let read_link = read(w.agent(), &input(json!({"path": "out/secret"})))
        .await
        .unwrap_err();
    assert!(matches!(read_link, Error::InvalidPath(_)), "{read_link:?}");
    let file_link = read(w.agent(), &input(json!({"path": "s"})))
        .await
        .unwrap_err();
    assert!(matches!(file_link, Error::InvalidPath(_)), "{file_link:?}");
    let found = grep(w.agent(), &input(json!({"pattern": "secret"})))
        .await
        .unwrap();
    assert!(found.matches.is_empty(), "{found:?}");
    let edited = edit(
        w.agent(),
        &input(json!({"path": "out/secret", "old_string": "secret", "new_string": "x"})),
    )
    .await
    .unwrap_err();
    assert!(matches!(edited, Error::InvalidPath(_)), "{edited:?}");
    let moved = move_file(
        w.agent(),
        &input(json!({"source": "out/secret", "destination": "stolen"})),
    )
    .await
    .unwrap_err();
    assert!(matches!(moved, Error::InvalidPath(_)), "{moved:?}");
    // Removing the link removes the link, never what it points at.
    delete(w.agent(), &input(json!({"path": "out", "recursive": true})))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).unwrap(),
        "secret\n"
    );
    // A FIFO does not make a read wait for a writer.
    let fifo = host.join("workspace/fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let refused = read(w.agent(), &input(json!({"path": "fifo"})))
            .await
            .unwrap_err();
        assert!(matches!(refused, Error::InvalidPath(_)), "{refused:?}");
    }
}

/// Edits racing on one file: each one either lands or is refused as stale, and the file ends
/// holding exactly the edits that landed (none is lost, none is half-made).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_file_never_lose_one() {
    for place in PLACES {
        let w = std::sync::Arc::new(World::new(place).await);
        let tokens: Vec<String> = (0..16).map(|i| format!("slot-{i:02}")).collect();
        write_text(
            w.agent(),
            "/sandbox/outputs/race.md",
            &(tokens.join("\n") + "\n"),
        )
        .await;
        let tasks: Vec<_> = tokens
            .iter()
            .map(|token| {
                let (w, token) = (w.clone(), token.clone());
                tokio::spawn(async move {
                    let body = input::<EditFileInput>(json!({
                        "path": "/sandbox/outputs/race.md",
                        "old_string": token,
                        "new_string": token.to_uppercase(),
                    }));
                    edit(w.agent(), &body).await.map(|_| token)
                })
            })
            .collect();
        let mut landed = Vec::new();
        for task in tasks {
            match task.await.unwrap() {
                Ok(token) => landed.push(token),
                Err(Error::PreconditionFailed(_)) => {}
                Err(other) => panic!("{place:?}: {other:?}"),
            }
        }
        assert!(!landed.is_empty(), "{place:?}: at least one edit lands");
        let text = text_of(w.agent(), "/sandbox/outputs/race.md").await;
        for token in &tokens {
            let upper = text.contains(&token.to_uppercase());
            assert_eq!(upper, landed.contains(token), "{place:?} {token}: {text}");
        }
    }
}
