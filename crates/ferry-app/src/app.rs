//! The application itself: [`App`], what it is made of ([`Parts`], [`Inner`]) and the limits
//! it keeps ([`Limits`]). Every use case takes an `App`; it stands on the ground modules alone
//! (the live hub, the commands, the memory budget, the derived files), so every room can take
//! it and none of them is below it.

use ferry_extract::Extractor;
use ferry_store::sandbox::Sandboxes;
use ferry_store::{Blobs, Db};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

use crate::commands::{self, Commands};
use crate::hub::EventHub;
use crate::{cache, memory};

pub const DEFAULT_SPACE_MAX_BYTES: u64 = 5 * 1024 * 1024;
pub const DEFAULT_SANDBOX_MAX_BYTES: u64 = 100 * 1024 * 1024;
pub const DEFAULT_UPLOAD_MAX_BYTES: u64 = 100 * 1024 * 1024;
pub const DEFAULT_PUBLISH_MAX_BYTES: u64 = 100 * 1024 * 1024;
pub const DEFAULT_PREVIEW_MAX_CHARS: usize = 4000;
pub const DEFAULT_PREVIEW_WAIT: Duration = Duration::from_secs(15);
/// How long an unfinished resumable upload is kept, unless the settings say otherwise.
pub const DEFAULT_RESUMABLE_EXPIRY: Duration = Duration::from_secs(24 * 3600);
/// Unfinished resumable uploads one principal may hold at once, unless the settings say
/// otherwise.
pub const DEFAULT_RESUMABLE_MAX_UNFINISHED: u64 = 20;

/// The sizes and waits the use cases enforce (docs/reference/README.md, limits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest file written to a space.
    pub space_max_bytes: u64,
    /// Largest file written to a sandbox.
    pub sandbox_max_bytes: u64,
    /// Largest uploaded file.
    pub upload_max_bytes: u64,
    /// Largest file an agent may publish (or attach in say mode).
    pub publish_max_bytes: u64,
    /// Characters of an upload's text preview.
    pub preview_max_chars: usize,
    /// How long an upload waits for its preview before it is kept without one.
    pub preview_wait: Duration,
    /// How long an unfinished resumable upload is kept.
    pub resumable_expiry: Duration,
    /// Unfinished resumable uploads one principal may hold at once.
    pub resumable_max_unfinished: u64,
    /// The memory every request that holds a file's bytes shares ([`memory`]).
    pub memory_budget_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            space_max_bytes: DEFAULT_SPACE_MAX_BYTES,
            sandbox_max_bytes: DEFAULT_SANDBOX_MAX_BYTES,
            upload_max_bytes: DEFAULT_UPLOAD_MAX_BYTES,
            publish_max_bytes: DEFAULT_PUBLISH_MAX_BYTES,
            preview_max_chars: DEFAULT_PREVIEW_MAX_CHARS,
            preview_wait: DEFAULT_PREVIEW_WAIT,
            resumable_expiry: DEFAULT_RESUMABLE_EXPIRY,
            resumable_max_unfinished: DEFAULT_RESUMABLE_MAX_UNFINISHED,
            memory_budget_bytes: memory::default_budget_bytes(),
        }
    }
}

/// The size limits a client can check a file against before sending it (`GET /api/limits`),
/// each in bytes.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitsView {
    /// Largest file a person uploads into a thread (plain or resumable).
    pub upload_max_bytes: u64,
    /// Largest file written to a space.
    pub space_max_bytes: u64,
    /// Largest file written to a sandbox.
    pub sandbox_max_bytes: u64,
    /// Largest file an agent may publish (or attach in say mode).
    pub publish_max_bytes: u64,
    /// Largest file `send_file` sends inline.
    pub send_file_max_bytes: u64,
    /// Whether commands run here (`execute`), and their limits.
    pub execute: commands::ExecuteView,
}

impl App {
    /// The limits a client can check a file or a command against before sending it.
    pub fn limits_view(&self) -> LimitsView {
        let limits = &self.limits;
        LimitsView {
            upload_max_bytes: limits.upload_max_bytes,
            space_max_bytes: limits.space_max_bytes,
            sandbox_max_bytes: limits.sandbox_max_bytes,
            publish_max_bytes: limits.publish_max_bytes,
            send_file_max_bytes: ferry_core::send_file::MAX_SEND_FILE_BYTES,
            execute: self.commands.view(),
        }
    }
}

