//! Candidate search (upstream `findCandidates`, `DryRunPreemption`): the potential nodes, the
//! random offset to start from, and the dry run that asks the plugin for each node's victims.
//! Victim selection itself (`SelectVictimsOnNode`) is the plugin's, as upstream:
//! [`crate::plugins::default_preemption`].

use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::choice::Scores;
use super::{Candidate, CompiledPdb, DryRunContext, Evaluator};
use crate::framework::cycle_state::CycleState;
use crate::framework::interface::NodeToStatus;
use crate::framework::status::{Code, Status};
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;

impl Evaluator<'_> {
    /// `findCandidates`: every candidate found by the dry run, the statuses of the nodes that
    /// were checked and failed, and the aggregated error of the nodes that failed with an
    /// error (both only when no candidate was found, the one case upstream's `Preempt` reads
    /// them). `Err` is a failure before the dry run.
    #[allow(clippy::type_complexity)]
    pub fn find_candidates(
        &self,
        ctx: &DryRunContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Vec<Candidate>, NodeToStatus, Option<String>), Status> {
        let mut lists = Lists::default();
        let (node_statuses, err) =
            self.find_candidates_into(ctx, state, pod, statuses, rng, &mut lists)?;
        Ok((lists.into_candidates(), node_statuses, err))
    }

    /// [`find_candidates`](Self::find_candidates) and `SelectCandidate` at once: the candidate
    /// [`select_candidate`](super::select_candidate) would pick from the candidates found
    /// (`None` when there are none), kept as the dry run finds them instead of collecting
    /// them all. Only for a preemption without extenders (they would read the whole list).
    #[allow(clippy::type_complexity)]
    pub fn find_best_candidate(
        &self,
        ctx: &DryRunContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Option<Candidate>, NodeToStatus, Option<String>), Status> {
        let mut best = Best::default();
        let (node_statuses, err) =
            self.find_candidates_into(ctx, state, pod, statuses, rng, &mut best)?;
        Ok((best.into_candidate(ctx), node_statuses, err))
    }

    /// `findCandidates` with the candidates given to `found`.
    fn find_candidates_into<'s>(
        &self,
        ctx: &DryRunContext<'s>,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
        rng: &mut ChaCha8Rng,
        found: &mut impl Found<'s>,
    ) -> Result<(NodeToStatus, Option<String>), Status> {
        let snapshot = ctx.snapshot;
        if snapshot.is_empty() {
            return Err(Status::error("no nodes available"));
        }
        let potential = nodes_for_status_code(statuses, snapshot.len(), Code::Unschedulable);
        if potential.is_empty() {
            return Ok((NodeToStatus::new(snapshot.len()), None));
        }
        let pdbs = CompiledPdb::compile_all(&snapshot.objects.pdbs);
        let (offset, num_candidates) = self
            .interface
            .get_offset_and_num_candidates(potential.len(), rng);
        Ok(self.dry_run_into(
            ctx,
            state,
            pod,
            &potential,
            &pdbs,
            offset,
            num_candidates,
            found,
        ))
    }

    /// `DryRunPreemption`: checks the potential nodes from `offset` on, each on a private copy of
    /// the node and the cycle state, until at least one PDB-respecting candidate was found and
    /// `num_candidates` candidates in all. Candidates that violate no PDB come first. The
    /// statuses of the failed nodes and their aggregated error are returned when no candidate
    /// was found (else the table is empty and the error `None`: upstream's `Preempt` reads the
    /// error only when there is no candidate, and the statuses of nodes rejected without one
    /// are built only then).
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
        let mut lists = Lists::default();
        let (node_statuses, err) = self.dry_run_into(
            ctx,
            state,
            pod,
            potential,
            pdbs,
            offset,
            num_candidates,
            &mut lists,
        );
        (lists.into_candidates(), node_statuses, err)
    }

    /// [`dry_run_preemption`](Self::dry_run_preemption) and `SelectCandidate` at once (see
    /// [`find_best_candidate`](Self::find_best_candidate)).
    #[allow(clippy::too_many_arguments)]
    pub fn dry_run_best(
        &self,
        ctx: &DryRunContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        potential: &[usize],
        pdbs: &[CompiledPdb],
        offset: usize,
        num_candidates: usize,
    ) -> (Option<Candidate>, NodeToStatus, Option<String>) {
        let mut best = Best::default();
        let (node_statuses, err) = self.dry_run_into(
            ctx,
            state,
            pod,
            potential,
            pdbs,
            offset,
            num_candidates,
            &mut best,
        );
        (best.into_candidate(ctx), node_statuses, err)
    }

    /// `DryRunPreemption` with each candidate that upstream's lists would hold given to
    /// `found`, in the order checked.
    #[allow(clippy::too_many_arguments)]
    fn dry_run_into<'s>(
        &self,
        ctx: &DryRunContext<'s>,
        state: &CycleState,
        pod: &PodInfo,
        potential: &[usize],
        pdbs: &[CompiledPdb],
        offset: usize,
        num_candidates: usize,
        found: &mut impl Found<'s>,
    ) -> (NodeToStatus, Option<String>) {
        let snapshot = ctx.snapshot;
        // How many candidates upstream's two lists (violating no PDB, violating one) hold.
        let mut non_violating = 0usize;
        let mut violating = 0usize;
        // The failed nodes' statuses (`None`: rejected without one, built below if needed);
        // the table is built only when no candidate was found, the one case its caller reads
        // it (upstream's `Preempt` too).
        let mut failed: Vec<(usize, Option<Status>)> = Vec::new();
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
        // `(offset + i) % n` for `i < n` without a division per use (four per node checked,
        // with the prefetches): `offset % n + i` is below `2n`.
        let offset = offset % n;
        let wrap = |i: usize| {
            let j = offset + i;
            if j >= n {
                j - n
            } else {
                j
            }
        };
        let node_at = |i: usize| &snapshot.nodes[potential[wrap(i)]];
        // The victims of the node checked, borrowed from it, one list from node to node (a
        // candidate that is kept takes it, see `Found`).
        let mut victims: Vec<&'s Arc<PodInfo>> = Vec::new();
        for i in 0..n {
            // The next nodes' memory is asked for ahead of the checks, in the order their
            // pointers become readable (see `prefetch_ahead`).
            prefetch_ahead(i, n, node_at);
            let idx = potential[wrap(i)];
            let node = &snapshot.nodes[idx];
            let mut own_state;
            let state_copy = match shared_state.as_mut() {
                Some(s) => s,
                None => {
                    own_state = state.clone();
                    &mut own_state
                }
            };
            let Some((num_pdb_violations, status)) = self.interface.select_victims_or_reject(
                ctx,
                state_copy,
                pod,
                node,
                &mut scratch,
                pdbs,
                &mut victims,
            ) else {
                // Rejected, its status not built: only the table below reads it.
                if non_violating == 0 && violating == 0 {
                    failed.push((idx, None));
                }
                continue;
            };
            if status.is_success() && !victims.is_empty() {
                // Upstream's candidate lists hold at most `num_candidates` entries each.
                let is_violating = num_pdb_violations != 0;
                let len = if is_violating {
                    &mut violating
                } else {
                    &mut non_violating
                };
                if *len < num_candidates {
                    *len += 1;
                    found.found(is_violating, idx, node, &mut victims, num_pdb_violations);
                }
                if non_violating > 0 && non_violating + violating >= num_candidates {
                    break;
                }
                continue;
            }
            // Once a candidate was found the table will not be built: nothing to keep.
            if non_violating == 0 && violating == 0 {
                failed.push((idx, Some(failure(status, node))));
            }
        }
        let mut node_statuses = NodeToStatus::new(snapshot.len());
        let mut err = None;
        if non_violating == 0 && violating == 0 {
            // Every node checked failed, in `failed` in the order checked: their statuses,
            // those not built yet asked for now (the same node, state and pod as in the loop),
            // and their errors aggregated in that order.
            let mut errs: Vec<String> = Vec::new();
            for (idx, status) in failed {
                let node = &snapshot.nodes[idx];
                let status = match status {
                    Some(s) => s,
                    None => {
                        let mut own_state;
                        let state_copy = match shared_state.as_mut() {
                            Some(s) => s,
                            None => {
                                own_state = state.clone();
                                &mut own_state
                            }
                        };
                        let (_, _, s) = self.interface.select_victims_on_node(
                            ctx,
                            state_copy,
                            pod,
                            node,
                            &mut scratch,
                            pdbs,
                        );
                        failure(s, node)
                    }
                };
                if status.code == Code::Error {
                    errs.push(status.message());
                }
                node_statuses.set(idx, status);
            }
            err = aggregate_errors(&errs);
        }
        (node_statuses, err)
    }
}

