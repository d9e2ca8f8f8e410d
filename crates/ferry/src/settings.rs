//! Why one file: every setting is declared once in `ServeArgs` (flag, variable, file key, help
//! with its default) and resolved in one function, which keeps each setting's four names and
//! its default in one view; the tests that hold the help and the README's table to the code are
//! in settings/tests.rs.
//!
//! Settings: from flags, then `FERRY_*` environment variables, then `ferry.toml`, then defaults.
//!
//! One struct, [`ServeArgs`], declares every setting: clap reads flags and variables from it (a
//! flag wins over its variable), serde reads `ferry.toml` into the same struct (same names in
//! snake case), and [`ServeArgs::or`] lets the file fill what both left unset. Every setting's
//! default is written in its help text, so `ferry serve --help` is the full reference; a test
//! holds the README's table to it.

use anyhow::Context;
use clap::Args;
use ferry_app::{
    AllowedHost, BubblewrapSettings, DEFAULT_PREVIEW_MAX_CHARS, DEFAULT_PUBLISH_MAX_BYTES,
    DEFAULT_SANDBOX_MAX_BYTES, DEFAULT_SPACE_MAX_BYTES, DEFAULT_UPLOAD_MAX_BYTES, ExecLimits,
    ExecRuntime, ExecuteSettings, NetworkPolicy,
};
use ferry_extract::OfficeRenderer;
use ferry_server::{Config, IdentityProvider, KeySource};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";
pub const DEFAULT_DATA: &str = "./ferry-data";
/// The audience of Supabase's access tokens.
pub const DEFAULT_JWT_AUDIENCE: &str = "authenticated";

