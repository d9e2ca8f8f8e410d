//! The live event hub: delivery of stored events to the subscribers of a thread (or a space's
//! feed, or a person's thread list) on this node.
//!
//! Events are stored first (the database is the channel's memory); the hub only wakes up
//! subscribers. Each thread has a bounded broadcast channel: a subscriber that falls behind is
//! told it lagged and catches up from the database, so a slow or vanished subscriber never
//! slows a publisher or makes the hub grow.
//!
//! The hub also keeps every open stream alive: every [`KEEP_ALIVE`] it sends each channel a
//! [`Live::KeepAlive`], which a stream writes as a comment. One timer for all streams, rather
//! than one per stream that every event would have to poll and push back.
//!
//! It knows nothing of what events mean or who may read them (the events room decides that),
//! so every room and the `App` that holds it can stand on it.

use bytes::Bytes;
use ferry_store::events::StoredEvent;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::broadcast;

/// Events buffered per thread for subscribers that are momentarily behind.
const CHANNEL_CAPACITY: usize = 256;

/// How often every open stream carries a comment, so that proxies and clients keep it open.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What a subscription receives from the hub.
#[derive(Debug, Clone)]
pub enum Live {
    /// A stored event.
    Event(Arc<Delivered>),
    /// Time for a comment (every [`KEEP_ALIVE`]).
    KeepAlive,
    /// Something new was stored on the channel: read it from the store (a space's feed is
    /// told this way rather than handed each event).
    Changed,
}

/// An event on its way to subscribers: stored, and framed for an event stream once for all
/// of them (a thousand subscribers share one buffer rather than format a thousand copies).
#[derive(Debug)]
pub struct Delivered {
    pub event: StoredEvent,
    frame: OnceLock<Bytes>,
}

impl From<StoredEvent> for Delivered {
    fn from(event: StoredEvent) -> Delivered {
        Delivered {
            event,
            frame: OnceLock::new(),
        }
    }
}

impl Delivered {
    /// The event as one server-sent event: `id:` its number in the thread, `data:` its JSON
    /// (compact JSON holds no line break, so one `data:` line carries it).
    pub fn sse_frame(&self) -> Bytes {
        self.frame
            .get_or_init(|| {
                Bytes::from(format!(
                    "id: {}\ndata: {}\n\n",
                    self.event.id, self.event.json
                ))
            })
            .clone()
    }
}

#[derive(Debug, Default)]
pub struct EventHub {
    channels: Mutex<Channels>,
}

#[derive(Debug, Default)]
struct Channels {
    by_thread: HashMap<String, Channel>,
    /// Set at shutdown: no channel opens again.
    closed: bool,
}

#[derive(Debug)]
struct Channel {
    sender: broadcast::Sender<Live>,
    /// The highest event id sent, so a notification of an event this node already sent
    /// (its own, echoed back by Postgres) is not read and sent again.
    last_sent: i64,
}

impl EventHub {
    fn channels(&self) -> std::sync::MutexGuard<'_, Channels> {
        self.channels.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the thread's subscribers with a stored event.
    pub fn publish(&self, event: StoredEvent) {
        let channels = &mut self.channels().by_thread;
        if let Some(channel) = channels.get_mut(&event.thread_id) {
            if channel.sender.receiver_count() == 0 {
                channels.remove(&event.thread_id);
            } else {
                channel.last_sent = channel.last_sent.max(event.id);
                let _ = channel
                    .sender
                    .send(Live::Event(Arc::new(Delivered::from(event))));
            }
        }
    }

    /// Tells the channel's subscribers on this node that something new was stored on it.
    pub fn poke(&self, key: &str) {
        if let Some(channel) = self.channels().by_thread.get(key) {
            let _ = channel.sender.send(Live::Changed);
        }
    }

    /// Sends every open subscription a [`Live::KeepAlive`], and forgets the channels nobody
    /// listens to any more (a broadcast send fails exactly when there is no receiver).
    pub fn keep_alive(&self) {
        self.channels()
            .by_thread
            .retain(|_, channel| channel.sender.send(Live::KeepAlive).is_ok());
    }

