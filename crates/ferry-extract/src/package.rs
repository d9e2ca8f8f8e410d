//! Zip-based documents (DOCX, XLSX, PPTX) opened with limits that hold while
//! inflating.
//!
//! A zip's headers can lie about sizes, so nothing here trusts them: every
//! byte that comes out of the inflater is counted against a budget shared by
//! the whole document, and each entry's unpacked-to-packed ratio is checked
//! as it grows. The packed size used for the ratio is the header's, clamped
//! to the size of the archive itself, so a lying header cannot raise it.

use std::io::{self, Read, Seek, SeekFrom};

use zip::ZipArchive;
use zip::result::ZipError;

use crate::error::ExtractError;
use crate::limits::{Limits, human_bytes};

/// The first bytes of an OLE compound file: what an encrypted Office Open XML
/// document (and a legacy .doc/.xls/.ppt) really is.
const CFB_MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

/// An opened zip package with an unpacking budget.
pub(crate) struct Package<R: Read + Seek> {
    zip: ZipArchive<R>,
    archive_len: u64,
    unpacked: u64,
    limits: Limits,
    what: &'static str,
}

impl<R: Read + Seek> std::fmt::Debug for Package<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Package")
            .field("entries", &self.zip.len())
            .field("unpacked", &self.unpacked)
            .field("what", &self.what)
            .finish()
    }
}

impl<R: Read + Seek> Package<R> {
    /// Opens `reader` as a zip package; `what` names the document type in
    /// error messages ("Word document").
    pub(crate) fn open(
        mut reader: R,
        what: &'static str,
        limits: &Limits,
    ) -> Result<Self, ExtractError> {
        let archive_len = reader
            .seek(SeekFrom::End(0))
            .map_err(|e| ExtractError::io(&e))?;
        reader
            .seek(SeekFrom::Start(0))
            .map_err(|e| ExtractError::io(&e))?;
        let mut magic = [0u8; 8];
        let got = read_up_to(&mut reader, &mut magic).map_err(|e| ExtractError::io(&e))?;
        if got == magic.len() && magic == CFB_MAGIC {
            return Err(cfb_error(&mut reader, what));
        }
        reader
            .seek(SeekFrom::Start(0))
            .map_err(|e| ExtractError::io(&e))?;
        let zip = ZipArchive::new(reader).map_err(|e| zip_error(what, e))?;
        if zip.len() > limits.max_zip_entries {
            return Err(ExtractError::limit(format!(
                "it holds more than {} files inside",
                limits.max_zip_entries
            )));
        }
        Ok(Package {
            zip,
            archive_len,
            unpacked: 0,
            limits: limits.clone(),
            what,
        })
    }

