//! Reading a small local blob on the calling thread, only when the kernel can answer from its
//! caches alone: the path is resolved from the dentry cache (`openat2` with `RESOLVE_CACHED`)
//! and the bytes come from the page cache (`preadv2` with `RWF_NOWAIT`). Either call answers
//! `EAGAIN` rather than wait for the disk, so an async worker thread is never held by a cold
//! file; the caller then reads on the blocking pool as before. A kernel without these calls
//! (before Linux 5.12) answers an error the same way, and every read takes the blocking pool.

use std::ops::Range;
use std::path::Path;

use bytes::Bytes;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::ReadWriteFlags;

/// The bytes of `range` (the whole file without one) of the file at `path`, if that is at most
/// `limit` bytes and can be read without waiting for the disk.
pub(super) fn read_small(path: &Path, range: Option<Range<u64>>, limit: u64) -> Option<Bytes> {
    let fd = rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::CACHED,
    )
    .ok()?;
    let size = rustix::fs::fstat(&fd).ok()?.st_size as u64;
    let range = range.unwrap_or(0..size);
    let end = range.end.min(size);
    let start = range.start.min(end);
    let len = end - start;
    if len > limit {
        return None;
    }
    let mut bytes = vec![0u8; len as usize];
    let mut filled = 0;
    while filled < bytes.len() {
        let read = rustix::io::preadv2(
            &fd,
            &mut [std::io::IoSliceMut::new(&mut bytes[filled..])],
            start + filled as u64,
            ReadWriteFlags::NOWAIT,
        )
        .ok()?;
        if read == 0 {
            // Shorter than a moment ago: let the blocking read report it.
            return None;
        }
        filled += read;
    }
    Some(Bytes::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_small_file_is_read_whole_or_in_part_and_a_large_one_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blob");
        std::fs::write(&path, b"hello, cached world").unwrap();
        // Just written: in the page cache, its name in the dentry cache.
        assert_eq!(
            read_small(&path, None, 64).as_deref(),
            Some(&b"hello, cached world"[..])
        );
        assert_eq!(
            read_small(&path, Some(7..13), 64).as_deref(),
            Some(&b"cached"[..])
        );
        assert_eq!(
            read_small(&path, Some(30..40), 64).as_deref(),
            Some(&b""[..])
        );
        assert_eq!(read_small(&path, None, 4), None);
        assert_eq!(read_small(&dir.path().join("missing"), None, 64), None);
    }
}
