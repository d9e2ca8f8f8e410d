//! Running a command in a thread's sandbox over HTTP (docs/reference/execute.md): one JSON
//! answer when the command ends, or, with `Accept: text/event-stream`, its output as it is
//! written and then the answer. A client that goes away ends the command: the command runs
//! inside the request, and a request whose client left is dropped.

use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use ferry_app::execute::{self, ExecuteResult, Utf8Chunks};
use ferry_core::execute::ExecuteInput;
use futures::{Stream, StreamExt};
use serde_json::json;
use tokio::sync::mpsc;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;

/// How often a silent command's stream carries a comment, so that proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Runs a shell command in the thread's sandbox (the thread's agent, or service_role).
///
/// The command runs as `sh -c COMMAND`, confined to the sandbox: it sees `/sandbox`
/// (`user_uploads/` and `skills/` read-only), a read-only runtime, its own `/tmp`, no network,
/// and no secret of the server. What it creates, changes or deletes is seen at once through
/// every door, and the thread is told (`file_written`, `file_deleted`, then
/// `command_executed`). With `Accept: text/event-stream` the answer is a stream of
/// `event: output` messages (data `{"text": "…"}`) while it runs, then one `event: result`
/// whose data is the answer below (or `event: error` with the error envelope).
#[utoipa::path(
    post, path = "/api/threads/{id}/execute", tag = "sandbox",
    params(("id" = String, Path)),
    request_body = ExecuteInput,
    responses(
        (status = 200, body = ExecuteResult, description = "How the command ended (as JSON), or with Accept: text/event-stream its output as written and then this answer"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "an empty command, a NUL byte, a timeout out of range; INVALID_PATH: a cwd outside the sandbox")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only the thread's agent or service_role runs commands")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "no such thread, or the cwd is not a folder")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "a command over 100,000 bytes")),
        (status = 429, description = refusal(&[ErrorCode::TooManyRequests], "the thread already runs a command, or the server runs as many as it may (Retry-After)")),
        (status = 501, description = refusal(&[ErrorCode::NotImplemented], "commands are turned off or cannot run on this server (the message says why)")),
    ),
    security(("bearer" = []))
)]
pub async fn execute(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(input): ApiJson<ExecuteInput>,
) -> ApiResult<Response> {
    let prepared = execute::prepare(&state.app, &principal, &id, &input).await?;
    if !wants_stream(&headers) {
        return Ok(Json(prepared.run(None).await?).into_response());
    }
    let (live, output) = mpsc::unbounded_channel();
    let run = Box::pin(prepared.run(Some(live)));
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(streamed(run, output)),
    )
        .into_response())
}

/// Whether the client asked for the output as it comes.
fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            range
                .split(';')
                .next()
                .is_some_and(|media| media.trim().eq_ignore_ascii_case("text/event-stream"))
        })
}

type Run = Pin<Box<dyn Future<Output = ferry_app::Result<ExecuteResult>> + Send>>;

/// What the stream is doing: running (with the output still to come), or done.
enum Streaming {
    Running {
        run: Run,
        /// `None` once the run has let go of its end.
        output: Option<mpsc::UnboundedReceiver<Bytes>>,
        text: Utf8Chunks,
    },
    Done,
}

/// The command's output as `output` events while `run` runs, then its `result` (or `error`).
/// The run lives inside the stream: a client that goes away drops it, which ends the command.
fn streamed(
    run: Run,
    output: mpsc::UnboundedReceiver<Bytes>,
) -> impl Stream<Item = Result<Bytes, Infallible>> {
    let start = Streaming::Running {
        run,
        output: Some(output),
        text: Utf8Chunks::default(),
    };
    futures::stream::unfold(start, |state| async move {
        let Streaming::Running {
            mut run,
            mut output,
            mut text,
        } = state
        else {
            return None;
        };
        tokio::select! {
            chunk = next_chunk(&mut output) => {
                let frame = match chunk {
                    Some(bytes) => output_frame(&text.push(&bytes)),
                    // The run has let go of its end: the result comes next.
                    None => {
                        output = None;
                        Bytes::new()
                    }
                };
                Some((Ok(frame), Streaming::Running { run, output, text }))
            }
            ended = &mut run => {
                let mut rest = Vec::new();
                while let Some(Ok(bytes)) = output.as_mut().map(|o| o.try_recv()) {
                    rest.extend_from_slice(&bytes);
                }
                let mut tail = text.push(&rest);
                tail.push_str(&text.finish());
                let mut frame = output_frame(&tail).to_vec();
                frame.extend_from_slice(&match ended {
                    Ok(result) => frame_of("result", &json!(result)),
                    Err(e) => {
                        let error = ApiError::from(e);
                        frame_of("error", &serde_json::from_str::<serde_json::Value>(&error.envelope_json()).unwrap_or_default())
                    }
                });
                Some((Ok(Bytes::from(frame)), Streaming::Done))
            }
            () = tokio::time::sleep(KEEP_ALIVE) => {
                Some((Ok(Bytes::from_static(b": keep-alive\n\n")), Streaming::Running { run, output, text }))
            }
        }
    })
    .filter(|frame| std::future::ready(!matches!(frame, Ok(bytes) if bytes.is_empty())))
}

/// The next chunk of output; never, once there is none to come.
async fn next_chunk(output: &mut Option<mpsc::UnboundedReceiver<Bytes>>) -> Option<Bytes> {
    match output {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// An `output` event, or nothing for no text.
fn output_frame(text: &str) -> Bytes {
    if text.is_empty() {
        return Bytes::new();
    }
    Bytes::from(frame_of("output", &json!({ "text": text })))
}

fn frame_of(event: &str, data: &serde_json::Value) -> Vec<u8> {
    format!("event: {event}\ndata: {data}\n\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_sent_only_when_asked_for() {
        let mut headers = HeaderMap::new();
        assert!(!wants_stream(&headers));
        headers.insert(header::ACCEPT, "application/json".parse().unwrap());
        assert!(!wants_stream(&headers));
        headers.insert(
            header::ACCEPT,
            "application/json, text/event-stream;q=0.9".parse().unwrap(),
        );
        assert!(wants_stream(&headers));
    }

    #[tokio::test]
    async fn output_comes_as_events_and_the_result_last() {
        let (live, output) = mpsc::unbounded_channel();
        live.send(Bytes::from_static("héllo ".as_bytes())).unwrap();
        // A character cut between two chunks arrives whole.
        let wide = "🚢".as_bytes();
        live.send(Bytes::copy_from_slice(&wide[..2])).unwrap();
        live.send(Bytes::copy_from_slice(&wide[2..])).unwrap();
        drop(live);
        let run: Run = Box::pin(async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(ExecuteResult {
                output: "héllo 🚢".into(),
                exit_code: Some(0),
                truncated: false,
                timed_out: false,
                duration_ms: 1,
                output_bytes: 10,
                stopped_by: None,
            })
        });
        let frames: Vec<Bytes> = streamed(run, output).map(|f| f.unwrap()).collect().await;
        let text: String = frames
            .iter()
            .map(|f| String::from_utf8(f.to_vec()).unwrap())
            .collect();
        assert!(
            text.starts_with("event: output\ndata: {\"text\":\"héllo \"}\n\n"),
            "{text}"
        );
        assert!(text.contains("🚢"), "{text}");
        assert!(!text.contains('\u{FFFD}'), "{text}");
        assert!(
            text.ends_with("\n\n") && text.contains("event: result\ndata: {\"output\""),
            "{text}"
        );
    }
}
