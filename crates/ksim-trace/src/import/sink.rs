//! Where importers put their events: an external sort into a native trace.
//!
//! Importers read their inputs as they come (the openb re-sampled lists are ordered by name, an
//! audit log by completion, Borg by file part), so events arrive out of time order. The sink
//! keeps them in memory up to [`SPILL_EVENTS`] events, then writes a sorted run to a scratch file
//! next to the output, and at the end merges the runs into `trace.jsonl`. Memory stays bounded
//! whatever the trace size. Equal times keep the order in which the importer pushed them.
//!
//! Times are pushed as signed microseconds; [`EventSink::finish`] subtracts a base (0, or the
//! earliest time for formats whose clock starts anywhere, such as audit logs).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use ksim_engine::{InputEvent, SimDuration, SimTime, TimedEvent};
use serde_json::Value;

use crate::check;
use crate::error::TraceError;
use crate::native::{event_to_json, NativeWriter};

/// Events held in memory before a sorted run is spilled to disk.
pub const SPILL_EVENTS: usize = 400_000;

struct Item {
    at: i64,
    seq: u64,
    /// The event's JSON without `at`, starting with `{"kind":`.
    body: String,
}

/// An external sorter of events into a native trace.
pub struct EventSink {
    items: Vec<Item>,
    runs: Vec<PathBuf>,
    scratch: PathBuf,
    seq: u64,
    min_at: Option<i64>,
    by_kind: BTreeMap<&'static str, u64>,
}

fn body_of(ev: &InputEvent) -> String {
    let te = TimedEvent {
        at: SimTime::ZERO,
        event: ev.clone(),
    };
    let mut v = event_to_json(&te);
    if let Value::Object(m) = &mut v {
        m.shift_remove("at");
    }
    v.to_string()
}

impl EventSink {
    /// A sink whose scratch files go into `scratch_dir` (created when first needed).
    pub fn new(scratch_dir: &Path) -> EventSink {
        EventSink {
            items: Vec::new(),
            runs: Vec::new(),
            scratch: scratch_dir.to_path_buf(),
            seq: 0,
            min_at: None,
            by_kind: BTreeMap::new(),
        }
    }

    /// Adds an event at `at_micros` (any sign; see [`EventSink::finish`]).
    pub fn push(&mut self, at_micros: i64, ev: InputEvent) -> Result<(), TraceError> {
        *self.by_kind.entry(ev.kind()).or_default() += 1;
        self.min_at = Some(self.min_at.map_or(at_micros, |m| m.min(at_micros)));
        self.items.push(Item {
            at: at_micros,
            seq: self.seq,
            body: body_of(&ev),
        });
        self.seq += 1;
        if self.items.len() >= SPILL_EVENTS {
            self.spill()?;
        }
        Ok(())
    }

