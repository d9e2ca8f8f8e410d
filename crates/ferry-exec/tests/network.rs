//! The network of a command where the operator allowed hosts: the only way out is ferry's
//! filtering proxy, through the bridge on the command's own loopback. Every refusal here is
//! the proxy's answer, given before any traffic is sent: no test sends a packet beyond this
//! machine's loopback and a namespace of its own ([`ferry_test_support::test_host`]).

use std::path::PathBuf;
use std::time::Duration;

use ferry_exec::cgroup::Cgroups;
use ferry_exec::{
    AllowedHost, Bubblewrap, ExecLimits, Finished, Job, NetworkPolicy, Proxy, Runner, Runtime,
};
use ferry_test_support::peers::bwrap;
use ferry_test_support::test_host::{PORT, test_host};

/// A runner whose commands may reach `allowed`, with 4321 standing for ferry's own port.
fn runner(allowed: &[&str]) -> Option<Bubblewrap> {
    let policy = NetworkPolicy {
        allowed: allowed
            .iter()
            .map(|a| a.parse::<AllowedHost>().unwrap())
            .collect(),
        own_ports: vec![4321],
    };
    let proxy = Proxy::start(policy, &std::env::temp_dir()).unwrap();
    Some(Bubblewrap::new(
        PathBuf::from(env!("CARGO_BIN_EXE_ferry-exec-helper")),
        bwrap()?,
        &Runtime::Host,
        ExecLimits::default(),
        Cgroups::detect(None).unwrap_or(Cgroups::None),
        Some(proxy),
    ))
}

/// Runs a Python script in a fresh sandbox.
async fn python(runner: &Bubblewrap, script: &str) -> Finished {
    let dir = tempfile::tempdir().unwrap();
    for folder in ["workspace", "outputs", "user_uploads", "skills"] {
        std::fs::create_dir(dir.path().join(folder)).unwrap();
    }
    std::fs::write(
        dir.path().join("workspace/probe.py"),
        format!("{ASK}\n{script}"),
    )
    .unwrap();
    runner
        .run(
            Job {
                sandbox: dir.path().to_owned(),
                command: "python3 probe.py".to_owned(),
                cwd: "/sandbox/workspace".to_owned(),
                timeout: Duration::from_secs(60),
            },
            None,
        )
        .await
        .unwrap()
}

/// `ask(head)`: sends a request head to the proxy the command's environment names, and
/// answers the status line and body; after a tunnel opens, sends a GET through it.
const ASK: &str = r#"
import os, socket
host, port = os.environ["http_proxy"].rsplit("/", 1)[1].split(":")
def ask(head, then=None):
    s = socket.create_connection((host, int(port)), timeout=20)
    s.sendall(head.encode() + b"\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    if data.startswith(b"HTTP/1.1 200") and then:
        s.sendall(then.encode())
        data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")
"#;

#[tokio::test]
async fn loopback_link_local_metadata_ferrys_port_and_unlisted_hosts_are_refused() {
    let Some(runner) = runner(&[
        "localhost",
        "127.0.0.1:9",
        "169.254.169.254",
        "[fe80::1]",
        "100.100.100.200",
        "[fd00:ec2::254]",
        "10.1.2.3:4321",
    ]) else {
        return;
    };
    let done = python(
        &runner,
        r#"
for target in ["localhost:443", "127.0.0.1:9", "169.254.169.254:80", "[fe80::1]:443",
               "100.100.100.200:80", "[fd00:ec2::254]:443", "10.1.2.3:4321", "pypi.org:443"]:
    print(target, "=>", ask("CONNECT " + target + " HTTP/1.1").replace("\r\n", " | "))
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://169.254.169.254/latest/meta-data/", timeout=20)
except urllib.error.HTTPError as e:
    print("urllib =>", e.code, e.read().decode())
"#,
    )
    .await;
    let out = &done.output;
    assert_eq!(done.exit_code, Some(0), "{out}");
    for (target, why) in [
        ("localhost:443", "a loopback address"),
        ("127.0.0.1:9", "a loopback address"),
        ("169.254.169.254:80", "link-local (cloud metadata)"),
        ("[fe80::1]:443", "a link-local address"),
        ("100.100.100.200:80", "a cloud metadata address"),
        ("[fd00:ec2::254]:443", "a cloud metadata address"),
        ("10.1.2.3:4321", "the port ferry itself listens on"),
        (
            "pypi.org:443",
            "is not on this server's list of hosts commands may reach",
        ),
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{target} =>")))
            .unwrap_or_else(|| panic!("{target} in {out}"));
        assert!(line.contains("HTTP/1.1 403 Forbidden"), "{line}");
        assert!(line.contains(why), "{why} in {line}");
    }
    // Plain HTTP clients find the proxy by the environment, and read the refusal.
    assert!(
        out.contains("urllib => 403 ferry: 169.254.169.254 resolves to 169.254.169.254"),
        "{out}"
    );
}

#[tokio::test]
async fn an_allowed_host_is_reached_through_the_proxy_and_nothing_else_is() {
    let Some(host) = test_host(&[("hello.txt", "hello from the registry\n")]) else {
        return;
    };
    let allowed = format!("{}:{PORT}", host.address);
    let Some(runner) = runner(&[allowed.as_str()]) else {
        return;
    };
    let address = host.address;
    let done = python(
        &runner,
        &format!(
            r#"
import urllib.request
print("plain =>", urllib.request.urlopen("http://{address}:{PORT}/hello.txt", timeout=20).read().decode().strip())
print("tunnel =>", ask("CONNECT {address}:{PORT} HTTP/1.1",
      "GET /hello.txt HTTP/1.0\r\nHost: {address}\r\n\r\n").splitlines()[-1])
print("other port =>", ask("CONNECT {address}:{other} HTTP/1.1").splitlines()[0])
try:
    socket.create_connection(("{address}", {PORT}), timeout=5)
    print("direct => connected")
except OSError as e:
    print("direct => refused:", e)
"#,
            other = PORT + 1
        ),
    )
    .await;
    let out = &done.output;
    assert_eq!(done.exit_code, Some(0), "{out}");
    assert!(out.contains("plain => hello from the registry"), "{out}");
    assert!(out.contains("tunnel => hello from the registry"), "{out}");
    assert!(
        out.contains("other port => HTTP/1.1 403 Forbidden"),
        "{out}"
    );
    // Without the proxy there is no route out of the namespace.
    assert!(out.contains("direct => refused"), "{out}");
}
