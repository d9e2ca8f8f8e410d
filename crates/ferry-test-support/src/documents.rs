//! Documents built byte by byte for the tests: zips (deflated here, or from raw deflate
//! streams, so a test can describe a bomb without holding it inflated), a minimal XLSX and
//! PDFs of given pages.
//! Used by ferry-extract's tests and the server's.

use std::io::Write;

/// Raw deflate of `data`, its CRC-32 and size, for a zip entry.
fn deflated(data: &[u8]) -> (Vec<u8>, u64, u32) {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    let mut crc = crc32fast::Hasher::new();
    crc.update(data);
    (e.finish().unwrap(), data.len() as u64, crc.finalize())
}

/// A zip whose entries are deflated here.
pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let raw: Vec<(&str, Vec<u8>, u64, u32)> = entries
        .iter()
        .map(|(name, data)| {
            let (d, size, crc) = deflated(data);
            (*name, d, size, crc)
        })
        .collect();
    zip_raw(&raw)
}

/// A zip written by hand from already-deflated entries: (name, deflated bytes, inflated size,
/// CRC-32). Sizes stay below 4 GiB.
pub fn zip_raw(entries: &[(&str, Vec<u8>, u64, u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data, size, crc) in entries {
        let offset = out.len() as u32;
        let header = |sig: u32, central: bool| {
            let mut h = Vec::new();
            h.extend_from_slice(&sig.to_le_bytes());
            if central {
                h.extend_from_slice(&20u16.to_le_bytes()); // version made by
            }
            h.extend_from_slice(&20u16.to_le_bytes()); // version needed
            h.extend_from_slice(&0u16.to_le_bytes()); // flags
            h.extend_from_slice(&8u16.to_le_bytes()); // deflate
            h.extend_from_slice(&0u32.to_le_bytes()); // time and date
            h.extend_from_slice(&crc.to_le_bytes());
            h.extend_from_slice(&(data.len() as u32).to_le_bytes());
            h.extend_from_slice(&(*size as u32).to_le_bytes());
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes()); // extra field length
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

/// A raw deflate stream of `head`, `repeat` copies of `chunk`, then `tail`, made without ever
/// holding the inflated data (the compressed chunk is repeated). Returns the stream, the
/// inflated size and its CRC-32.
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
            let flushed = all_in && out.len() < out.capacity();
            if (finish && status == Status::StreamEnd) || (!finish && flushed) {
                return out;
            }
        }
    };
    let mut stream = part(head, FlushCompress::Full);
    let body = part(chunk, FlushCompress::Full);
    let t = part(tail, FlushCompress::Finish);
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

/// A minimal XLSX workbook whose only sheet's A1 is shared string 0 of `shared_strings`.
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

/// A DOCX whose word/document.xml inflates to 1 GiB, in about a megabyte, with honest sizes.
pub fn docx_bomb() -> Vec<u8> {
    let head = br#"<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>"#;
    let tail = b"</w:r></w:p></w:body></w:document>";
    let mut unit = b"<w:t>".to_vec();
    unit.resize(1024 - 6, b'a');
    unit.extend_from_slice(b"</w:t>");
    let chunk = unit.repeat(1024);
    let (deflated, size, crc) = deflate_repeated(head, &chunk, 1024, tail);
    assert!(size >= 1 << 30, "the bomb inflates to {size} bytes");
    zip_raw(&[("word/document.xml", deflated, size, crc)])
}

/// An XLSX whose shared strings declare a billion-laughs DTD (10⁹ "lol"s if expanded).
pub fn xlsx_billion_laughs() -> Vec<u8> {
    let mut dtd = String::from(r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">"#);
    for i in 1..=9 {
        let prev = if i == 1 {
            "lol".to_owned()
        } else {
            format!("lol{}", i - 1)
        };
        dtd.push_str(&format!(
            r#"<!ENTITY lol{i} "{}">"#,
            format!("&{prev};").repeat(10)
        ));
    }
    dtd.push_str("]>");
    xlsx_with_shared_strings(&format!(
        r#"{dtd}<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1"><si><t>&lol9;</t></si></sst>"#
    ))
}

/// One PNG chunk: length, kind, data and the CRC of kind and data.
fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&u32::try_from(data.len()).unwrap().to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
}

/// A PNG of 8-bit RGB pixels: its header declares `width` × `height`, and `rows` are the
/// (filtered) scanlines, deflated here.
fn png_of(width: u32, height: u32, rows: &[u8]) -> Vec<u8> {
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), deflate, adaptive filtering, no interlace.
    header.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut deflated = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    deflated.write_all(rows).unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png_chunk(&mut png, b"IHDR", &header);
    png_chunk(&mut png, b"IDAT", &deflated.finish().unwrap());
    png_chunk(&mut png, b"IEND", &[]);
    png
}

/// A valid RGB PNG of `width` × `height` pixels (a colour gradient).
pub fn png(width: u32, height: u32) -> Vec<u8> {
    let mut rows = Vec::new();
    for y in 0..height {
        rows.push(0); // filter: none
        for x in 0..width {
            rows.extend_from_slice(&[(x * 40) as u8, (y * 60) as u8, 200]);
        }
    }
    png_of(width, height, &rows)
}

/// A PNG whose header declares `width` × `height` pixels but whose data holds only 1 MiB of
/// black rows (a few kilobytes deflated): a decompression bomb when the size is large.
pub fn png_declaring(width: u32, height: u32) -> Vec<u8> {
    png_of(width, height, &vec![0u8; 1 << 20])
}

/// One page of [`pdf_of`]: its size in points and its content stream (PDF drawing operators;
/// Helvetica is there as `/F1`).
#[derive(Debug, Clone, Copy)]
pub struct PdfPage<'a> {
    pub width: f32,
    pub height: f32,
    pub content: &'a str,
}

/// A PDF of the given pages, written by hand with a correct cross-reference table.
pub fn pdf_of(pages: &[PdfPage<'_>]) -> Vec<u8> {
    // 1: catalog, 2: page tree, 3: the font, then a page and its content for each page.
    let kids: Vec<String> = (0..pages.len())
        .map(|i| format!("{} 0 R", 4 + 2 * i))
        .collect();
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            kids.join(" "),
            pages.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    for (i, page) in pages.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {} {}] \
             /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            page.width,
            page.height,
            5 + 2 * i
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{}\nendstream",
            page.content.len(),
            page.content
        ));
    }
    let bodies: Vec<&[u8]> = objects.iter().map(|body| body.as_bytes()).collect();
    pdf_from_objects(&bodies)
}

/// A PDF assembled from numbered object bodies (object 1 first, and the root) with a correct
/// cross-reference table.
pub fn pdf_from_objects(objects: &[&[u8]]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    let size = objects.len() + 1;
    out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
    );
    out
}

/// A PDF of US Letter pages (612 × 792 points), each with one of `contents` as its content
/// stream.
pub fn letter_pdf(contents: &[String]) -> Vec<u8> {
    let pages: Vec<PdfPage> = contents
        .iter()
        .map(|content| PdfPage {
            width: 612.0,
            height: 792.0,
            content,
        })
        .collect();
    pdf_of(&pages)
}

/// A page's content stream writing `text` in 24-point Helvetica near its top.
pub fn letter_page_saying(text: &str) -> String {
    format!("BT /F1 24 Tf 72 700 Td ({text}) Tj ET")
}
