//! What a tool call answers: the server's answer as a tool result (its body unchanged, and as
//! structured content when it is a JSON object), the errors found before any request is sent
//! (in the server's envelope, so an agent reads every error alike), and the shapes some tools
//! give their answer for a model (a file read, a published file's link).

use ferry_core::error_code::ErrorCode;
use rmcp::model::{CallToolResult, ContentBlock, Resource};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::api::ApiResponse;
use crate::caller::{Caller, encode};

/// What `read_file` shows a model: the numbered lines themselves (with where to read on), the
/// image as an image, or the note about a binary file; the whole answer as structured content.
pub(crate) fn read_result(read: Value) -> CallToolResult {
    let text = |key: &str| read[key].as_str().unwrap_or_default().to_owned();
    let mut blocks = Vec::new();
    match read["kind"].as_str() {
        Some("image") => {
            blocks.push(ContentBlock::image(text("base64"), text("mimeType")));
            blocks.push(ContentBlock::text(text("note")));
        }
        // A PDF's pages: the server's content blocks, each page's image and then its text.
        Some("pages") => {
            blocks.extend(
                read["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(mcp_content),
            );
        }
        Some("text") => {
            let mut shown = text("content");
            if let Some(next) = read["nextOffset"].as_u64() {
                shown.push_str(&format!(
                    "[{} lines in all; read on with offset {next}]\n",
                    read["totalLines"]
                ));
            }
            if let Some(note) = read["note"].as_str() {
                shown = format!("[{note}]\n{shown}");
            }
            blocks.push(ContentBlock::text(shown));
        }
        _ => blocks.push(ContentBlock::text(text("note"))),
    }
    let mut result = CallToolResult::success(blocks);
    // The image's bytes are in its block already (a PDF's pages in theirs); the rest
    // describes it.
    let mut described = read;
    let pages = described["kind"] == "pages";
    if let Some(object) = described.as_object_mut() {
        object.remove("base64");
        if pages {
            object.remove("content");
        }
    }
    result.structured_content = Some(described);
    result
}

/// A LangChain standard content block (as the server gives it) as MCP content: an image block
/// becomes an MCP image, a text block text.
pub(crate) fn mcp_content(block: &Value) -> Option<ContentBlock> {
    match block["type"].as_str()? {
        "image" => Some(ContentBlock::image(
            block["base64"].as_str()?,
            block["mime_type"].as_str()?,
        )),
        "text" => Some(ContentBlock::text(block["text"].as_str()?)),
        _ => None,
    }
}

/// The error result that ends a tool call early (boxed: results are large).
pub(crate) type Stop = Box<CallToolResult>;

/// No answer from the server at all, as an error result.
pub(crate) fn unreachable(e: anyhow::Error) -> Stop {
    tracing::warn!(error = %format!("{e:#}"), "the ferry API did not answer");
    Box::new(CallToolResult::error(vec![ContentBlock::text(format!(
        "could not reach the ferry server: {e:#}"
    ))]))
}

/// A tool's result, or the error result that ended it early.
pub(crate) type Outcome = Result<CallToolResult, Stop>;

pub(crate) fn parse<T: DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, Stop> {
    serde_json::from_value(arguments).map_err(|e| {
        envelope(
            ErrorCode::InvalidRequest,
            format!("invalid arguments for {tool}: {e}"),
        )
    })
}

pub(crate) fn thread_of(caller: &Caller) -> Result<&str, Stop> {
    caller.thread.as_deref().ok_or_else(|| {
        envelope(
            ErrorCode::InvalidRequest,
            "this tool acts in a thread, and the token names none: use an agent token \
             (ferry token --agent --thread ID --user OWNER, or POST /api/threads/{id}/agent-token)",
        )
    })
}

/// An error found before any request was sent, in the server's envelope so that an agent
/// reads every error the same way.
pub(crate) fn envelope(code: ErrorCode, message: impl Into<String>) -> Stop {
    let body = json!({ "error": { "code": code.as_str(), "message": message.into() } });
    let mut result = CallToolResult::error(vec![ContentBlock::text(body.to_string())]);
    result.structured_content = Some(body);
    Box::new(result)
}

/// The server's answer as a tool result: its body as text, unchanged, and (when it is a JSON
/// object) as structured content. Any status but 2xx is an error result.
pub(crate) fn answer(response: ApiResponse) -> CallToolResult {
    let text = String::from_utf8_lossy(&response.body).into_owned();
    let mut result = if response.status.is_success() {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = serde_json::from_slice::<Value>(&response.body)
        .ok()
        .filter(Value::is_object);
    result
}

pub(crate) fn structured(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result
}

/// A link to the content of the revision the publish answer describes.
pub(crate) fn published_link(caller: &Caller, thread: &str, published: &Value) -> Option<Resource> {
    let id = published.get("id")?.as_str()?;
    let display_name = published.get("display_name").and_then(Value::as_str);
    let filename = published
        .get("filename")
        .and_then(Value::as_str)
        .or(display_name)
        .unwrap_or(id);
    let revision = published
        .get("revision")
        .and_then(Value::as_u64)
        .map(|r| format!("?revision={r}"))
        .unwrap_or_default();
    let uri = format!(
        "{}/api/threads/{}/published/{}/content{revision}",
        caller.base_url,
        encode(thread),
        encode(id)
    );
    let mut link = Resource::new(uri, filename);
    if let Some(title) = display_name {
        link = link.with_title(title);
    }
    if let Some(description) = published
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
    {
        link = link.with_description(description);
    }
    if let Some(mime) = published.get("mime_type").and_then(Value::as_str) {
        link = link.with_mime_type(mime);
    }
    if let Some(size) = published.get("file_size").and_then(Value::as_u64) {
        link = link.with_size(size);
    }
    Some(link)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http::HeaderMap;

    #[test]
    fn answers_keep_the_server_body() {
        let body = r#"{"error":{"code":"ALREADY_EXISTS","message":"ideas/a.md exists"}}"#;
        let result = answer(ApiResponse {
            status: http::StatusCode::CONFLICT,
            headers: HeaderMap::new(),
            body: Bytes::from(body),
        });
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result.content[0].as_text().unwrap().text, body);
        assert_eq!(
            result.structured_content.unwrap()["error"]["code"],
            "ALREADY_EXISTS"
        );
    }
}
