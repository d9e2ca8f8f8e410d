//! One memory budget for the whole server. Every request that holds a file's bytes in memory
//! (an agent tool that reads a file whole: `read_file`, `download_files`, `edit_file`; `grep`'s
//! batches; an MCP reply made of such an answer) takes its share of the budget first, and gives
//! it back once its answer has been sent. When the budget is spent, a request waits
//! a moment for its share, then is refused `503 UNAVAILABLE` with `Retry-After`: under load the
//! server answers later instead of being killed for running out of memory, whoever caused it.
//!
//! Streams (downloads, uploads, zips of folders, the S3 door, tus, and `write_file` and
//! `upload_files` over HTTP, whose JSON bodies are read as they arrive) hold a fixed buffer each
//! and take nothing from the budget.
//!
//! A share is held by the request, not by the code that took it: the HTTP layer runs each
//! request inside its [`Lease`] and keeps the lease with the answer's body until the last byte
//! has been written, so a client that reads its answer slowly holds the share meanwhile (the
//! bytes are still in memory). Outside a request (a test calling a use case), a share ends with
//! its [`Held`].

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{Error, Result};

/// How long a request waits for its share before it is refused.
const WAIT: Duration = Duration::from_secs(5);

/// The smallest budget: a few ordinary requests at once.
pub const MIN_BUDGET_BYTES: u64 = 16 << 20;

/// What answering with a file read whole holds at its peak, per byte of the file: the bytes,
/// their base64 text (4 for 3), and the serialized answer that carries it, whose buffer grows
/// by doubling (up to twice the answer's size, and the old buffer beside the new while it
/// grows). Measured: a 16 MiB file read by `download_files` peaked at about 4.4 times its
/// size.
pub const ANSWER_BYTES_PER_FILE_BYTE: u64 = 5;

/// The server's budget, in KiB permits.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    permits: Arc<Semaphore>,
    total_kib: u32,
}

impl MemoryBudget {
    pub fn new(bytes: u64) -> MemoryBudget {
        let total_kib = u32::try_from(bytes.max(MIN_BUDGET_BYTES) / 1024).unwrap_or(u32::MAX);
        MemoryBudget {
            permits: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
        }
    }

    pub fn total_bytes(&self) -> u64 {
        u64::from(self.total_kib) * 1024
    }

    /// Bytes held by requests now.
    pub fn held_bytes(&self) -> u64 {
        let free = self.permits.available_permits() as u64;
        (u64::from(self.total_kib).saturating_sub(free)) * 1024
    }

    /// The share of an answer that carries `file_bytes` of a file whole
    /// ([`ANSWER_BYTES_PER_FILE_BYTE`] times them), and, when the request's lease expects that
    /// answer to be carried once more into a reply ([`Lease::expect_reply`]), the reply's share
    /// with it. One acquisition for both: a request that held one share while it waited for the
    /// other could wait on requests waiting on it (the budget's queue is first come, first
    /// served), and all would be refused when their wait ran out.
    pub async fn hold_answer(&self, file_bytes: u64) -> Result<Held> {
        let reply = LEASE
            .try_with(|lease| lease.reserve_reply(file_bytes))
            .unwrap_or(0);
        let held = self
            .hold(
                file_bytes
                    .saturating_mul(ANSWER_BYTES_PER_FILE_BYTE)
                    .saturating_add(reply),
            )
            .await;
        if held.is_err() {
            // Refused: nothing was reserved for the reply after all.
            let _ = LEASE.try_with(|lease| lease.unreserve_reply(reply));
        }
        held
    }

    /// Takes `bytes` of the budget (its whole when `bytes` is more: such a request runs
    /// alone), waiting up to [`WAIT`] for them; `Busy` after that.
    pub async fn hold(&self, bytes: u64) -> Result<Held> {
        // What the current request already holds counts: a request that holds the whole
        // budget goes on alone rather than wait for itself.
        let already = LEASE.try_with(Lease::held_kib).unwrap_or(0);
        let room = u64::from(self.total_kib).saturating_sub(already);
        let kib = bytes.div_ceil(1024).min(room);
        if kib == 0 {
            return Ok(Held(None));
        }
        let kib = u32::try_from(kib).unwrap_or(self.total_kib);
        match tokio::time::timeout(WAIT, Arc::clone(&self.permits).acquire_many_owned(kib)).await {
            Ok(Ok(permit)) => Ok(Held(Some(permit))),
            _ => Err(Error::Busy(format!(
                "the server's memory for answers ({}) is taken by other requests: try again \
                 shortly",
                crate::error::describe_bytes(self.total_bytes())
            ))),
        }
    }
}

