//! Spreadsheets (XLSX through calamine's streaming cell reader, legacy XLS
//! through calamine's range reader) and the grid both fill.
//!
//! Text preview, per sheet, in workbook order, sheets separated by a blank
//! line (docs/reference/uploads.md):
//!
//! ```text
//! Sheet1: Revenue | Q1 | Q2 | Q3 | Q4
//! Row 1: North | 125000 | 132000 | 141000 | 156000
//! Row 2: South | 98000 | 103000 | 115000 | 122000
//! ... (first 20 rows)
//! ```
//!
//! "First 20 rows" counts the sheet's rows from its first non-empty row,
//! that row included: the line after the sheet name and `Row 1` to `Row 19`.
//! `... (first 20 rows)` appears only when the sheet has a non-empty row past
//! those. Rows keep their place: an empty row between two filled ones prints
//! as `Row N:`. Columns start at the first non-empty column of the rows
//! shown; empty cells print as empty strings and trailing empty cells are
//! dropped. A sheet with no values prints `Name: (empty)`.
//!
//! Why one file: one grid sits between two readers and two renderings: XLSX and XLS fill it with
//! the same cell formatting, and the text preview and the HTML table read it, so the placement
//! rules above (first non-empty row and column, rows kept in place, what is cut) are written once
//! for all four; a sheet as a search reads it is a module of its own.

use std::collections::BTreeMap;
use std::io::{Read, Seek};

use calamine::{Data, DataRef, ExcelDateTime, Reader, SheetType, Xls, XlsError, Xlsx, XlsxError};

use crate::error::ExtractError;
use crate::html::Body;
use crate::limits::{Limits, PREVIEW_ROWS};
use crate::package::Package;
use crate::text::{LineSink, one_line};

const XLSX: &str = "Excel workbook";
const XLS: &str = "Excel 97-2003 workbook";

/// Columns kept per row in a text preview.
const PREVIEW_COLUMNS: usize = 100;

/// The first rows of one sheet, positioned by sheet coordinates.
#[derive(Debug)]
pub(crate) struct Grid {
    max_rows: usize,
    max_cols: usize,
    max_cells: usize,
    first_row: Option<u32>,
    rows: BTreeMap<u32, BTreeMap<u32, String>>,
    cells_seen: usize,
    pub(crate) more_rows: bool,
    pub(crate) more_cols: bool,
    /// Whether rows past the kept ones are read on to be counted (within the cell budget).
    count_rest: bool,
    /// Rows with a value past the kept ones, counted when `count_rest`.
    rows_past: u64,
    last_row_past: Option<u32>,
}

/// A finished grid: dense rows starting at (`first_row`, `first_col`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SheetView {
    pub(crate) first_row: u32,
    pub(crate) first_col: u32,
    pub(crate) rows: Vec<Vec<String>>,
    pub(crate) more_rows: bool,
    pub(crate) more_cols: bool,
    /// Rows with a value past the ones kept, when the grid counted them
    /// ([`Grid::counting_rest`]); a lower bound when the cell budget ran out.
    pub(crate) rows_past: u64,
}

impl Grid {
    pub(crate) fn new(max_rows: usize, max_cols: usize, max_cells: usize) -> Self {
        Grid {
            max_rows: max_rows.max(1),
            max_cols: max_cols.max(1),
            max_cells,
            first_row: None,
            rows: BTreeMap::new(),
            cells_seen: 0,
            more_rows: false,
            more_cols: false,
            count_rest: false,
            rows_past: 0,
            last_row_past: None,
        }
    }

    /// Reads on past the kept rows, to count the rows with a value there.
    pub(crate) fn counting_rest(self) -> Self {
        Grid {
            count_rest: true,
            ..self
        }
    }

    /// Adds one cell; returns false when reading can stop (a row past the
    /// shown ones, or the cell budget spent).
    pub(crate) fn add(&mut self, row: u32, col: u32, text: String) -> bool {
        self.cells_seen += 1;
        if self.cells_seen > self.max_cells {
            self.more_rows = true;
            return false;
        }
        if text.is_empty() {
            return true;
        }
        let first = *self.first_row.get_or_insert(row);
        if row < first {
            // Out of order: rows are normally stored top to bottom. Keep the
            // earlier row and drop what no longer fits.
            self.first_row = Some(row);
            let past_last = row.saturating_add(self.max_rows as u32);
            let dropped = self.rows.split_off(&past_last);
            self.more_rows |= !dropped.is_empty();
        } else if u64::from(row) >= u64::from(first) + self.max_rows as u64 {
            self.more_rows = true;
            if self.count_rest && self.last_row_past != Some(row) {
                self.rows_past += 1;
                self.last_row_past = Some(row);
            }
            return self.count_rest;
        }
        let cells = self.rows.entry(row).or_default();
        if cells.len() >= self.max_cols && !cells.contains_key(&col) {
            self.more_cols = true;
            return true;
        }
        cells.insert(col, text);
        true
    }

