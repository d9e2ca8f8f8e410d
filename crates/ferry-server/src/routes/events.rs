//! The thread's event channel (docs/reference/events.md): SSE with replay, JSON polling, and messages.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use ferry_app::events::Source;
use ferry_app::hub::{Delivered, Live};
use ferry_core::SpaceName;
use ferry_core::change::SpaceEvent;
use ferry_core::thread_event::ThreadEvent;
use futures::Stream;
use serde::Deserialize;
use std::collections::VecDeque;
use std::convert::Infallible;
use tokio::sync::broadcast;
use utoipa::{IntoParams, ToSchema};

use ferry_app::threads::messages::{self, NewMessage as Message};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::limits::StreamSlot;
use crate::openapi::StreamedEvent;
use crate::state::AppState;

/// Events read from the database per query while catching up.
const REPLAY_BATCH: u32 = 500;
/// What a stream carries when the hub keeps it alive: an SSE comment.
const COMMENT: &[u8] = b":\n\n";

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventParams {
    /// Only events with an id above this (`Last-Event-ID` takes precedence).
    after: Option<i64>,
    /// `json`: answer the stored events as a JSON array instead of streaming.
    format: Option<String>,
    /// With `format=json`: at most this many events (default and maximum 1,000).
    limit: Option<u32>,
}

/// The thread's events: Server-Sent Events that replay what the client missed, then stream
/// live; or, with `format=json`, a JSON array for polling.
#[utoipa::path(
    get, path = "/api/threads/{id}/events", tag = "events",
    params(("id" = String, Path), EventParams, ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event")),
    responses(
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "a bad Last-Event-ID, after or format")),
        (status = 200, description = "text/event-stream (`id:` is the event's number in the thread, `data:` the event), or with format=json the events as a JSON array",
            content((Vec<ThreadEvent> = "application/json"), (StreamedEvent = "text/event-stream"))),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    ),
    security(("bearer" = []))
)]
pub async fn events(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiQuery(params): ApiQuery<EventParams>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let channel = Source::of_thread(&state.app, &principal, &id).await?;
    follow(state, &principal, channel, params, &headers).await
}

/// A space's change feed: `file_written`, `file_deleted` and `file_moved`, whichever door made
/// the change, as SSE with replay from `Last-Event-ID` (or `after`), or as JSON with
/// `format=json`.
#[utoipa::path(
    get, path = "/api/spaces/{space}/events", tag = "spaces",
    operation_id = "space_events",
    params(("space" = String, Path), EventParams, ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event")),
    responses(
        (status = 200, description = "text/event-stream (`id:` is the event's number in the space, `data:` the event), or with format=json the events as a JSON array",
            content((Vec<SpaceEvent> = "application/json"), (StreamedEvent = "text/event-stream"))),
        (status = 400, description = refusal(&[ErrorCode::InvalidPath], "a bad space name; INVALID_REQUEST: a bad Last-Event-ID, after or format")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "a service token without a user")),
    ),
    security(("bearer" = []))
)]
pub async fn space_events(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(space): ApiPath<String>,
    ApiQuery(params): ApiQuery<EventParams>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let space = SpaceName::parse(&space).map_err(ferry_app::Error::from)?;
    let channel = Source::of_space(&principal, &space)?;
    follow(state, &principal, channel, params, &headers).await
}

