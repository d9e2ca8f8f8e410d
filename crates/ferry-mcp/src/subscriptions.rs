//! Following resources for a client: `resources/subscribe` (a `ferry mcp` session) and
//! `subscriptions/listen` (a stream of its own on `/mcp` or stdio).
//!
//! A followed resource's changes are the events of its feed (the thread's events, or the
//! space's change feed). What following costs is bounded by what is followed, not by how long
//! the feeds are: where a feed is followed from is found with keyed reads of one event each
//! and one page at its end, once per feed however many of the resources share it; every feed
//! is then read about once a second by one reader, however many resources and streams of the
//! caller are on it ([`crate::shared_feeds`]); and each caller has at most
//! [`MAX_LISTENS_PER_CALLER`] listen streams at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, Method};
use rmcp::model::ErrorData;
use serde_json::Value;

use crate::caller::{Caller, encode};
use crate::client::Client;
use crate::resources::Named;
use crate::shared_feeds::{PAGE, Receiver, SharedFeeds};
use crate::watch::{Feed, FeedEvent};

/// How long before a `subscriptions/listen` request is handled its changes are told from: far
/// more than the moment between its acknowledgment and its handling, and than the clock drift
/// between the nodes that write the feeds.
pub(crate) const LISTEN_LOOKBACK_MS: i64 = 2_000;

/// The most resources one `subscriptions/listen` request follows: each is checked (one HEAD)
/// when it starts.
pub(crate) const MAX_LISTENED: usize = 1000;

/// The most `subscriptions/listen` streams one caller (a user, an agent of one thread, a
/// service token) holds open at once on this server.
pub const MAX_LISTENS_PER_CALLER: usize = 8;

/// A resource being followed: its URI, the feed its changes are stored on, and the last event
/// of that feed that was already there when following began.
pub(crate) struct Followed {
    pub uri: String,
    pub feed: Feed,
    pub after: i64,
}

/// The listen streams open per caller, shared by every request the server answers.
#[derive(Debug, Default)]
pub struct ListenSlots {
    open: Mutex<HashMap<String, usize>>,
}

/// One open listen stream; dropping it (the stream ends, the client leaves) frees its slot.
pub(crate) struct ListenSlot {
    slots: Arc<ListenSlots>,
    key: String,
}

impl ListenSlots {
    /// A slot for one more stream of the caller holding `token`, or an error naming the cap.
    pub(crate) fn take(self: &Arc<Self>, token: &str) -> Result<ListenSlot, ErrorData> {
        let key = caller_key(token);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(key.clone()).or_default();
        if *count >= MAX_LISTENS_PER_CALLER {
            return Err(ErrorData::invalid_request(
                format!(
                    "this caller already has {MAX_LISTENS_PER_CALLER} subscriptions/listen \
                     streams open, the most one may: close one, or follow more resources on one \
                     stream (up to {MAX_LISTENED})"
                ),
                None,
            ));
        }
        *count += 1;
        Ok(ListenSlot {
            slots: Arc::clone(self),
            key,
        })
    }
}

impl Drop for ListenSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// Who a token speaks for, as the slots count callers: its role, user and thread. The server
/// verified the token before the request reached the MCP service, so its claims are read
/// without checking the signature again.
fn caller_key(token: &str) -> String {
    let claims: Value = token
        .trim()
        .split('.')
        .nth(1)
        .and_then(|payload| URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let claim = |name: &str| claims.get(name).and_then(Value::as_str).unwrap_or_default();
    format!("{}:{}:{}", claim("role"), claim("sub"), claim("thread"))
}

/// Whether the feed has an event after `after`: one keyed read of at most one event.
async fn has_event_after(
    client: &Client,
    caller: &Caller,
    route: &str,
    after: i64,
) -> Result<bool, ErrorData> {
    client
        .events_page(caller, route, after, 1)
        .await
        .map(|events| !events.is_empty())
        .ok_or_else(unreadable_feed)
}

/// The id of the feed's newest event (0 when it has none): doubling until past it, then
/// halving, about two reads of one event per bit of the id, however long the feed is.
async fn newest_id(client: &Client, caller: &Caller, route: &str) -> Result<i64, ErrorData> {
    // Invariant: an event after `low` exists (or `low` is 0); none after `high`.
    let (mut low, mut high) = (0i64, 1i64);
    while has_event_after(client, caller, route, high).await? {
        low = high;
        high = high.saturating_mul(2);
    }
    if low == 0 && !has_event_after(client, caller, route, 0).await? {
        return Ok(0);
    }
    // The newest id is in (low, high].
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if has_event_after(client, caller, route, middle).await? {
            low = middle;
        } else {
            high = middle;
        }
    }
    Ok(high)
}

/// Where following a feed starts: the id of its newest event, or with `before` (an RFC 3339
/// time as events write theirs), of its newest event written before that time among its
/// last page of events.
pub(crate) async fn newest(
    client: &Client,
    caller: &Caller,
    route: &str,
    before: Option<&str>,
) -> Result<i64, ErrorData> {
    let newest = newest_id(client, caller, route).await?;
    let Some(before) = before else {
        return Ok(newest);
    };
    let from = (newest - PAGE).max(0);
    let events = client
        .events_page(caller, route, from, PAGE)
        .await
        .ok_or_else(unreadable_feed)?;
    // One format (milliseconds, UTC): the text orders as the time does.
    Ok(events
        .iter()
        .filter(|e| e["createdAt"].as_str().is_none_or(|at| at < before))
        .filter_map(|e| e["id"].as_i64())
        .fold(from, i64::max))
}