/// The settings `ferry serve` reads, from flags and variables (clap) or `ferry.toml` (serde).
#[derive(Debug, Args, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080]
    #[arg(long, env = "FERRY_ADDR")]
    pub addr: Option<SocketAddr>,

    /// Data directory: SQLite metadata, local blobs, sandboxes, the generated secret
    /// [default: ./ferry-data]
    #[arg(long, env = "FERRY_DATA")]
    pub data: Option<PathBuf>,

    /// Settings file [default: ./ferry.toml, when it exists]
    #[arg(long, env = "FERRY_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,

    /// HS256 secret for bearer tokens (a Supabase project's legacy JWT secret works)
    /// [default: a random secret generated once and kept in DATA/jwt-secret]
    #[arg(long, env = "FERRY_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,

    /// URL of an identity provider's JWKS: its ES256, RS256 and EdDSA tokens sign people in,
    /// beside the secret's (Supabase: https://PROJECT.supabase.co/auth/v1/.well-known/jwks.json);
    /// needs --jwt-issuer [default: none]
    #[arg(long, env = "FERRY_JWKS_URL", conflicts_with = "jwks_file")]
    pub jwks_url: Option<String>,

    /// A file holding the identity provider's JWKS, instead of --jwks-url [default: none]
    #[arg(long, env = "FERRY_JWKS_FILE")]
    pub jwks_file: Option<PathBuf>,

    /// The `iss` the identity provider's tokens must carry, exactly (Supabase:
    /// https://PROJECT.supabase.co/auth/v1) [default: none; required with a JWKS]
    #[arg(long, env = "FERRY_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,

    /// A value the identity provider's tokens' `aud` must be or contain [default:
    /// authenticated]
    #[arg(long, env = "FERRY_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,

    /// Metadata database: sqlite://… or postgres://… [default: sqlite in DATA/ferry.db]
    #[arg(long, env = "FERRY_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Blob store: s3://bucket[/prefix] (endpoint, region and credentials from the AWS_*
    /// variables) [default: local files in DATA/blobs]
    #[arg(long, env = "FERRY_BLOB_URL")]
    pub blob_url: Option<String>,

    /// Folder holding thread sandboxes; with an s3:// blob store, set it only to a file system
    /// every node mounts [default: DATA/sandboxes, or the blob store when FERRY_BLOB_URL is s3]
    #[arg(long, env = "FERRY_SANDBOX_DIR")]
    pub sandbox_dir: Option<PathBuf>,

    /// Seconds an unreferenced blob or an abandoned spool file is kept before the sweep
    /// removes it [default: 21600]
    #[arg(long, env = "FERRY_SWEEP_GRACE_SECS")]
    pub sweep_grace_secs: Option<u64>,

    /// Largest space file, in bytes [default: 5242880]
    #[arg(long, env = "FERRY_SPACE_MAX_BYTES")]
    pub space_max_bytes: Option<u64>,

    /// Largest sandbox file written through the API, in bytes [default: 104857600]
    #[arg(long, env = "FERRY_SANDBOX_MAX_BYTES")]
    pub sandbox_max_bytes: Option<u64>,

    /// Largest upload, in bytes [default: 104857600]
    #[arg(long, env = "FERRY_UPLOAD_MAX_BYTES")]
    pub upload_max_bytes: Option<u64>,

    /// Largest file an agent may publish, in bytes [default: 104857600]
    #[arg(long, env = "FERRY_PUBLISH_MAX_BYTES")]
    pub publish_max_bytes: Option<u64>,

    /// Memory, in bytes, shared by every request that holds a file's bytes (read_file,
    /// download_files, edit_file, grep, write_file's JSON); past it requests wait a moment, then
    /// are answered 503 with Retry-After [default: a quarter of the machine's memory, or of the
    /// control group's limit when lower]
    #[arg(long, env = "FERRY_MEMORY_BUDGET_BYTES")]
    pub memory_budget_bytes: Option<u64>,

    /// Longest document preview handed to the agent, in characters [default: 4000]
    #[arg(long, env = "FERRY_PREVIEW_MAX_CHARS")]
    pub preview_max_chars: Option<usize>,

    /// The URL clients reach the server at, when it differs from --addr (behind a proxy);
    /// used in signed download links [default: http://ADDR]
    #[arg(long, env = "FERRY_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Folder of skill packages copied into each new thread's /sandbox/skills/ [default: none]
    #[arg(long, env = "FERRY_SKILLS_DIR")]
    pub skills_dir: Option<PathBuf>,

    /// Seconds a client has to send a request's headers; an idle keep-alive connection is
    /// closed after the same time [default: 10]
    #[arg(long, env = "FERRY_HEADER_TIMEOUT_SECS")]
    pub header_timeout_secs: Option<u64>,

    /// Seconds a request body may send nothing before the request fails [default: 30]
    #[arg(long, env = "FERRY_BODY_IDLE_TIMEOUT_SECS")]
    pub body_idle_timeout_secs: Option<u64>,

    /// Connections open at once; more are closed on arrival [default: 8192]
    #[arg(long, env = "FERRY_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// Seconds a shutdown waits for requests in flight [default: 10]
    #[arg(long, env = "FERRY_DRAIN_TIMEOUT_SECS")]
    pub drain_timeout_secs: Option<u64>,

    /// Event streams one user, agent or service token may hold open on a node [default: 16]
    #[arg(long, env = "FERRY_MAX_STREAMS_PER_PRINCIPAL")]
    pub max_streams_per_principal: Option<usize>,

    /// File system operations on one thread's sandbox folder running at once [default: 4]
    #[arg(long, env = "FERRY_SANDBOX_OPS_PER_THREAD")]
    pub sandbox_ops_per_thread: Option<usize>,

    /// Seconds a sandbox operation may wait and run before it is answered 503 [default: 30]
    #[arg(long, env = "FERRY_SANDBOX_OP_TIMEOUT_SECS")]
    pub sandbox_op_timeout_secs: Option<u64>,

    /// Extraction workers (document previews) running at once [default: the number of CPUs]
    #[arg(long, env = "FERRY_EXTRACT_WORKERS")]
    pub extract_workers: Option<usize>,

    /// Seconds one extraction may run before its worker is killed [default: 20]
    #[arg(long, env = "FERRY_EXTRACT_TIMEOUT_SECS")]
    pub extract_timeout_secs: Option<u64>,

    /// Address space of one extraction worker, in bytes [default: 536870912]
    #[arg(long, env = "FERRY_EXTRACT_MEMORY_BYTES")]
    pub extract_memory_bytes: Option<u64>,

    /// Program that draws a presentation's slides as images for the preview panel: LibreOffice's
    /// `soffice` (Debian: libreoffice-impress-nogui), or `off` [default: soffice, when PATH has
    /// it]
    #[arg(long, env = "FERRY_OFFICE_RENDERER")]
    pub office_renderer: Option<String>,

    /// Seconds an upload waits for its preview before it is answered without one
    /// [default: 15]
    #[arg(long, env = "FERRY_PREVIEW_WAIT_SECS")]
    pub preview_wait_secs: Option<u64>,

    /// Seconds an unfinished resumable (tus) upload is kept [default: 86400]
    #[arg(long, env = "FERRY_RESUMABLE_EXPIRY_SECS")]
    pub resumable_expiry_secs: Option<u64>,

    /// Unfinished resumable (tus) uploads one principal may hold at once [default: 20]
    #[arg(long, env = "FERRY_RESUMABLE_MAX_UNFINISHED")]
    pub resumable_max_unfinished: Option<u64>,

    /// Allow webhooks to loopback, private, link-local and other non-public addresses
    /// [default: false]
    #[arg(long, env = "FERRY_WEBHOOK_ALLOW_PRIVATE", value_parser = clap::builder::BoolishValueParser::new())]
    pub webhook_allow_private: Option<bool>,

    /// Seconds one webhook POST may take [default: 10]
    #[arg(long, env = "FERRY_WEBHOOK_TIMEOUT_SECS")]
    pub webhook_timeout_secs: Option<u64>,

    /// The region the S3 door at /s3 names (GetBucketLocation); signatures for any region are
    /// accepted [default: us-east-1]
    #[arg(long, env = "FERRY_S3_REGION")]
    pub s3_region: Option<String>,

    /// Run agents' commands in their sandboxes (execute), confined by bubblewrap: on or off
    /// [default: on, where bubblewrap and user namespaces work]
    #[arg(long, env = "FERRY_EXECUTE")]
    pub execute: Option<String>,

    /// A prepared root file system commands run on (an unpacked image with Python and the
    /// document libraries), instead of the host's /usr [default: the host's]
    #[arg(long, env = "FERRY_EXECUTE_ROOT")]
    pub execute_root: Option<PathBuf>,

    /// Seconds a command may run when the caller names no timeout [default: 120]
    #[arg(long, env = "FERRY_EXECUTE_TIMEOUT_SECS")]
    pub execute_timeout_secs: Option<u64>,

    /// The longest timeout a caller may ask for, in seconds [default: 900]
    #[arg(long, env = "FERRY_EXECUTE_MAX_TIMEOUT_SECS")]
    pub execute_max_timeout_secs: Option<u64>,

    /// Memory of one command, all its processes and its /tmp together, in bytes
    /// [default: 2147483648]
    #[arg(long, env = "FERRY_EXECUTE_MEMORY_BYTES")]
    pub execute_memory_bytes: Option<u64>,

    /// Processes one command may have at once [default: 256]
    #[arg(long, env = "FERRY_EXECUTE_PROCESSES")]
    pub execute_processes: Option<u64>,

    /// Output of one command kept for its answer, in bytes; beyond it the head and the tail
    /// are kept [default: 1048576]
    #[arg(long, env = "FERRY_EXECUTE_OUTPUT_BYTES")]
    pub execute_output_bytes: Option<u64>,

    /// What a sandbox may hold while a command runs, in bytes: past it the command is stopped
    /// [default: 1073741824]
    #[arg(long, env = "FERRY_EXECUTE_SANDBOX_BYTES")]
    pub execute_sandbox_bytes: Option<u64>,

    /// Commands running at once on this server [default: the number of CPUs]
    #[arg(long, env = "FERRY_EXECUTE_CONCURRENT")]
    pub execute_concurrent: Option<usize>,

    /// A cgroup v2 folder delegated to ferry, under which each command gets a control group
    /// [default: found: cgroup v2 beside the server's own group, else the v1 hierarchies]
    #[arg(long, env = "FERRY_EXECUTE_CGROUP")]
    pub execute_cgroup: Option<PathBuf>,

    /// Hosts commands may reach through ferry's filtering proxy, separated by commas:
    /// `pypi.org`, `*.pythonhosted.org` (names under it), `mirror.internal:8443` (that port;
    /// otherwise 80 and 443) [default: none, commands have no network]
    #[arg(long, env = "FERRY_EXECUTE_ALLOW_HOSTS")]
    pub execute_allow_hosts: Option<String>,
}

