//! The metadata store's suite, run unchanged on SQLite and on Postgres.
//!
//! Why one file: the tests, but for the migrations' check at the end, are one list given to
//! `on_every_engine!`, which runs each on SQLite and on Postgres, with the small builders above
//! shared by all: that list is the store's contract, and keeping it whole keeps every rule
//! checked on both engines alike.

use ferry_core::write::{FileMeta, WriteCondition};
use ferry_core::{SpaceName, ValidPath};
use ferry_store::Db;
use ferry_store::Error;
use ferry_store::StoredBlob;
use ferry_store::events::Rendered;
use ferry_store::published::NewRevision;
use ferry_store::spaces::{ListQuery, SpaceEntry};
use ferry_store::uploads::{Upload, new_upload_id};
use std::sync::Arc;

/// Runs a test body once per engine: SQLite in a temporary file, and Postgres in a fresh
/// schema when `FERRY_TEST_DATABASE_URL` is set.
macro_rules! on_every_engine {
    ($($name:ident => $body:expr;)*) => {
        mod sqlite {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
                    let db = Db::open(&url).await.unwrap();
                    ($body)(db).await;
                }
            )*
        }
        mod postgres {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(schema) = ferry_test_support::peers::postgres().await else { return };
                    let db = Db::open(&schema.url).await.unwrap();
                    assert_eq!(db.engine(), ferry_store::Engine::Postgres);
                    ($body)(db.clone()).await;
                    db.close().await;
                    schema.drop_now().await;
                }
            )*
        }
    };
}

fn blob(n: u32) -> StoredBlob {
    StoredBlob {
        key: format!("key-{n}"),
        size: u64::from(n),
        sha256: format!("{n:064x}"),
    }
}

/// A `message` event with this JSON.
fn message(json: String) -> Rendered {
    Rendered {
        kind: "message",
        json,
    }
}

/// A `file_published` event with this JSON.
fn published(json: String) -> Rendered {
    Rendered {
        kind: "file_published",
        json,
    }
}

fn path(p: &str) -> ValidPath {
    ValidPath::parse(p).unwrap()
}

async fn put(db: &Db, p: &str, n: u32, condition: WriteCondition) -> Result<bool, Error> {
    let space = SpaceName::parse("s").unwrap();
    db.space_put(
        "u",
        &space,
        &path(p),
        &blob(n),
        FileMeta::typed("text/plain"),
        &condition,
    )
    .await
    .map(|o| o.created)
}

/// Every entry the listing (which always reads the database) has under `dir`, or in the whole
/// space when `None`.
async fn entries(db: &Db, dir: Option<&str>, recursive: bool) -> Vec<SpaceEntry> {
    let space = SpaceName::parse("s").unwrap();
    let dir = dir.map(path);
    let query = ListQuery {
        dir: dir.as_ref(),
        recursive,
        limit: 1000,
        after: None,
    };
    db.space_list("u", &space, &query).await.unwrap().entries
}

async fn list(db: &Db, dir: Option<&str>, recursive: bool) -> Vec<(String, bool)> {
    entries(db, dir, recursive)
        .await
        .into_iter()
        .map(|e| match e {
            SpaceEntry::Dir { path } => (path, true),
            SpaceEntry::File(f) => (f.path, false),
        })
        .collect()
}

/// A file's record as the listing has it.
async fn listed_file(db: &Db, p: &str) -> Option<ferry_store::spaces::SpaceFile> {
    entries(db, None, true)
        .await
        .into_iter()
        .find_map(|e| match e {
            SpaceEntry::File(f) if f.path == p => Some(f),
            _ => None,
        })
}

