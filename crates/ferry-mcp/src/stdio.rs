//! MCP over stdin/stdout with an answer for every request, even one that is too large.
//!
//! The SDK's own stdio transport drops a line longer than its limit and answers nothing, so a
//! client that sent a 20 MiB `write_space_file` waits for its own timeout. Here lines are read
//! with a limit too, but a line over it is scanned (not kept) for its `id` and `method` while
//! it is skipped, and answered: a `tools/call` gets a tool result with `isError: true` and the
//! `REQUEST_TOO_LARGE` envelope, exactly as the server answers an oversized request over
//! HTTP; any other request gets a JSON-RPC error. A line that is not JSON-RPC gets the
//! JSON-RPC parse error.

use ferry_core::error_code::ErrorCode;
use futures::channel::mpsc as fmpsc;
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The transport halves to hand to `rmcp::serve_server`, fed from `input` and writing to
/// `output`, with lines longer than `max_line` answered rather than read.
pub fn transport<R, W>(
    input: R,
    output: W,
    max_line: usize,
) -> (
    fmpsc::Sender<TxJsonRpcMessage<RoleServer>>,
    fmpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
)
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (lines_tx, lines_rx) = mpsc::channel::<String>(64);
    let (out_tx, mut out_rx) = fmpsc::channel::<TxJsonRpcMessage<RoleServer>>(64);
    let (in_tx, in_rx) = fmpsc::channel::<RxJsonRpcMessage<RoleServer>>(64);

    // The one writer of the output: the SDK's messages and this module's own answers.
    tokio::spawn(write_lines(output, lines_rx));
    let forward = lines_tx.clone();
    tokio::spawn(async move {
        use futures::StreamExt;
        while let Some(message) = out_rx.next().await {
            match serde_json::to_string(&message) {
                Ok(line) => {
                    if forward.send(line).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::error!(error = %e, "an MCP message could not be written"),
            }
        }
    });
    tokio::spawn(read_lines(input, max_line, in_tx, lines_tx));
    (out_tx, in_rx)
}

async fn write_lines<W: AsyncWrite + Unpin>(mut output: W, mut lines: mpsc::Receiver<String>) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

async fn read_lines<R: AsyncBufRead + Unpin>(
    mut input: R,
    max_line: usize,
    mut to_sdk: fmpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    answers: mpsc::Sender<String>,
) {
    use futures::SinkExt;
    loop {
        let line = match read_line(&mut input, max_line).await {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) => return,
        };
        let reply = match line {
            Line::Complete(bytes) => {
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&bytes) {
                    Ok(message) => {
                        if to_sdk.send(message).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Err(e) => parse_error(&e.to_string()),
                }
            }
            Line::TooLong(head) => too_large(&head, max_line),
        };
        if let Some(reply) = reply
            && answers.send(reply).await.is_err()
        {
            return;
        }
    }
}

/// One line of input.
enum Line {
    Complete(Vec<u8>),
    /// Longer than the limit: what was learned of it while it was skipped.
    TooLong(Head),
}

/// Reads up to the next newline; `None` at the end of the input.
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    max_line: usize,
) -> std::io::Result<Option<Line>> {
    let mut kept = Vec::new();
    let mut head: Option<Head> = None;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (head, kept.is_empty()) {
                (Some(head), _) => Some(Line::TooLong(head)),
                (None, true) => None,
                (None, false) => Some(Line::Complete(kept)),
            });
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        match &mut head {
            Some(head) => head.feed(chunk),
            None if kept.len() + chunk.len() > max_line => {
                let mut scanner = Head::default();
                scanner.feed(&kept);
                scanner.feed(chunk);
                kept = Vec::new();
                head = Some(scanner);
            }
            None => kept.extend_from_slice(chunk),
        }
        let consumed = done.unwrap_or(available.len());
        input.consume(consumed);
        if done.is_some() {
            return Ok(Some(match head {
                Some(head) => Line::TooLong(head),
                None => Line::Complete(kept),
            }));
        }
    }
}

/// The JSON-RPC answer to a request too large to read; `None` for a notification (no id).
fn too_large(head: &Head, max_line: usize) -> Option<String> {
    let id = head.id()?;
    let message = format!(
        "the request is larger than the limit of {max_line} bytes; write large files through \
         the HTTP API or the sandbox instead"
    );
    let envelope =
        json!({ "error": { "code": ErrorCode::RequestTooLarge.as_str(), "message": message } });
    let reply = if head.method.as_deref() == Some("tools/call") {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {
                "content": [{ "type": "text", "text": envelope.to_string() }],
                "structuredContent": envelope,
                "isError": true,
            },
        })
    } else {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": -32600, "message": message, "data": envelope },
        })
    };
    Some(reply.to_string())
}

/// JSON-RPC's answer to a line that is not a message (id null, as the spec says when the id
/// could not be read).
fn parse_error(detail: &str) -> Option<String> {
    Some(
        json!({
            "jsonrpc": "2.0",
            "id": Value::Null,
            "error": { "code": -32700, "message": format!("the line is not a JSON-RPC message: {detail}") },
        })
        .to_string(),
    )
}

