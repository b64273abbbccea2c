//! The generic preemption evaluator, mirroring upstream
//! `pkg/scheduler/framework/preemption/preemption.go` (`Evaluator.Preempt`, `findCandidates`,
//! `DryRunPreemption`, `SelectCandidate`, `pickOneNodeForPreemption`) and the helpers it uses
//! from `pkg/scheduler/util` (`MoreImportantPod`, `GetEarliestPodStartTime`).
//!
//! A preemption plugin supplies the policy through [`Interface`] (the in-tree one is
//! [`crate::plugins::default_preemption`]); the [`Evaluator`] runs the search.
//!
//! Files: this one holds the types and `Evaluator.Preempt`; `candidates` the candidate search
//! (`findCandidates`, `DryRunPreemption`); `choice` the candidate choice (`SelectCandidate`);
//! `importance` start times and `MoreImportantPod`, which order victims; `go_sort` Go's
//! `sort.Slice`. The public items keep their `preemption::` paths.
//!
//! Deliberate differences from upstream, each because ksim has no API server, no goroutines and
//! no wall clock:
//! - **No side effects.** Upstream's `prepareCandidate` deletes the victims and clears the
//!   nominations of lower-priority pods nominated to the chosen node. Here the evaluator only
//!   decides: the victims come back in [`PostFilterResult::victims`] and the caller (the engine)
//!   deletes them, skipping victims that are already terminating, and clears the nominations
//!   listed by [`lower_priority_nominated_pods`].
//! - **Sequential dry run.** Upstream checks the potential nodes with 16 workers and cancels once
//!   enough candidates were found; ksim checks them one by one from the same random offset and
//!   stops at the same condition. Below 1000 potential nodes (with the default arguments) every
//!   node is checked either way, so the candidate set is the same.
//! - **Order of potential nodes and ties.** Upstream lists the potential nodes by iterating a Go
//!   map (random order) and breaks the last tie between equal candidates by map order too. ksim
//!   lists them in snapshot order rotated by an offset drawn from the seeded RNG, and picks the
//!   first of the tied candidates in that order: random, but reproducible.
//! - **Candidates after extenders.** Upstream rebuilds the candidate list from a Go map (random
//!   order) whenever any extender is configured. ksim keeps the dry run's order for the nodes an
//!   extender kept and appends the nodes it added in its answer's order: one of upstream's
//!   possible orders, reproducible.
//! - **Pods without `status.startTime`.** Upstream uses `time.Now()` for them. ksim treats them as
//!   started after every pod that has a start time, and as equal to each other.

use std::sync::Arc;

use ksim_api::{PodDisruptionBudget, Selector};
use rand_chacha::ChaCha8Rng;

use crate::extender::{Extender, MetaVictims, Victims};
use crate::framework::cycle_state::CycleState;
use crate::framework::interface::{NodeToStatus, NominatedPods, PluginsRunner, PostFilterResult};
use crate::framework::runtime::ActiveFilters;
use crate::framework::status::Status;
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;
use crate::schedule::{Diagnosis, FitError};

mod candidates;
mod choice;
mod go_sort;
mod importance;
#[cfg(test)]
mod tests;

pub use candidates::{nodes_for_status_code, random_offset};
pub use choice::{lower_priority_nominated_pods, pick_one_node_for_preemption, select_candidate};
pub use go_sort::go_sort_slice;
pub use importance::{
    earliest_start_of_highest_priority, more_important, more_important_pod, parse_rfc3339_nanos,
    StartTime,
};

/// Reason of the absent nodes when no candidate was found.
pub const PREEMPTION_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// A node on which the preemptor fits once `victims` are evicted.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Index into `Snapshot::nodes`.
    pub node: usize,
    pub name: String,
    /// Most important first (highest priority, then earliest start).
    pub victims: Vec<Arc<PodInfo>>,
    /// Victims whose eviction would violate a PodDisruptionBudget.
    pub num_pdb_violations: i64,
}

