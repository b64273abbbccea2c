//! Google Borg traces, written from the schema notes (`shared/traces/schemas-not-obtained`;
//! no raw data could be obtained, so the tests use small synthetic files in these formats).
//! Resources are normalised to the largest machine: cpu and memory are scaled by the machine
//! shape (required). Times are microseconds in the trace; 0 means "before the trace" and
//! becomes t=0; the maximum int64 ("after the trace") rows are skipped.
//!
//! **2011** (headerless CSV parts, recognised by their column count):
//! `machine_events` (6: time, machine ID, event type 0 add / 1 remove / 2 update, platform ID,
//! cpus, memory) and `task_events` (13: time, missing info, job ID, task index, machine ID,
//! event type 0 SUBMIT 1 SCHEDULE 2 EVICT 3 FAIL 4 FINISH 5 KILL 6 LOST 7/8 UPDATE, user,
//! scheduling class, priority, cpu, memory, disk, different-machines).
//!
//! **2019** (BigQuery exports as JSON lines): machine events (`machine_id`, `type` ADD 1 /
//! REMOVE 2 / UPDATE 3, `capacity {cpus, memory}`, `platform_id`) and instance events
//! (`collection_id`, `instance_index`, `type` 0 SUBMIT … 3 SCHEDULE, 4 EVICT, 5 FAIL,
//! 6 FINISH, 7 KILL, 8 LOST, 9/10 UPDATE, `priority`, `scheduling_class`,
//! `resource_request {cpus, memory}`); integers may be JSON numbers or strings, types names
//! (`"SUBMIT"`) or numbers.
//!
//! Mapping: machines → nodes `borg-<id>` (label `ksim.io/platform`); ADD at time 0 → initial
//! nodes, later → AddNode; REMOVE → RemoveNode; UPDATE → UpdateNode with the new capacity.
//! Tasks: each submission starts an incarnation, a pod `<job>-<index>-<n>` created at SUBMIT
//! with priority = Borg priority, label `ksim.io/scheduling-class`. When the incarnation ends
//! (EVICT, FAIL, FINISH, KILL, LOST) after a SCHEDULE, `runFor` = end − schedule (the simulator
//! then ends it after the same run time); ended before any SCHEDULE → DeletePod at the end.
//! An evicted task submitted again is a new incarnation (the simulator evicts on its own).
//! Incarnations still open at the end of the trace are created without `runFor`. 2011's
//! different-machines flag becomes required pod anti-affinity on the hostname among the job's
//! pods. UPDATE events are counted as skipped. Pods are buffered until their end, so memory
//! grows with the number of concurrently live tasks.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use ksim_api::meta::LabelSelector;
use ksim_api::{Affinity, Labels, Node, Pod, PodAffinity, PodAffinityTerm, Quantity, ResourceList};
use ksim_engine::{InputEvent, SimDuration};
use serde_json::Value;

use super::build;
use super::rows::Rows;
use super::{ImportContext, ImportFormat, MachineShape};
use crate::error::TraceError;
use crate::io::{display_name, open_input};

#[derive(Clone, Copy, PartialEq)]
enum TaskEv {
    Submit,
    Schedule,
    End,
    Other,
}

struct Live {
    submit: i64,
    scheduled: Option<i64>,
    pod: Pod,
}

#[derive(Default)]
struct Tasks {
    live: HashMap<(String, i64), Live>,
    incarnation: HashMap<(String, i64), u64>,
}

fn scaled(shape: &MachineShape, cpu: f64, mem: f64) -> ResourceList {
    let mut r = ResourceList::new();
    r.insert(
        "cpu".into(),
        build::milli((shape.cpu.milli_value() as f64 * cpu).round() as i64),
    );
    r.insert(
        "memory".into(),
        build::bytes((shape.memory.value() as f64 * mem).round() as i64),
    );
    r
}

