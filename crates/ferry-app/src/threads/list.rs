//! A person's thread list, followed live (docs/reference/threads-and-sandbox.md, "The thread
//! list, live"): every tab of the web UI keeps its list current with it — threads made,
//! renamed and removed anywhere, and the order of their last activity.
//!
//! The feed is told *that* the list changed, never what changed: on each nudge it reads the
//! list again and sends the difference from what it sent before. Nothing is stored for it, and
//! nothing can be missed: a follower that connects (or reconnects) is first sent the whole
//! list, and any later state is a list read after the change it follows.

use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::broadcast;
use utoipa::ToSchema;

use crate::access::principal::Principal;
use crate::app::App;
use crate::error::{Error, Result};
use crate::hub::Live;
use crate::threads::{self, ThreadView};

/// How long a feed gathers nudges before it reads the list again: an agent writing many
/// events a second costs its owner's tabs a few list reads a second, not one per event.
const GATHER: Duration = Duration::from_millis(250);

/// What a follower of the thread list is sent, by `type`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThreadListEvent {
    /// The whole list, most recently active first: always the first event of a feed.
    Threads { threads: Vec<ThreadView> },
    /// A thread that is new to the list, was renamed, or has new events (then its
    /// `lastEventId` and `lastActivityAt` moved on).
    Thread { thread: ThreadView },
    /// A thread that was removed.
    ThreadDeleted { id: String },
}

/// What a feed hands its door next.
#[derive(Debug)]
pub enum Next {
    Events(Vec<ThreadListEvent>),
    /// Time for a keep-alive (the hub's period).
    KeepAlive,
}

/// The person whose list a principal follows: a user's own, or service_role's `sub`'s.
fn follower(principal: &Principal) -> Result<&str> {
    match principal {
        Principal::User { sub } | Principal::Service { sub: Some(sub) } => Ok(sub),
        Principal::Service { sub: None } => Err(Error::forbidden(
            "a service_role token needs a 'sub' claim to follow a thread list: lists belong to a user",
        )),
        Principal::Agent { .. } => Err(Error::forbidden(
            "an agent has one thread and no thread list to follow",
        )),
    }
}

/// One follower's view of a thread list.
#[derive(Debug)]
pub struct Feed {
    app: App,
    principal: Principal,
    live: broadcast::Receiver<Live>,
    /// What the follower was last sent of each thread; `None` until the first list is sent.
    shown: Option<HashMap<String, Shown>>,
}

#[derive(Debug, PartialEq, Eq)]
struct Shown {
    title: Option<String>,
    last_event_id: i64,
}

impl Shown {
    fn of(thread: &ThreadView) -> Shown {
        Shown {
            title: thread.title.clone(),
            last_event_id: thread.last_event_id,
        }
    }
}

impl Feed {
    /// Starts following the caller's list. It listens before it first reads, so a change made
    /// in between is read again rather than lost.
    pub fn follow(app: &App, principal: &Principal) -> Result<Feed> {
        let owner = follower(principal)?;
        let live = app.events.subscribe(&ferry_store::threads::list_key(owner));
        Ok(Feed {
            app: app.clone(),
            principal: principal.clone(),
            live,
            shown: None,
        })
    }

    /// What to send next; `None` when the feed ends (the server shuts down, or the list can no
    /// longer be read).
    pub async fn next(&mut self) -> Option<Next> {
        if self.shown.is_none() {
            let threads = self.read().await?;
            self.shown = Some(
                threads
                    .iter()
                    .map(|t| (t.id.clone(), Shown::of(t)))
                    .collect(),
            );
            return Some(Next::Events(vec![ThreadListEvent::Threads { threads }]));
        }
        loop {
            match self.live.recv().await {
                Ok(Live::KeepAlive) => return Some(Next::KeepAlive),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    tokio::time::sleep(GATHER).await;
                    if self.drain_nudges() {
                        return None;
                    }
                    let events = self.difference(self.read().await?);
                    if !events.is_empty() {
                        return Some(Next::Events(events));
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// Takes the nudges that arrived while gathering; `true` when the hub closed.
    fn drain_nudges(&mut self) -> bool {
        loop {
            match self.live.try_recv() {
                Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) => {}
                Err(broadcast::error::TryRecvError::Empty) => return false,
                Err(broadcast::error::TryRecvError::Closed) => return true,
            }
        }
    }

    async fn read(&self) -> Option<Vec<ThreadView>> {
        match threads::list(&self.app, &self.principal, None).await {
            Ok(threads) => Some(threads),
            Err(e) => {
                tracing::warn!(error = %e, "a thread list could not be read; ending its feed");
                None
            }
        }
    }

    /// The events that bring the follower from what it was sent to `threads`, and remembers
    /// `threads` as sent. Changed threads come least recently active first, so a follower
    /// that puts each at the top of its list ends in the list's order.
    fn difference(&mut self, threads: Vec<ThreadView>) -> Vec<ThreadListEvent> {
        let shown = self.shown.get_or_insert_with(HashMap::new);
        let mut now: HashMap<String, Shown> = HashMap::with_capacity(threads.len());
        let mut events = Vec::new();
        for thread in threads.into_iter().rev() {
            let state = Shown::of(&thread);
            let changed = shown.get(&thread.id) != Some(&state);
            now.insert(thread.id.clone(), state);
            if changed {
                events.push(ThreadListEvent::Thread { thread });
            }
        }
        let mut gone: Vec<String> = shown
            .keys()
            .filter(|id| !now.contains_key(*id))
            .cloned()
            .collect();
        gone.sort();
        events.splice(
            0..0,
            gone.into_iter()
                .map(|id| ThreadListEvent::ThreadDeleted { id }),
        );
        *shown = now;
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(id: &str, title: &str, last_event_id: i64) -> ThreadView {
        ThreadView {
            id: id.into(),
            title: Some(title.into()),
            owner: "alice".into(),
            created_at: String::new(),
            last_activity_at: String::new(),
            last_event_id,
            sandbox_dir: None,
        }
    }

    fn described(events: &[ThreadListEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                ThreadListEvent::Threads { .. } => "list".to_owned(),
                ThreadListEvent::Thread { thread } => format!("thread {}", thread.id),
                ThreadListEvent::ThreadDeleted { id } => format!("deleted {id}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn the_difference_names_removed_threads_then_changed_ones_oldest_first() {
        let (app, _dir) = crate::testing::app().await;
        let alice = Principal::User {
            sub: "alice".into(),
        };
        let mut feed = Feed::follow(&app, &alice).unwrap();
        feed.shown = Some(HashMap::new());
        // First sight: every thread is new, least recently active first.
        let first = feed.difference(vec![
            view("c", "c", 0),
            view("b", "b", 0),
            view("a", "a", 0),
        ]);
        assert_eq!(described(&first), ["thread a", "thread b", "thread c"]);
        // Unchanged: nothing to send.
        assert!(
            feed.difference(vec![
                view("c", "c", 0),
                view("b", "b", 0),
                view("a", "a", 0)
            ])
            .is_empty()
        );
        // `a` has a new event and moved to the top, `b` was renamed, `c` went.
        let next = feed.difference(vec![view("a", "a", 1), view("b", "B", 0)]);
        assert_eq!(described(&next), ["deleted c", "thread b", "thread a"]);
    }
}
