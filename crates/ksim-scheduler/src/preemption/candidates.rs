//! Candidate search (upstream `findCandidates`, `DryRunPreemption`): the potential nodes, the
//! random offset to start from, and the dry run that asks the plugin for each node's victims.
//! Victim selection itself (`SelectVictimsOnNode`) is the plugin's, as upstream:
//! [`crate::plugins::default_preemption`].

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{Candidate, CompiledPdb, DryRunContext, Evaluator};
use crate::framework::cycle_state::CycleState;
use crate::framework::interface::NodeToStatus;
use crate::framework::status::{Code, Status};
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;

impl Evaluator<'_> {
    /// `findCandidates`: every candidate found by the dry run, the statuses of the nodes that
    /// were checked and failed (when no candidate was found), and the aggregated error of the
    /// nodes that failed with an error. `Err` is a failure before the dry run.
    #[allow(clippy::type_complexity)]
    pub fn find_candidates(
        &self,
        ctx: &DryRunContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Vec<Candidate>, NodeToStatus, Option<String>), Status> {
        let snapshot = ctx.snapshot;
        if snapshot.is_empty() {
            return Err(Status::error("no nodes available"));
        }
        let potential = nodes_for_status_code(statuses, snapshot.len(), Code::Unschedulable);
        if potential.is_empty() {
            return Ok((Vec::new(), NodeToStatus::new(snapshot.len()), None));
        }
        let pdbs = CompiledPdb::compile_all(&snapshot.objects.pdbs);
        let (offset, num_candidates) = self
            .interface
            .get_offset_and_num_candidates(potential.len(), rng);
        Ok(self.dry_run_preemption(ctx, state, pod, &potential, &pdbs, offset, num_candidates))
    }

    /// `DryRunPreemption`: checks the potential nodes from `offset` on, each on a private copy of
    /// the node and the cycle state, until at least one PDB-respecting candidate was found and
    /// `num_candidates` candidates in all. Candidates that violate no PDB come first. The
    /// statuses of the failed nodes are returned when no candidate was found (else the table
    /// is empty).
    #[allow(clippy::too_many_arguments)]
    pub fn dry_run_preemption(
        &self,
        ctx: &DryRunContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        potential: &[usize],
        pdbs: &[CompiledPdb],
        offset: usize,
        num_candidates: usize,
    ) -> (Vec<Candidate>, NodeToStatus, Option<String>) {
        let snapshot = ctx.snapshot;
        let mut non_violating: Vec<Candidate> = Vec::new();
        let mut violating: Vec<Candidate> = Vec::new();
        // The failed nodes' statuses; the table is built only when no candidate was found, the
        // one case its caller reads it (upstream's `Preempt` too).
        let mut failed: Vec<(usize, Status)> = Vec::new();
        let mut errs: Vec<String> = Vec::new();
        let n = potential.len();
        // Each node gets a private copy of the cycle state, since the PreFilter extensions
        // update it as pods are removed and added back. When no extension runs for this pod,
        // nothing writes to the copy, and one copy serves every node.
        let extensions = ctx.framework.pre_filter_extensions_active(state);
        // The Filter plugins, resolved once: removing and adding pods never changes which
        // plugins were skipped.
        let filters = ctx.framework.dry_run_filters(state, pod);
        let ctx = &DryRunContext {
            pre_filter_extensions: extensions,
            filters: filters.as_ref(),
            ..*ctx
        };
        let mut shared_state = (!extensions).then(|| state.clone());
        // The plugin copies a node into this scratch NodeInfo (its allocations reused) to remove
        // and add pods on it.
        let mut scratch: Option<NodeInfo> = None;
        for i in 0..n {
            let idx = potential[(offset + i) % n];
            let node = &snapshot.nodes[idx];
            let mut own_state;
            let state_copy = match shared_state.as_mut() {
                Some(s) => s,
                None => {
                    own_state = state.clone();
                    &mut own_state
                }
            };
            let (victims, num_pdb_violations, status) = self.interface.select_victims_on_node(
                ctx,
                state_copy,
                pod,
                node,
                &mut scratch,
                pdbs,
            );
            if status.is_success() && !victims.is_empty() {
                let c = Candidate {
                    node: idx,
                    name: node.name().to_string(),
                    victims,
                    num_pdb_violations,
                };
                // Upstream's candidate lists hold at most `num_candidates` entries each.
                let list = if num_pdb_violations == 0 {
                    &mut non_violating
                } else {
                    &mut violating
                };
                if list.len() < num_candidates {
                    list.push(c);
                }
                if !non_violating.is_empty()
                    && non_violating.len() + violating.len() >= num_candidates
                {
                    break;
                }
                continue;
            }
            let status = if status.is_success() {
                Status::error(format!(
                    "expected at least one victim pod on node {:?}",
                    node.name()
                ))
            } else {
                status
            };
            if status.code == Code::Error {
                errs.push(status.message());
            }
            // Once a candidate was found the table will not be built: nothing to keep.
            if non_violating.is_empty() && violating.is_empty() {
                failed.push((idx, status));
            }
        }
        let mut node_statuses = NodeToStatus::new(snapshot.len());
        if non_violating.is_empty() && violating.is_empty() {
            for (idx, status) in failed {
                node_statuses.set(idx, status);
            }
        }
        non_violating.extend(violating);
        (non_violating, node_statuses, aggregate_errors(&errs))
    }
}

/// `NodeToStatus.NodesForStatusCode`: the nodes whose status has `code`, in snapshot order.
/// A node without an explicit status has the absent one, when there is one.
pub fn nodes_for_status_code(statuses: &NodeToStatus, num_nodes: usize, code: Code) -> Vec<usize> {
    statuses.nodes_where(num_nodes, |s| s.is_some_and(|s| s.code == code))
}

/// `utilerrors.NewAggregate(errs).Error()`: one message as is, several deduplicated in brackets.
pub(super) fn aggregate_errors(errs: &[String]) -> Option<String> {
    match errs {
        [] => None,
        [one] => Some(one.clone()),
        _ => {
            let mut seen: Vec<&str> = Vec::new();
            for e in errs {
                if !seen.contains(&e.as_str()) {
                    seen.push(e);
                }
            }
            if seen.len() == 1 {
                Some(seen[0].to_string())
            } else {
                Some(format!("[{}]", seen.join(", ")))
            }
        }
    }
}

/// Draws upstream's `rand.Int31n(n)` offset from the seeded RNG.
pub fn random_offset(n: usize, rng: &mut ChaCha8Rng) -> usize {
    if n == 0 {
        0
    } else {
        rng.random_range(0..n)
    }
}