    pub(crate) fn finish(self) -> Option<SheetView> {
        let first_row = self.first_row?;
        let first_col = self
            .rows
            .values()
            .filter_map(|r| r.keys().next())
            .min()
            .copied()?;
        let last_row = *self.rows.keys().next_back()?;
        let mut more_cols = self.more_cols;
        let mut rows = Vec::with_capacity((last_row - first_row + 1) as usize);
        for r in first_row..=last_row {
            let mut out: Vec<String> = Vec::new();
            if let Some(cells) = self.rows.get(&r) {
                for (&c, text) in cells {
                    let idx = (c - first_col) as usize;
                    if idx >= self.max_cols {
                        more_cols = true;
                        break;
                    }
                    if out.len() <= idx {
                        out.resize(idx + 1, String::new());
                    }
                    out[idx].clone_from(text);
                }
            }
            rows.push(out);
        }
        Some(SheetView {
            first_row,
            first_col,
            rows,
            more_rows: self.more_rows,
            more_cols,
            rows_past: self.rows_past,
        })
    }
}

/// One sheet's name and view (`None` when it has no values).
pub(crate) type Sheet = (String, Option<SheetView>);

/// Reads the sheets of an XLSX workbook, handing each to `emit` until it
/// returns false.
pub(crate) fn read_xlsx<R: Read + Seek>(
    reader: R,
    limits: &Limits,
    grid: impl Fn() -> Grid,
    mut emit: impl FnMut(Sheet) -> bool,
) -> Result<(), ExtractError> {
    // calamine opens the zip on its own; it is first inflated whole through
    // the limits, so calamine only ever sees an archive known to be sane.
    let mut pkg = Package::open(reader, XLSX, limits)?;
    pkg.check_all()?;
    let reader = pkg.into_inner()?;
    let mut wb = Xlsx::new(reader).map_err(xlsx_error)?;
    let names: Vec<String> = wb
        .sheets_metadata()
        .iter()
        .filter(|s| s.typ == SheetType::WorkSheet)
        .map(|s| s.name.clone())
        .collect();
    for name in names {
        let mut grid = grid();
        let mut cells = wb.worksheet_cells_reader(&name).map_err(xlsx_error)?;
        while let Some(cell) = cells.next_cell().map_err(xlsx_error)? {
            let (row, col) = cell.get_position();
            if !grid.add(row, col, format_ref(cell.get_value())) {
                break;
            }
        }
        drop(cells);
        if !emit((name, grid.finish())) {
            break;
        }
    }
    Ok(())
}

/// Reads the sheets of a legacy XLS workbook. calamine decodes the whole
/// workbook when it opens it; the process limits bound that, and a compound
/// file whose sector chains loop is refused before it is opened.
pub(crate) fn read_xls<R: Read + Seek>(
    mut reader: R,
    limits: &Limits,
    grid: impl Fn() -> Grid,
    mut emit: impl FnMut(Sheet) -> bool,
) -> Result<(), ExtractError> {
    let len = reader
        .seek(std::io::SeekFrom::End(0))
        .map_err(|e| ExtractError::io(&e))?;
    reader
        .seek(std::io::SeekFrom::Start(0))
        .map_err(|e| ExtractError::io(&e))?;
    if len > limits.max_file_bytes {
        return Err(ExtractError::limit(format!(
            "it is larger than {}",
            crate::limits::human_bytes(limits.max_file_bytes)
        )));
    }
    crate::compound::check_chains(&mut reader, len, XLS)?;
    let mut wb = Xls::new(reader).map_err(xls_error)?;
    let names: Vec<String> = wb
        .sheets_metadata()
        .iter()
        .filter(|s| s.typ == SheetType::WorkSheet)
        .map(|s| s.name.clone())
        .collect();
    for name in names {
        let range = wb.worksheet_range(&name).map_err(xls_error)?;
        let mut grid = grid();
        if let Some((r0, c0)) = range.start() {
            for (r, c, value) in range.used_cells() {
                if !grid.add(r0 + r as u32, c0 + c as u32, format_data(value)) {
                    break;
                }
            }
        }
        if !emit((name, grid.finish())) {
            break;
        }
    }
    Ok(())
}

