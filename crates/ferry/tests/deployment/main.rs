//! The real binary as operators run it: its command line, durability across crashes and
//! restarts, and several nodes over Postgres and an S3 store.

#[path = "../support/mod.rs"]
mod support;

mod cli;
mod durability;
mod memory_budget;
mod scale_out;
