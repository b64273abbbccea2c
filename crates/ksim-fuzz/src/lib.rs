//! # ksim-fuzz
//!
//! One fuzz target per parser a user touches, as a plain function of the input bytes. A target
//! may return any error but must never panic, hang or allocate without bound. They are driven
//! two ways:
//!
//! - coverage-guided, by cargo-fuzz (libFuzzer): `fuzz/` at the repository root holds one thin
//!   `fuzz_target!` per entry of [`TARGETS`]; `scripts/fuzz.sh TARGET SECONDS` (or
//!   `just fuzz TARGET SECONDS`) runs one;
//! - replayed over the committed corpus `fuzz/corpus/<target>/` and the crashes found so far
//!   (`fuzz/regressions/<target>/`) by this crate's tests, which CI runs (fast: no fuzzing).
//!
//! File-based readers (scheduler configuration, sweeps, importers) get the bytes through a file
//! in a per-process scratch folder, since that is the path a user's input takes.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ksim_engine::EventSource;
use ksim_trace::csv_trace::CsvReader;
use ksim_trace::{ImportFormat, ImportOptions, MachineShape, NativeReader};

/// Every target: its name (the folder of its corpus) and what it reads.
pub const TARGETS: [(&str, &str); 8] = [
    ("native", "native trace (JSON Lines)"),
    ("csv", "CSV trace"),
    ("scenario", "scenario file, then its plan and first events"),
    ("nodes", "nodes file / kube-dump style List, JSON or YAML"),
    (
        "config",
        "KubeSchedulerConfiguration, then the frameworks built from it",
    ),
    ("quantity", "resource quantities and durations"),
    ("sweep", "sweep file"),
    ("import", "every importer (first byte picks the format)"),
];

/// Runs target `name` on `data`. Unknown names do nothing (the corpus replay checks names).
pub fn run(name: &str, data: &[u8]) {
    match name {
        "native" => native(data),
        "csv" => csv(data),
        "scenario" => scenario(data),
        "nodes" => nodes(data),
        "config" => config(data),
        "quantity" => quantity(data),
        "sweep" => sweep(data),
        "import" => import(data),
        _ => {}
    }
}

/// At most this many events are pulled from a source: a target must end quickly.
const MAX_EVENTS: usize = 2_000;

pub fn native(data: &[u8]) {
    for r in NativeReader::new("fuzz.jsonl", Cursor::new(data)).take(MAX_EVENTS) {
        let _ = r;
    }
}

pub fn csv(data: &[u8]) {
    for r in CsvReader::new("fuzz.csv", Cursor::new(data)).take(MAX_EVENTS) {
        let _ = r;
    }
}

pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(s) = ksim_trace::parse_scenario("fuzz.yaml", text) else {
        return;
    };
    // The plan builds every pool node: keep what a fuzz run allocates small (the limit
    // itself is tested elsewhere).
    if s.cluster
        .pools
        .iter()
        .map(|p| u64::from(p.count))
        .sum::<u64>()
        > 10_000
    {
        return;
    }
    let Ok(mut plan) = s.plan("fuzz.yaml", Path::new("/nonexistent-ksim-fuzz")) else {
        return;
    };
    for _ in 0..MAX_EVENTS {
        match plan.events.next_event() {
            Ok(Some(_)) => {}
            _ => break,
        }
    }
}

pub fn nodes(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = ksim_trace::nodes::parse_nodes("fuzz.yaml", text);
}

pub fn config(data: &[u8]) {
    let path = scratch().join("config.yaml");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let Ok(cfg) = ksim_trace::scenario::load_scheduler_config(&path) else {
        return;
    };
    let registry = ksim_scheduler::framework::registry::Registry::in_tree();
    let _ = ksim_scheduler::framework::registry::build_frameworks(&registry, &cfg);
}

pub fn quantity(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for part in text.split('\n') {
        if let Ok(q) = ksim_api::Quantity::parse(part) {
            let _ = (q.value(), q.milli_value(), q.as_str().len());
        }
        if let Ok(d) = ksim_engine::SimDuration::parse(part) {
            let _ = d.as_secs_f64();
        }
    }
}

pub fn sweep(data: &[u8]) {
    let dir = scratch();
    // A valid scenario beside the sweep, so the sweep's own fields get exercised.
    let scenario = dir.join("s.yaml");
    if !scenario.exists()
        && std::fs::write(
            &scenario,
            "name: s\nhorizon: 1m\ncluster:\n  pools:\n    - {name: a, count: 2, template: {status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}}}\n",
        )
        .is_err()
    {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sweep) = ksim_sweep::spec::parse_sweep("fuzz-sweep.yaml", text, &dir, "fuzz") {
        let _ = sweep.points().into_iter().take(100).count();
    }
}

/// Splits the input into up to 4 files at each `\n--8<--\n`, and the first byte picks the
/// format among [`ImportFormat::ALL`].
pub fn import(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (format, _, _) = ImportFormat::ALL[usize::from(selector) % ImportFormat::ALL.len()];
    let dir = scratch();
    let mut inputs: Vec<PathBuf> = Vec::new();
    let ext = match format {
        ImportFormat::KubeDump => "yaml",
        ImportFormat::AuditLog | ImportFormat::Borg2019 => "jsonl",
        ImportFormat::SimKube => "sktrace",
        _ => "csv",
    };
    for (i, part) in split(rest, b"\n--8<--\n").into_iter().take(4).enumerate() {
        let p = dir.join(format!("input{i}.{ext}"));
        if std::fs::write(&p, part).is_err() {
            return;
        }
        inputs.push(p);
    }
    let machine = match (
        ksim_api::Quantity::parse("64"),
        ksim_api::Quantity::parse("256Gi"),
    ) {
        (Ok(cpu), Ok(memory)) => Some(MachineShape { cpu, memory }),
        _ => None,
    };
    let opts = ImportOptions {
        machine,
        max_pods: Some(1_000),
        max_instances_per_task: Some(50),
        ..ImportOptions::default()
    };
    let _ = ksim_trace::import(format, &inputs, &dir.join("out"), &opts);
}

fn split<'a>(data: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + sep.len() <= data.len() {
        if &data[i..i + sep.len()] == sep {
            out.push(&data[start..i]);
            i += sep.len();
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(&data[start..]);
    out
}

/// A scratch folder of this process (fuzzers run one input at a time per process).
fn scratch() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let d = base.join(format!("ksim-fuzz-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        d
    })
    .clone()
}
