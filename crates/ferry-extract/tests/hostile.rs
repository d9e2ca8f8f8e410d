//! Hostile documents, generated here: each must come back from the worker
//! within seconds with an error (or a bounded preview), and never take this
//! process down.

mod common;

use std::time::{Duration, Instant};

use common::{
    config, deflate_repeated, docx_bomb, extractor, pdf_from_objects, png_declaring, write,
    xlsx_billion_laughs, xlsx_with_shared_strings, zip_of,
};
use ferry_extract::{ExtractError, Extractor};

const QUICK: Duration = Duration::from_secs(10);

async fn preview_of(ex: &Extractor, name: &str, bytes: &[u8]) -> Result<String, ExtractError> {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), name, bytes);
    let started = Instant::now();
    let result = ex.preview("test", &path, name, 4000).await;
    assert!(
        started.elapsed() < QUICK,
        "{name} took {:?}",
        started.elapsed()
    );
    result.map(|p| p.text.unwrap_or_default())
}

async fn html_of(ex: &Extractor, name: &str, bytes: &[u8]) -> Result<String, ExtractError> {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), name, bytes);
    let started = Instant::now();
    let result = ex.render_html("test", &path, name).await;
    assert!(
        started.elapsed() < QUICK,
        "{name} took {:?}",
        started.elapsed()
    );
    result
}

#[tokio::test]
async fn docx_zip_bomb_is_stopped_while_inflating() {
    let bomb = docx_bomb();
    assert!(
        bomb.len() < 4 * 1024 * 1024,
        "the bomb is {} bytes",
        bomb.len()
    );
    let ex = extractor();
    let err = preview_of(&ex, "bomb.docx", &bomb).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the document is too large or too complex to read safely: one of its parts unpacks to more than 100 times its packed size"
    );
    assert!(html_of(&ex, "bomb.docx", &bomb).await.is_err());
}

#[tokio::test]
async fn total_unpacked_size_is_bounded_across_entries() {
    // Twelve entries of 1 MiB of varied text each: every ratio is modest,
    // but together they pass a 4 MiB budget.
    let part: Vec<u8> = (0..1024 * 1024u32)
        .map(|i| {
            b"abcdefghijklmnopqrstuvwxyz0123456789"
                [(i.wrapping_mul(2_654_435_761) >> 27) as usize % 36]
        })
        .collect();
    let names: Vec<String> = (0..12)
        .map(|i| format!("ppt/slides/slide{i}.xml"))
        .collect();
    let entries: Vec<(&str, &[u8])> = names
        .iter()
        .map(|n| (n.as_str(), part.as_slice()))
        .collect();
    let bytes = zip_of(&entries);
    let mut cfg = config();
    cfg.limits.max_unpacked_bytes = 4 * 1024 * 1024;
    // Inflating every part up front is what the XLSX reader does.
    let err = preview_of(&Extractor::new(cfg), "many.xlsx", &bytes)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the document is too large or too complex to read safely: it unpacks to more than 4 MiB"
    );
}

#[tokio::test]
async fn xlsx_with_a_billion_laughs_dtd_is_refused() {
    let ex = extractor();
    let err = preview_of(&ex, "laughs.xlsx", &xlsx_billion_laughs())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the document is too large or too complex to read safely: it declares an XML DTD, which ferry does not read"
    );
    assert!(
        html_of(&ex, "laughs.xlsx", &xlsx_billion_laughs())
            .await
            .is_err()
    );

    // The same workbook without the DTD reads: the refusal is about the DTD.
    let plain = r#"<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1"><si><t>laugh</t></si></sst>"#;
    assert_eq!(
        preview_of(&ex, "plain.xlsx", &xlsx_with_shared_strings(plain))
            .await
            .unwrap(),
        "Data: laugh | 7"
    );
}

#[tokio::test]
async fn xlsx_claiming_four_billion_shared_strings_is_contained() {
    // calamine 0.38 reserves room for `uniqueCount` strings up front; the
    // worker's address-space limit turns that into a plain error.
    let sst = r#"<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="4000000000" uniqueCount="4000000000"><si><t>x</t></si></sst>"#;
    match preview_of(&extractor(), "claims.xlsx", &xlsx_with_shared_strings(sst)).await {
        Err(e) => assert_eq!(e, ExtractError::OutOfMemory),
        Ok(text) => assert_eq!(text, "Data: x | 7"),
    }
}

