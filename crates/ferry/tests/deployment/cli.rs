//! The command line an operator meets first.

use std::process::Command;

use crate::support::ferry_exe;

/// `ferry token` signs with the secret the server made; with none there, it says how to get
/// one and invents nothing (an invented secret would sign tokens the server refuses).
#[test]
fn token_refuses_to_invent_a_secret() {
    let data = tempfile::tempdir().unwrap();
    let out = Command::new(ferry_exe())
        .args(["token", "--user", "alice", "--data"])
        .arg(data.path())
        .env_remove("FERRY_JWT_SECRET")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "no token is printed");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("there is no secret in"), "{said}");
    assert!(said.contains("ferry serve --data"), "{said}");
    assert!(
        std::fs::read_dir(data.path()).unwrap().next().is_none(),
        "nothing was written to the data folder"
    );

    // With the server's secret in place, the same command mints a token.
    std::fs::write(data.path().join("jwt-secret"), "the-server-secret").unwrap();
    let out = Command::new(ferry_exe())
        .args(["token", "--user", "alice", "--data"])
        .arg(data.path())
        .env_remove("FERRY_JWT_SECRET")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap();
    let auth = ferry_server::Auth::new(b"the-server-secret");
    assert!(auth.verify(token.trim()).is_ok());
}

/// Behind a proxy the sign-in link must be one the browser can open: the public URL, not the
/// address the server listens on.
#[test]
fn the_sign_in_link_uses_the_public_url() {
    use std::io::{BufRead, BufReader};
    let data = tempfile::tempdir().unwrap();
    let mut server = Command::new(ferry_exe())
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--public-url",
            "https://files.example.com/",
        ])
        .arg("--data")
        .arg(data.path())
        .env_remove("FERRY_JWT_SECRET")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let running = lines.next().unwrap().unwrap();
    let sign_in = lines.next().unwrap().unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    assert_eq!(running, "ferry is running at https://files.example.com/");
    assert!(
        sign_in.contains(": https://files.example.com/#token="),
        "{sign_in}"
    );
}
