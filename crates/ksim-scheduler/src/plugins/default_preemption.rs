//! `DefaultPreemption` (upstream `pkg/scheduler/framework/plugins/defaultpreemption`): the
//! PostFilter plugin that, when no node fits, looks for a node where evicting lower-priority
//! pods makes the pod fit, and nominates it.
//!
//! The search itself is the generic [`crate::preemption::Evaluator`]; this module supplies the
//! default policy: `PodEligibleToPreemptOthers`, `SelectVictimsOnNode` (remove every
//! lower-priority pod, check the pod fits, then reprieve PDB-violating victims first and the
//! others next, most important first), `filterPodsWithPDBViolation` and
//! `calculateNumCandidates`.
//!
//! Deliberate differences:
//! - The plugin only decides. On success the [`PostFilterResult`] names the node and the victims;
//!   the caller (the engine) deletes the victims and clears the nominations of lower-priority
//!   pods nominated to that node ([`crate::preemption::lower_priority_nominated_pods`]).
//!   Because the engine applies that synchronously, upstream's asynchronous-preemption PreEnqueue
//!   gate ("waiting for the preemption for this pod to be finished") never triggers and is not
//!   implemented.
//! - The custom `IsEligiblePod` / `MoreImportantPod` hooks are fixed to upstream's defaults.
//! - Workload-aware (pod group) preemption, alpha upstream, is not modelled.

use std::sync::Arc;

use ksim_api::config::{decode_args, DefaultPreemptionArgs};
use rand_chacha::ChaCha8Rng;
use smallvec::SmallVec;

use crate::framework::runtime::{nominated_for, relevant_nominations};
use crate::framework::{
    CycleState, FactoryArgs, NodeToStatus, Plugin, PluginRef, PostFilterContext, PostFilterPlugin,
    PostFilterResult, Status,
};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;
use crate::preemption::{
    go_sort_slice, more_important, random_offset, scratch_node, Candidate, CompiledPdb,
    DryRunContext, Evaluator, Interface, StartTime,
};

pub const NAME: &str = "DefaultPreemption";

/// Status reason of a node without any lower-priority pod.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

pub struct DefaultPreemption {
    args: DefaultPreemptionArgs,
}

pub fn new(a: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    let args: DefaultPreemptionArgs = decode_args(NAME, a.args)?;
    Ok(Arc::new(DefaultPreemption::with_args(args)?))
}

