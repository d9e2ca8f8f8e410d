//! A sheet as a search reads it ([`crate::searchable`]): its first rows as a Markdown table,
//! with a line counting what was left out.

use std::io::{Read, Seek};

use crate::error::ExtractError;
use crate::limits::Limits;
use crate::sheet::{Grid, Sheet, SheetView, guarded, read_xls, read_xlsx};
use crate::text::one_line;

/// Each sheet of an XLSX (`legacy == false`) or XLS workbook as a search reads it, handed to
/// `emit` with its name until it returns false: its first `max_rows` rows from its first
/// non-empty one as a Markdown table ([`SheetView::markdown`]), with the rows left out counted.
pub(crate) fn tables<R: Read + Seek>(
    reader: R,
    legacy: bool,
    max_rows: usize,
    limits: &Limits,
    mut emit: impl FnMut(String, Option<SheetView>) -> bool,
) -> Result<(), ExtractError> {
    let grid = || Grid::new(max_rows, limits.html_columns, limits.max_sheet_cells).counting_rest();
    let each = |(name, view): Sheet| emit(name, view);
    guarded(legacy, || {
        if legacy {
            read_xls(reader, limits, grid, each)
        } else {
            read_xlsx(reader, limits, grid, each)
        }
    })
}

impl SheetView {
    /// The rows as a Markdown table: the first row as its header, then the separator, then
    /// the others, one line each (a cell's line breaks become spaces, its `|` is escaped);
    /// below it, a line saying how many rows (or that columns) were left out.
    pub(crate) fn markdown(&self) -> String {
        let width = self.rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let mut out = String::new();
        for (i, row) in self.rows.iter().enumerate() {
            out.push('|');
            for col in 0..width {
                let cell = row.get(col).map(|c| one_line(c)).unwrap_or_default();
                out.push(' ');
                out.push_str(&cell.replace('|', "\\|"));
                out.push_str(" |");
            }
            out.push('\n');
            if i == 0 {
                out.push_str(&"| --- ".repeat(width));
                out.push_str("|\n");
            }
        }
        match (self.rows_past, self.more_rows) {
            (0, false) => {}
            (0, true) => out.push_str("(more rows are not shown)\n"),
            (1, _) => out.push_str("(1 more row is not shown)\n"),
            (n, _) => out.push_str(&format!("({n} more rows are not shown)\n")),
        }
        if self.more_cols {
            out.push_str("(more columns are not shown)\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sheet_reads_as_a_markdown_table_with_what_was_left_out_counted() {
        let view = SheetView {
            first_row: 0,
            first_col: 0,
            rows: vec![
                vec!["Fruit".into(), "Note".into()],
                vec!["Apple".into(), "red|green".into(), "x".into()],
                vec![],
                vec!["Banana".into(), "one\ntwo".into()],
            ],
            more_rows: true,
            more_cols: false,
            rows_past: 2,
        };
        assert_eq!(
            view.markdown(),
            "| Fruit | Note |  |\n\
             | --- | --- | --- |\n\
             | Apple | red\\|green | x |\n\
             |  |  |  |\n\
             | Banana | one two |  |\n\
             (2 more rows are not shown)\n"
        );
        let mut grid = Grid::new(2, 10, 100).counting_rest();
        for (row, col) in [(0, 0), (1, 0), (2, 0), (2, 1), (3, 0), (7, 0)] {
            assert!(grid.add(row, col, "v".into()));
        }
        let view = grid.finish().unwrap();
        assert_eq!((view.rows.len(), view.rows_past), (2, 3));
    }
}