/// What a dry run reads besides the cycle state: the framework to run filters, the snapshot and
/// the nominated pods.
#[derive(Clone, Copy)]
pub struct DryRunContext<'a> {
    pub framework: &'a dyn PluginsRunner,
    pub snapshot: &'a Snapshot,
    pub nominated: &'a dyn NominatedPods,
    /// The configured scheduler extenders (upstream `Handle.Extenders()`), for `callExtenders`.
    pub extenders: &'a [Box<dyn Extender>],
    /// Whether the PreFilter extensions (AddPod / RemovePod) run for the cycle's state
    /// ([`PluginsRunner::pre_filter_extensions_active`]); `true` when not known. The dry run
    /// asks once and sets it for every node it checks.
    pub pre_filter_extensions: bool,
    /// The Filter plugins of the cycle, resolved once per dry run
    /// ([`PluginsRunner::dry_run_filters`]); `None` runs the full list.
    pub filters: Option<&'a ActiveFilters<'a>>,
}

/// A PodDisruptionBudget with its selector compiled once per preemption attempt.
#[derive(Debug, Clone)]
pub struct CompiledPdb {
    pub namespace: String,
    pub selector: Selector,
    pub disruptions_allowed: i32,
    /// `status.disruptedPods` keys (pod names already being disrupted).
    pub disrupted_pods: Vec<String>,
}

impl CompiledPdb {
    pub fn new(pdb: &PodDisruptionBudget) -> CompiledPdb {
        CompiledPdb {
            namespace: pdb.metadata.namespace.clone(),
            selector: Selector::from_label_selector(pdb.spec.selector.as_ref()),
            disruptions_allowed: pdb.status.disruptions_allowed,
            disrupted_pods: pdb.status.disrupted_pods.keys().cloned().collect(),
        }
    }

    pub fn compile_all(pdbs: &[PodDisruptionBudget]) -> Vec<CompiledPdb> {
        pdbs.iter().map(CompiledPdb::new).collect()
    }
}

/// The policy a preemption plugin supplies (upstream `preemption.Interface`, without the parts
/// only extenders use).
pub trait Interface {
    /// A random offset into the potential nodes and how many candidates to look for.
    fn get_offset_and_num_candidates(
        &self,
        num_nodes: usize,
        rng: &mut ChaCha8Rng,
    ) -> (usize, usize);

    /// `Ok` when `pod` may preempt others, else the reason. `nominated_node_status` is the status
    /// of the pod's nominated node in the failed cycle (`None` means the default
    /// UnschedulableAndUnresolvable).
    fn pod_eligible_to_preempt_others(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nominated_node_status: Option<&Status>,
    ) -> Result<(), String>;

    /// The fewest pods to evict from `node` (the snapshot's) for `pod` to fit, most important
    /// first, and how many of them violate a PDB. `state` is a private copy; pods are removed
    /// and added on a copy of `node` made in `scratch` (its allocations reused from node to
    /// node; see [`scratch_node`]).
    fn select_victims_on_node(
        &self,
        ctx: &DryRunContext<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        scratch: &mut Option<NodeInfo>,
        pdbs: &[CompiledPdb],
    ) -> (Vec<Arc<PodInfo>>, i64, Status);

    /// [`select_victims_on_node`](Self::select_victims_on_node) with the victims written into
    /// `victims` (replacing what it held) as references to the node's own pods, or `None` when
    /// the node surely yields no victims and a status that is not a success: the dry run reads
    /// failed nodes' statuses only when no candidate is found, and then asks
    /// `select_victims_on_node` for them. The dry run passes one list from node to node, so
    /// that a node whose victims are not kept costs no allocation and no reference count;
    /// `victims` is read only on `Some`. The default always answers in full; a victim that is
    /// not one of `node`'s pods (victims are the node's pods, as upstream's are) is an error
    /// status for the node.
    #[allow(clippy::too_many_arguments)]
    fn select_victims_or_reject<'n>(
        &self,
        ctx: &DryRunContext<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &'n NodeInfo,
        scratch: &mut Option<NodeInfo>,
        pdbs: &[CompiledPdb],
        victims: &mut Vec<&'n Arc<PodInfo>>,
    ) -> Option<(i64, Status)> {
        let (v, n, s) = self.select_victims_on_node(ctx, state, pod, node, scratch, pdbs);
        victims.clear();
        for p in &v {
            match node.pods.iter().find(|q| Arc::ptr_eq(q, p)) {
                Some(q) => victims.push(q),
                None => {
                    victims.clear();
                    return Some((
                        0,
                        Status::error(format!(
                            "victim {} is not a pod of node {}",
                            p.name(),
                            node.name()
                        )),
                    ));
                }
            }
        }
        Some((n, s))
    }
}

