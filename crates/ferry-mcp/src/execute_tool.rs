//! `execute`: a shell command in the thread's sandbox (docs/reference/execute.md), one call of
//! the route `POST /api/threads/{id}/execute`. Its input schema is the route's own body
//! (`ferry_core::execute::ExecuteInput`).
//!
//! The tool is listed only where the server runs commands (its `GET /api/limits` says so). A
//! call that carries a progress token reads the route's event stream and passes each piece of
//! output on as `notifications/progress`; the result is the same either way.

use ferry_core::error_code::ErrorCode;
use ferry_core::execute::ExecuteInput;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method};
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, Tool, ToolAnnotations};
use rmcp::service::RequestContext;
use serde_json::Value;

use crate::api::ApiResponse;
use crate::caller::{Caller, encode};
use crate::client::Client;
use crate::file_tools::schema_of;
use crate::outcome::{Outcome, answer, envelope, parse, thread_of, unreachable};

pub const EXECUTE: &str = "execute";

/// The tool as `tools/list` shows it.
pub fn tool() -> Tool {
    let mut tool = Tool::new(
        EXECUTE,
        "Run a shell command in your thread's sandbox, as sh -c COMMAND, and get its output \
         (stdout and stderr interleaved), its exit code, and whether it was cut short. It runs \
         in /sandbox/workspace unless cwd names another sandbox folder; it sees /sandbox \
         (user_uploads/ and skills/ read-only; write results to outputs/ or workspace/), the \
         server's programs (python3, and where installed pandas, openpyxl, python-docx, pypdf, \
         matplotlib), its own /tmp, and no network. Files it writes are at once readable with \
         read_file and can be delivered with publish_file_to_user. timeout is in seconds \
         (default 120). One command runs at a time in a thread. Output over 1 MiB keeps its \
         head and tail (truncated: true); a note in brackets at the end says when a limit \
         stopped the command.",
        schema_of::<ExecuteInput>(),
    );
    tool.title = Some("Run a command".to_owned());
    tool.annotations = Some(
        ToolAnnotations::with_title("Run a command")
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            // A command reaches no network: its world is the sandbox.
            .open_world(false),
    );
    tool
}

/// The tool's result for the route's answer: the output, then how it ended, as text for the
/// model; the whole answer as structured content.
pub fn result(answer: Value) -> CallToolResult {
    let output = answer["output"].as_str().unwrap_or_default();
    let ended = match (&answer["exitCode"], answer["timedOut"].as_bool()) {
        (_, Some(true)) => "[timed out]".to_owned(),
        (Value::Number(code), _) => format!("[exit code {code}]"),
        _ => "[ended by a signal]".to_owned(),
    };
    let mut text = output.to_owned();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&ended);
    if answer["truncated"].as_bool() == Some(true) {
        text.push_str(" [output truncated: its head and tail are shown]");
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(answer);
    result
}

/// Whether the server runs commands for `caller` (its limits say so).
pub(crate) async fn runs_commands(client: &Client, caller: &Caller) -> bool {
    let Ok(response) = client.get(caller, "/api/limits".to_owned()).await else {
        return false;
    };
    response.status.is_success()
        && serde_json::from_slice::<Value>(&response.body)
            .is_ok_and(|limits| limits["execute"]["enabled"] == true)
}

/// `execute`: the route's JSON answer, or — when the call carries a progress token — its
/// event stream, each piece of output passed on as a progress notification.
pub(crate) async fn execute(
    client: &Client,
    caller: &Caller,
    arguments: Value,
    context: &RequestContext<RoleServer>,
) -> Outcome {
    let _: ferry_core::execute::ExecuteInput = parse(EXECUTE, arguments.clone())?;
    let thread = thread_of(caller)?;
    let path = format!("/api/threads/{}/execute", encode(thread));
    let Some(token) = context.meta.get_progress_token() else {
        let response = client.post_json(caller, path, arguments).await?;
        return Ok(execute_answer(response));
    };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let request = client.request(
        caller,
        Method::POST,
        path,
        headers,
        arguments.to_string().into(),
    )?;
    let streamed = client
        .api
        .call_streaming(request)
        .await
        .map_err(unreachable)?;
    if !streamed.status.is_success() {
        return Ok(answer(streamed.whole().await.map_err(unreachable)?));
    }
    let mut reader = EventReader::default();
    let mut chunks = streamed.body;
    let mut sent = 0u64;
    while let Some(chunk) = futures::StreamExt::next(&mut chunks).await {
        for message in reader.push(&chunk.map_err(unreachable)?) {
            let data: Value = serde_json::from_str(&message.data).unwrap_or_default();
            match message.event.as_str() {
                "output" => {
                    let text = data["text"].as_str().unwrap_or_default();
                    sent += text.len() as u64;
                    let progress = ProgressNotificationParam::new(token.clone(), sent as f64)
                        .with_message(text);
                    // A client that stopped listening still gets its result.
                    let _ = context.peer.notify_progress(progress).await;
                }
                "result" => return Ok(result(data)),
                "error" => {
                    let mut result =
                        CallToolResult::error(vec![ContentBlock::text(message.data.clone())]);
                    result.structured_content = Some(data);
                    return Ok(result);
                }
                _ => {}
            }
        }
    }
    Err(envelope(
        ErrorCode::Internal,
        "the command's stream ended before its result",
    ))
}

