//! Opening inputs and outputs. Inputs compressed with gzip are recognised by their magic bytes
//! (not their name), so `trace.jsonl.gz` and a gzip file without the suffix both stream through
//! a decoder; outputs are compressed when their name ends in `.gz`.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

use crate::error::TraceError;

/// A boxed line reader, `Send` so a source can move to the thread that runs the simulation.
pub type InputReader = Box<dyn BufRead + Send>;

/// Opens a file for streaming, decompressing gzip transparently.
pub fn open_input(path: &Path) -> Result<InputReader, TraceError> {
    let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let head = reader.fill_buf().map_err(|e| TraceError::io(path, e))?;
    if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
        // Multi-member so that concatenated gzip files (`cat a.gz b.gz`) read whole.
        Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(Box::new(reader))
    }
}

/// Reads a whole (small) file as UTF-8 text, decompressing gzip. Used for documents that are
/// parsed whole (nodes files, scenarios, scheduler configurations), never for traces.
pub fn read_text(path: &Path) -> Result<String, TraceError> {
    let mut r = open_input(path)?;
    let mut s = String::new();
    r.read_to_string(&mut s)
        .map_err(|e| TraceError::io(path, e))?;
    Ok(s)
}

/// Reads a whole (small) binary file, decompressing gzip.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, TraceError> {
    let mut r = open_input(path)?;
    let mut v = Vec::new();
    r.read_to_end(&mut v).map_err(|e| TraceError::io(path, e))?;
    Ok(v)
}

/// A file being written, plain or gzip. Call [`Output::finish`]: it writes the gzip trailer and
/// reports the errors that a drop would swallow.
pub struct Output {
    inner: OutputInner,
}

enum OutputInner {
    Plain(BufWriter<File>),
    Gz(GzEncoder<BufWriter<File>>),
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.inner {
            OutputInner::Plain(w) => w.write(buf),
            OutputInner::Gz(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.inner {
            OutputInner::Plain(w) => w.flush(),
            OutputInner::Gz(w) => w.flush(),
        }
    }
}

impl Output {
    /// Flushes everything (and the gzip trailer) to the file.
    pub fn finish(self) -> std::io::Result<()> {
        match self.inner {
            OutputInner::Plain(mut w) => w.flush(),
            OutputInner::Gz(g) => g.finish()?.flush(),
        }
    }
}

/// Creates (truncates) a file for writing, gzip-compressed when the name ends in `.gz`.
pub fn create_output(path: &Path) -> Result<Output, TraceError> {
    let file = File::create(path).map_err(|e| TraceError::io(path, e))?;
    let w = BufWriter::with_capacity(1 << 16, file);
    let inner = if path.extension().is_some_and(|e| e == "gz") {
        OutputInner::Gz(GzEncoder::new(w, Compression::default()))
    } else {
        OutputInner::Plain(w)
    };
    Ok(Output { inner })
}

/// The name a file is reported under in errors: the path as the user gave it.
pub fn display_name(path: &Path) -> String {
    path.display().to_string()
}

/// Whether a path names a CSV trace (`.csv` or `.csv.gz`).
pub fn is_csv(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    name.ends_with(".csv") || name.ends_with(".csv.gz")
}

/// Whether a trace file holds at least one event line: a line that is not blank or a `#`
/// comment (and, in a CSV, not the header). Reads only up to the first such line, so a run can
/// warn about an empty trace without reading a large one twice.
pub fn trace_has_events(path: &Path) -> Result<bool, TraceError> {
    let mut r = open_input(path)?;
    let mut skip_header = is_csv(path);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| TraceError::io(path, e))?;
        if n == 0 {
            return Ok(false);
        }
        let text = String::from_utf8_lossy(&buf);
        let t = text.trim_start_matches('\u{feff}').trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if skip_header {
            skip_header = false;
            continue;
        }
        return Ok(true);
    }
}

/// The longest line a line-based input (native trace, audit log, Borg 2019 JSON) may have:
/// far above any real event (a pod object is a few KiB), low enough that a file without line
/// breaks cannot exhaust memory.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// What [`read_line_capped`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
    Eof,
    Line,
    /// The line was longer than [`MAX_LINE_BYTES`]; it was skipped and `buf` is empty.
    TooLong,
}

/// `read_until(b'\n')` that holds at most [`MAX_LINE_BYTES`] + 1 bytes of one line.
pub fn read_line_capped<R: BufRead>(src: &mut R, buf: &mut Vec<u8>) -> std::io::Result<LineRead> {
    let n = src
        .by_ref()
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(LineRead::Eof);
    }
    if buf.len() <= MAX_LINE_BYTES {
        return Ok(LineRead::Line);
    }
    // Skip the rest of the line without keeping it.
    if buf.last() != Some(&b'\n') {
        loop {
            let avail = src.fill_buf()?;
            if avail.is_empty() {
                break;
            }
            match avail.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    src.consume(i + 1);
                    break;
                }
                None => {
                    let l = avail.len();
                    src.consume(l);
                }
            }
        }
    }
    buf.clear();
    Ok(LineRead::TooLong)
}

/// The message for a line over [`MAX_LINE_BYTES`].
pub fn line_too_long() -> String {
    format!(
        "line longer than {} MiB (the input line limit): is this a JSON Lines file?",
        MAX_LINE_BYTES >> 20
    )
}

#[cfg(test)]
mod line_tests {
    use super::*;

    #[test]
    fn a_line_over_the_limit_is_skipped_whole() {
        let mut text = vec![b'x'; MAX_LINE_BYTES + 10];
        text.extend_from_slice(b"\nnext\n");
        let mut r = std::io::Cursor::new(text);
        let mut buf = Vec::new();
        assert_eq!(
            read_line_capped(&mut r, &mut buf).unwrap(),
            LineRead::TooLong
        );
        assert!(buf.is_empty());
        assert_eq!(read_line_capped(&mut r, &mut buf).unwrap(), LineRead::Line);
        assert_eq!(buf, b"next\n");
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf).unwrap(), LineRead::Eof);
    }
}