/// A share of the budget.
#[derive(Debug)]
#[must_use = "a share is given back when it is dropped"]
pub struct Held(Option<OwnedSemaphorePermit>);

impl Held {
    /// Keeps the share until the current request's answer has been sent (outside a request,
    /// gives it back now).
    pub fn until_answered(mut self) {
        if let Some(permit) = self.0.take() {
            let _ = LEASE.try_with(|lease| lease.keep(permit));
        }
    }
}

/// The shares one request holds until its answer has been sent.
#[derive(Debug, Clone, Default)]
pub struct Lease(Arc<Mutex<Leased>>);

#[derive(Debug, Default)]
struct Leased {
    permits: Vec<OwnedSemaphorePermit>,
    /// The answer is a stream that lasts as long as its client stays (an event stream): a
    /// share taken after it began is given back when its taker is done with it, since keeping
    /// it until the stream ends would hold it for as long as the client cares to listen.
    streaming: bool,
    /// The request's answers are carried once more into a reply holding this many bytes per
    /// byte of answer ([`Lease::expect_reply`]); 0 when not.
    reply_per_answer_byte: u64,
    /// The reply's share taken already with answers' shares, not yet claimed by the reply.
    reply_reserved: u64,
}

tokio::task_local! {
    static LEASE: Lease;
}

impl Lease {
    /// Runs `work` (the request) with this lease as its own.
    pub async fn scope<F: Future>(&self, work: F) -> F::Output {
        LEASE.scope(self.clone(), work).await
    }

    /// Whether the request holds any share.
    pub fn is_empty(&self) -> bool {
        self.leased().permits.is_empty()
    }

    /// Says that the request's answer is an event stream: what is held now stays until it is
    /// sent, and a share taken later is given back when its taker drops it.
    pub fn streaming(&self) {
        self.leased().streaming = true;
    }

    /// Takes `bytes` of `budget` for this request and keeps them until its answer has been
    /// sent: for work done on the request's behalf outside its own task (the MCP endpoint's
    /// replies, built by the MCP service's tasks from the answers of routes it calls in
    /// process).
    pub async fn hold_until_answered(&self, budget: &MemoryBudget, bytes: u64) -> Result<()> {
        self.scope(async { budget.hold(bytes).await.map(Held::until_answered) })
            .await
    }

    /// Says that this request's answers will be carried once more into a reply holding
    /// `per_answer_byte` bytes per byte of answer (the MCP endpoint's): an answer's share taken
    /// from now on ([`MemoryBudget::hold_answer`]) takes the reply's with it.
    pub fn expect_reply(&self, per_answer_byte: u64) {
        self.leased().reply_per_answer_byte = per_answer_byte;
    }

    /// The reply's share reserved with answers' shares since the last call, given over to the
    /// reply: it needs to take only what its answers held beyond it.
    pub fn take_reserved_reply(&self) -> u64 {
        std::mem::take(&mut self.leased().reply_reserved)
    }

    /// The reply's share for an answer carrying `file_bytes` of a file: its base64 text (4
    /// bytes for 3) and the answer's JSON around it, times what the reply holds per byte.
    fn reserve_reply(&self, file_bytes: u64) -> u64 {
        let mut leased = self.leased();
        let answer = file_bytes
            .saturating_mul(4)
            .div_ceil(3)
            .saturating_add(4096);
        let reply = answer.saturating_mul(leased.reply_per_answer_byte);
        leased.reply_reserved = leased.reply_reserved.saturating_add(reply);
        reply
    }

    fn unreserve_reply(&self, bytes: u64) {
        let mut leased = self.leased();
        leased.reply_reserved = leased.reply_reserved.saturating_sub(bytes);
    }

