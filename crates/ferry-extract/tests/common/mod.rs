//! Helpers shared by the integration tests: the extractor wired to this
//! crate's worker binary, fixture paths, and builders for documents.

#![allow(dead_code, unreachable_pub)]

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use ferry_extract::{Extractor, ExtractorConfig};

/// An extractor that runs this crate's worker binary.
pub fn extractor() -> Extractor {
    Extractor::new(config())
}

pub fn config() -> ExtractorConfig {
    ExtractorConfig::new(
        env!("CARGO_BIN_EXE_ferry-extract-worker"),
        Vec::<String>::new(),
    )
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The shared corpus: `FERRY_CORPUS_DIR`, or `shared/corpus` beside the
/// repository (where CI and the developers' machines have it).
pub fn corpus_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FERRY_CORPUS_DIR") {
        return PathBuf::from(dir);
    }
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    assert!(
        beside.is_dir(),
        "the shared corpus was not found at {}; set FERRY_CORPUS_DIR",
        beside.display()
    );
    beside
}

/// A zip made with the zip crate, entries deflated.
pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in entries {
        w.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// A minimal XLSX workbook with one sheet whose cell A1 is shared string 0.
/// `shared_strings` is the whole `xl/sharedStrings.xml` part.
pub fn xlsx_with_shared_strings(shared_strings: &str) -> Vec<u8> {
    let content_types = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>"#;
    let rels = r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#;
    let workbook = r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>"#;
    let workbook_rels = r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>"#;
    let sheet = r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1"><v>7</v></c></row></sheetData></worksheet>"#;
    zip_of(&[
        ("[Content_Types].xml", content_types.as_bytes()),
        ("_rels/.rels", rels.as_bytes()),
        ("xl/workbook.xml", workbook.as_bytes()),
        ("xl/_rels/workbook.xml.rels", workbook_rels.as_bytes()),
        ("xl/worksheets/sheet1.xml", sheet.as_bytes()),
        ("xl/sharedStrings.xml", shared_strings.as_bytes()),
    ])
}

/// A PDF assembled from numbered object bodies (object 1 first) with a
/// correct cross-reference table; object 1 is the root.
pub fn pdf_of(objects: &[&[u8]]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f\r\n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n\r\n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A raw deflate stream of `head`, then `repeat` copies of `chunk`, then
/// `tail`, built without ever holding the inflated data: `chunk` is
/// compressed once and its bytes repeated. Returns the stream, the inflated
/// size and the CRC-32 of the inflated data.
pub fn deflate_repeated(
    head: &[u8],
    chunk: &[u8],
    repeat: usize,
    tail: &[u8],
) -> (Vec<u8>, u64, u32) {
    use flate2::{Compress, Compression, FlushCompress, Status};
    let mut c = Compress::new(Compression::best(), false);
    let mut part = |input: &[u8], flush: FlushCompress| {
        let finish = matches!(flush, FlushCompress::Finish);
        let mut out = Vec::new();
        let start_in = c.total_in();
        loop {
            out.reserve(input.len() / 4 + 64 * 1024);
            let consumed = (c.total_in() - start_in) as usize;
            let status = c.compress_vec(&input[consumed..], &mut out, flush).unwrap();
            let all_in = (c.total_in() - start_in) as usize == input.len();
            // A flush is complete once all input is in and the output did
            // not fill the room it had; a finish once the stream has ended.
            let flushed = all_in && out.len() < out.capacity();
            if (finish && status == Status::StreamEnd) || (!finish && flushed) {
                return out;
            }
        }
    };
    let h = part(head, FlushCompress::Full);
    let body = part(chunk, FlushCompress::Full);
    let t = part(tail, FlushCompress::Finish);
    let mut stream = h;
    for _ in 0..repeat {
        stream.extend_from_slice(&body);
    }
    stream.extend_from_slice(&t);

    let crc_of = |data: &[u8]| {
        let mut h = crc32fast::Hasher::new();
        h.update(data);
        h
    };
    let mut crc = crc_of(head);
    let chunk_crc = crc_of(chunk);
    for _ in 0..repeat {
        crc.combine(&chunk_crc);
    }
    crc.combine(&crc_of(tail));
    let size = (head.len() + chunk.len() * repeat + tail.len()) as u64;
    (stream, size, crc.finalize())
}

/// A zip written by hand from already-deflated entries: (name, deflated
/// bytes, inflated size, CRC-32). Sizes must stay below 4 GiB.
pub fn zip_raw(entries: &[(&str, Vec<u8>, u64, u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data, size, crc) in entries {
        let offset = out.len() as u32;
        let header = |sig: u32, central: bool| {
            let mut h = Vec::new();
            h.extend_from_slice(&sig.to_le_bytes());
            if central {
                h.extend_from_slice(&20u16.to_le_bytes());
            }
            h.extend_from_slice(&20u16.to_le_bytes()); // version needed
            h.extend_from_slice(&0u16.to_le_bytes()); // flags
            h.extend_from_slice(&8u16.to_le_bytes()); // deflate
            h.extend_from_slice(&0u32.to_le_bytes()); // time and date
            h.extend_from_slice(&crc.to_le_bytes());
            h.extend_from_slice(&(data.len() as u32).to_le_bytes());
            h.extend_from_slice(&(*size as u32).to_le_bytes());
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes()); // extra
            if central {
                h.extend_from_slice(&[0u8; 6]); // comment length, disk, internal attributes
                h.extend_from_slice(&0u32.to_le_bytes()); // external attributes
                h.extend_from_slice(&offset.to_le_bytes());
            }
            h.extend_from_slice(name.as_bytes());
            h
        };
        out.extend(header(0x0403_4b50, false));
        out.extend_from_slice(data);
        central.extend(header(0x0201_4b50, true));
    }
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// Writes bytes to a file in `dir` and returns its path.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// What every rendering must be: a complete document with one inline style
/// and no markup that runs or loads anything. Document text is escaped, so
/// only real tags start with `<`; each is checked.
pub fn assert_safe_document(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>\n<html>"), "{html}");
    assert!(html.trim_end().ends_with("</body></html>"));
    assert_eq!(html.matches("<style>").count(), 1);
    for tag in html
        .split('<')
        .skip(1)
        .map(|t| t.split('>').next().unwrap_or(""))
    {
        let tag = tag.to_ascii_lowercase();
        let name = tag.split_whitespace().next().unwrap_or("");
        assert!(
            ![
                "script",
                "iframe",
                "link",
                "object",
                "embed",
                "img",
                "svg",
                "base",
                "meta http-equiv",
                "form"
            ]
            .contains(&name),
            "<{tag}> in {html}"
        );
        for attr in tag.split_whitespace().skip(1) {
            assert!(
                !attr.starts_with("on") && !attr.starts_with("http-equiv"),
                "<{tag}> in {html}"
            );
            assert!(
                !attr.starts_with("src=") && !attr.starts_with("style="),
                "<{tag}> in {html}"
            );
            assert!(!attr.contains("javascript:"), "<{tag}> in {html}");
        }
    }
}
