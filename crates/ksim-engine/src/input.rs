//! The cluster events a trace feeds into the engine — the same events the timeline conformance
//! cases use. Readers (native JSON Lines, CSV, importers) in `ksim-trace` produce these.

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::{Node, Pod};
use serde::{Deserialize, Serialize};

use crate::time::{SimDuration, SimTime};

/// One input event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum InputEvent {
    /// A pod is created. With `spec.nodeName` set it is already running on that node. It runs
    /// for `run_for` once started, or until deleted / the horizon when absent.
    CreatePod {
        pod: Box<Pod>,
        #[serde(rename = "runFor", default, skip_serializing_if = "Option::is_none")]
        run_for: Option<SimDuration>,
    },
    /// The pod is deleted (by the user or a controller).
    DeletePod {
        namespace: String,
        name: String,
    },
    /// The pod finished on its own; treated like a deletion that frees its resources.
    CompletePod {
        namespace: String,
        name: String,
    },
    /// Replaces the pod's metadata and spec (e.g. to remove scheduling gates); `spec.nodeName`
    /// and `status` are kept from the current object.
    UpdatePod {
        pod: Box<Pod>,
    },
    AddNode {
        node: Box<Node>,
    },
    /// Replaces the whole node object (labels, taints, unschedulable, capacity/allocatable).
    UpdateNode {
        node: Box<Node>,
    },
    /// Deletes the node. Its pods fail (or stay bound, per the engine's settings).
    RemoveNode {
        name: String,
    },
    /// The node's kubelet stops reporting (a crash or a network partition): its lease and
    /// status are no longer renewed; the node lifecycle controller marks it Ready=Unknown after
    /// `--node-monitor-grace-period` and taints it (see `sim/nodelifecycle`).
    FailNode {
        name: String,
    },
    /// The node's kubelet reports again: its conditions are posted as before the failure, and
    /// the controller removes its not-ready/unreachable taints.
    RecoverNode {
        name: String,
    },
    /// Creates a storage object, PodDisruptionBudget or Service (Kubernetes JSON with its
    /// `kind`; see [`ApiObject`]). It must not exist yet.
    CreateObject {
        object: Box<ApiObject>,
    },
    /// Replaces an existing object of those kinds.
    UpdateObject {
        object: Box<ApiObject>,
    },
    /// Deletes an object of those kinds; `namespace` is for namespaced kinds (default
    /// `default`). Deleting an object that does not exist does nothing.
    DeleteObject {
        #[serde(rename = "objectKind")]
        object_kind: ObjectKind,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        namespace: String,
        name: String,
    },
}

impl InputEvent {
    pub fn kind(&self) -> &'static str {
        match self {
            InputEvent::CreatePod { .. } => "CreatePod",
            InputEvent::DeletePod { .. } => "DeletePod",
            InputEvent::CompletePod { .. } => "CompletePod",
            InputEvent::UpdatePod { .. } => "UpdatePod",
            InputEvent::AddNode { .. } => "AddNode",
            InputEvent::UpdateNode { .. } => "UpdateNode",
            InputEvent::RemoveNode { .. } => "RemoveNode",
            InputEvent::FailNode { .. } => "FailNode",
            InputEvent::RecoverNode { .. } => "RecoverNode",
            InputEvent::CreateObject { .. } => "CreateObject",
            InputEvent::UpdateObject { .. } => "UpdateObject",
            InputEvent::DeleteObject { .. } => "DeleteObject",
        }
    }
}

/// An input event at a virtual time.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedEvent {
    pub at: SimTime,
    pub event: InputEvent,
}

/// A source of time-ordered input events, pulled lazily so that a trace is streamed, never
/// loaded whole. Errors carry the file, line and field.
pub trait EventSource {
    /// The next event, `Ok(None)` at the end.
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError>;
    /// Where the event last returned by [`EventSource::next_event`] was read (file and line),
    /// so that an error raised when the engine applies it can name it. `None` for sources
    /// without lines (generators, in-memory lists).
    fn last_position(&self) -> Option<SourcePos> {
        None
    }
}

/// A file and 1-based line an input event was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePos {
    pub file: std::sync::Arc<str>,
    pub line: u64,
}

impl std::fmt::Display for SourcePos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A source failed to produce its next event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SourceError {
    /// Human-readable, naming file, line and field.
    pub message: String,
}

/// A source over events already in memory (tests, generators).
pub struct VecSource {
    events: std::vec::IntoIter<TimedEvent>,
}

