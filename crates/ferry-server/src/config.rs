//! The settings a server runs with, already resolved from flags, environment and `ferry.toml`
//! by the binary.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::jwks::KeySource;
use crate::listen::ConnectionLimits;

pub const DEFAULT_BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_MAX_STREAMS_PER_PRINCIPAL: usize = 16;
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// How webhook deliveries go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookSettings {
    /// Whether receivers on loopback, private, link-local and other non-public addresses are
    /// allowed (a deployment whose receivers live on its own network). Off by default: a
    /// thread owner must not be able to make the server post to its own neighbours.
    pub allow_private: bool,
    /// How long one POST to a receiver may take.
    pub timeout: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            allow_private: false,
            timeout: DEFAULT_WEBHOOK_TIMEOUT,
        }
    }
}

/// An identity provider (Supabase with asymmetric keys, Auth0, Clerk, Keycloak, any OIDC
/// provider) whose tokens speak for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityProvider {
    /// Where its JWKS is read.
    pub keys: KeySource,
    /// The `iss` its tokens must carry, exactly.
    pub issuer: String,
    /// A value the tokens' `aud` must be or contain.
    pub audience: String,
}

#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen.
    pub addr: SocketAddr,
    /// What the application keeps where, and the limits it enforces: the database, the blob
    /// store, sandboxes, skills and document extraction.
    pub app: ferry_app::Settings,
    /// The HS256 secret tokens are signed with.
    pub jwt_secret: Vec<u8>,
    /// An identity provider whose asymmetrically signed tokens sign people in, beside the
    /// secret's tokens.
    pub identity_provider: Option<IdentityProvider>,
    /// How old an unreferenced blob or a spool file must be before the sweep removes it.
    pub sweep_grace: std::time::Duration,
    /// The URL clients reach this server at (behind a proxy, say); used in signed links.
    pub public_url: Option<String>,
    /// Header timeout, connection bound and drain timeout.
    pub connections: ConnectionLimits,
    /// How long a request body may stall before the request fails.
    pub body_idle_timeout: Duration,
    /// Event streams one principal may hold open on a node.
    pub max_streams_per_principal: usize,
    pub webhooks: WebhookSettings,
    /// The region the S3 door names its buckets in (`GetBucketLocation`).
    pub s3_region: String,
}

impl Config {
    /// Settings for a server with everything under `data_dir`, as `ferry serve` defaults them.
    pub fn embedded(data_dir: PathBuf, jwt_secret: Vec<u8>) -> Config {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            app: ferry_app::Settings::embedded(data_dir),
            jwt_secret,
            identity_provider: None,
            sweep_grace: std::time::Duration::from_secs(6 * 3600),
            public_url: None,
            connections: ConnectionLimits::default(),
            body_idle_timeout: DEFAULT_BODY_IDLE_TIMEOUT,
            max_streams_per_principal: DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
            webhooks: WebhookSettings::default(),
            s3_region: "us-east-1".to_owned(),
        }
    }
}