/// What the dry run does with each candidate that upstream's lists would hold.
trait Found<'s> {
    /// A candidate on node `node` (`info`), in the list of candidates violating a PDB or
    /// the other. Its victims (the node's pods) are taken from `victims` if kept (leaving a
    /// list to reuse).
    fn found(
        &mut self,
        violating: bool,
        node: usize,
        info: &NodeInfo,
        victims: &mut Vec<&'s Arc<PodInfo>>,
        num_pdb_violations: i64,
    );
}

/// Upstream's two lists, each in the order checked.
#[derive(Default)]
struct Lists {
    non_violating: Vec<Candidate>,
    violating: Vec<Candidate>,
}

impl Lists {
    /// The candidates violating no PDB first, as upstream's `DryRunPreemption` returns them.
    fn into_candidates(mut self) -> Vec<Candidate> {
        self.non_violating.extend(self.violating);
        self.non_violating
    }
}

impl<'s> Found<'s> for Lists {
    fn found(
        &mut self,
        violating: bool,
        node: usize,
        info: &NodeInfo,
        victims: &mut Vec<&'s Arc<PodInfo>>,
        num_pdb_violations: i64,
    ) {
        let victims: Vec<Arc<PodInfo>> = victims.drain(..).cloned().collect();
        let list = if violating {
            &mut self.violating
        } else {
            &mut self.non_violating
        };
        list.push(Candidate {
            node,
            name: info.name().to_string(),
            victims,
            num_pdb_violations,
        });
    }
}