#[tokio::test]
async fn docx_and_pptx_with_a_dtd_are_refused() {
    let doc = br#"<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x "xxxxxxxxxx">]><w:document xmlns:w="w"><w:body><w:p><w:r><w:t>&x;</w:t></w:r></w:p></w:body></w:document>"#;
    let bytes = zip_of(&[("word/document.xml", doc)]);
    let err = preview_of(&extractor(), "dtd.docx", &bytes)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("XML DTD"), "{err}");

    let pres = br#"<?xml version="1.0"?><!DOCTYPE p SYSTEM "http://example.com/p.dtd"><p:presentation xmlns:p="p"/>"#;
    let bytes = zip_of(&[("ppt/presentation.xml", pres)]);
    let err = preview_of(&extractor(), "dtd.pptx", &bytes)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("XML DTD"), "{err}");
}

#[tokio::test]
async fn deeply_nested_xml_is_refused() {
    let mut doc = String::from(r#"<w:document xmlns:w="w"><w:body>"#);
    doc.push_str(&"<w:sdt><w:sdtContent>".repeat(50_000));
    doc.push_str(&"</w:sdtContent></w:sdt>".repeat(50_000));
    doc.push_str("</w:body></w:document>");
    let bytes = zip_of(&[("word/document.xml", doc.as_bytes())]);
    let err = preview_of(&extractor(), "deep.docx", &bytes)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("nested more than 256 levels"),
        "{err}"
    );
}

#[tokio::test]
async fn truncated_zips_are_errors() {
    let whole = std::fs::read(common::fixture("report.docx")).unwrap();
    let ex = extractor();
    for (name, cut) in [
        ("half.docx", whole.len() / 2),
        ("head.docx", 30),
        ("empty.docx", 0),
    ] {
        let err = preview_of(&ex, name, &whole[..cut]).await.unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the file is not a readable Word document"),
            "{name}: {err}"
        );
    }
    let sheet = std::fs::read(common::fixture("seed.xlsx")).unwrap();
    let err = preview_of(&ex, "half.xlsx", &sheet[..sheet.len() / 2])
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the file is not a readable Excel workbook"),
        "{err}"
    );
}

#[tokio::test]
async fn too_many_zip_entries_are_refused() {
    let names: Vec<String> = (0..10_001).map(|i| format!("f{i}")).collect();
    let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b""[..])).collect();
    let err = preview_of(&extractor(), "many.pptx", &zip_of(&entries))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("more than 10000 files inside"),
        "{err}"
    );
}

#[tokio::test]
async fn random_bytes_are_errors_for_every_reader() {
    // A fixed xorshift sequence: the same "random" file on every run.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let noise: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let ex = extractor();
    for name in [
        "noise.pdf",
        "noise.docx",
        "noise.xlsx",
        "noise.xls",
        "noise.pptx",
    ] {
        assert!(preview_of(&ex, name, &noise).await.is_err(), "{name}");
    }
    let mut pdfish = b"%PDF-1.7\n".to_vec();
    pdfish.extend_from_slice(&noise);
    assert!(preview_of(&ex, "noise2.pdf", &pdfish).await.is_err());
    // CSV and text readers refuse binary data.
    assert!(preview_of(&ex, "noise.csv", &noise).await.is_err());
}

#[tokio::test]
async fn pdf_with_a_cyclic_page_tree_ends() {
    let pdf = pdf_from_objects(&[
        b"<< /Type /Catalog /Pages 2 0 R >>",
        // The Pages node lists itself, and a second node that points back.
        b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
        b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Parent 2 0 R /Count 1 >>",
    ]);
    match preview_of(&extractor(), "cycle.pdf", &pdf).await {
        Ok(text) => assert_eq!(text, ""),
        Err(e) => assert!(e.to_string().contains("PDF"), "{e}"),
    }
}

#[tokio::test]
async fn pdf_with_recursive_forms_ends() {
    // A page that draws a form that draws itself.
    let content = b"/X1 Do";
    let form = b"BT /F1 12 Tf 72 700 Td (loop) Tj ET /X1 Do";
    let pdf = pdf_from_objects(&[
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /XObject << /X1 5 0 R >> /Font << /F1 6 0 R >> >> >>",
        format!("<< /Length {} >>\nstream\n{}\nendstream", content.len(), String::from_utf8_lossy(content)).as_bytes(),
        format!(
            "<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X1 5 0 R >> /Font << /F1 6 0 R >> >> /Length {} >>\nstream\n{}\nendstream",
            form.len(),
            String::from_utf8_lossy(form)
        )
        .as_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]);
    // Either the text budget stops the recursion, or the stack overflows in
    // the worker: both come back as an answer.
    match preview_of(&extractor(), "forms.pdf", &pdf).await {
        Ok(text) => assert!(
            text.starts_with("loop") && text.chars().count() <= 4000,
            "{text}"
        ),
        Err(e) => assert!(
            matches!(e, ExtractError::TooDeep | ExtractError::Crashed),
            "{e}"
        ),
    }
}