impl ServeArgs {
    /// These settings, with `other`'s filling the ones these leave unset.
    fn or(self, other: ServeArgs) -> ServeArgs {
        ServeArgs {
            addr: self.addr.or(other.addr),
            data: self.data.or(other.data),
            config: self.config.or(other.config),
            jwt_secret: self.jwt_secret.or(other.jwt_secret),
            jwks_url: self.jwks_url.or(other.jwks_url),
            jwks_file: self.jwks_file.or(other.jwks_file),
            jwt_issuer: self.jwt_issuer.or(other.jwt_issuer),
            jwt_audience: self.jwt_audience.or(other.jwt_audience),
            database_url: self.database_url.or(other.database_url),
            blob_url: self.blob_url.or(other.blob_url),
            sandbox_dir: self.sandbox_dir.or(other.sandbox_dir),
            sweep_grace_secs: self.sweep_grace_secs.or(other.sweep_grace_secs),
            space_max_bytes: self.space_max_bytes.or(other.space_max_bytes),
            sandbox_max_bytes: self.sandbox_max_bytes.or(other.sandbox_max_bytes),
            upload_max_bytes: self.upload_max_bytes.or(other.upload_max_bytes),
            publish_max_bytes: self.publish_max_bytes.or(other.publish_max_bytes),
            memory_budget_bytes: self.memory_budget_bytes.or(other.memory_budget_bytes),
            preview_max_chars: self.preview_max_chars.or(other.preview_max_chars),
            public_url: self.public_url.or(other.public_url),
            skills_dir: self.skills_dir.or(other.skills_dir),
            header_timeout_secs: self.header_timeout_secs.or(other.header_timeout_secs),
            body_idle_timeout_secs: self.body_idle_timeout_secs.or(other.body_idle_timeout_secs),
            max_connections: self.max_connections.or(other.max_connections),
            drain_timeout_secs: self.drain_timeout_secs.or(other.drain_timeout_secs),
            max_streams_per_principal: self
                .max_streams_per_principal
                .or(other.max_streams_per_principal),
            sandbox_ops_per_thread: self.sandbox_ops_per_thread.or(other.sandbox_ops_per_thread),
            sandbox_op_timeout_secs: self
                .sandbox_op_timeout_secs
                .or(other.sandbox_op_timeout_secs),
            extract_workers: self.extract_workers.or(other.extract_workers),
            extract_timeout_secs: self.extract_timeout_secs.or(other.extract_timeout_secs),
            extract_memory_bytes: self.extract_memory_bytes.or(other.extract_memory_bytes),
            office_renderer: self.office_renderer.or(other.office_renderer),
            preview_wait_secs: self.preview_wait_secs.or(other.preview_wait_secs),
            resumable_expiry_secs: self.resumable_expiry_secs.or(other.resumable_expiry_secs),
            resumable_max_unfinished: self
                .resumable_max_unfinished
                .or(other.resumable_max_unfinished),
            webhook_allow_private: self.webhook_allow_private.or(other.webhook_allow_private),
            webhook_timeout_secs: self.webhook_timeout_secs.or(other.webhook_timeout_secs),
            s3_region: self.s3_region.or(other.s3_region),
            execute: self.execute.or(other.execute),
            execute_root: self.execute_root.or(other.execute_root),
            execute_timeout_secs: self.execute_timeout_secs.or(other.execute_timeout_secs),
            execute_max_timeout_secs: self
                .execute_max_timeout_secs
                .or(other.execute_max_timeout_secs),
            execute_memory_bytes: self.execute_memory_bytes.or(other.execute_memory_bytes),
            execute_processes: self.execute_processes.or(other.execute_processes),
            execute_output_bytes: self.execute_output_bytes.or(other.execute_output_bytes),
            execute_sandbox_bytes: self.execute_sandbox_bytes.or(other.execute_sandbox_bytes),
            execute_concurrent: self.execute_concurrent.or(other.execute_concurrent),
            execute_cgroup: self.execute_cgroup.or(other.execute_cgroup),
            execute_allow_hosts: self.execute_allow_hosts.or(other.execute_allow_hosts),
        }
    }
}

