//! The ETag of a file in a local sandbox folder: the SHA-256 of its bytes, in hex, the form the
//! stored sandbox and the spaces give too.
//!
//! Why the bytes and not the modification time and size: where a file system keeps coarse
//! timestamps (two seconds on FAT, one on ext4 made with small inodes, a clock tick on kernels
//! before 6.13), two writes of the same size within one tick would share a tag, and a
//! conditional write would take one version for another.
//!
//! Bytes are read only when they must be. A tag is remembered with the state of the file it was
//! read from (device, inode, size, modification and change times), and that memory is trusted
//! only when the tag was read at least [`SETTLED`] after the file's last change: by then any
//! later change, even within one tick of a coarse clock, must show in those times. A file
//! changed more recently than that is read again each time its tag is asked for (git treats
//! its "racily clean" index entries the same way). So a file changed outside ferry (by a
//! command, or by an agent working in the folder directly) gets a new tag at once.
//!
//! A file with more than one hard link (an agent's link to a file outside the sandbox) is
//! never read: its tag is made of its state, as every reader refuses such a file anyway.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// How long after a file's last change its remembered tag may be trusted: longer than the
/// coarsest timestamp of a file system a sandbox may be on (FAT's two seconds).
const SETTLED: Duration = Duration::from_secs(3);

/// Tags remembered at most; past it the memory starts again (each entry is under 100 bytes).
const REMEMBERED: usize = 100_000;

/// How many times a file that changes while it is read is read again before its tag is
/// answered as read (a later ask reads it again, as it changed too recently to be trusted).
const READS: usize = 3;

/// What is known of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileState {
    dev: u64,
    ino: u64,
    links: u64,
    size: u64,
    modified_ns: i128,
    changed_ns: i128,
}

impl FileState {
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Milliseconds since the epoch of the last modification.
    pub(crate) fn modified_ms(&self) -> i64 {
        (self.modified_ns.div_euclid(1_000_000)) as i64
    }

    /// Whether it is known to be the same file, unchanged.
    fn same_as(&self, other: &FileState) -> bool {
        (
            self.dev,
            self.ino,
            self.size,
            self.modified_ns,
            self.changed_ns,
        ) == (
            other.dev,
            other.ino,
            other.size,
            other.modified_ns,
            other.changed_ns,
        )
    }

    /// Whether it is the same file (the same inode of the same device).
    pub(crate) fn same_file(&self, other: &FileState) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }

    /// The tag of a file that is not read: its modification time and size.
    pub(crate) fn stamp(&self) -> String {
        format!("{:x}-{:x}", self.modified_ns, self.size)
    }
}

fn nanos(seconds: i64, nanoseconds: i64) -> i128 {
    i128::from(seconds) * 1_000_000_000 + i128::from(nanoseconds)
}

impl From<&std::fs::Metadata> for FileState {
    fn from(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        FileState {
            dev: meta.dev(),
            ino: meta.ino(),
            links: meta.nlink(),
            size: meta.len(),
            modified_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            changed_ns: nanos(meta.ctime(), meta.ctime_nsec()),
        }
    }
}

