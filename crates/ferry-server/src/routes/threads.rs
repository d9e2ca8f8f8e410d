//! Threads (docs/reference/threads-and-sandbox.md) and agent tokens (docs/reference/auth.md).

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use utoipa::{IntoParams, ToSchema};

use ferry_app::threads::list::{self, ThreadListEvent};
use ferry_app::threads::{self, ThreadView};
use ferry_app::{Action, access};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::openapi::StreamedListEvent;
use crate::state::AppState;

/// Agent tokens live an hour unless asked otherwise, and at most 30 days.
const AGENT_TOKEN_TTL: Duration = Duration::from_secs(3600);
const AGENT_TOKEN_MAX_TTL: u64 = 30 * 86_400;

#[derive(Debug, Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct NewThread {
    pub title: Option<String>,
    /// service_role only: the user the thread belongs to.
    pub owner: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ThreadList {
    pub threads: Vec<ThreadView>,
}

/// Creates a thread with its sandbox.
#[utoipa::path(
    post, path = "/api/threads", tag = "threads",
    request_body(
        content = Option<NewThread>,
        description = "Optional: no body, an empty one or null makes an untitled thread for the caller",
    ),
    responses(
        (status = 201, body = ThreadView, description = "The thread"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "agents cannot create threads")),
    ),
    security(("bearer" = []))
)]
pub async fn create_thread(
    State(state): State<AppState>,
    principal: Principal,
    body: Option<ApiJson<NewThread>>,
) -> ApiResult<(StatusCode, Json<ThreadView>)> {
    let body = body.map(|b| b.0).unwrap_or_default();
    let thread = threads::create(&state.app, &principal, body.title, body.owner).await?;
    Ok((StatusCode::CREATED, Json(thread)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Only threads whose title, messages or file names (uploads, published and sent files)
    /// hold this text, whatever its letters' case (at most 500 characters).
    #[param(max_length = 500)]
    q: Option<String>,
}

/// Lists the caller's threads, most recently active first (an agent sees its one thread;
/// service_role sees its `sub`'s threads, or every thread without one); `q` searches them.
#[utoipa::path(
    get, path = "/api/threads", tag = "threads",
    params(ListParams),
    responses(
        (status = 200, body = ThreadList, description = "The caller's threads"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "a search text over 500 characters")),
    ),
    security(("bearer" = []))
)]
pub async fn list_threads(
    State(state): State<AppState>,
    principal: Principal,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<ThreadList>> {
    let threads = threads::list(&state.app, &principal, params.q.as_deref()).await?;
    Ok(Json(ThreadList { threads }))
}

/// The caller's thread list, live, as Server-Sent Events: first the whole list (`threads`),
/// then each thread made, renamed or with new events (`thread`) and each one removed
/// (`thread_deleted`), wherever it happened. A reconnect starts again with the whole list, so
/// nothing is missed.
#[utoipa::path(
    get, path = "/api/threads/live", tag = "threads",
    operation_id = "follow_threads",
    responses(
        (status = 200, description = "text/event-stream: each message's `data` is a ThreadListEvent",
            content((StreamedListEvent = "text/event-stream"))),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "an agent token, or service_role without a user")),
    ),
    security(("bearer" = []))
)]
pub async fn follow_threads(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<Response> {
    let feed = list::Feed::follow(&state.app, &principal)?;
    let slot = state.streams.take(principal.identity_key())?;
    let frames = futures::stream::unfold((feed, slot), |(mut feed, slot)| async move {
        let frame = match feed.next().await? {
            list::Next::KeepAlive => Bytes::from_static(b":\n\n"),
            list::Next::Events(events) => sse_frames(&events),
        };
        Some((Ok::<_, std::convert::Infallible>(frame), (feed, slot)))
    });
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(frames),
    )
        .into_response())
}

