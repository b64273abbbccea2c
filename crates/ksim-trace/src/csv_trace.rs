//! The compact CSV trace, for traces too large to carry a whole Pod object per line. One row per
//! event, in non-decreasing time, with a header naming the columns (any order; `at`, `kind` and
//! `name` are required, the rest optional):
//!
//! | column | meaning |
//! |---|---|
//! | `at` | time: a Go-style duration (`1m30s`) or seconds (`90`, `1.5`) |
//! | `kind` | `CreatePod`, `DeletePod`, `CompletePod`, `AddNode` or `RemoveNode` (updates need whole objects: use the JSON Lines trace) |
//! | `namespace` | pod namespace; empty = `default` |
//! | `name` | pod or node name |
//! | `cpu`, `memory` | quantities (`500m`, `2Gi`): a pod's requests, a node's capacity |
//! | `gpu` | whole GPUs, as the extended resource `nvidia.com/gpu` |
//! | `priority` | pod priority (integer); empty = none |
//! | `run_for` | pod run time; empty = until deleted or the horizon |
//! | `labels` | `key=value;key=value`: pod or node labels |
//! | `node_selector` | `key=value;...`: the pod's `spec.nodeSelector` |
//! | `extra` | `resource=quantity;...`: more requests (pod) or capacity (node), e.g. `ephemeral-storage=10Gi;pods=64` |
//!
//! A pod becomes one container named `main` with those requests; a node gets `pods: 110` unless
//! `extra` sets it, the label `kubernetes.io/hostname: <name>` unless `labels` sets it, and
//! allocatable = capacity. Defaulting and quantity checks are those of the native trace. Lines
//! starting with `#` are comments; fields are trimmed. Errors name file, line and column.

use std::io::{BufRead, Write};
use std::path::Path;

use ksim_api::defaults::{default_node, default_pod};
use ksim_api::{Container, Labels, Node, Pod, Quantity, ResourceList};
use ksim_engine::{
    EventSource, InputEvent, SimDuration, SimTime, SourceError, SourcePos, TimedEvent,
};

use crate::check;
use crate::error::TraceError;
use crate::io::{create_output, display_name, open_input, InputReader, Output};

/// The resource name the `gpu` column maps to.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// Pod capacity a CSV node gets unless `extra` sets `pods` (kubelet's default `maxPods`).
pub const DEFAULT_MAX_PODS: i64 = 110;

/// Every column, in the order the writer writes them.
pub const COLUMNS: [&str; 12] = [
    "at",
    "kind",
    "namespace",
    "name",
    "cpu",
    "memory",
    "gpu",
    "priority",
    "run_for",
    "labels",
    "node_selector",
    "extra",
];

#[derive(Default, Clone, Copy)]
struct Cols {
    idx: [Option<usize>; 12],
}

impl Cols {
    fn get<'a>(&self, rec: &'a csv::StringRecord, col: usize) -> &'a str {
        self.idx[col].and_then(|i| rec.get(i)).unwrap_or("")
    }
}

/// A streaming reader of CSV traces.
pub struct CsvReader<R: std::io::Read> {
    rdr: csv::Reader<R>,
    file: String,
    cols: Option<Cols>,
    rec: csv::StringRecord,
    last: SimTime,
    failed: bool,
    /// The file name shared by every event's [`SourcePos`], and the last event's line.
    file_name: std::sync::Arc<str>,
    last_line: u64,
}

impl CsvReader<InputReader> {
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        Ok(CsvReader::new(&display_name(path), open_input(path)?))
    }
}

fn csv_builder() -> csv::ReaderBuilder {
    let mut b = csv::ReaderBuilder::new();
    b.has_headers(false)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .flexible(false);
    b
}

impl<R: BufRead> CsvReader<R> {
    pub fn new(file: &str, src: R) -> Self {
        CsvReader {
            rdr: csv_builder().from_reader(src),
            file: file.to_string(),
            cols: None,
            rec: csv::StringRecord::new(),
            last: SimTime::ZERO,
            failed: false,
            file_name: file.into(),
            last_line: 0,
        }
    }

    fn csv_err(&self, e: csv::Error) -> TraceError {
        let line = e.position().map(|p| p.line()).unwrap_or(0);
        TraceError::at_line(&self.file, line, "", format!("malformed CSV: {e}"))
    }