/// The resolved configuration, and where its secret came from (with one of its own making, the
/// server offers a sign-in link).
pub struct Resolved {
    pub config: Config,
    pub generated_secret: bool,
    /// The secret was created by this start (the data folder had none).
    pub created_secret: bool,
}

impl ServeArgs {
    pub fn resolve(self) -> anyhow::Result<Resolved> {
        let file = read_file_settings(self.config.as_deref())?;
        let settings = self.or(file);
        let addr = settings.addr.unwrap_or_else(|| {
            DEFAULT_ADDR
                .parse()
                .expect("the default address is well formed")
        });
        let execute = execute_settings(
            &settings,
            settings
                .sandbox_max_bytes
                .unwrap_or(DEFAULT_SANDBOX_MAX_BYTES),
            addr.port(),
        )?;
        let data = settings.data.unwrap_or_else(|| PathBuf::from(DEFAULT_DATA));
        std::fs::create_dir_all(&data)
            .with_context(|| format!("cannot create the data directory {}", data.display()))?;
        let (secret, generated_secret, created_secret) = match settings.jwt_secret {
            Some(secret) if !secret.is_empty() => (secret.into_bytes(), false, false),
            _ => match crate::secret::load_secret(&data)? {
                Some(secret) => (secret, true, false),
                None => (crate::secret::load_or_create_secret(&data)?, true, true),
            },
        };
        let identity_provider = identity_provider(
            settings.jwks_url,
            settings.jwks_file,
            settings.jwt_issuer,
            settings.jwt_audience,
        )?;
        let mut config = Config::embedded(data, secret);
        config.identity_provider = identity_provider;
        config.addr = addr;
        if let Some(url) = settings.database_url {
            config.app.database_url = url;
        }
        config.app.blob_url = settings.blob_url;
        config.app.sandbox_dir = settings.sandbox_dir;
        let secs = Duration::from_secs;
        if let Some(t) = settings.sweep_grace_secs {
            config.sweep_grace = secs(t);
        }
        config.app.limits.space_max_bytes =
            settings.space_max_bytes.unwrap_or(DEFAULT_SPACE_MAX_BYTES);
        config.app.limits.sandbox_max_bytes = settings
            .sandbox_max_bytes
            .unwrap_or(DEFAULT_SANDBOX_MAX_BYTES);
        config.app.limits.upload_max_bytes = settings
            .upload_max_bytes
            .unwrap_or(DEFAULT_UPLOAD_MAX_BYTES);
        config.app.limits.publish_max_bytes = settings
            .publish_max_bytes
            .unwrap_or(DEFAULT_PUBLISH_MAX_BYTES);
        config.app.limits.memory_budget_bytes = settings
            .memory_budget_bytes
            .unwrap_or_else(ferry_app::memory::default_budget_bytes);
        config.app.limits.preview_max_chars = settings
            .preview_max_chars
            .unwrap_or(DEFAULT_PREVIEW_MAX_CHARS);
        config.app.skills_dir = settings.skills_dir;
        config.public_url = settings.public_url;
        if let Some(t) = settings.header_timeout_secs {
            config.connections.header_timeout = secs(t.max(1));
        }
        if let Some(n) = settings.max_connections {
            config.connections.max_connections = n.max(1);
        }
        if let Some(t) = settings.drain_timeout_secs {
            config.connections.drain_timeout = secs(t);
        }
        if let Some(t) = settings.body_idle_timeout_secs {
            config.body_idle_timeout = secs(t.max(1));
        }
        if let Some(n) = settings.max_streams_per_principal {
            config.max_streams_per_principal = n.max(1);
        }
        if let Some(n) = settings.sandbox_ops_per_thread {
            config.app.sandbox_limits.concurrent_ops = n.max(1);
        }
        if let Some(t) = settings.sandbox_op_timeout_secs {
            config.app.sandbox_limits.op_timeout = secs(t.max(1));
        }
        if let Some(n) = settings.extract_workers {
            config.app.extract.max_concurrent = n.max(1);
        }
        if let Some(t) = settings.extract_timeout_secs {
            config.app.extract.timeout = secs(t.max(1));
            // The CPU limit stays within the wall clock, so a busy worker is stopped by the
            // kernel before it would be killed from outside.
            config.app.extract.cpu_seconds = config.app.extract.cpu_seconds.min(t.max(1));
        }
        if let Some(bytes) = settings.extract_memory_bytes {
            config.app.extract.memory_bytes = bytes;
        }
        config.app.extract.office = office_renderer(settings.office_renderer.as_deref())?;
        if let Some(t) = settings.preview_wait_secs {
            config.app.limits.preview_wait = secs(t);
        }
        if let Some(t) = settings.resumable_expiry_secs {
            config.app.limits.resumable_expiry = secs(t.max(1));
        }
        if let Some(n) = settings.resumable_max_unfinished {
            config.app.limits.resumable_max_unfinished = n.max(1);
        }
        if let Some(allow) = settings.webhook_allow_private {
            config.webhooks.allow_private = allow;
        }
        if let Some(t) = settings.webhook_timeout_secs {
            config.webhooks.timeout = secs(t.max(1));
        }
        if let Some(region) = settings.s3_region.filter(|r| !r.trim().is_empty()) {
            config.s3_region = region.trim().to_owned();
        }
        config.app.execute = execute;
        Ok(Resolved {
            config,
            generated_secret,
            created_secret,
        })
    }
}