    /// Runs [`keep_alive`](Self::keep_alive) every [`KEEP_ALIVE`], for as long as the server
    /// runs.
    pub async fn keep_streams_alive(&self) {
        let mut every =
            tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
        // After a stall (a suspended machine), one comment, not a burst of them.
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            self.keep_alive();
        }
    }

    /// Whether someone on this node follows a channel whose key `kind` accepts.
    pub fn follows_any(&self, kind: impl Fn(&str) -> bool) -> bool {
        self.channels()
            .by_thread
            .iter()
            .any(|(key, c)| kind(key) && c.sender.receiver_count() > 0)
    }

    /// Whether someone on this node listens to the thread and has not been sent event `id`.
    pub fn wants(&self, thread_id: &str, id: i64) -> bool {
        self.channels()
            .by_thread
            .get(thread_id)
            .is_some_and(|c| c.sender.receiver_count() > 0 && id > c.last_sent)
    }

    /// Subscribes to a thread's events from now on. Once the hub is [closed](Self::close),
    /// the receiver is closed from the start.
    pub fn subscribe(&self, thread_id: &str) -> broadcast::Receiver<Live> {
        let mut channels = self.channels();
        if channels.closed {
            // Its sender is gone at once: the receiver answers that it is closed.
            return broadcast::channel(1).1;
        }
        channels
            .by_thread
            .retain(|_, channel| channel.sender.receiver_count() > 0);
        channels
            .by_thread
            .entry(thread_id.to_owned())
            .or_insert_with(|| Channel {
                sender: broadcast::channel(CHANNEL_CAPACITY).0,
                last_sent: 0,
            })
            .sender
            .subscribe()
    }

    /// Closes every channel, now and from now on (the server is shutting down): a subscriber
    /// is told so once it has taken what was sent before, and its stream ends.
    pub fn close(&self) {
        let mut channels = self.channels();
        channels.closed = true;
        channels.by_thread.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::broadcast::error::RecvError;

    fn event(thread_id: &str, id: i64) -> StoredEvent {
        StoredEvent {
            thread_id: thread_id.into(),
            id,
            kind: "message".into(),
            json: format!("{{\"id\":{id}}}"),
        }
    }

    #[tokio::test]
    async fn closing_the_hub_ends_subscriptions_after_what_was_sent() {
        let hub = EventHub::default();
        let mut before = hub.subscribe("t");
        hub.publish(event("t", 1));
        hub.close();
        // What was sent before the close still arrives, then the end.
        assert!(matches!(before.recv().await, Ok(Live::Event(e)) if e.event.id == 1));
        assert!(matches!(before.recv().await, Err(RecvError::Closed)));
        // A subscription after the close ends at once, and publishing reaches no one.
        let mut after = hub.subscribe("t");
        hub.publish(event("t", 2));
        assert!(matches!(after.recv().await, Err(RecvError::Closed)));
        assert!(!hub.wants("t", 2));
    }

    #[tokio::test(start_paused = true)]
    async fn every_open_subscription_is_kept_alive_once_per_period() {
        let hub = Arc::new(EventHub::default());
        let (mut a, mut b) = (hub.subscribe("a"), hub.subscribe("b"));
        drop(hub.subscribe("gone"));
        let start = tokio::time::Instant::now();
        let ticking = tokio::spawn({
            let hub = hub.clone();
            async move { hub.keep_streams_alive().await }
        });
        for n in 1..=3 {
            for receiver in [&mut a, &mut b] {
                let next = tokio::time::timeout(KEEP_ALIVE * 2, receiver.recv()).await;
                assert!(matches!(next, Ok(Ok(Live::KeepAlive))), "{next:?}");
            }
            // On the paused clock, exactly one period after the last (the timer ticks in ms).
            let elapsed = start.elapsed();
            assert!(
                elapsed >= KEEP_ALIVE * n && elapsed < KEEP_ALIVE * n + Duration::from_millis(2),
                "{elapsed:?}"
            );
            assert!(a.is_empty() && b.is_empty());
        }
        // The channel nobody listens to was forgotten at the first keep-alive.
        assert!(!hub.channels().by_thread.contains_key("gone"));
        ticking.abort();
    }

    #[test]
    fn a_frame_is_made_once_and_shared() {
        let delivered = Delivered::from(event("t", 7));
        let (first, second) = (delivered.sse_frame(), delivered.sse_frame());
        assert_eq!(&first[..], b"id: 7\ndata: {\"id\":7}\n\n");
        assert_eq!(first.as_ptr(), second.as_ptr());
    }
}