fn xlsx_error(e: XlsxError) -> ExtractError {
    match e {
        XlsxError::Io(io) => crate::package::io_to_extract(XLSX, io),
        XlsxError::Zip(z) => crate::package::zip_error(XLSX, z),
        other => ExtractError::invalid(XLSX, other),
    }
}

fn xls_error(e: XlsError) -> ExtractError {
    match e {
        XlsError::Password => ExtractError::Encrypted,
        XlsError::Io(io) => ExtractError::io(&io),
        other => ExtractError::invalid(XLS, other),
    }
}

/// Cell text for a streamed XLSX cell.
fn format_ref(v: &DataRef<'_>) -> String {
    match v {
        DataRef::Int(i) => i.to_string(),
        DataRef::Float(f) => format_float(*f),
        DataRef::String(s) => one_line(s),
        DataRef::SharedString(s) => one_line(s),
        DataRef::Bool(b) => format_bool(*b),
        DataRef::DateTime(d) => format_datetime(d),
        DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => one_line(s),
        DataRef::Error(e) => e.to_string(),
        DataRef::Empty => String::new(),
    }
}

/// Cell text for an XLS range cell.
fn format_data(v: &Data) -> String {
    match v {
        Data::Int(i) => i.to_string(),
        Data::Float(f) => format_float(*f),
        Data::String(s) => one_line(s),
        Data::Bool(b) => format_bool(*b),
        Data::DateTime(d) => format_datetime(d),
        Data::DateTimeIso(s) | Data::DurationIso(s) => one_line(s),
        Data::Error(e) => e.to_string(),
        Data::Empty => String::new(),
    }
}

fn format_bool(b: bool) -> String {
    if b { "TRUE" } else { "FALSE" }.to_owned()
}

/// Whole numbers as whole numbers (`125000`, not `125000.0`); other numbers
/// in their shortest round-trip form (`0.1`, `1e-7`, `1e300`).
pub(crate) fn format_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        // Exact: every whole number below 2^53 is representable as i64.
        return format!("{}", f as i64);
    }
    format!("{f:?}")
}

/// Dates as ISO 8601: `2021-01-01` for a date at midnight,
/// `2021-01-01T10:30:00` otherwise, `10:30:00` for a time of day alone;
/// durations as `[h]:mm:ss` (`250:10:10`).
pub(crate) fn format_datetime(d: &ExcelDateTime) -> String {
    let v = d.as_f64();
    if d.is_duration() {
        let total = (v * 86_400.0).round();
        let sign = if total < 0.0 { "-" } else { "" };
        let total = total.abs() as u64;
        return format!(
            "{sign}{}:{:02}:{:02}",
            total / 3600,
            total / 60 % 60,
            total % 60
        );
    }
    let (y, mo, day, h, mi, s, ms) = d.to_ymd_hms_milli();
    let time = if ms > 0 {
        format!("{h:02}:{mi:02}:{s:02}.{ms:03}")
    } else {
        format!("{h:02}:{mi:02}:{s:02}")
    };
    if (0.0..1.0).contains(&v) {
        time
    } else if (h, mi, s, ms) == (0, 0, 0, 0) {
        format!("{y:04}-{mo:02}-{day:02}")
    } else {
        format!("{y:04}-{mo:02}-{day:02}T{time}")
    }
}

fn sheet_lines(sink: &mut LineSink, name: &str, view: Option<SheetView>) {
    let name = one_line(name);
    match view {
        Some(view) => view.write_lines(sink, &format!("{name}: ")),
        None => sink.line(&format!("{name}: (empty)")),
    }
}

impl SheetView {
    /// Writes the rows as preview lines, as every table-like preview (sheets, CSV) shows them:
    /// cells joined by ` | ` with trailing empty cells dropped, the first row as the header
    /// after `header_prefix`, the others as `Row N: …`, and a closing note when rows were
    /// left out.
    pub(crate) fn write_lines(&self, sink: &mut LineSink, header_prefix: &str) {
        for (i, row) in self.rows.iter().enumerate() {
            let mut cells: &[String] = row;
            while let [rest @ .., last] = cells
                && last.is_empty()
            {
                cells = rest;
            }
            let joined = cells.join(" | ");
            let line = if i == 0 {
                format!("{header_prefix}{joined}")
            } else {
                format!("Row {i}: {joined}")
            };
            sink.line(line.trim_end());
            if sink.full() {
                return;
            }
        }
        if self.more_rows {
            sink.line(&format!("... (first {PREVIEW_ROWS} rows)"));
        }
    }
}

