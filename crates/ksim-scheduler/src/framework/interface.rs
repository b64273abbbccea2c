//! One small trait per extension point, as upstream's `framework` interfaces.
//!
//! A plugin is one value implementing [`Plugin`]; it exposes each extension point it
//! implements through the `as_*` accessors (the Rust counterpart of Go's interface assertions).

use std::sync::Arc;

use crate::framework::cycle_state::CycleState;
use crate::framework::runtime::ActiveFilters;
use crate::framework::status::{FilterResult, Status};
use crate::node_info::{NodeFlags, NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

/// Highest score a Score plugin may return after normalisation.
pub const MAX_NODE_SCORE: i64 = 100;
pub const MIN_NODE_SCORE: i64 = 0;

pub trait Plugin: Send + Sync {
    /// The upstream name (`NodeResourcesFit`).
    fn name(&self) -> &'static str;

    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        None
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        None
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        None
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        None
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        None
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        None
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        None
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        None
    }
    fn as_permit(&self) -> Option<&dyn PermitPlugin> {
        None
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        None
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        None
    }
    fn as_post_bind(&self) -> Option<&dyn PostBindPlugin> {
        None
    }
    /// The cluster events that can make a pod this plugin rejected schedulable, with hints.
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        None
    }
    /// The plugin as `Any`, for plugins that keep state between cycles (VolumeBinding's assume
    /// cache), so that a forked simulation (`ksim run --fork-at`) can copy that state into
    /// fresh instances. `None` for stateless plugins.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

pub type PluginRef = Arc<dyn Plugin>;

/// Decides whether a pod may enter the active queue at all (SchedulingGates).
pub trait PreEnqueuePlugin {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status;
}

/// Orders the active queue.
pub trait QueueSortPlugin {
    /// Whether `a` pops before `b`. `a_ts`/`b_ts` are the queue timestamps.
    fn less(&self, a: &PodInfo, a_ts: (i64, u64), b: &PodInfo, b_ts: (i64, u64)) -> bool;
}

/// The node restriction a PreFilter plugin may return. `None` means all nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    /// Sorted, deduplicated node names; `None` = every node.
    pub node_names: Option<Vec<String>>,
}

impl PreFilterResult {
    pub fn all() -> PreFilterResult {
        PreFilterResult { node_names: None }
    }
    pub fn all_nodes(&self) -> bool {
        self.node_names.is_none()
    }
    /// Intersection (upstream `Merge`).
    pub fn merge(&self, other: &PreFilterResult) -> PreFilterResult {
        match (&self.node_names, &other.node_names) {
            (None, None) => PreFilterResult::all(),
            (Some(a), None) => PreFilterResult {
                node_names: Some(a.clone()),
            },
            (None, Some(b)) => PreFilterResult {
                node_names: Some(b.clone()),
            },
            (Some(a), Some(b)) => PreFilterResult {
                node_names: Some(a.iter().filter(|n| b.contains(n)).cloned().collect()),
            },
        }
    }
}

pub trait PreFilterPlugin {
    /// Runs once per cycle. Return `(None, success)` to allow all nodes.
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status);

    /// Whether [`add_pod`](Self::add_pod)/[`remove_pod`](Self::remove_pod) do anything
    /// (upstream `PreFilterExtensions() != nil`).
    fn has_extensions(&self) -> bool {
        false
    }
    /// The state as if `pod_to_add` were on `node` (nominated pods, preemption dry runs).
    fn add_pod(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _pod_to_add: &Arc<PodInfo>,
        _node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        Status::success()
    }
    /// The state as if `pod_to_remove` were gone from `node`.
    fn remove_pod(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _pod_to_remove: &Arc<PodInfo>,
        _node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        Status::success()
    }
}

/// `FilterPlugin`: may the pod run on this node? Runs per node (sampled), after PreFilter.
pub trait FilterPlugin {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult;