on_every_engine! {
    // A move re-points a file in one step (its bytes and SHA-256 go with it), refuses a taken
    // destination unless asked, moves a folder whole; a tree removal empties a folder; and
    // each change is the space's next event, numbered without gaps, with the door it came
    // through.
    moves_removals_and_the_feed => |db: Db| async move {
        use ferry_core::door::Door;
        let space = SpaceName::parse("s").unwrap();
        put(&db, "d/a.md", 1, WriteCondition::None).await.unwrap();
        put(&db, "d/sub/b.md", 2, WriteCondition::None).await.unwrap();
        put(&db, "taken.md", 3, WriteCondition::None).await.unwrap();
        let moved = db.space_move("u", &space, &path("d/a.md"), &path("e/a.md"), false, Door::Mcp).await.unwrap();
        assert_eq!((moved[0].path.as_str(), moved[0].sha256.as_str()), ("e/a.md", blob(1).sha256.as_str()));
        assert!(db.space_file("u", &space, &path("d/a.md")).await.unwrap().is_none());
        let taken = db.space_move("u", &space, &path("e/a.md"), &path("taken.md"), false, Door::Mcp).await;
        assert!(matches!(taken, Err(Error::AlreadyExists)), "{taken:?}");
        db.space_move("u", &space, &path("e/a.md"), &path("taken.md"), true, Door::S3).await.unwrap();
        assert_eq!(db.space_file("u", &space, &path("taken.md")).await.unwrap().unwrap().blob_key, "key-1");
        let folder = db.space_move("u", &space, &path("d"), &path("f"), false, Door::Http).await.unwrap();
        assert_eq!(folder.len(), 1);
        assert_eq!(list(&db, None, true).await, [("f/sub/b.md".to_owned(), false), ("taken.md".to_owned(), false)]);
        let removed = db.space_remove_tree("u", &space, Some(&path("f")), Door::Http).await.unwrap();
        assert_eq!(removed.len(), 1);
        assert_eq!(list(&db, None, false).await, [("taken.md".to_owned(), false)]);
        let events = db.space_events_after("u", &space, 0, 100).await.unwrap();
        let seen: Vec<(i64, String)> = events
            .iter()
            .map(|e| {
                let json: serde_json::Value = serde_json::from_str(&e.json).unwrap();
                (e.id, format!("{} {} {}", json["type"].as_str().unwrap(), json["path"].as_str().unwrap(), json["door"].as_str().unwrap()))
            })
            .collect();
        let expected = [
            "file_written d/a.md http",
            "file_written d/sub/b.md http",
            "file_written taken.md http",
            "file_moved d/a.md mcp",
            "file_moved e/a.md s3",
            "file_moved d/sub/b.md http",
            "file_deleted f/sub/b.md http",
        ];
        assert_eq!(seen, expected.iter().enumerate().map(|(i, e)| (i as i64 + 1, e.to_string())).collect::<Vec<_>>());
        assert_eq!(db.space_events_after("u", &space, 5, 100).await.unwrap().len(), 2);
        // A refused write records nothing.
        let refused = put(&db, "taken.md", 9, WriteCondition::CreateOnly).await;
        assert!(refused.is_err());
        assert_eq!(db.space_events_after("u", &space, 0, 100).await.unwrap().len(), 7);
        // A space removed and made again numbers on after its earlier events.
        db.space_delete("u", &space, &path("taken.md"), None, Door::Http).await.unwrap();
        db.space_remove("u", &space).await.unwrap();
        put(&db, "again.md", 4, WriteCondition::None).await.unwrap();
        let ids: Vec<i64> = db.space_events_after("u", &space, 0, 100).await.unwrap().iter().map(|e| e.id).collect();
        assert_eq!(ids, (1..=9).collect::<Vec<_>>());
    };
    // A write that has answered is read back by the next read, with its new ETag, and a
    // removed file is gone at once (SQLite's point reads run off the pool, on connections of
    // their own).
    a_write_is_read_back_at_once => |db: Db| async move {
        let space = SpaceName::parse("s").unwrap();
        for n in 1..=20u32 {
            put(&db, "hot.md", n, WriteCondition::None).await.unwrap();
            let read = db.space_file("u", &space, &path("hot.md")).await.unwrap().unwrap();
            assert_eq!((read.blob_key, read.size), (format!("key-{n}"), u64::from(n)));
        }
        db.space_delete("u", &space, &path("hot.md"), None, Default::default()).await.unwrap();
        assert!(db.space_file("u", &space, &path("hot.md")).await.unwrap().is_none());
        assert!(db.space_file("someone-else", &space, &path("a.md")).await.unwrap().is_none());
    };
    // Reads running all the while a file is rewritten never put an older record back: once a
    // write has answered, the next read has it (SQLite keeps records it read in memory).
    reads_racing_writes_never_keep_a_replaced_record => |db: Db| async move {
        let space = SpaceName::parse("s").unwrap();
        put(&db, "raced.md", 0, WriteCondition::None).await.unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (db, space, stop) = (db.clone(), space.clone(), stop.clone());
                tokio::spawn(async move {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        db.space_file("u", &space, &path("raced.md")).await.unwrap();
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for n in 1..=1000u32 {
            put(&db, "raced.md", n, WriteCondition::None).await.unwrap();
            let read = db.space_file("u", &space, &path("raced.md")).await.unwrap().unwrap();
            assert_eq!(read.blob_key, format!("key-{n}"), "write {n} was read back");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for reader in readers {
            reader.await.unwrap();
        }
    };
    // A write whose caller stops waiting may still land. Whichever way it went, reads agree
    // with the database once it has ended: the record it replaced is never left kept.
    a_cancelled_write_never_leaves_a_stale_read => |db: Db| async move {
        let space = SpaceName::parse("s").unwrap();
        put(&db, "cut.md", 0, WriteCondition::None).await.unwrap();
        for round in 1..=100u32 {
            db.space_file("u", &space, &path("cut.md")).await.unwrap().unwrap();
            let cut = std::time::Duration::from_micros(u64::from(round % 20) * 50);
            let _ = tokio::time::timeout(
                cut,
                db.space_put("u", &space, &path("cut.md"), &blob(round), FileMeta::typed("text/plain"), &WriteCondition::None),
            )
            .await;
            // A read at once may find the record the write is replacing, before it lands; a
            // write sent after the cut one is answered after it has ended (SQLite commits in
            // order) — reads must then agree with the database.
            db.space_file("u", &space, &path("cut.md")).await.unwrap();
            put(&db, "barrier.md", round, WriteCondition::None).await.unwrap();
            // The listing reads the database itself; the point read must come to agree with it.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            loop {
                let read = db.space_file("u", &space, &path("cut.md")).await.unwrap();
                let listed = listed_file(&db, "cut.md").await;
                if read == listed {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "round {round}: the read says {read:?}, the database {listed:?}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
    };
    // A multipart part keeps the checksum it was verified against; sending the part again
    // replaces it (and its checksum) and answers the blob it replaced; the upload's end
    // answers every part's blob.
    multipart_parts_keep_their_checksums => |db: Db| async move {
        let meta = FileMeta { content_type: "text/plain", attributes: Some("{}"), door: Default::default() };
        let upload = db.insert_multipart("u", "notes", "big.bin", meta).await.unwrap();
        let replaced = db.put_part(&upload.upload_id, 2, &blob(2), Some("crc-2")).await.unwrap();
        assert_eq!(replaced, None);
        db.put_part(&upload.upload_id, 1, &blob(1), None).await.unwrap();
        let parts = db.parts(&upload.upload_id).await.unwrap();
        let kept: Vec<_> = parts.iter().map(|p| (p.part_number, p.checksum.as_deref())).collect();
        assert_eq!(kept, [(1, None), (2, Some("crc-2"))]);
        let replaced = db.put_part(&upload.upload_id, 2, &blob(3), Some("crc-3")).await.unwrap();
        assert_eq!(replaced.as_deref(), Some("key-2"));
        let again = db.parts(&upload.upload_id).await.unwrap();
        assert_eq!((again[1].blob_key.as_str(), again[1].checksum.as_deref()), ("key-3", Some("crc-3")));
        let mut gone = db.delete_multipart(&upload.upload_id).await.unwrap();
        gone.sort();
        assert_eq!(gone, ["key-1", "key-3"]);
    };
    // The owner's spaces with their counts and sizes (Postgres sums BIGINT into NUMERIC, which
    // the query casts back).
    spaces_are_summed => |db: Db| async move {
        put(&db, "a.md", 3, WriteCondition::None).await.unwrap();
        put(&db, "b/c.md", 4, WriteCondition::None).await.unwrap();
        let spaces = db.spaces_of("u").await.unwrap();
        assert_eq!(spaces.len(), 1);
        assert_eq!((spaces[0].name.as_str(), spaces[0].files, spaces[0].bytes), ("s", 2, 7));
    };
    // A space exists from its first file or from being made empty, until removed empty;
    // deleting its last file leaves it, listed with nothing in it.
    spaces_are_made_listed_and_removed_empty => |db: Db| async move {
        use ferry_store::space_names::Removal;
        let s = SpaceName::parse("s").unwrap();
        let empty = SpaceName::parse("empty").unwrap();
        assert!(!db.space_exists("u", &s).await.unwrap());
        put(&db, "d/a.md", 3, WriteCondition::None).await.unwrap();
        assert!(db.space_exists("u", &s).await.unwrap());
        assert!(!db.space_exists("someone-else", &s).await.unwrap());
        assert!(db.space_create("u", &empty).await.unwrap());
        assert!(!db.space_create("u", &empty).await.unwrap());
        let listed: Vec<_> = db.spaces_of("u").await.unwrap().into_iter().map(|s| (s.name, s.files, s.bytes)).collect();
        assert_eq!(listed, [("empty".to_owned(), 0, 0), ("s".to_owned(), 1, 3)]);
        assert_eq!(db.space_remove("u", &s).await.unwrap(), Removal::NotEmpty);
        db.space_delete("u", &s, &path("d/a.md"), None, Default::default()).await.unwrap();
        assert!(db.space_exists("u", &s).await.unwrap(), "an emptied space stays");
        db.space_mkdirs("u", &s, &["kept/folder"]).await.unwrap();
        assert_eq!(db.space_remove("u", &s).await.unwrap(), Removal::Removed);
        assert!(list(&db, None, false).await.is_empty(), "its empty folders went with it");
        assert_eq!(db.space_remove("u", &s).await.unwrap(), Removal::Missing);
        assert_eq!(db.spaces_of("u").await.unwrap().len(), 1);
    };
    // A request cancelled at any point of a write transaction — while BEGIN runs, between
    // statements, while COMMIT runs — leaves no connection holding the write lock: the next
    // writer gets on at once, never after the busy timeout.
    cancelled_writes_never_leave_the_lock_held => |db: Db| async move {
        let space = SpaceName::parse("s").unwrap();
        for round in 0..200u32 {
            let cut = std::time::Duration::from_micros(u64::from(round % 40) * 25);
            let _ = tokio::time::timeout(
                cut,
                db.space_put("u", &space, &path(&format!("c/{round}.md")), &blob(round), FileMeta::typed("text/plain"), &WriteCondition::None),
            )
            .await;
            let next = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                db.space_put("u", &space, &path("after.md"), &blob(round), FileMeta::typed("text/plain"), &WriteCondition::None),
            )
            .await;
            assert!(matches!(next, Ok(Ok(_))), "round {round}: the next write waited or failed: {next:?}");
        }
    };
    spaces_create_overwrite_and_conditions => |db: Db| async move {
        assert!(put(&db, "a/b.md", 1, WriteCondition::None).await.unwrap());
        assert!(!put(&db, "a/b.md", 2, WriteCondition::None).await.unwrap());
        assert!(matches!(put(&db, "a/b.md", 3, WriteCondition::CreateOnly).await, Err(Error::AlreadyExists)));
        let current = format!("{:064x}", 2);
        assert!(matches!(
            put(&db, "a/b.md", 4, WriteCondition::IfMatch(vec!["nope".into()])).await,
            Err(Error::PreconditionFailed)
        ));
        assert!(!put(&db, "a/b.md", 4, WriteCondition::IfMatch(vec![current])).await.unwrap());
        assert!(matches!(
            put(&db, "missing", 5, WriteCondition::IfMatch(vec!["*".into()])).await,
            Err(Error::PreconditionFailed)
        ));
        let file = db.space_file("u", &SpaceName::parse("s").unwrap(), &path("a/b.md")).await.unwrap().unwrap();
        assert_eq!(file.blob_key, "key-4");
        // Another owner sees nothing.
        assert!(db.space_file("v", &SpaceName::parse("s").unwrap(), &path("a/b.md")).await.unwrap().is_none());
    };

    exactly_one_racing_create_only_put_wins => |db: Db| async move {
        let db = Arc::new(db);
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                let db = db.clone();
                tokio::spawn(async move { put(&db, "race.md", i, WriteCondition::CreateOnly).await })
            })
            .collect();
        let mut created = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(true) => created += 1,
                Err(Error::AlreadyExists) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(created, 1);
    };

    // Concurrent writes may share one transaction (SQLite's group commit): a refused one is
    // undone alone — its folder is not recorded — and the others it shared a commit with stay.
    a_refused_write_undoes_only_itself => |db: Db| async move {
        let db = Arc::new(db);
        put(&db, "taken.md", 0, WriteCondition::None).await.unwrap();
        let tasks: Vec<_> = (0..48u32)
            .map(|i| {
                let db = db.clone();
                tokio::spawn(async move {
                    match i % 3 {
                        0 => put(&db, &format!("kept/{i}.md"), i, WriteCondition::None).await,
                        1 => put(&db, &format!("missing-{i}/x.md"), i, WriteCondition::IfMatch(vec!["*".into()])).await,
                        _ => put(&db, "taken.md", i, WriteCondition::IfMatchAndCreateOnly(vec!["*".into()])).await,
                    }
                })
            })
            .collect();
        for (i, task) in tasks.into_iter().enumerate() {
            let outcome = task.await.unwrap();
            match i % 3 {
                0 => assert!(outcome.unwrap(), "kept/{i}.md is new"),
                1 => assert!(matches!(outcome, Err(Error::PreconditionFailed)), "{outcome:?}"),
                _ => assert!(matches!(outcome, Err(Error::AlreadyExists)), "{outcome:?}"),
            }
        }
        assert_eq!(list(&db, None, false).await, vec![("kept".to_owned(), true), ("taken.md".to_owned(), false)]);
        assert_eq!(list(&db, Some("kept"), false).await.len(), 16);
        let taken = db.space_file("u", &SpaceName::parse("s").unwrap(), &path("taken.md")).await.unwrap().unwrap();
        assert_eq!(taken.blob_key, "key-0");
    };

    listings_sort_bytewise_with_folders => |db: Db| async move {
        for (i, p) in ["b.md", "a/2.md", "a/1.md", "a/deep/x.md", "B.md", "a-b.md", "é.md"].iter().enumerate() {
            put(&db, p, i as u32 + 1, WriteCondition::None).await.unwrap();
        }
        assert_eq!(
            list(&db, None, false).await,
            [("B.md", false), ("a", true), ("a-b.md", false), ("b.md", false), ("é.md", false)]
                .map(|(p, d)| (p.to_owned(), d))
        );
        assert_eq!(
            list(&db, Some("a"), true).await,
            [("a/1.md", false), ("a/2.md", false), ("a/deep/x.md", false)].map(|(p, d)| (p.to_owned(), d))
        );
        // "a-b.md" sorts between "a" and "a/…" byte-wise, and is not under "a/".
        let all = list(&db, None, true).await;
        assert_eq!(all.len(), 7);
        let mut sorted = all.clone();
        sorted.sort_by(|x, y| x.0.as_bytes().cmp(y.0.as_bytes()));
        assert_eq!(all, sorted);
    };

    pagination_is_complete => |db: Db| async move {
        for i in 0..57 {
            put(&db, &format!("p/{i:03}"), i + 1, WriteCondition::None).await.unwrap();
        }
        let space = SpaceName::parse("s").unwrap();
        for recursive in [true, false] {
            let mut seen = Vec::new();
            let mut after = None;
            loop {
                let dir = path("p");
                let page = db
                    .space_list("u", &space, &ListQuery { dir: Some(&dir), recursive, limit: 10, after })
                    .await
                    .unwrap();
                seen.extend(page.entries.iter().map(|e| e.path().to_owned()));
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            assert_eq!(seen.len(), 57);
            seen.dedup();
            assert_eq!(seen.len(), 57);
        }
    };

    event_ids_are_gap_free_under_concurrency => |db: Db| async move {
        let thread = db.create_thread("alice", Some("t")).await.unwrap();
        let db = Arc::new(db);
        let tasks: Vec<_> = (0..60)
            .map(|i| {
                let db = db.clone();
                let id = thread.id.clone();
                tokio::spawn(async move {
                    db.append_event(&id, move |n, _| message(format!("{{\"id\":{n},\"i\":{i}}}"))).await.unwrap().id
                })
            })
            .collect();
        let mut ids = Vec::new();
        for task in tasks {
            ids.push(task.await.unwrap());
        }
        ids.sort_unstable();
        assert_eq!(ids, (1..=60).collect::<Vec<_>>());
        let stored = db.events_after(&thread.id, 0, 1000).await.unwrap();
        assert_eq!(stored.iter().map(|e| e.id).collect::<Vec<_>>(), (1..=60).collect::<Vec<_>>());
        assert_eq!(db.events_after(&thread.id, 58, 10).await.unwrap().len(), 2);
        assert_eq!(db.last_event_id(&thread.id).await.unwrap(), 60);
        assert!(matches!(db.append_event("missing", |_, _| message(String::new())).await, Err(Error::NotFound)));
    };

    threads_uploads_and_revisions => |db: Db| async move {
        let t = db.create_thread("alice", None).await.unwrap();
        db.create_thread("bob", Some("b")).await.unwrap();
        assert_eq!(db.threads(Some("alice")).await.unwrap().len(), 1);
        assert_eq!(db.threads(None).await.unwrap().len(), 2);
        let upload = Upload {
            id: new_upload_id(),
            thread_id: t.id.clone(),
            owner: "alice".into(),
            file_name: "q.xlsx".into(),
            file_type: "application/x".into(),
            size: 3,
            sha256: "s".into(),
            kind: "document".into(),
            storage_path: "chat-uploads/alice/t/q.xlsx".into(),
            sandbox_path: "/sandbox/user_uploads/q.xlsx".into(),
            preview: Some("Sheet1: a".into()),
            preview_error: None,
            width: None,
            height: None,
            blob_key: "up-1".into(),
            created_at: ferry_core::Timestamp(0),
        };
        let (stored, event) = db.insert_upload(upload, |u, id, _| Rendered { kind: "upload", json: format!("{{\"id\":{id},\"n\":\"{}\"}}", u.file_name) }).await.unwrap();
        assert_eq!(event.id, 1);
        assert_eq!(db.uploads(&t.id).await.unwrap(), vec![stored.clone()]);
        assert_eq!(db.upload(&t.id, &stored.id).await.unwrap(), Some(stored));
        let new = |sha: &str| NewRevision {
            thread_id: t.id.clone(),
            display_name: "Report".into(),
            description: String::new(),
            filename: "r.md".into(),
            file_type: ".md".into(),
            mime_type: "text/markdown".into(),
            file_size: 1,
            sha256: sha.into(),
            storage_path: format!("deepagent-outputs/{}/r.md", t.id),
            sandbox_path: "/sandbox/outputs/r.md".into(),
            blob_key: format!("blob-{sha}"),
            preview_kind: "html".into(),
        };
        let (r1, _) = db.publish(new("a"), |_, id, _| published(format!("{{\"id\":{id}}}"))).await.unwrap();
        let (r2, e2) = db.publish(new("b"), |_, id, _| published(format!("{{\"id\":{id}}}"))).await.unwrap();
        assert_eq!((r1.revision, r2.revision), (1, 2));
        assert_eq!(r1.file_id, r2.file_id);
        assert_eq!(e2.id, 3);
        assert_eq!(db.published(&t.id, false).await.unwrap().len(), 1);
        assert_eq!(db.published(&t.id, true).await.unwrap().len(), 2);
        assert_eq!(db.published_revision(&t.id, &r1.file_id, Some(1)).await.unwrap().unwrap().sha256, "a");
        assert_eq!(db.published_revision(&t.id, &r1.file_id, None).await.unwrap().unwrap().sha256, "b");
        assert_eq!(db.published_blob_with_sha(&t.id, "a").await.unwrap().as_deref(), Some("blob-a"));
        assert_eq!(db.published_by_storage_path(&r1.storage_path).await.unwrap().unwrap().revision, 2);
        let references = db.blob_references().await.unwrap();
        assert!(db.blob_referenced(&references, "blob-a").await.unwrap());
        assert!(db.blob_referenced(&references, "up-1").await.unwrap());
        assert!(!db.blob_referenced(&references, "nobody").await.unwrap());

        // Renaming keeps everything else.
        assert!(db.rename_thread(&t.id, Some("Q3")).await.unwrap());
        assert_eq!(db.thread(&t.id).await.unwrap().unwrap().title.as_deref(), Some("Q3"));
        assert!(!db.rename_thread("missing", Some("x")).await.unwrap());

        // Deleting removes the thread and every record of it, a stored sandbox's included, and
        // leaves its blobs unreferenced for the sweep; the other thread is untouched.
        let sandbox = SpaceName::sandbox();
        db.space_put(&t.id, &sandbox, &path("outputs/a.md"), &blob(7), FileMeta::typed("text/plain"), &WriteCondition::None)
            .await
            .unwrap();
        let bob = db.threads(Some("bob")).await.unwrap().remove(0);
        db.append_event(&bob.id, |n, _| message(format!("{{\"id\":{n}}}"))).await.unwrap();
        assert!(db.delete_thread(&t.id).await.unwrap());
        assert!(db.thread(&t.id).await.unwrap().is_none());
        assert!(db.uploads(&t.id).await.unwrap().is_empty());
        assert!(db.published(&t.id, true).await.unwrap().is_empty());
        assert!(db.events_after(&t.id, 0, 100).await.unwrap().is_empty());
        assert!(db.space_file(&t.id, &sandbox, &path("outputs/a.md")).await.unwrap().is_none());
        let references = db.blob_references().await.unwrap();
        for key in ["blob-a", "blob-b", "up-1", "key-7"] {
            assert!(!db.blob_referenced(&references, key).await.unwrap(), "{key} is still named");
        }
        assert!(!db.delete_thread(&t.id).await.unwrap());
        assert_eq!(db.events_after(&bob.id, 0, 100).await.unwrap().len(), 1);
    };

    resumable_uploads_move_on_by_durable_parts => |db: Db| async move {
        use ferry_store::resumable::{Appended, ResumableState, ResumableUpload};
        let now = ferry_core::Timestamp::now();
        let upload = |id: &str, maker: &str, expires: i64| ResumableUpload {
            id: id.into(),
            made_by: maker.into(),
            target: "{}".into(),
            length: 10,
            offset: 0,
            metadata: "filename YQ==".into(),
            created_at: now,
            expires_at: ferry_core::Timestamp(now.millis() + expires),
            state: ResumableState::Receiving,
            result: None,
        };
        assert!(db.create_resumable(&upload("u1", "user:a", 60_000), 2).await.unwrap());
        assert!(db.create_resumable(&upload("u2", "user:a", 60_000), 2).await.unwrap());
        // The cap counts the maker's unfinished uploads only.
        assert!(!db.create_resumable(&upload("u3", "user:a", 60_000), 2).await.unwrap());
        assert!(db.create_resumable(&upload("u4", "user:b", -1), 2).await.unwrap());

        assert_eq!(db.append_resumable_part("u1", 0, 4, Some("part-a")).await.unwrap(), Appended::At(4));
        // A part from a stale offset, or past the length, is not recorded.
        assert_eq!(db.append_resumable_part("u1", 0, 4, Some("part-x")).await.unwrap(), Appended::Conflict);
        assert_eq!(db.append_resumable_part("u1", 4, 7, Some("part-y")).await.unwrap(), Appended::Conflict);
        assert_eq!(db.append_resumable_part("nope", 0, 1, Some("part-z")).await.unwrap(), Appended::Missing);
        assert_eq!(db.append_resumable_part("u1", 4, 6, Some("part-b")).await.unwrap(), Appended::At(10));
        let parts = db.resumable_parts("u1").await.unwrap();
        assert_eq!(parts.iter().map(|p| (p.offset, p.size)).collect::<Vec<_>>(), [(0, 4), (4, 6)]);
        let references = db.blob_references().await.unwrap();
        assert!(db.blob_referenced(&references, "part-a").await.unwrap());
        // Bytes written into the upload's own file move the offset on and leave no part.
        assert_eq!(db.append_resumable_part("u2", 0, 3, None).await.unwrap(), Appended::At(3));
        assert_eq!(db.append_resumable_part("u2", 0, 3, None).await.unwrap(), Appended::Conflict);
        assert!(db.resumable_parts("u2").await.unwrap().is_empty());
        assert_eq!(db.resumable("u2").await.unwrap().unwrap().offset, 3);

        // One claim wins; a stale claim may be taken over.
        assert!(db.claim_resumable("u1", ferry_core::Timestamp(0)).await.unwrap());
        assert!(!db.claim_resumable("u1", ferry_core::Timestamp(0)).await.unwrap());
        assert!(!db.claim_resumable("u2", ferry_core::Timestamp(0)).await.unwrap(), "u2 is not complete");
        let far = ferry_core::Timestamp(now.millis() + 3_600_000);
        assert!(db.claim_resumable("u1", far).await.unwrap());
        let keys = db.finish_resumable("u1", "{\"status\":201}").await.unwrap();
        assert_eq!(keys, ["part-a", "part-b"]);
        let finished = db.resumable("u1").await.unwrap().unwrap();
        assert_eq!(finished.state, ResumableState::Finished);
        assert_eq!(finished.result.as_deref(), Some("{\"status\":201}"));
        assert!(db.resumable_parts("u1").await.unwrap().is_empty());
        // A finished upload no longer counts against the cap.
        assert!(db.create_resumable(&upload("u3", "user:a", 60_000), 2).await.unwrap());

        assert_eq!(db.expired_resumables(now, 10).await.unwrap(), ["u4"]);
        assert_eq!(db.delete_resumable("u4").await.unwrap(), Some(Vec::new()));
        assert_eq!(db.delete_resumable("u4").await.unwrap(), None);
    };

    revisions_under_concurrent_publishes_are_distinct => |db: Db| async move {
        let t = db.create_thread("alice", None).await.unwrap();
        let db = Arc::new(db);
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let db = db.clone();
                let thread_id = t.id.clone();
                tokio::spawn(async move {
                    let new = NewRevision {
                        thread_id,
                        display_name: "Same".into(),
                        description: String::new(),
                        filename: "r.md".into(),
                        file_type: ".md".into(),
                        mime_type: "text/markdown".into(),
                        file_size: 1,
                        sha256: format!("{i}"),
                        storage_path: "deepagent-outputs/x/r.md".into(),
                        sandbox_path: "/sandbox/outputs/r.md".into(),
                        blob_key: format!("k{i}"),
                        preview_kind: "html".into(),
                    };
                    db.publish(new, |_, id, _| published(format!("{{\"id\":{id}}}"))).await.unwrap().0.revision
                })
            })
            .collect();
        let mut revisions = Vec::new();
        for task in tasks {
            revisions.push(task.await.unwrap());
        }
        revisions.sort_unstable();
        assert_eq!(revisions, (1..=16).collect::<Vec<_>>());
    };

    webhook_deliveries_are_claimed_once => |db: Db| async move {
        let t = db.create_thread("alice", None).await.unwrap();
        let c = db.insert_connector(&t.id, "webhook", "http://x/hook", "secret").await.unwrap();
        for event in 1..=20 {
            db.queue_delivery(&c.id, &t.id, event).await.unwrap();
        }
        let other = db.insert_connector(&t.id, "webhook", "http://y/hook", "secret").await.unwrap();
        db.queue_delivery(&other.id, &t.id, 1).await.unwrap();
        assert_eq!(db.pending_deliveries().await.unwrap(), 21);
        let mut due = db.connectors_due(10).await.unwrap();
        due.sort();
        let mut expected = vec![c.id.clone(), other.id.clone()];
        expected.sort();
        assert_eq!(due, expected, "each connector with a due delivery, once");
        let db = Arc::new(db);
        let claimers: Vec<_> = (0..4)
            .map(|_| {
                let db = db.clone();
                let connector = c.id.clone();
                tokio::spawn(async move {
                    let mut mine = Vec::new();
                    while let Some(delivery) = db.claim_delivery(&connector, 60_000).await.unwrap() {
                        assert_eq!(delivery.connector_id, connector);
                        mine.push(delivery.id);
                    }
                    mine
                })
            })
            .collect();
        let mut all = Vec::new();
        for claimer in claimers {
            all.extend(claimer.await.unwrap());
        }
        let count = all.len();
        all.sort();
        all.dedup();
        assert_eq!((count, all.len()), (20, 20), "each delivery claimed exactly once");
        db.finish_delivery(&all[0], Ok(())).await.unwrap();
        db.finish_delivery(&all[1], Err(("boom", Some(0)))).await.unwrap();
        // One made, one to retry (still pending), one failed for good.
        db.finish_delivery(&all[2], Err(("gone", None))).await.unwrap();
        assert_eq!(db.pending_deliveries().await.unwrap(), 19);
        let again = db.claim_delivery(&c.id, 60_000).await.unwrap().expect("the retry is due");
        assert_eq!(again.attempts, 2);
        assert!(db.claim_delivery(&c.id, 60_000).await.unwrap().is_none());
        assert_eq!(db.connectors_due(10).await.unwrap(), vec![other.id.clone()]);
        assert_eq!(db.connectors(&t.id).await.unwrap().len(), 2);
        assert!(db.delete_connector(&t.id, &c.id).await.unwrap());
        assert_eq!(db.pending_deliveries().await.unwrap(), 1, "the other connector's");
    };

    the_sweep_sees_every_column_that_holds_blob_keys => |db: Db| async move {
        let references = db.blob_references().await.unwrap();
        let mut found: Vec<String> = references
            .columns
            .iter()
            .map(|(table, column)| format!("{table}.{column}"))
            .collect();
        found.sort();
        for known in [
            "attachments.blob_key",
            "published_revisions.blob_key",
            "s3_parts.blob_key",
            "space_files.blob_key",
            "uploads.blob_key",
        ] {
            assert!(found.iter().any(|f| f == known), "{known} missing from {found:?}");
        }
        // A column that stores blob keys under another name would be invisible to the sweep,
        // and its blobs deleted after the grace period: the schema must not have one.
        let all: Vec<(String, String)> = match db.engine() {
            ferry_store::Engine::Sqlite => sqlx::query_as(
                "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p \
                 WHERE m.type = 'table'",
            )
            .fetch_all(db.pool())
            .await
            .unwrap(),
            ferry_store::Engine::Postgres => sqlx::query_as(
                "SELECT CAST(table_name AS TEXT), CAST(column_name AS TEXT) \
                 FROM information_schema.columns WHERE table_schema = current_schema()",
            )
            .fetch_all(db.pool())
            .await
            .unwrap(),
        };
        for (table, column) in all {
            if column.contains("blob") || column.contains("object_key") {
                assert!(
                    ferry_store::sweep::holds_blob_keys(&column),
                    "{table}.{column} looks like a blob reference but is not named *blob_key, \
                     so the sweep would not see it"
                );
            }
        }
        // A table added later is seen without any change to the sweep.
        sqlx::query("CREATE TABLE thumbnails (id TEXT PRIMARY KEY, image_blob_key TEXT NOT NULL)")
            .execute(db.pool())
            .await
            .unwrap();
        sqlx::query("INSERT INTO thumbnails (id, image_blob_key) VALUES ('t', 'thumb-key')")
            .execute(db.pool())
            .await
            .unwrap();
        let references = db.blob_references().await.unwrap();
        assert!(references.columns.contains(&("thumbnails".into(), "image_blob_key".into())));
        assert!(db.blob_referenced(&references, "thumb-key").await.unwrap());
    };

    racing_if_match_writes_in_a_stored_sandbox_have_one_winner => |db: Db| async move {
        use ferry_store::sandbox::Sandboxes;
        let blob_dir = tempfile::tempdir().unwrap();
        let blobs = ferry_store::Blobs::Local(ferry_store::LocalBlobs::open(blob_dir.path()).unwrap());
        let sandboxes = Sandboxes::stored(db.clone(), blobs);
        let t = db.create_thread("alice", None).await.unwrap();
        sandboxes.create(&t.id, None).await.unwrap();
        let sandbox = sandboxes.open(&t.id).await.unwrap();
        let target = path("outputs/race.txt");
        let body = |text: String| {
            futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from(text))])
        };
        let (_, first) = sandbox
            .write(&target, body("v0".into()), 1024, &WriteCondition::None, "text/plain")
            .await
            .unwrap();
        let writers: Vec<_> = (0..50)
            .map(|i| {
                let (sandbox, target, etag) = (sandbox.clone(), target.clone(), first.etag.clone());
                tokio::spawn(async move {
                    sandbox
                        .write(
                            &target,
                            body(format!("writer {i}")),
                            1024,
                            &WriteCondition::IfMatch(vec![etag]),
                            "text/plain",
                        )
                        .await
                })
            })
            .collect();
        let mut won = 0;
        let mut refused = 0;
        for writer in writers {
            match writer.await.unwrap() {
                Ok(_) => won += 1,
                Err(ferry_store::Error::PreconditionFailed) => refused += 1,
                Err(other) => panic!("unexpected: {other}"),
            }
        }
        assert_eq!((won, refused), (1, 49));
    };

    // A user reaches the keys it made and those its agents made in its threads; a service
    // token every agent's; an agent only its own. An agent's key keeps its end.
    access_keys_are_reached_by_their_maker_and_the_thread_owner => |db: Db| async move {
        use ferry_core::Timestamp;
        use ferry_store::access_keys::{AccessKey, KeyScope};
        let key = |id: &str, made_by: &str, kind: &str, sub: &str, ends: Option<i64>| AccessKey {
            access_key_id: id.into(),
            made_by: made_by.into(),
            kind: kind.into(),
            sub: Some(sub.into()),
            thread_id: (kind == "agent").then(|| "t1".into()),
            agent_id: (kind == "agent").then(|| "agent".into()),
            created_at: Timestamp(0),
            expires_at: ends.map(Timestamp),
        };
        db.insert_access_key(key("ALICE", "user:alice", "user", "alice", None)).await.unwrap();
        db.insert_access_key(key("AGENT", "agent:alice:t1", "agent", "alice", Some(42))).await.unwrap();
        db.insert_access_key(key("BOB", "user:bob", "user", "bob", None)).await.unwrap();
        let ids = |keys: Vec<AccessKey>| {
            let mut ids: Vec<String> = keys.into_iter().map(|k| k.access_key_id).collect();
            ids.sort();
            ids
        };
        let alice = db.access_keys_of("user:alice", KeyScope::AndThreadsOf("alice")).await.unwrap();
        assert_eq!(ids(alice), ["AGENT", "ALICE"]);
        let bob = db.access_keys_of("user:bob", KeyScope::AndThreadsOf("bob")).await.unwrap();
        assert_eq!(ids(bob), ["BOB"]);
        let agent = db.access_keys_of("agent:alice:t1", KeyScope::Own).await.unwrap();
        assert_eq!(agent[0].expires_at, Some(Timestamp(42)));
        let service = db.access_keys_of("service:", KeyScope::AndEveryAgent).await.unwrap();
        assert_eq!(ids(service), ["AGENT"]);
        // Bob reaches neither Alice's key nor her agent's; Alice revokes her agent's.
        assert!(!db.delete_access_key("user:bob", KeyScope::AndThreadsOf("bob"), "AGENT").await.unwrap());
        assert!(!db.delete_access_key("user:bob", KeyScope::AndThreadsOf("bob"), "ALICE").await.unwrap());
        assert!(db.delete_access_key("user:alice", KeyScope::AndThreadsOf("alice"), "AGENT").await.unwrap());
        assert!(db.access_key("AGENT").await.unwrap().is_none());
        assert!(db.delete_access_key("user:bob", KeyScope::Own, "BOB").await.unwrap());
    };
}