    fn header(&mut self) -> Result<Cols, TraceError> {
        if let Some(c) = self.cols {
            return Ok(c);
        }
        let mut hdr = csv::StringRecord::new();
        let got = self
            .rdr
            .read_record(&mut hdr)
            .map_err(|e| self.csv_err(e))?;
        let line = hdr.position().map(|p| p.line()).unwrap_or(1);
        if !got {
            return Err(TraceError::at_line(
                &self.file,
                1,
                "",
                "empty file: expected a header line such as `at,kind,namespace,name,cpu,memory`",
            ));
        }
        let mut cols = Cols::default();
        for (i, h) in hdr.iter().enumerate() {
            let Some(c) = COLUMNS.iter().position(|c| *c == h) else {
                let named = ksim_api::json::plausible_name(h)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("column {}", i + 1));
                return Err(TraceError::at_line(
                    &self.file,
                    line,
                    named,
                    format!("unknown column; expected some of {}", COLUMNS.join(",")),
                ));
            };
            if cols.idx[c].is_some() {
                return Err(TraceError::at_line(&self.file, line, h, "duplicate column"));
            }
            cols.idx[c] = Some(i);
        }
        for req in ["at", "kind", "name"] {
            let c = COLUMNS.iter().position(|c| *c == req).unwrap_or(0);
            if cols.idx[c].is_none() {
                return Err(TraceError::at_line(
                    &self.file,
                    line,
                    req,
                    "required column is missing from the header",
                ));
            }
        }
        self.cols = Some(cols);
        Ok(cols)
    }

    /// The next event and its line, without the ordering check; after a row error the next
    /// call goes on with the following row.
    pub fn next_unordered(&mut self) -> Option<Result<(u64, TimedEvent), TraceError>> {
        if self.failed {
            return None;
        }
        let cols = match self.header() {
            Ok(c) => c,
            Err(e) => {
                self.failed = true;
                return Some(Err(e));
            }
        };
        match self.rdr.read_record(&mut self.rec) {
            Ok(false) => None,
            Ok(true) => {
                let line = self.rec.position().map(|p| p.line()).unwrap_or(0);
                Some(
                    parse_row(&cols, &self.rec)
                        .map(|ev| (line, ev))
                        .map_err(|(f, m)| TraceError::at_line(&self.file, line, f, m)),
                )
            }
            Err(e) => {
                // An I/O error would repeat forever: stop there. A malformed row is skipped.
                if e.is_io_error() {
                    self.failed = true;
                }
                Some(Err(self.csv_err(e)))
            }
        }
    }

    /// The next event, checking time order; stops at the first error.
    pub fn read_event(&mut self) -> Result<Option<TimedEvent>, TraceError> {
        match self.next_unordered() {
            None => Ok(None),
            Some(Err(e)) => {
                self.failed = true;
                Err(e)
            }
            Some(Ok((line, ev))) => {
                if ev.at < self.last {
                    self.failed = true;
                    return Err(TraceError::at_line(
                        &self.file,
                        line,
                        "at",
                        format!(
                            "time {} is before the previous row's {}; a trace must be in time order",
                            ev.at, self.last
                        ),
                    ));
                }
                self.last = ev.at;
                self.last_line = line;
                Ok(Some(ev))
            }
        }
    }
}

impl<R: BufRead> EventSource for CsvReader<R> {
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
        self.read_event().map_err(SourceError::from)
    }
    fn last_position(&self) -> Option<SourcePos> {
        (self.last_line > 0).then(|| SourcePos {
            file: self.file_name.clone(),
            line: self.last_line,
        })
    }
}

impl<R: BufRead> Iterator for CsvReader<R> {
    type Item = Result<TimedEvent, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.read_event().transpose()
    }
}

type Problem = (String, String);

/// Parses `key=value;key=value` (empty → empty map).
fn parse_pairs(col: &str, s: &str) -> Result<Labels, Problem> {
    let mut out = Labels::new();
    for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err((col.into(), format!("{part:?} is not key=value")));
        };
        let k = k.trim();
        if k.is_empty() {
            return Err((col.into(), format!("{part:?} has an empty key")));
        }
        out.insert(k.to_string(), v.trim().to_string());
    }
    Ok(out)
}

fn quantity(col: &str, name: &str, s: &str) -> Result<Quantity, Problem> {
    let q = Quantity::parse(s).map_err(|e| (col.to_string(), e.to_string()))?;
    check::check_quantity(name, &q).map_err(|m| (col.to_string(), m))?;
    Ok(q)
}

