//! The one error every use case answers with (docs/reference/errors.md).
//!
//! Each variant is a kind of refusal a client can act on, with a message written for the
//! caller. Failures that are the server's own ([`Error::Internal`]) are logged in full where
//! they happen and carry only a generic message, so no database or file-system text reaches a
//! caller. How a door shows each kind (an HTTP status, an S3 error code, an MCP tool error) is
//! the door's business.

use ferry_core::content_type::ContentTypeError;
use ferry_core::error_code::ErrorCode;
use ferry_core::path::PathError;
use ferry_core::send_file::SendFileError;
use ferry_core::space_name::SpaceNameError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Nothing there, or nothing the caller may see (a thread of someone else is missing,
    /// not forbidden, so that its existence does not leak).
    #[error("{0}")]
    NotFound(String),
    /// The caller may see it, but its role may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// A path or name that breaks the path rules (docs/reference/paths.md).
    #[error("{0}")]
    InvalidPath(String),
    /// Any other malformed request.
    #[error("{0}")]
    InvalidRequest(String),
    /// A create-only write found the path taken.
    #[error("{0}")]
    AlreadyExists(String),
    /// A conditional write's ETag did not match.
    #[error("{0}")]
    PreconditionFailed(String),
    /// A body, file or message over its limit.
    #[error("{0}")]
    TooLarge(String),
    /// A media type the operation cannot take.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// A file of a type the operation refuses (send_file's text types).
    #[error("{0}")]
    UnsupportedFileType(String),
    /// Too busy to do it now; the same request may succeed later.
    #[error("{0}")]
    Busy(String),
    /// The caller holds as many of something as it may (unfinished resumable uploads).
    #[error("{0}")]
    TooManyRequests(String),
    /// A resumable upload's bytes sent from an offset that is not its own.
    #[error("{0}")]
    OffsetMismatch(String),
    /// A resumable upload's bytes that do not match the checksum sent with them.
    #[error("{0}")]
    ChecksumMismatch(String),
    /// An operation this server does not offer (commands turned off, or impossible here).
    #[error("{0}")]
    NotImplemented(String),
    /// The disk is full: nothing was stored, and the request succeeds once there is room.
    #[error("the server's disk is full; nothing was stored. Try again once space is freed")]
    DiskFull,
    /// The server's own failure; the cause is in the log.
    #[error("internal error; the server log has the details")]
    Internal,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn not_found(message: impl Into<String>) -> Error {
        Error::NotFound(message.into())
    }

    pub fn forbidden(message: impl Into<String>) -> Error {
        Error::Forbidden(message.into())
    }

    pub fn invalid_request(message: impl Into<String>) -> Error {
        Error::InvalidRequest(message.into())
    }

    /// A body over `limit` bytes.
    pub fn too_large(limit: u64) -> Error {
        Error::TooLarge(format!(
            "the body is larger than the limit of {}",
            describe_bytes(limit)
        ))
    }

    /// A full disk: logged with its cause, answered as [`Error::DiskFull`].
    pub fn disk_full(cause: impl std::fmt::Display) -> Error {
        tracing::error!(%cause, "the disk is full");
        Error::DiskFull
    }

    /// A failure that is the server's fault. The cause is logged (inside the request's span,
    /// so with its request id), not answered.
    pub fn internal(cause: impl std::fmt::Display) -> Error {
        tracing::error!(%cause, "internal error");
        Error::Internal
    }

    /// The envelope's code for this kind of failure: the one every door answers with (the
    /// HTTP API gives it its status, MCP carries it, events that report a failure name it).
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::Forbidden(_) => ErrorCode::Forbidden,
            Error::InvalidPath(_) => ErrorCode::InvalidPath,
            Error::InvalidRequest(_) => ErrorCode::InvalidRequest,
            Error::AlreadyExists(_) => ErrorCode::AlreadyExists,
            Error::PreconditionFailed(_) => ErrorCode::PreconditionFailed,
            Error::TooLarge(_) => ErrorCode::RequestTooLarge,
            Error::UnsupportedMediaType(_) => ErrorCode::UnsupportedMediaType,
            Error::UnsupportedFileType(_) => ErrorCode::UnsupportedFileType,
            Error::Busy(_) => ErrorCode::Unavailable,
            Error::TooManyRequests(_) => ErrorCode::TooManyRequests,
            Error::OffsetMismatch(_) => ErrorCode::OffsetMismatch,
            Error::ChecksumMismatch(_) => ErrorCode::ChecksumMismatch,
            Error::DiskFull => ErrorCode::InsufficientStorage,
            Error::NotImplemented(_) => ErrorCode::NotImplemented,
            Error::Internal => ErrorCode::Internal,
        }
    }

    /// An I/O failure: a full disk is said as such, anything else is internal.
    pub fn io(cause: std::io::Error) -> Error {
        if ferry_store::is_disk_full(&cause) {
            Error::disk_full(cause)
        } else {
            Error::internal(cause)
        }
    }
}