#[tokio::test]
async fn pdf_flate_bomb_hits_the_memory_limit() {
    // A content stream that inflates to 1 GiB of spaces; lopdf inflates a
    // stream whole, so only the worker's address-space limit stops it.
    let (deflated, _, _) = deflate_repeated(b"BT ", &vec![b' '; 1024 * 1024], 1024, b" ET");
    let mut zlib = vec![0x78, 0xDA];
    zlib.extend_from_slice(&deflated);
    zlib.extend_from_slice(&[0, 0, 0, 0]); // a wrong Adler-32: never reached
    let mut stream = format!(
        "<< /Length {} /Filter /FlateDecode >>\nstream\n",
        zlib.len()
    )
    .into_bytes();
    stream.extend_from_slice(&zlib);
    stream.extend_from_slice(b"\nendstream");
    let pdf = pdf_from_objects(&[
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        &stream,
    ]);
    let mut cfg = config();
    cfg.memory_bytes = 256 * 1024 * 1024;
    let err = preview_of(&Extractor::new(cfg), "bomb.pdf", &pdf)
        .await
        .unwrap_err();
    assert_eq!(err, ExtractError::OutOfMemory);
    assert_eq!(
        err.to_string(),
        "the document needs more memory than allowed"
    );
}

#[tokio::test]
async fn cpu_limit_stops_a_busy_worker() {
    // With the zip limits lifted, reading the 1 GiB bomb is seconds of CPU
    // work; the worker's own RLIMIT_CPU of one second ends it.
    let mut cfg = config();
    cfg.cpu_seconds = 1;
    cfg.limits.max_compression_ratio = u64::MAX / 2;
    cfg.limits.max_unpacked_bytes = 8 << 30;
    let started = Instant::now();
    let err = preview_of(&Extractor::new(cfg), "slow.docx", &docx_bomb())
        .await
        .unwrap_err();
    assert_eq!(err, ExtractError::TimedOut);
    assert_eq!(err.to_string(), "the document took too long to read");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let mut cfg = ferry_extract::ExtractorConfig::new("sh", ["-c", script.as_str()]);
    cfg.timeout = Duration::from_millis(500);
    let err = Extractor::new(cfg)
        .preview("test", std::path::Path::new("/tmp/x.docx"), "x.docx", 10)
        .await
        .unwrap_err();
    assert_eq!(err, ExtractError::TimedOut);
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let pid = pid.trim();
    // The grandchild is gone, or a zombie waiting for its new parent.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next().map(str::to_owned))
            });
        match state.as_deref() {
            None | Some("Z") | Some("X") => break,
            Some(s) if Instant::now() > deadline => {
                panic!("grandchild {pid} still alive in state {s}")
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

#[test]
fn the_worker_limits_itself_before_reading() {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    // RLIMIT_FSIZE is 0 once the worker has limited itself: with its
    // standard output a regular file instead of a pipe, writing the answer
    // kills it with SIGXFSZ. (Through a pipe, as the Extractor runs it, the
    // same answer goes through.)
    let dir = tempfile::tempdir().unwrap();
    let out = std::fs::File::create(dir.path().join("out")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferry-extract-worker"))
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let request = format!(
        r#"{{"op":"preview","path":"{}","file_name":"seed.xlsx","max_chars":100}}"#,
        common::fixture("seed.xlsx").display()
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(rustix::process::Signal::XFSZ.as_raw()),
        "{status:?}"
    );
    assert_eq!(std::fs::metadata(dir.path().join("out")).unwrap().len(), 0);
}

#[test]
fn the_worker_answers_a_bad_request_with_an_error() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferry-extract-worker"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"{not json").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let answer: ferry_extract::WorkerResponse = serde_json::from_slice(&out.stdout).unwrap();
    let ferry_extract::WorkerResponse::Error { error } = answer else {
        panic!("expected an error answer")
    };
    assert!(
        error
            .to_string()
            .starts_with("the document reader could not be run: the request was not understood"),
        "{error}"
    );
}

/// A compound file (the container of .xls) of a header, one FAT sector and one directory
/// sector, whose FAT sends the directory's chain back to itself: calamine would append that
/// sector forever. (Found by fuzzing the XLS reader.)
fn xls_with_a_looping_chain() -> Vec<u8> {
    const FAT_SECTOR: u32 = 0xFFFF_FFFD;
    const FREE: u32 = 0xFFFF_FFFF;
    let mut file = vec![0u8; 512 * 3];
    file[..8].copy_from_slice(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]);
    let put = |file: &mut Vec<u8>, at: usize, value: u32| {
        file[at..at + 4].copy_from_slice(&value.to_le_bytes())
    };
    file[24..26].copy_from_slice(&0x3Eu16.to_le_bytes()); // minor version
    file[26..28].copy_from_slice(&3u16.to_le_bytes()); // major version 3: 512-byte sectors
    file[28..30].copy_from_slice(&0xFFFEu16.to_le_bytes()); // little-endian
    file[30..32].copy_from_slice(&9u16.to_le_bytes()); // sector shift
    file[32..34].copy_from_slice(&6u16.to_le_bytes()); // mini sector shift
    put(&mut file, 44, 1); // one FAT sector
    put(&mut file, 48, 1); // the directory starts at sector 1
    put(&mut file, 56, 4096); // mini stream cutoff
    put(&mut file, 60, 0xFFFF_FFFE); // no mini FAT
    put(&mut file, 68, 0xFFFF_FFFE); // no DIFAT sectors
    put(&mut file, 76, 0); // the FAT is sector 0
    for i in 1..109 {
        put(&mut file, 76 + 4 * i, FREE);
    }
    // Sector 0 (file offset 512) is the FAT: sector 0 is a FAT sector, sector 1 is followed
    // by sector 1.
    put(&mut file, 512, FAT_SECTOR);
    put(&mut file, 516, 1);
    for i in 2..128 {
        put(&mut file, 512 + 4 * i, FREE);
    }
    file
}

#[tokio::test]
async fn an_xls_whose_sector_chain_loops_is_refused_before_it_is_read() {
    let ex = extractor();
    let err = preview_of(&ex, "loop.xls", &xls_with_a_looping_chain())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("loops back on itself"),
        "refused by the chain check, not by a limit: {err}"
    );
}

/// The same loop, with the FAT in a last sector that the file cuts short (calamine reads the
/// part that is there). Also found by fuzzing.
fn xls_with_a_looping_chain_in_a_short_fat() -> Vec<u8> {
    let mut file = xls_with_a_looping_chain();
    let put = |file: &mut Vec<u8>, at: usize, value: u32| {
        file[at..at + 4].copy_from_slice(&value.to_le_bytes())
    };
    put(&mut file, 48, 0); // the directory is sector 0
    put(&mut file, 76, 1); // the FAT is sector 1, the file's last, cut to 64 bytes
    file.truncate(512 * 2 + 64);
    put(&mut file, 1024, 0); // sector 0 is followed by sector 0
    put(&mut file, 1028, 0xFFFF_FFFD);
    for i in 2..16 {
        put(&mut file, 1024 + 4 * i, 0xFFFF_FFFF);
    }
    file
}

#[tokio::test]
async fn an_xls_whose_short_fat_loops_is_refused_too() {
    let ex = extractor();
    let err = preview_of(&ex, "short.xls", &xls_with_a_looping_chain_in_a_short_fat())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("loops back on itself"),
        "refused by the chain check, not by a limit: {err}"
    );
}

