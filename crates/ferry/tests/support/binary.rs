//! Starting the real `ferry` binary in a temporary data directory.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{SECRET, ferry_exe};

pub struct Running {
    pub child: Child,
    pub addr: SocketAddr,
    /// Every line the server wrote to standard error so far.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `ferry serve` on 127.0.0.1:0 and waits until it says where it listens.
pub fn start(data: &Path, extra_env: &[(&str, &str)]) -> Running {
    let mut command = Command::new(ferry_exe());
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(data)
        .env("FERRY_JWT_SECRET", SECRET)
        .env("FERRY_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        // An empty value removes the variable: `("FERRY_LOG", "")` runs the server with its own
        // default log filter.
        if v.is_empty() {
            command.env_remove(k);
        } else {
            command.env(k, v);
        }
    }
    let mut child = command.spawn().expect("the ferry binary starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            // The start line: `ferry is listening version=… addr=127.0.0.1:PORT url=…`, or
            // its JSON form with `"addr":"127.0.0.1:PORT"` among the fields.
            let addr = match serde_json::from_str::<serde_json::Value>(&line) {
                Ok(json) => json["fields"]["addr"].as_str().map(str::to_owned),
                Err(_) => line
                    .split(" addr=")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .map(str::to_owned),
            };
            if let Some(addr) = addr {
                let _ = tx.send(addr);
            }
            kept.lock().unwrap().push(line);
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("ferry printed its address")
        .parse()
        .unwrap();
    Running { child, addr, log }
}

/// A user token signed with the test secret, minted by the binary itself.
pub fn token(args: &[&str]) -> String {
    let out = Command::new(ferry_exe())
        .arg("token")
        .args(args)
        .env("FERRY_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

pub async fn wait_healthy(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(r) = reqwest::get(format!("http://{addr}/healthz")).await
            && r.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("ferry did not become healthy");
}

/// Creates a thread as `token` on the server at `addr`; returns its id.
pub async fn create_thread(addr: SocketAddr, token: &str) -> String {
    let created: serde_json::Value = reqwest::Client::new()
        .post(format!("http://{addr}/api/threads"))
        .bearer_auth(token)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created["id"]
        .as_str()
        .expect("the answer has the thread's id")
        .to_owned()
}