impl From<&cap_std::fs::Metadata> for FileState {
    fn from(meta: &cap_std::fs::Metadata) -> Self {
        use cap_std::fs::MetadataExt as _;
        FileState {
            dev: meta.dev(),
            ino: meta.ino(),
            links: meta.nlink(),
            size: meta.len(),
            modified_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            changed_ns: nanos(meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// A tag read from a file, and when.
#[derive(Debug, Clone, Copy)]
struct Known {
    state: FileState,
    digest: [u8; 32],
    read_at_ns: i128,
}

impl Known {
    /// Whether the file, now in `state`, still has this tag without being read.
    fn holds_for(&self, state: &FileState) -> bool {
        let last_change = self.state.modified_ns.max(self.state.changed_ns);
        self.state.same_as(state) && self.read_at_ns >= last_change + SETTLED.as_nanos() as i128
    }
}

/// The tags read so far, by device and inode: the key names one file on this host, whichever
/// sandbox (or sandbox store) reaches it.
static KNOWN: LazyLock<Mutex<HashMap<(u64, u64), Known>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

fn remembered(state: &FileState) -> Option<[u8; 32]> {
    let known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    known
        .get(&(state.dev, state.ino))
        .filter(|k| k.holds_for(state))
        .map(|k| k.digest)
}

fn remember(state: FileState, digest: [u8; 32], read_at_ns: i128) {
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    if known.len() >= REMEMBERED {
        known.clear();
    }
    known.insert(
        (state.dev, state.ino),
        Known {
            state,
            digest,
            read_at_ns,
        },
    );
}

/// The tag of a regular file in `state`, when it is known without reading the file.
pub(crate) fn known(state: &FileState) -> Option<String> {
    if state.links > 1 {
        return Some(state.stamp());
    }
    remembered(state).map(hex::encode)
}

/// The tag of the opened regular file `file`, whose state was just read from it.
pub(crate) fn of_file(file: &File, state: FileState) -> io::Result<String> {
    if let Some(tag) = known(&state) {
        return Ok(tag);
    }
    let mut state = state;
    for _ in 0..READS {
        // Taken before the bytes are read: a change during the read is after it.
        let read_at_ns = now_ns();
        let digest = digest_of(file)?;
        let after = FileState::from(&file.metadata()?);
        if after.same_as(&state) {
            remember(state, digest, read_at_ns);
            return Ok(hex::encode(digest));
        }
        state = after;
    }
    Ok(hex::encode(digest_of(file)?))
}

/// The SHA-256 of the whole file, read at offsets (the file's position is left alone).
fn digest_of(file: &File) -> io::Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut offset = 0u64;
    loop {
        match file.read_at(&mut buffer, offset) {
            Ok(0) => return Ok(hasher.finalize().into()),
            Ok(n) => {
                hasher.update(&buffer[..n]);
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The tag of bytes as they are written, for the answer to a write.
#[derive(Default)]
pub(crate) struct Written(Sha256);

impl Written {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub(crate) fn tag(self) -> String {
        hex::encode(self.0.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(modified_ns: i128, changed_ns: i128) -> FileState {
        FileState {
            dev: 1,
            ino: 2,
            links: 1,
            size: 3,
            modified_ns,
            changed_ns,
        }
    }

    const SECOND: i128 = 1_000_000_000;

    #[test]
    fn a_tag_read_soon_after_a_change_is_never_trusted_again() {
        let changed = state(100 * SECOND, 100 * SECOND);
        let known = Known {
            state: changed,
            digest: [0; 32],
            read_at_ns: 101 * SECOND,
        };
        // On a file system with one-second timestamps a second write in the same second
        // leaves the state as it was: the tag must be read again.
        assert!(!known.holds_for(&changed));
        let settled = Known {
            read_at_ns: 103 * SECOND,
            ..known
        };
        assert!(settled.holds_for(&changed));
        // The latest of the two times counts: a change of the inode alone is a change.
        let touched = state(100 * SECOND, 102 * SECOND);
        let after_touch = Known {
            state: touched,
            read_at_ns: 103 * SECOND,
            ..known
        };
        assert!(!after_touch.holds_for(&touched));
        assert!(!settled.holds_for(&touched));
    }

    #[test]
    fn the_tag_is_the_sha256_of_the_bytes_and_follows_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, b"hello").unwrap();
        let file = File::open(&path).unwrap();
        let tag = of_file(&file, FileState::from(&file.metadata().unwrap())).unwrap();
        assert_eq!(
            tag,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        // The same size, written in place at once: read again, so a new tag.
        std::fs::write(&path, b"world").unwrap();
        let again = of_file(&file, FileState::from(&file.metadata().unwrap())).unwrap();
        assert_ne!(again, tag);
        let mut written = Written::default();
        written.update(b"wor");
        written.update(b"ld");
        assert_eq!(written.tag(), again);
    }

    #[test]
    fn a_hard_linked_file_is_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, b"secret").unwrap();
        std::fs::hard_link(&path, dir.path().join("link")).unwrap();
        let file = File::open(&path).unwrap();
        let state = FileState::from(&file.metadata().unwrap());
        assert_eq!(of_file(&file, state).unwrap(), state.stamp());
    }
}
