//! What the engine publishes as the run goes: one closed enum of records, serialisable as an
//! event log (JSON Lines, `type` tag). Reports are rendered from these records alone, so a report
//! can be re-rendered from a saved log without re-running.

use serde::{Deserialize, Serialize};

use crate::time::{SimDuration, SimTime};

/// Resource amounts in the scheduler's units: cpu in millicores, memory and storage in bytes,
/// pods as a count, extended resources in their units. Sorted by name.
pub type Amounts = Vec<(String, i64)>;

/// A Job's terminal condition as upstream's Job controller writes it: `Complete` (reason
/// `CompletionsReached` or `SuccessPolicy`) or `Failed` (`BackoffLimitExceeded`,
/// `DeadlineExceeded`, `PodFailurePolicy`, `MaxFailedIndexesExceeded`, `FailedIndexes`), set
/// once none of its pods is terminating (`enactJobFinished`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCondition {
    /// `Complete` or `Failed`.
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    /// Its `lastTransitionTime`.
    pub at: SimTime,
}

/// How a pod's life ended (or where it stands at the horizon).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Bound and still running at the horizon.
    Running,
    /// Ran for its run time and completed.
    Succeeded,
    /// Deleted by the trace.
    Deleted,
    /// Never bound by the horizon.
    Pending,
    /// Evicted by a preemptor.
    Preempted,
    /// Lost its node (node removed) or could not be scheduled for good.
    Failed,
    /// Still waiting when a run without a horizon stalled: nothing left could change the
    /// cluster, and the pod had already failed against the cluster as it was.
    Stalled,
    /// Never scheduled because its `schedulerName` names no profile of this scheduler: as
    /// upstream, another scheduler owns it (reported at the end of the run).
    Unserved,
}

impl Outcome {
    /// Never bound and still waiting at the end (pending at a horizon, or stalled).
    pub fn is_waiting(self) -> bool {
        matches!(self, Outcome::Pending | Outcome::Stalled)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Running => "running",
            Outcome::Succeeded => "succeeded",
            Outcome::Deleted => "deleted",
            Outcome::Pending => "pending",
            Outcome::Preempted => "preempted",
            Outcome::Failed => "failed",
            Outcome::Stalled => "stalled",
            Outcome::Unserved => "unserved",
        }
    }
}

/// Result of one scheduling attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AttemptResult {
    Scheduled,
    Unschedulable,
    Error,
}

impl AttemptResult {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptResult::Scheduled => "Scheduled",
            AttemptResult::Unschedulable => "Unschedulable",
            AttemptResult::Error => "Error",
        }
    }
}

