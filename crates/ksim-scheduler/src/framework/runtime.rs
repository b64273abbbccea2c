//! The framework runtime: a profile's plugins per extension point, and the functions that run
//! an extension point as upstream's `frameworkImpl` does (order, skip sets, first failure wins).

use std::sync::Arc;

use crate::framework::cycle_state::CycleState;
use crate::framework::interface::{
    FilterPlugin, NodeToStatus, PluginRef, PluginsRunner, PostFilterContext, PostFilterResult,
    PreFilterResult,
};
// The nominated-pods trait lives with the extension-point traits; re-exported at its old path.
pub use crate::framework::interface::{NoNominatedPods, NominatedPods};
use crate::framework::score_table::{add_weighted, any_above, Uniform};
pub use crate::framework::score_table::{PluginScores, ScoreTable};
use crate::framework::status::{Code, FilterResult, Status};
use crate::node_info::{NodeFlags, NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

/// A score plugin with its weight.
#[derive(Clone)]
pub struct WeightedScorePlugin {
    pub plugin: PluginRef,
    pub weight: i64,
}

/// One profile, instantiated.
#[derive(Clone, Default)]
pub struct Framework {
    pub profile_name: String,
    /// Every instantiated plugin, in the order first named by the profile.
    pub plugins: Vec<PluginRef>,
    pub pre_enqueue: Vec<PluginRef>,
    pub queue_sort: Vec<PluginRef>,
    pub pre_filter: Vec<PluginRef>,
    pub filter: Vec<PluginRef>,
    pub post_filter: Vec<PluginRef>,
    pub pre_score: Vec<PluginRef>,
    pub score: Vec<WeightedScorePlugin>,
    pub reserve: Vec<PluginRef>,
    pub permit: Vec<PluginRef>,
    pub pre_bind: Vec<PluginRef>,
    pub bind: Vec<PluginRef>,
    pub post_bind: Vec<PluginRef>,
    /// The profile's `percentageOfNodesToScore`, else the configuration's.
    pub percentage_of_nodes_to_score: Option<i32>,
}

/// What `RunPreFilterPlugins` returns.
pub struct PreFilterOutcome {
    pub result: Option<PreFilterResult>,
    pub status: Status,
    /// Plugins that restricted the node set (or rejected, added by the caller).
    pub unschedulable_plugins: Vec<&'static str>,
}

impl Framework {
    pub fn plugin(&self, name: &str) -> Option<&PluginRef> {
        self.plugins.iter().find(|p| p.name() == name)
    }

    pub fn has_filter_plugins(&self) -> bool {
        !self.filter.is_empty()
    }

    pub fn has_score_plugins(&self) -> bool {
        !self.score.is_empty()
    }

    pub fn has_post_filter_plugins(&self) -> bool {
        !self.post_filter.is_empty()
    }

    /// Runs PreEnqueue plugins; the first failure keeps the pod out of activeQ.
    pub fn run_pre_enqueue(&self, pod: &PodInfo) -> Status {
        for p in &self.pre_enqueue {
            if let Some(pe) = p.as_pre_enqueue() {
                let s = pe.pre_enqueue(pod);
                if !s.is_success() {
                    return s.with_plugin(p.name());
                }
            }
        }
        Status::success()
    }

    /// `RunPreFilterPlugins`.
    pub fn run_pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> PreFilterOutcome {
        let mut skip = Vec::new();
        let mut result: Option<PreFilterResult> = None;
        let mut return_status = Status::success();
        let mut plugins_with_nodes: Vec<&'static str> = Vec::new();
        for p in &self.pre_filter {
            let Some(pf) = p.as_pre_filter() else {
                continue;
            };
            let (r, s) = pf.pre_filter(state, pod, snapshot);
            if s.is_skip() {
                skip.push(p.name());
                continue;
            }
            if !s.is_success() {
                let s = s.with_plugin(p.name());
                match s.code {
                    Code::UnschedulableAndUnresolvable => {
                        state.set_skip_filter_plugins(skip, &self.filter, |p| p.name());
                        return PreFilterOutcome {
                            result: None,
                            status: s,
                            unschedulable_plugins: plugins_with_nodes,
                        };
                    }
                    Code::Unschedulable => {
                        return_status = s;
                        continue;
                    }
                    _ => {
                        let msg =
                            format!("running PreFilter plugin {:?}: {}", p.name(), s.message());
                        state.set_skip_filter_plugins(skip, &self.filter, |p| p.name());
                        return PreFilterOutcome {
                            result: None,
                            status: Status::error(msg).with_plugin(p.name()),
                            unschedulable_plugins: Vec::new(),
                        };
                    }
                }
            }
            let r = r.unwrap_or_default();
            if !r.all_nodes() {
                insert_sorted(&mut plugins_with_nodes, p.name());
            }
            let merged = match &result {
                None => r,
                Some(prev) => prev.merge(&r),
            };
            if merged.node_names.as_ref().is_some_and(|n| n.is_empty()) {
                let msg = if plugins_with_nodes.len() == 1 {
                    format!("node(s) didn't satisfy plugin {}", plugins_with_nodes[0])
                } else {
                    format!(
                        "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                        plugins_with_nodes.join(" ")
                    )
                };
                state.set_skip_filter_plugins(skip, &self.filter, |p| p.name());
                return PreFilterOutcome {
                    result: Some(merged),
                    status: Status::unresolvable(msg),
                    unschedulable_plugins: plugins_with_nodes,
                };
            }
            result = Some(merged);
        }
        state.set_skip_filter_plugins(skip, &self.filter, |p| p.name());
        PreFilterOutcome {
            result,
            status: return_status,
            unschedulable_plugins: plugins_with_nodes,
        }
    }

    /// The Filter plugins this cycle runs (not skipped by PreFilter), in order, resolved once so
    /// that filtering a node makes no skip lookups and no interface casts; with the plugins'
    /// [`passes_nodes_without`](FilterPlugin::passes_nodes_without) promises for `pod`.
    pub fn active_filters(&self, state: &CycleState, pod: &PodInfo) -> ActiveFilters<'_> {
        let mut all = Vec::with_capacity(self.filter.len());
        let mut unpromised = Vec::with_capacity(self.filter.len());
        let mut mask = NodeFlags::NONE;
        for (i, p) in self.filter.iter().enumerate() {
            if state.filter_skipped(&self.filter, i, |p| p.name()) {
                continue;
            }
            if let Some(f) = p.as_filter() {
                all.push((p.name(), f));
                match f.passes_nodes_without(pod) {
                    Some(flags) => mask = mask | flags,
                    None => unpromised.push((p.name(), f)),
                }
            }
        }
        let batches = unpromised.iter().all(|(_, f)| f.has_leading_passes());
        // The lists by totals are for the preemption dry run only (`with_totals`): a
        // scheduling cycle does not build them.
        ActiveFilters {
            all,
            unpromised,
            mask,
            batches,
            totals: Vec::new(),
            pod_blind: Vec::new(),
            totals_decide: false,
        }
    }

    /// [`run_filter`](Self::run_filter) over a list from [`active_filters`](Self::active_filters)
    /// of the same cycle and pod. A node with none of the promised flags runs only the plugins
    /// without a promise: the others would pass it, so the first rejection is the same.
    pub fn run_active_filters(
        &self,
        filters: &ActiveFilters<'_>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> FilterResult {
        let list = if node.flags().intersects(filters.mask) {
            &filters.all
        } else {
            &filters.unpromised
        };
        for &(name, f) in list {
            let r = f.filter(state, pod, node);
            if !r.is_success() {
                // A shared rejection naming this plugin is already what tagging would give.
                if r.is_shared_rejection_of(name) {
                    return r;
                }
                return r.map_rejection(|s| filter_failure(name, s));
            }
        }
        FilterResult::PASS
    }

    /// How many of `nodes`, from the first and at most `limit`, every active filter passes
    /// (a count the plugins vouch for through
    /// [`leading_passes`](FilterPlugin::leading_passes); it may stop early, never late). A
    /// node with a promised flag stops the run: the plugins that promised must see it.
    pub fn leading_passes(
        &self,
        filters: &ActiveFilters<'_>,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        limit: usize,
    ) -> usize {
        if !filters.batches {
            return 0;
        }
        let mut k = limit.min(nodes.len());
        match filters.unpromised.as_slice() {
            // Every plugin promised: a node without their flags passes.
            [] => nodes[..k]
                .iter()
                .position(|n| n.flags().intersects(filters.mask))
                .unwrap_or(k),
            list => {
                // Each plugin vouches for a prefix; the shortest holds for all of them. Asked
                // from the last: the later plugins (pod affinity) stop at the first node they
                // reject, so the earlier ones' scans (resource columns) cover only that prefix.
                for &(_, f) in list.iter().rev() {
                    if k == 0 {
                        break;
                    }
                    k = f
                        .leading_passes(state, pod, &nodes[..k], filters.mask, k)
                        .min(k);
                }
                k
            }
        }
    }

    /// [`leading_passes`](Self::leading_passes) over `snapshot.nodes[from..to]`: the same
    /// count, with the node flags and each plugin's check read from the snapshot's resource
    /// columns where the plugin can ([`FilterPlugin::leading_passes_in`]).
    #[allow(clippy::too_many_arguments)]
    pub fn leading_passes_in(
        &self,
        filters: &ActiveFilters<'_>,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        from: usize,
        to: usize,
        limit: usize,
    ) -> usize {
        if !filters.batches {
            return 0;
        }
        let flags = &snapshot.resource_columns().flags;
        let to = to.min(snapshot.nodes.len()).min(flags.len());
        if from >= to {
            return 0;
        }
        let mut k = limit.min(to - from);
        match filters.unpromised.as_slice() {
            // Every plugin promised: a node without their flags passes.
            [] => flags[from..from + k]
                .iter()
                .position(|f| f.intersects(filters.mask))
                .unwrap_or(k),
            list => {
                // Each plugin vouches for a prefix; the shortest holds for all of them. Asked
                // from the last, as in `leading_passes`.
                for &(_, f) in list.iter().rev() {
                    if k == 0 {
                        break;
                    }
                    let passes = f
                        .leading_passes_in(state, pod, snapshot, from, from + k, filters.mask, k)
                        .unwrap_or_else(|| {
                            f.leading_passes(
                                state,
                                pod,
                                &snapshot.nodes[from..from + k],
                                filters.mask,
                                k,
                            )
                        });
                    k = passes.min(k);
                }
                k
            }
        }
    }

    /// How many of `nodes`, from the first and at most `limit`,
    /// [`run_active_filters`](Self::run_active_filters) rejects with one shared status, and
    /// that status: a plugin called on a node without a promised flag vouches for the run
    /// ([`FilterPlugin::leading_rejections`]) with a rejection that names it, which the
    /// framework returns as it is, and every plugin called before it vouches that it passes
    /// those nodes ([`FilterPlugin::leading_passes`]; the run is cut to the shortest), so
    /// that the plugin's rejection is the first. `(0, None)` when there is no such run.
    #[inline]
    pub fn leading_rejections(
        &self,
        filters: &ActiveFilters<'_>,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        limit: usize,
    ) -> (usize, Option<&'static Status>) {
        let list = filters.unpromised.as_slice();
        // Past the first plugin the earlier ones must vouch for passes, which only a batching
        // list does. With one plugin to ask (the common case, called once per run of a
        // cycle), the answer is its own, without the loop.
        match list {
            [] => (0, None),
            [(name, f), ..] if !filters.batches || list.len() == 1 => vouched_run(
                f.leading_rejections(state, pod, nodes, filters.mask, limit),
                name,
            )
            .map_or((0, None), |(k, s)| (k.min(limit).min(nodes.len()), Some(s))),
            _ => Self::leading_rejections_from_last(filters, state, pod, nodes, limit),
        }
    }

    /// [`leading_rejections`](Self::leading_rejections) over a batching list of several
    /// plugins: asked from the last (the pod-affinity plugins reject runs of nodes that the
    /// earlier ones pass); any plugin's run that the earlier ones pass is the answer.
    #[inline(never)]
    fn leading_rejections_from_last(
        filters: &ActiveFilters<'_>,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        limit: usize,
    ) -> (usize, Option<&'static Status>) {
        let list = filters.unpromised.as_slice();
        for (j, &(name, f)) in list.iter().enumerate().rev() {
            let Some((k, s)) = vouched_run(
                f.leading_rejections(state, pod, nodes, filters.mask, limit),
                name,
            ) else {
                continue;
            };
            let mut k = k.min(limit).min(nodes.len());
            for &(_, g) in &list[..j] {
                if k == 0 {
                    break;
                }
                k = g
                    .leading_passes(state, pod, &nodes[..k], filters.mask, k)
                    .min(k);
            }
            if k > 0 {
                return (k, Some(s));
            }
        }
        (0, None)
    }

    /// `RunFilterPlugins`: the first failing plugin's status, tagged with its name.
    pub fn run_filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        for (i, p) in self.filter.iter().enumerate() {
            if state.filter_skipped(&self.filter, i, |p| p.name()) {
                continue;
            }
            let Some(f) = p.as_filter() else {
                continue;
            };
            let r = f.filter(state, pod, node);
            if !r.is_success() {
                return filter_failure(p.name(), r.into_status());
            }
        }
        Status::success()
    }

    /// `RunPreFilterExtensionAddPod` over all PreFilter plugins with extensions.
    pub fn run_pre_filter_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_add: &Arc<PodInfo>,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Status {
        // Plugins without extensions first: the skip test compares names.
        for p in &self.pre_filter {
            if let Some(pf) = p.as_pre_filter() {
                if !pf.has_extensions() || state.should_skip_filter(p.name()) {
                    continue;
                }
                let s = pf.add_pod(state, pod, to_add, node, snapshot);
                if !s.is_success() {
                    return Status::error(format!(
                        "running AddPod on PreFilter plugin {:?}: {}",
                        p.name(),
                        s.message()
                    ));
                }
            }
        }
        Status::success()
    }

    /// Whether `run_pre_filter_add_pod` / `run_pre_filter_remove_pod` would call any plugin
    /// for this cycle's state (a PreFilter plugin with extensions that was not skipped). When
    /// not, adding or removing pods in a dry run leaves the cycle state as it is.
    pub fn pre_filter_extensions_active(&self, state: &CycleState) -> bool {
        self.pre_filter.iter().any(|p| {
            p.as_pre_filter()
                .is_some_and(|pf| pf.has_extensions() && !state.should_skip_filter(p.name()))
        })
    }

    /// `RunPreFilterExtensionRemovePod`.
    pub fn run_pre_filter_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &Arc<PodInfo>,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Status {
        // Plugins without extensions first: the skip test compares names.
        for p in &self.pre_filter {
            if let Some(pf) = p.as_pre_filter() {
                if !pf.has_extensions() || state.should_skip_filter(p.name()) {
                    continue;
                }
                let s = pf.remove_pod(state, pod, to_remove, node, snapshot);
                if !s.is_success() {
                    return Status::error(format!(
                        "running RemovePod on PreFilter plugin {:?}: {}",
                        p.name(),
                        s.message()
                    ));
                }
            }
        }
        Status::success()
    }

    /// `RunFilterPluginsWithNominatedPods`: when the node has nominated pods of equal or higher
    /// priority, filters must pass both with them added and without them.
    pub fn run_filter_with_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> Status {
        self.run_filter_with_nominated_pods_using(None, state, pod, node, snapshot, nominated)
    }

    /// [`run_filter_with_nominated_pods`](Self::run_filter_with_nominated_pods) with the cycle's
    /// [`active_filters`](Self::active_filters) when given (the pass over nodes resolves them
    /// once).
    pub fn run_filter_with_nominated_pods_using(
        &self,
        filters: Option<&ActiveFilters<'_>>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> Status {
        let noms = nominated_for(nominated, node);
        if !relevant_nominations(noms, pod) {
            return match filters {
                Some(f) => self.run_active_filters(f, state, pod, node).into_status(),
                None => self.run_filter(state, pod, node),
            };
        }
        let mut node_out = node.clone();
        let mut state_out = state.clone();
        for n in noms {
            if n.priority() >= pod.priority() && n.uid() != pod.uid() {
                node_out.add_pod(n.clone());
                let s = self.run_pre_filter_add_pod(&mut state_out, pod, n, &node_out, snapshot);
                if !s.is_success() {
                    return s;
                }
            }
        }
        let s = self.run_filter(&state_out, pod, &node_out);
        if !s.is_success() {
            return s;
        }
        self.run_filter(state, pod, node)
    }

    /// Whether [`run_filter_with_nominated_pods_using`](Self::run_filter_with_nominated_pods_using)
    /// succeeds; without nominated pods to add, through `filters` with no status built.
    pub fn passes_filters_with_nominated_pods(
        &self,
        filters: Option<&ActiveFilters<'_>>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> bool {
        if let Some(f) = filters {
            if !relevant_nominations(nominated_for(nominated, node), pod) {
                return self.run_active_filters(f, state, pod, node).is_success();
            }
        }
        self.run_filter_with_nominated_pods_using(filters, state, pod, node, snapshot, nominated)
            .is_success()
    }

    /// `RunPostFilterPlugins`: the first plugin that succeeds wins; otherwise the messages of
    /// the rejecting plugins are joined, and an error stops at once.
    pub fn run_post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
        ctx: &mut PostFilterContext<'_>,
    ) -> (Option<PostFilterResult>, Status) {
        let mut reasons: Vec<String> = Vec::new();
        let mut rejector: &'static str = "";
        let mut result = None;
        for p in &self.post_filter {
            let Some(pf) = p.as_post_filter() else {
                continue;
            };
            let (r, s) = pf.post_filter(state, pod, statuses, ctx);
            if s.is_success() {
                return (r, s);
            }
            if s.code == Code::UnschedulableAndUnresolvable {
                return (r, s.with_plugin(p.name()));
            }
            if !s.is_rejected() {
                return (None, Status::error(s.message()).with_plugin(p.name()));
            }
            if rejector.is_empty() {
                rejector = p.name();
            }
            reasons.push(s.message());
            if r.is_some() {
                result = r;
            }
        }
        let status = Status {
            code: Code::Unschedulable,
            reasons: reasons.into_iter().map(Into::into).collect(),
            plugin: rejector,
        };
        (result, status)
    }

    /// `RunPreScorePlugins`: Skip marks a plugin's Score as skipped.
    pub fn run_pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        let mut skip = Vec::new();
        for p in &self.pre_score {
            let Some(ps) = p.as_pre_score() else {
                continue;
            };
            let s = ps.pre_score(state, pod, nodes, snapshot);
            if s.is_skip() {
                skip.push(p.name());
                continue;
            }
            if !s.is_success() {
                state.set_skip_score_plugins(skip);
                return Status::error(format!(
                    "running PreScore plugin {:?}: {}",
                    p.name(),
                    s.message()
                ))
                .with_plugin(p.name());
            }
        }
        state.set_skip_score_plugins(skip);
        Status::success()
    }

    /// `RunScorePlugins`: per plugin (in profile order) the raw, normalized and weighted scores
    /// of each node. Skipped plugins are absent.
    pub fn run_score(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut ScoreTable,
    ) -> Status {
        self.run_score_in(state, pod, nodes, None, out)
    }

    /// [`run_score`](Self::run_score) of `nodes`, which are `snapshot.nodes[feasible[k]]` when
    /// `indexed` is `Some((snapshot, feasible))`: then plugins may score from the snapshot's
    /// resource columns ([`ScorePlugin::score_nodes_in`]). The same table either way.
    pub fn run_score_in(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        indexed: Option<(&Snapshot, &[usize])>,
        out: &mut ScoreTable,
    ) -> Status {
        out.clear(nodes.len());
        let indexed = indexed.filter(|(_, feasible)| feasible.len() == nodes.len());
        // The union of the scored nodes' flags, from the columns (read once, for the plugins'
        // uniform-score tests). When no node of the snapshot has a flag, neither has any
        // scored node: no need to read their entries (a cache miss each, scattered over the
        // column), only to check that every index is in it.
        let flags = indexed.and_then(|(snapshot, feasible)| {
            let columns = snapshot.resource_columns();
            let column = &columns.flags;
            if columns.flags_union() == NodeFlags::NONE {
                // `feasible` indexes the snapshot's nodes (`nodes` was built from it), so
                // every index is in the column; the score paths' own reads are checked.
                debug_assert!(feasible.iter().all(|&i| i < column.len()));
                return Some(NodeFlags::NONE);
            }
            feasible
                .iter()
                .try_fold(NodeFlags::NONE, |acc, &i| column.get(i).map(|&f| acc | f))
        });
        // The weighted scores of the plugins whose score is the same on every node, summed:
        // added to the totals in one pass at the end, not in a pass of their own each (the
        // same sums, integer addition in another order; adding inside the other plugins'
        // weighting loops kept the compiler from vectorizing them).
        let mut pending_uniform: i64 = 0;
        for wp in &self.score {
            let p = &wp.plugin;
            if state.should_skip_score(p.name()) {
                continue;
            }
            let Some(sp) = p.as_score() else {
                continue;
            };
            // Score vectors are recycled from earlier cycles (see `ScoreTable::clear`).
            let mut ps = out.spare.pop().unwrap_or_default();
            ps.raw.clear();
            ps.normalized.clear();
            ps.has_normalized = false;
            ps.uniform = None;
            let uniform = match flags {
                Some(flags) => sp.uniform_score_with_flags(state, pod, nodes, flags),
                None => sp.uniform_score(state, pod, nodes),
            };
            if let Some((raw, normalized)) = uniform {
                // The same score on every node: kept once, with nothing scored, normalized or
                // written per node.
                let normalized = if sp.has_normalize() { normalized } else { raw };
                ps.uniform = Some(Uniform {
                    raw,
                    normalized,
                    len: nodes.len(),
                });
            } else if let Err(s) = indexed
                .and_then(|(snapshot, feasible)| {
                    sp.score_nodes_in(state, pod, snapshot, feasible, &mut ps.raw)
                })
                .unwrap_or_else(|| sp.score_nodes(state, pod, nodes, &mut ps.raw))
            {
                out.spare.push(ps);
                return Status::error(format!(
                    "running Score plugins: plugin {:?} failed with: {}",
                    p.name(),
                    s.message()
                ))
                .with_plugin(p.name());
            }
            if sp.has_normalize() && !ps.has_normalized && ps.uniform.is_none() {
                ps.normalized.extend_from_slice(&ps.raw);
                ps.has_normalized = true;
                let s = sp.normalize(state, pod, &mut ps.normalized);
                if !s.is_success() {
                    out.spare.push(ps);
                    return Status::error(format!(
                        "running Normalize on Score plugins: plugin {:?} failed with: {}",
                        p.name(),
                        s.message()
                    ))
                    .with_plugin(p.name());
                }
            }
            // The range check first (MIN_NODE_SCORE is 0, so one unsigned comparison catches
            // negatives too), then the weighting into the totals, each a pass the compiler
            // vectorizes. A score out of range fails the cycle before any total is touched.
            const _: () = assert!(crate::framework::interface::MIN_NODE_SCORE == 0);
            let max = crate::framework::interface::MAX_NODE_SCORE as u64;
            let weight = wp.weight;
            // One score for all: one range test, one addend, kept for the final pass.
            let out_of_range = match ps.uniform {
                // No node, no score: nothing to check or add (as the loop over none).
                Some(u) if u.len == 0 => false,
                Some(u) => {
                    pending_uniform += u.normalized * weight;
                    u.normalized as u64 > max
                }
                None => {
                    let scores = ps.normalized_slice();
                    let above = any_above(scores, max);
                    if !above {
                        add_weighted(&mut out.totals, scores, weight);
                    }
                    above
                }
            };
            if out_of_range {
                let v = (0..ps.len())
                    .filter_map(|k| ps.normalized_at(k))
                    .find(|&v| v as u64 > max)
                    .unwrap_or_default();
                let msg = format!(
                    "applying score defaultWeights on Score plugins: plugin {:?} returns an invalid score {}, it should in the range of [0, 100] after normalizing",
                    p.name(),
                    v
                );
                out.spare.push(ps);
                return Status::error(msg).with_plugin(p.name());
            }
            ps.plugin = p.name();
            ps.weight = wp.weight;
            out.plugins.push(ps);
        }
        if pending_uniform != 0 {
            for total in out.totals.iter_mut() {
                *total += pending_uniform;
            }
        }
        Status::success()
    }

    /// `RunReservePluginsReserve`; on failure the caller runs unreserve.
    pub fn run_reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.reserve {
            if let Some(r) = p.as_reserve() {
                let s = r.reserve(state, pod, node);
                if !s.is_success() {
                    return s.with_plugin(p.name());
                }
            }
        }
        Status::success()
    }

    /// `RunReservePluginsUnreserve`, in reverse order.
    pub fn run_unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        for p in self.reserve.iter().rev() {
            if let Some(r) = p.as_reserve() {
                r.unreserve(state, pod, node);
            }
        }
    }

    pub fn run_permit(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.permit {
            if let Some(r) = p.as_permit() {
                let s = r.permit(state, pod, node);
                if !s.is_success() {
                    return s.with_plugin(p.name());
                }
            }
        }
        Status::success()
    }

    pub fn run_pre_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.pre_bind {
            if let Some(r) = p.as_pre_bind() {
                let s = r.pre_bind(state, pod, node);
                if !s.is_success() {
                    return s.with_plugin(p.name());
                }
            }
        }
        Status::success()
    }

    /// Runs Bind plugins until one does not Skip.
    pub fn run_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.bind {
            if let Some(b) = p.as_bind() {
                let s = b.bind(state, pod, node);
                if s.is_skip() {
                    continue;
                }
                return s.with_plugin(p.name());
            }
        }
        Status::skip()
    }

    pub fn run_post_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) {
        for p in &self.post_bind {
            if let Some(b) = p.as_post_bind() {
                b.post_bind(state, pod, node);
            }
        }
    }
}

