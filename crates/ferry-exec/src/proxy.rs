//! ferry's filtering proxy: the only way out of a command's network namespace, and only where
//! the operator listed hosts.
//!
//! It listens on a Unix socket in a folder of its own; each command sees that socket, and a
//! bridge inside its namespace ([`crate::bridge`]) offers it as `127.0.0.1:3128`, which the
//! command's `http_proxy` and `https_proxy` name. It speaks the two forms of an HTTP proxy
//! every client knows: `CONNECT host:port` (a tunnel, for HTTPS) and a plain `GET
//! http://host/path` (forwarded as one request, then the connection closes). Each connection
//! is checked against the [`NetworkPolicy`] twice: the name asked for, then every address it
//! resolves to, and the connection goes to an address that passed. A refusal is an HTTP answer
//! (403, or 502 when the host cannot be reached) whose text says why.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;

use crate::network::{NetworkPolicy, normalise_host};

/// The longest request head read from a command.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long a command has to send its request head, and the proxy to resolve and connect.
const SETUP_TIMEOUT: Duration = Duration::from_secs(15);
/// Connections open through the proxy at once, for all commands together.
const MAX_CONNECTIONS: usize = 512;

/// The running proxy. Dropping it stops it and removes its socket.
#[derive(Debug)]
pub struct Proxy {
    socket: PathBuf,
    folder: PathBuf,
    policy: Arc<NetworkPolicy>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts the proxy for `policy` on the current Tokio runtime, its socket in a new private
    /// folder under `parent`.
    pub fn start(policy: NetworkPolicy, parent: &Path) -> io::Result<Proxy> {
        use std::os::unix::fs::DirBuilderExt;
        let folder = parent.join(format!("ferry-proxy-{}", uuid::Uuid::now_v7().simple()));
        std::fs::DirBuilder::new().mode(0o700).create(&folder)?;
        let socket = folder.join("proxy.sock");
        let listener = UnixListener::bind(&socket)?;
        let policy = Arc::new(policy);
        let task = tokio::spawn(accept(listener, Arc::clone(&policy)));
        Ok(Proxy {
            socket,
            folder,
            policy,
            task,
        })
    }

    /// The socket commands connect to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn policy(&self) -> &NetworkPolicy {
        &self.policy
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

async fn accept(listener: UnixListener, policy: Arc<NetworkPolicy>) {
    let open = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: wait rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        // Beyond the cap a connection is closed unanswered; a client retries.
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            continue;
        };
        let policy = Arc::clone(&policy);
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = serve(stream, &policy).await {
                tracing::debug!(error = %e, "a command's proxy connection ended with an error");
            }
        });
    }
}

/// What a command asked the proxy for.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    /// `CONNECT` opens a tunnel; anything else is forwarded as a plain HTTP request.
    tunnel: bool,
    host: String,
    port: u16,
    /// For a plain request: its head rewritten for the origin (origin-form target, no proxy
    /// headers, `Connection: close`).
    forward: Vec<u8>,
}

async fn serve(mut client: UnixStream, policy: &NetworkPolicy) -> io::Result<()> {
    let setup = async {
        let (head, rest) = read_head(&mut client).await?;
        let request = match parse(&head) {
            Ok(request) => request,
            Err(why) => return Ok(Err((400, why))),
        };
        if let Err(refusal) = policy.check_name(&request.host, request.port) {
            return Ok(Err((403, refusal.to_string())));
        }
        let addresses: Vec<SocketAddr> =
            match tokio::net::lookup_host((request.host.as_str(), request.port)).await {
                Ok(found) => found.collect(),
                Err(e) => return Ok(Err((502, format!("{} was not found: {e}", request.host)))),
            };
        // Every address must pass, not only the one used: a name that also resolves to an
        // internal address is not followed anywhere.
        for address in &addresses {
            if let Err(refusal) = policy.check_address(&request.host, *address) {
                return Ok(Err((403, refusal.to_string())));
            }
        }
        let mut last_error = None;
        for address in &addresses {
            match TcpStream::connect(address).await {
                Ok(upstream) => return Ok(Ok((request, rest, upstream))),
                Err(e) => last_error = Some(e),
            }
        }
        let why = last_error.map_or_else(|| "no address".to_owned(), |e| e.to_string());
        Ok::<_, io::Error>(Err((
            502,
            format!(
                "{} port {} could not be reached: {why}",
                request.host, request.port
            ),
        )))
    };
    let (request, rest, mut upstream) = match tokio::time::timeout(SETUP_TIMEOUT, setup).await {
        Ok(Ok(Ok(ready))) => ready,
        Ok(Ok(Err((status, why)))) => {
            tracing::info!(status, %why, "the proxy refused a command's connection");
            return refuse(&mut client, status, &why).await;
        }
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return refuse(&mut client, 504, "the request was not ready in time").await;
        }
    };
    tracing::debug!(host = %request.host, port = request.port, "a command connected through the proxy");
    if request.tunnel {
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
    } else {
        upstream.write_all(&request.forward).await?;
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// The request head (through its blank line) and whatever the client sent after it.
async fn read_head(client: &mut UnixStream) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "no request"));
        }
        let searched_from = buffer.len().saturating_sub(3);
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer[searched_from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
        {
            let end = searched_from + at + 4;
            let rest = buffer.split_off(end);
            return Ok((buffer, rest));
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err(io::Error::other("the request head is too large"));
        }
    }
}