/// One ResourceClaim of a pod ([`Record::PodClaims`]): its name (in the pod's namespace; ""
/// when a template's claim was not generated) and the devices of its allocation as
/// `driver/pool/device`, in the allocation's order (empty when it is not allocated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodClaim {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Record {
    /// A node joined (at t=0 for the initial cluster).
    NodeAdded {
        at: SimTime,
        node: String,
        /// Node pool (the `ksim.io/pool` label, or "" when absent).
        pool: String,
        allocatable: Amounts,
    },
    /// A node's object changed; `allocatable` is the new value.
    NodeUpdated {
        at: SimTime,
        node: String,
        allocatable: Amounts,
        unschedulable: bool,
    },
    NodeRemoved {
        at: SimTime,
        node: String,
    },
    /// A pod was created (entered the API server).
    PodCreated {
        at: SimTime,
        namespace: String,
        name: String,
        priority: i32,
        /// The pod's effective requests (init containers, sidecars and overhead included).
        requests: Amounts,
        /// Kind and name of its controller `ownerReference` (else its first owner), "" if none.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        owner_kind: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        owner_name: String,
    },
    /// One scheduling cycle for one pod.
    Attempt {
        at: SimTime,
        namespace: String,
        name: String,
        /// The pod's pop count including this one.
        attempt: u32,
        result: AttemptResult,
        /// The node it was assumed on ("" unless Scheduled).
        node: String,
        /// Node nominated by preemption in this attempt ("" if none).
        nominated_node: String,
        /// FitError / error message ("" when Scheduled).
        message: String,
        feasible_nodes: u32,
        evaluated_nodes: u32,
    },
    /// The binding finished: the pod is on the node and starts.
    PodBound {
        at: SimTime,
        namespace: String,
        name: String,
        node: String,
    },
    /// The pod left the cluster (completed, deleted, preempted, failed).
    PodEnded {
        at: SimTime,
        namespace: String,
        name: String,
        outcome: Outcome,
        /// `namespace/name` of the preemptor when preempted.
        preempted_by: String,
    },
    /// A pending pod waits outside the scheduling queue, and why: `by` is the PreEnqueue
    /// plugin that gates it (`DynamicResources`: a claim or its template is missing), or
    /// `resourceclaim-controller` when that controller cannot create the pod's claim (its
    /// `FailedResourceClaimCreation` event). Recorded for DRA only (pods held by
    /// `schedulingGates` are not).
    PodWaiting {
        at: SimTime,
        namespace: String,
        name: String,
        by: String,
        message: String,
    },
    /// A workload controller as it stands at the end of the run (one per controller, just
    /// before `RunEnded`; `controllers.csv`).
    /// The API server refused to create a pod (an admission plugin: Priority, LimitRanger,
    /// ResourceQuota); `message` is upstream's (`pods "x" is forbidden: ...`).
    PodRefused {
        at: SimTime,
        namespace: String,
        name: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        owner_kind: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        owner_name: String,
        message: String,
    },
    Controller {
        at: SimTime,
        kind: String,
        namespace: String,
        name: String,
        /// Desired pods: replicas, a DaemonSet's eligible nodes, a Job's completions.
        desired: i64,
        /// Pods it created, pods it has now, and of those the running ones.
        created: u64,
        live: u64,
        running: u64,
        /// From its last create or spec change to the first instant every desired pod was
        /// running (none when that never happened; Jobs: none).
        time_to_all_running: Option<SimDuration>,
        /// The most desired pods not running at once, after all had been running.
        max_unavailable: u64,
        /// Pods that ended other than by the controller (deleted, preempted, failed) and that
        /// it replaced or would replace.
        replaced: u64,
        /// Job: pods succeeded and failed; when it completed.
        succeeded: u64,
        failed: u64,
        completed_at: Option<SimTime>,
        /// Job: its terminal condition, once set (none while it runs, and for other kinds).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        condition: Option<JobCondition>,
    },
    /// A node-health change made or seen by the node lifecycle controller (`node_events.csv`):
    /// `event` is one of `KubeletStopped` (`FailNode`), `KubeletStarted` (`RecoverNode`),
    /// `NodeNotReady` / `NodeReady` (its Ready condition: `detail` is the new status),
    /// `TaintAdded` / `TaintRemoved` (`detail` is `key:effect`), `ZoneState` (`detail` is the
    /// zone's new state; `node` is empty).
    NodeEvent {
        at: SimTime,
        node: String,
        /// The node's zone key (upstream `GetZoneKey`: region and zone labels), "" if none.
        zone: String,
        event: String,
        detail: String,
    },
    /// A pod is evicted: recorded just before its `PodEnded` (or the start of its graceful
    /// termination). `cause` is `taint` (the taint-eviction controller: a NoExecute taint it
    /// does not tolerate, or its `tolerationSeconds` ran out) or `deadline` (its Job's
    /// `activeDeadlineSeconds` passed, or its own `spec.activeDeadlineSeconds`).
    PodEvicted {
        at: SimTime,
        namespace: String,
        name: String,
        node: String,
        cause: String,
    },
    /// The device allocation of one DRA pool (`driver`, `pool`) changed: `allocated` devices
    /// of the pool are in some claim's `status.allocation` (admin-access results not counted),
    /// `total` devices are published by the pool's newest-generation ResourceSlices. Written at
    /// t=0 for every pool and then at each change; runs without ResourceSlices or allocated
    /// claims have none (`devices.csv`).
    Devices {
        at: SimTime,
        driver: String,
        pool: String,
        allocated: u64,
        total: u64,
    },
    /// The DRA claims of a pod as it binds (recorded just before its `PodBound`; pods without
    /// `spec.resourceClaims` have none): each claim the pod uses, with the devices its
    /// allocation holds (`pods.csv`'s `claims` column).
    PodClaims {
        at: SimTime,
        namespace: String,
        name: String,
        claims: Vec<PodClaim>,
    },
    /// The run ended at the horizon (or when nothing was left to do).
    RunEnded {
        at: SimTime,
        /// Why a run without a horizon stopped with pods still waiting (see
        /// [`Outcome::Stalled`]); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stalled: Option<String>,
        /// The `schedulerName`s of pods no profile serves (see [`Outcome::Unserved`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unserved: Vec<String>,
    },
}

impl Record {
    pub fn at(&self) -> SimTime {
        match self {
            Record::NodeAdded { at, .. }
            | Record::NodeUpdated { at, .. }
            | Record::NodeRemoved { at, .. }
            | Record::PodCreated { at, .. }
            | Record::Attempt { at, .. }
            | Record::PodBound { at, .. }
            | Record::PodEnded { at, .. }
            | Record::PodRefused { at, .. }
            | Record::PodWaiting { at, .. }
            | Record::Controller { at, .. }
            | Record::NodeEvent { at, .. }
            | Record::PodEvicted { at, .. }
            | Record::Devices { at, .. }
            | Record::PodClaims { at, .. }
            | Record::RunEnded { at, .. } => *at,
        }
    }
}

/// Receives records as the engine produces them.
pub trait Observer {
    fn record(&mut self, r: &Record);
}

/// Keeps every record in memory (tests, small runs).
#[derive(Debug, Default, Clone)]
pub struct VecObserver {
    pub records: Vec<Record>,
}

impl Observer for VecObserver {
    fn record(&mut self, r: &Record) {
        self.records.push(r.clone());
    }
}

impl<F: FnMut(&Record)> Observer for F {
    fn record(&mut self, r: &Record) {
        self(r)
    }
}
