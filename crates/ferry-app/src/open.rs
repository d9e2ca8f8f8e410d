//! Opening an [`App`] from a deployment's settings. This is the one place that chooses the
//! stores — which metadata database, which blob store, where sandboxes live — so the server
//! hands over settings and gets use cases back, and no door ever names a store.

use std::io;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use ferry_exec::{
    Availability, Bubblewrap, ExecLimits, NetworkPolicy, Proxy, Runtime, cgroup::Cgroups,
};
use ferry_extract::{Extractor, ExtractorConfig};
use ferry_store::sandbox::Sandboxes;
use ferry_store::{Blobs, Db, LocalBlobs, ObjectBlobs};

pub use ferry_store::sandbox::SandboxLimits;

use crate::app::{App, Limits, Parts};
use crate::cache;
use crate::commands::Commands;

/// Where an [`App`] keeps what it keeps, and the limits it enforces.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `sqlite://…` or `postgres://…`.
    pub database_url: String,
    /// `s3://bucket[/prefix]` for blobs in an object store; files under `data_dir/blobs`
    /// when `None`.
    pub blob_url: Option<String>,
    /// The folder of the embedded stores, the object store's spool and the cache of derived
    /// files (HTML renderings, images for models).
    pub data_dir: PathBuf,
    /// Where thread sandboxes are folders. Without it, sandboxes are folders under
    /// `data_dir/sandboxes` with local blobs, and live in the blob store with an object store
    /// (so every node reaches them).
    pub sandbox_dir: Option<PathBuf>,
    /// How much of the server one thread's sandbox may hold at once.
    pub sandbox_limits: SandboxLimits,
    /// The sizes and waits the use cases enforce.
    pub limits: Limits,
    /// Skill packages copied into every new thread's `/sandbox/skills/`.
    pub skills_dir: Option<PathBuf>,
    /// How document previews are extracted: the worker program and its limits.
    pub extract: ExtractorConfig,
    /// Whether and how agents' commands run in their sandboxes (`execute`).
    pub execute: ExecuteSettings,
}

/// How commands run (docs/reference/execute.md).
#[derive(Debug, Clone)]
pub enum ExecuteSettings {
    /// Turned off by a setting: `execute` answers 501.
    Off,
    /// Cannot run here (no bubblewrap, say): why, in words; `execute` answers 501 with it.
    Unavailable(String),
    /// Run under bubblewrap, if a trial command works when the server opens.
    Bubblewrap(Box<BubblewrapSettings>),
}

/// How commands run under bubblewrap.
#[derive(Debug, Clone)]
pub struct BubblewrapSettings {
    /// bubblewrap's `bwrap`.
    pub bwrap: PathBuf,
    /// The ferry binary, started as `ferry __exec` for each command.
    pub helper: PathBuf,
    pub runtime: Runtime,
    pub limits: ExecLimits,
    /// A cgroup v2 folder delegated to ferry for the commands' groups; found when `None`.
    pub cgroup: Option<PathBuf>,
    /// The hosts commands may reach through ferry's proxy (none: no network).
    pub network: NetworkPolicy,
}

impl Settings {
    /// Everything under `data_dir`: a SQLite database, blobs and sandboxes as files, the
    /// default limits, and this program as the extraction worker.
    pub fn embedded(data_dir: PathBuf) -> Settings {
        Settings {
            database_url: format!("sqlite://{}?mode=rwc", data_dir.join("ferry.db").display()),
            blob_url: None,
            data_dir,
            sandbox_dir: None,
            sandbox_limits: SandboxLimits::default(),
            limits: Limits::default(),
            skills_dir: None,
            extract: ExtractorConfig::current_exe()
                .unwrap_or_else(|_| ExtractorConfig::worker("ferry")),
            execute: ExecuteSettings::Off,
        }
    }
}

/// Why the stores could not be opened; each names the store, so a wrong setting shows at
/// start.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create the data folder {path}: {source}")]
    DataDir { path: PathBuf, source: io::Error },
    #[error("cannot open the metadata database: {0}")]
    Database(ferry_store::Error),
    #[error("cannot open the blob store: {0}")]
    Blobs(io::Error),
    #[error("cannot open the sandbox folder {path}: {source}")]
    Sandboxes { path: PathBuf, source: io::Error },
}