    /// A promise, made once per cycle: `filter` passes `pod` on every node whose
    /// [`NodeInfo::flags`] share none of the returned flags ([`NodeFlags::NONE`]: on every
    /// node), so the framework may skip the call there. `None` (the default) promises nothing.
    /// The promise must be exact, since a skipped call cannot reject.
    fn passes_nodes_without(&self, _pod: &PodInfo) -> Option<NodeFlags> {
        None
    }

    /// Whether [`leading_passes`](Self::leading_passes) takes runs of nodes at all (the
    /// framework batches a cycle's filtering only when every plugin it calls does).
    fn has_leading_passes(&self) -> bool {
        false
    }

    /// A batch of [`filter`](Self::filter) over a run of consecutive nodes: some `k` at most
    /// `limit` and `nodes.len()` such that `filter` passes `pod` on each of `nodes[..k]` and
    /// none of them has a flag of `stop`. Any such `k` is correct, the largest is fastest: the
    /// framework filters `nodes[k]` one by one (with every plugin) and then asks again. The
    /// default, 0, leaves every node to `filter`.
    fn leading_passes(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _nodes: &[NodeInfo],
        _stop: NodeFlags,
        _limit: usize,
    ) -> usize {
        0
    }

    /// [`leading_passes`](Self::leading_passes) over `snapshot.nodes[from..to]`, with the same
    /// contract, read from the snapshot's resource columns
    /// ([`Snapshot::resource_columns`]) where the plugin can. `None` (the default): the
    /// framework calls `leading_passes` on the slice instead.
    #[allow(clippy::too_many_arguments)]
    fn leading_passes_in(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _from: usize,
        _to: usize,
        _stop: NodeFlags,
        _limit: usize,
    ) -> Option<usize> {
        None
    }

    /// Whether [`filter`](Self::filter) reads nothing of a node's pods but its requested
    /// totals and its pod count, so that
    /// [`passes_with_totals`](Self::passes_with_totals) answers for any totals
    /// (NodeResourcesFit). The default: no.
    fn judges_totals(&self) -> bool {
        false
    }

    /// Whether [`filter`](Self::filter)'s verdict never depends on the pods on a node (nor on
    /// what they request): only on the node object, the pod and the cycle state. A preemption
    /// dry run that removes and adds pods need not ask such a plugin again. The default: no.
    fn ignores_pods(&self) -> bool {
        false
    }

    /// Whether [`filter`](Self::filter) would pass `pod` on `node` were the node's requested
    /// totals `requested` and its pod count `num_pods`, all else as it is (a preemption dry
    /// run asks this of the totals left once pods are removed, before removing any). `Some`
    /// only from a plugin that [`judges_totals`](Self::judges_totals); `None` (the default)
    /// says nothing.
    fn passes_with_totals(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _node: &NodeInfo,
        _requested: &crate::resource::Resource,
        _num_pods: usize,
    ) -> Option<bool> {
        None
    }

    /// A batch of rejections: some `k` at most `limit` and `nodes.len()`, and a rejection
    /// built once, such that `filter` returns [`FilterResult::shared`] of that very status on
    /// each of `nodes[..k]` and none of them has a flag of `stop` (a run of full nodes, say).
    /// Any such `k` is correct; `(0, None)` (the default) leaves every node to `filter`.
    fn leading_rejections(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _nodes: &[NodeInfo],
        _stop: NodeFlags,
        _limit: usize,
    ) -> (usize, Option<&'static Status>) {
        (0, None)
    }
}

/// Node → status of the nodes that failed, for PostFilter.
///
/// Explicit statuses are indexed like `Snapshot::nodes`. The table is allocated on the first
/// rejected node, so a cycle whose sampled nodes all pass allocates nothing per node.
///
/// Each node has a 4-byte slot naming its status in a list of distinct entries: a run of nodes
/// rejected with one status (a failed cycle over full nodes, one entry for a thousand nodes)
/// writes one small number per node, and dropping the table drops one status, not a status
/// per node.
#[derive(Debug, Clone, Default)]
pub struct NodeToStatus {
    /// Empty, or one slot per node: 0 for a node that was not rejected explicitly, else one
    /// more than the index of its status in `entries`.
    slots: Vec<u32>,
    /// The statuses the slots name. An entry whose nodes all got another status since stays
    /// (unread) until the table is dropped.
    entries: Vec<Status>,
    /// The address of the status the last entry was copied from by [`Self::set_run`] (0 when
    /// `set` added the last entry): a failed cycle records run after run with the same shared
    /// status, which then names the same entry without comparing its text.
    last_run_from: usize,
    num_nodes: usize,
    /// Number of non-zero slots.
    explicit: usize,
    /// The status of every node without an explicit one (set when PreFilter rejected or
    /// restricted the node set).
    pub absent: Option<Status>,
}