fn resources(cols: &Cols, rec: &csv::StringRecord) -> Result<ResourceList, Problem> {
    let mut list = ResourceList::new();
    for (c, name) in [(4, "cpu"), (5, "memory")] {
        let s = cols.get(rec, c);
        if !s.is_empty() {
            list.insert(name.to_string(), quantity(COLUMNS[c], name, s)?);
        }
    }
    let gpu = cols.get(rec, 6);
    if !gpu.is_empty() {
        let n: i64 = gpu.parse().map_err(|_| {
            (
                "gpu".to_string(),
                format!("{gpu:?} is not a whole number of GPUs"),
            )
        })?;
        list.insert(
            GPU_RESOURCE.into(),
            quantity("gpu", GPU_RESOURCE, &n.to_string())?,
        );
    }
    for (k, v) in parse_pairs("extra", cols.get(rec, 11))? {
        let q = quantity("extra", &k, &v)?;
        list.insert(k, q);
    }
    Ok(list)
}

fn parse_row(cols: &Cols, rec: &csv::StringRecord) -> Result<TimedEvent, Problem> {
    let at_s = cols.get(rec, 0);
    if at_s.is_empty() {
        return Err(("at".into(), "required".into()));
    }
    let at = SimTime(
        check::check_duration(SimDuration::parse(at_s).map_err(|m| ("at".to_string(), m))?)
            .map_err(|m| ("at".to_string(), m))?
            .0,
    );
    let kind = cols.get(rec, 1);
    let name = cols.get(rec, 3).to_string();
    if name.is_empty() {
        return Err(("name".into(), "required".into()));
    }
    let namespace = match cols.get(rec, 2) {
        "" => "default".to_string(),
        ns => ns.to_string(),
    };
    let pod_only = |c: usize| -> Result<(), Problem> {
        if cols.get(rec, c).is_empty() {
            Ok(())
        } else {
            Err((COLUMNS[c].into(), format!("is not used by kind {kind}")))
        }
    };
    let event = match kind {
        "CreatePod" => {
            let mut pod = Pod::default();
            pod.metadata.name = name;
            pod.metadata.namespace = namespace;
            pod.metadata.labels = parse_pairs("labels", cols.get(rec, 9))?;
            pod.spec.node_selector = parse_pairs("node_selector", cols.get(rec, 10))?;
            let prio = cols.get(rec, 7);
            if !prio.is_empty() {
                pod.spec.priority = Some(prio.parse().map_err(|_| {
                    ("priority".to_string(), format!("{prio:?} is not an integer"))
                })?);
            }
            let mut c = Container {
                name: "main".into(),
                ..Container::default()
            };
            c.resources.requests = resources(cols, rec)?;
            pod.spec.containers.push(c);
            default_pod(&mut pod);
            let rf = cols.get(rec, 8);
            let run_for = if rf.is_empty() {
                None
            } else {
                Some(
                    check::check_duration(
                        SimDuration::parse(rf).map_err(|m| ("run_for".to_string(), m))?,
                    )
                    .map_err(|m| ("run_for".to_string(), m))?,
                )
            };
            InputEvent::CreatePod {
                pod: Box::new(pod),
                run_for,
            }
        }
        "DeletePod" | "CompletePod" => {
            for c in [4, 5, 6, 7, 8, 9, 10, 11] {
                pod_only(c)?;
            }
            if kind == "DeletePod" {
                InputEvent::DeletePod { namespace, name }
            } else {
                InputEvent::CompletePod { namespace, name }
            }
        }
        "AddNode" => {
            for c in [2, 7, 8, 10] {
                pod_only(c)?;
            }
            let mut node = Node::default();
            node.metadata.labels = parse_pairs("labels", cols.get(rec, 9))?;
            node.metadata
                .labels
                .entry("kubernetes.io/hostname".into())
                .or_insert_with(|| name.clone());
            node.metadata.name = name;
            let mut cap = resources(cols, rec)?;
            cap.entry("pods".into())
                .or_insert_with(|| Quantity::from_value(DEFAULT_MAX_PODS));
            node.status.capacity = cap;
            default_node(&mut node);
            InputEvent::AddNode {
                node: Box::new(node),
            }
        }
        "RemoveNode" => {
            for c in [2, 4, 5, 6, 7, 8, 9, 10, 11] {
                pod_only(c)?;
            }
            InputEvent::RemoveNode { name }
        }
        "UpdatePod" | "UpdateNode" => {
            return Err((
                "kind".into(),
                format!("{kind} needs a whole object; use the JSON Lines trace for updates"),
            ))
        }
        other => {
            return Err((
                "kind".into(),
                format!(
                    "unknown kind {other:?}; expected CreatePod, DeletePod, CompletePod, AddNode or RemoveNode"
                ),
            ))
        }
    };
    Ok(TimedEvent { at, event })
}

