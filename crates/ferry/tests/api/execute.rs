//! Commands in the thread's sandbox (docs/reference/execute.md) through
//! `POST /api/threads/{id}/execute`: who may run them, what bad input gets, what the person and
//! the other doors see afterwards, and that a command's leftovers reach nothing outside.
//! Without bubblewrap the tests that run a command say loudly that they were skipped.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ferry_app::{BubblewrapSettings, ExecLimits, ExecRuntime, ExecuteSettings, NetworkPolicy};
use serde_json::{Value, json};

use crate::support::{Reply, TestApp, ferry_exe};
use crate::thread_support::{Thread, put_file, stored_events, thread, upload_one};

/// A server that runs commands with `limits`, or `None` (skipped) without bubblewrap.
async fn app_with(limits: ExecLimits) -> Option<TestApp> {
    app_in(limits, NetworkPolicy::default()).await
}

/// The same, whose commands may reach what `network` allows.
async fn app_in(limits: ExecLimits, network: NetworkPolicy) -> Option<TestApp> {
    let bwrap = crate::support::peers::bwrap()?;
    let app = TestApp::with(|c| {
        c.app.execute = ExecuteSettings::Bubblewrap(Box::new(BubblewrapSettings {
            bwrap,
            helper: PathBuf::from(ferry_exe()),
            runtime: ExecRuntime::Host,
            limits,
            cgroup: None,
            network,
        }));
    })
    .await;
    let (availability, _) = app.state.app.command_availability();
    assert!(availability.is_on(), "{:?}", availability.why_not());
    Some(app)
}

async fn app() -> Option<TestApp> {
    app_with(ExecLimits::default()).await
}

async fn execute(app: &TestApp, t: &Thread, token: &str, body: Value) -> Reply {
    app.post_json(&t.url("/execute"), token, body).await
}

/// Runs `body` as the thread's agent on a task of its own, through the use case, while the
/// test goes on.
fn execute_meanwhile(
    app: &TestApp,
    t: &Thread,
    body: Value,
) -> tokio::task::JoinHandle<ferry_app::Result<ferry_app::execute::ExecuteResult>> {
    let (state, t) = (app.state.clone(), t.clone());
    tokio::spawn(async move {
        let principal = ferry_app::Principal::Agent {
            sub: t.owner.clone(),
            thread: t.id.clone(),
            agent_id: "agent".to_owned(),
        };
        let input: ferry_core::execute::ExecuteInput = serde_json::from_value(body).unwrap();
        ferry_app::execute::execute(&state.app, &principal, &t.id, &input).await
    })
}

#[tokio::test]
async fn an_agent_runs_code_beside_the_files_and_everyone_sees_what_it_changed() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    upload_one(&app, &t, "q3.csv", b"fruit,n\napple,3\nbanana,5\n").await;
    put_file(&app, &t, "workspace/old.txt", b"scratch").await;
    let reply = execute(
        &app,
        &t,
        &t.agent,
        json!({ "command": "wc -l < /sandbox/user_uploads/q3.csv; \
                 printf 'total 8\\n' > /sandbox/outputs/sum.txt; rm old.txt; echo oops >&2" }),
    )
    .await;
    reply.expect(200, None);
    let result = reply.json();
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["output"], "3\noops\n");
    assert_eq!(result["truncated"], false);
    assert_eq!(result["timedOut"], false);
    assert_eq!(result["outputBytes"], 7);
    assert!(result["durationMs"].as_u64().is_some());

    // The file it wrote is read at once through the HTTP door, with the etag its event told.
    let read = app.get(&t.url("/sandbox/outputs/sum.txt"), &t.user).await;
    read.expect(200, None);
    assert_eq!(read.text(), "total 8\n");
    let events = stored_events(&app, &t, &t.user).await;
    let written = events
        .iter()
        .find(|e| e["type"] == "file_written" && e["path"] == "/sandbox/outputs/sum.txt")
        .expect("the command's new file is told");
    assert_eq!(written["door"], "command");
    assert_eq!(written["etag"].as_str(), read.header("etag"));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "file_deleted" && e["path"] == "/sandbox/workspace/old.txt")
    );
    // The person sees what ran, last.
    let ran = events.last().unwrap();
    assert_eq!(ran["type"], "command_executed");
    assert_eq!(ran["role"], "agent");
    assert_eq!(ran["exitCode"], 0);
    assert_eq!(ran["cwd"], "/sandbox/workspace");
    assert_eq!(ran["output"], "3\noops\n");
    assert!(ran["command"].as_str().unwrap().starts_with("wc -l"));
    // The upload itself is unchanged.
    let upload = app
        .get(&t.url("/sandbox/user_uploads/q3.csv"), &t.user)
        .await;
    assert_eq!(upload.text(), "fruit,n\napple,3\nbanana,5\n");
}

