//! Whether commands can run here: a real command, `true`, under the whole confinement, in a
//! scratch sandbox. Asked once when the server starts, so that `ferry serve` can say whether
//! commands are on and, if not, why.

use std::path::Path;
use std::time::Duration;

use crate::{Bubblewrap, Job, Runner};

/// Whether commands run on this server, and why not when they do not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    On,
    /// Turned off by a setting.
    Off,
    /// Cannot run here: why, in words.
    Unavailable(String),
}

impl Availability {
    pub fn is_on(&self) -> bool {
        matches!(self, Availability::On)
    }

    /// Why commands do not run, for a refusal's message; `None` when they do.
    pub fn why_not(&self) -> Option<String> {
        match self {
            Availability::On => None,
            Availability::Off => Some(
                "commands are turned off on this server (--execute off / FERRY_EXECUTE=off)"
                    .to_owned(),
            ),
            Availability::Unavailable(why) => {
                Some(format!("commands cannot run on this server: {why}"))
            }
        }
    }
}

/// Runs `true` with `runner` in a sandbox made under `scratch` (and removed after).
pub async fn probe(runner: &Bubblewrap, scratch: &Path) -> Availability {
    let sandbox = scratch.join(format!("exec-probe-{}", std::process::id()));
    let made = ["workspace", "user_uploads"]
        .iter()
        .try_for_each(|d| std::fs::create_dir_all(sandbox.join(d)));
    if let Err(e) = made {
        return Availability::Unavailable(format!(
            "no scratch folder for a trial command at {}: {e}",
            sandbox.display()
        ));
    }
    let job = Job {
        sandbox: sandbox.clone(),
        command: "true".to_owned(),
        cwd: "/sandbox/workspace".to_owned(),
        timeout: Duration::from_secs(30),
    };
    let outcome = runner.run(job, None).await;
    let _ = std::fs::remove_dir_all(&sandbox);
    match outcome {
        Ok(done) if done.exit_code == Some(0) => Availability::On,
        Ok(done) => Availability::Unavailable(format!(
            "a trial command under bubblewrap failed (exit {:?}): {}",
            done.exit_code,
            done.output.trim()
        )),
        Err(e) => Availability::Unavailable(format!("a trial command could not start: {e}")),
    }
}
