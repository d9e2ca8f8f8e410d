//! Listing a local sandbox folder, and the names in it that no door can address.
//!
//! A command (or an agent working in the folder) can make a file whose name holds a newline or
//! an escape, is not UTF-8, or makes a path over 1,024 bytes. No route can name such a file,
//! so listings never give it as an entry; they give it apart, escaped and with the reason, so
//! that whoever lists the folder learns it is there (and can rename it with a command) without
//! a raw control character ever reaching a client's terminal.

use std::io;
use std::os::unix::ffi::OsStrExt;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use ferry_core::Timestamp;

use super::content_tag::FileState;
use super::{MAX_LISTED, MAX_PATH_BYTES, SandboxEntry, TMP_DIR, jailed, listed_tag, modified_of};
use crate::Error;

/// What a listing found: the entries, and the names it could not give as entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub entries: Vec<SandboxEntry>,
    /// Sorted by their shown path. An unaddressable folder is not descended into.
    pub unaddressable: Vec<Unaddressable>,
}

/// A file or folder no door can address, as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unaddressable {
    /// The path relative to `/sandbox/`, with each control character and each byte that is not
    /// UTF-8 written `\xNN`, and a backslash `\\`: printable, and never a path a door accepts
    /// (none holds a backslash), so it cannot be taken for another file's.
    pub shown: String,
    pub is_dir: bool,
    pub why: Why,
}

/// Why no door can address a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    NotUtf8,
    ControlCharacter,
    Backslash,
    TooLong,
}

impl Why {
    /// In words, as listings give it.
    pub fn describe(self) -> &'static str {
        match self {
            Why::NotUtf8 => "its name is not UTF-8",
            Why::ControlCharacter => "its name holds a control character",
            Why::Backslash => "its name holds a backslash",
            Why::TooLong => "its path is longer than 1024 bytes, or a part of it than 255",
        }
    }
}

/// Whether a listing tells each file's ETag (which may mean reading the file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tags {
    Read,
    Skip,
}

/// `name` written so that every byte of it can be seen: see [`Unaddressable::shown`].
fn escaped(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\u{0}'..='\u{1f}' | '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// An entry's name, when a door can address it.
pub(super) fn addressable_name(entry: &cap_std::fs::DirEntry) -> Option<String> {
    let raw = entry.file_name();
    unaddressable_name(raw.as_bytes())
        .is_none()
        .then(|| raw.to_string_lossy().into_owned())
}

/// Why no door can address `name`, or `None` when one can.
fn unaddressable_name(name: &[u8]) -> Option<Why> {
    let Ok(text) = std::str::from_utf8(name) else {
        return Some(Why::NotUtf8);
    };
    if ferry_core::path::is_addressable_name(text) {
        None
    } else if text.chars().any(|c| c < ' ' || c == '\x7f') {
        Some(Why::ControlCharacter)
    } else if text.contains('\\') {
        Some(Why::Backslash)
    } else {
        // The one rule left that a name on disk can break.
        Some(Why::TooLong)
    }
}

/// Lists `dir` into `out`. Metadata is read with `fstatat` (no symlink followed, nothing
/// opened), so a special file swapped in for a listed name cannot make the listing wait; a
/// file is opened only to read its ETag, without following a link or waiting.
pub(super) fn walk(
    dir: &Dir,
    prefix: Option<&str>,
    recursive: bool,
    tags: Tags,
    out: &mut Listing,
) -> Result<(), Error> {
    for entry in dir.entries().map_err(jailed)? {
        let entry = entry.map_err(jailed)?;
        let raw = entry.file_name();
        let within = |name: &str| match prefix {
            Some(p) => format!("{p}/{name}"),
            None => name.to_owned(),
        };
        // Only files and folders are told, as among the entries (no links, FIFOs or devices).
        let unaddressable = |why: Why| -> io::Result<Option<Unaddressable>> {
            let kind = entry.file_type()?;
            Ok((kind.is_dir() || kind.is_file()).then(|| Unaddressable {
                shown: within(&escaped(raw.as_bytes())),
                is_dir: kind.is_dir(),
                why,
            }))
        };
        if let Some(why) = unaddressable_name(raw.as_bytes()) {
            match unaddressable(why) {
                Ok(found) => out.unaddressable.extend(found),
                // Removed since the folder was read.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(jailed(e)),
            }
            continue;
        }
        // UTF-8, as just checked.
        let name = raw.to_string_lossy().into_owned();
        if prefix.is_none() && name == TMP_DIR {
            continue;
        }
        let path = within(&name);
        if path.len() > MAX_PATH_BYTES {
            out.unaddressable
                .extend(unaddressable(Why::TooLong).map_err(jailed)?);
            continue;
        }
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            // Removed since the folder was read.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(jailed(e)),
        };
        if meta.is_dir() {
            if recursive {
                match dir.open_dir_nofollow(&name) {
                    Ok(sub) => walk(&sub, Some(&path), true, tags, out)?,
                    // Swapped for something else since it was looked at.
                    Err(_) => continue,
                }
            } else {
                out.entries.push(SandboxEntry {
                    path,
                    is_dir: true,
                    size: 0,
                    modified: Timestamp(0),
                    etag: String::new(),
                });
            }
        } else if meta.is_file() {
            let etag = match tags {
                Tags::Skip => String::new(),
                Tags::Read => match listed_tag(dir, &name, &meta)? {
                    Some(etag) => etag,
                    // No longer a regular file, or gone, since it was looked at.
                    None => continue,
                },
            };
            let state = FileState::from(&meta);
            out.entries.push(SandboxEntry {
                path,
                is_dir: false,
                size: state.size(),
                modified: modified_of(state),
                etag,
            });
        }
        if out.entries.len() + out.unaddressable.len() > MAX_LISTED {
            return Err(Error::TooManyEntries);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_no_door_accepts_is_written_out() {
        assert_eq!(escaped(b"report\n.txt"), "report\\x0a.txt");
        assert_eq!(escaped(b"\x1b[31mred"), "\\x1b[31mred");
        assert_eq!(escaped(b"del\x7f"), "del\\x7f");
        assert_eq!(escaped(b"a\\b"), "a\\\\b");
        assert_eq!(escaped(b"caf\xe9"), "caf\\xe9");
        assert_eq!(escaped("café ✓".as_bytes()), "café ✓");
    }

    #[test]
    fn each_name_no_door_accepts_has_its_reason() {
        assert_eq!(unaddressable_name(b"fine name.txt"), None);
        assert_eq!(unaddressable_name(b"caf\xe9"), Some(Why::NotUtf8));
        assert_eq!(
            unaddressable_name(b"two\nlines"),
            Some(Why::ControlCharacter)
        );
        assert_eq!(unaddressable_name(b"back\\slash"), Some(Why::Backslash));
        assert_eq!(
            unaddressable_name(b"back\\slash\x1b"),
            Some(Why::ControlCharacter)
        );
    }
}
