//! Where an object lives for a door that addresses files as objects (the S3 door): one of the
//! caller's spaces, or a thread's sandbox. Writing one is the ordinary write of that place —
//! `spaces::write` or `sandbox::write` — with its rules and limits.

use bytes::Bytes;
use ferry_core::write::{FileMeta, WriteCondition};
use ferry_core::{SandboxPath, SpaceName, ValidPath};
pub use ferry_store::BlobRead;
use futures::Stream;

use crate::access::principal::Principal;
use crate::app::App;
use crate::body::Incoming;
use crate::error::Result;

/// A file, by place and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Space {
        space: SpaceName,
        path: ValidPath,
    },
    Sandbox {
        thread_id: String,
        path: SandboxPath,
    },
}

impl Destination {
    /// The largest file this place takes.
    pub fn limit(&self, app: &App) -> u64 {
        match self {
            Destination::Space { .. } => app.limits.space_max_bytes,
            Destination::Sandbox { .. } => app.limits.sandbox_max_bytes,
        }
    }
}

/// Writes `body` at `destination` as that place's own write does; answers the new ETag value
/// (without quotes). A sandbox keeps its files as plain files: only the content type of `meta`
/// applies there, its attributes are not kept.
pub async fn write<S, E>(
    app: &App,
    principal: &Principal,
    destination: &Destination,
    meta: FileMeta<'_>,
    condition: &WriteCondition,
    body: Incoming<S>,
) -> Result<String>
where
    S: Stream<Item = std::result::Result<Bytes, E>>,
    E: std::fmt::Display,
{
    match destination {
        Destination::Space { space, path } => {
            let written =
                crate::files::spaces::write(app, principal, space, path, meta, condition, body)
                    .await?;
            Ok(written.file.sha256)
        }
        Destination::Sandbox { thread_id, path } => {
            let (_, entry) = crate::files::sandbox::write(
                app,
                principal,
                thread_id,
                path,
                meta.content_type,
                condition,
                body,
                meta.door,
            )
            .await?;
            Ok(entry.etag)
        }
    }
}

/// The bytes of a stored file (a space file, an upload, a published revision) that a use case
/// of this crate handed the caller, or a range of them.
pub async fn bytes(
    app: &App,
    blob_key: &str,
    range: Option<std::ops::Range<u64>>,
) -> std::io::Result<BlobRead> {
    app.blobs.read(blob_key, range).await
}