/// Answers a channel's events after the resume point, as JSON or as a live stream.
async fn follow(
    state: AppState,
    principal: &Principal,
    channel: Source,
    params: EventParams,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    let last_event_id = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<i64>().ok())
                .ok_or_else(|| ApiError::invalid_request("Last-Event-ID must be an event id"))?,
        ),
        None => None,
    };
    let after = last_event_id.or(params.after).unwrap_or(0).max(0);
    match params.format.as_deref() {
        Some("json") => {
            let limit = params.limit.unwrap_or(1000).clamp(1, 1000);
            let events = channel.after(&state.app, after, limit).await?;
            let body = format!(
                "[{}]",
                events
                    .iter()
                    .map(|e| e.json.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            );
            Ok((
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response())
        }
        None | Some("sse") => {
            let slot = state.streams.take(principal.identity_key())?;
            Ok((
                [
                    (header::CONTENT_TYPE, "text/event-stream"),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                Body::from_stream(subscribe(state, channel, after, slot)),
            )
                .into_response())
        }
        Some(other) => Err(ApiError::invalid_request(format!(
            "unknown format '{other}': use json, or leave it out for SSE"
        ))),
    }
}

fn subscribe(
    state: AppState,
    channel: Source,
    after: i64,
    slot: StreamSlot,
) -> impl Stream<Item = Result<Bytes, Infallible>> {
    let live = state.app.events.subscribe(&channel.key());
    let feed = Feed {
        state,
        channel,
        live,
        last: after,
        catching_up: true,
        pending: VecDeque::new(),
        _slot: slot,
    };
    futures::stream::unfold(feed, |mut feed| async move {
        let frame = feed.next().await?;
        Some((Ok(frame), feed))
    })
}

/// One subscriber's position in a thread's events.
struct Feed {
    state: AppState,
    channel: Source,
    live: broadcast::Receiver<Live>,
    /// The id of the last event handed out.
    last: i64,
    /// Whether the next events come from the database rather than the hub.
    catching_up: bool,
    /// Frames of events read from the database and not yet handed out.
    pending: VecDeque<Bytes>,
    /// The caller's stream slot, freed when the stream is dropped.
    _slot: StreamSlot,
}

impl Feed {
    /// The next frame: an event, or a keep-alive comment; `None` when the stream ends (the hub
    /// closed, or the database failed during a catch-up).
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            if self.catching_up {
                let batch = match self
                    .channel
                    .after(&self.state.app, self.last, REPLAY_BATCH)
                    .await
                {
                    Ok(batch) => batch,
                    Err(e) => {
                        tracing::warn!(error = %e, "event replay failed; closing the stream");
                        return None;
                    }
                };
                self.catching_up = batch.len() == REPLAY_BATCH as usize;
                if let Some(event) = batch.last() {
                    self.last = event.id;
                }
                self.pending
                    .extend(batch.into_iter().map(|e| Delivered::from(e).sse_frame()));
                continue;
            }
            match self.live.recv().await {
                Ok(Live::KeepAlive) => return Some(Bytes::from_static(COMMENT)),
                Ok(Live::Changed) => self.catching_up = true,
                Ok(Live::Event(live)) if live.event.id <= self.last => continue,
                Ok(Live::Event(live)) if live.event.id == self.last + 1 => {
                    self.last = live.event.id;
                    return Some(live.sse_frame());
                }
                Ok(Live::Event(_)) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    self.catching_up = true;
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NewMessage {
    pub text: Option<String>,
    /// Uploads of this thread to attach (user messages only).
    #[serde(default)]
    pub upload_ids: Vec<String>,
    /// service_role only: speak as `user` or `agent` (default `agent`).
    #[schema(pattern = "^(user|agent)$")]
    pub role: Option<String>,
}

/// Posts a message: the owner speaks as `user`, the agent as `agent`.
#[utoipa::path(
    post, path = "/api/threads/{id}/messages", tag = "events",
    params(("id" = String, Path)),
    request_body = NewMessage,
    responses(
        (status = 201, description = "The stored message event"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "only service_role may choose the role")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "over 32 KiB as an event")),
    ),
    security(("bearer" = []))
)]
pub async fn post_message(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<NewMessage>,
) -> ApiResult<Response> {
    let event = messages::post(
        &state.app,
        &principal,
        &id,
        Message {
            text: body.text.as_deref().unwrap_or_default(),
            upload_ids: &body.upload_ids,
            role: body.role.as_deref(),
        },
    )
    .await?;
    let json = event.json;
    Ok((
        StatusCode::CREATED,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        json,
    )
        .into_response())
}