/// The scratch NodeInfo of a dry run (allocated for `node` on the first use, reused after),
/// for the caller to copy a node into.
pub fn scratch_node<'s>(node: &NodeInfo, scratch: &'s mut Option<NodeInfo>) -> &'s mut NodeInfo {
    match scratch {
        Some(s) => s,
        None => scratch.insert(NodeInfo::new(node.node.clone())),
    }
}

/// Runs preemption with a plugin's policy.
pub struct Evaluator<'p> {
    pub plugin_name: &'static str,
    pub interface: &'p dyn Interface,
}

impl Evaluator<'_> {
    /// `Evaluator.Preempt`. The returned statuses carry no plugin prefix; the plugin adds its own.
    ///
    /// - `(None, Unschedulable)`: the pod is not eligible.
    /// - `(None, Error)`: the dry run failed on every node with an error.
    /// - `(Some(result with nominated node ""), Unschedulable)`: no candidate; the status message
    ///   is a FitError over the dry-run statuses. The empty nominated node tells the caller to
    ///   clear the pod's nomination.
    /// - `(Some(result), Success)`: nominate `result.nominated_node`, evict `result.victims`.
    pub fn preempt(
        &self,
        ctx: &DryRunContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
        rng: &mut ChaCha8Rng,
    ) -> (Option<PostFilterResult>, Status) {
        // 1) Eligibility.
        let nnn = &pod.pod.status.nominated_node_name;
        let nominated_status = ctx
            .snapshot
            .index
            .get(nnn.as_str())
            .map_or(statuses.absent.as_ref(), |&i| statuses.get(i));
        if let Err(msg) =
            self.interface
                .pod_eligible_to_preempt_others(pod, ctx.snapshot, nominated_status)
        {
            return (None, Status::unschedulable(msg));
        }

        // 2) Candidates. Without extenders to read them all, only the one `SelectCandidate`
        // would pick is kept (steps 3 and 4 at once).
        if ctx.extenders.is_empty() {
            let (best, node_statuses, err) =
                match self.find_best_candidate(ctx, state, pod, statuses, rng) {
                    Ok(r) => r,
                    Err(s) => return (None, s),
                };
            let Some(best) = best else {
                return no_candidate(ctx, node_statuses, err);
            };
            let result = PostFilterResult {
                nominated_node: Some(best.name),
                victims: best.victims,
            };
            return (Some(result), Status::success());
        }
        let (candidates, node_statuses, err) =
            match self.find_candidates(ctx, state, pod, statuses, rng) {
                Ok(r) => r,
                Err(s) => return (None, s),
            };
        if candidates.is_empty() {
            return no_candidate(ctx, node_statuses, err);
        }

        // 3) Extenders may narrow (or change) the candidates.
        let candidates = match call_extenders(ctx, pod, candidates) {
            Ok(c) => c,
            Err(s) => return (None, s),
        };
        // 4) The best candidate.
        let Some(best) = select_candidate(&candidates) else {
            return (
                None,
                Status::unschedulable("no candidate node for preemption"),
            );
        };
        // 5) Evicting the victims is the caller's job (see the module doc).
        let result = PostFilterResult {
            nominated_node: Some(best.name.clone()),
            victims: best.victims.clone(),
        };
        (Some(result), Status::success())
    }
}

/// `Preempt`'s answer when the dry run found no candidate: the aggregated error of the nodes
/// that failed with one, else no nomination and a FitError over the dry run's statuses.
fn no_candidate(
    ctx: &DryRunContext<'_>,
    node_statuses: NodeToStatus,
    err: Option<String>,
) -> (Option<PostFilterResult>, Status) {
    if let Some(e) = err {
        return (None, Status::error(e));
    }
    let mut node_to_status = node_statuses;
    node_to_status.absent = Some(Status::unresolvable(PREEMPTION_NOT_HELPFUL));
    let fit = FitError {
        num_all_nodes: ctx.snapshot.len(),
        diagnosis: Diagnosis {
            node_to_status,
            ..Default::default()
        },
    };
    let result = PostFilterResult {
        nominated_node: Some(String::new()),
        victims: Vec::new(),
    };
    (Some(result), Status::unschedulable(fit.message()))
}

