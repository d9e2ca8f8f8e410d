//! The room of transfers: bytes that arrive or leave by a way of their own, beside a plain
//! read or write. Resumable uploads in pieces ([`resumable`], the tus protocol's rules), an S3
//! object's place and its multipart uploads ([`objects`], [`multipart`]), and a folder sent as
//! one zip ([`archive`]). Each ends in the ordinary write or read of a space or a sandbox, so
//! its rules and limits are the file system's own.

pub mod archive;
pub mod multipart;
pub mod objects;
pub mod resumable;