/// Starts following `uri` for `caller`: the resource must be one of ferry's and one the
/// caller may read (a HEAD of its route: nothing is downloaded), and its feed is followed
/// from `start` (found by [`newest`], once per feed) on.
pub(crate) async fn start_following(
    client: &Client,
    caller: &Caller,
    uri: &str,
    since: Option<&str>,
    starts: &mut HashMap<String, i64>,
) -> Result<Followed, ErrorData> {
    let named = Named::parse(uri).map_err(|e| ErrorData::invalid_params(e.0, None))?;
    let feed = Feed::of(&named, caller.thread(), encode).ok_or_else(|| {
        ErrorData::invalid_params(
            format!("{uri} belongs to a thread, and the token names none: use an agent token"),
            None,
        )
    })?;
    let route = crate::resources::route_of(caller, &named)?;
    let response = client
        .exchange(
            caller,
            Method::HEAD,
            route,
            HeaderMap::new(),
            bytes::Bytes::new(),
        )
        .await
        .map_err(|_| ErrorData::internal_error("could not reach the ferry server", None))?;
    if response.status == http::StatusCode::FORBIDDEN
        || response.status == http::StatusCode::UNAUTHORIZED
    {
        return Err(ErrorData::invalid_params(
            format!(
                "{uri} may not be read with this token ({})",
                response.status
            ),
            None,
        ));
    }
    let after = match starts.get(&feed.route) {
        Some(after) => *after,
        None => {
            let after = newest(client, caller, &feed.route, since).await?;
            starts.insert(feed.route.clone(), after);
            after
        }
    };
    Ok(Followed {
        uri: uri.to_owned(),
        feed,
        after,
    })
}

/// Follows the feeds of `followed`, each through its shared reader
/// ([`crate::shared_feeds::SharedFeeds`]), which reads it about once a second however many
/// resources and streams are on it, and calls `notify` with the URI of each resource one of
/// the new events concerns (once per batch), until `notify` answers that the client can no
/// longer be told (the session or the listen request ended).
pub(crate) async fn follow<F, Told>(
    client: Client,
    feeds: Arc<SharedFeeds>,
    caller: Caller,
    followed: Vec<Followed>,
    notify: F,
) where
    F: Fn(String) -> Told,
    Told: std::future::Future<Output = bool>,
{
    let mut following: Vec<(Receiver, Vec<Followed>)> = by_feed(followed)
        .into_iter()
        .map(|(route, after, resources)| {
            let batches = feeds.join(&client, &caller, &route, after);
            (Receiver::new(route, batches, after), resources)
        })
        .collect();
    if following.is_empty() {
        return std::future::pending().await;
    }
    // A reader that was already running may have read past where this stream starts.
    for (receiver, resources) in &mut following {
        if let Some(batch) = receiver.catch_up(&client, &caller).await
            && !tell(&batch, resources, &notify).await
        {
            return;
        }
    }
    loop {
        let next = following.iter_mut().enumerate().map(|(i, (receiver, _))| {
            let (client, caller) = (&client, &caller);
            Box::pin(async move { (i, receiver.next(client, caller).await) })
        });
        let ((i, batch), ..) = futures::future::select_all(next).await;
        let Some(batch) = batch else {
            return;
        };
        if !tell(&batch, &following[i].1, &notify).await {
            return;
        }
    }
}

/// The resources of `followed` by feed route, each feed with the earliest start of its
/// resources.
fn by_feed(followed: Vec<Followed>) -> Vec<(String, i64, Vec<Followed>)> {
    let mut feeds: Vec<(String, i64, Vec<Followed>)> = Vec::new();
    for resource in followed {
        match feeds
            .iter_mut()
            .find(|(route, ..)| *route == resource.feed.route)
        {
            Some((_, after, resources)) => {
                *after = (*after).min(resource.after);
                resources.push(resource);
            }
            None => feeds.push((resource.feed.route.clone(), resource.after, vec![resource])),
        }
    }
    feeds
}

/// Tells the client of each of `resources` that an event of `batch` concerns; false when it
/// can no longer be told.
async fn tell<F, Told>(batch: &[Value], resources: &[Followed], notify: &F) -> bool
where
    F: Fn(String) -> Told,
    Told: std::future::Future<Output = bool>,
{
    // Each event is read once, then checked against every resource on its feed.
    let events: Vec<(i64, FeedEvent)> = batch
        .iter()
        .filter_map(|e| Some((e["id"].as_i64()?, FeedEvent::read(e))))
        .collect();
    for resource in resources {
        let changed = events
            .iter()
            .filter(|(id, _)| *id > resource.after)
            .any(|(_, event)| resource.feed.concerns(event));
        if changed && !notify(resource.uri.clone()).await {
            return false;
        }
    }
    true
}

fn unreadable_feed() -> ErrorData {
    ErrorData::invalid_params(
        "the resource's changes cannot be followed: its feed could not be read",
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(claims: &str) -> String {
        format!("h.{}.s", URL_SAFE_NO_PAD.encode(claims))
    }

    #[test]
    fn a_caller_holds_a_bounded_number_of_listen_streams() {
        let slots = Arc::new(ListenSlots::default());
        let alice = token(r#"{"role":"authenticated","sub":"alice"}"#);
        let agent = token(r#"{"role":"agent","sub":"alice","thread":"t1"}"#);
        let held: Vec<ListenSlot> = (0..MAX_LISTENS_PER_CALLER)
            .map(|_| slots.take(&alice).unwrap())
            .collect();
        let refused = slots.take(&alice).err().unwrap();
        assert!(
            refused.message.contains("8 subscriptions/listen streams"),
            "{refused:?}"
        );
        // Another caller (the same user's agent) has its own share.
        let _other = slots.take(&agent).unwrap();
        drop(held);
        assert!(slots.take(&alice).is_ok());
    }
}