impl NodeToStatus {
    pub fn new(num_nodes: usize) -> NodeToStatus {
        NodeToStatus {
            slots: Vec::new(),
            entries: Vec::new(),
            last_run_from: 0,
            num_nodes,
            explicit: 0,
            absent: None,
        }
    }
    /// The status of node `i`, explicit or absent.
    pub fn get(&self, i: usize) -> Option<&Status> {
        self.explicit(i).or(self.absent.as_ref())
    }
    /// The explicit status of node `i`, if any.
    #[inline]
    pub fn explicit(&self, i: usize) -> Option<&Status> {
        match self.slots.get(i) {
            Some(&s) if s != 0 => self.entries.get(s as usize - 1),
            _ => None,
        }
    }
    /// Adds `status` to the entries and returns its slot value.
    fn push_entry(&mut self, status: Status) -> u32 {
        self.entries.push(status);
        // More entries than a u32 counts would take hundreds of gigabytes of statuses.
        u32::try_from(self.entries.len()).unwrap_or(u32::MAX)
    }
    /// Records node `i`'s status. Indices past the node count given to [`Self::new`] grow
    /// the table.
    pub fn set(&mut self, i: usize, status: Status) {
        if self.slots.len() <= i {
            self.slots.resize(self.num_nodes.max(i + 1), 0);
        }
        let id = self.push_entry(status);
        self.last_run_from = 0;
        if std::mem::replace(&mut self.slots[i], id) == 0 {
            self.explicit += 1;
        }
    }
    /// Records `status` for every node of `nodes` (what [`Self::set`] node by node does; a
    /// run of nodes rejected with one shared status).
    pub fn set_run(&mut self, nodes: std::ops::Range<usize>, status: &'static Status) {
        if nodes.is_empty() {
            return;
        }
        if self.slots.len() < nodes.end {
            self.slots.resize(self.num_nodes.max(nodes.end), 0);
        }
        // A failed cycle records run after run with the same shared status (the runs end
        // where another status interrupts them): the last entry serves again when it was
        // copied from the same status.
        let from = status as *const Status as usize;
        let id = if from == self.last_run_from && !self.entries.is_empty() {
            u32::try_from(self.entries.len()).unwrap_or(u32::MAX)
        } else {
            let id = self.push_entry(status.clone());
            self.last_run_from = from;
            id
        };
        let run = &mut self.slots[nodes];
        self.explicit += run.iter().filter(|&&s| s == 0).count();
        run.fill(id);
    }
    /// The explicit statuses with their node indices, in node order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Status)> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, &s)| s != 0)
            .filter_map(|(i, &s)| self.entries.get(s as usize - 1).map(|e| (i, e)))
    }
    /// The nodes among the first `num_nodes` whose status ([`Self::get`]) `keep` accepts, in
    /// node order. `keep` is asked once per distinct status (and once for the absent one),
    /// not once per node.
    pub fn nodes_where(
        &self,
        num_nodes: usize,
        mut keep: impl FnMut(Option<&Status>) -> bool,
    ) -> Vec<usize> {
        let absent = keep(self.absent.as_ref());
        // Indexed by slot value: 0 is the absent status.
        let mut kept: Vec<bool> = Vec::with_capacity(self.entries.len() + 1);
        kept.push(absent);
        kept.extend(self.entries.iter().map(|s| keep(Some(s))));
        let explicit_upto = self.slots.len().min(num_nodes);
        let mut out = Vec::with_capacity(num_nodes);
        // Every node up to `explicit_upto` has an explicit status and every status is kept
        // (a failed cycle that rejected each node, the table preemption reads): all of them,
        // without a lookup per node.
        let slots = &self.slots[..explicit_upto];
        if kept[1..].iter().all(|&k| k)
            && slots.iter().all(|&s| s != 0 && (s as usize) < kept.len())
        {
            out.extend(0..explicit_upto);
            if absent {
                out.extend(explicit_upto..num_nodes);
            }
            return out;
        }
        for (i, &s) in slots.iter().enumerate() {
            if kept.get(s as usize).copied().unwrap_or(false) {
                out.push(i);
            }
        }
        if absent {
            out.extend(explicit_upto..num_nodes);
        }
        out
    }
    /// Number of explicit entries.
    pub fn len(&self) -> usize {
        self.explicit
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What PostFilter can return: a nominated node.
#[derive(Debug, Clone, Default)]
pub struct PostFilterResult {
    pub nominated_node: Option<String>,
    /// Victims to delete (preemption).
    pub victims: Vec<Arc<PodInfo>>,
}

/// Pods nominated to nodes (by preemption), which filters must account for.
pub trait NominatedPods {
    /// Nominated pods of a node, in the order they were nominated.
    fn nominated_pods_for_node(&self, node: &str) -> &[Arc<PodInfo>];
    /// No pod is nominated anywhere (lets a cycle skip the per-node lookup).
    fn is_empty(&self) -> bool {
        false
    }
}

/// No nominated pods at all.
pub struct NoNominatedPods;

impl NominatedPods for NoNominatedPods {
    fn nominated_pods_for_node(&self, _node: &str) -> &[Arc<PodInfo>] {
        &[]
    }
    fn is_empty(&self) -> bool {
        true
    }
}

/// What a PostFilter plugin may run of its profile (upstream `framework.PluginsRunner`, the part
/// of `framework.Handle` preemption uses): the PreFilter extensions and the filters with
/// nominated pods, for dry runs. [`Framework`](crate::framework::Framework) implements it.
pub trait PluginsRunner {
    /// Whether the PreFilter extensions (AddPod / RemovePod) would run any plugin for `state`;
    /// when not, they leave the state unchanged. Conservatively `true` by default.
    fn pre_filter_extensions_active(&self, _state: &CycleState) -> bool {
        true
    }
    /// `RunPreFilterExtensionAddPod`.
    fn run_pre_filter_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_add: &Arc<PodInfo>,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Status;
    /// `RunPreFilterExtensionRemovePod`.
    fn run_pre_filter_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &Arc<PodInfo>,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Status;
    /// `RunFilterPluginsWithNominatedPods`.
    fn run_filter_with_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> Status;
    /// The Filter plugins `state` runs for `pod`, resolved once for a whole dry run (the
    /// PreFilter extensions change plugin state, never which plugins were skipped); `None` when
    /// the runner resolves nothing ahead.
    fn dry_run_filters(&self, _state: &CycleState, _pod: &PodInfo) -> Option<ActiveFilters<'_>> {
        None
    }
    /// [`run_filter_with_nominated_pods`](Self::run_filter_with_nominated_pods) through
    /// filters from [`dry_run_filters`](Self::dry_run_filters) of the same runner, state and
    /// pod, when given: the same status.
    fn run_filter_with_nominated_pods_using(
        &self,
        _filters: Option<&ActiveFilters<'_>>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> Status {
        self.run_filter_with_nominated_pods(state, pod, node, snapshot, nominated)
    }
    /// Whether [`run_filter_with_nominated_pods_using`](Self::run_filter_with_nominated_pods_using)
    /// would succeed, for callers that need no reasons (a dry run's reprieve loop): a
    /// rejection builds no status.
    fn passes_filters_with_nominated_pods(
        &self,
        filters: Option<&ActiveFilters<'_>>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> bool {
        self.run_filter_with_nominated_pods_using(filters, state, pod, node, snapshot, nominated)
            .is_success()
    }
}

