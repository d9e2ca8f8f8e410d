//! `ferry mcp` on pipes, spoken to line by line as an MCP client would.

use serde_json::Value;
use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

pub struct StdioMcp {
    child: Child,
    input: ChildStdin,
    /// The lines `ferry mcp` writes, read on a thread of their own: a test that waits in vain
    /// fails after its timeout instead of waiting on a read that never returns.
    lines: Receiver<String>,
}

impl StdioMcp {
    /// `ferry mcp` acting on the server at `addr` with `token`, before any message: a client of
    /// protocol 2026-07-28 sends none first.
    pub fn spawn(addr: SocketAddr, token: &str) -> StdioMcp {
        let mut child = Command::new(super::ferry_exe())
            .args(["mcp", "--url", &format!("http://{addr}")])
            .env("FERRY_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let output = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in output.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdioMcp {
            input: child.stdin.take().unwrap(),
            lines,
            child,
        }
    }

    /// As [`StdioMcp::spawn`], then initialized as a client of 2025-06-18 is.
    pub fn start(addr: SocketAddr, token: &str) -> StdioMcp {
        let mut mcp = StdioMcp::spawn(addr, token);
        mcp.send(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "ferry-tests", "version": "0" }
            }
        }));
        assert_eq!(mcp.answer()["id"], 1);
        mcp.send(&serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        mcp
    }

    pub fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.input.write_all(&line).unwrap();
        self.input.flush().unwrap();
    }

    /// The next line `ferry mcp` writes, within 30 s.
    pub fn answer(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("ferry mcp answered within 30 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }
}

impl Drop for StdioMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