/// A header that lists the same FAT sector a hundred times: the table read through it would
/// be a hundred times the file. (Found by fuzzing.)
#[tokio::test]
async fn an_xls_whose_fat_lists_more_sectors_than_it_has_is_refused() {
    let mut file = xls_with_a_looping_chain();
    for i in 1..100 {
        file[76 + 4 * i..80 + 4 * i].copy_from_slice(&0u32.to_le_bytes());
    }
    let err = preview_of(&extractor(), "many.xls", &file)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("lists more sectors than the file holds"),
        "{err}"
    );
}

/// A few kilobytes declaring 100,000 × 100,000 pixels (30 GB decoded): refused by its header,
/// both for the upload's preview and for the model, before a pixel is decoded.
#[tokio::test]
async fn an_image_bomb_is_refused_by_its_declared_size() {
    let bomb = png_declaring(100_000, 100_000);
    assert!(bomb.len() < 8 * 1024, "the bomb is {} bytes", bomb.len());
    let ex = extractor();
    let err = preview_of(&ex, "bomb.png", &bomb).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the document is too large or too complex to read safely: the image declares \
         100000 × 100000 pixels, more than the 50 megapixels an image may have"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bomb.png", &bomb);
    let err = ex.model_image("test", &path).await.unwrap_err();
    assert!(err.to_string().contains("100000 × 100000 pixels"), "{err}");
}

/// Within the pixel limit but not decodable as declared (the rows stop early): a clear error
/// from the worker, not a crash.
#[tokio::test]
async fn a_truncated_image_is_an_error_for_the_model() {
    let short = png_declaring(4000, 4000);
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "short.png", &short);
    let err = extractor().model_image("test", &path).await.unwrap_err();
    assert!(err.to_string().contains("not a readable image"), "{err}");
}