/// The stores and workers every use case runs over. Cheap to clone.
#[derive(Debug, Clone)]
pub struct App(Arc<Inner>);

/// What an [`App`] is made of: the stores [`App::open`] chose (or a test made).
#[derive(Debug)]
pub(crate) struct Parts {
    pub(crate) db: Db,
    pub(crate) blobs: Blobs,
    pub(crate) sandboxes: Sandboxes,
    pub(crate) extractor: Extractor,
    pub(crate) limits: Limits,
    pub(crate) skills_dir: Option<PathBuf>,
    pub(crate) cache: cache::DerivedCache,
    pub(crate) commands: Commands,
}

/// The stores are this crate's alone: a door reaches them only through a use case (the
/// metadata database, the blob store, the sandboxes, the extraction workers and the derived
/// files are not public), so no door can hold a rule of its own over them. What is public is
/// what a door must share with the use cases: the limits, the live event hub, the memory
/// budget and the webhook worker's wake-up.
#[derive(Debug)]
pub struct Inner {
    pub(crate) db: Db,
    pub(crate) blobs: Blobs,
    pub(crate) sandboxes: Sandboxes,
    pub(crate) extractor: Extractor,
    pub limits: Limits,
    /// Wakes this node's subscribers of a thread's events.
    pub events: EventHub,
    /// Wakes the webhook worker when a delivery is queued.
    pub deliveries_due: Notify,
    /// Skill packages copied into every new thread's `/sandbox/skills/`.
    pub(crate) skills_dir: Option<PathBuf>,
    /// Derived files (HTML renderings, images for models), kept by content.
    pub(crate) cache: cache::DerivedCache,
    /// Commands run in sandboxes (`execute`).
    pub(crate) commands: Commands,
    /// What requests that hold files' bytes share.
    pub memory: memory::MemoryBudget,
}

impl std::ops::Deref for App {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl App {
    pub(crate) fn new(parts: Parts) -> App {
        App(Arc::new(Inner {
            db: parts.db,
            blobs: parts.blobs,
            sandboxes: parts.sandboxes,
            extractor: parts.extractor,
            events: EventHub::default(),
            deliveries_due: Notify::new(),
            skills_dir: parts.skills_dir,
            cache: parts.cache,
            memory: memory::MemoryBudget::new(parts.limits.memory_budget_bytes),
            limits: parts.limits,
            commands: parts.commands,
        }))
    }

    /// Requests waiting for an extraction worker (a gauge of the server's metrics).
    pub fn extraction_waiting(&self) -> usize {
        self.extractor.waiting()
    }

    /// The folder where a door spools a request body it must read whole before a use case
    /// takes it (a JSON body carrying a file): the same disk as the derived files.
    pub fn scratch_root(&self) -> PathBuf {
        self.cache.scratch_root()
    }

    /// Whether commands run on this server (`ferry serve` says so when it starts).
    pub fn command_availability(&self) -> (&commands::Availability, Option<String>) {
        (self.commands.availability(), self.commands.describe())
    }

    /// Stores nothing: wakes this node's subscribers with an event that is already stored,
    /// and the thread lists it moves up.
    pub fn announce(&self, event: ferry_store::events::StoredEvent) {
        self.nudge_thread_list_of(&event.thread_id);
        self.events.publish(event);
    }

    /// Tells the owner's thread lists on this node that a thread has new events. Only when
    /// someone here follows a list is the owner looked up (a point read, off the request).
    pub(crate) fn nudge_thread_list_of(&self, thread_id: &str) {
        if !self.events.follows_any(ferry_store::threads::is_list_key) {
            return;
        }
        let (app, thread_id) = (self.clone(), thread_id.to_owned());
        tokio::spawn(async move {
            match app.db.thread(&thread_id).await {
                Ok(Some(thread)) => app
                    .events
                    .poke(&ferry_store::threads::list_key(&thread.owner)),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "a thread's owner could not be read"),
            }
        });
    }
}