/// The `id` and `method` of a JSON-RPC message, read from its bytes as they stream past
/// without keeping them: a small state machine over the top-level object that tracks strings
/// and nesting and keeps only those two members' values (when short).
#[derive(Debug, Default)]
struct Head {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a member's name.
    expect_key: bool,
    /// The member whose value comes next (after its colon).
    key: Option<Vec<u8>>,
    /// Bytes of the name or value being read at depth 1, when worth keeping.
    token: Option<Vec<u8>>,
    /// Whether the token being read is a member name.
    token_is_key: bool,
    /// Whether the value being read belongs to `id` or `method`.
    wanted_value: bool,
    raw_id: Option<Vec<u8>>,
    method: Option<String>,
}

/// Longest `id` or `method` value kept.
const SHORT: usize = 256;

impl Head {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.step(b);
        }
    }

    fn keep(&mut self, b: u8) {
        if let Some(token) = &mut self.token
            && token.len() < SHORT
        {
            token.push(b);
        }
    }

    fn step(&mut self, b: u8) {
        if self.in_string {
            if self.depth == 1 {
                self.keep(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.depth == 1 {
                    self.end_token();
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 {
                    self.begin_token();
                    self.keep(b);
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 && b == b'{' {
                    self.expect_key = true;
                }
                if self.depth == 1 {
                    // A nested value: not one of ours.
                    self.wanted_value = false;
                    self.key = None;
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_token();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => {
                self.expect_key = false;
            }
            b',' if self.depth == 1 => {
                self.end_token();
                self.expect_key = true;
                self.key = None;
            }
            _ if self.depth == 1 && !b.is_ascii_whitespace() => {
                // A number, true, false or null as a member's value.
                if self.token.is_none() {
                    self.begin_token();
                }
                self.keep(b);
            }
            _ => {}
        }
    }

    fn begin_token(&mut self) {
        self.token_is_key = self.expect_key;
        self.wanted_value = !self.expect_key
            && matches!(self.key.as_deref(), Some(b"\"id\"") | Some(b"\"method\""));
        self.token = Some(Vec::new());
    }

    fn end_token(&mut self) {
        let Some(token) = self.token.take() else {
            return;
        };
        if self.token_is_key {
            self.key = Some(token);
            return;
        }
        if !self.wanted_value {
            return;
        }
        match self.key.take().as_deref() {
            Some(b"\"id\"") => self.raw_id = Some(token),
            Some(b"\"method\"") => {
                self.method = serde_json::from_slice::<String>(&token).ok();
            }
            _ => {}
        }
        self.wanted_value = false;
    }

    /// The request's id, when it had one that could be read.
    fn id(&self) -> Option<Value> {
        let raw = self.raw_id.as_ref()?;
        let value: Value = serde_json::from_slice(raw).ok()?;
        (value.is_string() || value.is_number()).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        let mut head = Head::default();
        // Fed in small pieces, as it arrives.
        for chunk in text.as_bytes().chunks(3) {
            head.feed(chunk);
        }
        head
    }

    #[test]
    fn id_and_method_are_found_wherever_they_stand() {
        let big = "x".repeat(10_000);
        let first = head(&format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"w","arguments":{{"content":"{big}"}}}}}}"#
        ));
        assert_eq!(first.id(), Some(json!(7)));
        assert_eq!(first.method.as_deref(), Some("tools/call"));
        let last = head(&format!(
            r#"{{ "method" : "tools/call", "params": {{"id": 99, "method": "nested", "x": ["{big}", {{"id": 3}}]}}, "id" : "req-\"1\"" }}"#
        ));
        assert_eq!(last.id(), Some(json!("req-\"1\"")));
        assert_eq!(last.method.as_deref(), Some("tools/call"));
    }

    #[test]
    fn notifications_and_junk_have_no_id() {
        assert_eq!(
            head(r#"{"jsonrpc":"2.0","method":"x","params":{}}"#).id(),
            None
        );
        assert_eq!(head("not json at all").id(), None);
        assert_eq!(head(r#"{"id":{"a":1}}"#).id(), None);
    }

    #[tokio::test]
    async fn an_oversized_call_is_answered_with_the_envelope() {
        let big = "y".repeat(4096);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{{\"name\":\"write_space_file\",\"arguments\":{{\"content\":\"{big}\"}}}}}}\n"
        );
        let (reader, mut writer) = tokio::io::duplex(1 << 16);
        let (out_reader, out_writer) = tokio::io::duplex(1 << 16);
        let (_sink, _stream) = transport(tokio::io::BufReader::new(reader), out_writer, 1024);
        writer.write_all(input.as_bytes()).await.unwrap();
        let mut lines = tokio::io::BufReader::new(out_reader).lines();
        let line = lines.next_line().await.unwrap().unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(reply["id"], 5);
        assert_eq!(reply["result"]["isError"], true);
        assert_eq!(
            reply["result"]["structuredContent"]["error"]["code"],
            "REQUEST_TOO_LARGE"
        );
    }
}
