//! Turns at the extraction workers, shared fairly between the users who ask for them.
//!
//! A plain semaphore serves requests in arrival order, so a user who uploads a dozen slow,
//! hostile documents makes everyone behind them wait for all of them. Here, when a worker
//! frees up, it goes to the waiting request whose owner has the fewest running, then whose
//! owner was served longest ago (round robin between owners), then the earliest; and no owner
//! may hold more than `capacity - 1` workers at once, so with two or more workers one is
//! always left for someone else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The shared pool of turns.
#[derive(Debug)]
pub struct FairQueue {
    capacity: usize,
    per_owner: usize,
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    running: usize,
    running_by_owner: HashMap<String, usize>,
    /// Requests waiting, in arrival order: (ticket, owner).
    waiting: Vec<(u64, String)>,
    next_ticket: u64,
    /// When each owner with work waiting or running last started a turn (a counter).
    last_served: HashMap<String, u64>,
    next_serve: u64,
}

impl State {
    fn running_of(&self, owner: &str) -> usize {
        self.running_by_owner.get(owner).copied().unwrap_or(0)
    }

    /// Owners never served (or not since they were last idle) come first.
    fn served_of(&self, owner: &str) -> Option<u64> {
        self.last_served.get(owner).copied()
    }
}

/// A turn at a worker; dropping it gives the worker to the next request.
#[derive(Debug)]
pub struct Turn {
    queue: Arc<FairQueue>,
    owner: String,
}

impl FairQueue {
    /// A pool of `capacity` workers; one owner may hold at most `capacity - 1` of them (all of
    /// them when there is only one).
    pub fn new(capacity: usize) -> Arc<FairQueue> {
        let capacity = capacity.max(1);
        Arc::new(FairQueue {
            capacity,
            per_owner: (capacity - 1).max(1),
            state: Mutex::default(),
            changed: Notify::new(),
        })
    }

    /// Waits for a turn for `owner`. Cancel-safe: a request dropped while waiting leaves the
    /// queue.
    pub async fn turn(self: &Arc<Self>, owner: &str) -> Turn {
        let ticket = {
            let mut state = self.lock();
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            state.waiting.push((ticket, owner.to_owned()));
            ticket
        };
        let mut waiting = Waiting {
            queue: self,
            ticket: Some(ticket),
        };
        loop {
            let changed = self.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            if self.try_start(ticket, owner) {
                waiting.ticket = None;
                return Turn {
                    queue: self.clone(),
                    owner: owner.to_owned(),
                };
            }
            changed.await;
        }
    }

    /// Requests waiting for a turn.
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `ticket` if a worker is free and it is the most deserving waiter.
    fn try_start(&self, ticket: u64, owner: &str) -> bool {
        let mut state = self.lock();
        if state.running >= self.capacity {
            return false;
        }
        // Of the waiters whose owner is under its share: fewest running, then served longest
        // ago, then first come.
        let next = state
            .waiting
            .iter()
            .filter(|(_, o)| state.running_of(o) < self.per_owner)
            .min_by_key(|(t, o)| (state.running_of(o), state.served_of(o), *t))
            .map(|(t, _)| *t);
        if next != Some(ticket) {
            return false;
        }
        state.waiting.retain(|(t, _)| *t != ticket);
        state.running += 1;
        *state.running_by_owner.entry(owner.to_owned()).or_default() += 1;
        let serve = state.next_serve;
        state.next_serve += 1;
        state.last_served.insert(owner.to_owned(), serve);
        drop(state);
        // Another worker may still be free for the next waiter.
        self.changed.notify_waiters();
        true
    }
}

/// Takes a waiting request out of the queue if it is dropped before its turn.
struct Waiting<'a> {
    queue: &'a FairQueue,
    ticket: Option<u64>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket {
            self.queue.lock().waiting.retain(|(t, _)| *t != ticket);
            self.queue.changed.notify_waiters();
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut state = self.queue.lock();
        state.running -= 1;
        if let Some(count) = state.running_by_owner.get_mut(&self.owner) {
            *count -= 1;
            if *count == 0 {
                state.running_by_owner.remove(&self.owner);
                // An owner with nothing left running or waiting is forgotten.
                if !state.waiting.iter().any(|(_, o)| *o == self.owner) {
                    state.last_served.remove(&self.owner);
                }
            }
        }
        drop(state);
        self.queue.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn another_owner_goes_before_a_busy_ones_backlog() {
        let queue = FairQueue::new(2);
        // Mallory holds her share (one of two workers) and queues ten more.
        let held = queue.turn("mallory").await;
        let backlog: Vec<_> = (0..10)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move {
                    let turn = queue.turn("mallory").await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    drop(turn);
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            queue.waiting(),
            10,
            "over her share, Mallory's requests wait"
        );
        // Alice gets the free worker at once, ahead of the whole backlog.
        let alice = tokio::time::timeout(Duration::from_millis(100), queue.turn("alice")).await;
        assert!(
            alice.is_ok(),
            "alice must not wait behind mallory's backlog"
        );
        drop(alice);
        drop(held);
        for task in backlog {
            task.await.unwrap();
        }
        assert_eq!(queue.waiting(), 0);
    }

    #[tokio::test]
    async fn a_lone_worker_is_shared_in_turns() {
        let queue = FairQueue::new(1);
        let first = queue.turn("a").await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for owner in ["a", "a", "b"] {
            let (queue, order) = (queue.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let _turn = queue.turn(owner).await;
                order.lock().unwrap().push(owner);
            }));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(first);
        for task in tasks {
            task.await.unwrap();
        }
        // b came last, but a has just had a turn: b goes first, then a's two in order.
        assert_eq!(*order.lock().unwrap(), vec!["b", "a", "a"]);
    }

    #[tokio::test]
    async fn a_cancelled_wait_leaves_the_queue() {
        let queue = FairQueue::new(1);
        let held = queue.turn("a").await;
        let waiting = tokio::time::timeout(Duration::from_millis(20), queue.turn("b")).await;
        assert!(waiting.is_err());
        assert_eq!(queue.waiting(), 0);
        drop(held);
        let _next = tokio::time::timeout(Duration::from_millis(100), queue.turn("c"))
            .await
            .expect("the worker is free again");
    }
}
