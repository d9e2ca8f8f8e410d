//! The one error the store answers with.
//!
//! Refusals a caller can act on are variants of their own; the store's own failures keep their
//! cause (`Database`, `Migrate`, `Io`) so that the layer above can log it and tell a full disk
//! from anything else. There is deliberately no `From<std::io::Error>`: an I/O error inside a
//! sandbox means something different (an escape, a missing file) from one in the blob store, so
//! every I/O failure is turned into an [`Error`] explicitly where it happens.

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not found")]
    NotFound,
    #[error("a file already exists at this path")]
    AlreadyExists,
    #[error("the file's current ETag does not match")]
    PreconditionFailed,
    /// A body longer than the limit; nothing was kept.
    #[error("the body is larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    /// The client's body broke off (a dropped connection, a malformed chunk).
    #[error("the request body could not be read: {0}")]
    Body(String),
    #[error("the path leads outside the sandbox")]
    Escapes,
    #[error("the path is a symlink that leads nowhere")]
    Dangling,
    #[error("the file is hard-linked elsewhere; only files with a single link are served")]
    HardLinked,
    #[error("the path is a folder, not a file")]
    IsDir,
    #[error("the path is not a regular file")]
    NotAFile,
    #[error("a segment of the path is a file or a symlink, not a folder")]
    NotAFolder,
    #[error("/sandbox/skills/ is read-only: skills are copied in when the thread starts")]
    ReadOnly,
    #[error("the sandbox is busy: earlier operations on it have not finished; try again")]
    Busy,
    #[error(
        "the folder holds more than {} entries; list a folder below it",
        crate::sandbox::MAX_LISTED
    )]
    TooManyEntries,
    #[error("configuration: {0}")]
    Config(String),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("i/o: {0}")]
    Io(std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether the failure is a full disk (or an exhausted quota), in the database or beside
    /// it: the one internal failure a client is told about, because it is not the client's
    /// request that is wrong and the same request will succeed once there is room.
    pub fn is_disk_full(&self) -> bool {
        match self {
            Error::Io(e) => is_disk_full(e),
            Error::Database(e) => database_is_full(e),
            _ => false,
        }
    }
}

/// Whether an I/O error says the disk (or the user's quota) is full.
pub fn is_disk_full(e: &std::io::Error) -> bool {
    if matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG)
    ) || e.kind() == std::io::ErrorKind::StorageFull
    {
        return true;
    }
    // Errors wrapped on their way up (an object store's, a task's) keep the original inside.
    std::error::Error::source(e)
        .and_then(|inner| inner.downcast_ref::<std::io::Error>())
        .is_some_and(is_disk_full)
}

/// Whether a database error says its disk is full: SQLite's `SQLITE_FULL` (13, with its
/// extended codes) or PostgreSQL's `disk_full` (53100).
pub fn database_is_full(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(io) => is_disk_full(io),
        sqlx::Error::Database(db) => match db.code().as_deref() {
            Some("53100") => true,
            Some(code) => code.parse::<i32>().is_ok_and(|c| c & 0xff == 13),
            None => false,
        },
        _ => false,
    }
}