/// A database migrated before the first migrations' comments were reworded still starts: its
/// recorded checksums (the old text's) are carried over to the new text's. Any other mismatch
/// still stops the start.
async fn reworded_migrations_are_accepted(url: &str) {
    use sqlx::Connection;
    const OLD_SQLITE_1: &str = "f8be8ab80ed279700f9ddeb64fcadb0a621d556464408594d1de5eda532806593820d8b2ea4ccc7e6c8bfd9f2c765c52";
    const OLD_POSTGRES_1: &str = "cb3d41e35827f49c52342b6b0a5daf0aaa560208c34e74a4eaab195165d3ad69ee9a5b9e33c6d3211105e7450eca35d1";
    const OLD_SHARED_2: &str = "47e627569afaa5faff0a6be2cb82cf362454ac92bfe70c83c42d8580d94973c3c4177324b122d8d8f025619d897c78fc";
    let db = Db::open(url).await.unwrap();
    let old_1 = match db.engine() {
        ferry_store::Engine::Sqlite => OLD_SQLITE_1,
        ferry_store::Engine::Postgres => OLD_POSTGRES_1,
    };
    db.close().await;
    let checksum = |version: i64| async move {
        let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
        let sum: Vec<u8> =
            sqlx::query_scalar("SELECT checksum FROM _sqlx_migrations WHERE version = $1")
                .bind(version)
                .fetch_one(&mut conn)
                .await
                .unwrap();
        sum
    };
    let set = |version: i64, sum: Vec<u8>| async move {
        let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
        sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2")
            .bind(sum)
            .bind(version)
            .execute(&mut conn)
            .await
            .unwrap();
    };
    let current_1 = checksum(1).await;
    let current_2 = checksum(2).await;
    // As a database migrated with the old wording records them.
    set(1, hex::decode(old_1).unwrap()).await;
    set(2, hex::decode(OLD_SHARED_2).unwrap()).await;
    Db::open(url)
        .await
        .expect("the old wording is accepted")
        .close()
        .await;
    assert_eq!(checksum(1).await, current_1);
    assert_eq!(checksum(2).await, current_2);
    // A migration changed in any other way still stops the start.
    set(1, vec![0; 48]).await;
    assert!(Db::open(url).await.is_err());
}

#[tokio::test]
async fn reworded_migrations_are_accepted_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    reworded_migrations_are_accepted(&url).await;
}

#[tokio::test]
async fn reworded_migrations_are_accepted_on_postgres() {
    let Some(schema) = ferry_test_support::peers::postgres().await else {
        return;
    };
    reworded_migrations_are_accepted(&schema.url).await;
    schema.drop_now().await;
}
