//! A control group per command, where the server can make one: the command's memory (its
//! `/tmp` included), its processes and its CPU are then bounded as a whole, and every process
//! of it can be found and killed.
//!
//! cgroup v2 is used where a folder of the unified hierarchy is delegated to ferry (the
//! `--execute-cgroup` setting, e.g. a systemd service's cgroup with `Delegate=yes`), or where
//! ferry may make one beside its own; otherwise the v1 `memory`, `pids` and `cpu` hierarchies
//! when they are mounted and writable. Without either, [`Cgroups::None`]: the helper limits
//! each process instead (`RLIMIT_AS`, `RLIMIT_NPROC`), which is weaker, and `ferry serve` says
//! so when it starts.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::ExecLimits;

/// The folder made under each hierarchy's own group to hold the commands' groups.
const PARENT: &str = "ferry-exec";

/// One core: a command's CPU quota per period (µs), so that one command never takes the
/// whole machine.
const CPU_PERIOD_US: u64 = 100_000;

/// Where the server makes its commands' control groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cgroups {
    /// A folder of the unified hierarchy whose children get the `memory` and `pids`
    /// controllers (and `cpu` when it has it).
    V2 { parent: PathBuf, cpu: bool },
    /// The legacy hierarchies: a folder in each of those that are usable.
    V1 {
        memory: Option<PathBuf>,
        pids: Option<PathBuf>,
        cpu: Option<PathBuf>,
    },
    /// No control group can be made: limits are per process.
    None,
}

impl Cgroups {
    /// The control groups this server can make: under `configured` (a delegated cgroup v2
    /// folder) when given, else the first that works of cgroup v2 beside the server's own group
    /// and the v1 hierarchies.
    pub fn detect(configured: Option<&Path>) -> Result<Cgroups, String> {
        if let Some(dir) = configured {
            return v2_under(dir).map_err(|e| {
                format!(
                    "the cgroup folder {} cannot hold the commands' groups: {e}",
                    dir.display()
                )
            });
        }
        let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        if let Some(unified) = mount_of(&mounts, "cgroup2", None)
            && let Some(path) = own_group(&own, "")
        {
            let dir = unified.join(path.trim_start_matches('/')).join(PARENT);
            match v2_under(&dir) {
                Ok(found) => return Ok(found),
                // Leave nothing behind in a hierarchy that cannot be used.
                Err(_) => {
                    let _ = fs::remove_dir(&dir);
                }
            }
        }
        let v1 = |controller: &str| {
            let mount = mount_of(&mounts, "cgroup", Some(controller))?;
            let path = own_group(&own, controller)?;
            let dir = mount.join(path.trim_start_matches('/')).join(PARENT);
            usable_v1(&dir).ok().map(|()| dir)
        };
        let (memory, pids, cpu) = (v1("memory"), v1("pids"), v1("cpu"));
        if memory.is_some() || pids.is_some() {
            return Ok(Cgroups::V1 { memory, pids, cpu });
        }
        Ok(Cgroups::None)
    }

    /// In words, for `ferry serve`'s start-up line.
    pub fn describe(&self) -> String {
        match self {
            Cgroups::V2 { parent, cpu } => format!(
                "a cgroup v2 group per command under {} (memory, processes{})",
                parent.display(),
                if *cpu { ", one core of CPU" } else { "" }
            ),
            Cgroups::V1 { memory, pids, cpu } => {
                let mut bounded = Vec::new();
                if memory.is_some() {
                    bounded.push("memory");
                }
                if pids.is_some() {
                    bounded.push("processes");
                }
                if cpu.is_some() {
                    bounded.push("one core of CPU");
                }
                format!("a cgroup v1 group per command ({})", bounded.join(", "))
            }
            Cgroups::None => "no control group could be made: memory is bounded per process \
                              (RLIMIT_AS), processes per user (RLIMIT_NPROC, not enforced when \
                              the server runs as root)"
                .to_owned(),
        }
    }

    /// Whether the command's memory is bounded as a whole (else per process).
    pub fn bounds_memory(&self) -> bool {
        matches!(
            self,
            Cgroups::V2 { .. }
                | Cgroups::V1 {
                    memory: Some(_),
                    ..
                }
        )
    }