/// Headers meant for the proxy, or for one hop, that are not passed on.
const HOP_HEADERS: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "upgrade",
];

fn parse(head: &[u8]) -> Result<Request, String> {
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err("the request head is incomplete".into()),
        Err(e) => return Err(format!("the request is not HTTP: {e}")),
    }
    let (Some(method), Some(target)) = (parsed.method, parsed.path) else {
        return Err("the request has no method or target".into());
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(target, None)?;
        return Ok(Request {
            tunnel: true,
            host,
            port,
            forward: Vec::new(),
        });
    }
    let Some(after_scheme) = target
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .map(|_| &target[7..])
    else {
        return Err(format!(
            "'{target}' is not a proxy request: use CONNECT host:port, or a full http:// URL"
        ));
    };
    let (authority, path) = match after_scheme.find(['/', '?']) {
        Some(at) => (&after_scheme[..at], &after_scheme[at..]),
        None => (after_scheme, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let (host, port) = split_authority(authority, Some(80))?;
    let mut forward = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
    for header in parsed.headers.iter() {
        if HOP_HEADERS
            .iter()
            .any(|hop| header.name.eq_ignore_ascii_case(hop))
        {
            continue;
        }
        forward.extend_from_slice(header.name.as_bytes());
        forward.extend_from_slice(b": ");
        forward.extend_from_slice(header.value);
        forward.extend_from_slice(b"\r\n");
    }
    forward.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request {
        tunnel: false,
        host,
        port,
        forward,
    })
}

/// `host:port` (or `[v6]:port`) into a normalised host and a port; `default` when it has none.
fn split_authority(authority: &str, default: Option<u16>) -> Result<(String, u16), String> {
    if authority.contains('@') {
        return Err("credentials in the proxy target are not accepted".into());
    }
    let (host, port) = match authority.rfind(':') {
        Some(at) if !authority[at..].contains(']') => {
            let port = authority[at + 1..]
                .parse::<u16>()
                .map_err(|_| format!("'{authority}' has no valid port"))?;
            (&authority[..at], Some(port))
        }
        _ => (authority, None),
    };
    let port = port
        .or(default)
        .ok_or_else(|| format!("'{authority}' names no port"))?;
    let host = normalise_host(host);
    if host.is_empty() {
        return Err(format!("'{authority}' names no host"));
    }
    Ok((host, port))
}

/// Answers the command with `status` and why, then closes the connection.
async fn refuse(client: &mut UnixStream, status: u16, why: &str) -> io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        502 => "Bad Gateway",
        _ => "Gateway Timeout",
    };
    let body = format!("ferry: {why}\n");
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(answer.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tunnel_and_a_plain_request_are_read_as_clients_send_them() {
        let tunnel = parse(b"CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n").unwrap();
        assert!(tunnel.tunnel);
        assert_eq!((tunnel.host.as_str(), tunnel.port), ("pypi.org", 443));

        let plain = parse(
            b"GET http://mirror.internal:8080/simple/?x=1 HTTP/1.1\r\nHost: mirror.internal\r\n\
              Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert!(!plain.tunnel);
        assert_eq!((plain.host.as_str(), plain.port), ("mirror.internal", 8080));
        let forwarded = String::from_utf8(plain.forward).unwrap();
        assert!(
            forwarded.starts_with("GET /simple/?x=1 HTTP/1.1\r\n"),
            "{forwarded}"
        );
        assert!(forwarded.contains("Accept: */*\r\n"));
        assert!(!forwarded.to_ascii_lowercase().contains("proxy-connection"));
        assert!(forwarded.ends_with("Connection: close\r\n\r\n"));

        let v6 = parse(b"CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("2001:db8::1", 443));
        assert_eq!(
            parse(b"GET http://a.b HTTP/1.1\r\n\r\n").unwrap().forward[..16],
            *b"GET / HTTP/1.1\r\n"
        );
    }

    #[test]
    fn what_is_not_a_proxy_request_is_refused_with_a_reason() {
        for head in [
            &b"GET /path HTTP/1.1\r\n\r\n"[..],
            b"GET https://pypi.org/ HTTP/1.1\r\n\r\n",
            b"CONNECT pypi.org HTTP/1.1\r\n\r\n",
            b"CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n",
            b"\x16\x03\x01 not http\r\n\r\n",
        ] {
            assert!(parse(head).is_err(), "{}", String::from_utf8_lossy(head));
        }
    }
}