/// Context PostFilter plugins need beyond the snapshot: the framework to run filters in dry runs
/// and the nominated pods.
pub struct PostFilterContext<'a> {
    pub framework: &'a dyn PluginsRunner,
    pub snapshot: &'a Snapshot,
    pub nominated: &'a dyn NominatedPods,
    /// Seeded randomness (candidate offset in DefaultPreemption).
    pub rng: &'a mut rand_chacha::ChaCha8Rng,
    /// The configured scheduler extenders (preemption hands them its candidates).
    pub extenders: &'a [Box<dyn crate::extender::Extender>],
}

pub trait PostFilterPlugin {
    fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
        ctx: &mut PostFilterContext<'_>,
    ) -> (Option<PostFilterResult>, Status);
}

pub trait PreScorePlugin {
    /// Runs once per cycle over the feasible nodes.
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status;
}

pub trait ScorePlugin {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status>;

    /// Scores `nodes` in order, appending to `out`, and stops at the first error. The result
    /// must equal calling [`score`](Self::score) per node; plugins override it to read their
    /// cycle state once per cycle instead of once per node.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        for n in nodes {
            out.push(self.score(state, pod, n)?);
        }
        Ok(())
    }

    /// [`score_nodes`](Self::score_nodes) of the snapshot's nodes `feasible` (indices into
    /// `snapshot.nodes`, so `nodes[k]` is `&snapshot.nodes[feasible[k]]`), with the same
    /// result, read from the snapshot's resource columns ([`Snapshot::resource_columns`])
    /// where the plugin can. `None` (the default): the framework calls `score_nodes` instead.
    fn score_nodes_in(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[usize],
        _out: &mut Vec<i64>,
    ) -> Option<Result<(), Status>> {
        None
    }

    /// When every node of `nodes` gets the same score this cycle, `Some((raw, normalized))`:
    /// what [`score_nodes`](Self::score_nodes) gives each node, and what
    /// [`normalize`](Self::normalize) makes of those scores on each node (`raw` again for a
    /// plugin without normalize). The framework then fills the cycle's score vectors with them
    /// instead of calling either, so the answer must be exact. `None` (the default) promises
    /// nothing.
    fn uniform_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _nodes: &[&NodeInfo],
    ) -> Option<(i64, i64)> {
        None
    }

    /// [`uniform_score`](Self::uniform_score) told `flags`, the union of the nodes' flags
    /// (the framework reads them once per cycle from the snapshot's columns, where the nodes'
    /// own objects would be cold): the same answer. The default asks `uniform_score`.
    fn uniform_score_with_flags(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        _flags: crate::node_info::NodeFlags,
    ) -> Option<(i64, i64)> {
        self.uniform_score(state, pod, nodes)
    }

    /// Whether [`normalize`](Self::normalize) does anything.
    fn has_normalize(&self) -> bool {
        false
    }
    /// Rewrites the raw scores of all feasible nodes (same order as `nodes` in PreScore).
    fn normalize(&self, _state: &CycleState, _pod: &PodInfo, _scores: &mut [i64]) -> Status {
        Status::success()
    }
}

