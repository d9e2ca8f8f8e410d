//! Folders as one zip (docs/reference/folder-zip.md): `?format=zip` on the sandbox and spaces
//! listings, read back with a zip reader.

use std::io::{Cursor, Read};

use crate::support::{Reply, TestApp};
use crate::thread_support::{put_file, thread};

/// The zip's members, in order, with their bytes.
fn members(reply: &Reply) -> Vec<(String, Vec<u8>)> {
    reply.expect(200, None);
    assert_eq!(reply.header("content-type"), Some("application/zip"));
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    let mut zip = zip::ZipArchive::new(Cursor::new(reply.body.clone()))
        .unwrap_or_else(|e| panic!("not a zip ({e}): {} bytes", reply.body.len()));
    (0..zip.len())
        .map(|i| {
            let mut member = zip.by_index(i).unwrap();
            let mut bytes = Vec::new();
            member.read_to_end(&mut bytes).unwrap();
            (member.name().unwrap().into_owned(), bytes)
        })
        .collect()
}

fn named(members: &[(String, Vec<u8>)]) -> Vec<(&str, &[u8])> {
    members
        .iter()
        .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
        .collect()
}

#[tokio::test]
async fn a_sandbox_folder_downloads_as_one_zip_below_its_own_name() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let big: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
    put_file(&app, &t, "outputs/report.md", b"# Report\n").await;
    put_file(&app, &t, "outputs/charts/q3.bin", &big).await;
    put_file(&app, &t, "outputs/empty.txt", b"").await;
    put_file(&app, &t, "workspace/scratch.txt", b"not in the zip").await;

    // The thread's agent and its owner alike.
    for token in [&t.agent, &t.user] {
        let reply = app
            .get(&t.url("/sandbox?dir=/sandbox/outputs&format=zip"), token)
            .await;
        let got = members(&reply);
        assert_eq!(
            named(&got),
            vec![
                ("outputs/charts/q3.bin", big.as_slice()),
                ("outputs/empty.txt", &b""[..]),
                ("outputs/report.md", &b"# Report\n"[..]),
            ]
        );
        let disposition = reply.header("content-disposition").unwrap();
        assert!(
            disposition.starts_with("attachment") && disposition.contains("outputs.zip"),
            "{disposition}"
        );
        assert_eq!(reply.header("cache-control"), Some("no-store"));
    }

    // The whole sandbox: below a folder named "sandbox", standard folders' files included.
    let whole = members(&app.get(&t.url("/sandbox?format=zip"), &t.user).await);
    let names: Vec<&str> = whole.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"sandbox/workspace/scratch.txt"),
        "{names:?}"
    );
    assert!(names.contains(&"sandbox/outputs/report.md"), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("sandbox/")), "{names:?}");
}

#[tokio::test]
async fn a_sandbox_zip_is_refused_as_the_listing_is() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/a.txt", b"a").await;
    // Another user sees no such thread.
    app.get(
        &t.url("/sandbox?dir=/sandbox/outputs&format=zip"),
        &app.user("mallory"),
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    // A path outside the sandbox, a file for a folder, an unknown format.
    app.get(&t.url("/sandbox?dir=/etc&format=zip"), &t.user)
        .await
        .expect(400, Some("INVALID_PATH"));
    // A file named as the folder is answered as the listing answers it.
    let listing = app
        .get(&t.url("/sandbox?dir=/sandbox/outputs/a.txt"), &t.user)
        .await;
    let zip = app
        .get(
            &t.url("/sandbox?dir=/sandbox/outputs/a.txt&format=zip"),
            &t.user,
        )
        .await;
    assert_eq!((zip.status, zip.json()), (listing.status, listing.json()));
    assert_eq!(zip.status.as_u16(), 404, "{}", zip.text());
    app.get(&t.url("/sandbox?dir=/sandbox/outputs&format=tar"), &t.user)
        .await
        .expect(400, Some("INVALID_REQUEST"));
    // No token at all.
    let anonymous = app
        .send(
            "GET",
            &t.url("/sandbox?format=zip"),
            None,
            &[],
            axum::body::Body::empty(),
        )
        .await;
    anonymous.expect(401, Some("UNAUTHENTICATED"));
}

#[tokio::test]
async fn a_space_folder_downloads_as_one_zip_for_its_owner_only() {
    let app = TestApp::new().await;
    let alice = app.user("alice");
    for (path, body) in [
        ("ideas/tea.md", "# Tea"),
        ("ideas/deep/er.md", "deeper"),
        ("notes/other.md", "elsewhere"),
    ] {
        app.put(
            &format!("/api/spaces/personal/files/{path}"),
            &alice,
            "text/markdown",
            body.as_bytes(),
        )
        .await
        .expect(201, None);
    }

    let ideas = app
        .get("/api/spaces/personal/files?dir=ideas&format=zip", &alice)
        .await;
    assert_eq!(
        named(&members(&ideas)),
        vec![
            ("ideas/deep/er.md", &b"deeper"[..]),
            ("ideas/tea.md", &b"# Tea"[..]),
        ]
    );
    assert!(
        ideas
            .header("content-disposition")
            .unwrap()
            .contains("ideas.zip")
    );

    // The space's root: below a folder named as the space.
    let whole = app
        .get("/api/spaces/personal/files?format=zip", &alice)
        .await;
    let names: Vec<String> = members(&whole).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "personal/ideas/deep/er.md",
            "personal/ideas/tea.md",
            "personal/notes/other.md"
        ]
    );

    // Spaces are per user: another user's "personal" is their own, and empty.
    let bob = app
        .get("/api/spaces/personal/files?format=zip", &app.user("bob"))
        .await;
    assert!(members(&bob).is_empty());
    // A folder that does not exist is an empty zip, as its listing is empty.
    let none = app
        .get("/api/spaces/personal/files?dir=missing&format=zip", &alice)
        .await;
    assert!(members(&none).is_empty());
    // Bad folder names are refused before any byte.
    app.get("/api/spaces/personal/files?dir=../etc&format=zip", &alice)
        .await
        .expect(400, Some("INVALID_PATH"));
    app.get("/api/spaces/personal/files?dir=ideas&format=ZIP", &alice)
        .await
        .expect(400, Some("INVALID_REQUEST"));
}