impl App {
    /// Opens the stores `settings` name, creating the data folder if it is missing.
    pub async fn open(settings: Settings) -> Result<App, OpenError> {
        let data_dir = &settings.data_dir;
        std::fs::create_dir_all(data_dir).map_err(|source| OpenError::DataDir {
            path: data_dir.clone(),
            source,
        })?;
        let db = Db::open(&settings.database_url)
            .await
            .map_err(OpenError::Database)?;
        let blobs = match &settings.blob_url {
            None => {
                Blobs::Local(LocalBlobs::open(data_dir.join("blobs")).map_err(OpenError::Blobs)?)
            }
            Some(url) => Blobs::Object(
                ObjectBlobs::s3_from_env(url, data_dir.join("spool")).map_err(OpenError::Blobs)?,
            ),
        };
        let local = |dir: &Path| {
            Sandboxes::local(dir, settings.sandbox_limits).map_err(|source| OpenError::Sandboxes {
                path: dir.to_owned(),
                source,
            })
        };
        let sandboxes = match (&settings.sandbox_dir, &blobs) {
            (Some(dir), _) => local(dir)?,
            (None, Blobs::Local(_)) => local(&data_dir.join("sandboxes"))?,
            (None, Blobs::Object(_)) => Sandboxes::stored(db.clone(), blobs.clone()),
        };
        let commands = commands(&settings.execute, data_dir).await;
        Ok(App::new(Parts {
            db,
            blobs,
            sandboxes,
            extractor: Extractor::new(settings.extract),
            limits: settings.limits,
            skills_dir: settings.skills_dir,
            cache: cache::DerivedCache::new(data_dir.join("cache")),
            commands,
        }))
    }
}

/// The commands of a server with `settings`: a runner that ran a trial command, or why none.
async fn commands(settings: &ExecuteSettings, data_dir: &Path) -> Commands {
    let BubblewrapSettings {
        bwrap,
        helper,
        runtime,
        limits,
        cgroup,
        network,
    } = match settings {
        ExecuteSettings::Off => return Commands::off(),
        ExecuteSettings::Unavailable(why) => {
            return Commands::new(None, Availability::Unavailable(why.clone()));
        }
        ExecuteSettings::Bubblewrap(settings) => settings.as_ref(),
    };
    let cgroups = match Cgroups::detect(cgroup.as_deref()) {
        Ok(found) => found,
        Err(why) => return Commands::new(None, Availability::Unavailable(why)),
    };
    let proxy = if network.is_open() {
        // Its socket in the system's temporary folder: a Unix socket's path must be short.
        match Proxy::start(network.clone(), &std::env::temp_dir()) {
            Ok(proxy) => Some(proxy),
            Err(e) => {
                return Commands::new(
                    None,
                    Availability::Unavailable(format!(
                        "the proxy to the allowed hosts did not start: {e}"
                    )),
                );
            }
        }
    } else {
        None
    };
    let runner = Bubblewrap::new(
        helper.clone(),
        bwrap.clone(),
        runtime,
        limits.clone(),
        cgroups,
        proxy,
    );
    let availability = ferry_exec::probe(&runner, &data_dir.join("scratch")).await;
    Commands::new(Some(Arc::new(runner)), availability)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::principal::Principal;

    /// The embedded default, with a worker that is not there: these tests extract nothing.
    fn embedded(data_dir: &Path) -> Settings {
        Settings {
            extract: ExtractorConfig::new(data_dir.join("no-worker"), Vec::<String>::new()),
            ..Settings::embedded(data_dir.to_owned())
        }
    }

    #[tokio::test]
    async fn the_embedded_default_keeps_everything_under_the_data_folder() {
        let dir = tempfile::tempdir().unwrap();
        // A data folder that does not exist yet is made.
        let data_dir = dir.path().join("data");
        let app = App::open(embedded(&data_dir)).await.unwrap();
        let user = Principal::User { sub: "ann".into() };
        let thread = crate::threads::create(&app, &user, None, None)
            .await
            .unwrap();
        let service = Principal::Service { sub: None };
        let seen = crate::threads::get(&app, &service, &thread.id)
            .await
            .unwrap();
        let sandbox = seen.sandbox_dir.expect("a local sandbox has a folder");
        assert!(sandbox.starts_with(data_dir.join("sandboxes").to_str().unwrap()));
        assert!(data_dir.join("ferry.db").is_file());
        assert!(data_dir.join("blobs").is_dir());
    }

    #[tokio::test]
    async fn a_store_that_cannot_open_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = embedded(dir.path());
        settings.database_url = "mysql://nowhere/ferry".into();
        let err = App::open(settings).await.unwrap_err();
        assert!(matches!(err, OpenError::Database(_)), "{err}");
        assert!(
            err.to_string()
                .starts_with("cannot open the metadata database")
        );

        let mut settings = embedded(dir.path());
        settings.blob_url = Some("gs://bucket".into());
        let err = App::open(settings).await.unwrap_err();
        assert!(matches!(err, OpenError::Blobs(_)), "{err}");
        assert!(err.to_string().contains("gs://bucket"), "{err}");
    }
}