pub trait ReservePlugin {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;
    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str);
}

pub trait PermitPlugin {
    fn permit(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status;
}

pub trait PreBindPlugin {
    fn pre_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status;
}

pub trait BindPlugin {
    fn bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status;
}

pub trait PostBindPlugin {
    fn post_bind(&self, state: &CycleState, pod: &PodInfo, node: &str);
}

/// Kinds of cluster events the queue distinguishes (upstream `EventResource` × `ActionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClusterEventKind {
    NodeAdd,
    NodeDelete,
    /// Any node update; the hint function gets old and new node to judge.
    NodeUpdate,
    /// A node update that changed allocatable (upstream `UpdateNodeAllocatable`).
    NodeUpdateAllocatable,
    /// A node update that changed labels (`UpdateNodeLabel`).
    NodeUpdateLabel,
    /// A node update that changed taints or `spec.unschedulable` (`UpdateNodeTaint`).
    NodeUpdateTaint,
    /// A node update that changed conditions (`UpdateNodeCondition`).
    NodeUpdateCondition,
    /// A node update that changed annotations (`UpdateNodeAnnotation`).
    NodeUpdateAnnotation,
    /// A pod was added to the cluster (assigned pods only, for other pods' hints).
    AssignedPodAdd,
    AssignedPodUpdate,
    AssignedPodDelete,
    /// The unscheduled pod itself was updated.
    UnscheduledPodUpdate,
    /// Another unscheduled pod was deleted (it may have held a nomination).
    UnscheduledPodDelete,
    /// Anything else no plugin distinguishes.
    Other,
    /// A storage object, PodDisruptionBudget or Service was added, updated or deleted (upstream
    /// events on those resources). A plugin sees it only if it registered that exact pair.
    Object(ksim_api::object::ObjectKind, ObjectAction),
    /// The pod's rejection timed out in the unschedulable pool (leftover flush): every plugin
    /// queues it.
    UnschedulableTimeout,
}