/// Events as server-sent messages, one `data:` line each (compact JSON holds no line break).
fn sse_frames(events: &[ThreadListEvent]) -> Bytes {
    let mut out = Vec::new();
    for event in events {
        out.extend_from_slice(b"data: ");
        serde_json::to_writer(&mut out, event).expect("a thread list event serializes");
        out.extend_from_slice(b"\n\n");
    }
    Bytes::from(out)
}

/// One thread.
#[utoipa::path(
    get, path = "/api/threads/{id}", tag = "threads",
    params(("id" = String, Path)),
    responses((status = 200, body = ThreadView, description = "The thread"), (status = 404, description = refusal(&[ErrorCode::NotFound], ""))),
    security(("bearer" = []))
)]
pub async fn get_thread(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ThreadView>> {
    Ok(Json(threads::get(&state.app, &principal, &id).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadChange {
    /// The new title (trimmed; at most 500 characters); `null` or blank makes the thread
    /// untitled.
    #[schema(max_length = 500)]
    pub title: Option<String>,
}

/// Renames a thread (its owner, or service_role).
#[utoipa::path(
    patch, path = "/api/threads/{id}", tag = "threads",
    params(("id" = String, Path)),
    request_body = ThreadChange,
    responses(
        (status = 200, body = ThreadView, description = "The renamed thread"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "a title over 500 characters, or a malformed body")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only the owner or service_role")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    ),
    security(("bearer" = []))
)]
pub async fn rename_thread(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(change): ApiJson<ThreadChange>,
) -> ApiResult<Json<ThreadView>> {
    Ok(Json(
        threads::rename(&state.app, &principal, &id, change.title).await?,
    ))
}

/// Deletes a thread with everything in it: events, uploads, published files, connectors, S3
/// keys acting in it, and its sandbox (its owner, or service_role).
#[utoipa::path(
    delete, path = "/api/threads/{id}", tag = "threads",
    params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only the owner or service_role")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    ),
    security(("bearer" = []))
)]
pub async fn delete_thread(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    threads::delete(&state.app, &principal, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentTokenRequest {
    /// Seconds the token is valid (default 3600, at most 30 days).
    #[schema(minimum = 1, maximum = 2_592_000)]
    #[serde(default, deserialize_with = "crate::extract::whole_number")]
    pub ttl_seconds: Option<u64>,
    /// The agent's display id in events (default `agent`).
    pub agent_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentToken {
    pub token: String,
    pub expires_at: String,
}

/// Mints a token for the thread's agent.
#[utoipa::path(
    post, path = "/api/threads/{id}/agent-token", tag = "threads",
    params(("id" = String, Path)),
    request_body(content = Option<AgentTokenRequest>),
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "ttlSeconds out of range, or a malformed body")),
        (status = 200, body = AgentToken, description = "A token for the thread's agent"),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only the owner or service_role")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    ),
    security(("bearer" = []))
)]
pub async fn agent_token(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    body: Option<ApiJson<AgentTokenRequest>>,
) -> ApiResult<Json<AgentToken>> {
    let thread = access::thread(&state.app, &principal, &id, Action::Manage).await?;
    let body = body.map(|b| b.0).unwrap_or_default();
    let ttl = match body.ttl_seconds {
        None => AGENT_TOKEN_TTL,
        Some(s) if (1..=AGENT_TOKEN_MAX_TTL).contains(&s) => Duration::from_secs(s),
        Some(_) => {
            return Err(ApiError::invalid_request(format!(
                "'ttlSeconds' must be between 1 and {AGENT_TOKEN_MAX_TTL}"
            )));
        }
    };
    let minted = state.auth.mint_agent(
        &thread.owner,
        &thread.id,
        body.agent_id.as_deref().filter(|a| !a.is_empty()),
        ttl,
    );
    Ok(Json(AgentToken {
        token: minted.token,
        expires_at: ferry_core::Timestamp(minted.expires_at as i64 * 1000).rfc3339(),
    }))
}
