//! Threads (docs/reference/threads-and-sandbox.md) and agent tokens (docs/reference/auth.md).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use utoipa::ToSchema;

use crate::access::{Action, thread_for};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use ferry_store::threads::Thread;

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
#[serde(rename_all = "camelCase")]
pub struct ThreadView {
    pub id: String,
    pub title: Option<String>,
    pub owner: String,
    pub created_at: String,
    /// The sandbox's folder on the server's host; told to agent and service_role tokens only,
    /// and only where sandboxes are folders (not when they live in the blob store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_dir: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ThreadList {
    pub threads: Vec<ThreadView>,
}

fn view(state: &AppState, principal: &Principal, thread: Thread) -> ThreadView {
    let sandbox_dir = match principal {
        Principal::Agent { .. } | Principal::Service { .. } => state
            .sandboxes
            .host_path(&thread.id)
            .map(|p| p.to_string_lossy().into_owned()),
        Principal::User { .. } => None,
    };
    ThreadView {
        id: thread.id,
        title: thread.title,
        owner: thread.owner,
        created_at: thread.created_at.rfc3339(),
        sandbox_dir,
    }
}

/// Creates a thread with its sandbox.
#[utoipa::path(
    post, path = "/api/threads", tag = "threads",
    request_body = NewThread,
    responses(
        (status = 201, body = ThreadView),
        (status = 400, description = "INVALID_REQUEST"),
        (status = 403, description = "FORBIDDEN: agents cannot create threads"),
    ),
    security(("bearer" = []))
)]
pub async fn create_thread(
    State(state): State<AppState>,
    principal: Principal,
    body: Option<ApiJson<NewThread>>,
) -> ApiResult<(StatusCode, Json<ThreadView>)> {
    let body = body.map(|b| b.0).unwrap_or_default();
    let owner = match (&principal, body.owner) {
        (Principal::User { sub }, None) => sub.clone(),
        (Principal::User { sub }, Some(owner)) if owner == *sub => owner,
        (Principal::User { .. }, Some(_)) => {
            return Err(ApiError::forbidden(
                "only service_role may create a thread for another user",
            ));
        }
        (Principal::Service { .. }, Some(owner)) if !owner.is_empty() => owner,
        (Principal::Service { sub: Some(sub) }, None) => sub.clone(),
        (Principal::Service { .. }, _) => {
            return Err(ApiError::invalid_request(
                "a service_role token must name the thread's owner in 'owner'",
            ));
        }
        (Principal::Agent { .. }, _) => {
            return Err(ApiError::forbidden("agents cannot create threads"));
        }
    };
    let title = body
        .title
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty());
    if title.as_ref().is_some_and(|t| t.chars().count() > 500) {
        return Err(ApiError::invalid_request(
            "'title' is longer than 500 characters",
        ));
    }
    let thread = state.db.create_thread(&owner, title.as_deref()).await?;
    state
        .sandboxes
        .create(&thread.id, state.config.skills_dir.as_deref())
        .await?;
    Ok((StatusCode::CREATED, Json(view(&state, &principal, thread))))
}

/// Lists the caller's threads, newest first (an agent sees its one thread; service_role sees
/// its `sub`'s threads, or every thread without one).
#[utoipa::path(
    get, path = "/api/threads", tag = "threads",
    responses((status = 200, body = ThreadList)),
    security(("bearer" = []))
)]
pub async fn list_threads(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<Json<ThreadList>> {
    let threads = match &principal {
        Principal::User { sub } | Principal::Service { sub: Some(sub) } => {
            state.db.threads(Some(sub)).await?
        }
        Principal::Service { sub: None } => state.db.threads(None).await?,
        Principal::Agent { thread, sub, .. } => state
            .db
            .thread(thread)
            .await?
            .into_iter()
            .filter(|t| t.owner == *sub)
            .collect(),
    };
    Ok(Json(ThreadList {
        threads: threads
            .into_iter()
            .map(|t| view(&state, &principal, t))
            .collect(),
    }))
}

/// One thread.
#[utoipa::path(
    get, path = "/api/threads/{id}", tag = "threads",
    params(("id" = String, Path)),
    responses((status = 200, body = ThreadView), (status = 404, description = "NOT_FOUND")),
    security(("bearer" = []))
)]
pub async fn get_thread(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ThreadView>> {
    let thread = thread_for(&state, &principal, &id, Action::Read).await?;
    Ok(Json(view(&state, &principal, thread)))
}

#[derive(Debug, Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentTokenRequest {
    /// Seconds the token is valid (default 3600, at most 30 days).
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
        (status = 200, body = AgentToken),
        (status = 403, description = "FORBIDDEN: only the owner or service_role"),
        (status = 404, description = "NOT_FOUND"),
    ),
    security(("bearer" = []))
)]
pub async fn agent_token(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    body: Option<ApiJson<AgentTokenRequest>>,
) -> ApiResult<Json<AgentToken>> {
    let thread = thread_for(&state, &principal, &id, Action::Manage).await?;
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
