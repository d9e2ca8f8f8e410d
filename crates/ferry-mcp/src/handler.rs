//! Why one file: the `ServerHandler` implementation, the tool dispatch and the resource
//! methods share `FerryMcp`'s state, defined here. Every request goes through `client.rs`; the
//! tools themselves live apart (`thread_tools.rs`, `space_tools.rs`, `file_tools.rs`,
//! `execute_tool.rs`), as do who a call acts as (`caller.rs`), what it answers (`outcome.rs`)
//! and followed resources (`subscriptions.rs`, `shared_feeds.rs`), none of which imports this
//! file back.
//!
//! The MCP server: each tool call becomes one request to ferry's HTTP API, and the answer
//! becomes the tool's result.
//!
//! Nothing here decides a rule of its own: paths, space names, limits, roles and the
//! send_file list are all checked by the server, and its answer comes back unchanged. What is
//! decided here is only what MCP needs: the shape of the request, base64 for bytes that JSON
//! cannot carry, and the link to a published file.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ferry_core::error_code::ErrorCode;
use ferry_core::timestamp::Timestamp;
use http::header::CONTENT_TYPE;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    InitializeRequestParams, InitializeResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::task::AbortHandle;

use crate::api::{Api, ApiResponse};
use crate::caller::{Caller, Callers, base_url_of, bearer, encode, thread_claim};
use crate::client::Client;
use crate::execute_tool;
use crate::file_card;
use crate::file_tools;
use crate::outcome::{Outcome, Stop, answer, envelope, read_result};
use crate::resources::{self, Named};
use crate::shared_feeds::SharedFeeds;
use crate::subscriptions::{self, LISTEN_LOOKBACK_MS, ListenSlots, MAX_LISTENED};
use crate::tools::{self, INSTRUCTIONS};

/// ferry's MCP server, over any transport and any [`Api`].
#[derive(Clone, Debug)]
pub struct FerryMcp {
    pub(crate) client: Client,
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
            client: Client { api },
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
            client: Client { api },
            subscriptions: Arc::default(),
            listens,
            feeds,
            callers: Callers::PerRequest,
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
}

impl FerryMcp {
    /// A file tool: its arguments are the body of the route of the same name — in the token's
    /// thread, or in the thread `ferry mcp` was given for a token that names none.
    async fn file_tool(&self, caller: &Caller, tool: &str, arguments: Value) -> Outcome {
        let path = match &caller.thread {
            Some(thread) => format!("/api/threads/{}/fs/{tool}", encode(thread)),
            None => format!("/api/fs/{tool}"),
        };
        let response = self.client.post_json(caller, path, arguments).await?;
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

impl FerryMcp {
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
            && execute_tool::runs_commands(&self.client, &caller).await
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
                let response = self.client.get(&caller, route).await.ok()?;
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
        let route = resources::route_of(&caller, &named)?;
        let response = self.client.get(&caller, route).await.map_err(|stop| {
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
        let followed = subscriptions::start_following(
            &self.client,
            caller,
            &request.uri,
            None,
            &mut HashMap::new(),
        )
        .await?;
        let peer = context.peer.clone();
        let task = tokio::spawn(subscriptions::follow(
            self.client.clone(),
            Arc::clone(&self.feeds),
            caller.clone(),
            vec![followed],
            move |uri| {
                let peer = peer.clone();
                async move {
                    peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                        .await
                        .is_ok()
                }
            },
        ));
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
                    subscriptions::start_following(
                        &self.client,
                        &caller,
                        uri,
                        Some(&since),
                        &mut starts,
                    )
                    .await?,
                );
            }
            subscriptions::follow(
                self.client.clone(),
                Arc::clone(&self.feeds),
                caller.clone(),
                followed,
                told,
            )
            .await;
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
                ran = execute_tool::execute(&self.client, &caller, arguments, &context) => ran,
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
