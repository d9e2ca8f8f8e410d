//! A thread's `skills/`: skill packages copied in from the host when the thread starts, then
//! made read-only; and made writable again only to be removed with the thread.

use cap_std::fs::Dir;
use std::io;
use std::path::{Path, PathBuf};

/// Every regular file below `root`, with its path relative to `root`.
pub(super) fn skill_files(root: &Path) -> io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), root.to_path_buf())];
    while let Some((prefix, dir)) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push((relative, entry.path()));
            } else if kind.is_file() {
                out.push((relative, entry.path()));
            }
        }
    }
    Ok(out)
}

pub(super) fn read_only_dir() -> cap_std::fs::Permissions {
    use cap_std::fs::PermissionsExt;
    cap_std::fs::Permissions::from_mode(0o555)
}

/// Copies a host folder into a sandbox folder: regular files and folders only, no symlinks.
pub(super) fn copy_tree(from: &Path, to: &Dir) -> io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let name = entry.file_name();
        if kind.is_dir() {
            to.create_dir(&name)?;
            copy_tree(&entry.path(), &to.open_dir(&name)?)?;
        } else if kind.is_file() {
            let mut source = std::fs::File::open(entry.path())?;
            let mut target = to.create(&name)?;
            io::copy(&mut source, &mut target)?;
        }
    }
    Ok(())
}

pub(super) fn make_read_only(dir: &Dir) -> io::Result<()> {
    use cap_std::fs::PermissionsExt;
    for entry in dir.entries()? {
        let entry = entry?;
        let name = entry.file_name();
        if entry.file_type()?.is_dir() {
            make_read_only(&dir.open_dir(&name)?)?;
            dir.set_permissions(&name, read_only_dir())?;
        } else {
            dir.set_permissions(&name, cap_std::fs::Permissions::from_mode(0o444))?;
        }
    }
    Ok(())
}

/// Gives the owner write access to every folder below `path` (not through symlinks), so that
/// the read-only `skills/` can be removed without being root.
pub(super) fn make_writable(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let kind = std::fs::symlink_metadata(path)?.file_type();
    if !kind.is_dir() {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    for entry in std::fs::read_dir(path)? {
        make_writable(&entry?.path())?;
    }
    Ok(())
}