    /// Whether the command's processes are bounded as a whole (else per user).
    pub fn bounds_processes(&self) -> bool {
        matches!(self, Cgroups::V2 { .. } | Cgroups::V1 { pids: Some(_), .. })
    }

    /// Makes the group of one command, named `name`, with `limits`.
    pub fn create(&self, name: &str, limits: &ExecLimits) -> io::Result<Option<RunGroup>> {
        let quota = format!("{CPU_PERIOD_US} {CPU_PERIOD_US}");
        match self {
            Cgroups::None => Ok(None),
            Cgroups::V2 { parent, cpu } => {
                let dir = parent.join(name);
                fs::create_dir(&dir)?;
                let group = RunGroup {
                    v2: true,
                    dirs: vec![dir.clone()],
                    memory: Some(dir.clone()),
                    pids: Some(dir.clone()),
                };
                fs::write(dir.join("memory.max"), limits.memory_bytes.to_string())?;
                // Swap would let a command hold more than its memory; where there is none the
                // file may be missing.
                let _ = fs::write(dir.join("memory.swap.max"), "0");
                fs::write(dir.join("pids.max"), limits.processes.to_string())?;
                if *cpu {
                    fs::write(dir.join("cpu.max"), &quota)?;
                }
                Ok(Some(group))
            }
            Cgroups::V1 { memory, pids, cpu } => {
                let mut group = RunGroup {
                    v2: false,
                    dirs: Vec::new(),
                    memory: None,
                    pids: None,
                };
                if let Some(parent) = memory {
                    let dir = parent.join(name);
                    fs::create_dir(&dir)?;
                    group.dirs.push(dir.clone());
                    fs::write(
                        dir.join("memory.limit_in_bytes"),
                        limits.memory_bytes.to_string(),
                    )?;
                    let _ = fs::write(
                        dir.join("memory.memsw.limit_in_bytes"),
                        limits.memory_bytes.to_string(),
                    );
                    group.memory = Some(dir);
                }
                if let Some(parent) = pids {
                    let dir = parent.join(name);
                    fs::create_dir(&dir)?;
                    group.dirs.push(dir.clone());
                    fs::write(dir.join("pids.max"), limits.processes.to_string())?;
                    group.pids = Some(dir);
                }
                if let Some(parent) = cpu {
                    let dir = parent.join(name);
                    fs::create_dir(&dir)?;
                    group.dirs.push(dir.clone());
                    fs::write(dir.join("cpu.cfs_period_us"), CPU_PERIOD_US.to_string())?;
                    fs::write(dir.join("cpu.cfs_quota_us"), CPU_PERIOD_US.to_string())?;
                }
                Ok(Some(group))
            }
        }
    }
}

/// The control group of one running command (a folder in each hierarchy it uses). Dropping it
/// kills what is left in it and removes it.
#[derive(Debug)]
pub struct RunGroup {
    v2: bool,
    dirs: Vec<PathBuf>,
    memory: Option<PathBuf>,
    pids: Option<PathBuf>,
}

