//! What the server hands the helper for one command, and the bubblewrap arguments it becomes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Runtime;

/// The first argument that makes the ferry binary the helper (`ferry __exec`).
pub const HELPER_ARG: &str = "__exec";

/// The first argument that makes the ferry binary the bridge (`bridge::main`).
pub const BRIDGE_ARG: &str = "__exec-bridge";

/// The port the proxy is offered on inside each command's namespace (squid's, which clients
/// and people expect of a proxy).
pub(crate) const PROXY_PORT: u16 = 3128;

/// Where the sandbox is seen from inside.
pub(crate) const SANDBOX: &str = "/sandbox";

/// The command's user and group inside its namespace (outside, it is the server's user).
const UID: &str = "1000";

/// The files of the host's `/etc` that programs read, bound read-only when present: the
/// dynamic linker's cache, Debian's alternatives (where `libblas.so.3` points, for NumPy),
/// time zones, MIME types, fonts, public certificates, matplotlib's defaults. Nothing secret:
/// the command's user owns, outside, what the server's user owns, so only public files are
/// shown to it. Every `/etc/python3*` folder is added beside these.
const HOST_ETC: &[&str] = &[
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "mime.types",
    "fonts",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "matplotlibrc",
    "os-release",
    "nsswitch.conf",
    "magic",
];

/// The top-level folders of a root file system that are the command's own, never bound from
/// the runtime.
const OWN: &[&str] = &[
    "proc", "dev", "tmp", "sandbox", "sys", "run", "home", "root",
];

/// A read-only bind or a symbolic link that makes up the command's runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Mount {
    ReadOnly { source: PathBuf, dest: PathBuf },
    Symlink { target: PathBuf, link: PathBuf },
}

/// One command, as the helper takes it on its standard input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Spec {
    /// bubblewrap's `bwrap`.
    pub bwrap: PathBuf,
    /// The thread's sandbox folder on the host.
    pub sandbox: PathBuf,
    /// Folders of the sandbox the command may read but not change (`user_uploads`).
    pub read_only: Vec<String>,
    /// Folders of the sandbox that are ferry's own: the command sees an empty read-only folder.
    pub hidden: Vec<String>,
    /// The runtime.
    pub mounts: Vec<Mount>,
    /// The working folder, as the command sees it (`/sandbox/workspace`).
    pub cwd: String,
    pub command: String,
    pub limits: ProcessLimits,
    /// The way out to the allowed hosts, where there are any.
    pub network: Option<Network>,
}

/// What a command with a network needs: ferry's proxy socket, and the ferry binary, which
/// runs inside as the bridge to it ([`crate::bridge`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Network {
    pub proxy_socket: PathBuf,
    pub bridge: PathBuf,
}

/// Where the bridge and the proxy socket are seen from inside.
const BRIDGE_INSIDE: &str = "/run/ferry/bridge";
const PROXY_INSIDE: &str = "/run/ferry/proxy.sock";

/// The limits the helper sets on itself, which every process of the command inherits.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct ProcessLimits {
    /// `RLIMIT_AS`, when no control group bounds memory.
    pub address_space: Option<u64>,
    /// `RLIMIT_NPROC`, when no control group bounds processes.
    pub processes: Option<u64>,
    /// `RLIMIT_CPU`, seconds.
    pub cpu_seconds: u64,
    /// `RLIMIT_FSIZE`.
    pub file_bytes: u64,
    /// The size of the command's `/tmp`.
    pub tmp_bytes: u64,
}

