//! The examples in `examples/` run end to end against the real binary: the scripted agent that
//! summarizes a CSV, and the LangGraph agent that loads ferry's tools through
//! langchain-mcp-adapters (over streamable HTTP and over `ferry mcp` on stdio).

use crate::python;
use crate::support;
use crate::support::binary;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

fn example(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(path)
}

/// A user, their new thread, and an agent token for it, on the server at `url`.
struct Thread {
    http: reqwest::Client,
    url: String,
    user: String,
    id: String,
    agent: String,
}

impl Thread {
    async fn new(url: &str, title: &str) -> Thread {
        let http = reqwest::Client::new();
        let user = binary::token(&["--user", "example-user"]);
        let created: Value = http
            .post(format!("{url}/api/threads"))
            .bearer_auth(&user)
            .json(&json!({ "title": title }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = created["id"].as_str().unwrap().to_owned();
        let minted: Value = http
            .post(format!("{url}/api/threads/{id}/agent-token"))
            .bearer_auth(&user)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        Thread {
            agent: minted["token"].as_str().unwrap().to_owned(),
            http,
            url: url.to_owned(),
            user,
            id,
        }
    }

    async fn upload_csv(&self, name: &str, csv: &str) -> Value {
        self.upload(name, "text/csv", csv.as_bytes().to_vec()).await
    }

    async fn upload(&self, name: &str, content_type: &str, bytes: Vec<u8>) -> Value {
        let reply = self
            .http
            .post(format!(
                "{}/api/threads/{}/uploads?filename={name}",
                self.url, self.id
            ))
            .bearer_auth(&self.user)
            .header("content-type", content_type)
            .body(bytes)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status().as_u16(), 201);
        reply.json::<Value>().await.unwrap()["uploads"][0].clone()
    }

    async fn say_as_user(&self, text: &str, uploads: &[&str]) {
        let reply = self
            .http
            .post(format!("{}/api/threads/{}/messages", self.url, self.id))
            .bearer_auth(&self.user)
            .json(&json!({ "text": text, "uploadIds": uploads }))
            .send()
            .await
            .unwrap();
        assert!(
            reply.status().is_success(),
            "{}",
            reply.text().await.unwrap()
        );
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.user)
            .send()
            .await
            .unwrap()
    }

    async fn events(&self) -> Vec<Value> {
        self.get(&format!(
            "/api/threads/{}/events?after=0&format=json",
            self.id
        ))
        .await
        .json()
        .await
        .unwrap()
    }
}

