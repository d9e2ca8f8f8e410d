//! Walks of a sandbox folder from the server's side, never following a symbolic link: how much
//! disk it holds, and taking away set-user-ID and set-group-ID bits a command left.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Entries one walk visits at most; a folder with more is counted as far as that.
const MAX_ENTRIES: usize = 200_000;

/// The disk the files below `root` take (allocated blocks, so a sparse file counts what it
/// holds, not what it claims).
pub(crate) fn disk_usage(root: &Path) -> u64 {
    let mut total = 0;
    visit(root, &mut |_, meta| {
        total += meta.blocks() * 512;
    });
    total
}

/// Takes the set-user-ID and set-group-ID bits off every file below `root` that has one, and
/// answers how many it changed. The command is over when this runs: nothing can swap a file
/// in between.
pub(crate) fn drop_set_id_bits(root: &Path) -> usize {
    let mut changed = 0;
    visit(root, &mut |path, meta| {
        let mode = meta.mode();
        if meta.is_file() && mode & (libc::S_ISUID | libc::S_ISGID) != 0 {
            let plain = mode & 0o777;
            if fs::set_permissions(path, fs::Permissions::from_mode(plain)).is_ok() {
                changed += 1;
            }
        }
    });
    changed
}

fn visit(root: &Path, each: &mut dyn FnMut(&Path, &fs::Metadata)) {
    let mut pending = vec![root.to_owned()];
    let mut seen = 0;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return;
            }
            let path = entry.path();
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                continue;
            }
            each(&path, &meta);
            if meta.is_dir() {
                pending.push(path);
            }
        }
    }
}

/// Whether `path` is a folder itself (not a link to one).
pub(crate) fn is_real_dir(path: &Path) -> io::Result<bool> {
    Ok(fs::symlink_metadata(path)?.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_id_bits_are_taken_off_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("a");
        fs::create_dir(&inner).unwrap();
        let file = inner.join("tool");
        fs::write(&file, b"#!/bin/sh\n").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o4755)).unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        fs::set_permissions(outside.path(), fs::Permissions::from_mode(0o2755)).unwrap();
        std::os::unix::fs::symlink(outside.path(), inner.join("link")).unwrap();

        assert_eq!(drop_set_id_bits(dir.path()), 1);
        assert_eq!(fs::metadata(&file).unwrap().mode() & 0o7777, 0o755);
        // The link's target, outside, is left as it was.
        assert_eq!(
            fs::metadata(outside.path()).unwrap().mode() & 0o7777,
            0o2755
        );
        assert!(disk_usage(dir.path()) > 0);
    }
}
