//! Why one file: the `ServerHandler` implementation, its tool dispatch and resources share the
//! caller and the API plumbing defined here. `execute` lives in `execute_tool.rs`, the file
//! tools in `file_tools.rs`, following resources in `subscriptions.rs`; moving the resources
//! into a module of their own is the next seam.
//!
//! The MCP server: each tool call becomes one request to ferry's HTTP API, and the answer
//! becomes the tool's result.
//!
//! Nothing here decides a rule of its own: paths, space names, limits, roles and the
//! send_file list are all checked by the server, and its answer comes back unchanged. What is
//! decided here is only what MCP needs: the shape of the request, base64 for bytes that JSON
//! cannot carry, and the link to a published file.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use ferry_core::agent_files::bare_etag;
use ferry_core::conditions::quoted_etag;
use ferry_core::error_code::ErrorCode;
use ferry_core::timestamp::Timestamp;
use http::header::{AUTHORIZATION, CONTENT_TYPE, IF_MATCH, IF_NONE_MATCH};
use http::{HeaderMap, HeaderValue, Method};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::task::AbortHandle;

use crate::api::{Api, ApiRequest, ApiResponse};
use crate::execute_tool;
use crate::file_card;
use crate::file_tools;
use crate::resources::{self, Named, RevisionPart};
use crate::shared_feeds::SharedFeeds;
use crate::subscriptions::{LISTEN_LOOKBACK_MS, ListenSlots, MAX_LISTENED};
use crate::tools::{self, INSTRUCTIONS};

/// Everything but RFC 3986's unreserved characters is encoded in a path segment or a query
/// value, so the server decodes exactly what the agent wrote.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub(crate) fn encode(component: &str) -> String {
    utf8_percent_encode(component, COMPONENT).to_string()
}

/// A path inside a space as URL segments: each segment encoded on its own, so `/` stays the
/// separator and everything else reaches the server's validator as written.
fn encode_path(path: &str) -> String {
    path.split('/').map(encode).collect::<Vec<_>>().join("/")
}

/// Who a tool call acts as, and where links point.
#[derive(Clone)]
pub(crate) struct Caller {
    pub(crate) token: String,
    /// Scheme, host and any prefix of the server, for links: `https://files.example.com`.
    base_url: String,
    /// The thread the thread tools act in.
    thread: Option<String>,
    /// What the MCP request carried for the server it runs in, handed to each of its calls
    /// ([`ApiRequest::extensions`]); empty for `ferry mcp`.
    extensions: http::Extensions,
}

impl Caller {
    /// The thread the thread tools act in.
    pub(crate) fn thread(&self) -> Option<&str> {
        self.thread.as_deref()
    }
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("token", &"<redacted>")
            .field("base_url", &self.base_url)
            .field("thread", &self.thread)
            .finish()
    }
}

#[derive(Clone, Debug)]
enum Callers {
    /// `ferry mcp`: one agent, one token, for the whole session.
    Fixed(Caller),
    /// `/mcp`: each HTTP request's own bearer token.
    PerRequest,
}

/// ferry's MCP server, over any transport and any [`Api`].
#[derive(Clone, Debug)]
pub struct FerryMcp {
    pub(crate) api: Arc<dyn Api>,
    callers: Callers,
    /// The resources this session follows by `resources/subscribe`, by URI (a session of
    /// `ferry mcp` only: `/mcp` keeps no session to notify; a `subscriptions/listen` request
    /// follows its resources on its own stream, for as long as it stays open).
    subscriptions: Arc<std::sync::Mutex<HashMap<String, AbortHandle>>>,
    /// The `subscriptions/listen` streams open per caller, across every request answered.
    listens: Arc<ListenSlots>,
    /// The readers of the feeds followed, shared by the streams on each.
    pub(crate) feeds: Arc<SharedFeeds>,
}

impl FerryMcp {
    /// Tools that act with one `token` for the whole session (`ferry mcp` on stdio).
    ///
    /// The thread comes from the token's `thread` claim (an agent token); `thread` is used
    /// only for a token without one, such as a service_role token. `base_url` is where links
    /// to published files point.
    pub fn with_token(
        api: Arc<dyn Api>,
        base_url: &str,
        token: &str,
        thread: Option<String>,
    ) -> FerryMcp {
        FerryMcp {
            api,
            subscriptions: Arc::default(),
            listens: Arc::default(),
            feeds: Arc::default(),
            callers: Callers::Fixed(Caller {
                token: token.trim().to_owned(),
                base_url: base_url.trim_end_matches('/').to_owned(),
                thread: thread_claim(token).or(thread).filter(|t| !t.is_empty()),
                extensions: http::Extensions::new(),
            }),
        }
    }

