//! The commands this node can run: the runner (`ferry_exec`), whether commands run here and
//! why not, which threads run one now and how many run at once. The `App` holds it; running
//! a command is the execute room's.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

pub use ferry_exec::Availability;
use ferry_exec::Runner;
use serde::Serialize;
use tokio::sync::Semaphore;

/// The server's commands: the runner, whether commands run here, and which threads run one now.
#[derive(Debug)]
pub struct Commands {
    pub(crate) runner: Option<Arc<dyn Runner>>,
    pub(crate) availability: Availability,
    /// The threads that run a command now: one at a time in each.
    pub(crate) running: Arc<Mutex<HashSet<String>>>,
    /// The commands this node runs at once.
    pub(crate) slots: Arc<Semaphore>,
}

impl Commands {
    /// Commands run by `runner` when `availability` is on.
    pub fn new(runner: Option<Arc<dyn Runner>>, availability: Availability) -> Commands {
        let slots = runner.as_ref().map_or(1, |r| r.limits().concurrent.max(1));
        Commands {
            runner,
            availability,
            running: Arc::default(),
            slots: Arc::new(Semaphore::new(slots)),
        }
    }

    /// No commands: turned off.
    pub fn off() -> Commands {
        Commands::new(None, Availability::Off)
    }

    pub fn availability(&self) -> &Availability {
        &self.availability
    }

    /// How commands are confined and bounded, in words, when they run.
    pub fn describe(&self) -> Option<String> {
        self.runner.as_ref().map(|r| r.describe())
    }

    /// What a client can know of commands here before running one.
    pub fn view(&self) -> ExecuteView {
        let limits = self.runner.as_ref().map(|r| r.limits().clone());
        ExecuteView {
            enabled: self.availability.is_on() && self.runner.is_some(),
            reason: self.availability.why_not(),
            default_timeout_seconds: limits.as_ref().map(|l| l.default_timeout.as_secs()),
            max_timeout_seconds: limits.as_ref().map(|l| l.max_timeout.as_secs()),
            memory_bytes: limits.as_ref().map(|l| l.memory_bytes),
            processes: limits.as_ref().map(|l| l.processes),
            output_bytes: limits.as_ref().map(|l| l.output_bytes as u64),
            allowed_hosts: self.runner.as_ref().map(|r| {
                r.network()
                    .map(|policy| policy.allowed.iter().map(ToString::to_string).collect())
                    .unwrap_or_default()
            }),
        }
    }
}

/// Whether commands run on this server, and their limits (`GET /api/limits`, `execute`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteView {
    /// Whether `execute` runs commands here.
    pub enabled: bool,
    /// Why not, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_timeout_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_timeout_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    /// The hosts commands may reach (through ferry's proxy, as `http_proxy` and `https_proxy`
    /// say inside); empty: commands have no network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_hosts: Option<Vec<String>>,
}