/// A command (or anything with the folder) can make names no door could write: with a
/// newline, an escape sequence, DEL or a backslash. They are left out everywhere, never shown
/// raw, and the folder around them still lists, zips and searches.
#[tokio::test]
async fn names_no_door_could_write_are_listed_marked_left_out_of_zips_and_searches() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/ok.txt", b"needle\n").await;
    let dir = crate::thread_support::sandbox_dir(&app, &t)
        .await
        .join("outputs");
    for odd in [
        "a\nb.txt",
        "esc\u{1b}[31m.txt",
        "del\u{7f}.txt",
        "back\\slash.txt",
    ] {
        std::fs::write(dir.join(odd), b"needle\n").unwrap();
    }
    std::fs::create_dir(dir.join("sub\rdir")).unwrap();
    std::fs::write(dir.join("sub\rdir/inner.txt"), b"needle\n").unwrap();

    let listed = app
        .get(
            &t.url("/sandbox?dir=/sandbox/outputs&recursive=true"),
            &t.user,
        )
        .await;
    listed.expect(200, None);
    let text = String::from_utf8(listed.body.clone()).unwrap();
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    // Each is listed escaped, with why no route can name it, and nothing else; the folder is
    // not descended into.
    let marked = |shown: &str, kind: &str, why: &str| {
        serde_json::json!({ "path": format!("/sandbox/outputs/{shown}"), "type": kind,
                            "unaddressable": format!("its name holds {why}") })
    };
    let files = listed.json()["files"].as_array().unwrap().clone();
    assert_eq!(files.len(), 6, "{files:?}");
    assert_eq!(
        files[0],
        marked("a\\x0ab.txt", "file", "a control character")
    );
    assert_eq!(files[1], marked("back\\\\slash.txt", "file", "a backslash"));
    assert_eq!(
        files[2],
        marked("del\\x7f.txt", "file", "a control character")
    );
    assert_eq!(
        files[3],
        marked("esc\\x1b[31m.txt", "file", "a control character")
    );
    assert_eq!(files[4]["path"], "/sandbox/outputs/ok.txt");
    assert!(files[4].get("unaddressable").is_none(), "{:?}", files[4]);
    assert_eq!(
        files[5],
        marked("sub\\x0ddir", "dir", "a control character")
    );
    // The agent's `ls` shows them alike.
    let listed = app
        .post_json(
            &t.url("/fs/ls"),
            &t.agent,
            serde_json::json!({"path": "/sandbox/outputs"}),
        )
        .await;
    listed.expect(200, None);
    let entries = listed.json()["entries"].as_array().unwrap().clone();
    let shown: Vec<(&str, Option<&str>)> = entries
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["unaddressable"].as_str()))
        .collect();
    let why = Some("its name holds a control character");
    assert_eq!(
        shown,
        [
            ("/sandbox/outputs/a\\x0ab.txt", why),
            (
                "/sandbox/outputs/back\\\\slash.txt",
                Some("its name holds a backslash")
            ),
            ("/sandbox/outputs/del\\x7f.txt", why),
            ("/sandbox/outputs/esc\\x1b[31m.txt", why),
            ("/sandbox/outputs/ok.txt", None),
            ("/sandbox/outputs/sub\\x0ddir", why),
        ]
    );
    // A shown path is no path: reading it is refused, and nothing is read in its place.
    let read = app
        .post_json(
            &t.url("/fs/read_file"),
            &t.agent,
            serde_json::json!({"path": "/sandbox/outputs/a\\x0ab.txt"}),
        )
        .await;
    assert_eq!(read.status, 400, "{}", read.text());

    let reply = app
        .get(&t.url("/sandbox?dir=/sandbox/outputs&format=zip"), &t.user)
        .await;
    let zipped = members(&reply);
    assert_eq!(named(&zipped), [("outputs/ok.txt", &b"needle\n"[..])]);
    // The zip says what it left out, and why: four files and one folder.
    let archive = zip::ZipArchive::new(Cursor::new(reply.body.clone())).unwrap();
    let comment = String::from_utf8_lossy(archive.comment()).into_owned();
    assert!(
        comment
            .starts_with("ferry left out 5 file(s) or folder(s) whose names no door can address"),
        "{comment}"
    );

    let found = app
        .post_json(
            &t.url("/fs/grep"),
            &t.agent,
            serde_json::json!({"pattern": "needle", "path": "/sandbox/outputs"}),
        )
        .await;
    found.expect(200, None);
    let found = found.json();
    assert_eq!(found["filesSearched"], 1, "{found}");
    assert_eq!(found["skipped"]["unaddressable"], 5, "{found}");
    let glob = app
        .post_json(
            &t.url("/fs/glob"),
            &t.agent,
            serde_json::json!({"pattern": "**/*.txt", "path": "/sandbox/outputs"}),
        )
        .await;
    glob.expect(200, None);
    assert_eq!(
        glob.json()["paths"].as_array().unwrap().len(),
        1,
        "{}",
        glob.text()
    );
}
