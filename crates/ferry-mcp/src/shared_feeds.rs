//! One reader per followed feed and token, shared by every stream that follows it.
//!
//! Streams following resources (`subscriptions/listen`, `resources/subscribe`) learn of changes
//! by reading the feeds the changes are stored on. Read by each stream on its own, a caller with
//! eight streams on one thread reads that thread's events eight times a second. Here the first
//! stream on a feed starts a reader that reads it about once a second and hands each batch of
//! new events to every stream on it; the reader stops when its last stream is gone.
//!
//! A reader is shared only by streams holding the same token, so it reads exactly what each of
//! them may read, and a token that stops being accepted (its thread deleted, its time up) stops
//! its reader's reads with it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::caller::Caller;
use crate::client::Client;
use crate::watch;

/// New events of a feed, in the order of their ids, as one reading found them.
pub(crate) type Batch = Arc<Vec<Value>>;

/// Events read in one page of a feed (the events routes' largest `limit`).
pub(crate) const PAGE: i64 = 1000;

/// Batches kept for a stream that has not taken them yet. A stream further behind than this
/// (its client reads slowly) reads the feed itself from where it was ([`Receiver::next`]).
const KEPT_BATCHES: usize = 64;

/// The readers of every followed feed on this server, by token and feed route.
#[derive(Debug, Default)]
pub struct SharedFeeds {
    readers: Mutex<HashMap<Key, broadcast::Sender<Batch>>>,
}

/// The token a reader reads with, and the route of its feed.
type Key = (String, String);

impl SharedFeeds {
    /// Joins the reader of `route` for `caller`'s token, starting one (which reads from
    /// `after` on) when none runs. The stream then also reads the feed itself once from its own
    /// start ([`Receiver::catch_up`]): a reader already running may have gone past it.
    pub(crate) fn join(
        self: &Arc<Self>,
        client: &Client,
        caller: &Caller,
        route: &str,
        after: i64,
    ) -> broadcast::Receiver<Batch> {
        let key = (caller.token.clone(), route.to_owned());
        let mut readers = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = readers.get(&key) {
            return sender.subscribe();
        }
        let (sender, receiver) = broadcast::channel(KEPT_BATCHES);
        readers.insert(key.clone(), sender.clone());
        tokio::spawn(Arc::clone(self).read(client.clone(), caller.clone(), key, after, sender));
        receiver
    }

    /// A feed's reader: reads it about once a second — a page at a time, until its end — and
    /// sends what is new to every stream on it, until none is left.
    async fn read(
        self: Arc<Self>,
        client: Client,
        caller: Caller,
        key: Key,
        mut after: i64,
        sender: broadcast::Sender<Batch>,
    ) {
        loop {
            tokio::time::sleep(watch::POLL).await;
            loop {
                if self.leave_if_unfollowed(&key, &sender) {
                    return;
                }
                // A feed that cannot be read now (a server restarting, a token no longer
                // accepted) is tried again at the next reading.
                let Some(events) = client.events_page(&caller, &key.1, after, PAGE).await else {
                    break;
                };
                let full = events.len() as i64 >= PAGE;
                after = last_id(&events, after);
                if !events.is_empty() {
                    // No stream may be left now; the check above ends the reader.
                    let _ = sender.send(Arc::new(events));
                }
                if !full {
                    break;
                }
            }
        }
    }

    /// Removes the reader of `key` when no stream is left on it: under the lock a stream joins
    /// by, so none can join a reader that is ending.
    fn leave_if_unfollowed(&self, key: &Key, sender: &broadcast::Sender<Batch>) -> bool {
        let mut readers = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        if sender.receiver_count() > 0 {
            return false;
        }
        readers.remove(key);
        true
    }

