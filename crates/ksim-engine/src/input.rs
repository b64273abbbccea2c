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
