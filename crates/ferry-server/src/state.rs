//! What every handler shares.

use ferry_app::App;
use std::sync::{Arc, OnceLock};

use crate::auth::Auth;
use crate::config::Config;
use crate::limits::StreamSlots;
use crate::signing::LinkSigner;

#[derive(Debug, Clone)]
pub struct AppState(Arc<Inner>);

#[derive(Debug)]
pub struct Inner {
    /// The use cases, and the stores they run over.
    pub app: App,
    pub config: Config,
    pub auth: Auth,
    pub signer: LinkSigner,
    /// The secrets of S3 access keys.
    pub key_secrets: crate::signing::KeySecrets,
    /// Seals the grants of file URLs (`routes/fs_transfer.rs`).
    pub grants: crate::signing::GrantSealer,
    /// The event streams open on this node, by principal.
    pub streams: Arc<StreamSlots>,
    /// The address clients reach this server at, for absolute links (signed downloads).
    public_url: OnceLock<String>,
}

impl std::ops::Deref for AppState {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Opens the application over the stores the configuration names.
    pub async fn open(config: Config) -> anyhow::Result<AppState> {
        let app = App::open(config.app.clone()).await?;
        let mut auth = Auth::new(&config.jwt_secret);
        if let Some(provider) = &config.identity_provider {
            auth = auth.with_provider(provider);
            // Read the keys now, so a wrong URL shows in the log at start rather than as
            // refused sign-ins; the server starts either way, and the keys are fetched again
            // when a token needs them.
            match auth.load_provider_keys().await {
                Some(Ok(count)) => {
                    tracing::info!(keys = count, source = %provider.keys, "read the identity provider's keys")
                }
                Some(Err(why)) => tracing::error!(
                    source = %provider.keys,
                    "cannot read the identity provider's keys; its tokens are refused until a \
                     read succeeds: {why}"
                ),
                None => {}
            }
        }
        let signer = LinkSigner::new(&config.jwt_secret);
        let key_secrets = crate::signing::KeySecrets::new(&config.jwt_secret);
        let grants = crate::signing::GrantSealer::new(&config.jwt_secret);
        let public_url = OnceLock::new();
        if let Some(url) = &config.public_url {
            let _ = public_url.set(url.trim_end_matches('/').to_owned());
        }
        let streams = StreamSlots::new(config.max_streams_per_principal);
        Ok(AppState(Arc::new(Inner {
            app,
            streams,
            config,
            auth,
            signer,
            key_secrets,
            grants,
            public_url,
        })))
    }

    /// Tells everything long-lived that the server is shutting down: the event streams end
    /// once they have sent what they had (their clients reconnect with `Last-Event-ID`).
    pub fn begin_shutdown(&self) {
        self.app.events.close();
    }

    /// Records where this server listens, unless a public URL was configured.
    pub fn set_listen_addr(&self, addr: std::net::SocketAddr) {
        let _ = self.public_url.set(format!("http://{addr}"));
    }

    /// The base of absolute links to this server.
    pub fn public_url(&self) -> String {
        self.public_url
            .get()
            .cloned()
            .unwrap_or_else(|| format!("http://{}", self.config.addr))
    }

    /// An absolute, signed, short-lived download link for an attachment, and its expiry.
    pub fn signed_attachment_url(&self, attachment_id: &str) -> (String, u64) {
        let (query, expires) = self.signer.sign(attachment_id);
        (
            format!(
                "{}/api/attachments/{attachment_id}?{query}",
                self.public_url()
            ),
            expires,
        )
    }
}
