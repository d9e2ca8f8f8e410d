//! The HTTP API, driven in process and over real sockets: every route's rules, and the attacks
//! the hardening rules stop (docs/security.md).

#[path = "../support/mod.rs"]
mod support;
#[path = "../thread_support/mod.rs"]
mod thread_support;

mod agent_files;
mod coarse_timestamps;
mod events;
mod execute;
mod folder_zip;
mod hardening;
mod identity_provider;
mod model_content;
mod one_file_api;
mod published;
mod resumable;
mod s3_door;
mod sandbox;
mod say;
mod send_file;
mod slides;
mod space_removal;
mod spaces;
mod spaces_socket;
mod thread_list;
mod threads;
mod tokens;
mod uploads;
