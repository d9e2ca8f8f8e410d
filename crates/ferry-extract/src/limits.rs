//! Reading limits: what a reader may consume of a document before it stops.
//!
//! These bound the work done *inside* a reader. The process limits (address
//! space, CPU time, wall clock, output size) live in [`crate::ExtractorConfig`]
//! and are the backstop when a library below us misbehaves.

use serde::{Deserialize, Serialize};
use std::io::Read;

use crate::error::ExtractError;

/// One mebibyte.
pub(crate) const MIB: u64 = 1024 * 1024;

/// Rows of a sheet or CSV file shown in a text preview, the header row
/// included ("first 20 rows").
pub const PREVIEW_ROWS: usize = 20;

/// Bounds applied while a document is being read.
///
/// Defaults suit ferry's 100 MiB upload limit; every field can be changed by
/// the embedding program and travels to the worker in its request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Largest number of entries a zip-based document (DOCX, XLSX, PPTX) may have.
    pub max_zip_entries: usize,
    /// Largest number of bytes all read zip entries may unpack to, together.
    pub max_unpacked_bytes: u64,
    /// Largest unpacked-to-packed ratio of one zip entry, checked once the
    /// entry has unpacked past [`Limits::ratio_grace_bytes`].
    pub max_compression_ratio: u64,
    /// Unpacked size below which an entry's ratio is not checked (small XML
    /// parts legitimately compress very well).
    pub ratio_grace_bytes: u64,
    /// Deepest XML element nesting a reader accepts.
    pub max_xml_depth: usize,
    /// Longest stretch of an XML part without a `<`: one text node or tag.
    /// XML parsers hold a whole text node in memory, so this bounds them.
    pub max_xml_run_bytes: u64,
    /// Largest file read whole into memory (PDF, legacy XLS).
    pub max_file_bytes: u64,
    /// Cells a spreadsheet reader visits in one sheet before it stops.
    pub max_sheet_cells: usize,
    /// Rows shown per table in an HTML rendering (sheets and CSV).
    pub html_rows: usize,
    /// Columns shown per table in an HTML rendering.
    pub html_columns: usize,
    /// Sheets shown in an HTML rendering of a workbook.
    pub html_sheets: usize,
    /// Characters kept of one table cell in an HTML rendering.
    pub html_cell_chars: usize,
    /// Size of the body of an HTML rendering; past it the rendering stops
    /// with a note.
    pub html_body_bytes: usize,
    /// Bytes of a text, code, Markdown or JSON file rendered as HTML.
    pub html_text_bytes: usize,
    /// Most pixels (width × height, as the header declares them) of an image that is read;
    /// a larger one is refused before anything is decoded.
    pub max_image_pixels: u64,
    /// Most memory the image decoder may allocate at once.
    pub max_image_decode_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_zip_entries: 10_000,
            max_unpacked_bytes: 256 * MIB,
            max_compression_ratio: 100,
            ratio_grace_bytes: 4 * MIB,
            max_xml_depth: 256,
            max_xml_run_bytes: 16 * MIB,
            max_file_bytes: 128 * MIB,
            max_sheet_cells: 2_000_000,
            html_rows: 1_000,
            html_columns: 100,
            html_sheets: 50,
            html_cell_chars: 2_000,
            html_body_bytes: 4 * MIB as usize,
            html_text_bytes: 2 * MIB as usize,
            // 50 megapixels: every camera's full resolution; 200 MB as 8-bit RGBA.
            max_image_pixels: 50_000_000,
            max_image_decode_bytes: 256 * MIB,
        }
    }
}

/// Human size for messages: "256 MiB", "4 KiB", "12 bytes".
pub(crate) fn human_bytes(n: u64) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= 1024 {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// Reads a whole file that a library needs in memory (PDF), up to the limit.
pub(crate) fn read_all<R: Read>(reader: R, limits: &Limits) -> Result<Vec<u8>, ExtractError> {
    let mut buf = Vec::new();
    reader
        .take(limits.max_file_bytes + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ExtractError::io(&e))?;
    if buf.len() as u64 > limits.max_file_bytes {
        return Err(ExtractError::limit(format!(
            "it is larger than {}",
            human_bytes(limits.max_file_bytes)
        )));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_for_people() {
        assert_eq!(human_bytes(256 * MIB), "256 MiB");
        assert_eq!(human_bytes(3 * MIB / 2), "1.5 MiB");
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(12), "12 bytes");
    }

    #[test]
    fn missing_fields_take_defaults() {
        let l: Limits = serde_json::from_str(r#"{"html_rows": 5}"#).unwrap();
        assert_eq!(l.html_rows, 5);
        assert_eq!(l.max_zip_entries, Limits::default().max_zip_entries);
    }
}
