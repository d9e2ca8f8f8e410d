//! Shared test support: the app in-process or on a socket, and the real binary.
#![allow(dead_code, unreachable_pub, unused_imports)]

pub mod app;
pub mod binary;
pub mod identity;
pub mod stdio_mcp;
/// S3 (moto) and Postgres for the scale-out tests.
pub use ferry_test_support::peers;

pub use app::{Reply, TestApp, raw_http};

/// The HS256 secret every test server signs with.
pub const SECRET: &str = "test-secret-that-is-long-enough-for-hs256";

/// The ferry binary, which also serves as the document-extraction worker.
pub fn ferry_exe() -> &'static str {
    env!("CARGO_BIN_EXE_ferry")
}