/// `ValidateDefaultPreemptionArgs`.
pub fn validate_args(args: &DefaultPreemptionArgs) -> Result<(), String> {
    let mut errs: Vec<String> = Vec::new();
    let pct = args.min_candidate_nodes_percentage;
    let abs = args.min_candidate_nodes_absolute;
    if !(0..=100).contains(&pct) {
        errs.push(format!(
            "minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]"
        ));
    }
    if abs < 0 {
        errs.push(format!(
            "minCandidateNodesAbsolute: Invalid value: {abs}: not in valid range [0, inf)"
        ));
    }
    if pct == 0 && abs == 0 {
        errs.push(
            "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"
                .into(),
        );
        errs.push(
            "minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage"
                .into(),
        );
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

impl DefaultPreemption {
    /// The plugin with validated arguments.
    pub fn with_args(args: DefaultPreemptionArgs) -> Result<DefaultPreemption, String> {
        validate_args(&args)?;
        Ok(DefaultPreemption { args })
    }

    pub fn args(&self) -> &DefaultPreemptionArgs {
        &self.args
    }

    fn evaluator(&self) -> Evaluator<'_> {
        Evaluator {
            plugin_name: NAME,
            interface: self,
        }
    }

    /// `calculateNumCandidates`: `minCandidateNodesPercentage` of the nodes, at least
    /// `minCandidateNodesAbsolute`, at most all of them.
    pub fn calculate_num_candidates(&self, num_nodes: usize) -> usize {
        let num = num_nodes as i64;
        let mut n = num * self.args.min_candidate_nodes_percentage as i64 / 100;
        if n < self.args.min_candidate_nodes_absolute as i64 {
            n = self.args.min_candidate_nodes_absolute as i64;
        }
        n.min(num).max(0) as usize
    }

    /// `PodEligibleToPreemptOthers` given the failed cycle's node statuses: `Err` is the reason
    /// the pod may not preempt.
    pub fn eligibility(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        statuses: &NodeToStatus,
    ) -> Result<(), String> {
        let nnn = &pod.pod.status.nominated_node_name;
        let nominated_status = snapshot
            .index
            .get(nnn.as_str())
            .map_or(statuses.absent.as_ref(), |&i| statuses.get(i));
        self.pod_eligible_to_preempt_others(pod, snapshot, nominated_status)
    }

    /// Every preemption candidate for `pod` as the PostFilter would find them (after the same
    /// eligibility check), for reports and conformance checks. `None` when the pod is not
    /// eligible; `Err` when the search failed with an error.
    pub fn candidates(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
        ctx: &mut PostFilterContext<'_>,
    ) -> Result<Option<Vec<Candidate>>, Status> {
        let dctx = DryRunContext {
            framework: ctx.framework,
            snapshot: ctx.snapshot,
            nominated: ctx.nominated,
            extenders: ctx.extenders,
            pre_filter_extensions: true,
            filters: None,
        };
        if self.eligibility(pod, ctx.snapshot, statuses).is_err() {
            return Ok(None);
        }
        let (candidates, _, err) = self
            .evaluator()
            .find_candidates(&dctx, state, pod, statuses, ctx.rng)?;
        match err {
            Some(e) if candidates.is_empty() => Err(Status::error(e)),
            _ => Ok(Some(candidates)),
        }
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
}

impl PostFilterPlugin for DefaultPreemption {
    fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
        ctx: &mut PostFilterContext<'_>,
    ) -> (Option<PostFilterResult>, Status) {
        let dctx = DryRunContext {
            framework: ctx.framework,
            snapshot: ctx.snapshot,
            nominated: ctx.nominated,
            extenders: ctx.extenders,
            pre_filter_extensions: true,
            filters: None,
        };
        let (result, status) = self
            .evaluator()
            .preempt(&dctx, state, pod, statuses, ctx.rng);
        let msg = status.message();
        if msg.is_empty() {
            return (result, status);
        }
        (
            result,
            Status::new(status.code, format!("preemption: {msg}")),
        )
    }
}

impl Interface for DefaultPreemption {
    fn get_offset_and_num_candidates(
        &self,
        num_nodes: usize,
        rng: &mut ChaCha8Rng,
    ) -> (usize, usize) {
        (
            random_offset(num_nodes, rng),
            self.calculate_num_candidates(num_nodes),
        )
    }

    fn pod_eligible_to_preempt_others(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nominated_node_status: Option<&Status>,
    ) -> Result<(), String> {
        if pod.pod.spec.preemption_policy.as_deref() == Some("Never") {
            return Err("not eligible due to preemptionPolicy=Never.".into());
        }
        let nnn = &pod.pod.status.nominated_node_name;
        if !nnn.is_empty() {
            // A nominated node the filters found unresolvable is no reason to wait: preempt
            // again elsewhere.
            let code = nominated_node_status
                .map_or(crate::framework::Code::UnschedulableAndUnresolvable, |s| {
                    s.code
                });
            if code == crate::framework::Code::UnschedulableAndUnresolvable {
                return Ok(());
            }
            if let Some(node) = snapshot.get(nnn) {
                if node
                    .pods
                    .iter()
                    .any(|p| is_preemption_allowed(p, pod) && terminating_by_preemption(p))
                {
                    return Err(
                        "not eligible due to a terminating pod on the nominated node.".into(),
                    );
                }
            }
        }
        Ok(())
    }

    fn select_victims_on_node(
        &self,
        ctx: &DryRunContext<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        scratch: &mut Option<NodeInfo>,
        pdbs: &[CompiledPdb],
    ) -> (Vec<Arc<PodInfo>>, i64, Status) {
        let mut victims = Vec::new();
        let (n, s) = select_victims_on_node(ctx, state, pod, node, scratch, pdbs, &mut victims);
        (victims.into_iter().cloned().collect(), n, s)
    }

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
        match select_victims_by_totals(ctx, state, pod, node, pdbs, victims) {
            ByTotals::Rejected => None,
            ByTotals::Selected(n, s) => Some((n, s)),
            ByTotals::Unknown => Some(select_victims_on_node(
                ctx, state, pod, node, scratch, pdbs, victims,
            )),
        }
    }
}

/// What [`select_victims_by_totals`] could tell.
enum ByTotals {
    /// `select_victims_on_node` returns no victims and a status that is not a success.
    Rejected,
    /// What `select_victims_on_node` returns, the victims written into the caller's list.
    Selected(i64, Status),
    /// Ask `select_victims_on_node`.
    Unknown,
}