#[tokio::test]
async fn only_the_threads_agent_runs_commands() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    let body = json!({ "command": "true" });
    execute(&app, &t, &t.user, body.clone())
        .await
        .expect(403, Some("FORBIDDEN"));
    execute(&app, &t, &app.user("bob"), body.clone())
        .await
        .expect(404, Some("NOT_FOUND"));
    let other = thread(&app, "ann").await;
    execute(&app, &t, &other.agent, body.clone())
        .await
        .expect(404, Some("NOT_FOUND"));
    execute(&app, &t, &app.service(None), body)
        .await
        .expect(200, None);
}

#[tokio::test]
async fn bad_input_gets_a_clear_answer_and_runs_nothing() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    let agent = &t.agent;
    execute(&app, &t, agent, json!({ "command": "  " }))
        .await
        .expect_invalid("command is empty");
    execute(&app, &t, agent, json!({ "command": "echo a\u{0}b" }))
        .await
        .expect_invalid("NUL");
    let long = "x".repeat(1_000_000);
    execute(&app, &t, agent, json!({ "command": long }))
        .await
        .expect(413, Some("REQUEST_TOO_LARGE"));
    execute(&app, &t, agent, json!({ "command": "true", "timeout": 0 }))
        .await
        .expect_invalid("give 1 to 900 seconds");
    execute(
        &app,
        &t,
        agent,
        json!({ "command": "true", "timeout": 100000 }),
    )
    .await
    .expect_invalid("give 1 to 900 seconds");
    execute(&app, &t, agent, json!({ "command": "true", "cwd": "/etc" }))
        .await
        .expect(400, Some("INVALID_PATH"));
    execute(
        &app,
        &t,
        agent,
        json!({ "command": "true", "cwd": "../../.." }),
    )
    .await
    .expect(400, Some("INVALID_PATH"));
    execute(
        &app,
        &t,
        agent,
        json!({ "command": "true", "cwd": "/sandbox/nowhere" }),
    )
    .await
    .expect(404, Some("NOT_FOUND"));
    execute(
        &app,
        &t,
        agent,
        json!({ "command": "true", "shell": "bash" }),
    )
    .await
    .expect(400, Some("INVALID_REQUEST"));
    // None of these ran: the thread has no command event.
    let events = stored_events(&app, &t, &t.user).await;
    assert!(!events.iter().any(|e| e["type"] == "command_executed"));
    // A folder of the sandbox is a working folder.
    let here = execute(
        &app,
        &t,
        agent,
        json!({ "command": "pwd", "cwd": "/sandbox/outputs" }),
    )
    .await;
    assert_eq!(here.json()["output"], "/sandbox/outputs\n");
}

#[tokio::test]
async fn one_command_runs_at_a_time_in_a_thread() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    let first = execute_meanwhile(&app, &t, json!({ "command": "sleep 2" }));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = execute(&app, &t, &t.agent, json!({ "command": "true" })).await;
    second.expect(429, Some("TOO_MANY_REQUESTS"));
    assert_eq!(second.header("retry-after"), Some("1"));
    assert!(first.await.unwrap().is_ok());
    // Another thread was never held up.
    let other = thread(&app, "ann").await;
    execute(&app, &other, &other.agent, json!({ "command": "true" }))
        .await
        .expect(200, None);
    execute(&app, &t, &t.agent, json!({ "command": "true" }))
        .await
        .expect(200, None);
}

#[tokio::test]
async fn turned_off_commands_answer_not_implemented() {
    let app = TestApp::new().await;
    let t = thread(&app, "ann").await;
    let reply = execute(&app, &t, &t.agent, json!({ "command": "true" })).await;
    reply.expect(501, Some("NOT_IMPLEMENTED"));
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("turned off")
    );
    let limits = app.get("/api/limits", &t.agent).await.json();
    assert_eq!(limits["execute"]["enabled"], false);
}

#[tokio::test]
async fn the_output_streams_while_the_command_runs() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    let reply = app
        .send(
            "POST",
            &t.url("/execute"),
            Some(&t.agent),
            &[
                ("content-type", "application/json"),
                ("accept", "text/event-stream"),
            ],
            json!({ "command": "echo one; sleep 0.3; echo two; exit 4" }).to_string(),
        )
        .await;
    reply.expect(200, None);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let text = reply.text();
    assert!(
        text.contains("event: output\ndata: {\"text\":\"one\\n\"}"),
        "{text}"
    );
    let result_at = text.find("event: result").expect("the result comes last");
    assert!(text[..result_at].contains("two"), "{text}");
    let data = text[result_at..]
        .lines()
        .nth(1)
        .unwrap()
        .strip_prefix("data: ")
        .unwrap();
    let result: Value = serde_json::from_str(data).unwrap();
    assert_eq!(result["exitCode"], 4);
    assert_eq!(result["output"], "one\ntwo\n");
}

