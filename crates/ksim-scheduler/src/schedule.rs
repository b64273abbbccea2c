//! One scheduling decision: `SchedulePod` — PreFilter, Filter over the sampled nodes (with the
//! round-robin start index), PreScore, Score, select host — and the `FitError` message when no
//! node fits, worded exactly as upstream's.

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::extender::{Extender, EXTENDER_NAME, MAX_EXTENDER_PRIORITY};
use crate::framework::cycle_state::CycleState;
use crate::framework::interface::NodeToStatus;
use crate::framework::interface::MAX_NODE_SCORE;
use crate::framework::runtime::{Framework, NominatedPods, ScoreTable};
use crate::framework::status::{Code, Status};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

/// The nodes a filter pass walks: every node of the snapshot, or a listed subset (a PreFilter
/// restriction, or the nominated node).
#[derive(Clone, Copy)]
enum Candidates<'a> {
    All(usize),
    Listed(&'a [usize]),
}

impl Candidates<'_> {
    fn len(&self) -> usize {
        match self {
            Candidates::All(n) => *n,
            Candidates::Listed(l) => l.len(),
        }
    }

    /// The snapshot index of the `i`-th candidate.
    #[inline]
    fn get(&self, i: usize) -> usize {
        match self {
            Candidates::All(_) => i,
            Candidates::Listed(l) => l[i],
        }
    }
}

/// `minFeasibleNodesToFind`.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// `minFeasibleNodesPercentageToFind`.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// Text of `ErrNoNodesAvailable`.
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// Why a pod did not fit, per node and overall.
#[derive(Debug, Clone, Default)]
pub struct Diagnosis {
    pub node_to_status: NodeToStatus,
    /// Plugins that rejected at least one node (sorted).
    pub unschedulable_plugins: Vec<&'static str>,
    /// Plugins that answered `Pending` for at least one node (sorted; also in
    /// `unschedulable_plugins`).
    pub pending_plugins: Vec<&'static str>,
    pub pre_filter_msg: String,
    pub post_filter_msg: String,
}

impl Diagnosis {
    /// `Diagnosis.AddPluginStatus`.
    pub fn add_plugin_status(&mut self, s: &Status) {
        if s.plugin.is_empty() || !s.is_rejected() {
            return;
        }
        add_sorted(&mut self.unschedulable_plugins, s.plugin);
        if s.code == Code::Pending {
            add_sorted(&mut self.pending_plugins, s.plugin);
        }
    }
}

fn add_sorted(v: &mut Vec<&'static str>, s: &'static str) {
    // A rejecting plugin is usually there already, named by the same constant: found by
    // address, without comparing bytes (every failing node of a cycle comes here).
    if v.iter()
        .any(|x| x.as_ptr() == s.as_ptr() && x.len() == s.len())
    {
        return;
    }
    if let Err(i) = v.binary_search(&s) {
        v.insert(i, s);
    }
}

/// `framework.FitError`.
#[derive(Debug, Clone)]
pub struct FitError {
    pub num_all_nodes: usize,
    pub diagnosis: Diagnosis,
}

impl FitError {
    /// `FitError.Error()`: "0/N nodes are available: <histogram>. <postfilter message>".
    pub fn message(&self) -> String {
        let mut msg = format!("0/{} nodes are available:", self.num_all_nodes);
        let d = &self.diagnosis;
        if !d.pre_filter_msg.is_empty() {
            msg.push_str(&format!(" {}.", d.pre_filter_msg));
        } else {
            let mut hist: BTreeMap<&str, usize> = BTreeMap::new();
            let mut explicit = 0;
            // Consecutive nodes usually fail for the same reason, spelled by the same constant:
            // a run of reasons at the same address is counted first and added once.
            let mut run: Option<(&str, usize)> = None;
            for (_, s) in d.node_to_status.iter() {
                explicit += 1;
                for r in &s.reasons {
                    let r: &str = r;
                    match &mut run {
                        Some((last, n)) if last.as_ptr() == r.as_ptr() && last.len() == r.len() => {
                            *n += 1
                        }
                        _ => {
                            if let Some((last, n)) = run.replace((r, 1)) {
                                *hist.entry(last).or_default() += n;
                            }
                        }
                    }
                }
            }
            if let Some((last, n)) = run {
                *hist.entry(last).or_default() += n;
            }
            if explicit < self.num_all_nodes {
                if let Some(a) = &d.node_to_status.absent {
                    for r in &a.reasons {
                        *hist.entry(r).or_default() += self.num_all_nodes - explicit;
                    }
                }
            }
            let mut parts: Vec<String> = hist.iter().map(|(r, c)| format!("{c} {r}")).collect();
            parts.sort();
            if !parts.is_empty() {
                msg.push_str(&format!(" {}.", parts.join(", ")));
            }
        }
        if !d.post_filter_msg.is_empty() {
            msg.push_str(&format!(" {}", d.post_filter_msg));
        }
        msg
    }