/// The Filter plugins of one cycle, from [`Framework::active_filters`].
pub struct ActiveFilters<'a> {
    /// Every active plugin, in order.
    all: Vec<(&'static str, &'a dyn FilterPlugin)>,
    /// The active plugins that made no promise for the pod, in order.
    unpromised: Vec<(&'static str, &'a dyn FilterPlugin)>,
    /// The flags the promises name: a node with none of them needs only `unpromised`.
    mask: NodeFlags,
    /// Every plugin of `unpromised` takes runs of nodes
    /// ([`FilterPlugin::has_leading_passes`]); otherwise no run is asked for, so that no plugin
    /// scans ahead only for another to answer 0.
    batches: bool,
    /// The active plugins that [`judge totals`](FilterPlugin::judges_totals), in order.
    totals: Vec<&'a dyn FilterPlugin>,
    /// The other active plugins that [`ignore pods`](FilterPlugin::ignores_pods), in order.
    pod_blind: Vec<&'a dyn FilterPlugin>,
    /// Every active plugin is in `totals` or `pod_blind`.
    totals_decide: bool,
}

impl ActiveFilters<'_> {
    /// The same list with the plugins that judge totals and those that ignore pods sorted
    /// out, for [`rejects_with_totals`](Self::rejects_with_totals),
    /// [`totals_decide`](Self::totals_decide) and [`pod_blind_pass`](Self::pod_blind_pass)
    /// (without them, nothing judges totals and nothing decides).
    pub fn with_totals(mut self) -> Self {
        self.totals = self
            .all
            .iter()
            .filter(|(_, f)| f.judges_totals())
            .map(|&(_, f)| f)
            .collect();
        self.pod_blind = self
            .all
            .iter()
            .filter(|(_, f)| !f.judges_totals() && f.ignores_pods())
            .map(|&(_, f)| f)
            .collect();
        self.totals_decide = self.totals.len() + self.pod_blind.len() == self.all.len();
        self
    }

    /// Whether an active plugin is sure to reject `pod` on `node` were the node's requested
    /// totals `requested` and its pod count `num_pods`
    /// ([`FilterPlugin::passes_with_totals`]): then filtering such a node fails, whichever
    /// plugin's status comes first, with or without nominated pods (the run without them
    /// must pass too). Its negation: whether every plugin judging totals passes; with
    /// [`totals_decide`](Self::totals_decide) and [`pod_blind_pass`](Self::pod_blind_pass) on
    /// the node, whether the cycle's filters pass the node holding such pods (without
    /// nominated pods to add).
    pub fn rejects_with_totals(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        requested: &crate::resource::Resource,
        num_pods: usize,
    ) -> bool {
        self.totals
            .iter()
            .any(|f| f.passes_with_totals(state, pod, node, requested, num_pods) == Some(false))
    }

    /// Whether the verdict of every active plugin on a node depends on the node's pods only
    /// through its requested totals and pod count: each one either
    /// [`judges totals`](FilterPlugin::judges_totals) or
    /// [`ignores pods`](FilterPlugin::ignores_pods).
    pub fn totals_decide(&self) -> bool {
        self.totals_decide
    }

    /// Whether every active plugin that [`ignores pods`](FilterPlugin::ignores_pods) (and does
    /// not judge totals) passes `pod` on `node`: with any pods on the node, the same answer.
    pub fn pod_blind_pass(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> bool {
        self.pod_blind
            .iter()
            .all(|f| f.filter(state, pod, node).is_success())
    }
}