/// The identity provider the JWKS settings describe, if any. A JWKS needs an issuer to check;
/// an issuer or audience without a JWKS would check nothing, so both are refused.
fn identity_provider(
    url: Option<String>,
    file: Option<PathBuf>,
    issuer: Option<String>,
    audience: Option<String>,
) -> anyhow::Result<Option<IdentityProvider>> {
    let non_empty = |s: Option<String>| s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    let (url, issuer, audience) = (non_empty(url), non_empty(issuer), non_empty(audience));
    let keys = match (url, file) {
        (Some(_), Some(_)) => anyhow::bail!("set either --jwks-url or --jwks-file, not both"),
        (Some(url), None) => {
            let parsed = url::Url::parse(&url)
                .with_context(|| format!("--jwks-url '{url}' is not a URL"))?;
            if !matches!(parsed.scheme(), "https" | "http") {
                anyhow::bail!("--jwks-url '{url}' must be an https:// (or http://) URL");
            }
            KeySource::Url(url)
        }
        (None, Some(file)) => KeySource::File(file),
        (None, None) => {
            if issuer.is_some() || audience.is_some() {
                anyhow::bail!(
                    "--jwt-issuer and --jwt-audience check an identity provider's tokens: set \
                     --jwks-url (or --jwks-file) to its key set too"
                );
            }
            return Ok(None);
        }
    };
    let issuer = issuer.context(
        "--jwks-url / --jwks-file needs --jwt-issuer: the 'iss' the identity provider's tokens \
         carry (Supabase: https://PROJECT.supabase.co/auth/v1)",
    )?;
    Ok(Some(IdentityProvider {
        keys,
        issuer,
        audience: audience.unwrap_or_else(|| DEFAULT_JWT_AUDIENCE.to_owned()),
    }))
}