/// One task event, already decoded.
struct TaskRow {
    t: i64,
    job: String,
    index: i64,
    ev: TaskEv,
    priority: i32,
    class: i64,
    cpu: f64,
    mem: f64,
    spread: bool,
}

impl Tasks {
    fn apply(
        &mut self,
        cx: &mut ImportContext<'_>,
        shape: &MachineShape,
        r: TaskRow,
        err: &dyn Fn(String) -> TraceError,
    ) -> Result<(), TraceError> {
        let key = (r.job.clone(), r.index);
        match r.ev {
            TaskEv::Submit => {
                if self.live.contains_key(&key) {
                    cx.summary.skip("SUBMIT of a task already submitted");
                    return Ok(());
                }
                if cx.pods_full() {
                    cx.summary.skip("past --max-pods");
                    return Ok(());
                }
                if !(0.0..=1.0).contains(&r.cpu) || !(0.0..=1.0).contains(&r.mem) {
                    return Err(err(format!(
                        "normalised cpu {} or memory {} is outside 0..1",
                        r.cpu, r.mem
                    )));
                }
                let n = self.incarnation.entry(key.clone()).or_insert(0);
                let name = format!("{}-{}-{}", r.job, r.index, n);
                *n += 1;
                let mut pod = build::pod(&cx.opts.namespace(), &name, scaled(shape, r.cpu, r.mem));
                pod.spec.priority = Some(r.priority);
                pod.metadata
                    .labels
                    .insert("ksim.io/job".into(), r.job.clone());
                pod.metadata
                    .labels
                    .insert("ksim.io/scheduling-class".into(), r.class.to_string());
                if r.spread {
                    pod.spec.affinity = Some(Box::new(Affinity {
                        pod_anti_affinity: Some(PodAffinity {
                            required: vec![PodAffinityTerm {
                                label_selector: Some(LabelSelector {
                                    match_labels: [("ksim.io/job".to_string(), r.job.clone())]
                                        .into_iter()
                                        .collect(),
                                    ..LabelSelector::default()
                                }),
                                topology_key: "kubernetes.io/hostname".into(),
                                ..PodAffinityTerm::default()
                            }],
                            ..PodAffinity::default()
                        }),
                        ..Affinity::default()
                    }));
                }
                cx.pods += 1;
                self.live.insert(
                    key,
                    Live {
                        submit: r.t,
                        scheduled: None,
                        pod,
                    },
                );
            }
            TaskEv::Schedule => match self.live.get_mut(&key) {
                Some(l) => l.scheduled = Some(r.t),
                None => cx
                    .summary
                    .skip("SCHEDULE of a task submitted before the trace or past --max-pods"),
            },
            TaskEv::End => match self.live.remove(&key) {
                Some(l) => {
                    let ns = l.pod.metadata.namespace.clone();
                    let name = l.pod.metadata.name.clone();
                    match l.scheduled {
                        Some(s) => {
                            let run = SimDuration((r.t - s).max(0));
                            build::create(cx, l.submit, l.pod, Some(run), err)?;
                        }
                        None => {
                            build::create(cx, l.submit, l.pod, None, err)?;
                            cx.sink.push(
                                r.t,
                                InputEvent::DeletePod {
                                    namespace: ns,
                                    name,
                                },
                            )?;
                        }
                    }
                    cx.pods -= 1; // counted at SUBMIT already
                }
                None => cx
                    .summary
                    .skip("end of a task submitted before the trace or past --max-pods"),
            },
            TaskEv::Other => cx.summary.skip("task UPDATE events (not replayed)"),
        }
        Ok(())
    }

    fn flush(self, cx: &mut ImportContext<'_>) -> Result<(), TraceError> {
        let mut rest: Vec<Live> = self.live.into_values().collect();
        rest.sort_by(|a, b| {
            (a.submit, &a.pod.metadata.name).cmp(&(b.submit, &b.pod.metadata.name))
        });
        for l in rest {
            let name = l.pod.metadata.name.clone();
            build::create(cx, l.submit, l.pod, None, |m| {
                TraceError::at_field("borg", name.clone(), m)
            })?;
            cx.pods -= 1;
        }
        Ok(())
    }
}