    pub(crate) fn what(&self) -> &'static str {
        self.what
    }

    /// Whether the package has an entry of this name.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.zip.index_for_name(name).is_some()
    }

    /// A reader over one entry whose bytes count against the budget, or
    /// `None` when the entry does not exist.
    ///
    /// Entries are read as XML: a stretch of more than
    /// [`Limits::max_xml_run_bytes`] without a `<` is refused.
    pub(crate) fn entry(&mut self, name: &str) -> Result<Option<Entry<'_, R>>, ExtractError> {
        match self.zip.index_for_name(name) {
            Some(index) => {
                let mut entry = self.entry_at(index)?;
                entry.max_run = Some(entry.limits.max_xml_run_bytes);
                Ok(Some(entry))
            }
            None => Ok(None),
        }
    }

    fn entry_at(&mut self, index: usize) -> Result<Entry<'_, R>, ExtractError> {
        let Package {
            zip,
            archive_len,
            unpacked,
            limits,
            what,
        } = self;
        let file = zip.by_index(index).map_err(|e| zip_error(what, e))?;
        let packed = file.compressed_size().min(*archive_len).max(1);
        Ok(Entry {
            file,
            packed,
            out: 0,
            unpacked,
            limits,
            max_run: None,
            run: 0,
        })
    }

    /// Reads a whole entry into memory (for small parts: relationships,
    /// styles, the presentation part). `None` when it does not exist.
    pub(crate) fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, ExtractError> {
        let what = self.what;
        let Some(mut entry) = self.entry(name)? else {
            return Ok(None);
        };
        let mut buf = Vec::new();
        entry
            .read_to_end(&mut buf)
            .map_err(|e| io_to_extract(what, e))?;
        Ok(Some(buf))
    }

    /// Reads a binary entry (a picture) of at most `max_bytes` bytes:
    /// `Ok(None)` when it does not exist or is larger (only `max_bytes + 1`
    /// bytes of it are inflated to tell).
    pub(crate) fn read_binary(
        &mut self,
        name: &str,
        max_bytes: usize,
    ) -> Result<Option<Vec<u8>>, ExtractError> {
        let what = self.what;
        let Some(index) = self.zip.index_for_name(name) else {
            return Ok(None);
        };
        let entry = self.entry_at(index)?;
        let mut buf = Vec::new();
        entry
            .take(max_bytes as u64 + 1)
            .read_to_end(&mut buf)
            .map_err(|e| io_to_extract(what, e))?;
        Ok((buf.len() <= max_bytes).then_some(buf))
    }

    /// Inflates every entry through the limits and refuses XML parts that
    /// declare a DTD. Used before handing the package to a library that
    /// reads entries on its own (calamine), so that library only ever sees
    /// an archive already known to unpack within bounds.
    pub(crate) fn check_all(&mut self) -> Result<(), ExtractError> {
        let what = self.what;
        let mut buf = vec![0u8; 64 * 1024];
        for index in 0..self.zip.len() {
            // By index, not by name: a hostile archive may hold two entries
            // of the same name, and both must be checked.
            let mut entry = self.entry_at(index)?;
            let named_xml = {
                let lower = entry.name().to_ascii_lowercase();
                lower.ends_with(".xml") || lower.ends_with(".rels") || lower.ends_with(".vml")
            };
            let mut dtd = DtdScanner::default();
            let mut first = true;
            let mut scan = named_xml;
            loop {
                let n = entry.read(&mut buf).map_err(|e| io_to_extract(what, e))?;
                if n == 0 {
                    break;
                }
                if first {
                    // Whatever its name, a part that starts like XML is
                    // scanned; binary parts (images) are not, since random
                    // bytes can look like "<!A".
                    scan = scan || looks_like_xml(&buf[..n]);
                    if scan {
                        entry.max_run = Some(entry.limits.max_xml_run_bytes);
                    }
                    dtd.utf16 =
                        buf[..n].starts_with(&[0xFF, 0xFE]) || buf[..n].starts_with(&[0xFE, 0xFF]);
                    first = false;
                }
                if scan && dtd.found_in(&buf[..n]) {
                    return Err(dtd_error());
                }
            }
        }
        Ok(())
    }

    /// Gives the archive's reader back, rewound, for a library to open again.
    pub(crate) fn into_inner(self) -> Result<R, ExtractError> {
        let mut r = self.zip.into_inner();
        r.seek(SeekFrom::Start(0))
            .map_err(|e| ExtractError::io(&e))?;
        Ok(r)
    }
}

/// One entry being inflated under the package's budget.
pub(crate) struct Entry<'a, R: Read + Seek> {
    file: zip::read::ZipFile<'a, R>,
    packed: u64,
    out: u64,
    unpacked: &'a mut u64,
    limits: &'a Limits,
    /// When set, the longest stretch allowed without a `<`.
    max_run: Option<u64>,
    run: u64,
}

impl<R: Read + Seek> Entry<'_, R> {
    fn name(&self) -> String {
        self.file.name().map(|n| n.into_owned()).unwrap_or_default()
    }
}

impl<R: Read + Seek> Read for Entry<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.out += n as u64;
        *self.unpacked += n as u64;
        if *self.unpacked > self.limits.max_unpacked_bytes {
            return Err(io::Error::other(ExtractError::limit(format!(
                "it unpacks to more than {}",
                human_bytes(self.limits.max_unpacked_bytes)
            ))));
        }
        if self.out > self.limits.ratio_grace_bytes
            && self.out / self.packed > self.limits.max_compression_ratio
        {
            return Err(io::Error::other(ExtractError::limit(format!(
                "one of its parts unpacks to more than {} times its packed size",
                self.limits.max_compression_ratio
            ))));
        }
        if let Some(max_run) = self.max_run {
            match buf[..n].iter().rposition(|&b| b == b'<') {
                Some(p) => self.run = (n - p - 1) as u64,
                None => self.run += n as u64,
            }
            if self.run > max_run {
                return Err(io::Error::other(ExtractError::limit(format!(
                    "its XML holds a single text or tag longer than {}",
                    human_bytes(max_run)
                ))));
            }
        }
        Ok(n)
    }
}