    /// Events pushed so far, by kind.
    pub fn counts(&self) -> &BTreeMap<&'static str, u64> {
        &self.by_kind
    }

    /// The earliest time pushed.
    pub fn min_time(&self) -> Option<i64> {
        self.min_at
    }

    fn spill(&mut self) -> Result<(), TraceError> {
        std::fs::create_dir_all(&self.scratch).map_err(|e| TraceError::io(&self.scratch, e))?;
        let path = self.scratch.join(format!("run-{}.txt", self.runs.len()));
        let f = File::create(&path).map_err(|e| TraceError::io(&path, e))?;
        let mut w = BufWriter::new(f);
        self.items.sort_by_key(|i| (i.at, i.seq));
        for i in self.items.drain(..) {
            writeln!(w, "{}\t{}\t{}", i.at, i.seq, i.body).map_err(|e| TraceError::io(&path, e))?;
        }
        w.flush().map_err(|e| TraceError::io(&path, e))?;
        self.runs.push(path);
        Ok(())
    }

    /// Writes the sorted trace to `out`, subtracting `base` microseconds from every time.
    /// Returns the number of events written.
    pub fn finish(mut self, out: &Path, base: i64) -> Result<u64, TraceError> {
        let mut w = NativeWriter::create(out)?;
        let write = |w: &mut NativeWriter<_>, at: i64, body: &str| -> Result<(), TraceError> {
            let t = at.saturating_sub(base);
            let d = check::check_duration(SimDuration(t))
                .map_err(|m| TraceError::at_field(&out.display().to_string(), "at", m))?;
            let line = format!(
                "{{\"at\":\"{}\",{}",
                check::format_duration(d),
                body.strip_prefix('{').unwrap_or(body)
            );
            w.write_line(&line)
        };
        if self.runs.is_empty() {
            self.items.sort_by_key(|i| (i.at, i.seq));
            for i in &self.items {
                write(&mut w, i.at, &i.body)?;
            }
        } else {
            if !self.items.is_empty() {
                self.spill()?;
            }
            let mut readers = Vec::new();
            for p in &self.runs {
                let f = File::open(p).map_err(|e| TraceError::io(p, e))?;
                readers.push((p.clone(), BufReader::new(f).lines()));
            }
            let mut heap = BinaryHeap::new();
            let mut heads: Vec<Option<String>> = vec![None; readers.len()];
            let parse = |s: &str| -> Option<(i64, u64, usize)> {
                let mut it = s.splitn(3, '\t');
                let at = it.next()?.parse().ok()?;
                let seq = it.next()?.parse().ok()?;
                let off = s.len() - it.next()?.len();
                Some((at, seq, off))
            };
            let mut pull = |i: usize,
                            heap: &mut BinaryHeap<Reverse<(i64, u64, usize, usize)>>,
                            heads: &mut Vec<Option<String>>|
             -> Result<(), TraceError> {
                let (p, r) = &mut readers[i];
                if let Some(line) = r.next() {
                    let line = line.map_err(|e| TraceError::io(p, e))?;
                    let (at, seq, off) = parse(&line).ok_or_else(|| {
                        TraceError::at_field(&p.display().to_string(), "", "corrupt scratch run")
                    })?;
                    heap.push(Reverse((at, seq, i, off)));
                    heads[i] = Some(line);
                }
                Ok(())
            };
            for i in 0..heads.len() {
                pull(i, &mut heap, &mut heads)?;
            }
            while let Some(Reverse((at, _, i, off))) = heap.pop() {
                if let Some(line) = heads[i].take() {
                    write(&mut w, at, &line[off..])?;
                }
                pull(i, &mut heap, &mut heads)?;
            }
            for p in &self.runs {
                let _ = std::fs::remove_file(p);
            }
            let _ = std::fs::remove_dir(&self.scratch);
        }
        w.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::NativeReader;

    #[test]
    fn sorts_in_memory_and_across_runs_identically() {
        let dir = tempfile::tempdir().unwrap();
        let evs: Vec<(i64, InputEvent)> = (0..1000)
            .map(|i| {
                (
                    ((i * 7919) % 113) as i64 * 1_000_000 + 5_000_000,
                    InputEvent::RemoveNode {
                        name: format!("n{i}"),
                    },
                )
            })
            .collect();
        let mut small = EventSink::new(&dir.path().join("s1"));
        for (t, e) in &evs {
            small.push(*t, e.clone()).unwrap();
        }
        let a = dir.path().join("a.jsonl");
        assert_eq!(small.finish(&a, 5_000_000).unwrap(), 1000);
        // Force spilling with tiny runs.
        let mut big = EventSink::new(&dir.path().join("s2"));
        for (k, (t, e)) in evs.iter().enumerate() {
            big.push(*t, e.clone()).unwrap();
            if k % 97 == 0 {
                big.spill().unwrap();
            }
        }
        let b = dir.path().join("b.jsonl");
        big.finish(&b, 5_000_000).unwrap();
        let ta = std::fs::read_to_string(&a).unwrap();
        assert_eq!(ta, std::fs::read_to_string(&b).unwrap());
        let read: Vec<_> = NativeReader::open(&a)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(read.len(), 1000);
        assert_eq!(read[0].at, SimTime::ZERO);
        assert!(!dir.path().join("s2").exists());
    }
}