/// The pods nominated to `node` (none without a lookup when no pod is nominated anywhere).
#[inline]
pub(crate) fn nominated_for<'n>(
    nominated: &'n dyn NominatedPods,
    node: &NodeInfo,
) -> &'n [Arc<PodInfo>] {
    if nominated.is_empty() {
        &[]
    } else {
        nominated.nominated_pods_for_node(node.name())
    }
}

/// Whether any of `noms` takes part in filtering `pod` (`RunFilterPluginsWithNominatedPods`
/// adds the nominated pods of equal or higher priority, other than the pod itself).
#[inline]
pub(crate) fn relevant_nominations(noms: &[Arc<PodInfo>], pod: &PodInfo) -> bool {
    noms.iter()
        .any(|n| n.priority() >= pod.priority() && n.uid() != pod.uid())
}

/// A plugin's run of rejections ([`FilterPlugin::leading_rejections`]) as the framework may
/// return it: non-empty, a rejection, and naming the plugin `name` (named by the same constant
/// as a rule: the address settles it without reading bytes).
#[inline]
fn vouched_run(
    run: (usize, Option<&'static Status>),
    name: &'static str,
) -> Option<(usize, &'static Status)> {
    match run {
        (k, Some(s))
            if k > 0 && s.is_rejected() && (std::ptr::eq(s.plugin, name) || s.plugin == name) =>
        {
            Some((k, s))
        }
        _ => None,
    }
}

/// A failing Filter status tagged with its plugin; a non-rejection becomes an Error naming it.
fn filter_failure(name: &'static str, s: Status) -> Status {
    let s = if s.is_rejected() {
        s
    } else {
        Status::error(format!("running {name:?} filter plugin: {}", s.message()))
    };
    s.with_plugin(name)
}

fn insert_sorted(v: &mut Vec<&'static str>, s: &'static str) {
    if let Err(i) = v.binary_search(&s) {
        v.insert(i, s);
    }
}

impl PluginsRunner for Framework {
    fn pre_filter_extensions_active(&self, state: &CycleState) -> bool {
        Framework::pre_filter_extensions_active(self, state)
    }

    fn run_pre_filter_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_add: &Arc<PodInfo>,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Status {
        Framework::run_pre_filter_add_pod(self, state, pod, to_add, node, snapshot)
    }

    fn run_pre_filter_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &Arc<PodInfo>,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Status {
        Framework::run_pre_filter_remove_pod(self, state, pod, to_remove, node, snapshot)
    }

    fn run_filter_with_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> Status {
        Framework::run_filter_with_nominated_pods(self, state, pod, node, snapshot, nominated)
    }

    fn dry_run_filters(&self, state: &CycleState, pod: &PodInfo) -> Option<ActiveFilters<'_>> {
        Some(self.active_filters(state, pod).with_totals())
    }

    fn run_filter_with_nominated_pods_using(
        &self,
        filters: Option<&ActiveFilters<'_>>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> Status {
        Framework::run_filter_with_nominated_pods_using(
            self, filters, state, pod, node, snapshot, nominated,
        )
    }

    fn passes_filters_with_nominated_pods(
        &self,
        filters: Option<&ActiveFilters<'_>>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        nominated: &dyn NominatedPods,
    ) -> bool {
        Framework::passes_filters_with_nominated_pods(
            self, filters, state, pod, node, snapshot, nominated,
        )
    }
}