impl VecSource {
    pub fn new(mut events: Vec<TimedEvent>) -> VecSource {
        // Stable: equal times keep their given order.
        events.sort_by_key(|e| e.at);
        VecSource {
            events: events.into_iter(),
        }
    }
}

impl EventSource for VecSource {
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
        Ok(self.events.next())
    }
}

/// What [`Prefetch`]'s reader thread hands over per event: the event and where it was read,
/// the end, or the source's error.
type Prefetched = Result<Option<(TimedEvent, Option<SourcePos>)>, SourceError>;

/// Events per hand-over from [`Prefetch`]'s reader thread.
const PREFETCH_BATCH: usize = 256;

/// An [`EventSource`] read ahead on a second thread: the wrapped source parses or generates
/// its events while the engine applies earlier ones. Events, their positions, the end and an
/// error come out exactly as the source gives them and in its order (one reader, one queue), so
/// a run is the same with or without it; the reader stops at the source's end or first error,
/// and at most a few batches ahead of the engine.
pub struct Prefetch {
    rx: std::sync::mpsc::Receiver<Vec<Prefetched>>,
    batch: std::vec::IntoIter<Prefetched>,
    last: Option<SourcePos>,
    done: bool,
}

impl Prefetch {
    pub fn new(mut src: Box<dyn EventSource + Send>) -> Prefetch {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Prefetched>>(4);
        std::thread::spawn(move || loop {
            let mut batch = Vec::with_capacity(PREFETCH_BATCH);
            let mut end = false;
            while !end && batch.len() < PREFETCH_BATCH {
                let item = match src.next_event() {
                    Ok(Some(e)) => Ok(Some((e, src.last_position()))),
                    other => {
                        end = true;
                        other.map(|_| None)
                    }
                };
                batch.push(item);
            }
            // The engine is gone (run over) or the source is: nothing more to read.
            if tx.send(batch).is_err() || end {
                return;
            }
        });
        Prefetch {
            rx,
            batch: Vec::new().into_iter(),
            last: None,
            done: false,
        }
    }
}

impl EventSource for Prefetch {
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
        while !self.done {
            match self.batch.next() {
                Some(Ok(Some((e, pos)))) => {
                    self.last = pos;
                    return Ok(Some(e));
                }
                Some(other) => {
                    self.done = true;
                    return other.map(|_| None);
                }
                None => match self.rx.recv() {
                    Ok(b) => self.batch = b.into_iter(),
                    Err(_) => {
                        // The reader stopped without its end or error: it panicked.
                        self.done = true;
                        return Err(SourceError {
                            message: "the event source's reader thread stopped unexpectedly".into(),
                        });
                    }
                },
            }
        }
        Ok(None)
    }

    fn last_position(&self) -> Option<SourcePos> {
        self.last.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbered events with positions, then an error after `fail_after` events (if any).
    struct Numbered {
        n: usize,
        total: usize,
        fail_after: Option<usize>,
    }

    impl EventSource for Numbered {
        fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
            if self.fail_after == Some(self.n) {
                return Err(SourceError {
                    message: format!("t.jsonl:{}: bad", self.n + 1),
                });
            }
            if self.n == self.total {
                return Ok(None);
            }
            self.n += 1;
            Ok(Some(TimedEvent {
                at: SimTime(self.n as i64),
                event: InputEvent::RemoveNode {
                    name: format!("n{}", self.n),
                },
            }))
        }
        fn last_position(&self) -> Option<SourcePos> {
            Some(SourcePos {
                file: "t.jsonl".into(),
                line: self.n as u64,
            })
        }
    }

    fn drain(src: &mut dyn EventSource) -> Vec<Result<(TimedEvent, Option<SourcePos>), String>> {
        let mut out = Vec::new();
        loop {
            match src.next_event() {
                Ok(Some(e)) => out.push(Ok((e, src.last_position()))),
                Ok(None) => return out,
                Err(e) => {
                    out.push(Err(e.message));
                    return out;
                }
            }
        }
    }

    #[test]
    fn prefetch_gives_the_source_s_events_positions_end_and_error_in_order() {
        for (total, fail_after) in [(0, None), (3, None), (1000, None), (600, Some(517))] {
            let direct = drain(&mut Numbered {
                n: 0,
                total,
                fail_after,
            });
            let mut pre = Prefetch::new(Box::new(Numbered {
                n: 0,
                total,
                fail_after,
            }));
            assert_eq!(drain(&mut pre), direct, "{total} {fail_after:?}");
            // Past the end (or the error) it stays ended.
            assert_eq!(pre.next_event().map(|e| e.is_none()).ok(), Some(true));
        }
    }
}
