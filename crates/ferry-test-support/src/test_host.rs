//! A host of the test's own: a network namespace joined to this one by a veth pair, with an
//! HTTP server on it. Its address is neither loopback nor link-local, so it stands for a real
//! host (a package registry) that ferry's filtering proxy may be allowed to reach, while its
//! traffic never leaves this machine. Needs `ip` (iproute2) and the right to make namespaces
//! (root); without them the tests that need one say loudly that they were skipped.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::peers::skip;

/// The port the test host's HTTP server listens on.
pub const PORT: u16 = 8000;

/// A network namespace with an HTTP server serving a folder of files; removed when dropped.
#[derive(Debug)]
pub struct TestHost {
    namespace: String,
    folder: PathBuf,
    server: Child,
    pub address: Ipv4Addr,
}

impl TestHost {
    /// `address:PORT`.
    pub fn socket_address(&self) -> SocketAddr {
        SocketAddr::from((self.address, PORT))
    }
}

impl Drop for TestHost {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        // The veth pair goes with the namespace.
        let _ = ip(&["netns", "del", &self.namespace]);
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

fn ip(args: &[&str]) -> std::io::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// A test host serving `files` (name, content) over HTTP at its address, port [`PORT`]; or
/// `None` (skipped) where namespaces cannot be made.
pub fn test_host(files: &[(&str, &str)]) -> Option<TestHost> {
    let id = uuid::Uuid::new_v4();
    let bytes = id.as_bytes();
    let tag = id.simple().to_string()[..8].to_owned();
    let namespace = format!("ferry-t-{tag}");
    // A /30 of 10.213.0.0/16 of its own: two tests at once pick different ones.
    let (a, b) = (bytes[0], (bytes[1] % 64) * 4);
    let outside = format!("10.213.{a}.{}", b + 1);
    let inside = Ipv4Addr::new(10, 213, a, b + 2);
    let (veth_out, veth_in) = (format!("fth{tag}"), format!("ftn{tag}"));
    if let Err(e) = ip(&["netns", "add", &namespace]) {
        skip(&format!("a network namespace of the test's own ({e})"));
        return None;
    }
    let folder = std::env::temp_dir().join(format!("ferry-test-host-{tag}"));
    let made = (|| {
        ip(&[
            "link", "add", &veth_out, "type", "veth", "peer", "name", &veth_in, "netns", &namespace,
        ])?;
        ip(&["addr", "add", &format!("{outside}/30"), "dev", &veth_out])?;
        ip(&["link", "set", &veth_out, "up"])?;
        ip(&[
            "-n",
            &namespace,
            "addr",
            "add",
            &format!("{inside}/30"),
            "dev",
            &veth_in,
        ])?;
        ip(&["-n", &namespace, "link", "set", &veth_in, "up"])?;
        ip(&["-n", &namespace, "link", "set", "lo", "up"])?;
        std::fs::create_dir_all(&folder)?;
        for (name, content) in files {
            std::fs::write(folder.join(name), content)?;
        }
        Command::new("ip")
            .args(["netns", "exec", &namespace, "python3", "-m", "http.server"])
            .args(["--bind", &inside.to_string(), &PORT.to_string()])
            .arg("--directory")
            .arg(&folder)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
    })();
    let server = match made {
        Ok(server) => server,
        Err(e) => {
            let _ = ip(&["netns", "del", &namespace]);
            panic!("the test host could not be set up: {e}");
        }
    };
    let host = TestHost {
        namespace,
        folder,
        server,
        address: inside,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect_timeout(&host.socket_address(), Duration::from_millis(200)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the test host's server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(host)
}
