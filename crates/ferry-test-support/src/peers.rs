//! Real peers for the storage and scale-out suites: an S3 server (moto) started on loopback by the test, and
//! a fresh Postgres schema per test in the database `FERRY_TEST_DATABASE_URL` names; and the
//! office renderer (LibreOffice) that draws slides.
//!
//! A missing peer skips its tests loudly; with `FERRY_CI=1` (set by `.ci/run`) it fails them,
//! so CI cannot pass by skipping.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Says loudly that a peer is missing; fails instead under CI.
pub fn skip(what: &str) {
    let message = format!(
        "\n=== SKIPPED: {what} ===\n(.ci/run provides it; set FERRY_CI=1 to make this a failure)\n"
    );
    if std::env::var("FERRY_CI").is_ok_and(|v| v == "1") {
        panic!("{message}");
    }
    let _ = std::io::stderr().write_all(message.as_bytes());
}

/// bubblewrap's `bwrap`, which confines agents' commands, or `None` (skipped).
pub fn bwrap() -> Option<std::path::PathBuf> {
    let found = ["/usr/bin/bwrap", "/bin/bwrap"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file());
    if found.is_none() {
        skip("bubblewrap (bwrap), which confines commands");
    }
    found
}

/// The office renderer that draws a presentation's slides: LibreOffice's `soffice`
/// (`FERRY_TEST_OFFICE_RENDERER`, else `/usr/bin/soffice`) and bubblewrap's `bwrap`, which
/// confines it (`/usr/bin/bwrap`), as `(soffice, bwrap)`; or `None` (skipped).
pub fn office_renderer() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let program = std::env::var_os("FERRY_TEST_OFFICE_RENDERER")
        .map_or_else(|| "/usr/bin/soffice".into(), std::path::PathBuf::from);
    let sandbox = std::path::PathBuf::from("/usr/bin/bwrap");
    if program.is_file() && sandbox.is_file() {
        return Some((program, sandbox));
    }
    skip(&format!(
        "the office renderer {} and {} (Debian: libreoffice-impress-nogui, bubblewrap) are not \
         both installed",
        program.display(),
        sandbox.display()
    ));
    None
}

/// An S3-protocol server (moto) on a free loopback port, with one bucket; killed on drop.
#[derive(Debug)]
pub struct S3Server {
    child: Child,
    pub endpoint: String,
    pub bucket: String,
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl S3Server {
    /// The environment ferry reads to reach this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "ferry-test".into()),
            ("AWS_SECRET_ACCESS_KEY", "ferry-test-secret".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn raw_request(port: u16, request: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.write_all(request.as_bytes())?;
    let mut out = String::new();
    stream.read_to_string(&mut out)?;
    Ok(out)
}

/// Starts moto's S3 server (`moto_server`, from PyPI `moto[server]`), or `None` (skipped).
pub fn s3() -> Option<S3Server> {
    let program = std::env::var("FERRY_MOTO_SERVER").unwrap_or_else(|_| "moto_server".into());
    let port = free_port();
    let child = match Command::new(&program)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(child) => child,
        Err(_) => {
            skip(&format!(
                "S3 tests need `{program}` (pip install 'moto[server]')"
            ));
            return None;
        }
    };
    let bucket = format!("ferry-{}", uuid::Uuid::new_v4().simple());
    let server = S3Server {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
        bucket: bucket.clone(),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let created = raw_request(
            port,
            &format!(
                "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
        );
        match created {
            Ok(reply) if reply.starts_with("HTTP/1.1 200") => return Some(server),
            _ if Instant::now() > deadline => panic!("moto_server did not start on port {port}"),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// A fresh Postgres schema for one test; dropped by [`PgSchema::drop_now`].
#[derive(Debug)]
pub struct PgSchema {
    base: String,
    schema: String,
    /// A database URL whose connections use the schema.
    pub url: String,
}

impl PgSchema {
    /// Removes the schema and everything in it (call at the end of the test).
    pub async fn drop_now(self) {
        use sqlx::Connection;
        if let Ok(mut conn) = sqlx::postgres::PgConnection::connect(&self.base).await {
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP SCHEMA {} CASCADE",
                self.schema
            )))
            .execute(&mut conn)
            .await;
        }
    }
}

/// A new, empty schema in the test database, or `None` (skipped).
pub async fn postgres() -> Option<PgSchema> {
    let Ok(base) = std::env::var("FERRY_TEST_DATABASE_URL") else {
        skip(
            "Postgres tests need FERRY_TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test)",
        );
        return None;
    };
    use sqlx::Connection;
    let schema = format!("ferry_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::postgres::PgConnection::connect(&base)
        .await
        .expect("FERRY_TEST_DATABASE_URL names a reachable Postgres");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&mut conn)
        .await
        .unwrap();
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    Some(PgSchema { base, schema, url })
}