/// The file descriptors the helper opened, by what bubblewrap does with them.
#[derive(Debug, Clone)]
pub(crate) struct Fds {
    pub sandbox: i32,
    /// With the name each is bound at under `/sandbox`.
    pub read_only: Vec<(i32, String)>,
    pub seccomp: Vec<i32>,
    /// `/etc/passwd`, `/etc/group`, `/etc/hosts`.
    pub etc: [(i32, &'static str); 3],
}

/// The generated `/etc` files: a user and a group for the command's ids, and a host name.
pub(crate) const ETC_FILES: [(&str, &str); 3] = [
    (
        "/etc/passwd",
        "root:x:0:0:root:/root:/usr/sbin/nologin\n\
         sandbox:x:1000:1000:sandbox:/tmp/home:/bin/sh\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    ),
    (
        "/etc/group",
        "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
    ),
    ("/etc/hosts", "127.0.0.1 localhost sandbox\n::1 localhost\n"),
];

/// The runtime's mounts for `runtime`, read from the host now (once, when the runner is made).
pub(crate) fn runtime_mounts(runtime: &Runtime) -> Vec<Mount> {
    match runtime {
        Runtime::Host => {
            let mut mounts = Vec::new();
            top_level(Path::new("/"), &["usr"], &mut mounts);
            top_level(
                Path::new("/"),
                &["bin", "sbin", "lib", "lib64", "lib32", "libx32"],
                &mut mounts,
            );
            let mut etc: Vec<String> = HOST_ETC.iter().map(|e| (*e).to_owned()).collect();
            if let Ok(entries) = std::fs::read_dir("/etc") {
                etc.extend(
                    entries
                        .flatten()
                        .filter_map(|e| e.file_name().into_string().ok())
                        .filter(|n| n.starts_with("python3")),
                );
            }
            for name in etc {
                let source = Path::new("/etc").join(&name);
                if source.exists() {
                    mounts.push(Mount::ReadOnly {
                        dest: source.clone(),
                        source,
                    });
                }
            }
            mounts
        }
        Runtime::Root(root) => {
            let names: Vec<String> = std::fs::read_dir(root)
                .map(|entries| {
                    entries
                        .flatten()
                        .filter_map(|e| e.file_name().into_string().ok())
                        .filter(|n| !OWN.contains(&n.as_str()))
                        .collect()
                })
                .unwrap_or_default();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let mut mounts = Vec::new();
            top_level(root, &names, &mut mounts);
            mounts
        }
    }
}

/// Each of `names` under `root` as the command's `/name`: a symbolic link stays one (`/bin` →
/// `usr/bin` on a merged system), anything else is bound read-only.
fn top_level(root: &Path, names: &[&str], mounts: &mut Vec<Mount>) {
    let mut names = names.to_vec();
    names.sort_unstable();
    for name in names {
        let source = root.join(name);
        let dest = Path::new("/").join(name);
        match std::fs::symlink_metadata(&source) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(&source) {
                    mounts.push(Mount::Symlink { target, link: dest });
                }
            }
            Ok(_) => mounts.push(Mount::ReadOnly { source, dest }),
            Err(_) => {}
        }
    }
}

/// bubblewrap's arguments for `spec`, with the descriptors the helper opened.
pub(crate) fn bwrap_args(spec: &Spec, fds: &Fds) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |items: &[&str]| args.extend(items.iter().map(OsString::from));
    push(&[
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        // No user namespace inside: it would give the command capabilities over its own.
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--uid",
        UID,
        "--gid",
        UID,
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
    ]);
    for mount in &spec.mounts {
        match mount {
            Mount::ReadOnly { source, dest } => {
                args.push("--ro-bind".into());
                args.push(source.into());
                args.push(dest.into());
            }
            Mount::Symlink { target, link } => {
                args.push("--symlink".into());
                args.push(target.into());
                args.push(link.into());
            }
        }
    }
    let mut push = |items: &[&str]| args.extend(items.iter().map(OsString::from));
    push(&["--proc", "/proc", "--dev", "/dev"]);
    push(&[
        "--size",
        &spec.limits.tmp_bytes.to_string(),
        "--tmpfs",
        "/tmp",
        "--dir",
        "/tmp/home",
    ]);
    for (fd, path) in &fds.etc {
        push(&["--ro-bind-data", &fd.to_string(), path]);
    }
    push(&["--bind-fd", &fds.sandbox.to_string(), SANDBOX]);
    for (fd, name) in &fds.read_only {
        push(&[
            "--ro-bind-fd",
            &fd.to_string(),
            &format!("{SANDBOX}/{name}"),
        ]);
    }
    for name in &spec.hidden {
        let inside = format!("{SANDBOX}/{name}");
        push(&["--tmpfs", &inside, "--remount-ro", &inside]);
    }
    for fd in &fds.seccomp {
        push(&["--add-seccomp-fd", &fd.to_string()]);
    }
    let mut run: Vec<String> = Vec::new();
    if let Some(network) = &spec.network {
        args.push("--ro-bind".into());
        args.push(network.bridge.clone().into());
        args.push(BRIDGE_INSIDE.into());
        args.push("--ro-bind".into());
        args.push(network.proxy_socket.clone().into());
        args.push(PROXY_INSIDE.into());
        let proxy = format!("http://127.0.0.1:{PROXY_PORT}");
        // Both spellings: curl reads only the lower-case `http_proxy`, others the upper.
        for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"] {
            run.extend(["--setenv".into(), name.into(), proxy.clone()]);
        }
        run.extend([
            "--".into(),
            BRIDGE_INSIDE.into(),
            BRIDGE_ARG.into(),
            PROXY_INSIDE.into(),
        ]);
    } else {
        run.push("--".into());
    }
    let mut push = |items: &[&str]| args.extend(items.iter().map(OsString::from));
    push(&[
        "--chdir",
        &spec.cwd,
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/local/bin:/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp/home",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "TMPDIR",
        "/tmp",
    ]);
    args.extend(run.into_iter().map(OsString::from));
    args.extend(["/bin/sh", "-c", spec.command.as_str()].map(OsString::from));
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec {
            bwrap: "/usr/bin/bwrap".into(),
            sandbox: "/data/sandboxes/t1".into(),
            read_only: vec!["user_uploads".into()],
            hidden: vec![".ferry-tmp".into()],
            mounts: vec![
                Mount::ReadOnly {
                    source: "/usr".into(),
                    dest: "/usr".into(),
                },
                Mount::Symlink {
                    target: "usr/bin".into(),
                    link: "/bin".into(),
                },
            ],
            cwd: "/sandbox/workspace".into(),
            command: "echo hi".into(),
            limits: ProcessLimits {
                address_space: None,
                processes: None,
                cpu_seconds: 120,
                file_bytes: 1,
                tmp_bytes: 1024,
            },
            network: None,
        }
    }

    #[test]
    fn the_sandbox_is_bound_by_descriptor_and_the_command_runs_last() {
        let fds = Fds {
            sandbox: 5,
            read_only: vec![(6, "user_uploads".into())],
            seccomp: vec![7, 8],
            etc: [(9, "/etc/passwd"), (10, "/etc/group"), (11, "/etc/hosts")],
        };
        let args: Vec<String> = bwrap_args(&spec(), &fds)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let joined = args.join(" ");
        for expected in [
            "--unshare-net",
            "--disable-userns",
            "--cap-drop ALL",
            "--ro-bind /usr /usr",
            "--symlink usr/bin /bin",
            "--bind-fd 5 /sandbox",
            "--ro-bind-fd 6 /sandbox/user_uploads",
            "--tmpfs /sandbox/.ferry-tmp --remount-ro /sandbox/.ferry-tmp",
            "--add-seccomp-fd 7 --add-seccomp-fd 8",
            "--size 1024 --tmpfs /tmp",
            "--chdir /sandbox/workspace --clearenv",
        ] {
            assert!(joined.contains(expected), "{expected} in {joined}");
        }
        // The read-only folder is bound after (so over) the writable sandbox.
        let sandbox_at = joined.find("--bind-fd 5").unwrap();
        assert!(joined.find("--ro-bind-fd 6").unwrap() > sandbox_at);
        assert_eq!(args[args.len() - 3..], ["/bin/sh", "-c", "echo hi"]);
    }

    #[test]
    fn with_a_network_the_bridge_runs_the_command_and_the_proxy_is_named() {
        let fds = Fds {
            sandbox: 5,
            read_only: Vec::new(),
            seccomp: Vec::new(),
            etc: [(9, "/etc/passwd"), (10, "/etc/group"), (11, "/etc/hosts")],
        };
        let mut spec = spec();
        spec.network = Some(Network {
            proxy_socket: "/run/user/ferry-proxy/proxy.sock".into(),
            bridge: "/usr/local/bin/ferry".into(),
        });
        let args: Vec<String> = bwrap_args(&spec, &fds)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let joined = args.join(" ");
        for expected in [
            "--unshare-net",
            "--ro-bind /usr/local/bin/ferry /run/ferry/bridge",
            "--ro-bind /run/user/ferry-proxy/proxy.sock /run/ferry/proxy.sock",
            "--setenv https_proxy http://127.0.0.1:3128",
            "-- /run/ferry/bridge __exec-bridge /run/ferry/proxy.sock /bin/sh -c echo hi",
        ] {
            assert!(joined.contains(expected), "{expected} in {joined}");
        }
        assert!(joined.ends_with("/bin/sh -c echo hi"));
    }

    #[test]
    fn a_prepared_root_leaves_out_the_commands_own_folders() {
        let root = tempfile::tempdir().unwrap();
        for name in ["usr", "etc", "proc", "tmp", "sandbox"] {
            std::fs::create_dir(root.path().join(name)).unwrap();
        }
        std::os::unix::fs::symlink("usr/bin", root.path().join("bin")).unwrap();
        let mounts = runtime_mounts(&Runtime::Root(root.path().to_owned()));
        assert_eq!(
            mounts,
            vec![
                Mount::Symlink {
                    target: "usr/bin".into(),
                    link: "/bin".into()
                },
                Mount::ReadOnly {
                    source: root.path().join("etc"),
                    dest: "/etc".into()
                },
                Mount::ReadOnly {
                    source: root.path().join("usr"),
                    dest: "/usr".into()
                },
            ]
        );
    }
}