/// A size in words, as limits are reported: `5 MiB (5242880 bytes)`.
pub fn describe_bytes(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    const KIB: u64 = 1 << 10;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB ({bytes} bytes)", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB ({bytes} bytes)", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

impl From<PathError> for Error {
    fn from(e: PathError) -> Self {
        Error::InvalidPath(e.to_string())
    }
}

impl From<ContentTypeError> for Error {
    fn from(e: ContentTypeError) -> Self {
        Error::UnsupportedMediaType(e.to_string())
    }
}

impl From<SpaceNameError> for Error {
    fn from(e: SpaceNameError) -> Self {
        Error::InvalidPath(e.to_string())
    }
}

impl From<SendFileError> for Error {
    fn from(e: SendFileError) -> Self {
        let message = e.to_string();
        match e {
            SendFileError::NotFound { .. } => Error::NotFound(message),
            SendFileError::UnsupportedType { .. } => Error::UnsupportedFileType(message),
            SendFileError::TooLarge { .. } => Error::TooLarge(message),
        }
    }
}

impl From<ferry_store::Error> for Error {
    fn from(e: ferry_store::Error) -> Self {
        use ferry_store::Error as Store;
        let message = e.to_string();
        match e {
            Store::NotFound => Error::NotFound(message),
            Store::Escapes
            | Store::Dangling
            | Store::HardLinked
            | Store::IsDir
            | Store::NotAFile
            | Store::NotAFolder => Error::InvalidPath(message),
            Store::ReadOnly => Error::Forbidden(message),
            Store::AlreadyExists => Error::AlreadyExists(message),
            Store::PreconditionFailed => Error::PreconditionFailed(message),
            Store::TooLarge { limit } => Error::too_large(limit),
            Store::Body(m) => Error::InvalidRequest(m),
            Store::Busy => Error::Busy(message),
            Store::TooManyEntries => Error::InvalidRequest(message),
            other if other.is_disk_full() => {
                store_failed("disk_full");
                Error::disk_full(other)
            }
            other @ (Store::Config(_) | Store::Database(_) | Store::Migrate(_) | Store::Io(_)) => {
                store_failed(match other {
                    Store::Database(_) | Store::Migrate(_) => "database",
                    Store::Io(_) => "io",
                    _ => "config",
                });
                Error::internal(other)
            }
        }
    }
}

/// Counts a store failure that is the server's, not the caller's: the database (`database`),
/// the blob store or file system (`io`), a full disk (`disk_full`), or the setup (`config`).
fn store_failed(kind: &'static str) {
    metrics::counter!("ferry_store_errors_total", "kind" => kind).increment(1);
}

/// A store error met while working in a sandbox: a missing file is said as such.
pub(crate) fn in_sandbox(e: ferry_store::Error) -> Error {
    match e {
        ferry_store::Error::NotFound => Error::not_found("no such file in the sandbox"),
        other => other.into(),
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::io(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_said_in_the_largest_whole_unit() {
        assert_eq!(describe_bytes(5 << 20), "5 MiB (5242880 bytes)");
        assert_eq!(describe_bytes(20 << 10), "20 KiB (20480 bytes)");
        assert_eq!(describe_bytes(1000), "1000 bytes");
    }

    #[test]
    fn a_full_disk_is_told_and_other_io_failures_are_not() {
        let full = std::io::Error::from_raw_os_error(libc_enospc());
        assert_eq!(Error::io(full), Error::DiskFull);
        let other = std::io::Error::other("/secret/host/path: broken");
        let answered = Error::io(other);
        assert_eq!(answered, Error::Internal);
        assert!(!answered.to_string().contains("/secret"));
    }

    /// ENOSPC on Linux.
    fn libc_enospc() -> i32 {
        28
    }
}