/// The candidate `pickOneNodeForPreemption` would pick from each list so far: the first of
/// the highest-scoring ones ([`Scores`]), kept by replacing it only with a candidate that
/// scores higher. Over the whole list (violating no PDB first) the function picks the
/// first list's when there is one (its PDB score, 0, is the highest), else the second's.
#[derive(Default)]
struct Best<'s> {
    non_violating: Option<Kept<'s>>,
    violating: Option<Kept<'s>>,
}

/// A candidate kept by [`Best`]: node, victims (borrowed from the node until the dry run
/// ends), PDB violations, and its scores.
type Kept<'s> = (usize, Vec<&'s Arc<PodInfo>>, i64, Scores);

impl Best<'_> {
    fn into_candidate(self, ctx: &DryRunContext<'_>) -> Option<Candidate> {
        let (node, victims, num_pdb_violations, _) = self.non_violating.or(self.violating)?;
        Some(Candidate {
            node,
            name: ctx.snapshot.nodes[node].name().to_string(),
            victims: victims.into_iter().cloned().collect(),
            num_pdb_violations,
        })
    }
}

impl<'s> Found<'s> for Best<'s> {
    fn found(
        &mut self,
        violating: bool,
        node: usize,
        _: &NodeInfo,
        victims: &mut Vec<&'s Arc<PodInfo>>,
        num_pdb_violations: i64,
    ) {
        let best = if violating {
            &mut self.violating
        } else {
            &mut self.non_violating
        };
        let mut s = Scores::new((victims, num_pdb_violations));
        match best.as_mut() {
            None => *best = Some((node, std::mem::take(victims), num_pdb_violations, s)),
            Some(b) => {
                if s.higher((victims, num_pdb_violations), &mut b.3, (&b.1, b.2)) {
                    // The replaced victims' list goes back to the dry run for reuse.
                    std::mem::swap(&mut b.1, victims);
                    b.0 = node;
                    b.2 = num_pdb_violations;
                    b.3 = s;
                }
            }
        }
    }
}

/// The status of a node that yielded no candidate: its own, or an error when it succeeded
/// without victims.
fn failure(status: Status, node: &NodeInfo) -> Status {
    if status.is_success() {
        Status::error(format!(
            "expected at least one victim pod on node {:?}",
            node.name()
        ))
    } else {
        status
    }
}

/// Asks the CPU to load the memory the dry run reads for the nodes after the `i`-th of `n`
/// (`node_at(k)` is the `k`-th node it checks): the `NodeInfo` three nodes ahead, the pod list
/// and node object two ahead (their addresses are in that `NodeInfo`, loaded by now), and the
/// start of each pod object with its UID and start time one ahead (their addresses are in the
/// pod list). Each check reads a few hundred bytes spread over a dozen cold cache lines and
/// little else, so waiting for them, one pointer after the other, was most of its time.
/// Prefetches only: no result depends on them.
#[inline]
fn prefetch_ahead<'a>(i: usize, n: usize, node_at: impl Fn(usize) -> &'a NodeInfo) {
    if i + 3 < n {
        let node = node_at(i + 3);
        prefetch_bytes(
            node as *const NodeInfo as *const u8,
            std::mem::size_of::<NodeInfo>(),
        );
    }
    if i + 2 < n {
        let node = node_at(i + 2);
        prefetch_bytes(
            node.pods.as_ptr() as *const u8,
            std::mem::size_of_val(&node.pods[..]),
        );
        prefetch(Arc::as_ptr(&node.node) as *const u8);
    }
    if i + 1 < n {
        for p in &node_at(i + 1).pods {
            // The `Arc`'s counters (16 bytes before the value), the priority, requests, ports
            // and affinity lists (`PodInfo` is `repr(C)`, those first), then the two fields
            // read further in.
            prefetch_bytes((Arc::as_ptr(p) as *const u8).wrapping_sub(16), 16 + 256);
            prefetch(&p.pod.metadata.uid as *const String as *const u8);
            prefetch(&p.pod.status.start_time as *const Option<String> as *const u8);
        }
    }
}

/// [`prefetch`] of every cache line of `len` bytes from `start`.
#[inline]
fn prefetch_bytes(start: *const u8, len: usize) {
    for off in (0..len).step_by(64) {
        prefetch(start.wrapping_add(off));
    }
}

/// Asks the CPU to start loading the cache line of `p` (nothing elsewhere).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault, whatever the
    // address; SSE, which it needs, is what this build targets (the cfg above).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = p;
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