fn pairs_to_string(l: &Labels) -> String {
    l.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// A writer of CSV traces. It refuses events the compact form cannot carry exactly (updates,
/// pods with more than requests, labels, node selector and priority): every written row reads
/// back to the same event.
pub struct CsvWriter<W: Write> {
    w: csv::Writer<W>,
    file: String,
    last: SimTime,
    rows: u64,
}

impl CsvWriter<Output> {
    pub fn create(path: &Path) -> Result<Self, TraceError> {
        CsvWriter::new(&display_name(path), create_output(path)?)
    }

    pub fn finish(self) -> Result<u64, TraceError> {
        let file = self.file.clone();
        let rows = self.rows;
        let out = self
            .w
            .into_inner()
            .map_err(|e| TraceError::at_field(&file, "", e.to_string()))?;
        out.finish()
            .map_err(|e| TraceError::io(Path::new(&file), e))?;
        Ok(rows)
    }
}

impl<W: Write> CsvWriter<W> {
    pub fn new(file: &str, out: W) -> Result<Self, TraceError> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(COLUMNS)
            .map_err(|e| TraceError::at_field(file, "", e.to_string()))?;
        Ok(CsvWriter {
            w,
            file: file.to_string(),
            last: SimTime::ZERO,
            rows: 0,
        })
    }

    /// The row for an event, or why it cannot be written compactly.
    pub fn row(ev: &TimedEvent) -> Result<[String; 12], String> {
        let mut r: [String; 12] = Default::default();
        r[0] = check::format_duration(SimDuration(ev.at.0));
        r[1] = ev.event.kind().to_string();
        let put_resources = |r: &mut [String; 12], list: &ResourceList| {
            let mut extra = Labels::new();
            for (k, q) in list {
                match k.as_str() {
                    "cpu" => r[4] = q.as_str().to_string(),
                    "memory" => r[5] = q.as_str().to_string(),
                    GPU_RESOURCE if q.milli_value() % 1000 == 0 => r[6] = q.value().to_string(),
                    _ => {
                        extra.insert(k.clone(), q.as_str().to_string());
                    }
                }
            }
            r[11] = pairs_to_string(&extra);
        };
        match &ev.event {
            InputEvent::CreatePod { pod, run_for } => {
                r[2] = pod.metadata.namespace.clone();
                r[3] = pod.metadata.name.clone();
                if let Some(c) = pod.spec.containers.first() {
                    put_resources(&mut r, &c.resources.requests);
                }
                r[7] = pod.spec.priority.map(|p| p.to_string()).unwrap_or_default();
                r[8] = run_for.map(check::format_duration).unwrap_or_default();
                r[9] = pairs_to_string(&pod.metadata.labels);
                r[10] = pairs_to_string(&pod.spec.node_selector);
            }
            InputEvent::DeletePod { namespace, name }
            | InputEvent::CompletePod { namespace, name } => {
                r[2] = namespace.clone();
                r[3] = name.clone();
            }
            InputEvent::AddNode { node } => {
                r[3] = node.metadata.name.clone();
                put_resources(&mut r, &node.status.capacity);
                r[9] = pairs_to_string(&node.metadata.labels);
            }
            InputEvent::RemoveNode { name } => r[3] = name.clone(),
            InputEvent::UpdatePod { .. }
            | InputEvent::UpdateNode { .. }
            | InputEvent::FailNode { .. }
            | InputEvent::RecoverNode { .. }
            | InputEvent::CreateObject { .. }
            | InputEvent::UpdateObject { .. }
            | InputEvent::DeleteObject { .. } => {
                return Err(format!(
                    "{} cannot be written as CSV; use the JSON Lines trace",
                    ev.event.kind()
                ))
            }
        }
        // Check the row reads back to the same event, so nothing is silently lost.
        let mut rec = csv::StringRecord::new();
        for f in &r {
            rec.push_field(f);
        }
        let mut cols = Cols::default();
        for (i, slot) in cols.idx.iter_mut().enumerate() {
            *slot = Some(i);
        }
        let back = parse_row(&cols, &rec).map_err(|(f, m)| format!("{f}: {m}"))?;
        if back != *ev {
            return Err(format!(
                "{} {:?} has fields the CSV form cannot carry (only requests, labels, node selector, priority and run time); use the JSON Lines trace",
                ev.event.kind(),
                r[3]
            ));
        }
        Ok(r)
    }

    /// Appends one event.
    pub fn write_event(&mut self, ev: &TimedEvent) -> Result<(), TraceError> {
        let line = self.rows + 2;
        if ev.at < self.last {
            return Err(TraceError::at_line(
                &self.file,
                line,
                "at",
                format!("event at {} written after one at {}", ev.at, self.last),
            ));
        }
        let row = Self::row(ev).map_err(|m| TraceError::at_line(&self.file, line, "", m))?;
        self.w
            .write_record(&row)
            .map_err(|e| TraceError::at_line(&self.file, line, "", e.to_string()))?;
        self.last = ev.at;
        self.rows += 1;
        Ok(())
    }

    pub fn into_inner(self) -> Result<W, TraceError> {
        let file = self.file.clone();
        self.w
            .into_inner()
            .map_err(|e| TraceError::at_field(&file, "", e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<TimedEvent>, TraceError> {
        CsvReader::new("t.csv", text.as_bytes()).collect()
    }

    #[test]
    fn reads_rows_and_round_trips() {
        let text =
            "at,kind,namespace,name,cpu,memory,gpu,priority,run_for,labels,node_selector,extra\n\
# nodes first\n\
0,AddNode,,n1,8,32Gi,2,,,zone=a,,pods=64\n\
1.5,CreatePod,,p1,500m,1Gi,,100,10m,app=web;tier=fe,zone=a,ephemeral-storage=1Gi\n\
2s,DeletePod,ns,p2,,,,,,,,\n\
3,CompletePod,,p1,,,,,,,,\n\
1h,RemoveNode,,n1,,,,,,,,\n";
        let evs = read(text).unwrap();
        assert_eq!(evs.len(), 5);
        let InputEvent::AddNode { node } = &evs[0].event else {
            panic!()
        };
        assert_eq!(node.status.allocatable["pods"].value(), 64);
        assert_eq!(node.status.capacity[GPU_RESOURCE].value(), 2);
        assert_eq!(node.metadata.labels["kubernetes.io/hostname"], "n1");
        let InputEvent::CreatePod { pod, run_for } = &evs[1].event else {
            panic!()
        };
        assert_eq!(pod.metadata.namespace, "default");
        assert_eq!(pod.spec.priority, Some(100));
        assert_eq!(pod.spec.node_selector["zone"], "a");
        assert_eq!(run_for.unwrap(), SimDuration::from_secs(600));
        let mut w = CsvWriter::new("o.csv", Vec::new()).unwrap();
        for e in &evs {
            w.write_event(e).unwrap();
        }
        let out = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(read(&out).unwrap(), evs);
    }

    #[test]
    fn a_subset_of_columns_is_enough() {
        let evs = read("kind,name,at,cpu\nCreatePod,a,0,1\n").unwrap();
        assert_eq!(evs.len(), 1);
    }

    #[test]
    fn errors_name_line_and_column() {
        let cases = [
            (
                "at,kind,name,cpu\n0,CreatePod,a,lots\n",
                "t.csv:2: cpu: quantity \"lots\"",
            ),
            (
                "at,kind,name,cpu\n0,CreatePod,a,-1\n",
                "t.csv:2: cpu: quantity \"-1\" is negative",
            ),
            (
                "at,kind,name\n5,RemoveNode,a\n4,RemoveNode,b\n",
                "t.csv:3: at: time 4s is before",
            ),
            ("at,kind,name,colour\n", "t.csv:1: colour: unknown column"),
            ("at,kind,name\n0,Explode,a\n", "t.csv:2: kind: unknown kind"),
            (
                "at,kind,name\n0,UpdateNode,a\n",
                "t.csv:2: kind: UpdateNode needs a whole object",
            ),
            ("at,kind,name\n0,RemoveNode\n", "t.csv:2: malformed CSV"),
            (
                "at,kind,name,run_for\n0,CreatePod,a,soon\n",
                "t.csv:2: run_for: invalid duration",
            ),
            (
                "at,kind,name,cpu\n0,DeletePod,a,1\n",
                "t.csv:2: cpu: is not used by kind DeletePod",
            ),
            ("at,kind\n", "t.csv:1: name: required column"),
        ];
        for (text, want) in cases {
            let err = read(text).unwrap_err().to_string();
            assert!(err.starts_with(want), "{text:?}\n got {err}\nwant {want}");
        }
    }

    #[test]
    fn writer_refuses_what_it_cannot_carry() {
        let mut pod = Pod::default();
        pod.metadata.name = "p".into();
        pod.spec.containers.push(Container::default());
        pod.spec.containers.push(Container::default());
        default_pod(&mut pod);
        let ev = TimedEvent {
            at: SimTime(0),
            event: InputEvent::CreatePod {
                pod: Box::new(pod),
                run_for: None,
            },
        };
        assert!(CsvWriter::<Vec<u8>>::row(&ev).is_err());
    }
}
