//! What every handler shares.

use ferry_extract::Extractor;
use ferry_store::sandbox::Sandboxes;
use ferry_store::{Blobs, Db, LocalBlobs};
use std::sync::Arc;

use crate::auth::Auth;
use crate::config::Config;
use crate::events::EventHub;

#[derive(Debug, Clone)]
pub struct AppState(Arc<Inner>);

#[derive(Debug)]
pub struct Inner {
    pub config: Config,
    pub auth: Auth,
    pub db: Db,
    pub blobs: Blobs,
    pub sandboxes: Sandboxes,
    pub extractor: Extractor,
    pub events: EventHub,
}

impl std::ops::Deref for AppState {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Opens the stores the configuration names.
    pub async fn open(config: Config) -> anyhow::Result<AppState> {
        std::fs::create_dir_all(&config.data_dir)?;
        let db = Db::open(&config.database_url).await?;
        let blobs = Blobs::Local(LocalBlobs::open(config.data_dir.join("blobs"))?);
        let sandboxes = Sandboxes::new(config.data_dir.join("sandboxes"))?;
        let auth = Auth::new(&config.jwt_secret);
        let extractor = Extractor::new(config.extract.clone());
        Ok(AppState(Arc::new(Inner {
            config,
            auth,
            db,
            blobs,
            sandboxes,
            extractor,
            events: EventHub::default(),
        })))
    }

    /// Stores nothing: wakes this node's subscribers with an event that is already stored.
    pub fn announce(&self, event: ferry_store::events::StoredEvent) {
        self.events.publish(event);
    }
}
