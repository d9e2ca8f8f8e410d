//! The rules of ferry that do not depend on where bytes live or how they travel.
//!
//! Everything here is a pure function of its arguments: no file system, no network, no clock.
//! The server, the store and the MCP tools all call into this crate so that each rule
//! (what a valid path is, which files `send_file` accepts, how `<file>` tags parse) exists once.

pub mod agent_files;
pub mod agent_path;
pub mod attachment;
pub mod change;
pub mod conditions;
pub mod content_type;
pub mod door;
pub mod error_code;
pub mod execute;
pub mod file_views;
pub mod mime;
pub mod page_selection;
pub mod path;
pub mod send_file;
pub mod space_name;
pub mod storage_path;
pub mod tags;
pub mod thread_event;
pub mod timestamp;
pub mod write;

pub use agent_path::{AgentPath, AgentPathError};
pub use path::{PathError, SandboxPath, ValidPath};
pub use space_name::SpaceName;
pub use timestamp::{Civil, Timestamp};