#[tokio::test]
async fn a_command_past_its_timeout_is_stopped_and_said() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    let started = Instant::now();
    let reply = execute(
        &app,
        &t,
        &t.agent,
        json!({ "command": "echo begun; sleep 60", "timeout": 1 }),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(15));
    let result = reply.json();
    assert_eq!(result["timedOut"], true, "{result}");
    assert_eq!(result["exitCode"], Value::Null);
    assert_eq!(result["stoppedBy"], "timeout");
    assert!(result["output"].as_str().unwrap().starts_with("begun\n"));
    let events = stored_events(&app, &t, &t.user).await;
    assert_eq!(events.last().unwrap()["timedOut"], true);
}

#[tokio::test]
async fn a_client_that_goes_away_ends_the_command() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    let addr = app.spawn().await;
    let body = json!({ "command": "sleep 417; echo never" }).to_string();
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        t.url("/execute"),
        t.agent,
        body.len()
    );
    {
        use tokio::io::AsyncWriteExt;
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        socket.write_all(request.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert!(process_runs("sleep 417"), "the command started");
    }
    // The connection is closed: the command and its processes go, and the thread may run
    // another at once.
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_runs("sleep 417") {
        assert!(Instant::now() < deadline, "the command outlived its client");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let next = execute(&app, &t, &t.agent, json!({ "command": "true" })).await;
        if next.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "{}", next.text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn process_runs(needle: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| {
            String::from_utf8_lossy(&c)
                .replace('\0', " ")
                .contains(needle)
        })
}

#[tokio::test]
async fn links_fifos_and_hard_links_left_by_a_command_reach_nothing_through_the_doors() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    put_file(&app, &t, "workspace/mine.txt", b"mine").await;
    let planted = execute(
        &app,
        &t,
        &t.agent,
        json!({ "command": "ln -s /etc/passwd passwd; ln -s ../../../../../../etc/hostname up; \
                 ln -s /sandbox/workspace/mine.txt inside; mkfifo pipe; ln mine.txt twin; \
                 ln -s nowhere dangling" }),
    )
    .await;
    planted.expect(200, None);
    for name in ["passwd", "up", "pipe", "twin", "dangling"] {
        let read = app
            .get(&t.url(&format!("/sandbox/workspace/{name}")), &t.agent)
            .await;
        assert!(
            matches!(read.status.as_u16(), 400 | 404),
            "{name}: {} {}",
            read.status,
            read.text()
        );
        let through_fs = app
            .post_json(
                &t.url("/fs/read_file"),
                &t.agent,
                json!({ "path": format!("/sandbox/workspace/{name}") }),
            )
            .await;
        assert!(
            matches!(through_fs.status.as_u16(), 400 | 404),
            "{name}: {}",
            through_fs.text()
        );
        let write = app
            .put(
                &t.url(&format!("/sandbox/workspace/{name}")),
                &t.agent,
                "text/plain",
                b"over",
            )
            .await;
        if name == "passwd" || name == "up" {
            assert!(write.status.as_u16() >= 400, "{name}: {}", write.text());
        }
    }
    // Nothing outside changed, and the listing still answers.
    assert_ne!(std::fs::read_to_string("/etc/passwd").unwrap(), "over");
    app.get(&t.url("/sandbox?recursive=true"), &t.agent)
        .await
        .expect(200, None);
}

#[tokio::test]
async fn the_limits_say_whether_commands_run() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    let limits = app.get("/api/limits", &t.agent).await.json();
    let execute = &limits["execute"];
    assert_eq!(execute["enabled"], true, "{limits}");
    assert_eq!(execute["defaultTimeoutSeconds"], 120);
    assert_eq!(execute["maxTimeoutSeconds"], 900);
    assert_eq!(execute["memoryBytes"], 2u64 * 1024 * 1024 * 1024);
    assert_eq!(execute["processes"], 256);
    assert_eq!(execute["outputBytes"], 1024 * 1024);
    // No host is allowed by default: commands have no network.
    assert_eq!(execute["allowedHosts"], json!([]));
}