/// `select_victims_on_node` told by arithmetic where it can, without copying the node or
/// moving a pod: the first check (the pod with every lower-priority pod removed) fails when an
/// active Filter plugin that judges only a node's totals (NodeResourcesFit) rejects the pod on
/// the totals the removals would leave
/// ([`ActiveFilters::rejects_with_totals`](crate::framework::runtime::ActiveFilters::rejects_with_totals));
/// and when every active plugin either judges totals or ignores pods
/// ([`ActiveFilters::totals_decide`](crate::framework::runtime::ActiveFilters::totals_decide))
/// and no nominated pod takes part, each check of the search (the first one and each
/// reprieve) is the plugins ignoring pods on the node as it is and the totals ones on the
/// totals of the pods it would hold.
///
/// Only without PreFilter extensions to run: nothing touches the cycle state then, and
/// removing or adding pods cannot fail (a node's own pods are always found), so the checks
/// see what the copy would hold. A removal takes the first pod with the removed pod's address
/// or UID; when two different pods of the node share a UID, that may be another pod than the
/// one named, and the long way is taken (for the first check, only a pod that stays sharing a
/// UID with a removed one matters).
fn select_victims_by_totals<'n>(
    ctx: &DryRunContext<'_>,
    state: &CycleState,
    pod: &PodInfo,
    node: &'n NodeInfo,
    pdbs: &[CompiledPdb],
    victims: &mut Vec<&'n Arc<PodInfo>>,
) -> ByTotals {
    let Some(filters) = ctx.filters else {
        return ByTotals::Unknown;
    };
    if ctx.pre_filter_extensions {
        return ByTotals::Unknown;
    }
    // What `NodeInfo::forget_pod` does to the totals for each removed pod.
    let mut requested = node.requested.clone();
    let mut removed = 0;
    for p in &node.pods {
        if is_preemption_allowed(p, pod) {
            requested.sub(&p.requests);
            removed += 1;
        }
    }
    if removed == 0 {
        // No victims: a status of its own, cheap to build.
        return ByTotals::Unknown;
    }
    requested.allowed_pod_number = 0;
    let mut num_pods = node.pods.len() - removed;
    let eligible = |p: &Arc<PodInfo>| is_preemption_allowed(p, pod);
    if filters.rejects_with_totals(state, pod, node, &requested, num_pods) {
        // Only a pod that stays sharing a UID with a removed one matters here: pair by pair
        // when there are few pairs (most rejected nodes), else any two pods sharing a UID
        // (sorted; a node may hold over a hundred pods), which the long way also answers.
        let staying = node.pods.len() - removed;
        let shared = if staying * removed <= 64 {
            node.pods.iter().filter(|s| !eligible(s)).any(|s| {
                node.pods
                    .iter()
                    .filter(|g| eligible(g))
                    .any(|g| s.same_uid(g))
            })
        } else {
            shares_uid(&node.pods)
        };
        return if shared {
            ByTotals::Unknown
        } else {
            ByTotals::Rejected
        };
    }
    if !filters.totals_decide()
        || relevant_nominations(nominated_for(ctx.nominated, node), pod)
        || shares_uid(&node.pods)
    {
        return ByTotals::Unknown;
    }
    // The first check: the plugins judging totals pass; the others ignore pods.
    if !filters.pod_blind_pass(state, pod, node) {
        return ByTotals::Rejected;
    }
    let mut potential: Eligible<'_> = SmallVec::new();
    potential.extend(
        node.pods
            .iter()
            .filter(|p| eligible(p))
            .map(|p| (p, p.priority(), Start::UNREAD)),
    );
    // Each reprieve adds the pod's requests (`NodeInfo::add_pod`) and, when the pod no
    // longer fits, takes them back off (the removal finds that very pod: no two pods share a
    // UID).
    let (n, s) = reprieve(&mut potential, pdbs, victims, |v| {
        requested.add(&v.0.requests);
        requested.allowed_pod_number = 0;
        num_pods += 1;
        let fits = !filters.rejects_with_totals(state, pod, node, &requested, num_pods);
        if !fits {
            requested.sub(&v.0.requests);
            requested.allowed_pod_number = 0;
            num_pods -= 1;
        }
        Ok(fits)
    });
    ByTotals::Selected(n, s)
}

/// Whether two different pods of `pods` share a UID. Pair by pair for a few pods; else
/// sorted by UID hash (a node may hold over a hundred pods): pods with one UID have one hash,
/// so only pods with equal hashes are compared. Both compare the pods' UID hashes first
/// ([`PodInfo::same_uid`]) and read UID strings only where those are equal.
fn shares_uid(pods: &[Arc<PodInfo>]) -> bool {
    if pods.len() <= 8 {
        return pods.iter().enumerate().any(|(i, a)| {
            pods[i + 1..]
                .iter()
                .any(|b| !Arc::ptr_eq(a, b) && a.same_uid(b))
        });
    }
    let mut keys: SmallVec<[(u32, &Arc<PodInfo>); 16]> =
        pods.iter().map(|p| (p.uid_hash(), p)).collect();
    keys.sort_unstable_by_key(|k| k.0);
    keys.chunk_by(|a, b| a.0 == b.0).any(|run| {
        run.iter().enumerate().any(|(i, a)| {
            run[i + 1..]
                .iter()
                .any(|b| !Arc::ptr_eq(a.1, b.1) && a.1.uid() == b.1.uid())
        })
    })
}

/// `isPreemptionAllowed` with the default `IsEligiblePod`: only strictly lower priority.
fn is_preemption_allowed(victim: &PodInfo, preemptor: &PodInfo) -> bool {
    victim.priority() < preemptor.priority()
}