struct Machines {
    known: BTreeMap<String, Node>,
}

impl Machines {
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        cx: &mut ImportContext<'_>,
        shape: &MachineShape,
        t: i64,
        id: &str,
        kind: u8,
        platform: &str,
        cpu: f64,
        mem: f64,
        err: &dyn Fn(String) -> TraceError,
    ) -> Result<(), TraceError> {
        let name = format!("borg-{id}");
        match kind {
            // add / update
            0 | 2 => {
                let mut labels = Labels::new();
                if !platform.is_empty() {
                    labels.insert(
                        "ksim.io/platform".into(),
                        platform
                            .chars()
                            .filter(|c| c.is_ascii_alphanumeric())
                            .take(63)
                            .collect(),
                    );
                }
                let mut cap = scaled(shape, cpu, mem);
                cap.insert("pods".into(), Quantity::from_value(110));
                let node = build::checked(build::node(&name, cap, labels), err)?;
                let existed = self.known.insert(name, node.clone()).is_some();
                if kind == 0 && !existed {
                    if t <= 0 {
                        cx.nodes.push(node);
                    } else {
                        cx.sink.push(
                            t,
                            InputEvent::AddNode {
                                node: Box::new(node),
                            },
                        )?;
                    }
                } else if existed {
                    cx.sink.push(
                        t.max(0),
                        InputEvent::UpdateNode {
                            node: Box::new(node),
                        },
                    )?;
                } else {
                    cx.summary.skip("machine UPDATE before its ADD");
                }
            }
            _ => {
                if self.known.remove(&name).is_some() {
                    cx.sink.push(t.max(0), InputEvent::RemoveNode { name })?;
                } else {
                    cx.summary.skip("machine REMOVE of an unknown machine");
                }
            }
        }
        Ok(())
    }
}

const AFTER_TRACE: i64 = i64::MAX;

pub fn import_2011(cx: &mut ImportContext<'_>, inputs: &[PathBuf]) -> Result<(), TraceError> {
    let shape = cx.opts.machine(ImportFormat::Borg2011)?.clone();
    // Machines first, so tasks can be read in any file order.
    let mut kinds = Vec::new();
    for p in inputs {
        kinds.push((Rows::peek_first(p)?.len(), p));
    }
    kinds.sort_by_key(|(n, _)| *n);
    let mut machines = Machines {
        known: BTreeMap::new(),
    };
    let mut tasks = Tasks::default();
    for (n, p) in kinds {
        match n {
            6 => machine_events_2011(cx, p, &shape, &mut machines)?,
            13 => task_events_2011(cx, p, &shape, &mut tasks)?,
            n => {
                return Err(TraceError::at_line(
                    &display_name(p),
                    1,
                    "",
                    format!("{n} columns: expected machine_events (6) or task_events (13)"),
                ))
            }
        }
    }
    tasks.flush(cx)
}

fn machine_events_2011(
    cx: &mut ImportContext<'_>,
    p: &Path,
    shape: &MachineShape,
    m: &mut Machines,
) -> Result<(), TraceError> {
    let mut rows = Rows::open(
        p,
        false,
        &[
            "time",
            "machine_id",
            "event_type",
            "platform_id",
            "cpus",
            "memory",
        ],
    )?;
    while let Some(r) = rows.next_row()? {
        let t = r.i64(0)?;
        if t == AFTER_TRACE {
            cx.summary.skip("after the trace window");
            continue;
        }
        let kind = r.u64(2)?;
        if kind > 2 {
            return Err(r.err_at(
                2,
                format!("{kind} is not 0 (add), 1 (remove) or 2 (update)"),
            ));
        }
        let (cpu, mem) = (r.opt_f64(4)?.unwrap_or(0.0), r.opt_f64(5)?.unwrap_or(0.0));
        if kind != 1 && (r.str(4).is_empty() || r.str(5).is_empty()) {
            cx.summary.skip("machine event with missing capacity");
            continue;
        }
        m.apply(
            cx,
            shape,
            t,
            r.str(1),
            kind as u8,
            r.str(3),
            cpu,
            mem,
            &|msg| r.err("", msg),
        )?;
    }
    cx.summary.read.insert(rows.file.clone(), rows.count);
    Ok(())
}