const SALES: &str = "region,q1,q2\nNorth,125000,132000\nSouth,98000,101000\nEast,50000,72000\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_agent_summarizes_an_uploaded_csv() {
    let Some(python) = python::with_modules(
        "the scripted agent example",
        &["httpx", "mcp", "mcp.client.streamable_http"],
    ) else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let server = binary::start(data.path(), &[]);
    let url = format!("http://{}", server.addr);
    let thread = Thread::new(&url, "numbers").await;
    let upload = thread.upload_csv("sales.csv", SALES).await;
    // Asked before the agent starts: it picks up what was said since it last spoke.
    thread
        .say_as_user(
            "Could you give me a summary of these numbers?",
            &[upload["id"].as_str().unwrap()],
        )
        .await;
    let out = python::run(
        &python,
        &example("scripted-agent/agent.py"),
        &["--once"],
        &[("FERRY_URL", &url), ("FERRY_TOKEN", &thread.agent)],
        Duration::from_secs(120),
    )
    .await;
    assert!(out.contains("published sales-summary.md"), "{out}");

    let events = thread.events().await;
    let published = events
        .iter()
        .find(|e| e["type"] == "file_published")
        .unwrap_or_else(|| panic!("no file_published event: {events:?}"));
    assert_eq!(published["file"]["filename"], "sales-summary.md");
    assert_eq!(
        published["file"]["sandbox_path"],
        "/sandbox/outputs/sales-summary.md"
    );
    let sent = events
        .iter()
        .find(|e| e["type"] == "file_send")
        .unwrap_or_else(|| panic!("no file_send event: {events:?}"));
    let summary = sent["fileContents"]["content"].as_str().unwrap();
    assert!(summary.starts_with("# Summary of sales.csv"), "{summary}");
    assert!(summary.contains("3 rows × 3 columns"), "{summary}");
    assert!(
        summary.contains("| q2 | 72,000.00 | 132,000.00 | 101,666.67 | 305,000.00 |"),
        "{summary}"
    );
    let reply = events.last().unwrap();
    assert_eq!(reply["type"], "message");
    assert_eq!(reply["role"], "agent");

    // The published copy is the summary the user was sent.
    let pid = published["file"]["id"].as_str().unwrap();
    let content = thread
        .get(&format!(
            "/api/threads/{}/published/{pid}/content",
            thread.id
        ))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(content, summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_langgraph_agent_uses_ferrys_tools_over_both_transports() {
    let Some(python) = python::with_modules(
        "the LangGraph example",
        &["langgraph", "langchain_mcp_adapters", "langchain_core"],
    ) else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let server = binary::start(data.path(), &[]);
    let url = format!("http://{}", server.addr);
    let thread = Thread::new(&url, "notes").await;
    let sheet = thread.upload_csv("sales.csv", SALES).await;
    // A picture wider than vision models take: the model must be shown it scaled.
    let chart = thread
        .upload(
            "chart.png",
            "image/png",
            ferry_test_support::documents::png(2000, 1000),
        )
        .await;
    let ids = [&sheet["id"], &chart["id"]].map(|id| id.as_str().unwrap());
    thread.say_as_user("Notes on these, please.", &ids).await;
    let script = example("langgraph-agent/agent.py");
    let env = [("FERRY_URL", url.as_str()), ("FERRY_TOKEN", &thread.agent)];

    let first = python::run(
        &python,
        &script,
        &["--stamp", "20261121-0930"],
        &env,
        Duration::from_secs(120),
    )
    .await;
    assert!(
        first.contains("ai: Done: ideas/20261121-0930-sales-notes.md"),
        "{first}"
    );
    // The user's message reached the model as content blocks: its text, the picture as an
    // image block (scaled to a long edge of 1,568 px), each upload's note.
    assert!(
        first.contains("the model is shown chart.png (image/png, 1568x784)"),
        "{first}"
    );
    assert!(
        first.contains("human: [text, text, image, text]"),
        "{first}"
    );
    // The same run again, through `ferry mcp` on stdio: the create-only write now meets the
    // first note, gets ALREADY_EXISTS back as a tool error, and the agent picks a new name.
    let second = python::run(
        &python,
        &script,
        &[
            "--stamp",
            "20261121-0930",
            "--transport",
            "stdio",
            "--ferry",
            support::ferry_exe(),
        ],
        &env,
        Duration::from_secs(120),
    )
    .await;
    assert!(second.contains("ALREADY_EXISTS"), "{second}");
    assert!(
        second.contains("ai: Done: ideas/20261121-0930-sales-notes-2.md"),
        "{second}"
    );

    let listed: Value = thread
        .get("/api/spaces/notes/files?dir=ideas")
        .await
        .json()
        .await
        .unwrap();
    let paths: Vec<&str> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "ideas/20261121-0930-sales-notes-2.md",
            "ideas/20261121-0930-sales-notes.md"
        ]
    );
    let note = thread
        .get("/api/spaces/notes/files/ideas/20261121-0930-sales-notes.md")
        .await
        .text()
        .await
        .unwrap();
    assert!(note.starts_with("# Notes on sales.csv"), "{note}");
    assert!(note.contains("North"), "{note}");

    let said: Vec<String> = thread
        .events()
        .await
        .into_iter()
        .filter(|e| e["type"] == "message" && e["role"] == "agent")
        .map(|e| e["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        said,
        [
            "I saved notes on sales.csv as ideas/20261121-0930-sales-notes.md in your notes space. \
             I also looked at chart.png (image/png, 1568x784).",
            "I saved notes on sales.csv as ideas/20261121-0930-sales-notes-2.md in your notes space. \
             I also looked at chart.png (image/png, 1568x784)."
        ]
    );
}

/// Every file the README's walk-through sends (`-F "file=@$REPO/PATH"`, `--data-binary @PATH`)
/// is in the repository, so a newcomer's first upload does not fail on a missing file.
#[test]
fn the_readme_walkthrough_sends_files_that_exist() {
    let root = example("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let sent: Vec<&str> = readme
        .split('@')
        .skip(1)
        .filter_map(|rest| rest.split(['"', ' ', '\n', '\'']).next())
        .map(|path| path.strip_prefix("$REPO/").unwrap_or(path))
        .filter(|path| path.contains('/') || path.contains('.'))
        .filter(|path| !path.is_empty())
        .collect();
    assert!(
        sent.contains(&"examples/files/quarterly_report.xlsx"),
        "{sent:?}"
    );
    for path in sent {
        assert!(
            root.join(path).is_file(),
            "the README sends {path}, which is missing"
        );
    }
}