/// `podTerminatingByPreemption`: being deleted, with the DisruptionTarget condition the
/// scheduler sets when it preempts.
fn terminating_by_preemption(p: &PodInfo) -> bool {
    if p.pod.metadata.deletion_timestamp.is_none() {
        return false;
    }
    p.pod
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "DisruptionTarget")
        .is_some_and(|c| c.status == "True" && c.reason == "PreemptionByScheduler")
}

/// Upstream `SelectVictimsOnNode` (see the trait method), the victims (pods of `original`)
/// written into `victims` (emptied first) and the number violating a PDB returned with the
/// status.
fn select_victims_on_node<'n>(
    ctx: &DryRunContext<'_>,
    state: &mut CycleState,
    pod: &PodInfo,
    original: &'n NodeInfo,
    scratch: &mut Option<NodeInfo>,
    pdbs: &[CompiledPdb],
    victims: &mut Vec<&'n Arc<PodInfo>>,
) -> (i64, Status) {
    victims.clear();
    let fw = ctx.framework;
    let snapshot = ctx.snapshot;
    let filters = ctx.filters;
    // Whether the PreFilter extensions run at all for this pod: when not, removing and adding
    // pods changes only the node, and the calls (one per pod moved) are skipped.
    let extensions = ctx.pre_filter_extensions;
    let remove = |state: &mut CycleState, node: &mut NodeInfo, p: &Arc<PodInfo>| -> Status {
        if !node.remove_pod_info(p) {
            return Status::error(format!(
                "no corresponding pod {} in pods of node {}",
                p.name(),
                node.name()
            ));
        }
        if !extensions {
            return Status::success();
        }
        let s = fw.run_pre_filter_remove_pod(state, pod, p, node, snapshot);
        if s.is_success() {
            s
        } else {
            Status::error(s.message())
        }
    };
    let add = |state: &mut CycleState, node: &mut NodeInfo, p: &Arc<PodInfo>| -> Status {
        node.add_pod(p.clone());
        if !extensions {
            return Status::success();
        }
        let s = fw.run_pre_filter_add_pod(state, pod, p, node, snapshot);
        if s.is_success() {
            s
        } else {
            Status::error(s.message())
        }
    };

    // Every pod eligible for preemption, in the node's order (borrowed from the snapshot's
    // node, which the dry run does not change).
    // Start times are read only once the pod fits without them (most nodes fail that check).
    // Filled in place (a `collect` builds the list and then moves it, a copy of the whole
    // inline buffer per node).
    let mut potential: Eligible<'n> = SmallVec::new();
    potential.extend(
        original
            .pods
            .iter()
            .filter(|p| is_preemption_allowed(p, pod))
            .map(|p| (p, p.priority(), Start::UNREAD)),
    );
    if potential.is_empty() {
        return (0, Status::unresolvable(NO_VICTIMS));
    }
    // Remove them from a copy of the node and check the pod fits without them. Without
    // PreFilter extensions to call after each removal, the copy is made without them at once
    // (the same node; see `NodeInfo::copy_removing_into`).
    let node = scratch_node(original, scratch);
    if extensions || !original.copy_removing_into(node, potential.iter().map(|e| e.0)) {
        original.copy_into(node);
        for &(p, _, _) in &potential {
            let s = remove(state, node, p);
            if !s.is_success() {
                return (0, s);
            }
        }
    }
    // Upstream does not try to satisfy the pod's affinity to the victims themselves.
    let s =
        fw.run_filter_with_nominated_pods_using(filters, state, pod, node, snapshot, ctx.nominated);
    if !s.is_success() {
        return (0, s);
    }

    // Only whether the pod fits matters here: no status is built for a rejection.
    reprieve(&mut potential, pdbs, victims, |v| {
        let s = add(state, node, v.0);
        if !s.is_success() {
            return Err(s);
        }
        let fits = fw.passes_filters_with_nominated_pods(
            filters,
            state,
            pod,
            node,
            snapshot,
            ctx.nominated,
        );
        if !fits {
            let s = remove(state, node, v.0);
            if !s.is_success() {
                return Err(s);
            }
        }
        Ok(fits)
    })
}