fn task_events_2011(
    cx: &mut ImportContext<'_>,
    p: &Path,
    shape: &MachineShape,
    tasks: &mut Tasks,
) -> Result<(), TraceError> {
    let cols = [
        "time",
        "missing_info",
        "job_id",
        "task_index",
        "machine_id",
        "event_type",
        "user",
        "scheduling_class",
        "priority",
        "cpu_request",
        "memory_request",
        "disk_request",
        "different_machines",
    ];
    let mut rows = Rows::open(p, false, &cols)?;
    while let Some(r) = rows.next_row()? {
        let t = r.i64(0)?;
        if t == AFTER_TRACE {
            cx.summary.skip("after the trace window");
            continue;
        }
        let ev = match r.u64(5)? {
            0 => TaskEv::Submit,
            1 => TaskEv::Schedule,
            2..=6 => TaskEv::End,
            7 | 8 => TaskEv::Other,
            k => return Err(r.err_at(5, format!("unknown task event type {k} (0..8)"))),
        };
        if ev == TaskEv::Submit && (r.str(9).is_empty() || r.str(10).is_empty()) {
            cx.summary.skip("task submitted without cpu/memory request");
            continue;
        }
        let row = TaskRow {
            t: t.max(0),
            job: r.str(2).to_string(),
            index: r.i64(3)?,
            ev,
            priority: i32::try_from(r.opt_i64(8)?.unwrap_or(0))
                .map_err(|_| r.err_at(8, "out of range"))?,
            class: r.opt_i64(7)?.unwrap_or(0),
            cpu: r.opt_f64(9)?.unwrap_or(0.0),
            mem: r.opt_f64(10)?.unwrap_or(0.0),
            spread: r.opt_i64(12)? == Some(1),
        };
        tasks.apply(cx, shape, row, &|m| r.err("", m))?;
    }
    cx.summary.read.insert(rows.file.clone(), rows.count);
    Ok(())
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

const INSTANCE_TYPES: [&str; 11] = [
    "SUBMIT",
    "QUEUE",
    "ENABLE",
    "SCHEDULE",
    "EVICT",
    "FAIL",
    "FINISH",
    "KILL",
    "LOST",
    "UPDATE_PENDING",
    "UPDATE_RUNNING",
];
const MACHINE_TYPES: [&str; 4] = ["EVENT_TYPE_UNKNOWN", "ADD", "REMOVE", "UPDATE"];

fn event_type(v: Option<&Value>, names: &[&str]) -> Option<i64> {
    match v? {
        Value::String(s) => names
            .iter()
            .position(|n| n == s)
            .map(|i| i as i64)
            .or_else(|| s.parse().ok()),
        other => int(Some(other)),
    }
}

pub fn import_2019(cx: &mut ImportContext<'_>, inputs: &[PathBuf]) -> Result<(), TraceError> {
    let shape = cx.opts.machine(ImportFormat::Borg2019)?.clone();
    let mut machines = Machines {
        known: BTreeMap::new(),
    };
    let mut tasks = Tasks::default();
    for p in inputs {
        let file = display_name(p);
        let mut src = open_input(p)?;
        let mut buf = Vec::new();
        let (mut line, mut count) = (0u64, 0u64);
        loop {
            buf.clear();
            let read = crate::io::read_line_capped(&mut src, &mut buf)
                .map_err(|e| TraceError::io(p, e))?;
            line += 1;
            match read {
                crate::io::LineRead::Eof => break,
                crate::io::LineRead::TooLong => {
                    return Err(TraceError::at_line(
                        &file,
                        line,
                        "",
                        crate::io::line_too_long(),
                    ))
                }
                crate::io::LineRead::Line => {}
            }
            let text = String::from_utf8_lossy(&buf);
            if text.trim().is_empty() {
                continue;
            }
            count += 1;
            let err = |f: &str, m: String| TraceError::at_line(&file, line, f, m);
            let v: Value = ksim_api::json::parse_value(text.trim())
                .map_err(|e| err("", format!("not valid JSON: {e}")))?;
            let t = int(v.get("time"))
                .ok_or_else(|| err("time", "required integer (microseconds)".into()))?;
            if t == AFTER_TRACE {
                cx.summary.skip("after the trace window");
                continue;
            }
            if v.get("collection_id").is_some() {
                let ev = match event_type(v.get("type"), &INSTANCE_TYPES) {
                    Some(0) => TaskEv::Submit,
                    Some(3) => TaskEv::Schedule,
                    Some(4..=8) => TaskEv::End,
                    Some(1 | 2 | 9 | 10) => TaskEv::Other,
                    _ => {
                        return Err(err(
                            "type",
                            format!(
                                "unknown instance event type {}",
                                v.get("type").cloned().unwrap_or(Value::Null)
                            ),
                        ))
                    }
                };
                let cpu = num(v.pointer("/resource_request/cpus"));
                let mem = num(v.pointer("/resource_request/memory"));
                if ev == TaskEv::Submit && (cpu.is_none() || mem.is_none()) {
                    cx.summary.skip("task submitted without cpu/memory request");
                    continue;
                }
                let row = TaskRow {
                    t: t.max(0),
                    job: int(v.get("collection_id"))
                        .ok_or_else(|| err("collection_id", "required integer".into()))?
                        .to_string(),
                    index: int(v.get("instance_index")).unwrap_or(0),
                    ev,
                    priority: i32::try_from(int(v.get("priority")).unwrap_or(0))
                        .map_err(|_| err("priority", "out of range".into()))?,
                    class: int(v.get("scheduling_class")).unwrap_or(0),
                    cpu: cpu.unwrap_or(0.0),
                    mem: mem.unwrap_or(0.0),
                    spread: false,
                };
                tasks.apply(cx, &shape, row, &|m| err("", m))?;
            } else if v.get("machine_id").is_some() {
                let kind = match event_type(v.get("type"), &MACHINE_TYPES) {
                    Some(1) => 0,
                    Some(2) => 1,
                    Some(3) => 2,
                    _ => {
                        return Err(err(
                            "type",
                            format!(
                                "unknown machine event type {}",
                                v.get("type").cloned().unwrap_or(Value::Null)
                            ),
                        ))
                    }
                };
                let id = int(v.get("machine_id"))
                    .ok_or_else(|| err("machine_id", "required integer".into()))?
                    .to_string();
                let cpu = num(v.pointer("/capacity/cpus"));
                let mem = num(v.pointer("/capacity/memory"));
                if kind != 1 && (cpu.is_none() || mem.is_none()) {
                    cx.summary.skip("machine event with missing capacity");
                    continue;
                }
                let platform = v.get("platform_id").and_then(Value::as_str).unwrap_or("");
                machines.apply(
                    cx,
                    &shape,
                    t,
                    &id,
                    kind,
                    platform,
                    cpu.unwrap_or(0.0),
                    mem.unwrap_or(0.0),
                    &|m| err("", m),
                )?;
            } else {
                return Err(err(
                    "",
                    "neither an instance event (collection_id) nor a machine event (machine_id)"
                        .into(),
                ));
            }
        }
        cx.summary.read.insert(file, count);
    }
    tasks.flush(cx)
}