    /// Feeds being read now.
    #[cfg(test)]
    pub(crate) fn readers(&self) -> usize {
        self.readers.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// The highest event id in `events`, or `after` when there is none higher.
pub(crate) fn last_id(events: &[Value], after: i64) -> i64 {
    events
        .iter()
        .filter_map(|e| e["id"].as_i64())
        .fold(after, i64::max)
}

/// One stream's place on one shared feed: the batches it is handed, and the last event it has
/// seen, so that what it reads itself and what it is handed are each taken once.
pub(crate) struct Receiver {
    pub route: String,
    batches: broadcast::Receiver<Batch>,
    seen: i64,
}

impl Receiver {
    pub(crate) fn new(route: String, batches: broadcast::Receiver<Batch>, seen: i64) -> Receiver {
        Receiver {
            route,
            batches,
            seen,
        }
    }

    /// The feed's events after the ones this stream has seen, read by the stream itself to its
    /// end, a page at a time (`None` when the feed cannot be read now). What it has seen moves
    /// only when the whole read is done, so a read dropped half-way loses nothing.
    pub(crate) async fn catch_up(&mut self, client: &Client, caller: &Caller) -> Option<Batch> {
        let (mut new, mut seen) = (Vec::new(), self.seen);
        loop {
            let events = client.events_page(caller, &self.route, seen, PAGE).await?;
            let full = events.len() as i64 >= PAGE;
            seen = last_id(&events, seen);
            new.extend(events);
            if !full {
                self.seen = seen;
                return Some(Arc::new(new));
            }
        }
    }

    /// The next events this stream has not seen: from the shared reader, or, when the stream
    /// fell more than [`KEPT_BATCHES`] behind, read again by itself. `None` when the reader is
    /// gone (it goes only when no stream is left on it). Dropped before it answers (a stream
    /// waits on several feeds at once), it loses nothing: nothing seen is marked before then.
    pub(crate) async fn next(&mut self, client: &Client, caller: &Caller) -> Option<Batch> {
        loop {
            match self.batches.recv().await {
                Ok(batch) if batch.iter().all(|e| self.is_new(e)) => {
                    self.seen = last_id(&batch, self.seen);
                    return Some(batch);
                }
                Ok(batch) => {
                    let new: Vec<Value> =
                        batch.iter().filter(|e| self.is_new(e)).cloned().collect();
                    if new.is_empty() {
                        continue;
                    }
                    self.seen = last_id(&new, self.seen);
                    return Some(Arc::new(new));
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if let Some(batch) = self.catch_up(client, caller).await
                        && !batch.is_empty()
                    {
                        return Some(batch);
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    fn is_new(&self, event: &Value) -> bool {
        event["id"].as_i64().is_some_and(|id| id > self.seen)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use async_trait::async_trait;
    use http::{HeaderMap, StatusCode};
    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;
    use crate::api::{Api, ApiRequest, ApiStream};
    use crate::resources::Named;
    use crate::subscriptions::{Followed, follow};
    use crate::watch::Feed;

    /// A server with one thread's feed, counting how often it is read.
    #[derive(Debug, Default)]
    struct OneFeed {
        events: Mutex<Vec<Value>>,
        reads: AtomicUsize,
    }

    impl OneFeed {
        fn write(&self, path: &str) {
            let mut events = self.events.lock().unwrap();
            let id = events.len() as i64 + 1;
            events.push(json!({
                "id": id, "type": "file_written", "role": "agent", "agentId": "agent",
                "sessionId": "t1", "content": null, "timestamp": "1970-01-01T00:00:00.000Z",
                "path": path, "door": "http",
            }));
        }
    }

    #[async_trait]
    impl Api for OneFeed {
        async fn call_streaming(&self, request: ApiRequest) -> anyhow::Result<ApiStream> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let query = request.path_and_query.split_once('?').unwrap().1;
            let number = |name: &str| -> i64 {
                query
                    .split('&')
                    .find_map(|pair| pair.strip_prefix(name))
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            let (after, limit) = (number("after="), number("limit="));
            let page: Vec<Value> = self
                .events
                .lock()
                .unwrap()
                .iter()
                .filter(|e| e["id"].as_i64().unwrap() > after)
                .take(limit as usize)
                .cloned()
                .collect();
            let body = bytes::Bytes::from(serde_json::to_vec(&page)?);
            Ok(ApiStream {
                status: StatusCode::OK,
                headers: HeaderMap::new(),
                body: Box::pin(futures::stream::once(async move { Ok(body) })),
            })
        }
    }

    /// A stream following `path` on the thread's feed, as `token`; what it is told arrives on
    /// the answer.
    fn stream(
        server: &Arc<OneFeed>,
        feeds: &Arc<SharedFeeds>,
        token: &str,
        path: &str,
    ) -> (tokio::task::JoinHandle<()>, mpsc::UnboundedReceiver<String>) {
        let client = Client {
            api: Arc::clone(server) as Arc<dyn Api>,
        };
        let caller = Caller {
            token: token.to_owned(),
            base_url: "http://ferry.test".to_owned(),
            thread: Some("t1".to_owned()),
            extensions: http::Extensions::new(),
        };
        let uri = format!("ferry://sandbox/{path}");
        let feed = Feed::of(&Named::parse(&uri).unwrap(), Some("t1"), str::to_owned).unwrap();
        let followed = Followed {
            uri,
            feed,
            after: 0,
        };
        let (told, telling) = mpsc::unbounded_channel();
        let task = tokio::spawn(follow(
            client,
            Arc::clone(feeds),
            caller,
            vec![followed],
            move |uri| {
                let told = told.clone();
                async move { told.send(uri).is_ok() }
            },
        ));
        (task, telling)
    }

    async fn told(telling: &mut mpsc::UnboundedReceiver<String>) -> String {
        tokio::time::timeout(Duration::from_secs(5), telling.recv())
            .await
            .expect("told within the reader's next readings")
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn streams_of_one_token_share_one_reader_of_their_feed() {
        let server = Arc::new(OneFeed::default());
        let feeds = Arc::new(SharedFeeds::default());
        let mut streams: Vec<_> = (0..8)
            .map(|i| stream(&server, &feeds, "alice", &format!("f{i}.md")))
            .collect();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(feeds.readers(), 1);
        let started = server.reads.load(Ordering::SeqCst);

        // Ten idle seconds: the feed is read about once a second, not once per stream.
        tokio::time::sleep(Duration::from_secs(10)).await;
        let idle = server.reads.load(Ordering::SeqCst) - started;
        assert!((9..=11).contains(&idle), "{idle} reads in 10 s");

        // A change is told to the stream that follows it, and to no other.
        server.write("/sandbox/f3.md");
        assert_eq!(told(&mut streams[3].1).await, "ferry://sandbox/f3.md");
        tokio::time::sleep(Duration::from_secs(2)).await;
        for (i, (_, telling)) in streams.iter_mut().enumerate() {
            assert!(
                telling.try_recv().is_err(),
                "stream {i} told of another's file"
            );
        }

        // A stream that joins a running reader is told of what that reader read before it
        // joined (its own catch-up read); another token has a reader of its own.
        let (late, mut late_told) = stream(&server, &feeds, "alice", "f3.md");
        assert_eq!(told(&mut late_told).await, "ferry://sandbox/f3.md");
        assert_eq!(feeds.readers(), 1);
        let (_bob, mut bob_told) = stream(&server, &feeds, "bob", "f3.md");
        assert_eq!(told(&mut bob_told).await, "ferry://sandbox/f3.md");
        assert_eq!(feeds.readers(), 2);
        streams.push((late, late_told));

        // When the last stream of a token goes, so does its reader.
        for (task, _) in &streams {
            task.abort();
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(feeds.readers(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_longer_than_a_page_is_read_to_its_end_and_told_once() {
        let server = Arc::new(OneFeed::default());
        let feeds = Arc::new(SharedFeeds::default());
        let (_task, mut telling) = stream(&server, &feeds, "alice", "last.md");
        tokio::time::sleep(Duration::from_millis(100)).await;
        for _ in 0..2500 {
            server.write("/sandbox/busy.md");
        }
        server.write("/sandbox/last.md");
        assert_eq!(told(&mut telling).await, "ferry://sandbox/last.md");
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(telling.try_recv().is_err(), "told twice");
    }
}
