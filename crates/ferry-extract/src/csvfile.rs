//! CSV and TSV files, in the spreadsheet preview's style.
//!
//! Text preview: the first 20 records, the first printed as it is (it is
//! usually the header), the next as `Row 1: a | b | c` to `Row 19: ...`,
//! then `... (first 20 rows)` when the file has more records — the XLSX
//! format without the sheet name. The separator of a `.csv` file is
//! sniffed from its first line (comma, semicolon or tab); `.tsv` is tab.

use std::io::{BufRead, BufReader, Read};

use crate::error::ExtractError;
use crate::html::Body;
use crate::limits::{Limits, PREVIEW_ROWS};
use crate::sheet::{Grid, SheetView, table_html};
use crate::text::{LineSink, one_line};

const WHAT: &str = "CSV file";

/// Picks the separator that occurs most in the first line, outside quotes.
fn sniff(head: &[u8]) -> u8 {
    let mut counts = [(b',', 0usize), (b';', 0), (b'\t', 0)];
    let mut quoted = false;
    for &b in head {
        match b {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => break,
            _ if !quoted => {
                for (sep, n) in counts.iter_mut() {
                    if *sep == b {
                        *n += 1;
                    }
                }
            }
            _ => {}
        }
    }
    // Ties (and no separator at all) go to the comma.
    counts
        .iter()
        .fold(
            (b',', 0),
            |best, &(sep, n)| if n > best.1 { (sep, n) } else { best },
        )
        .0
}

fn read_grid<R: Read>(
    reader: R,
    tab: bool,
    max_rows: usize,
    max_cols: usize,
    limits: &Limits,
) -> Result<Option<SheetView>, ExtractError> {
    let mut buffered = BufReader::with_capacity(64 * 1024, reader.take(limits.max_file_bytes));
    let head = buffered.fill_buf().map_err(|e| ExtractError::io(&e))?;
    let head = head.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(head);
    let sep = if tab { b'\t' } else { sniff(head) };
    if head.contains(&0) {
        return Err(ExtractError::invalid(WHAT, "it contains binary data"));
    }
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(sep)
        .from_reader(buffered);
    let mut grid = Grid::new(max_rows, max_cols, limits.max_sheet_cells);
    let mut record = csv::ByteRecord::new();
    let mut index: u32 = 0;
    'records: loop {
        match csv.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(ExtractError::invalid(WHAT, e)),
        }
        // A record whose fields are all empty still takes its row.
        let mut any = false;
        for (col, field) in record.iter().enumerate() {
            let mut text = String::from_utf8_lossy(field);
            if index == 0 && col == 0 {
                text = match text.strip_prefix('\u{feff}') {
                    Some(rest) => rest.to_owned().into(),
                    None => text,
                };
            }
            let text = one_line(&text);
            any |= !text.is_empty();
            if !grid.add(index, col as u32, text) {
                break 'records;
            }
        }
        if !any && index == 0 {
            // Leading blank records do not count as the header.
            continue;
        }
        index = index.saturating_add(1);
    }
    Ok(grid.finish())
}

/// The text preview (see the module documentation).
pub(crate) fn preview<R: Read>(
    reader: R,
    tab: bool,
    max_chars: usize,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let mut sink = LineSink::new(max_chars);
    let Some(view) = read_grid(reader, tab, PREVIEW_ROWS, 100, limits)? else {
        return Ok(String::new());
    };
    view.write_lines(&mut sink, "");
    Ok(sink.finish())
}

/// The HTML body: one table, the first record as its header.
pub(crate) fn html_body<R: Read>(
    reader: R,
    tab: bool,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let mut body = Body::new(limits);
    // One more row than html_rows: the header is not counted as data.
    match read_grid(
        reader,
        tab,
        limits.html_rows + 1,
        limits.html_columns,
        limits,
    )? {
        Some(view) => table_html(&mut body, &view, limits, true),
        None => body.note("This file is empty."),
    }
    Ok(body.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_the_separator() {
        assert_eq!(sniff(b"a,b,c\n1;2"), b',');
        assert_eq!(sniff(b"a;b;\"x,y,z\"\n"), b';');
        assert_eq!(sniff(b"a\tb\tc"), b'\t');
        assert_eq!(sniff(b"single"), b',');
    }

    #[test]
    fn preview_matches_the_sheet_style() {
        let mut csv = String::from("\u{feff}Name,Qty\n");
        for i in 1..=25 {
            csv.push_str(&format!("item {i},{i}\n"));
        }
        let text = preview(csv.as_bytes(), false, 4000, &Limits::default()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Name | Qty");
        assert_eq!(lines[1], "Row 1: item 1 | 1");
        assert_eq!(lines[19], "Row 19: item 19 | 19");
        assert_eq!(lines[20], "... (first 20 rows)");
        assert_eq!(lines.len(), 21);
    }

    #[test]
    fn quoted_fields_and_short_files() {
        let text = preview(
            "a;b\n\"x;\ny\";2\n;\n".as_bytes(),
            false,
            4000,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(text, "a | b\nRow 1: x; y | 2");
    }

    #[test]
    fn html_escapes_cells() {
        let html = html_body(
            "h1,h2\n<b>x</b>,\"=HYPERLINK(\"\"javascript:1\"\")\"\n".as_bytes(),
            false,
            &Limits::default(),
        )
        .unwrap();
        assert!(html.contains("<th>h1</th><th>h2</th>"), "{html}");
        assert!(html.contains("<td>&lt;b&gt;x&lt;/b&gt;</td>"), "{html}");
        assert!(!html.contains("<b>"));
    }

    #[test]
    fn binary_is_refused() {
        assert!(preview(&b"PK\x03\x04\0\0"[..], false, 100, &Limits::default()).is_err());
    }
}