/// Finds `<!` followed by a letter — the start of a DTD declaration
/// (`<!DOCTYPE`, `<!ENTITY`, `<!ELEMENT`, ...) — across chunk boundaries.
/// Comments (`<!--`) and CDATA (`<![CDATA[`) do not match.
#[derive(Debug, Default)]
pub(crate) struct DtdScanner {
    state: u8,
    /// In UTF-16 text every ASCII character is paired with a NUL byte, which
    /// the scan then skips.
    utf16: bool,
}

impl DtdScanner {
    pub(crate) fn found_in(&mut self, chunk: &[u8]) -> bool {
        for &b in chunk {
            if self.utf16 && b == 0 {
                continue;
            }
            if self.state == 2 && b.is_ascii_alphabetic() {
                return true;
            }
            self.state = match (self.state, b) {
                (_, b'<') => 1,
                (1, b'!') => 2,
                _ => 0,
            };
        }
        false
    }
}

/// True when the bytes start (after a byte-order mark and whitespace) with `<`.
fn looks_like_xml(head: &[u8]) -> bool {
    let head = head
        .strip_prefix(&[0xEF, 0xBB, 0xBF])
        .or_else(|| head.strip_prefix(&[0xFF, 0xFE]))
        .or_else(|| head.strip_prefix(&[0xFE, 0xFF]))
        .unwrap_or(head);
    head.iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0))
        .is_some_and(|&b| b == b'<')
}

pub(crate) fn dtd_error() -> ExtractError {
    ExtractError::limit("it declares an XML DTD, which ferry does not read")
}

/// Turns an I/O error from an [`Entry`] back into the limit error it carries,
/// or into a plain "invalid" error.
pub(crate) fn io_to_extract(what: &str, e: io::Error) -> ExtractError {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<ExtractError>()) {
        return inner.clone();
    }
    ExtractError::invalid(what, format!("a part of it could not be unpacked: {e}"))
}

pub(crate) fn zip_error(what: &str, e: ZipError) -> ExtractError {
    match e {
        ZipError::Io(io) => io_to_extract(what, io),
        ZipError::InvalidPassword => ExtractError::Encrypted,
        ZipError::UnsupportedArchive(m) if m.contains("assword") => ExtractError::Encrypted,
        other => ExtractError::invalid(what, format!("it is not a valid zip package: {other}")),
    }
}

/// An Office Open XML name on an OLE compound file: either an encrypted
/// document (the package sits inside an "EncryptionInfo"/"EncryptedPackage"
/// pair) or an old binary Office file with the wrong extension.
fn cfb_error<R: Read + Seek>(reader: &mut R, what: &str) -> ExtractError {
    let mut head = Vec::new();
    let found = reader.seek(SeekFrom::Start(0)).is_ok()
        && reader
            .by_ref()
            .take(1024 * 1024)
            .read_to_end(&mut head)
            .is_ok()
        && {
            let needle: Vec<u8> = "EncryptionInfo"
                .encode_utf16()
                .flat_map(u16::to_le_bytes)
                .collect();
            head.windows(needle.len()).any(|w| w == needle.as_slice())
        };
    if found {
        ExtractError::Encrypted
    } else {
        ExtractError::invalid(
            what,
            "it is an older binary Office file, not an Office Open XML package",
        )
    }
}