/// The office renderer, as the worker (which has no PATH) runs it: LibreOffice's program — the
/// one named, found on PATH when it is a bare name, else `soffice` where PATH has it — confined
/// by bubblewrap's `bwrap` from PATH. `off`, or neither named nor found: none. A renderer that
/// was named but cannot be run (it, or bubblewrap, is missing) stops the server, since it was
/// asked for; one merely found without bubblewrap is left off, and the log says why.
fn office_renderer(named: Option<&str>) -> anyhow::Result<Option<OfficeRenderer>> {
    let sandbox = on_path(Path::new("bwrap"));
    match named.map(str::trim) {
        Some("off") => Ok(None),
        None | Some("") => {
            let Some(program) = on_path(Path::new("soffice")) else {
                return Ok(None);
            };
            if sandbox.is_none() {
                tracing::warn!(
                    "LibreOffice is installed but bubblewrap (bwrap) is not: slides are shown \
                     as their text and pictures, not drawn (install bubblewrap to draw them)"
                );
            }
            Ok(sandbox.map(|sandbox| OfficeRenderer { program, sandbox }))
        }
        Some(named) => {
            let program = on_path(Path::new(named)).with_context(|| {
                format!(
                    "--office-renderer '{named}' is not an executable file (install LibreOffice, \
                     name its soffice, or say off)"
                )
            })?;
            let sandbox = sandbox.context(
                "--office-renderer needs bubblewrap (bwrap on PATH; Debian: bubblewrap) to \
                 confine LibreOffice",
            )?;
            Ok(Some(OfficeRenderer { program, sandbox }))
        }
    }
}