    /// Tools that act with the bearer token of the HTTP request each call arrived in
    /// (streamable HTTP at `/mcp`); links point at the host that request was sent to.
    pub fn per_request(
        api: Arc<dyn Api>,
        listens: Arc<ListenSlots>,
        feeds: Arc<SharedFeeds>,
    ) -> FerryMcp {
        FerryMcp {
            api,
            subscriptions: Arc::default(),
            listens,
            feeds,
            callers: Callers::PerRequest,
        }
    }

    /// The one caller of a `ferry mcp` session.
    #[cfg(test)]
    pub(crate) fn session_caller(&self) -> Caller {
        match &self.callers {
            Callers::Fixed(caller) => caller.clone(),
            Callers::PerRequest => panic!("a per-request server has no session caller"),
        }
    }

    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Caller, Stop> {
        match &self.callers {
            Callers::Fixed(caller) => Ok(caller.clone()),
            Callers::PerRequest => {
                let parts = context
                    .extensions
                    .get::<http::request::Parts>()
                    .ok_or_else(|| {
                        envelope(
                            ErrorCode::Unauthenticated,
                            "this MCP endpoint needs the bearer token of an HTTP request",
                        )
                    })?;
                let token = bearer(&parts.headers).ok_or_else(|| {
                    envelope(
                        ErrorCode::Unauthenticated,
                        "missing bearer token: send 'Authorization: Bearer <JWT>'",
                    )
                })?;
                Ok(Caller {
                    thread: thread_claim(&token),
                    token,
                    base_url: base_url_of(parts),
                    extensions: parts.extensions.clone(),
                })
            }
        }
    }

