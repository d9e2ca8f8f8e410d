//! ferry's application layer: every use case, once, under every door.
//!
//! Each operation a client can ask for is one function here (`files::spaces::write`,
//! `threads::uploads::receive`, `publish::publish`, `threads::say::deliver`,
//! `threads::send_file::send`, …). It takes a
//! verified [`Principal`] and domain values, decides access in one place ([`access`]), runs
//! the workflow over the store, and answers with domain values or one typed [`Error`]. The
//! doors (the HTTP API, MCP, the S3 door) only parse a request, call one of these functions
//! and write the answer their way; none of them holds a workflow or an access rule.
//!
//! This crate knows no protocol: no HTTP types, no status codes, no header names.
//!
//! Its modules are rooms named for what the product does, each using only the rooms below
//! it: [`transfers`], [`execute`], [`files`], [`previews`], [`publish`], [`threads`],
//! [`events`] and [`access`], over the ground every room stands on: the application
//! ([`App`]), the live event [`hub`], the [`commands`] this node can run, the [`memory`]
//! budget, the derived files' [`cache`], a write's [`body`] and the one [`error`]. This file
//! is the crate's face for the doors; inside the crate, modules import from where a thing
//! lives.

pub mod access;
mod app;
pub mod body;
pub mod cache;
pub mod commands;
pub mod error;
pub mod events;
pub mod execute;
pub mod files;
pub mod hub;
pub mod memory;
mod open;
pub mod previews;
pub mod publish;
pub mod threads;
pub mod transfers;
pub mod upkeep;

#[cfg(test)]
mod testing;

pub use access::Action;
pub use access::principal::{Principal, Recorded};
pub use app::{
    App, DEFAULT_PREVIEW_MAX_CHARS, DEFAULT_PREVIEW_WAIT, DEFAULT_PUBLISH_MAX_BYTES,
    DEFAULT_RESUMABLE_EXPIRY, DEFAULT_RESUMABLE_MAX_UNFINISHED, DEFAULT_SANDBOX_MAX_BYTES,
    DEFAULT_SPACE_MAX_BYTES, DEFAULT_UPLOAD_MAX_BYTES, Inner, Limits, LimitsView,
};
pub use error::{Error, Result, describe_bytes};
pub use ferry_exec::{AllowedHost, ExecLimits, NetworkPolicy, Runtime as ExecRuntime};
pub use open::{BubblewrapSettings, ExecuteSettings, OpenError, SandboxLimits, Settings};