/// How agents' commands run: off when turned off; under bubblewrap when it is installed (the
/// server then runs a trial command, and says whether commands are on); unavailable, with the
/// reason, when it is not — unless `on` was asked for, which then stops the server.
fn execute_settings(
    settings: &ServeArgs,
    sandbox_max_bytes: u64,
    own_port: u16,
) -> anyhow::Result<ExecuteSettings> {
    let asked = match settings.execute.as_deref().map(str::trim) {
        Some("off") => return Ok(ExecuteSettings::Off),
        Some("on") => true,
        None | Some("") => false,
        Some(other) => anyhow::bail!("--execute must be on or off, not '{other}'"),
    };
    let Some(bwrap) = on_path(Path::new("bwrap")) else {
        let why = "bubblewrap (bwrap) is not installed (Debian: bubblewrap)";
        anyhow::ensure!(!asked, "--execute on needs {why}");
        return Ok(ExecuteSettings::Unavailable(why.to_owned()));
    };
    let helper = std::env::current_exe().context("cannot find this program to run commands")?;
    let runtime = match &settings.execute_root {
        Some(root) => {
            anyhow::ensure!(
                root.is_dir(),
                "--execute-root {} is not a folder (give an unpacked root file system)",
                root.display()
            );
            ExecRuntime::Root(root.clone())
        }
        None => ExecRuntime::Host,
    };
    let allowed = settings
        .execute_allow_hosts
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .filter(|entry| !entry.trim().is_empty())
        .map(|entry| entry.parse::<AllowedHost>())
        .collect::<Result<Vec<_>, String>>()
        .map_err(|why| anyhow::anyhow!("--execute-allow-hosts: {why}"))?;
    let network = NetworkPolicy {
        allowed,
        own_ports: vec![own_port],
    };
    let defaults = ExecLimits::default();
    let secs = Duration::from_secs;
    let max_timeout = settings
        .execute_max_timeout_secs
        .map_or(defaults.max_timeout, |t| secs(t.max(1)));
    let limits = ExecLimits {
        default_timeout: settings
            .execute_timeout_secs
            .map_or(defaults.default_timeout, |t| secs(t.max(1)))
            .min(max_timeout),
        max_timeout,
        memory_bytes: settings
            .execute_memory_bytes
            .unwrap_or(defaults.memory_bytes),
        processes: settings
            .execute_processes
            .map_or(defaults.processes, |n| n.max(1)),
        output_bytes: settings
            .execute_output_bytes
            .map_or(defaults.output_bytes, |n| n.max(1024) as usize),
        file_bytes: sandbox_max_bytes,
        sandbox_bytes: settings
            .execute_sandbox_bytes
            .unwrap_or(defaults.sandbox_bytes),
        tmp_bytes: defaults.tmp_bytes,
        concurrent: settings
            .execute_concurrent
            .map_or(defaults.concurrent, |n| n.max(1)),
    };
    Ok(ExecuteSettings::Bubblewrap(Box::new(BubblewrapSettings {
        bwrap,
        helper,
        runtime,
        limits,
        cgroup: settings.execute_cgroup.clone(),
        network,
    })))
}

/// `program` as an absolute path: itself when it has a folder, else the first executable file
/// of that name in PATH's folders.
fn on_path(program: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 {
        let absolute = std::path::absolute(program).ok()?;
        return executable(&absolute).then_some(absolute);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_absolute() && executable(candidate))
}

fn read_file_settings(explicit: Option<&Path>) -> anyhow::Result<ServeArgs> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let default = PathBuf::from("ferry.toml");
            if !default.exists() {
                return Ok(ServeArgs::default());
            }
            default
        }
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the settings file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("{} is not valid", path.display()))
}

/// Reads `1h`, `30m`, `45s`, `7d` or plain seconds.
pub fn parse_ttl(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration like 1h, 30m, 45s or 7d"))?;
    let seconds = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return Err(format!("'{text}' has an unknown unit; use s, m, h or d")),
    };
    if seconds == 0 {
        return Err("the duration must be longer than zero".into());
    }
    Ok(std::time::Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests;