/// Runs a calamine-based reading. calamine answers some damaged files with a
/// panic (an out-of-range slice in its compound-file reader, for one)
/// rather than an error; the panic becomes an ordinary error here.
pub(crate) fn guarded<T>(
    legacy: bool,
    read: impl FnOnce() -> Result<T, ExtractError>,
) -> Result<T, ExtractError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|_| {
        Err(ExtractError::invalid(
            if legacy { XLS } else { XLSX },
            "its structure could not be understood",
        ))
    })
}

/// The text preview of an XLSX (`legacy == false`) or XLS workbook.
pub(crate) fn preview<R: Read + Seek>(
    reader: R,
    legacy: bool,
    max_chars: usize,
    limits: &Limits,
) -> Result<String, ExtractError> {
    guarded(legacy, || preview_inner(reader, legacy, max_chars, limits))
}

fn preview_inner<R: Read + Seek>(
    reader: R,
    legacy: bool,
    max_chars: usize,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let mut sink = LineSink::new(max_chars);
    let mut any = false;
    let preview_grid = || Grid::new(PREVIEW_ROWS, PREVIEW_COLUMNS, limits.max_sheet_cells);
    let each = |(name, view): Sheet| {
        any = true;
        sink.blank();
        sheet_lines(&mut sink, &name, view);
        !sink.full()
    };
    if legacy {
        read_xls(reader, limits, preview_grid, each)?;
    } else {
        read_xlsx(reader, limits, preview_grid, each)?;
    }
    if !any {
        sink.line("(no sheets)");
    }
    Ok(sink.finish())
}

/// Spreadsheet column letters: 0 → A, 25 → Z, 26 → AA.
pub(crate) fn column_name(mut col: u32) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'A' + (col % 26) as u8);
        if col < 26 {
            break;
        }
        col = col / 26 - 1;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Cuts one cell's text for the HTML table.
fn cell_text(text: &str, limits: &Limits) -> String {
    crate::text::clip(text.to_owned(), limits.html_cell_chars)
}

/// One `<table>` with column letters and row numbers, plus notes on what was
/// left out.
pub(crate) fn table_html(body: &mut Body, view: &SheetView, limits: &Limits, header_row: bool) {
    let width = view.rows.iter().map(Vec::len).max().unwrap_or(0);
    body.raw("<table>\n");
    let mut rows = view.rows.iter().enumerate();
    if header_row {
        // CSV: the first record is the header.
        body.raw("<thead><tr>");
        if let Some((_, first)) = rows.next() {
            for i in 0..width {
                body.element("th", &cell_text(first.get(i).map_or("", |s| s), limits));
            }
        }
        body.raw("</tr></thead>\n<tbody>\n");
    } else {
        body.raw("<thead><tr><th></th>");
        for i in 0..width {
            body.element("th", &column_name(view.first_col + i as u32));
        }
        body.raw("</tr></thead>\n<tbody>\n");
    }
    for (i, row) in rows {
        body.raw("<tr>");
        if !header_row {
            body.raw("<th class=\"ferry-rownum\">");
            body.text(&(u64::from(view.first_row) + i as u64 + 1).to_string());
            body.raw("</th>");
        }
        for c in 0..width {
            body.element("td", &cell_text(row.get(c).map_or("", |s| s), limits));
        }
        body.raw("</tr>\n");
        if body.full() {
            body.cut = true;
            break;
        }
    }
    body.raw("</tbody></table>\n");
    if view.more_rows || view.more_cols {
        let what = match (view.more_rows, view.more_cols) {
            (true, true) => format!(
                "the first {} rows and {} columns",
                limits.html_rows, limits.html_columns
            ),
            (true, false) => format!("the first {} rows", limits.html_rows),
            _ => format!("the first {} columns", limits.html_columns),
        };
        body.note(&format!("This table is larger; {what} are shown."));
    }
}

/// The HTML body: one heading and table per sheet.
pub(crate) fn html_body<R: Read + Seek>(
    reader: R,
    legacy: bool,
    limits: &Limits,
) -> Result<String, ExtractError> {
    guarded(legacy, || html_body_inner(reader, legacy, limits))
}

