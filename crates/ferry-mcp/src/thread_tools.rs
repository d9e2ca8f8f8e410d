//! The thread tools (docs/mcp.md): send a file inline, publish one to the user, say, and list
//! and read the user's uploads — each in the thread the caller's token names.

use ferry_core::error_code::ErrorCode;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::caller::{Caller, encode};
use crate::file_card;
use crate::handler::FerryMcp;
use crate::outcome::{Outcome, answer, envelope, mcp_content, parse, published_link, thread_of};
use crate::tools;

impl FerryMcp {
    pub(crate) async fn send_file(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::SendFileArgs = parse(tools::SEND_FILE, arguments)?;
        let thread = thread_of(caller)?;
        let response = self
            .client
            .post_json(
                caller,
                format!("/api/threads/{}/send-file", encode(thread)),
                json!({ "filePath": args.file_path }),
            )
            .await?;
        Ok(answer(response))
    }

    pub(crate) async fn publish(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::PublishArgs = parse(tools::PUBLISH_FILE_TO_USER, arguments)?;
        let thread = thread_of(caller)?;
        let mut body = json!({ "file_path": args.file_path, "display_name": args.display_name });
        if let Some(description) = args.description {
            body["description"] = Value::String(description);
        }
        let response = self
            .client
            .post_json(
                caller,
                format!("/api/threads/{}/published", encode(thread)),
                body,
            )
            .await?;
        let mut result = answer(response);
        if result.is_error != Some(true)
            && let Some(link) = result
                .structured_content
                .as_ref()
                .and_then(|published| published_link(caller, thread, published))
        {
            result.content.push(ContentBlock::resource_link(link));
        }
        Ok(result)
    }

    pub(crate) async fn say(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::SayArgs = parse(tools::SAY, arguments)?;
        let thread = thread_of(caller)?;
        let response = self
            .client
            .post_json(
                caller,
                format!("/api/threads/{}/say", encode(thread)),
                json!({ "text": args.text }),
            )
            .await?;
        Ok(answer(response))
    }

    pub(crate) async fn list_uploads(&self, caller: &Caller, arguments: Value) -> Outcome {
        let _: tools::NoArgs = parse(tools::LIST_UPLOADS, arguments)?;
        let thread = thread_of(caller)?;
        let response = self
            .client
            .get(caller, format!("/api/threads/{}/uploads", encode(thread)))
            .await?;
        Ok(answer(response))
    }

    pub(crate) async fn read_upload(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::ReadUploadArgs = parse(tools::READ_UPLOAD, arguments)?;
        let thread = thread_of(caller)?;
        let pages = args
            .pages
            .map(|p| format!("?pages={}", encode(&p)))
            .unwrap_or_default();
        let response = self
            .client
            .get(
                caller,
                format!(
                    "/api/threads/{}/uploads/{}/model-content{pages}",
                    encode(thread),
                    encode(&args.upload_id)
                ),
            )
            .await?;
        if !response.status.is_success() {
            return Ok(answer(response));
        }
        let blocks: Vec<Value> = serde_json::from_slice(&response.body).map_err(|e| {
            envelope(
                ErrorCode::Internal,
                format!("the server's model content could not be read: {e}"),
            )
        })?;
        let mut result = CallToolResult::success(blocks.iter().filter_map(mcp_content).collect());
        // What the file card of a host with MCP Apps shows: the upload itself, beside what the
        // model reads (`_meta` is not the model's).
        if let Some(upload) = self.upload_view(caller, thread, &args.upload_id).await {
            result.meta = Some(file_card::upload_meta(upload));
        }
        Ok(result)
    }

    /// One upload as the thread's upload list shows it (no answer: no card, the result stands).
    async fn upload_view(&self, caller: &Caller, thread: &str, upload_id: &str) -> Option<Value> {
        let response = self
            .client
            .get(caller, format!("/api/threads/{}/uploads", encode(thread)))
            .await
            .ok()?;
        response.status.is_success().then_some(())?;
        let mut listed: Value = serde_json::from_slice(&response.body).ok()?;
        let uploads = listed.get_mut("uploads")?.as_array_mut()?;
        let at = uploads.iter().position(|u| u["id"] == upload_id)?;
        Some(uploads.swap_remove(at))
    }
}
