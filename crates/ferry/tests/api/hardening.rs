//! The trust boundary under attack: what one agent or user does must not hang, starve or
//! poison the server for anyone else (docs/security.md).
//!
//! Why one file: it is the list of what one tenant might try against the others, one section per
//! way in (a sandbox that hangs, racing writes, a full disk, webhooks, slow previews, slow or idle
//! clients, leftovers, shutdown, oversized requests); kept whole, the list is read and grown in
//! one place rather than spread over the suites of each route.

use crate::support;
use crate::support::stdio_mcp::StdioMcp;
use crate::support::{Reply, TestApp};
use crate::thread_support;
use crate::thread_support::{BIN, Thread, fixture, put_file, sandbox_dir, thread};
use axum::body::Body;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// Panics unless `work` finishes within `limit`.
async fn within<T>(limit: Duration, what: &str, work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
}

// ---- an agent's sandbox cannot hang the server ----

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn files_swapped_with_fifos_never_hang_listings_or_anyone_else() {
    let app = TestApp::new().await;
    let t = thread(&app, "mallory").await;
    let dir = sandbox_dir(&app, &t).await.join("outputs");
    let pairs = 30;
    for i in 0..pairs {
        std::fs::write(dir.join(format!("f{i}")), b"plain").unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.join(format!("p{i}")))
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
    }
    // The agent swaps every file with a FIFO, over and over, for the whole test.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (dir, stop) = (dir.clone(), stop.clone());
        std::thread::spawn(move || {
            let folder = std::fs::File::open(&dir).unwrap();
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for i in 0..pairs {
                    let _ = rustix::fs::renameat_with(
                        &folder,
                        format!("f{i}"),
                        &folder,
                        format!("p{i}"),
                        rustix::fs::RenameFlags::EXCHANGE,
                    );
                    swaps += 1;
                }
            }
            swaps
        })
    };
    let started = Instant::now();
    let mut rounds = 0;
    while started.elapsed() < Duration::from_secs(3) {
        let listings: Vec<_> = (0..16)
            .map(|i| {
                let (app, t) = (&app, &t);
                async move {
                    let recursive = if i % 2 == 0 { "&recursive=true" } else { "" };
                    let uri = t.url(&format!("/sandbox?dir=/sandbox/outputs{recursive}"));
                    app.get(&uri, &t.agent).await
                }
            })
            .collect();
        for reply in within(
            Duration::from_secs(10),
            "16 listings of a folder under attack",
            futures::future::join_all(listings),
        )
        .await
        {
            reply.expect(200, None);
        }
        // Reads of the swapped names answer too (a FIFO is refused, a file is read).
        let read = within(
            Duration::from_secs(10),
            "a read of a swapped name",
            app.get(&t.url("/sandbox/outputs/f0"), &t.agent),
        )
        .await;
        assert!(
            matches!(read.status.as_u16(), 200 | 400),
            "{} {}",
            read.status,
            read.text()
        );
        // And someone else's work goes on.
        let alice = app.user("alice");
        let write = within(
            Duration::from_secs(5),
            "another user's space write",
            app.put(
                &format!("/api/spaces/notes/files/ok-{rounds}.md"),
                &alice,
                "text/markdown",
                b"fine",
            ),
        )
        .await;
        write.expect(201, None);
        rounds += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(
        rounds > 0 && swaps > 1000,
        "the race ran ({rounds} rounds, {swaps} swaps)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_threads_stuck_sandbox_work_holds_a_bounded_share_of_the_server() {
    // A FIFO whose open would block is refused on the descriptor; this checks the other guard:
    // when an operation does block, its thread gets at most its permits, the caller is answered
    // 503, and other threads are not held up.
    let app = TestApp::with(|config| {
        config.app.sandbox_limits.concurrent_ops = 2;
        config.app.sandbox_limits.op_timeout = Duration::from_millis(500);
    })
    .await;
    let t = thread(&app, "mallory").await;
    let other = thread(&app, "alice").await;
    // The agent holds the sandbox's commit lock (it works in the folder directly).
    let dir = sandbox_dir(&app, &t).await;
    let tmp = std::fs::File::open(dir.join(".ferry-tmp")).unwrap();
    rustix::fs::flock(&tmp, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let started = Instant::now();
    let writes: Vec<_> = (0..6)
        .map(|i| {
            let (app, t) = (&app, &t);
            async move {
                app.put(
                    &t.url(&format!("/sandbox/outputs/w{i}.txt")),
                    &t.agent,
                    BIN,
                    b"x",
                )
                .await
            }
        })
        .collect();
    for reply in futures::future::join_all(writes).await {
        reply.expect(503, Some("UNAVAILABLE"));
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    // Another thread's sandbox is untouched by all this.
    put_file(&app, &other, "outputs/fine.txt", b"fine").await;
    drop(tmp);
    // Released, the thread's writes succeed again.
    put_file(&app, &t, "outputs/after.txt", b"after").await;
}

// ---- conditional sandbox writes: exactly one winner ----

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_racing_if_match_writes_have_exactly_one_winner() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for round in 0..5 {
        let path = t.url(&format!("/sandbox/outputs/race{round}.txt"));
        let first = put_file(&app, &t, &format!("outputs/race{round}.txt"), b"v0").await;
        let etag = first.header("etag").unwrap().to_owned();
        let writers: Vec<_> = (0..50)
            .map(|i| {
                let (app, t, path, etag) = (&app, &t, &path, &etag);
                async move {
                    app.send(
                        "PUT",
                        path,
                        Some(&t.agent),
                        &[("content-type", BIN), ("if-match", etag)],
                        Body::from(format!("writer {i}")),
                    )
                    .await
                    .status
                    .as_u16()
                }
            })
            .collect();
        let mut statuses = futures::future::join_all(writers).await;
        statuses.sort_unstable();
        let ok = statuses.iter().filter(|s| **s == 200).count();
        let refused = statuses.iter().filter(|s| **s == 412).count();
        assert_eq!((ok, refused), (1, 49), "round {round}: {statuses:?}");
    }
}

// ---- a full disk ----

/// A tmpfs of `mib` MiB mounted on a fresh folder; unmounted when dropped. `None` (said
/// loudly) where this process may not mount one.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(mib: u32) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            let message = "the disk-full test needs to mount a tmpfs (run the tests as root)";
            if std::env::var_os("FERRY_CI").is_some() {
                panic!("{message}");
            }
            eprintln!(
                "\n{}\nSKIPPED: {message}\n{}\n",
                "!".repeat(70),
                "!".repeat(70)
            );
            return None;
        }
        Some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the disk to the last byte with one file, and returns its path.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        // Fill the crumbs too.
        while file.write(&[0u8]).is_ok_and(|n| n == 1) {}
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn full_or_ok(reply: &Reply, what: &str) -> bool {
    match reply.status.as_u16() {
        200..=299 => false,
        507 => {
            reply.expect(507, Some("INSUFFICIENT_STORAGE"));
            assert!(
                !reply.text().contains("os error"),
                "no internal text: {}",
                reply.text()
            );
            true
        }
        other => panic!("{what} while the disk is full: {other} {}", reply.text()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_disk_is_said_and_writes_work_again_once_there_is_room() {
    let Some(disk) = SmallDisk::mount(24) else {
        return;
    };
    let data = disk.path().join("data");
    let app = TestApp::with_data(data, |_| {}).await;
    let t = thread(&app, "alice").await;
    app.put(
        "/api/spaces/notes/files/kept.md",
        &t.user,
        "text/markdown",
        b"stored before",
    )
    .await
    .expect(201, None);
    put_file(&app, &t, "outputs/report.md", b"# report").await;

    let filler = disk.fill();
    let mut refused = 0;
    for i in 0..10 {
        let put = app
            .put(
                &format!("/api/spaces/notes/files/full-{i}.md"),
                &t.user,
                "text/markdown",
                &vec![b'x'; 256 * 1024],
            )
            .await;
        refused += full_or_ok(&put, "a space PUT") as u32;
        let message = app
            .post_json(
                &t.url("/messages"),
                &t.user,
                json!({ "text": format!("hello {i} {}", "y".repeat(20_000)) }),
            )
            .await;
        refused += full_or_ok(&message, "a message") as u32;
        let (content_type, body) =
            thread_support::multipart(&[("big.bin", BIN, &vec![b'z'; 512 * 1024])]);
        let upload = app
            .send(
                "POST",
                &t.url("/uploads"),
                Some(&t.user),
                &[("content-type", content_type.as_str())],
                Body::from(body),
            )
            .await;
        refused += full_or_ok(&upload, "an upload") as u32;
        // A say-mode attachment that cannot be stored is a warning that names the cause, not
        // the file system's text.
        let said = app
            .post_json(
                &t.url("/say"),
                &t.agent,
                json!({ "text": "<say>here</say><file>/sandbox/outputs/report.md</file>" }),
            )
            .await;
        if said.status.is_success() {
            for warning in said.json()["warnings"].as_array().unwrap() {
                let warning = warning.as_str().unwrap();
                assert!(!warning.contains("os error"), "{warning}");
            }
        } else {
            refused += full_or_ok(&said, "a say") as u32;
        }
    }
    assert!(refused > 0, "some write must have met the full disk");

    std::fs::remove_file(filler).unwrap();
    for i in 0..40 {
        app.put(
            &format!("/api/spaces/notes/files/after-{i}.md"),
            &t.user,
            "text/markdown",
            b"room again",
        )
        .await
        .expect(201, None);
        app.post_json(
            &t.url("/messages"),
            &t.user,
            json!({ "text": format!("back {i}") }),
        )
        .await
        .expect(201, None);
    }
    for i in 0..10 {
        thread_support::upload_one(&app, &t, &format!("after-{i}.txt"), b"room").await;
    }
    let kept = app.get("/api/spaces/notes/files/kept.md", &t.user).await;
    kept.expect(200, None);
    assert_eq!(kept.body, b"stored before");
}

// ---- webhooks ----

#[tokio::test]
async fn webhooks_to_internal_addresses_are_refused() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    for url in [
        "http://127.0.0.1:9000/hook",
        "http://[::1]:9000/hook",
        "http://localhost:9000/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.5/hook",
        "http://[::ffff:127.0.0.1]/hook",
    ] {
        let reply = app
            .post_json(
                &t.url("/connectors"),
                &t.user,
                json!({ "type": "webhook", "url": url }),
            )
            .await;
        reply.expect(400, Some("INVALID_REQUEST"));
    }
}

/// A receiver on loopback that records the paths it was posted to, answering each with
/// `status` after `delay`; `location` makes it a redirect.
async fn receiver(
    status: u16,
    delay: Duration,
    location: Option<String>,
) -> (
    std::net::SocketAddr,
    tokio::sync::mpsc::UnboundedReceiver<Instant>,
) {
    use axum::routing::post;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        post(move || {
            let (tx, location) = (tx.clone(), location.clone());
            async move {
                let _ = tx.send(Instant::now());
                tokio::time::sleep(delay).await;
                let mut response = axum::response::Response::new(Body::empty());
                *response.status_mut() = axum::http::StatusCode::from_u16(status).unwrap();
                if let Some(location) = location {
                    response
                        .headers_mut()
                        .insert("location", location.parse().unwrap());
                }
                response
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, rx)
}

async fn connect_webhook(app: &TestApp, t: &Thread, url: &str) {
    app.post_json(
        &t.url("/connectors"),
        &t.user,
        json!({ "type": "webhook", "url": url }),
    )
    .await
    .expect(201, None);
}

async fn say(app: &TestApp, t: &Thread, text: &str) {
    app.post_json(
        &t.url("/say"),
        &t.agent,
        json!({ "text": format!("<say>{text}</say>") }),
    )
    .await
    .expect(200, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn internal_targets_are_never_reached_at_delivery_either() {
    // Registered while private targets were allowed (or written before the rule), then the
    // server runs without the allowance: neither an IP literal nor a name that resolves to
    // loopback is posted to.
    let (inside, mut hits) = receiver(200, Duration::ZERO, None).await;
    let app = TestApp::new().await;
    app.spawn().await;
    let t = thread(&app, "alice").await;
    for url in [
        format!("http://{inside}/hook"),
        format!("http://localhost:{}/hook", inside.port()),
    ] {
        // As a server that allowed private targets registered it.
        let owner = ferry_app::Principal::User {
            sub: "alice".into(),
        };
        let allow_any: ferry_app::events::connectors::UrlPolicy<'_> = &|url| Ok(url.to_owned());
        ferry_app::events::connectors::register(
            &app.state.app,
            &owner,
            &t.id,
            "webhook",
            &url,
            allow_any,
        )
        .await
        .unwrap();
    }
    say(&app, &t, "anyone there?").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        hits.try_recv().is_err(),
        "the internal receiver was reached"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redirects_are_not_followed() {
    let (target, mut target_hits) = receiver(200, Duration::ZERO, None).await;
    let (redirector, mut redirector_hits) =
        receiver(307, Duration::ZERO, Some(format!("http://{target}/hook"))).await;
    let app = TestApp::with(|config| config.webhooks.allow_private = true).await;
    app.spawn().await;
    let t = thread(&app, "alice").await;
    connect_webhook(&app, &t, &format!("http://{redirector}/hook")).await;
    say(&app, &t, "follow me").await;
    within(
        Duration::from_secs(10),
        "the first delivery",
        redirector_hits.recv(),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        target_hits.try_recv().is_err(),
        "the redirect's target was posted to"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_receiver_delays_nobody_else() {
    let (slow, mut slow_hits) = receiver(200, Duration::from_secs(4), None).await;
    let (fast, mut fast_hits) = receiver(200, Duration::ZERO, None).await;
    let app = TestApp::with(|config| config.webhooks.allow_private = true).await;
    app.spawn().await;
    let mallory = thread(&app, "mallory").await;
    let alice = thread(&app, "alice").await;
    connect_webhook(&app, &mallory, &format!("http://{slow}/hook")).await;
    connect_webhook(&app, &alice, &format!("http://{fast}/hook")).await;
    for i in 0..4 {
        say(&app, &mallory, &format!("slow {i}")).await;
    }
    within(
        Duration::from_secs(5),
        "the slow receiver's first delivery",
        slow_hits.recv(),
    )
    .await;
    let sent = Instant::now();
    say(&app, &alice, "for alice").await;
    let received = within(
        Duration::from_secs(5),
        "alice's delivery behind mallory's slow receiver",
        fast_hits.recv(),
    )
    .await
    .unwrap();
    assert!(
        received.duration_since(sent) < Duration::from_secs(3),
        "alice waited {:?}",
        received.duration_since(sent)
    );
}

// ---- fair previews ----

/// An extraction worker that sleeps `seconds` before reading documents whose name contains
/// "slow", and counts its runs in `calls`; the real worker does the reading.
fn slow_worker(dir: &Path, seconds: u32) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("worker.sh");
    let calls = dir.join("calls");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nrequest=$(cat)\necho run >> '{calls}'\ncase \"$request\" in *slow*) sleep {seconds};; esac\n\
             printf '%s' \"$request\" | exec '{exe}' {worker}\n",
            calls = calls.display(),
            exe = support::ferry_exe(),
            worker = ferry_extract::WORKER_ARG,
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_users_preview_does_not_wait_behind_a_burst_of_slow_documents() {
    let scripts = tempfile::tempdir().unwrap();
    let (script, _) = slow_worker(scripts.path(), 4);
    let app = TestApp::with(|config| {
        config.app.extract = ferry_extract::ExtractorConfig::new(&script, Vec::<String>::new());
        config.app.extract.max_concurrent = 2;
        config.app.limits.preview_wait = Duration::from_secs(60);
    })
    .await;
    let mallory = thread(&app, "mallory").await;
    let alice = thread(&app, "alice").await;
    let docx = fixture("report.docx");
    let names: Vec<String> = (0..6).map(|i| format!("slow-{i}.docx")).collect();
    let burst = futures::future::join_all(
        names
            .iter()
            .map(|name| thread_support::upload_one(&app, &mallory, name, &docx)),
    );
    let quick = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let started = Instant::now();
        let upload = thread_support::upload_one(&app, &alice, "quick.docx", &docx).await;
        (upload, started.elapsed())
    };
    let (_, (upload, waited)) = tokio::join!(burst, quick);
    assert!(
        upload["preview"].as_str().is_some_and(|p| !p.is_empty()),
        "{upload}"
    );
    assert!(
        waited < Duration::from_secs(3),
        "alice waited {waited:?} behind mallory's burst"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_upload_waits_for_its_preview_only_so_long() {
    let scripts = tempfile::tempdir().unwrap();
    let (script, _) = slow_worker(scripts.path(), 30);
    let app = TestApp::with(|config| {
        config.app.extract = ferry_extract::ExtractorConfig::new(&script, Vec::<String>::new());
        config.app.limits.preview_wait = Duration::from_secs(1);
    })
    .await;
    let t = thread(&app, "alice").await;
    let started = Instant::now();
    let upload = thread_support::upload_one(&app, &t, "slow.docx", &fixture("report.docx")).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(upload["preview"].is_null());
    assert!(
        upload["previewError"]
            .as_str()
            .is_some_and(|e| e.contains("skipped")),
        "{upload}"
    );
    assert!(
        upload["attachmentXml"]
            .as_str()
            .unwrap()
            .contains("skipped")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_rendering_is_remembered_and_cache_entries_carry_no_names() {
    let scripts = tempfile::tempdir().unwrap();
    let (script, calls) = slow_worker(scripts.path(), 0);
    let app = TestApp::with(|config| {
        config.app.extract = ferry_extract::ExtractorConfig::new(&script, Vec::<String>::new());
    })
    .await;
    let runs = || {
        std::fs::read_to_string(&calls)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    let t = thread(&app, "mallory").await;
    put_file(&app, &t, "outputs/bomb.docx", &thread_support::docx_bomb()).await;
    let published = thread_support::publish(&app, &t, "/sandbox/outputs/bomb.docx", "Bomb").await;
    published.expect(201, None);
    let id = published.json()["id"].as_str().unwrap().to_owned();
    let preview = t.url(&format!("/published/{id}/preview"));
    let first = app.get(&preview, &t.user).await;
    first.expect(200, None);
    assert!(
        first.text().contains("could not be made"),
        "{}",
        first.text()
    );
    let after_first = runs();
    for _ in 0..3 {
        app.get(&preview, &t.user).await.expect(200, None);
    }
    assert_eq!(
        runs(),
        after_first,
        "a failed rendering is read from the cache"
    );

    // Alice and Bob publish the same bytes under names of their own: neither sees the other's.
    let alice = thread(&app, "alice").await;
    let bob = thread(&app, "bob").await;
    let mut names = Vec::new();
    for (t, name) in [(&alice, "alice-salary-review.md"), (&bob, "bob-notes.md")] {
        put_file(
            &app,
            t,
            &format!("outputs/{name}"),
            b"# Same words\n\nshared",
        )
        .await;
        let published =
            thread_support::publish(&app, t, &format!("/sandbox/outputs/{name}"), name).await;
        published.expect(201, None);
        let id = published.json()["id"].as_str().unwrap().to_owned();
        let html = app
            .get(&t.url(&format!("/published/{id}/preview")), &t.user)
            .await;
        html.expect(200, None);
        names.push(html.text());
    }
    assert!(!names[1].contains("alice"), "{}", names[1]);
    assert!(!names[0].contains("bob"), "{}", names[0]);
}

// ---- slow and idle clients ----

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn half_sent_requests_are_dropped_and_the_server_keeps_answering() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::with(|config| {
        config.connections.header_timeout = Duration::from_secs(1);
        config.connections.max_connections = 600;
    })
    .await;
    let addr = app.spawn().await;
    let mut slow = Vec::new();
    for _ in 0..500 {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .unwrap();
        slow.push(stream);
    }
    // The server still answers while they hang.
    let client = reqwest::Client::new();
    let health = within(
        Duration::from_secs(5),
        "/healthz during the flood",
        client.get(format!("http://{addr}/healthz")).send(),
    )
    .await
    .unwrap();
    assert_eq!(health.status(), 200);
    // And it hangs up on them once the header timeout passes.
    for stream in &mut slow {
        let mut buf = [0u8; 256];
        let read = within(
            Duration::from_secs(5),
            "the server closing a half-sent request",
            stream.read(&mut buf),
        )
        .await;
        assert!(
            matches!(read, Ok(0) | Err(_)) || buf.starts_with(b"HTTP/1.1 408"),
            "{read:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connections_past_the_bound_are_closed_at_once() {
    use tokio::io::AsyncReadExt;
    let app = TestApp::with(|config| {
        config.connections.max_connections = 20;
        config.connections.header_timeout = Duration::from_secs(30);
    })
    .await;
    let addr = app.spawn().await;
    let mut held = Vec::new();
    for _ in 0..20 {
        held.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut extra = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 16];
    let read = within(
        Duration::from_secs(5),
        "a connection past the bound being closed",
        extra.read(&mut buf),
    )
    .await;
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let health = reqwest::get(format!("http://{addr}/healthz"))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_body_that_stops_arriving_fails_the_request() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::with(|config| config.body_idle_timeout = Duration::from_secs(1)).await;
    let addr = app.spawn().await;
    let token = app.user("alice");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!(
                "PUT /api/spaces/notes/files/stalled.md HTTP/1.1\r\nHost: x\r\n\
                 Authorization: Bearer {token}\r\nContent-Type: text/markdown\r\n\
                 Content-Length: 100000\r\n\r\nonly the start"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = within(
        Duration::from_secs(10),
        "the answer to a stalled body",
        stream.read_to_end(&mut answer),
    )
    .await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("INVALID_REQUEST"), "{answer}");
    // Nothing was kept.
    app.get("/api/spaces/notes/files/stalled.md", &token)
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_principal_holds_a_bounded_number_of_event_streams() {
    let app = TestApp::with(|config| config.max_streams_per_principal = 3).await;
    let addr = app.spawn().await;
    let t = thread(&app, "alice").await;
    let client = reqwest::Client::new();
    let open = |token: String| {
        let client = client.clone();
        let url = format!("http://{addr}/api/threads/{}/events", t.id);
        async move { client.get(url).bearer_auth(token).send().await.unwrap() }
    };
    let mut streams = Vec::new();
    for _ in 0..3 {
        let stream = open(t.user.clone()).await;
        assert_eq!(stream.status(), 200);
        streams.push(stream);
    }
    let refused = open(t.user.clone()).await;
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "TOO_MANY_REQUESTS");
    // The agent of the thread is another principal, with a share of its own.
    assert_eq!(open(t.agent.clone()).await.status(), 200);
    // A closed stream frees its slot.
    drop(streams.pop());
    let mut reopened = None;
    for _ in 0..50 {
        let reply = open(t.user.clone()).await;
        if reply.status() == 200 {
            reopened = Some(reply);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(reopened.is_some(), "the slot was not freed");
}

// ---- leftovers and names ----

#[tokio::test]
async fn a_longest_name_uploaded_twice_gets_a_shortened_clash_name() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let name = format!("{}.txt", "n".repeat(251));
    assert_eq!(name.len(), 255);
    let first = thread_support::upload_one(&app, &t, &name, b"one").await;
    let second = thread_support::upload_one(&app, &t, &name, b"two").await;
    assert_eq!(
        first["sandboxPath"],
        format!("/sandbox/user_uploads/{name}")
    );
    let clash = second["sandboxPath"].as_str().unwrap();
    let segment = clash.rsplit('/').next().unwrap();
    assert!(segment.len() <= 255, "{segment}");
    assert!(segment.ends_with(" (1).txt"), "{segment}");
    let read = app
        .get(
            &t.url(&format!(
                "/sandbox/user_uploads/{}",
                thread_support::pct(segment)
            )),
            &t.agent,
        )
        .await;
    read.expect(200, None);
    assert_eq!(read.body, b"two");
}

#[tokio::test]
async fn an_uploads_folder_linked_outside_is_an_invalid_path() {
    let app = TestApp::new().await;
    let t = thread(&app, "mallory").await;
    let dir = sandbox_dir(&app, &t).await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::remove_dir(dir.join("user_uploads")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.join("user_uploads")).unwrap();
    let reply = thread_support::upload_as(&app, &t, &t.user, &[("a.txt", BIN, b"x")]).await;
    reply.expect(400, Some("INVALID_PATH"));
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());

    std::fs::remove_dir_all(dir.join(".ferry-tmp")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.join(".ferry-tmp")).unwrap();
    app.put(&t.url("/sandbox/outputs/x.txt"), &t.agent, BIN, b"x")
        .await
        .expect(400, Some("INVALID_PATH"));
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
}

#[tokio::test]
async fn the_sweep_clears_what_interrupted_sandbox_writes_left() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let tmp = sandbox_dir(&app, &t).await.join(".ferry-tmp");
    // What a write killed with the process leaves: a temporary file under a v7 name.
    let left = tmp.join(uuid::Uuid::now_v7().simple().to_string());
    std::fs::write(&left, vec![0u8; 4096]).unwrap();
    // Something an agent put there itself is not the sweep's to remove.
    std::fs::write(tmp.join("agent-notes"), b"mine").unwrap();
    ferry_app::upkeep::sweep(&app.state.app, Duration::from_secs(3600)).await;
    assert!(left.exists(), "a recent write may still be in progress");
    tokio::time::sleep(Duration::from_millis(5)).await;
    ferry_app::upkeep::sweep(&app.state.app, Duration::ZERO).await;
    assert!(!left.exists());
    assert!(tmp.join("agent-notes").exists());
}

// ---- shutdown ----

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_ends_open_event_streams_and_the_process_exits() {
    let data = tempfile::tempdir().unwrap();
    let mut server = support::binary::start(data.path(), &[("FERRY_DRAIN_TIMEOUT_SECS", "5")]);
    let addr = server.addr;
    support::binary::wait_healthy(addr).await;
    let user = support::binary::token(&["--user", "alice"]);
    let id = support::binary::create_thread(addr, &user).await;
    let mut stream = reqwest::Client::new()
        .get(format!("http://{addr}/api/threads/{id}/events"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .bytes_stream();
    let pid = rustix::process::Pid::from_raw(server.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let started = Instant::now();
    // The stream ends…
    within(Duration::from_secs(10), "the event stream ending", async {
        use futures::StreamExt;
        while let Some(Ok(_)) = stream.next().await {}
    })
    .await;
    // …and the process exits within the drain timeout.
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "ferry still runs 10 s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---- oversized MCP requests get an answer ----

/// A `write_space_file` call of `content_bytes` bytes, answered.
fn write_space_file(mcp: &mut StdioMcp, id: u32, content_bytes: usize) -> Value {
    mcp.send(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "write_space_file",
            "arguments": {
                "spaceName": "notes",
                "path": format!("big-{id}.md"),
                "content": "x".repeat(content_bytes),
                "contentType": "text/markdown"
            }
        }
    }));
    let answer = mcp.answer();
    assert_eq!(answer["id"], id, "{answer}");
    answer
}

fn error_code(answer: &Value) -> &str {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    answer["result"]["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no envelope: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oversized_mcp_requests_over_stdio_are_answered() {
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let t = thread(&app, "alice").await;
    let agent = t.agent.clone();
    tokio::task::spawn_blocking(move || {
        let mut mcp = StdioMcp::start(addr, &agent);
        // Over what `ferry mcp` reads: answered by it, without reaching the server.
        let huge = write_space_file(&mut mcp, 2, 20 * 1024 * 1024);
        assert_eq!(error_code(&huge), "REQUEST_TOO_LARGE");
        // Read, but over the server's space limit: the server's own answer comes back.
        for id in 3..6 {
            let large = write_space_file(&mut mcp, id, 6 * 1024 * 1024);
            assert_eq!(error_code(&large), "REQUEST_TOO_LARGE");
        }
        // The session goes on.
        let fine = write_space_file(&mut mcp, 9, 1024);
        assert_eq!(fine["result"]["isError"], false, "{fine}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_oversized_mcp_request_over_http_gets_the_envelope() {
    let app = TestApp::with(|config| config.app.limits.space_max_bytes = 64 * 1024).await;
    let addr = app.spawn().await;
    let t = thread(&app, "alice").await;
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "write_space_file", "arguments": { "content": "x".repeat(2 << 20) } }
    })
    .to_string();
    let client = reqwest::Client::new();
    let send = |chunked: bool| {
        let request = client
            .post(format!("http://{addr}/mcp"))
            .bearer_auth(&t.agent)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        let request = if chunked {
            let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body
                .as_bytes()
                .chunks(64 * 1024)
                .map(|c| Ok(c.to_vec()))
                .collect();
            request.body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        } else {
            request.body(body.clone())
        };
        request.send()
    };
    for chunked in [false, true] {
        let reply = send(chunked).await.unwrap();
        assert_eq!(reply.status(), 413, "chunked: {chunked}");
        let envelope: Value = reply.json().await.unwrap();
        assert_eq!(envelope["error"]["code"], "REQUEST_TOO_LARGE", "{envelope}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_upload_is_answered_not_cut_off() {
    // The answer comes before the body is read (the declared length is over the limit); the
    // rest of the body is read and dropped so the client sees the envelope, not a broken pipe.
    let app = TestApp::with(|config| config.app.limits.space_max_bytes = 1024 * 1024).await;
    let addr = app.spawn().await;
    let token = app.user("alice");
    let reply = reqwest::Client::new()
        .put(format!("http://{addr}/api/spaces/notes/files/big.bin"))
        .bearer_auth(&token)
        .header("content-type", "application/octet-stream")
        .body(vec![7u8; 32 * 1024 * 1024])
        .send()
        .await
        .expect("an answer, not a broken pipe");
    assert_eq!(reply.status(), 413);
    let envelope: Value = reply.json().await.unwrap();
    assert_eq!(envelope["error"]["code"], "REQUEST_TOO_LARGE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refusal_under_expect_continue_keeps_the_connection_in_step() {
    // A client that sends `Expect: 100-continue` and, answered without a `100 Continue`, keeps
    // the connection without sending its body (boto3 does) must find its next request read as
    // a request: the server asks for the refused body (100 Continue) and drops it first.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let token = app.user("alice");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "PUT /api/spaces/notes/files/a%2F..%2Fb HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: text/plain\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    // Read until a final answer's body ends; send the body only if asked for it.
    while !seen.contains("INVALID_PATH") {
        let n = within(
            Duration::from_secs(10),
            "an answer",
            stream.read(&mut buffer),
        )
        .await
        .unwrap();
        assert!(n > 0, "closed before answering: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        if seen.starts_with("HTTP/1.1 100") && !seen.contains("hello") {
            stream.write_all(b"hello").await.unwrap();
            seen.push_str("hello");
        }
    }
    assert!(seen.contains("HTTP/1.1 400"), "{seen}");
    // The same connection, next request: answered as itself.
    stream
        .write_all(
            format!(
                "GET /api/spaces/notes/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut next = String::new();
    while !next.contains("\"files\"") {
        let n = within(
            Duration::from_secs(10),
            "the next answer",
            stream.read(&mut buffer),
        )
        .await
        .unwrap();
        assert!(n > 0, "closed: {next}");
        next.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
    assert!(next.starts_with("HTTP/1.1 200"), "{next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_declared_length_beyond_what_is_drained_is_refused_at_once() {
    // Over the limit by its declaration, and larger than the server would read and drop: the
    // answer does not wait for a body that is not coming.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::new().await;
    let addr = app.spawn().await;
    let token = app.user("alice");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "PUT /api/spaces/notes/files/big.bin HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        1u64 << 30
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    within(
        Duration::from_secs(5),
        "the refusal",
        stream.read_to_end(&mut answer),
    )
    .await
    .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}
