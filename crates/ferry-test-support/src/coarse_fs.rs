//! A folder on a file system that keeps timestamps to the second: an ext4 image made with
//! 128-byte inodes (which have no room for nanoseconds), loop-mounted for the test. Two
//! changes within one second look alike there by their times and sizes, so it shows whether
//! something takes a file's times for its version. Needs `mkfs.ext4` and the right to mount
//! (root); without them the tests that need one say loudly that they were skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::peers::skip;

/// The mounted folder; unmounted, and its image removed, when dropped.
#[derive(Debug)]
pub struct CoarseFolder {
    /// Holds the image and the mount point; removed after the unmount.
    _image_dir: tempfile::TempDir,
    mount_point: PathBuf,
}

impl CoarseFolder {
    pub fn path(&self) -> &Path {
        &self.mount_point
    }
}

impl Drop for CoarseFolder {
    fn drop(&mut self) {
        // Lazily: a test that failed may still hold a file open in it.
        let _ = run("umount", &["-l", &self.mount_point.display().to_string()]);
    }
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A fresh, empty folder whose files carry whole-second timestamps; or `None` (skipped).
pub fn coarse_timestamps_folder() -> Option<CoarseFolder> {
    let image_dir = tempfile::tempdir().expect("a temporary folder");
    let image = image_dir.path().join("coarse.img");
    let mount_point = image_dir.path().join("mnt");
    std::fs::create_dir(&mount_point).expect("a mount point");
    let made = (|| {
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(64 * 1024 * 1024))
            .map_err(|e| format!("an image file: {e}"))?;
        let image = image.display().to_string();
        run("mkfs.ext4", &["-q", "-F", "-I", "128", &image])?;
        run(
            "mount",
            &["-o", "loop", &image, &mount_point.display().to_string()],
        )
    })();
    match made {
        Ok(()) => Some(CoarseFolder {
            _image_dir: image_dir,
            mount_point,
        }),
        Err(e) => {
            skip(&format!(
                "a file system with one-second timestamps, loop-mounted ({e})"
            ));
            None
        }
    }
}
