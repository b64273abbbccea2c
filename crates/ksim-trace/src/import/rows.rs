//! Streaming CSV rows for the importers, with typed field access whose errors name the file,
//! the line and the column (`batch_task.csv:17: plan_cpu: "x" is not a number`).

use std::path::Path;

use csv::StringRecord;

use crate::error::TraceError;
use crate::io::{display_name, open_input, InputReader};

/// A CSV file read row by row.
pub struct Rows {
    rdr: csv::Reader<InputReader>,
    pub file: String,
    rec: StringRecord,
    /// Column names, from the header or given by the schema.
    pub columns: Vec<String>,
    /// Rows read (excluding the header).
    pub count: u64,
}

impl Rows {
    /// Opens a CSV file. With `header`, the first row names the columns (names are trimmed);
    /// otherwise `schema` does. Rows may have a different number of fields: [`Row`] checks.
    pub fn open(path: &Path, header: bool, schema: &[&str]) -> Result<Rows, TraceError> {
        let rdr = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(open_input(path)?);
        let mut rows = Rows {
            rdr,
            file: display_name(path),
            rec: StringRecord::new(),
            columns: schema.iter().map(|s| s.to_string()).collect(),
            count: 0,
        };
        if header {
            match rows.next_record()? {
                Some(_) => rows.columns = rows.rec.iter().map(|s| s.trim().to_string()).collect(),
                None => {
                    return Err(TraceError::at_line(
                        &rows.file,
                        1,
                        "",
                        "empty file: expected a header",
                    ))
                }
            }
            rows.count = 0;
        }
        Ok(rows)
    }

    /// Reads the first row of a file without consuming the file (to recognise its layout).
    pub fn peek_first(path: &Path) -> Result<Vec<String>, TraceError> {
        let mut r = Rows::open(path, false, &[])?;
        Ok(match r.next_record()? {
            Some(_) => r.rec.iter().map(|s| s.trim().to_string()).collect(),
            None => Vec::new(),
        })
    }

    fn next_record(&mut self) -> Result<Option<()>, TraceError> {
        match self.rdr.read_record(&mut self.rec) {
            Ok(true) => {
                self.count += 1;
                Ok(Some(()))
            }
            Ok(false) => Ok(None),
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                Err(TraceError::at_line(
                    &self.file,
                    line,
                    "",
                    format!("malformed CSV: {e}"),
                ))
            }
        }
    }

    /// The next row, `None` at the end.
    pub fn next_row(&mut self) -> Result<Option<Row<'_>>, TraceError> {
        if self.next_record()?.is_none() {
            return Ok(None);
        }
        let line = self.rec.position().map(|p| p.line()).unwrap_or(0);
        let row = Row {
            file: &self.file,
            line,
            rec: &self.rec,
            columns: &self.columns,
        };
        if !self.columns.is_empty() && row.rec.len() != self.columns.len() {
            return Err(row.err(
                "",
                format!(
                    "expected {} fields ({}), found {}",
                    self.columns.len(),
                    self.columns.join(","),
                    row.rec.len()
                ),
            ));
        }
        Ok(Some(row))
    }
}

/// One row.
pub struct Row<'a> {
    pub file: &'a str,
    pub line: u64,
    rec: &'a StringRecord,
    columns: &'a [String],
}

impl Row<'_> {
    fn col(&self, i: usize) -> &str {
        self.columns.get(i).map(String::as_str).unwrap_or("")
    }

    /// An error about column `i` (or the whole row when `i` is out of range).
    pub fn err_at(&self, i: usize, msg: impl Into<String>) -> TraceError {
        TraceError::at_line(self.file, self.line, self.col(i), msg)
    }

    pub fn err(&self, field: &str, msg: impl Into<String>) -> TraceError {
        TraceError::at_line(self.file, self.line, field, msg)
    }

    /// The raw text of column `i` ("" when absent).
    pub fn str(&self, i: usize) -> &str {
        self.rec.get(i).unwrap_or("")
    }

    /// An integer, or `None` when empty.
    pub fn opt_i64(&self, i: usize) -> Result<Option<i64>, TraceError> {
        let s = self.str(i);
        if s.is_empty() {
            return Ok(None);
        }
        s.parse::<i64>().map(Some).or_else(|_| {
            // Some exports write integers as "12.0".
            match s.parse::<f64>() {
                Ok(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18 => {
                    Ok(Some(f as i64))
                }
                _ => Err(self.err_at(i, format!("{s:?} is not an integer"))),
            }
        })
    }

    pub fn i64(&self, i: usize) -> Result<i64, TraceError> {
        self.opt_i64(i)?
            .ok_or_else(|| self.err_at(i, "required value is empty"))
    }

    /// A non-negative integer.
    pub fn u64(&self, i: usize) -> Result<u64, TraceError> {
        let v = self.i64(i)?;
        u64::try_from(v).map_err(|_| self.err_at(i, format!("{v} is negative")))
    }

    pub fn opt_f64(&self, i: usize) -> Result<Option<f64>, TraceError> {
        let s = self.str(i);
        if s.is_empty() {
            return Ok(None);
        }
        match s.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Some(f)),
            _ => Err(self.err_at(i, format!("{s:?} is not a number"))),
        }
    }

    pub fn f64(&self, i: usize) -> Result<f64, TraceError> {
        self.opt_f64(i)?
            .ok_or_else(|| self.err_at(i, "required value is empty"))
    }
}