    /// The message without the PostFilter part (what `SchedulePod` itself returns).
    pub fn filter_only_message(&self) -> String {
        let mut c = self.clone();
        c.diagnosis.post_filter_msg.clear();
        c.message()
    }
}

/// Why `schedule_pod` found no host.
#[derive(Debug, Clone)]
pub enum ScheduleError {
    /// The cluster has no nodes (`ErrNoNodesAvailable`).
    NoNodesAvailable,
    /// No node fits.
    Fit(FitError),
    /// A plugin returned an error.
    Internal(Status),
}

impl ScheduleError {
    pub fn message(&self) -> String {
        match self {
            ScheduleError::NoNodesAvailable => NO_NODES_AVAILABLE.into(),
            ScheduleError::Fit(f) => f.message(),
            ScheduleError::Internal(s) => s.message(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleResult {
    /// Index into `Snapshot::nodes`.
    pub suggested_host: usize,
    pub evaluated_nodes: usize,
    pub feasible_nodes: usize,
}

/// The state `SchedulePod` keeps between cycles: the round-robin start index, the seeded RNG for
/// ties, and scratch buffers reused so a cycle allocates nothing per node.
pub struct Algorithm {
    pub next_start_node_index: usize,
    pub rng: ChaCha8Rng,
    /// Global `percentageOfNodesToScore` (0 = adaptive).
    pub percentage_of_nodes_to_score: i32,
    scores: ScoreTable,
    feasible: Vec<usize>,
    /// The filter statuses of the last cycle that found a node (a failed cycle returns them in
    /// its `FitError`): kept, not recomputed, for `--explain`.
    last_statuses: NodeToStatus,
    /// Configured scheduler extenders, called in order (none: no change to the cycle).
    extenders: Vec<Box<dyn Extender>>,
}

impl Algorithm {
    pub fn new(rng: ChaCha8Rng, percentage_of_nodes_to_score: i32) -> Algorithm {
        Algorithm {
            next_start_node_index: 0,
            rng,
            percentage_of_nodes_to_score,
            scores: ScoreTable::default(),
            feasible: Vec::new(),
            last_statuses: NodeToStatus::new(0),
            extenders: Vec::new(),
        }
    }

    /// Sets the scheduler extenders (`KubeSchedulerConfiguration.extenders`).
    pub fn set_extenders(&mut self, extenders: Vec<Box<dyn Extender>>) {
        self.extenders = extenders;
    }

    /// The configured scheduler extenders, in configuration order.
    pub fn extenders(&self) -> &[Box<dyn Extender>] {
        &self.extenders
    }

    /// The scores of the last cycle that scored (for reports and tests).
    pub fn last_scores(&self) -> &ScoreTable {
        &self.scores
    }

    /// The feasible nodes (snapshot indices) of the last cycle, in the order of
    /// [`Algorithm::last_scores`]' columns (scores are current only when more than one fit).
    pub fn last_feasible(&self) -> &[usize] {
        &self.feasible
    }

    /// The per-node filter statuses of the last cycle that found a node.
    pub fn last_statuses(&self) -> &NodeToStatus {
        &self.last_statuses
    }

    /// `numFeasibleNodesToFind`.
    pub fn num_feasible_nodes_to_find(&self, profile_pct: Option<i32>, num_all: usize) -> usize {
        if num_all < MIN_FEASIBLE_NODES_TO_FIND {
            return num_all;
        }
        let mut pct = profile_pct.unwrap_or(self.percentage_of_nodes_to_score) as i64;
        if pct == 0 {
            pct = 50 - num_all as i64 / 125;
            if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND {
                pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND;
            }
        }
        let n = (num_all as i64 * pct / 100) as usize;
        n.max(MIN_FEASIBLE_NODES_TO_FIND)
    }

    /// `SchedulePod`. `state` must be fresh for this pod; on success it holds the plugins'
    /// cycle data for Reserve/PreBind.
    // An unschedulable pod is an ordinary outcome carrying its diagnosis, not a rare error:
    // boxing it would only add an allocation to every failed cycle.
    #[allow(clippy::result_large_err)]
    pub fn schedule_pod(
        &mut self,
        fwk: &Framework,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> Result<ScheduleResult, ScheduleError> {
        if snapshot.is_empty() {
            return Err(ScheduleError::NoNodesAvailable);
        }
        let mut diagnosis = Diagnosis {
            node_to_status: NodeToStatus::new(snapshot.len()),
            ..Default::default()
        };
        let mut feasible = std::mem::take(&mut self.feasible);
        feasible.clear();
        let r = self.find_nodes_that_fit(
            fwk,
            state,
            pod,
            snapshot,
            nominated,
            &mut diagnosis,
            &mut feasible,
        );
        let out = match r {
            Err(s) => Err(ScheduleError::Internal(s)),
            Ok(()) if feasible.is_empty() => Err(ScheduleError::Fit(FitError {
                num_all_nodes: snapshot.len(),
                diagnosis: std::mem::take(&mut diagnosis),
            })),
            Ok(()) if feasible.len() == 1 => Ok(ScheduleResult {
                suggested_host: feasible[0],
                evaluated_nodes: 1 + diagnosis.node_to_status.len(),
                feasible_nodes: 1,
            }),
            Ok(()) => {
                let evaluated = feasible.len() + diagnosis.node_to_status.len();
                match self.prioritize(fwk, state, pod, snapshot, &feasible) {
                    Err(s) => Err(ScheduleError::Internal(s)),
                    Ok(()) => Ok(ScheduleResult {
                        suggested_host: self.select_host(&feasible),
                        evaluated_nodes: evaluated,
                        feasible_nodes: feasible.len(),
                    }),
                }
            }
        };
        self.feasible = feasible;
        if out.is_ok() {
            // A move, not a copy: the map was allocated for this cycle anyway.
            self.last_statuses = diagnosis.node_to_status;
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn find_nodes_that_fit(
        &mut self,
        fwk: &Framework,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
        diagnosis: &mut Diagnosis,
        feasible: &mut Vec<usize>,
    ) -> Result<(), Status> {
        let pre = fwk.run_pre_filter(state, pod, snapshot);
        diagnosis.unschedulable_plugins = pre.unschedulable_plugins.clone();
        if !pre.status.is_success() {
            if !pre.status.is_rejected() {
                return Err(pre.status);
            }
            diagnosis.pre_filter_msg = pre.status.message();
            diagnosis.add_plugin_status(&pre.status);
            diagnosis.node_to_status.absent = Some(pre.status);
            return Ok(());
        }

        // A nominated node (from an earlier preemption) is tried first.
        let nnn = &pod.pod.status.nominated_node_name;
        if !nnn.is_empty() {
            if let Some(&i) = snapshot.index.get(nnn) {
                // Upstream shares the diagnosis' status map with this pass, and only logs an
                // error from it (evaluateNominatedNode): the search goes on over all nodes.
                let r = self.find_nodes_that_pass_filters(
                    fwk,
                    state,
                    pod,
                    snapshot,
                    nominated,
                    diagnosis,
                    Candidates::Listed(&[i]),
                    feasible,
                );
                // As there, an extender's error on the nominated node is only logged.
                let r = r.and_then(|()| {
                    self.find_nodes_that_pass_extenders(pod, snapshot, diagnosis, feasible)
                });
                if r.is_ok() && !feasible.is_empty() {
                    return Ok(());
                }
                feasible.clear();
            }
        }

        let restricted: Option<Vec<usize>> = pre.result.as_ref().and_then(|r| {
            r.node_names.as_ref().map(|names| {
                names
                    .iter()
                    .filter_map(|n| snapshot.index.get(n).copied())
                    .collect()
            })
        });
        if restricted.is_some() {
            diagnosis.node_to_status.absent = Some(Status::unresolvable(format!(
                "node(s) didn't satisfy plugin(s) [{}]",
                pre.unschedulable_plugins.join(" ")
            )));
        }
        // Without a restriction every node is a candidate, by index: no list is built.
        let nodes = match &restricted {
            Some(r) => Candidates::Listed(r),
            None => Candidates::All(snapshot.len()),
        };
        let r = self.find_nodes_that_pass_filters(
            fwk, state, pod, snapshot, nominated, diagnosis, nodes, feasible,
        );
        let processed = feasible.len() + diagnosis.node_to_status.len();
        self.next_start_node_index = (self.next_start_node_index + processed) % snapshot.len();
        r?;
        if self.extenders.is_empty() {
            return Ok(());
        }
        let before = feasible.len();
        self.find_nodes_that_pass_extenders(pod, snapshot, diagnosis, feasible)?;
        if feasible.len() != before {
            // Extenders have no queueing hints: upstream names them so any event requeues the
            // pod (in the full pass only, not for the nominated node).
            if let Err(i) = diagnosis
                .unschedulable_plugins
                .binary_search(&EXTENDER_NAME)
            {
                diagnosis.unschedulable_plugins.insert(i, EXTENDER_NAME);
            }
        }
        Ok(())
    }

    /// `findNodesThatPassExtenders`: the feasible nodes pass through each interested extender's
    /// filter in turn; the rejected ones get the extender's reason in the diagnosis. An error
    /// from an ignorable extender skips it; from another, fails the attempt.
    fn find_nodes_that_pass_extenders(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        diagnosis: &mut Diagnosis,
        feasible: &mut Vec<usize>,
    ) -> Result<(), Status> {
        for ext in &self.extenders {
            if feasible.is_empty() {
                break;
            }
            if !ext.is_filter() || !ext.is_interested(pod) {
                continue;
            }
            let nodes: Vec<&ksim_api::core::Node> =
                feasible.iter().map(|&i| &*snapshot.nodes[i].node).collect();
            let res = match ext.filter(pod, &nodes) {
                Ok(r) => r,
                Err(_) if ext.is_ignorable() => continue,
                Err(e) => return Err(Status::error(e)),
            };
            for (n, msg) in &res.failed_unresolvable {
                if let Some(&i) = snapshot.index.get(n) {
                    diagnosis
                        .node_to_status
                        .set(i, Status::unresolvable(msg.clone()));
                }
            }
            for (n, msg) in &res.failed {
                if res.failed_unresolvable.contains_key(n) {
                    continue;
                }
                if let Some(&i) = snapshot.index.get(n) {
                    diagnosis
                        .node_to_status
                        .set(i, Status::unschedulable(msg.clone()));
                }
            }
            let input: rustc_hash::FxHashSet<usize> = feasible.iter().copied().collect();
            let mut passed = Vec::with_capacity(res.passed.len());
            for n in &res.passed {
                match snapshot.index.get(n) {
                    Some(&i) if input.contains(&i) => passed.push(i),
                    _ => {
                        return Err(Status::error(format!(
                            "extender {:?} claims a filtered node {:?} which is not found in the input node list",
                            ext.name(),
                            n
                        )))
                    }
                }
            }
            *feasible = passed;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn find_nodes_that_pass_filters(
        &mut self,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
        diagnosis: &mut Diagnosis,
        nodes: Candidates<'_>,
        feasible: &mut Vec<usize>,
    ) -> Result<(), Status> {
        let num_all = nodes.len();
        if num_all == 0 {
            return Ok(());
        }
        let mut to_find =
            self.num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, num_all);
        if !self.has_extender_filters() && !self.has_scoring(fwk) {
            to_find = 1;
        }
        let start = self.next_start_node_index;
        if !fwk.has_filter_plugins() {
            for i in 0..to_find.min(num_all) {
                feasible.push(nodes.get((start + i) % num_all));
            }
            return Ok(());
        }
        let filters = fwk.active_filters(state, pod);
        // Without nominated pods the two-pass filter is one pass: decided once per cycle.
        let no_nominations = nominated.is_empty();
        // Upstream counts feasible nodes atomically and cancels the search only when one more than
        // `to_find` passes: nodes rejected between the last wanted and that extra feasible node are
        // still recorded (and advance the next cycle's start index); the extra node is dropped.
        // Position in the candidate list, wrapping at its end (no division per node).
        let mut pos = start % num_all;
        // Over every node of the snapshot (no PreFilter restriction, no nominated pod), runs of
        // nodes the plugins vouch for are taken in one call per run
        // (`Framework::leading_passes`), at most as many as are still wanted; the node that
        // ends a run goes through the loop below like any node, so the result is the same.
        let batch = no_nominations && matches!(nodes, Candidates::All(_));
        let mut left = num_all;
        while left > 0 {
            if batch && feasible.len() < to_find {
                // The run ends at the wrap of the round-robin or at the last node to visit.
                let end = num_all.min(pos + left);
                let k = fwk.leading_passes_in(
                    &filters,
                    state,
                    pod,
                    snapshot,
                    pos,
                    end,
                    to_find - feasible.len(),
                );
                feasible.extend(pos..pos + k);
                left -= k;
                pos += k;
                if pos == num_all {
                    pos = 0;
                }
                if left == 0 {
                    break;
                }
            }
            if batch {
                // A run of nodes rejected with one shared status (full nodes, say) is recorded
                // in one loop: each gets the status `run_active_filters` would return.
                let end = num_all.min(pos + left);
                if let (k, Some(s)) = fwk.leading_rejections(
                    &filters,
                    state,
                    pod,
                    &snapshot.nodes[pos..end],
                    end - pos,
                ) {
                    diagnosis.add_plugin_status(s);
                    diagnosis.node_to_status.set_run(pos..pos + k, s);
                    left -= k;
                    pos += k;
                    if pos == num_all {
                        pos = 0;
                    }
                    continue;
                }
            }
            left -= 1;
            let idx = nodes.get(pos);
            pos += 1;
            if pos == num_all {
                pos = 0;
            }
            let node: &NodeInfo = &snapshot.nodes[idx];
            let s = if no_nominations {
                let r = fwk.run_active_filters(&filters, state, pod, node);
                if r.is_success() {
                    if feasible.len() == to_find {
                        break;
                    }
                    feasible.push(idx);
                    continue;
                }
                r.into_status()
            } else {
                fwk.run_filter_with_nominated_pods_using(
                    Some(&filters),
                    state,
                    pod,
                    node,
                    snapshot,
                    nominated,
                )
            };
            if s.code == Code::Error {
                return Err(s);
            }
            if s.is_success() {
                if feasible.len() == to_find {
                    break;
                }
                feasible.push(idx);
            } else {
                diagnosis.add_plugin_status(&s);
                diagnosis.node_to_status.set(idx, s);
            }
        }
        Ok(())
    }

    fn prioritize(
        &mut self,
        fwk: &Framework,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[usize],
    ) -> Result<(), Status> {
        // As upstream's prioritizeNodes: any extender (not only a prioritizing one) means scoring.
        if self.extenders.is_empty() && !fwk.has_score_plugins() {
            self.scores.clear(feasible.len());
            for t in &mut self.scores.totals {
                *t = 1;
            }
            return Ok(());
        }
        let nodes: Vec<&NodeInfo> = feasible.iter().map(|&i| &snapshot.nodes[i]).collect();
        let s = fwk.run_pre_score(state, pod, &nodes, snapshot);
        if !s.is_success() {
            return Err(s);
        }
        let s = fwk.run_score_in(
            state,
            pod,
            &nodes,
            Some((snapshot, feasible)),
            &mut self.scores,
        );
        if !s.is_success() {
            return Err(s);
        }
        if !self.extenders.is_empty() {
            self.add_extender_scores(pod, &nodes);
        }
        Ok(())
    }

    /// `hasExtenderFilters`.
    fn has_extender_filters(&self) -> bool {
        self.extenders.iter().any(|e| e.is_filter())
    }

    /// `hasScoring`: score plugins, or an extender that prioritizes. Without either (and no
    /// filtering extender), the first feasible node found is enough.
    fn has_scoring(&self, fwk: &Framework) -> bool {
        fwk.has_score_plugins() || self.extenders.iter().any(|e| e.is_prioritizer())
    }

    /// Each interested prioritizing extender's scores × its weight × (MaxNodeScore /
    /// MaxExtenderPriority), added to the nodes' totals. A prioritize error only costs that
    /// extender's scores, as upstream.
    fn add_extender_scores(&mut self, pod: &PodInfo, nodes: &[&NodeInfo]) {
        let api_nodes: Vec<&ksim_api::core::Node> = nodes.iter().map(|n| &*n.node).collect();
        let pos: std::collections::HashMap<&str, usize> = api_nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.metadata.name.as_str(), i))
            .collect();
        for ext in &self.extenders {
            if !ext.is_prioritizer() || !ext.is_interested(pod) {
                continue;
            }
            let Ok((list, weight)) = ext.prioritize(pod, &api_nodes) else {
                continue;
            };
            for (host, score) in list {
                let add = score
                    .saturating_mul(weight)
                    .saturating_mul(MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY);
                if let Some(&i) = pos.get(host.as_str()) {
                    self.scores.totals[i] = self.scores.totals[i].saturating_add(add);
                }
            }
        }
    }

    /// The highest total; among ties each is equally likely, drawn from the seeded RNG.
    fn select_host(&mut self, feasible: &[usize]) -> usize {
        let totals = &self.scores.totals;
        let mut best = 0;
        let mut top = totals.first().copied().unwrap_or_default();
        let mut count = 1u32;
        for (i, &t) in totals.iter().enumerate().skip(1) {
            if t > top {
                best = i;
                top = t;
                count = 1;
            } else if t == top {
                count += 1;
                if self.rng.random_range(0..count) == 0 {
                    best = i;
                }
            }
        }
        feasible[best]
    }
}
