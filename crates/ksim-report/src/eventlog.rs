//! The event log: every [`Record`] as one JSON line (`{"type":"PodCreated",...}`), written while
//! the engine runs and read back to re-render a report without re-running
//! ([`render_event_log`]).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use ksim_engine::record::{Observer, Record};

use crate::error::ReportError;
use crate::recorder::Recorder;
use crate::summary::Summary;

/// An [`Observer`] writing records as JSON Lines. I/O errors are kept (the first one) and
/// returned by [`EventLogWriter::finish`], since `Observer::record` cannot fail.
pub struct EventLogWriter<W: Write> {
    out: W,
    path: PathBuf,
    records: u64,
    error: Option<ReportError>,
}

impl EventLogWriter<BufWriter<File>> {
    /// Creates (truncates) `path`.
    pub fn create(path: &Path) -> Result<Self, ReportError> {
        let file = File::create(path).map_err(|e| ReportError::io(path, e))?;
        Ok(EventLogWriter::new(BufWriter::new(file), path))
    }
}

impl<W: Write> EventLogWriter<W> {
    /// Wraps any writer; `path` is only used to name it in errors.
    pub fn new(out: W, path: impl Into<PathBuf>) -> Self {
        EventLogWriter {
            out,
            path: path.into(),
            records: 0,
            error: None,
        }
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes and returns the writer, or the first error met.
    pub fn finish(mut self) -> Result<W, ReportError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out
            .flush()
            .map_err(|e| ReportError::io(&self.path, e))?;
        Ok(self.out)
    }

    fn write(&mut self, r: &Record) -> Result<(), ReportError> {
        serde_json::to_writer(&mut self.out, r).map_err(|source| ReportError::Json {
            path: self.path.clone(),
            source,
        })?;
        self.out
            .write_all(b"\n")
            .map_err(|e| ReportError::io(&self.path, e))
    }
}

impl<W: Write> Observer for EventLogWriter<W> {
    fn record(&mut self, r: &Record) {
        if self.error.is_some() {
            return;
        }
        match self.write(r) {
            Ok(()) => self.records += 1,
            Err(e) => self.error = Some(e),
        }
    }
}

/// Reads records back, one per non-blank line; errors name the file and line.
pub struct EventLogReader<R: BufRead> {
    input: R,
    path: PathBuf,
    line: u64,
    buf: String,
}

impl EventLogReader<BufReader<File>> {
    pub fn open(path: &Path) -> Result<Self, ReportError> {
        let file = File::open(path).map_err(|e| ReportError::io(path, e))?;
        Ok(EventLogReader::new(BufReader::new(file), path))
    }
}

impl<R: BufRead> EventLogReader<R> {
    pub fn new(input: R, path: impl Into<PathBuf>) -> Self {
        EventLogReader {
            input,
            path: path.into(),
            line: 0,
            buf: String::new(),
        }
    }
}

impl<R: BufRead> Iterator for EventLogReader<R> {
    type Item = Result<Record, ReportError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            self.line += 1;
            match self.input.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(ReportError::io(&self.path, e))),
            }
            let text = self.buf.trim();
            if text.is_empty() {
                continue;
            }
            return Some(
                serde_json::from_str(text).map_err(|source| ReportError::EventLog {
                    path: self.path.clone(),
                    line: self.line,
                    source,
                }),
            );
        }
    }
}

/// Re-renders a run's outputs into `out_dir` from a saved event log (`ksim report LOG --out
/// DIR`), atomically as a run writes them. Stops at the first bad line; a log that does not end
/// with the run's `RunEnded` record was cut off (the run was interrupted, or the file
/// truncated) and is refused rather than rendered as a complete-looking run.
pub fn render_event_log(log: &Path, out_dir: &Path) -> Result<Summary, ReportError> {
    render_event_log_with(log, out_dir, None)
}

/// [`render_event_log`] with an SLO to mark on the latency CDF (`ksim report --slo`), written
/// as the output's `slo.json`. Without one, the `slo.json` beside the log (the run's own) is
/// kept.
pub fn render_event_log_with(
    log: &Path,
    out_dir: &Path,
    slo: Option<&crate::SloFile>,
) -> Result<Summary, ReportError> {
    let staged = crate::staging::StagedDir::begin(out_dir)?;
    let mut rec = Recorder::to_dir(staged.path())?;
    let mut ended = false;
    let mut records = 0u64;
    for r in EventLogReader::open(log)? {
        let r = r?;
        if ended {
            return Err(ReportError::Invalid {
                path: log.to_path_buf(),
                message: format!(
                    "record {} comes after RunEnded: the file holds more than one run",
                    records + 1
                ),
            });
        }
        ended = matches!(r, Record::RunEnded { .. });
        records += 1;
        rec.record(&r);
    }
    if !ended {
        return Err(ReportError::Invalid {
            path: log.to_path_buf(),
            message: format!(
                "cut off: its {records} records do not end with the run's RunEnded record (the \
                 run was interrupted or the file truncated); nothing was written"
            ),
        });
    }
    // Re-rendering a run in its own folder must keep its log, which the swap would drop.
    let same_dir = match (log.parent().map(Path::canonicalize), out_dir.canonicalize()) {
        (Some(Ok(a)), Ok(b)) => a == b,
        _ => false,
    };
    if let (true, Some(name)) = (same_dir, log.file_name()) {
        let kept = staged.path().join(name);
        std::fs::copy(log, &kept).map_err(|e| ReportError::io(&kept, e))?;
    }
    let slo_path = staged.path().join(crate::SLO_FILE);
    match slo {
        Some(f) => std::fs::write(&slo_path, f.to_json()),
        None => match log.parent().map(|d| d.join(crate::SLO_FILE)) {
            Some(own) if own.is_file() => std::fs::copy(&own, &slo_path).map(|_| ()),
            _ => Ok(()),
        },
    }
    .map_err(|e| ReportError::io(&slo_path, e))?;
    let summary = rec.write_outputs(staged.path())?;
    staged.commit()?;
    Ok(summary)
}
