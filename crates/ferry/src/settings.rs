//! Settings: from flags, then `FERRY_*` environment variables, then `ferry.toml`, then defaults.
//!
//! clap reads the first two (a flag wins over its variable); the file fills what both left
//! unset. Every setting's default is written in its help text, so `ferry serve --help` is the
//! full reference.

use anyhow::Context;
use clap::Args;
use ferry_server::Config;
use ferry_server::config::{
    DEFAULT_PREVIEW_MAX_CHARS, DEFAULT_PUBLISH_MAX_BYTES, DEFAULT_SANDBOX_MAX_BYTES,
    DEFAULT_SPACE_MAX_BYTES, DEFAULT_UPLOAD_MAX_BYTES,
};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";
pub const DEFAULT_DATA: &str = "./ferry-data";
const SECRET_FILE: &str = "jwt-secret";

/// The settings `ferry serve` reads.
#[derive(Debug, Args, Default)]
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
    pub config: Option<PathBuf>,

    /// HS256 secret for bearer tokens (a Supabase project's legacy JWT secret works)
    /// [default: a random secret generated once and kept in DATA/jwt-secret]
    #[arg(long, env = "FERRY_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,

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
}

/// `ferry.toml`: the same settings, by the same names in snake case.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    addr: Option<SocketAddr>,
    data: Option<PathBuf>,
    jwt_secret: Option<String>,
    database_url: Option<String>,
    blob_url: Option<String>,
    sandbox_dir: Option<PathBuf>,
    sweep_grace_secs: Option<u64>,
    space_max_bytes: Option<u64>,
    sandbox_max_bytes: Option<u64>,
    upload_max_bytes: Option<u64>,
    publish_max_bytes: Option<u64>,
    preview_max_chars: Option<usize>,
    public_url: Option<String>,
    skills_dir: Option<PathBuf>,
}

/// The resolved configuration, and whether the secret was generated (then the server prints
/// a sign-in URL).
pub struct Resolved {
    pub config: Config,
    pub generated_secret: bool,
}

impl ServeArgs {
    pub fn resolve(self) -> anyhow::Result<Resolved> {
        let file = read_file_settings(self.config.as_deref())?;
        let data = self
            .data
            .or(file.data)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA));
        std::fs::create_dir_all(&data)
            .with_context(|| format!("cannot create the data directory {}", data.display()))?;
        let (secret, generated_secret) = match self.jwt_secret.or(file.jwt_secret) {
            Some(secret) if !secret.is_empty() => (secret.into_bytes(), false),
            _ => (load_or_create_secret(&data)?, true),
        };
        let mut config = Config::embedded(data, secret);
        config.addr = self.addr.or(file.addr).unwrap_or_else(|| {
            DEFAULT_ADDR
                .parse()
                .expect("the default address is well formed")
        });
        if let Some(url) = self.database_url.or(file.database_url) {
            config.database_url = url;
        }
        config.blob_url = self.blob_url.or(file.blob_url);
        config.sandbox_dir = self.sandbox_dir.or(file.sandbox_dir);
        if let Some(secs) = self.sweep_grace_secs.or(file.sweep_grace_secs) {
            config.sweep_grace = std::time::Duration::from_secs(secs);
        }
        config.space_max_bytes = self
            .space_max_bytes
            .or(file.space_max_bytes)
            .unwrap_or(DEFAULT_SPACE_MAX_BYTES);
        config.sandbox_max_bytes = self
            .sandbox_max_bytes
            .or(file.sandbox_max_bytes)
            .unwrap_or(DEFAULT_SANDBOX_MAX_BYTES);
        config.upload_max_bytes = self
            .upload_max_bytes
            .or(file.upload_max_bytes)
            .unwrap_or(DEFAULT_UPLOAD_MAX_BYTES);
        config.publish_max_bytes = self
            .publish_max_bytes
            .or(file.publish_max_bytes)
            .unwrap_or(DEFAULT_PUBLISH_MAX_BYTES);
        config.preview_max_chars = self
            .preview_max_chars
            .or(file.preview_max_chars)
            .unwrap_or(DEFAULT_PREVIEW_MAX_CHARS);
        config.skills_dir = self.skills_dir.or(file.skills_dir);
        config.public_url = self.public_url.or(file.public_url);
        Ok(Resolved {
            config,
            generated_secret,
        })
    }
}

fn read_file_settings(explicit: Option<&Path>) -> anyhow::Result<FileSettings> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let default = PathBuf::from("ferry.toml");
            if !default.exists() {
                return Ok(FileSettings::default());
            }
            default
        }
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the settings file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("{} is not valid", path.display()))
}

/// The secret kept in the data directory, created (random, mode 0600) on first use.
pub fn load_or_create_secret(data: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = data.join(SECRET_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().as_bytes().to_vec()),
        Ok(_) => anyhow::bail!(
            "{} is empty; delete it to make a new secret",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
    let secret = hex::encode(rand::random::<[u8; 32]>());
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(secret.as_bytes())?;
    file.sync_all()?;
    Ok(secret.into_bytes())
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
mod tests {
    use super::*;

    #[test]
    fn ttl() {
        assert_eq!(parse_ttl("1h").unwrap().as_secs(), 3600);
        assert_eq!(parse_ttl("30m").unwrap().as_secs(), 1800);
        assert_eq!(parse_ttl("90").unwrap().as_secs(), 90);
        assert_eq!(parse_ttl("7d").unwrap().as_secs(), 604_800);
        assert!(parse_ttl("1y").is_err());
        assert!(parse_ttl("h").is_err());
        assert!(parse_ttl("0s").is_err());
    }

    #[test]
    fn secret_is_created_once_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create_secret(dir.path()).unwrap();
        let second = load_or_create_secret(dir.path()).unwrap();
        assert_eq!(first, second);
        assert_eq!(first.len(), 64);
        let mode = std::fs::metadata(dir.path().join(SECRET_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn flags_win_over_file_and_defaults_fill_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ferry.toml");
        std::fs::write(
            &file,
            "space_max_bytes = 10\nupload_max_bytes = 20\njwt_secret = \"from-file\"\n",
        )
        .unwrap();
        let resolved = ServeArgs {
            config: Some(file),
            data: Some(dir.path().join("data")),
            space_max_bytes: Some(5),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(resolved.config.space_max_bytes, 5);
        assert_eq!(resolved.config.upload_max_bytes, 20);
        assert_eq!(resolved.config.jwt_secret, b"from-file");
        assert!(!resolved.generated_secret);
        assert_eq!(resolved.config.preview_max_chars, 4000);
        assert_eq!(resolved.config.addr.to_string(), "127.0.0.1:8080");
    }

    #[test]
    fn unknown_file_settings_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ferry.toml");
        std::fs::write(&file, "spaces_max_bytes = 10\n").unwrap();
        let err = ServeArgs {
            config: Some(file),
            data: Some(dir.path().join("data")),
            ..Default::default()
        }
        .resolve()
        .err()
        .unwrap();
        assert!(format!("{err:#}").contains("unknown field"));
    }
}