/// The reprieve of `SelectVictimsOnNode`, once the pod fits with every pod of `potential`
/// removed: the most important pods are added back first, the PDB-violating ones before the
/// others; `add_back(pod)` adds one back and answers whether the pod still fits (taking it
/// off again when not), or the error that stops the search. The victims, most important
/// first, written into `out` (emptied first; left empty on an error), how many of them
/// violate a PDB, and the status.
fn reprieve<'n>(
    potential: &mut Eligible<'n>,
    pdbs: &[CompiledPdb],
    out: &mut Vec<&'n Arc<PodInfo>>,
    mut add_back: impl FnMut(&(&'n Arc<PodInfo>, i32, Start)) -> Result<bool, Status>,
) -> (i64, Status) {
    out.clear();
    for e in potential.iter_mut() {
        e.2 = Start::of(e.0);
    }
    go_sort_slice(potential, |a, b| {
        more_important((a.1, a.2.get()), (b.1, b.2.get()))
    });
    // With no PDB in the cluster every pod is non-violating, in the same order: the split
    // (two more lists per candidate node) is skipped.
    let split;
    let (violating, non_violating): (&[_], &[_]) = if pdbs.is_empty() {
        (&[], potential)
    } else {
        split = filter_pods_with_pdb_violation(potential, pdbs);
        (&split.0, &split.1)
    };
    let mut victims: Eligible<'n> = SmallVec::new();
    let mut num_violating: i64 = 0;
    for v in violating {
        match add_back(v) {
            Err(s) => return (0, s),
            Ok(false) => {
                victims.push(*v);
                num_violating += 1;
            }
            Ok(true) => {}
        }
    }
    for v in non_violating {
        match add_back(v) {
            Err(s) => return (0, s),
            Ok(false) => victims.push(*v),
            Ok(true) => {}
        }
    }
    // Keep the victims ordered from most to least important.
    if !violating.is_empty() && !non_violating.is_empty() {
        go_sort_slice(&mut victims, |a, b| {
            more_important((a.1, a.2.get()), (b.1, b.2.get()))
        });
    }
    // By reference: `into_iter` would move the whole inline buffer first. The victims are
    // borrowed from the node (no reference count touched: the dry run keeps one node's list
    // of the hundreds it checks).
    out.extend(victims.iter().map(|v| v.0));
    (num_violating, Status::success())
}

/// A node's pods eligible for preemption with their priority and start time, in a list kept
/// on the stack up to a typical node's count: the dry run visits hundreds of nodes per
/// preemption, and a heap list per node (and three more per candidate) was a tenth of it.
type Eligible<'n> = SmallVec<[(&'n Arc<PodInfo>, i32, Start); 8]>;

/// A pod's [`StartTime`] kept with 8-byte alignment: `StartTime` holds an `i128`, whose 16-byte
/// alignment would send every vector of (pod, priority, start) of the dry run through the
/// allocator's slow aligned path.
#[derive(Debug, Clone, Copy)]
struct Start(Option<[u64; 2]>);

impl Start {
    /// Not read yet (read as not started).
    const UNREAD: Start = Start(None);

    fn of(p: &PodInfo) -> Start {
        Start::from_time(StartTime::of(p))
    }

    fn from_time(t: StartTime) -> Start {
        match t {
            StartTime::At(t) => {
                let u = t as u128;
                Start(Some([(u >> 64) as u64, u as u64]))
            }
            StartTime::NotStarted => Start(None),
        }
    }

    fn get(self) -> StartTime {
        match self.0 {
            Some([hi, lo]) => StartTime::At((((hi as u128) << 64) | lo as u128) as i128),
            None => StartTime::NotStarted,
        }
    }
}