    /// Sends one request as `caller`; no answer at all becomes an error result.
    pub(crate) async fn exchange(
        &self,
        caller: &Caller,
        method: Method,
        path_and_query: String,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<ApiResponse, Stop> {
        let request = self.request(caller, method, path_and_query, headers, body)?;
        self.api.call(request).await.map_err(unreachable)
    }

    /// One request as `caller`: its token, and the header that labels the door.
    pub(crate) fn request(
        &self,
        caller: &Caller,
        method: Method,
        path_and_query: String,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<ApiRequest, Stop> {
        let authorization =
            HeaderValue::try_from(format!("Bearer {}", caller.token)).map_err(|_| {
                envelope(
                    ErrorCode::Unauthenticated,
                    "the token is not valid header text",
                )
            })?;
        headers.insert(AUTHORIZATION, authorization);
        // Changes made through the tools are labelled as MCP's in change feeds.
        headers.insert(
            ferry_core::door::DOOR_HEADER,
            HeaderValue::from_static("mcp"),
        );
        Ok(ApiRequest {
            method,
            path_and_query,
            headers,
            body,
            extensions: caller.extensions.clone(),
        })
    }

    pub(crate) async fn get(&self, caller: &Caller, path: String) -> Result<ApiResponse, Stop> {
        self.exchange(caller, Method::GET, path, HeaderMap::new(), Bytes::new())
            .await
    }

    pub(crate) async fn post_json(
        &self,
        caller: &Caller,
        path: String,
        body: Value,
    ) -> Result<ApiResponse, Stop> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        self.exchange(caller, Method::POST, path, headers, body.to_string().into())
            .await
    }

    async fn run(&self, caller: &Caller, name: &str, arguments: Value) -> CallToolResult {
        let outcome = match name {
            tools::SEND_FILE => self.send_file(caller, arguments).await,
            tools::PUBLISH_FILE_TO_USER => self.publish(caller, arguments).await,
            tools::LIST_SPACE_FILES => self.list_space_files(caller, arguments).await,
            tools::READ_SPACE_FILE => self.read_space_file(caller, arguments).await,
            tools::WRITE_SPACE_FILE => self.write_space_file(caller, arguments).await,
            tools::DELETE_SPACE_FILE => self.delete_space_file(caller, arguments).await,
            tools::SAY => self.say(caller, arguments).await,
            tools::LIST_UPLOADS => self.list_uploads(caller, arguments).await,
            tools::READ_UPLOAD => self.read_upload(caller, arguments).await,
            file_tool if file_tools::is_file_tool(file_tool) => {
                self.file_tool(caller, file_tool, arguments).await
            }
            other => Err(envelope(
                ErrorCode::NotFound,
                format!("no tool is named '{other}'"),
            )),
        };
        outcome.unwrap_or_else(|error| *error)
    }

    async fn send_file(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::SendFileArgs = parse(tools::SEND_FILE, arguments)?;
        let thread = thread_of(caller)?;
        let response = self
            .post_json(
                caller,
                format!("/api/threads/{}/send-file", encode(thread)),
                json!({ "filePath": args.file_path }),
            )
            .await?;
        Ok(answer(response))
    }

    async fn publish(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::PublishArgs = parse(tools::PUBLISH_FILE_TO_USER, arguments)?;
        let thread = thread_of(caller)?;
        let mut body = json!({ "file_path": args.file_path, "display_name": args.display_name });
        if let Some(description) = args.description {
            body["description"] = Value::String(description);
        }
        let response = self
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

    async fn list_space_files(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::ListSpaceArgs = parse(tools::LIST_SPACE_FILES, arguments)?;
        let mut path = format!(
            "/api/spaces/{}/files?recursive={}",
            encode(&args.space_name),
            args.recursive
        );
        if let Some(dir) = &args.dir {
            path.push_str("&dir=");
            path.push_str(&encode(dir));
        }
        Ok(answer(self.get(caller, path).await?))
    }

    async fn read_space_file(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::ReadSpaceArgs = parse(tools::READ_SPACE_FILE, arguments)?;
        let response = self
            .get(
                caller,
                format!(
                    "/api/spaces/{}/files/{}",
                    encode(&args.space_name),
                    encode_path(&args.path)
                ),
            )
            .await?;
        if !response.status.is_success() {
            return Ok(answer(response));
        }
        let content_type = response
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/octet-stream");
        // Bytes go back base64-encoded (docs/mcp.md), so any file survives JSON.
        Ok(structured(json!({
            "contentBase64": STANDARD.encode(&response.body),
            "contentType": content_type,
            "size": response.body.len(),
        })))
    }

    async fn write_space_file(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::WriteSpaceArgs = parse(tools::WRITE_SPACE_FILE, arguments)?;
        // As write_file: `encoding` says how the content is carried. Without it, text types
        // carry their text and every other type base64; a missing or unreadable type is sent as
        // text, so the server's own answer (415) comes back.
        let textual = match args.encoding {
            Some(encoding) => encoding == ferry_core::agent_files::Encoding::Utf8,
            None => tools::is_text_type(&args.content_type) || !args.content_type.contains('/'),
        };
        let body = if textual {
            Bytes::from(args.content.into_bytes())
        } else {
            let cleaned: String = args
                .content
                .chars()
                .filter(|c| !c.is_ascii_whitespace())
                .collect();
            Bytes::from(STANDARD.decode(cleaned.as_bytes()).map_err(|e| {
                let message = if args.encoding.is_some() {
                    format!("content is not valid base64: {e}")
                } else {
                    format!(
                        "content must be base64 for the content type '{}' ({e}); send text only \
                         for text types (text/*, JSON, XML, JavaScript, SVG), or say \
                         encoding: \"utf-8\"",
                        args.content_type
                    )
                };
                envelope(ErrorCode::InvalidRequest, message)
            })?)
        };
        let mut headers = HeaderMap::new();
        if !args.content_type.is_empty() {
            let value = HeaderValue::try_from(args.content_type.as_str()).map_err(|_| {
                envelope(
                    ErrorCode::UnsupportedMediaType,
                    format!(
                        "'{}' cannot be sent as a Content-Type header: use a media type such as text/markdown; charset=utf-8",
                        args.content_type
                    ),
                )
            })?;
            headers.insert(CONTENT_TYPE, value);
        }
        if args.if_none_match == Some(tools::AnyEtag::Any) {
            headers.insert(IF_NONE_MATCH, HeaderValue::from_static("*"));
        }
        let response = self
            .exchange(
                caller,
                Method::PUT,
                format!(
                    "/api/spaces/{}/files/{}",
                    encode(&args.space_name),
                    encode_path(&args.path)
                ),
                headers,
                body,
            )
            .await?;
        Ok(answer(response))
    }

    async fn delete_space_file(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::DeleteSpaceArgs = parse(tools::DELETE_SPACE_FILE, arguments)?;
        let mut headers = HeaderMap::new();
        if let Some(tag) = &args.if_match {
            // The etag as listings show it, quoted or not.
            let quoted = if tag == "*" {
                tag.clone()
            } else {
                quoted_etag(bare_etag(tag))
            };
            let value = HeaderValue::try_from(quoted).map_err(|_| {
                envelope(
                    ErrorCode::InvalidRequest,
                    "ifMatch must be an etag such as \"3a7b…\"",
                )
            })?;
            headers.insert(IF_MATCH, value);
        }
        let response = self
            .exchange(
                caller,
                Method::DELETE,
                format!(
                    "/api/spaces/{}/files/{}",
                    encode(&args.space_name),
                    encode_path(&args.path)
                ),
                headers,
                Bytes::new(),
            )
            .await?;
        if !response.status.is_success() {
            return Ok(answer(response));
        }
        Ok(structured(json!({ "path": args.path, "deleted": true })))
    }

    async fn say(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::SayArgs = parse(tools::SAY, arguments)?;
        let thread = thread_of(caller)?;
        let response = self
            .post_json(
                caller,
                format!("/api/threads/{}/say", encode(thread)),
                json!({ "text": args.text }),
            )
            .await?;
        Ok(answer(response))
    }

    async fn list_uploads(&self, caller: &Caller, arguments: Value) -> Outcome {
        let _: tools::NoArgs = parse(tools::LIST_UPLOADS, arguments)?;
        let thread = thread_of(caller)?;
        let response = self
            .get(caller, format!("/api/threads/{}/uploads", encode(thread)))
            .await?;
        Ok(answer(response))
    }

    async fn read_upload(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::ReadUploadArgs = parse(tools::READ_UPLOAD, arguments)?;
        let thread = thread_of(caller)?;
        let pages = args
            .pages
            .map(|p| format!("?pages={}", encode(&p)))
            .unwrap_or_default();
        let response = self
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

impl FerryMcp {
    /// A file tool: its arguments are the body of the route of the same name — in the token's
    /// thread, or in the thread `ferry mcp` was given for a token that names none.
    async fn file_tool(&self, caller: &Caller, tool: &str, arguments: Value) -> Outcome {
        let path = match &caller.thread {
            Some(thread) => format!("/api/threads/{}/fs/{tool}", encode(thread)),
            None => format!("/api/fs/{tool}"),
        };
        let response = self.post_json(caller, path, arguments).await?;
        if tool != file_tools::READ_FILE || !response.status.is_success() {
            return Ok(answer(response));
        }
        let read: Value = serde_json::from_slice(&response.body).map_err(|e| {
            envelope(
                ErrorCode::Internal,
                format!("the server's answer could not be read: {e}"),
            )
        })?;
        Ok(read_result(read))
    }
}

/// What `read_file` shows a model: the numbered lines themselves (with where to read on), the
/// image as an image, or the note about a binary file; the whole answer as structured content.
fn read_result(read: Value) -> CallToolResult {
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
fn mcp_content(block: &Value) -> Option<ContentBlock> {
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

fn structured(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result
}

/// A link to the content of the revision the publish answer describes.
fn published_link(caller: &Caller, thread: &str, published: &Value) -> Option<Resource> {
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

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty())
        .then(|| token.trim().to_owned())
}

/// The `thread` claim of a JWT, read without verifying it: the server verifies the token on
/// every request, so a forged claim only names a thread the server then refuses.
fn thread_claim(token: &str) -> Option<String> {
    let payload = token.trim().split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims
        .get("thread")?
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// Where the HTTP request was sent, as a base for links: the proxy's forwarded host and scheme
/// when there is one.
fn base_url_of(parts: &http::request::Parts) -> String {
    let first = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let host = first("x-forwarded-host")
        .or_else(|| first("host"))
        .or_else(|| parts.uri.authority().map(|a| a.to_string()));
    let scheme = first("x-forwarded-proto")
        .or_else(|| parts.uri.scheme_str().map(str::to_owned))
        .unwrap_or_else(|| "http".to_owned());
    match host {
        Some(host) => format!("{scheme}://{host}"),
        None => String::new(),
    }
}

impl FerryMcp {
    /// The HTTP route that reads a resource.
    pub(crate) fn route_of(caller: &Caller, named: &Named) -> Result<String, ErrorData> {
        let thread = || {
            caller.thread.as_deref().ok_or_else(|| {
                ErrorData::invalid_params(
                    "this resource belongs to a thread, and the token names none: use an \
                     agent token",
                    None,
                )
            })
        };
        // As written in the URI, decoded once and encoded again segment by segment, so the
        // server's validator sees exactly the path the URI named.
        let path = |raw: &str| {
            percent_encoding::percent_decode_str(raw)
                .decode_utf8()
                .map(|decoded| encode_path(&decoded))
                .map_err(|_| ErrorData::invalid_params("the URI's path is not UTF-8", None))
        };
        Ok(match named {
            Named::Sandbox(raw) => {
                format!("/api/threads/{}/sandbox/{}", encode(thread()?), path(raw)?)
            }
            Named::Space { space, path: raw } => {
                format!("/api/spaces/{}/files/{}", encode(space), path(raw)?)
            }
            Named::Upload(id) => format!(
                "/api/threads/{}/uploads/{}/content",
                encode(thread()?),
                encode(id)
            ),
            Named::UploadPage { id, page } => format!(
                "/api/threads/{}/uploads/{}/pages/{page}",
                encode(thread()?),
                encode(id)
            ),
            Named::Published(id) => format!(
                "/api/threads/{}/published/{}/content",
                encode(thread()?),
                encode(id)
            ),
            Named::Revision { id, revision, part } => {
                let file = format!(
                    "/api/threads/{}/published/{}",
                    encode(thread()?),
                    encode(id)
                );
                match part {
                    RevisionPart::Content => format!("{file}/content?revision={revision}"),
                    RevisionPart::Preview => format!("{file}/preview?revision={revision}"),
                    RevisionPart::Page(page) => {
                        format!("{file}/pages/{page}?revision={revision}")
                    }
                }
            }
        })
    }

    /// The caller, or the protocol error a resource request answers without one.
    fn resource_caller(&self, context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
        self.caller(context).map_err(|stop| {
            let message = stop
                .content
                .iter()
                .find_map(|c| c.as_text().map(|t| t.text.clone()))
                .unwrap_or_default();
            ErrorData::invalid_request(message, None)
        })
    }
}

/// A successful GET as resource contents: text for text types that are UTF-8, base64 for the
/// rest.
fn contents_of(uri: &str, response: &ApiResponse) -> ResourceContents {
    let content_type = response
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_owned();
    match std::str::from_utf8(&response.body) {
        Ok(text) if tools::is_text_type(&content_type) => {
            ResourceContents::text(text, uri).with_mime_type(content_type)
        }
        _ => ResourceContents::blob(STANDARD.encode(&response.body), uri)
            .with_mime_type(content_type),
    }
}

impl ServerHandler for FerryMcp {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build();
        // Any client can be told of changes: a `ferry mcp` session by `resources/subscribe`
        // or `subscriptions/listen`, a `/mcp` client by `subscriptions/listen` (protocol
        // 2026-07-28). See `initialize` for clients of older revisions over `/mcp`.
        if let Some(resources) = capabilities.resources.as_mut() {
            resources.subscribe = Some(true);
        }
        let mut config = ServerConfig::new(capabilities).with_instructions(INSTRUCTIONS);
        config.server_info = Implementation::new("ferry", env!("CARGO_PKG_VERSION"))
            .with_title("ferry")
            .with_description("A file exchange between people and their AI agents");
        config
    }

    /// A client of a revision before 2026-07-28 subscribes with `resources/subscribe`, which
    /// needs a session to send later notifications on: `/mcp` keeps none, so its handshake
    /// does not offer subscriptions to such a client.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        if let (Callers::PerRequest, Some(resources)) =
            (&self.callers, result.capabilities.resources.as_mut())
        {
            resources.subscribe = None;
        }
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut listed = tools::all();
        if let Ok(caller) = self.caller(&context)
            && self.runs_commands(&caller).await
        {
            listed.push(execute_tool::tool());
        }
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    /// The thread's uploads and published files (sandbox and space files are reached by the
    /// templates: there may be very many).
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = self.resource_caller(&context)?;
        let mut listed = vec![file_card::resource()];
        let Some(thread) = caller.thread.clone() else {
            return Ok(ListResourcesResult::with_all_items(listed));
        };
        let fetch = |route: String| {
            let caller = caller.clone();
            async move {
                let response = self.get(&caller, route).await.ok()?;
                response.status.is_success().then_some(())?;
                serde_json::from_slice::<Value>(&response.body).ok()
            }
        };
        if let Some(uploads) = fetch(format!("/api/threads/{}/uploads", encode(&thread))).await {
            for upload in uploads["uploads"].as_array().into_iter().flatten() {
                let (Some(id), Some(name)) = (upload["id"].as_str(), upload["fileName"].as_str())
                else {
                    continue;
                };
                let mut resource = Resource::new(format!("ferry://uploads/{id}"), name)
                    .with_description("a file the user uploaded");
                if let Some(mime) = upload["fileType"].as_str() {
                    resource = resource.with_mime_type(mime);
                }
                if let Some(size) = upload["size"].as_u64() {
                    resource = resource.with_size(size);
                }
                listed.push(resource);
            }
        }
        if let Some(published) = fetch(format!("/api/threads/{}/published", encode(&thread))).await
        {
            for file in published["files"].as_array().into_iter().flatten() {
                let (Some(id), Some(name)) = (file["id"].as_str(), file["filename"].as_str())
                else {
                    continue;
                };
                let mut resource = Resource::new(format!("ferry://published/{id}"), name);
                if let Some(title) = file["display_name"].as_str() {
                    resource = resource.with_title(title);
                }
                if let Some(mime) = file["mime_type"].as_str() {
                    resource = resource.with_mime_type(mime);
                }
                if let Some(size) = file["file_size"].as_u64() {
                    resource = resource.with_size(size);
                }
                listed.push(resource);
            }
        }
        Ok(ListResourcesResult::with_all_items(listed))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.resource_caller(&context)?;
        if request.uri == file_card::URI {
            return Ok(ReadResourceResult::new(vec![file_card::contents()]).into());
        }
        let named = Named::parse(&request.uri).map_err(|e| ErrorData::invalid_params(e.0, None))?;
        let route = Self::route_of(&caller, &named)?;
        let response = self.get(&caller, route).await.map_err(|stop| {
            ErrorData::internal_error(
                stop.content
                    .iter()
                    .find_map(|c| c.as_text().map(|t| t.text.clone()))
                    .unwrap_or_default(),
                None,
            )
        })?;
        if !response.status.is_success() {
            // The server's envelope, as the error's message and data.
            let envelope = serde_json::from_slice::<Value>(&response.body).ok();
            let message = String::from_utf8_lossy(&response.body).into_owned();
            return Err(if response.status == http::StatusCode::NOT_FOUND {
                ErrorData::resource_not_found(message, envelope)
            } else {
                ErrorData::invalid_params(message, envelope)
            });
        }
        Ok(ReadResourceResult::new(vec![contents_of(&request.uri, &response)]).into())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let Callers::Fixed(caller) = &self.callers else {
            return Err(ErrorData::invalid_request(
                "/mcp keeps no session to notify: send subscriptions/listen (protocol \
                 2026-07-28), follow the space's feed or the thread's events over HTTP, or \
                 connect with `ferry mcp` (stdio)",
                None,
            ));
        };
        // The answer is sent once following has begun: a change after it is always told.
        let followed = self
            .start_following(caller, &request.uri, None, &mut HashMap::new())
            .await?;
        let peer = context.peer.clone();
        let task = tokio::spawn(
            self.clone()
                .follow(caller.clone(), vec![followed], move |uri| {
                    let peer = peer.clone();
                    async move {
                        peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                            .await
                            .is_ok()
                    }
                }),
        );
        let mut subscriptions = self.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(earlier) = subscriptions.insert(request.uri, task.abort_handle()) {
            earlier.abort();
        }
        Ok(())
    }

    /// `subscriptions/listen` (protocol 2026-07-28): the resources asked for that are ferry's
    /// (`ferry://…`); no list-changed notifications are sent (the tools and templates never
    /// change, and a listing's members are seen on the feeds).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let ours = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| Named::parse(uri).is_ok());
        let mut accepted = SubscriptionFilter::new();
        if requested.resource_subscriptions.is_some() {
            accepted.resource_subscriptions = Some(ours.cloned().collect());
        }
        Some(accepted)
    }

    /// Follows every accepted resource and sends `notifications/resources/updated` on the
    /// listen request's own stream until the client closes it. A resource the caller may not
    /// read ends the request with an error naming why.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        // The acknowledgment has gone out before this runs, and a client may change a resource
        // the moment it reads it: changes written from shortly before this moment on are told,
        // so none made after the acknowledgment is missed (one made just before may be told
        // too, which costs the client one read).
        let since = Timestamp(Timestamp::now().millis() - LISTEN_LOOKBACK_MS).rfc3339();
        let caller = self.resource_caller(subscription.request_context())?;
        // Held while the stream is open: each caller has a bounded number at once.
        let _slot = self.listens.take(&caller.token)?;
        let uris = subscription
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        if uris.len() > MAX_LISTENED {
            return Err(ErrorData::invalid_params(
                format!(
                    "one subscriptions/listen request follows at most {MAX_LISTENED} resources \
                     ({} were asked for): split them over several",
                    uris.len()
                ),
                None,
            ));
        }
        let sink = subscription.sink().clone();
        let told = move |uri: String| {
            let sink = sink.clone();
            async move { sink.notify_resource_updated(uri).await.is_ok() }
        };
        // Everything, the checks of each resource included, stops when the client leaves.
        let work = async {
            let mut followed = Vec::with_capacity(uris.len());
            let mut starts = HashMap::new();
            for uri in &uris {
                followed.push(
                    self.start_following(&caller, uri, Some(&since), &mut starts)
                        .await?,
                );
            }
            self.clone().follow(caller.clone(), followed, told).await;
            Ok::<(), ErrorData>(())
        };
        tokio::select! {
            () = subscription.cancelled() => {}
            done = work => done?,
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let mut subscriptions = self.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(task) = subscriptions.remove(&request.uri) {
            task.abort();
        }
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::find(name).or_else(|| (name == execute_tool::EXECUTE).then(execute_tool::tool))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.get_tool(&request.name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("unknown tool '{}'", request.name),
                None,
            ));
        }
        let caller = match self.caller(&context) {
            Ok(caller) => caller,
            Err(error) => return Ok((*error).into()),
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        if request.name == execute_tool::EXECUTE {
            // A cancelled call is dropped, and with it the request that runs the command.
            let cancelled = context.ct.clone();
            let ran = tokio::select! {
                ran = self.execute(&caller, arguments, &context) => ran,
                () = cancelled.cancelled() => Err(envelope(
                    ErrorCode::InvalidRequest,
                    "the call was cancelled: the command was stopped",
                )),
            };
            return Ok(ran.unwrap_or_else(|stop| *stop).into());
        }
        Ok(self.run(&caller, &request.name, arguments).await.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded_one_by_one() {
        assert_eq!(
            encode_path("ideas/20261121 tea shop.md"),
            "ideas/20261121%20tea%20shop.md"
        );
        assert_eq!(encode_path("a/../b"), "a/../b");
        assert_eq!(encode_path("a%2e%2e/b?c#d"), "a%252e%252e/b%3Fc%23d");
        assert_eq!(encode_path("ünï/çödé"), "%C3%BCn%C3%AF/%C3%A7%C3%B6d%C3%A9");
        assert_eq!(encode("ideas/x"), "ideas%2Fx");
    }

    #[test]
    fn thread_claim_is_read_from_the_payload() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"sub":"u","role":"agent","thread":"t-1"}"#);
        assert_eq!(
            thread_claim(&format!("h.{payload}.s")).as_deref(),
            Some("t-1")
        );
        let none = URL_SAFE_NO_PAD.encode(br#"{"sub":"u","role":"authenticated"}"#);
        assert_eq!(thread_claim(&format!("h.{none}.s")), None);
        assert_eq!(thread_claim("not-a-jwt"), None);
    }

    #[test]
    fn base_url_prefers_the_proxy_headers() {
        let request = http::Request::builder()
            .uri("/mcp")
            .header("host", "127.0.0.1:8080")
            .body(())
            .unwrap();
        let (parts, ()) = request.into_parts();
        assert_eq!(base_url_of(&parts), "http://127.0.0.1:8080");
        let request = http::Request::builder()
            .uri("/mcp")
            .header("host", "10.0.0.2:8080")
            .header("x-forwarded-host", "files.example.com")
            .header("x-forwarded-proto", "https")
            .body(())
            .unwrap();
        let (parts, ()) = request.into_parts();
        assert_eq!(base_url_of(&parts), "https://files.example.com");
    }

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