fn execute_answer(response: ApiResponse) -> CallToolResult {
    if !response.status.is_success() {
        return answer(response);
    }
    match serde_json::from_slice::<Value>(&response.body) {
        Ok(body) => result(body),
        Err(_) => answer(response),
    }
}

/// One message of an event stream, as it is parsed: its `event` and its `data`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub event: String,
    pub data: String,
}

/// Reads an event stream as it arrives, message by message (`event:` and `data:` lines up to a
/// blank line; comments and other fields are passed over).
#[derive(Debug, Default)]
pub struct EventReader {
    pending: Vec<u8>,
}

impl EventReader {
    /// The messages completed by `chunk`.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Message> {
        self.pending.extend_from_slice(chunk);
        let mut messages = Vec::new();
        while let Some(end) = find_blank_line(&self.pending) {
            let block: Vec<u8> = self.pending.drain(..end.0).collect();
            self.pending.drain(..end.1 - end.0);
            let mut message = Message::default();
            for line in String::from_utf8_lossy(&block).lines() {
                if let Some(event) = line.strip_prefix("event:") {
                    message.event = event.trim().to_owned();
                } else if let Some(data) = line.strip_prefix("data:") {
                    if !message.data.is_empty() {
                        message.data.push('\n');
                    }
                    message
                        .data
                        .push_str(data.strip_prefix(' ').unwrap_or(data));
                }
            }
            if !message.event.is_empty() || !message.data.is_empty() {
                messages.push(message);
            }
        }
        messages
    }
}

/// Where the first blank line (`\n\n`) is: the end of the block and the start of what follows.
fn find_blank_line(bytes: &[u8]) -> Option<(usize, usize)> {
    bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|at| (at, at + 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_read_across_chunks_and_comments_are_passed_over() {
        let mut reader = EventReader::default();
        assert!(reader.push(b": keep-alive\n\nevent: out").is_empty());
        let messages = reader.push(b"put\ndata: {\"text\":\"hi\"}\n\nevent: result\ndata: {}\n\n");
        assert_eq!(
            messages,
            vec![
                Message {
                    event: "output".into(),
                    data: "{\"text\":\"hi\"}".into()
                },
                Message {
                    event: "result".into(),
                    data: "{}".into()
                },
            ]
        );
    }

    #[test]
    fn the_text_says_how_the_command_ended() {
        let ended = result(
            json!({ "output": "hello", "exitCode": 3, "timedOut": false, "truncated": false }),
        );
        let text = ended.content[0].as_text().unwrap().text.clone();
        assert_eq!(text, "hello\n[exit code 3]");
        assert_ne!(ended.is_error, Some(true));
        let timed_out =
            result(json!({ "output": "", "exitCode": null, "timedOut": true, "truncated": true }));
        let text = timed_out.content[0].as_text().unwrap().text.clone();
        assert!(
            text.starts_with("[timed out]") && text.contains("truncated"),
            "{text}"
        );
    }

    #[test]
    fn the_schema_is_the_routes_body() {
        let schema = serde_json::to_value(tool().input_schema.as_ref()).unwrap();
        assert_eq!(schema["required"], json!(["command"]));
        assert!(schema["properties"]["timeout"].is_object());
        assert!(schema["properties"]["cwd"].is_object());
        assert_eq!(schema["additionalProperties"], json!(false));
    }
}
