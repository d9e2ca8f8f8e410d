//! What one command may use, and what it runs on.

use std::path::PathBuf;
use std::time::Duration;

/// The bounds of every command (docs/reference/execute.md, "Limits"). Each is a setting of
/// `ferry serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecLimits {
    /// Wall time when the caller names none.
    pub default_timeout: Duration,
    /// The longest wall time a caller may ask for.
    pub max_timeout: Duration,
    /// Memory of the whole command (every process of it, its `/tmp` included) with a control
    /// group; of each process's address space without one.
    pub memory_bytes: u64,
    /// Processes (and threads) the command may have at once.
    pub processes: u64,
    /// Output kept for the answer: beyond it the head and the tail are kept.
    pub output_bytes: usize,
    /// The largest file a command may write.
    pub file_bytes: u64,
    /// What the whole sandbox folder may hold while a command runs: past it the command is
    /// stopped.
    pub sandbox_bytes: u64,
    /// The size of the command's own `/tmp` (it counts against its memory too).
    pub tmp_bytes: u64,
    /// Commands running at once on this server; more are refused until one ends.
    pub concurrent: usize,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(900);
pub const DEFAULT_MEMORY_BYTES: u64 = 2 * 1024 * 1024 * 1024;
pub const DEFAULT_PROCESSES: u64 = 256;
pub const DEFAULT_OUTPUT_BYTES: usize = 1024 * 1024;
pub const DEFAULT_SANDBOX_BYTES: u64 = 1024 * 1024 * 1024;
pub const DEFAULT_TMP_BYTES: u64 = 256 * 1024 * 1024;

impl Default for ExecLimits {
    fn default() -> Self {
        ExecLimits {
            default_timeout: DEFAULT_TIMEOUT,
            max_timeout: MAX_TIMEOUT,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            processes: DEFAULT_PROCESSES,
            output_bytes: DEFAULT_OUTPUT_BYTES,
            file_bytes: 100 * 1024 * 1024,
            sandbox_bytes: DEFAULT_SANDBOX_BYTES,
            tmp_bytes: DEFAULT_TMP_BYTES,
            concurrent: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// The programs a command finds: the host's own, read-only, or a prepared root file system.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Runtime {
    /// The host's `/usr` (with `/bin`, `/sbin` and `/lib*` as the host has them) and the few
    /// files of `/etc` programs read, all read-only.
    #[default]
    Host,
    /// A folder holding a whole root file system (an unpacked container image, say, with
    /// Python and the document libraries), each of its top-level entries bound read-only.
    Root(PathBuf),
}