/// `filterPodsWithPDBViolation`: splits `pods` (order kept) into those whose eviction would
/// exceed a matching PDB's `disruptionsAllowed` (counting the earlier pods of the list against
/// the budget) and the others.
fn filter_pods_with_pdb_violation<'p>(
    pods: &[(&'p Arc<PodInfo>, i32, Start)],
    pdbs: &[CompiledPdb],
) -> (Eligible<'p>, Eligible<'p>) {
    let mut allowed: Vec<i32> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
    let mut violating = SmallVec::new();
    let mut non_violating = SmallVec::new();
    for entry in pods {
        let p = &entry.0;
        let mut violated = false;
        // A pod without labels matches no PDB.
        if !p.labels().is_empty() {
            for (i, pdb) in pdbs.iter().enumerate() {
                if pdb.namespace != p.namespace() {
                    continue;
                }
                // A nil or empty selector matches nothing here.
                if pdb.selector.is_empty() || !pdb.selector.matches(p.labels()) {
                    continue;
                }
                // Already being disrupted: processed by the API server, not a violation.
                if pdb.disrupted_pods.iter().any(|n| n == p.name()) {
                    continue;
                }
                allowed[i] -= 1;
                if allowed[i] < 0 {
                    violated = true;
                }
            }
        }
        if violated {
            violating.push(*entry);
        } else {
            non_violating.push(*entry);
        }
    }
    (violating, non_violating)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn start_reads_back_the_start_time(t in proptest::num::i128::ANY, started: bool) {
            let time = if started { StartTime::At(t) } else { StartTime::NotStarted };
            proptest::prop_assert_eq!(Start::from_time(time).get(), time);
        }
    }

    proptest::proptest! {
        /// `shares_uid` (UID hashes first, sorted beyond 8 pods) against every pair's UID
        /// strings compared.
        #[test]
        fn shares_uid_is_any_two_pods_with_one_uid(
            uids in proptest::collection::vec((0u8..40, proptest::bool::weighted(0.1)), 0..30),
        ) {
            let mut pods: Vec<Arc<PodInfo>> = Vec::new();
            for (u, twice) in uids {
                let mut p = Pod::default();
                p.metadata.uid = format!("uid-{u}");
                let p = Arc::new(PodInfo::new(p));
                if twice {
                    pods.push(p.clone());
                }
                pods.push(p);
            }
            let want = pods.iter().enumerate().any(|(i, a)| {
                pods[i + 1..].iter().any(|b| !Arc::ptr_eq(a, b) && a.uid() == b.uid())
            });
            proptest::prop_assert_eq!(shares_uid(&pods), want);
        }
    }

    #[test]
    fn shares_uid_finds_two_pods_with_one_uid_pair_by_pair_and_sorted() {
        let with_uid = |uid: String| {
            let mut p = Pod::default();
            p.metadata.uid = uid;
            Arc::new(PodInfo::new(p))
        };
        // 5 pods take the pair-by-pair way, 30 the sorted one.
        for n in [5usize, 30] {
            let distinct: Vec<Arc<PodInfo>> =
                (0..n).map(|i| with_uid(format!("uid-{i:03}"))).collect();
            assert!(!shares_uid(&distinct), "{n} distinct UIDs");
            // The same pod twice is not two pods.
            let mut same_twice = distinct.clone();
            same_twice.insert(1, distinct[n - 1].clone());
            assert!(!shares_uid(&same_twice), "{n}: one pod listed twice");
            // Another pod with a UID already there, first or last in the order.
            for at in [0, n] {
                let mut twins = distinct.clone();
                twins.insert(at, with_uid(format!("uid-{:03}", n / 2)));
                assert!(shares_uid(&twins), "{n}: twin at {at}");
            }
        }
    }

    use ksim_api::config::{KubeSchedulerConfiguration, Profile};
    use ksim_api::{Node, Pod, PodDisruptionBudget};
    use rand::SeedableRng;
    use serde_json::json;

    use crate::framework::{build_framework, Code, NoNominatedPods, Registry};
    use crate::node_info::ClusterObjects;
    use crate::preemption::{pick_one_node_for_preemption, select_candidate};
    use crate::schedule::{Algorithm, ScheduleError};

    fn node(name: &str, cpu: &str) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "status": {
                    "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                    "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}
                }
            }))
            .unwrap(),
        )
    }

    fn pod(name: &str, node: &str, cpu: &str, prio: i32, start: &str) -> Pod {
        let mut v = json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
                "priority": prio
            },
            "status": {}
        });
        if !node.is_empty() {
            v["spec"]["nodeName"] = json!(node);
        }
        if !start.is_empty() {
            v["status"]["startTime"] = json!(start);
        }
        serde_json::from_value(v).unwrap()
    }

    fn labelled(mut p: Pod, k: &str, v: &str) -> Pod {
        p.metadata.labels.insert(k.into(), v.into());
        p
    }

    fn pdb(sel: serde_json::Value, allowed: i32) -> PodDisruptionBudget {
        serde_json::from_value(json!({
            "metadata": {"name": "pdb", "namespace": "default"},
            "spec": {"selector": sel},
            "status": {"disruptionsAllowed": allowed}
        }))
        .unwrap()
    }

    struct Outcome {
        status: Status,
        nominated: Option<String>,
        victims: Vec<String>,
        candidates: Vec<(String, Vec<String>, i64)>,
    }

    /// Schedules `incoming` with the default profile; when nothing fits runs PostFilter.
    fn run(
        nodes: Vec<Arc<Node>>,
        pods: Vec<Pod>,
        pdbs: Vec<PodDisruptionBudget>,
        incoming: Pod,
    ) -> Outcome {
        let cfg = KubeSchedulerConfiguration::default();
        let fwk = build_framework(&Registry::in_tree(), &cfg, &Profile::default()).unwrap();
        let objects = ClusterObjects {
            pdbs,
            ..Default::default()
        };
        let snapshot =
            Snapshot::build(nodes, pods.into_iter().map(PodInfo::arc), Arc::new(objects));
        let pod = PodInfo::new(incoming);
        let mut alg = Algorithm::new(ChaCha8Rng::seed_from_u64(1), 0);
        let mut state = CycleState::new();
        let fit = match alg.schedule_pod(&fwk, &mut state, &pod, &snapshot, &NoNominatedPods) {
            Err(ScheduleError::Fit(f)) => f,
            other => panic!(
                "expected a FitError, got {:?}",
                other.map(|r| r.suggested_host)
            ),
        };
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut ctx = PostFilterContext {
            framework: &fwk,
            snapshot: &snapshot,
            nominated: &NoNominatedPods,
            rng: &mut rng,
            extenders: &[],
        };
        let statuses = &fit.diagnosis.node_to_status;
        let (res, status) = fwk.run_post_filter(&state, &pod, statuses, &mut ctx);
        let pl = DefaultPreemption::with_args(DefaultPreemptionArgs::default()).unwrap();
        let mut candidates: Vec<(String, Vec<String>, i64)> = pl
            .candidates(&state, &pod, statuses, &mut ctx)
            .unwrap()
            .unwrap_or_default()
            .into_iter()
            .map(|c| {
                let mut v: Vec<String> = c.victims.iter().map(|p| p.name().to_string()).collect();
                v.sort();
                (c.name, v, c.num_pdb_violations)
            })
            .collect();
        candidates.sort();
        let (nominated, mut victims) = match res {
            Some(r) => (
                r.nominated_node,
                r.victims.iter().map(|p| p.name().to_string()).collect(),
            ),
            None => (None, Vec::new()),
        };
        victims.sort();
        Outcome {
            status,
            nominated,
            victims,
            candidates,
        }
    }

    const T1: &str = "2024-01-01T00:00:01Z";
    const T2: &str = "2024-01-01T00:00:02Z";
    const T3: &str = "2024-01-01T00:00:03Z";

    #[test]
    fn picks_node_by_upstream_criteria() {
        struct Case {
            name: &'static str,
            pods: Vec<Pod>,
            pdbs: Vec<PodDisruptionBudget>,
            want_node: &'static str,
        }
        let cases = vec![
            Case {
                name: "lowest highest-priority victim",
                pods: vec![
                    pod("a", "n1", "2", 10, T1),
                    pod("b", "n2", "2", 5, T1),
                    pod("c", "n3", "2", 7, T1),
                ],
                pdbs: vec![],
                want_node: "n2",
            },
            Case {
                name: "latest start time on a tie",
                pods: vec![
                    pod("a", "n1", "2", 5, T1),
                    pod("b", "n2", "2", 5, T3),
                    pod("c", "n3", "2", 5, T2),
                ],
                pdbs: vec![],
                want_node: "n2",
            },
            Case {
                name: "fewest victims on equal sums",
                pods: vec![
                    pod("a", "n1", "1", 0, T1),
                    pod("a2", "n1", "1", 0, T1),
                    pod("b", "n2", "2", 0, T1),
                    pod("c", "n3", "1", 0, T1),
                    pod("c2", "n3", "1", 0, T1),
                ],
                pdbs: vec![],
                want_node: "n2",
            },
            Case {
                name: "PDB violation avoided",
                pods: vec![
                    labelled(pod("a", "n1", "2", 0, T1), "app", "guarded"),
                    labelled(pod("b", "n2", "2", 0, T1), "app", "guarded"),
                    pod("c", "n3", "2", 5, T1),
                ],
                pdbs: vec![pdb(json!({"matchLabels": {"app": "guarded"}}), 0)],
                want_node: "n3",
            },
        ];
        for c in cases {
            let nodes = vec![node("n1", "2"), node("n2", "2"), node("n3", "2")];
            let out = run(nodes, c.pods, c.pdbs, pod("p", "", "2", 100, ""));
            assert_eq!(out.status.code, Code::Success, "{}: {}", c.name, out.status);
            assert_eq!(out.nominated.as_deref(), Some(c.want_node), "{}", c.name);
        }
    }

    #[test]
    fn reprieves_as_many_pods_as_possible() {
        // n1 holds 4 × 1 cpu; the pod needs 2: the two least important go.
        let nodes = vec![node("n1", "4")];
        let pods = vec![
            pod("hi", "n1", "1", 50, T1),
            pod("mid", "n1", "1", 20, T1),
            pod("lo-old", "n1", "1", 10, T1),
            pod("lo-new", "n1", "1", 10, T2),
        ];
        let out = run(nodes, pods, vec![], pod("p", "", "2", 100, ""));
        assert_eq!(out.status.code, Code::Success);
        assert_eq!(out.victims, vec!["lo-new", "lo-old"]);
        assert_eq!(
            out.candidates,
            vec![("n1".into(), vec!["lo-new".into(), "lo-old".into()], 0)]
        );
    }

    #[test]
    fn pdb_violating_victims_are_reprieved_first() {
        // Both pods are equally important; only one must go. The guarded one is tried first
        // for reprieve, so the unguarded one is the victim and no PDB is violated.
        let nodes = vec![node("n1", "2")];
        let pods = vec![
            // The guarded pod started later, so it is the less important one; without the
            // PDB it would be the victim.
            labelled(pod("guarded", "n1", "1", 0, T2), "app", "g"),
            pod("free", "n1", "1", 0, T1),
        ];
        let pdbs = vec![pdb(json!({"matchLabels": {"app": "g"}}), 0)];
        let out = run(nodes, pods, pdbs, pod("p", "", "1", 100, ""));
        assert_eq!(out.victims, vec!["free"]);
        assert_eq!(out.candidates, vec![("n1".into(), vec!["free".into()], 0)]);
    }

    #[test]
    fn counts_pdb_violations() {
        let nodes = vec![node("n1", "2")];
        let pods = vec![
            labelled(pod("g1", "n1", "1", 0, T1), "app", "g"),
            labelled(pod("g2", "n1", "1", 0, T2), "app", "g"),
        ];
        // One disruption allowed, two victims needed: one violation.
        let pdbs = vec![pdb(json!({"matchLabels": {"app": "g"}}), 1)];
        let out = run(nodes, pods, pdbs, pod("p", "", "2", 100, ""));
        assert_eq!(
            out.candidates,
            vec![("n1".into(), vec!["g1".into(), "g2".into()], 1)]
        );
        // An empty selector matches nothing.
        let pods = vec![
            labelled(pod("g1", "n1", "1", 0, T1), "app", "g"),
            labelled(pod("g2", "n1", "1", 0, T2), "app", "g"),
        ];
        let out = run(
            vec![node("n1", "2")],
            pods,
            vec![pdb(json!({}), 0)],
            pod("p", "", "2", 100, ""),
        );
        assert_eq!(out.candidates[0].2, 0);
    }

    #[test]
    fn failure_messages() {
        // No lower-priority pods anywhere.
        let out = run(
            vec![node("n1", "1"), node("n2", "1")],
            vec![pod("a", "n1", "1", 100, T1), pod("b", "n2", "1", 100, T1)],
            vec![],
            pod("p", "", "1", 100, ""),
        );
        assert_eq!(out.status.code, Code::Unschedulable);
        assert_eq!(
            out.status.message(),
            "no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
        );
        assert_eq!(out.nominated.as_deref(), Some(""));
        // The pod exceeds every node's allocatable: unresolvable, nothing to try.
        let out = run(
            vec![node("n1", "1"), node("n2", "1")],
            vec![pod("a", "n1", "1", 0, T1)],
            vec![],
            pod("p", "", "3", 100, ""),
        );
        assert_eq!(
            out.status.message(),
            "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        );
        // preemptionPolicy Never.
        let mut p = pod("p", "", "1", 100, "");
        p.spec.preemption_policy = Some("Never".into());
        let out = run(
            vec![node("n1", "1")],
            vec![pod("a", "n1", "1", 0, T1)],
            vec![],
            p,
        );
        assert_eq!(
            out.status.message(),
            "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
        );
        assert!(out.candidates.is_empty());
    }

    #[test]
    fn terminating_victim_on_nominated_node_blocks_preemption() {
        let mut victim = pod("a", "n1", "1", 0, T1);
        victim.metadata.deletion_timestamp = Some(T2.into());
        victim.status.conditions.push(ksim_api::Condition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: "PreemptionByScheduler".into(),
            message: String::new(),
        });
        let mut p = pod("p", "", "2", 100, "");
        p.status.nominated_node_name = "n1".into();
        let out = run(vec![node("n1", "2")], vec![victim], vec![], p);
        assert_eq!(
            out.status.message(),
            "no new claims to deallocate, preemption: not eligible due to a terminating pod on the nominated node."
        );
    }

    #[test]
    fn num_candidates() {
        let pl = DefaultPreemption::with_args(DefaultPreemptionArgs::default()).unwrap();
        assert_eq!(pl.calculate_num_candidates(5), 5);
        assert_eq!(pl.calculate_num_candidates(500), 100);
        assert_eq!(pl.calculate_num_candidates(5000), 500);
        let pl = DefaultPreemption::with_args(DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 50,
            min_candidate_nodes_absolute: 1,
        })
        .unwrap();
        assert_eq!(pl.calculate_num_candidates(10), 5);
        assert!(DefaultPreemption::with_args(DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 0,
            min_candidate_nodes_absolute: 0,
        })
        .is_err());
        assert!(validate_args(&DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 101,
            min_candidate_nodes_absolute: 1,
        })
        .is_err());
    }

    #[test]
    fn args_are_decoded_with_defaults() {
        let v = json!({"minCandidateNodesAbsolute": 5});
        let args: DefaultPreemptionArgs = decode_args(NAME, Some(&v)).unwrap();
        assert_eq!(args.min_candidate_nodes_percentage, 10);
        assert_eq!(args.min_candidate_nodes_absolute, 5);
    }

    #[test]
    fn pick_one_prefers_negative_priorities_with_fewer_pods() {
        let mk = |name: &str, prios: &[i32]| Candidate {
            node: 0,
            name: name.into(),
            victims: prios
                .iter()
                .enumerate()
                .map(|(i, &p)| PodInfo::arc(pod(&format!("{name}{i}"), name, "1", p, T1)))
                .collect(),
            num_pdb_violations: 0,
        };
        // Same highest priority; more negative pods must not look "cheaper".
        let cands = vec![mk("a", &[-5, -5, -5]), mk("b", &[-5, -5])];
        assert_eq!(pick_one_node_for_preemption(&cands), 1);
        assert_eq!(select_candidate(&cands).map(|c| c.name.as_str()), Some("b"));
        assert!(select_candidate(&[]).is_none());
    }
}
