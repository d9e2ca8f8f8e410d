//! ferry through the clients people and agents use: the official MCP SDK, the examples in
//! `examples/`, the S3 clients, a client generated from the OpenAPI document, and the web UI in
//! a real browser.

#[path = "../support/mod.rs"]
mod support;

mod python;

mod e2e_browser;
mod examples;
mod generated_client;
mod mcp_clients;
mod s3_clients;
mod tus_clients;
