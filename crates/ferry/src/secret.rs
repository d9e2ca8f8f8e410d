//! The JWT secret kept in the data directory (docs/reference/auth.md): made once, random,
//! readable by the server's user alone, and read back by `ferry serve` and `ferry token`.

use anyhow::Context;
use std::path::Path;

/// The secret's file in the data directory.
const SECRET_FILE: &str = "jwt-secret";

/// Where the secret of the data directory `data` is kept.
pub fn path_in(data: &Path) -> std::path::PathBuf {
    data.join(SECRET_FILE)
}

/// The secret kept in the data directory, if the server has made one there.
pub fn load_secret(data: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    let path = path_in(data);
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => Ok(Some(text.trim().as_bytes().to_vec())),
        Ok(_) => anyhow::bail!(
            "{} is empty; delete it to make a new secret",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The secret kept in the data directory, created (random, mode 0600) on first use.
pub fn load_or_create_secret(data: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(secret) = load_secret(data)? {
        return Ok(secret);
    }
    let path = path_in(data);
    let secret = hex::encode(rand::random::<[u8; 32]>());
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(secret.as_bytes())?;
    file.sync_all()?;
    Ok(secret.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_is_created_once_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create_secret(dir.path()).unwrap();
        let second = load_or_create_secret(dir.path()).unwrap();
        assert_eq!(first, second);
        assert_eq!(first.len(), 64);
        let mode = std::fs::metadata(dir.path().join(SECRET_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
