//! An [`App`] for this crate's own tests: SQLite and blobs and sandboxes in a temporary
//! folder, the default limits but for a small space limit. No extraction runs here (the
//! worker program named is never started by the use cases these tests call).

use std::time::Duration;

use bytes::Bytes;
use ferry_extract::{Extractor, ExtractorConfig};
use ferry_store::sandbox::{SandboxLimits, Sandboxes};
use ferry_store::{Blobs, Db, LocalBlobs, ObjectBlobs};
use futures::Stream;

use crate::access::principal::Principal;
use crate::app::{App, Limits, Parts};
use crate::body::Incoming;

/// The space limit of the test app.
pub(crate) const SPACE_LIMIT: u64 = 1024;

/// A fresh app; it lives as long as the returned folder.
pub(crate) async fn app() -> (App, tempfile::TempDir) {
    app_with(Where::Local).await
}

/// Where a test app keeps its sandboxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Where {
    /// Folders on this host.
    Local,
    /// The blob store and the database, as a deployment of several nodes keeps them.
    Stored,
}

/// A fresh app with its sandboxes kept `sandboxes`.
pub(crate) async fn app_with(sandboxes: Where) -> (App, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let blobs = Blobs::Local(LocalBlobs::open(dir.path().join("blobs")).unwrap());
    let app = build(&dir, blobs, sandboxes).await;
    (app, dir)
}

/// A fresh app whose blobs are in an object store (in memory here), as a deployment of several
/// nodes keeps them.
pub(crate) async fn app_on_object_store() -> (App, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(object_store::memory::InMemory::new());
    let blobs = Blobs::Object(ObjectBlobs::new(store, "blobs", dir.path().join("spool")).unwrap());
    let app = build(&dir, blobs, Where::Local).await;
    (app, dir)
}

async fn build(dir: &tempfile::TempDir, blobs: Blobs, sandboxes: Where) -> App {
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let db = Db::open(&url).await.unwrap();
    let sandboxes = match sandboxes {
        Where::Local => {
            Sandboxes::local(dir.path().join("sandboxes"), SandboxLimits::default()).unwrap()
        }
        Where::Stored => Sandboxes::stored(db.clone(), blobs.clone()),
    };
    let extractor = Extractor::new(ExtractorConfig::new(
        dir.path().join("no-worker"),
        Vec::<String>::new(),
    ));
    App::new(Parts {
        db,
        blobs,
        sandboxes,
        extractor,
        limits: Limits {
            space_max_bytes: SPACE_LIMIT,
            preview_wait: Duration::from_secs(1),
            ..Limits::default()
        },
        skills_dir: None,
        cache: crate::cache::DerivedCache::new(dir.path().join("cache")),
        commands: crate::commands::Commands::off(),
    })
}

pub(crate) fn user(sub: &str) -> Principal {
    Principal::User { sub: sub.into() }
}

pub(crate) fn agent(sub: &str, thread: &str) -> Principal {
    Principal::Agent {
        sub: sub.into(),
        thread: thread.into(),
        agent_id: "agent".into(),
    }
}

/// `bytes` as a body that declares its length.
pub(crate) fn body(bytes: &[u8]) -> Incoming<impl Stream<Item = std::io::Result<Bytes>> + use<>> {
    let bytes = Bytes::copy_from_slice(bytes);
    let len = bytes.len() as u64;
    Incoming::new(futures::stream::iter([Ok(bytes)]), Some(len))
}

/// A thread of `owner`'s, and its agent.
pub(crate) async fn thread_of(app: &App, owner: &str) -> (String, Principal) {
    let thread = crate::threads::create(app, &user(owner), None, None)
        .await
        .unwrap();
    let its_agent = agent(owner, &thread.id);
    (thread.id, its_agent)
}