fn html_body_inner<R: Read + Seek>(
    reader: R,
    legacy: bool,
    limits: &Limits,
) -> Result<String, ExtractError> {
    let mut body = Body::new(limits);
    let mut count = 0usize;
    let mut more_sheets = false;
    let html_grid = || {
        Grid::new(
            limits.html_rows,
            limits.html_columns,
            limits.max_sheet_cells,
        )
    };
    let each = |(name, view): Sheet| {
        if count == limits.html_sheets {
            more_sheets = true;
            return false;
        }
        count += 1;
        body.element("h2", &name);
        match view {
            Some(view) => table_html(&mut body, &view, limits, false),
            None => body.note("This sheet is empty."),
        }
        !body.full()
    };
    if legacy {
        read_xls(reader, limits, html_grid, each)?;
    } else {
        read_xlsx(reader, limits, html_grid, each)?;
    }
    if more_sheets {
        body.note(&format!(
            "This workbook has more sheets; the first {} are shown.",
            limits.html_sheets
        ));
    }
    if count == 0 {
        body.note("This workbook has no sheets.");
    }
    if body.full() {
        body.cut = true;
    }
    Ok(body.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use calamine::ExcelDateTimeType;

    #[test]
    fn numbers_print_as_people_write_them() {
        assert_eq!(format_float(125000.0), "125000");
        assert_eq!(format_float(-3.0), "-3");
        assert_eq!(format_float(-0.0), "0");
        assert_eq!(format_float(0.1), "0.1");
        assert_eq!(format_float(1234.5678), "1234.5678");
        assert_eq!(format_float(1e-7), "1e-7");
        assert_eq!(format_float(1e20), "1e20");
        assert_eq!(format_float(f64::NAN), "NaN");
    }

    #[test]
    fn dates_print_as_iso_8601() {
        let dt = |v| ExcelDateTime::new(v, ExcelDateTimeType::DateTime, false);
        assert_eq!(format_datetime(&dt(44197.0)), "2021-01-01");
        assert_eq!(format_datetime(&dt(44197.4375)), "2021-01-01T10:30:00");
        assert_eq!(format_datetime(&dt(0.5)), "12:00:00");
        let dur = ExcelDateTime::new(10.632_060_185_185_185, ExcelDateTimeType::TimeDelta, false);
        assert_eq!(format_datetime(&dur), "255:10:10");
    }

    #[test]
    fn column_letters() {
        assert_eq!(column_name(0), "A");
        assert_eq!(column_name(25), "Z");
        assert_eq!(column_name(26), "AA");
        assert_eq!(column_name(701), "ZZ");
        assert_eq!(column_name(702), "AAA");
        assert_eq!(column_name(16383), "XFD");
    }

    #[test]
    fn grid_keeps_positions_and_stops_past_the_rows() {
        let mut g = Grid::new(3, 10, 1000);
        assert!(g.add(2, 1, "h1".into()));
        assert!(g.add(2, 3, "h3".into()));
        assert!(g.add(3, 1, String::new()));
        assert!(g.add(4, 2, "x".into()));
        assert!(!g.add(5, 1, "past".into()));
        let v = g.finish().unwrap();
        assert_eq!(v.first_row, 2);
        assert_eq!(v.first_col, 1);
        assert_eq!(
            v.rows,
            vec![
                vec!["h1".to_string(), String::new(), "h3".into()],
                vec![],
                vec![String::new(), "x".into()],
            ]
        );
        assert!(v.more_rows);
    }

    #[test]
    fn grid_budget_and_columns() {
        let mut g = Grid::new(3, 2, 5);
        for c in 0..4 {
            g.add(0, c, "v".into());
        }
        assert!(g.add(1, 0, "w".into()));
        assert!(!g.add(1, 1, "w".into()));
        let v = g.finish().unwrap();
        assert!(v.more_cols && v.more_rows);
        assert_eq!(v.rows[0].len(), 2);
        assert!(Grid::new(3, 3, 10).finish().is_none());
    }

    #[test]
    fn sheet_lines_follow_the_seed_format() {
        let view = SheetView {
            first_row: 0,
            first_col: 0,
            rows: vec![
                vec!["Revenue".into(), "Q1".into()],
                vec!["North".into(), "125000".into(), String::new()],
                vec![],
            ],
            more_rows: true,
            more_cols: false,
            rows_past: 0,
        };
        let mut sink = LineSink::new(4000);
        sheet_lines(&mut sink, "Sheet1", Some(view));
        sink.blank();
        sheet_lines(&mut sink, "Empty", None);
        assert_eq!(
            sink.finish(),
            "Sheet1: Revenue | Q1\nRow 1: North | 125000\nRow 2:\n... (first 20 rows)\n\nEmpty: (empty)"
        );
    }
}