/// What happened to an object (upstream `ActionType` Add / Update / Delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectAction {
    Add,
    Update,
    Delete,
}

/// What a queueing hint says about an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueingHint {
    Skip,
    Queue,
}

/// The objects a cluster event carries, for hints to inspect.
pub enum ClusterEventObjects<'a> {
    Node {
        old: Option<&'a ksim_api::Node>,
        new: Option<&'a ksim_api::Node>,
    },
    Pod {
        old: Option<&'a PodInfo>,
        new: Option<&'a PodInfo>,
    },
    /// The versions of a storage object, PDB or Service before and after the event.
    Object {
        old: Option<&'a ksim_api::object::ApiObject>,
        new: Option<&'a ksim_api::object::ApiObject>,
    },
    None,
}

impl ClusterEventKind {
    /// Whether a plugin that registered `self` is interested in an event of kind `event`
    /// (a plain `NodeUpdate` registration covers every kind of node update).
    pub fn covers(self, event: ClusterEventKind) -> bool {
        use ClusterEventKind::*;
        self == event
            || (self == NodeUpdate
                && matches!(
                    event,
                    NodeUpdateAllocatable
                        | NodeUpdateLabel
                        | NodeUpdateTaint
                        | NodeUpdateCondition
                        | NodeUpdateAnnotation
                ))
    }
}

/// What one plugin that rejected `pod` says about a cluster event of `kind`: the plugin's own
/// hint when it registered a matching event, else `Skip` — except for upstream's workaround for
/// kubernetes#109437 in `buildQueueingHintMap` (pkg/scheduler/scheduler.go): a plugin that
/// registers `Node/Add` but no event covering `Node/UpdateNodeTaint` also gets
/// `Node/UpdateNodeTaint` with an always-`Queue` hint. So a pod rejected by NodeResourcesFit,
/// NodeAffinity or InterPodAffinity is requeued by any taint change (or uncordon) on any node.
/// A plugin without `EnqueueExtensions` is woken by every event, as upstream registers all
/// events for it.
pub fn plugin_queueing_hint(
    ext: Option<&dyn EnqueueExtensions>,
    pod: &PodInfo,
    kind: ClusterEventKind,
    objects: &ClusterEventObjects<'_>,
) -> QueueingHint {
    let Some(ext) = ext else {
        return QueueingHint::Queue;
    };
    let events = ext.events();
    if events.iter().any(|e| e.covers(kind)) {
        return ext.hint(pod, kind, objects);
    }
    if kind == ClusterEventKind::NodeUpdateTaint
        && events.contains(&ClusterEventKind::NodeAdd)
        && !events
            .iter()
            .any(|e| e.covers(ClusterEventKind::NodeUpdateTaint))
    {
        return QueueingHint::Queue;
    }
    QueueingHint::Skip
}

pub trait EnqueueExtensions {
    /// The event kinds this plugin cares about.
    fn events(&self) -> &'static [ClusterEventKind];
    /// Whether `event` may make `pod` (rejected by this plugin) schedulable.
    fn hint(
        &self,
        _pod: &PodInfo,
        _kind: ClusterEventKind,
        _objects: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        QueueingHint::Queue
    }
}