fn read_up_to<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::{Cursor, Write};
    use zip::write::SimpleFileOptions;

    pub(crate) fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data) in entries {
            w.start_file(*name, SimpleFileOptions::default()).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn reads_entries_within_budget() {
        let bytes = zip_of(&[("a.xml", b"<a/>"), ("b.txt", b"hello")]);
        let mut p = Package::open(Cursor::new(bytes), "test package", &Limits::default()).unwrap();
        assert!(p.has("a.xml"));
        assert_eq!(p.read("b.txt").unwrap().unwrap(), b"hello");
        assert!(p.read("missing").unwrap().is_none());
        p.check_all().unwrap();
    }

    #[test]
    fn total_budget_holds_across_entries() {
        let big = vec![b'a'; 3000];
        let bytes = zip_of(&[("one", &big), ("two", &big)]);
        let limits = Limits {
            max_unpacked_bytes: 5000,
            ..Limits::default()
        };
        let mut p = Package::open(Cursor::new(bytes), "test package", &limits).unwrap();
        assert!(p.read("one").is_ok());
        let err = p.read("two").unwrap_err();
        assert_eq!(
            err,
            ExtractError::limit("it unpacks to more than 4 KiB".to_string())
        );
    }

    #[test]
    fn ratio_is_checked_while_inflating() {
        let big = vec![0u8; 2 * 1024 * 1024];
        let bytes = zip_of(&[("zeros", &big)]);
        let limits = Limits {
            ratio_grace_bytes: 64 * 1024,
            ..Limits::default()
        };
        let mut p = Package::open(Cursor::new(bytes), "test package", &limits).unwrap();
        let err = p.read("zeros").unwrap_err();
        assert!(
            err.to_string().contains("100 times its packed size"),
            "{err}"
        );
    }

    #[test]
    fn long_xml_runs_are_refused() {
        let mut long = b"<a>".to_vec();
        long.extend(vec![b'x'; 300_000]);
        long.extend(b"</a>");
        let bytes = zip_of(&[("word/document.xml", &long), ("media/blob.bin", &long[3..])]);
        let limits = Limits {
            max_xml_run_bytes: 100_000,
            ..Limits::default()
        };
        let mut p = Package::open(Cursor::new(bytes.clone()), "test package", &limits).unwrap();
        let err = p.read("word/document.xml").unwrap_err();
        assert!(err.to_string().contains("longer than 97 KiB"), "{err}");
        let mut p = Package::open(Cursor::new(bytes), "test package", &limits).unwrap();
        assert!(
            p.check_all()
                .unwrap_err()
                .to_string()
                .contains("longer than")
        );
    }

    #[test]
    fn entry_count_is_capped() {
        let names: Vec<String> = (0..12).map(|i| format!("f{i}")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let limits = Limits {
            max_zip_entries: 10,
            ..Limits::default()
        };
        let err =
            Package::open(Cursor::new(zip_of(&entries)), "test package", &limits).unwrap_err();
        assert!(err.to_string().contains("more than 10 files"), "{err}");
    }

    #[test]
    fn dtd_in_any_xml_part_is_refused() {
        let bytes = zip_of(&[(
            "xl/sharedStrings.xml",
            b"<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">]><sst/>",
        )]);
        let mut p = Package::open(Cursor::new(bytes), "test package", &Limits::default()).unwrap();
        assert_eq!(p.check_all().unwrap_err(), dtd_error());
    }

    #[test]
    fn dtd_in_an_oddly_named_or_utf16_part_is_refused() {
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("<!DOCTYPE x><x/>".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        for data in [&b"  <!DOCTYPE x><x/>"[..], &utf16[..]] {
            let bytes = zip_of(&[("xl/strings.dat", data)]);
            let mut p =
                Package::open(Cursor::new(bytes), "test package", &Limits::default()).unwrap();
            assert_eq!(p.check_all().unwrap_err(), dtd_error());
        }
        // Binary parts are not scanned.
        let bytes = zip_of(&[("media/image1.png", b"\x89PNG<!ABC")]);
        let mut p = Package::open(Cursor::new(bytes), "test package", &Limits::default()).unwrap();
        p.check_all().unwrap();
    }

    #[test]
    fn dtd_scanner_spans_chunks_and_ignores_comments() {
        let mut s = DtdScanner::default();
        assert!(!s.found_in(b"<a><!-- c --><![CDATA[x]]><"));
        assert!(s.found_in(b"!DOCTYPE"));
        let mut s = DtdScanner::default();
        assert!(!s.found_in(b"<!"));
        assert!(s.found_in(b"ENTITY"));
    }

    #[test]
    fn garbage_and_cfb_give_clear_errors() {
        let err = Package::open(
            Cursor::new(b"not a zip".to_vec()),
            "Word document",
            &Limits::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the file is not a readable Word document")
        );

        let mut cfb = CFB_MAGIC.to_vec();
        cfb.extend(vec![0u8; 100]);
        cfb.extend("EncryptionInfo".encode_utf16().flat_map(u16::to_le_bytes));
        let err = Package::open(Cursor::new(cfb), "Word document", &Limits::default()).unwrap_err();
        assert_eq!(err, ExtractError::Encrypted);
    }
}