/// `callExtenders`: each extender that supports preemption and is interested in the pod gets the
/// candidates (node → victims) and answers with the ones to keep, by victim UID; its answer
/// replaces the candidates for the next extender. An error (transport, an unknown node or pod in
/// the answer) from an ignorable extender skips it, from another one fails the preemption; a
/// node answered without victims is dropped from an ignorable extender's answer and fails the
/// preemption otherwise. No candidate left: no preemption.
fn call_extenders(
    ctx: &DryRunContext<'_>,
    pod: &PodInfo,
    candidates: Vec<Candidate>,
) -> Result<Vec<Candidate>, Status> {
    let mut current = candidates;
    for ext in ctx.extenders {
        if !ext.supports_preemption() || !ext.is_interested(pod) {
            continue;
        }
        // Go writes the map's keys sorted.
        let mut sent: Vec<&Candidate> = current.iter().collect();
        sent.sort_by(|a, b| a.name.cmp(&b.name));
        let args: Vec<(&str, Victims<'_>)> = sent
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    Victims {
                        pods: &c.victims,
                        num_pdb_violations: c.num_pdb_violations,
                    },
                )
            })
            .collect();
        let answer = ext
            .process_preemption(pod, &args)
            .and_then(|meta| convert_to_victims(ext.name(), meta, ctx.snapshot));
        let mut answer = match answer {
            Ok(a) => a,
            Err(_) if ext.is_ignorable() => continue,
            Err(e) => return Err(Status::error(e)),
        };
        // Upstream checks the nodes in map order; name order here.
        let mut empty: Vec<&str> = answer
            .iter()
            .filter(|c| c.victims.is_empty())
            .map(|c| c.name.as_str())
            .collect();
        empty.sort_unstable();
        if let Some(first) = empty.first() {
            if !ext.is_ignorable() {
                return Err(Status::error(format!(
                    "expected at least one victim pod on node {first:?}"
                )));
            }
            answer.retain(|c| !c.victims.is_empty());
        }
        // The dry run's order for the nodes kept, then the added ones in the answer's order.
        let mut order: Vec<usize> = Vec::with_capacity(answer.len());
        for c in &current {
            if let Some(i) = answer.iter().position(|a| a.name == c.name) {
                order.push(i);
            }
        }
        for i in 0..answer.len() {
            if !order.contains(&i) {
                order.push(i);
            }
        }
        let mut slots: Vec<Option<Candidate>> = answer.into_iter().map(Some).collect();
        let next: Vec<Candidate> = order.into_iter().filter_map(|i| slots[i].take()).collect();
        current = next;
        if current.is_empty() {
            break;
        }
    }
    Ok(current)
}

/// `convertToVictims`: the extender's answer (node → victim UIDs) as candidates, the victims
/// looked up among the pods on that node in the cycle's snapshot.
fn convert_to_victims(
    extender: &str,
    meta: Vec<(String, MetaVictims)>,
    snapshot: &Snapshot,
) -> Result<Vec<Candidate>, String> {
    let mut out = Vec::with_capacity(meta.len());
    for (name, mv) in meta {
        let Some(&node) = snapshot.index.get(&name) else {
            return Err(format!("nodeinfo not found for node name {name:?}"));
        };
        let info = &snapshot.nodes[node];
        let mut victims = Vec::with_capacity(mv.pods.len());
        for uid in &mv.pods {
            match info.pods.iter().find(|p| p.uid() == uid) {
                Some(p) => victims.push(p.clone()),
                // Go prints the *MetaPod with %v: `&{UID}`.
                None => {
                    return Err(format!(
                        "extender: {extender} claims to preempt pod (UID: &{{{uid}}}) on node: {name}, but the pod is not found on that node"
                    ))
                }
            }
        }
        out.push(Candidate {
            node,
            name,
            victims,
            num_pdb_violations: mv.num_pdb_violations,
        });
    }
    Ok(out)
}
