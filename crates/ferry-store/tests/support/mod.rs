//! Shared support for the storage suites.
#![allow(dead_code, unreachable_pub)]

pub mod peers;