#[tokio::test]
async fn with_allowed_hosts_the_proxy_answers_and_never_reaches_ferry_itself() {
    let network = NetworkPolicy {
        allowed: ["pypi.org", "*.pythonhosted.org", "127.0.0.1:8080"]
            .iter()
            .map(|h| h.parse().unwrap())
            .collect(),
        own_ports: Vec::new(),
    };
    let Some(app) = app_in(ExecLimits::default(), network).await else {
        return;
    };
    let t = thread(&app, "ann").await;
    let limits = app.get("/api/limits", &t.agent).await.json();
    assert_eq!(
        limits["execute"]["allowedHosts"],
        json!(["pypi.org", "*.pythonhosted.org", "127.0.0.1:8080"])
    );
    // The host's loopback (where ferry listens), even when listed, is refused by the proxy,
    // before any traffic: the command reads why.
    let port = 8080;
    let script = format!(
        "import os, socket\n\
         s = socket.create_connection(('127.0.0.1', 3128))\n\
         s.sendall(b'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n')\n\
         print(os.environ['https_proxy'], s.recv(4096).decode())\n"
    );
    let reply = execute(
        &app,
        &t,
        &t.agent,
        json!({"command": format!("python3 -c \"{script}\"")}),
    )
    .await;
    let body = reply.expect(200, None).json();
    let output = body["output"].as_str().unwrap();
    assert!(output.contains("http://127.0.0.1:3128"), "{output}");
    assert!(output.contains("403 Forbidden"), "{output}");
    assert!(
        output.contains("127.0.0.1 resolves to 127.0.0.1, a loopback address"),
        "{output}"
    );
}

#[tokio::test]
async fn other_users_keep_working_while_a_thread_runs_bombs() {
    let Some(app) = app_with(ExecLimits {
        processes: 64,
        memory_bytes: 256 * 1024 * 1024,
        sandbox_bytes: 64 * 1024 * 1024,
        ..ExecLimits::default()
    })
    .await
    else {
        return;
    };
    let t = thread(&app, "mallory").await;
    let bombs = execute_meanwhile(
        &app,
        &t,
        json!({
            "command": "bomb() { bomb | bomb & }; bomb & \
                        python3 -c 'x=[]\nwhile 1: x.append(bytearray(1<<24))' & \
                        (i=0; while true; do i=$((i+1)); head -c 4000000 /dev/zero > f$i; done) & \
                        sleep 60",
            // The command outlives its time: a limit stops it first, or the timeout does, however
            // slowly a loaded machine lets the bombs grow.
            "timeout": 8
        }),
    );
    // Meanwhile another person writes and reads their notes, every one of them answered.
    let ann = app.user("ann");
    for i in 0..20 {
        let path = format!("/api/spaces/notes/files/n{i}.md");
        app.put(&path, &ann, "text/markdown", b"# note")
            .await
            .expect(201, None);
        assert_eq!(app.get(&path, &ann).await.text(), "# note");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ran = bombs
        .await
        .unwrap()
        .expect("the bombs' command ends with an answer");
    // A limit stopped it, or the timeout did; or the process limit left its own shell unable
    // to start `sleep` (the bomb can fill it first), so it ended by itself, saying so.
    assert!(
        ran.stopped_by.is_some()
            || ran.timed_out
            || ran.output.contains("reached its limit of 64 processes"),
        "{ran:?}"
    );
}

#[tokio::test]
async fn a_deleted_upload_folder_or_a_link_in_its_place_never_binds_the_host() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    let dir = crate::thread_support::sandbox_dir(&app, &t).await;
    std::fs::remove_dir_all(dir.join("user_uploads")).unwrap();
    std::os::unix::fs::symlink("/", dir.join("user_uploads")).unwrap();
    let reply = execute(
        &app,
        &t,
        &t.agent,
        json!({ "command": "ls /sandbox/user_uploads" }),
    )
    .await;
    // Refused as the server's failure to set the command up; the host's root is never shown.
    assert!(!reply.text().contains("proc"), "{}", reply.text());
    assert!(reply.status.as_u16() >= 400, "{}", reply.text());
}

#[tokio::test]
async fn a_command_reaches_neither_the_data_folder_nor_the_servers_port() {
    let Some(app) = app().await else { return };
    let t = thread(&app, "ann").await;
    let addr = app.spawn().await;
    let data = app.dir.path().display().to_string();
    let script = format!(
        "import socket\n\
         for host in ('127.0.0.1', 'localhost'):\n\
         \x20   try:\n\
         \x20       socket.create_connection((host, {port}), timeout=2)\n\
         \x20       print(host, 'reached')\n\
         \x20   except OSError as e:\n\
         \x20       print(host, 'refused:', e.__class__.__name__)\n",
        port = addr.port()
    );
    put_file(&app, &t, "workspace/probe.py", script.as_bytes()).await;
    let reply = execute(
        &app,
        &t,
        &t.agent,
        json!({ "command": format!("python3 probe.py; ls {data} 2>&1; ls {data}/sandboxes 2>&1") }),
    )
    .await;
    let output = reply.json()["output"].as_str().unwrap().to_owned();
    assert!(!output.contains("reached"), "{output}");
    assert_eq!(output.matches("refused").count(), 2, "{output}");
    assert_eq!(
        output.matches("No such file or directory").count(),
        2,
        "{output}"
    );
}