impl RunGroup {
    /// The folders whose `cgroup.procs` the command's first process writes itself into.
    pub fn folders(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Whether the kernel killed a process of the command for memory.
    pub fn ran_out_of_memory(&self) -> bool {
        let Some(dir) = &self.memory else {
            return false;
        };
        if self.v2 {
            counter(&dir.join("memory.events"), "oom_kill") > 0
        } else {
            counter(&dir.join("memory.oom_control"), "oom_kill") > 0
        }
    }

    /// Whether the command was refused a new process at its limit.
    pub fn hit_process_limit(&self) -> bool {
        self.pids
            .as_ref()
            .is_some_and(|dir| counter(&dir.join("pids.events"), "max") > 0)
    }

    /// Kills every process left in the group and waits (briefly) until it is empty.
    pub fn kill_all(&self) {
        if self.v2
            && let Some(dir) = self.dirs.first()
        {
            let _ = fs::write(dir.join("cgroup.kill"), "1");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let mut left = 0;
            for dir in &self.dirs {
                for pid in members(dir) {
                    left += 1;
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            if left == 0 || Instant::now() > deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for RunGroup {
    fn drop(&mut self) {
        self.kill_all();
        for dir in &self.dirs {
            // A group is removed once its last process has been reaped; that can lag a kill.
            for _ in 0..50 {
                match fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
    }
}

/// The processes in one group folder.
fn members(dir: &Path) -> Vec<rustix::process::Pid> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter_map(rustix::process::Pid::from_raw)
        .collect()
}

/// The value of `key` in a flat-keyed cgroup file (`oom_kill 1`).
fn counter(file: &Path, key: &str) -> u64 {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `dir` (made if missing) as the parent of the commands' v2 groups: its children get the
/// memory and pids controllers, and cpu when available.
fn v2_under(dir: &Path) -> io::Result<Cgroups> {
    fs::create_dir_all(dir)?;
    let available = fs::read_to_string(dir.join("cgroup.controllers"))?;
    let has = |c: &str| available.split_whitespace().any(|a| a == c);
    if !has("memory") || !has("pids") {
        return Err(io::Error::other(format!(
            "it offers the controllers '{}', and needs memory and pids",
            available.trim()
        )));
    }
    let cpu = has("cpu");
    let wanted = if cpu {
        "+memory +pids +cpu"
    } else {
        "+memory +pids"
    };
    fs::write(dir.join("cgroup.subtree_control"), wanted)?;
    // Make and remove a trial group, so that a folder we may not write to is found now.
    let trial = trial_group(dir);
    fs::create_dir(&trial)?;
    let _ = fs::remove_dir(&trial);
    Ok(Cgroups::V2 {
        parent: dir.to_owned(),
        cpu,
    })
}

/// Whether groups can be made under `dir` (made if missing) of a v1 hierarchy.
fn usable_v1(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let trial = trial_group(dir);
    fs::create_dir(&trial)?;
    fs::remove_dir(&trial)
}

/// A trial group's folder under `dir`, named for this one check: two servers in one process
/// (or two checks at once) must never take each other's trial for a folder they cannot use.
fn trial_group(dir: &Path) -> PathBuf {
    dir.join(format!("trial-{}", uuid::Uuid::now_v7().simple()))
}

/// Where a cgroup file system of `fstype` is mounted (with `controller` among its options,
/// for v1), from `/proc/self/mountinfo`.
fn mount_of(mountinfo: &str, fstype: &str, controller: Option<&str>) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, rest) = line.split_once(" - ")?;
        let mut fields = rest.split_whitespace();
        if fields.next()? != fstype {
            return None;
        }
        let options = fields.nth(1).unwrap_or_default();
        if let Some(controller) = controller
            && !options.split(',').any(|o| o == controller)
        {
            return None;
        }
        mount.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// The server's own group in a hierarchy, from `/proc/self/cgroup`: the v2 line has an empty
/// controller list (`0::/path`), a v1 line names its controllers (`4:memory:/path`).
fn own_group(proc_cgroup: &str, controller: &str) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if controller.is_empty() {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == controller)
        };
        matches.then(|| path.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
35 25 0:30 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
36 35 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 35 0:32 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
38 35 0:33 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn mounts_are_found_by_type_and_controller() {
        assert_eq!(
            mount_of(MOUNTINFO, "cgroup2", None),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            mount_of(MOUNTINFO, "cgroup", Some("pids")),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(mount_of(MOUNTINFO, "cgroup", Some("cpu")), None);
    }

    #[test]
    fn the_servers_own_group_is_read_per_hierarchy() {
        let own = "4:memory:/process_api/abc\n8:pids:/\n0::/user.slice/ferry.service\n";
        assert_eq!(
            own_group(own, "memory").as_deref(),
            Some("/process_api/abc")
        );
        assert_eq!(own_group(own, "pids").as_deref(), Some("/"));
        assert_eq!(
            own_group(own, "").as_deref(),
            Some("/user.slice/ferry.service")
        );
        assert_eq!(own_group(own, "cpu"), None);
    }

    #[test]
    fn flat_keyed_counters_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("memory.events");
        fs::write(&file, "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n").unwrap();
        assert_eq!(counter(&file, "oom_kill"), 1);
        assert_eq!(counter(&file, "max"), 3);
        assert_eq!(counter(&file, "missing"), 0);
    }
}