    fn keep(&self, permit: OwnedSemaphorePermit) {
        let mut leased = self.leased();
        if !leased.streaming {
            leased.permits.push(permit);
        }
    }

    fn held_kib(&self) -> u64 {
        self.leased()
            .permits
            .iter()
            .map(|p| p.num_permits() as u64)
            .sum()
    }

    fn leased(&self) -> std::sync::MutexGuard<'_, Leased> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The default budget: a quarter of the memory this server may use (the machine's, or its
/// control group's limit when lower), at least [`MIN_BUDGET_BYTES`].
pub fn default_budget_bytes() -> u64 {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kib| kib * 1024);
    let group = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|file| {
        std::fs::read_to_string(file)
            .ok()?
            .trim()
            .parse::<u64>()
            .ok()
    });
    let usable = match (machine, group) {
        (Some(m), Some(g)) => m.min(g),
        (Some(m), None) => m,
        (None, Some(g)) => g,
        (None, None) => 4 << 30,
    };
    (usable / 4).max(MIN_BUDGET_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shares_are_kept_until_the_request_ends_and_a_request_never_waits_for_itself() {
        let budget = MemoryBudget::new(MIN_BUDGET_BYTES);
        let lease = Lease::default();
        lease
            .scope(async {
                budget.hold(10 << 20).await.unwrap().until_answered();
                assert_eq!(budget.held_bytes(), 10 << 20);
                // More than is left: the request takes the rest and goes on alone.
                budget.hold(10 << 20).await.unwrap().until_answered();
                assert_eq!(budget.held_bytes(), MIN_BUDGET_BYTES);
                budget.hold(1 << 20).await.unwrap().until_answered();
            })
            .await;
        assert_eq!(budget.held_bytes(), MIN_BUDGET_BYTES);
        drop(lease);
        assert_eq!(budget.held_bytes(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_spent_budget_refuses_after_a_wait() {
        let budget = MemoryBudget::new(MIN_BUDGET_BYTES);
        let all = budget.hold(MIN_BUDGET_BYTES).await.unwrap();
        let refused = budget.hold(1).await.unwrap_err();
        assert!(matches!(refused, Error::Busy(_)), "{refused:?}");
        drop(all);
        let held = budget.hold(1).await.unwrap();
        assert_eq!(budget.held_bytes(), 1024);
        drop(held);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_takes_its_replys_share_with_its_own_so_no_two_requests_wait_on_each_other() {
        const MIB: u64 = 1 << 20;
        let budget = MemoryBudget::new(64 * MIB);
        let (first, second) = (Lease::default(), Lease::default());
        for lease in [&first, &second] {
            lease.expect_reply(6);
        }
        // Each answer of 4 MiB takes 20 MiB for itself and about 32 MiB for its reply at once:
        // the first request holds 52 MiB, the second waits for its whole share.
        first
            .scope(async { budget.hold_answer(4 * MIB).await.unwrap().until_answered() })
            .await;
        let reserved = first.take_reserved_reply();
        assert!((32 * MIB..33 * MIB).contains(&reserved), "{reserved}");
        assert_eq!(
            budget.held_bytes(),
            (20 * MIB + reserved).div_ceil(1024) * 1024
        );
        let waiting = tokio::spawn({
            let (budget, second) = (budget.clone(), second.clone());
            async move {
                second
                    .scope(async { budget.hold_answer(4 * MIB).await.map(Held::until_answered) })
                    .await
            }
        });
        tokio::task::yield_now().await;
        assert!(
            !waiting.is_finished(),
            "the second waits for all of its share"
        );
        // The first request's reply needs nothing more: its answer is sent, its shares go.
        drop(first);
        waiting.await.unwrap().unwrap();
        assert!(second.take_reserved_reply() > 0);
        // Refused, an answer reserves nothing for a reply.
        let third = Lease::default();
        third.expect_reply(6);
        let refused = third.scope(budget.hold_answer(4 * MIB)).await;
        assert!(refused.is_err());
        assert_eq!(third.take_reserved_reply(), 0);
    }
}
