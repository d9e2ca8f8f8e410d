//! The proxy's door inside a command's network namespace (`ferry __exec-bridge`): where the
//! operator allowed hosts, it is the command's first process. It listens on
//! `127.0.0.1:3128` of the namespace's own loopback, carries each connection to ferry's proxy
//! socket (bound into the sandbox), runs `sh -c COMMAND` and ends with its status.
//!
//! The bridge is confined like the command: it is inside the same namespaces, limits and
//! seccomp filter, and the command may stop it, which only takes its own network away.

use std::io::{self, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use crate::helper::CANNOT_START;
use crate::spec::PROXY_PORT;

/// The entry point of `ferry __exec-bridge SOCKET PROGRAM ARGS…`.
pub fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(2);
    let (Some(socket), Some(program)) = (args.next(), args.next()) else {
        let _ = writeln!(
            io::stderr(),
            "ferry: the command could not be started: the bridge takes a socket and a program"
        );
        return ExitCode::from(CANNOT_START);
    };
    let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, PROXY_PORT)) {
        Ok(listener) => listener,
        Err(e) => {
            let _ = writeln!(
                io::stderr(),
                "ferry: the command could not be started: its proxy port did not open ({e})"
            );
            return ExitCode::from(CANNOT_START);
        }
    };
    let socket = PathBuf::from(socket);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let socket = socket.clone();
            std::thread::spawn(move || carry(client, &socket));
        }
    });
    match Command::new(&program).args(args).status() {
        // As a shell reports it: a signal's death is 128 plus its number.
        Ok(status) => match status.code().or_else(|| status.signal().map(|s| 128 + s)) {
            Some(code) => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)),
            None => ExitCode::FAILURE,
        },
        Err(e) => {
            let _ = writeln!(
                io::stderr(),
                "ferry: the command could not be started: {} ({e})",
                program.to_string_lossy()
            );
            ExitCode::from(CANNOT_START)
        }
    }
}

/// Copies both ways between a command's connection and the proxy until either side ends.
fn carry(client: TcpStream, socket: &std::path::Path) {
    let Ok(proxy) = UnixStream::connect(socket) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (Ok(mut client_read), Ok(mut proxy_write)) = (client.try_clone(), proxy.try_clone()) else {
        return;
    };
    let upstream = std::thread::spawn(move || {
        let _ = io::copy(&mut client_read, &mut proxy_write);
        let _ = proxy_write.shutdown(Shutdown::Write);
    });
    let (mut proxy_read, mut client_write) = (proxy, client);
    let _ = io::copy(&mut proxy_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Write);
    let _ = upstream.join();
}
