//! The generic preemption evaluator, mirroring upstream
//! `pkg/scheduler/framework/preemption/preemption.go` (`Evaluator.Preempt`, `findCandidates`,
//! `DryRunPreemption`, `SelectCandidate`, `pickOneNodeForPreemption`) and the helpers it uses
//! from `pkg/scheduler/util` (`MoreImportantPod`, `GetEarliestPodStartTime`).
//!
//! A preemption plugin supplies the policy through [`Interface`] (the in-tree one is
//! [`crate::plugins::default_preemption`]); the [`Evaluator`] runs the search.
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
//! - **Pods without `status.startTime`.** Upstream uses `time.Now()` for them. ksim treats them as
//!   started after every pod that has a start time, and as equal to each other.

use std::cmp::Ordering;
use std::sync::Arc;

use ksim_api::{PodDisruptionBudget, Selector};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::framework::cycle_state::CycleState;
use crate::framework::interface::{NodeToStatus, PostFilterResult};
use crate::framework::runtime::{Framework, NominatedPods};
use crate::framework::status::{Code, Status};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;
use crate::schedule::{Diagnosis, FitError};

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
    pub framework: &'a Framework,
    pub snapshot: &'a Snapshot,
    pub nominated: &'a dyn NominatedPods,
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

    /// The fewest pods to evict from `node` (a private copy, as is `state`) for `pod` to fit,
    /// most important first, and how many of them violate a PDB.
    fn select_victims_on_node(
        &self,
        ctx: &DryRunContext<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &mut NodeInfo,
        pdbs: &[CompiledPdb],
    ) -> (Vec<Arc<PodInfo>>, i64, Status);
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

        // 2) Candidates.
        let (candidates, node_statuses, err) =
            match self.find_candidates(ctx, state, pod, statuses, rng) {
                Ok(r) => r,
                Err(s) => return (None, s),
            };
        if candidates.is_empty() {
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
            return (Some(result), Status::unschedulable(fit.message()));
        }

        // 3) No extenders in ksim. 4) The best candidate.
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

    /// `findCandidates`: every candidate found by the dry run, the statuses of the nodes that
    /// were checked and failed, and the aggregated error of the nodes that failed with an
    /// error. `Err` is a failure before the dry run.
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
    /// `num_candidates` candidates in all. Candidates that violate no PDB come first.
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
        let mut node_statuses = NodeToStatus::new(snapshot.len());
        let mut errs: Vec<String> = Vec::new();
        let n = potential.len();
        for i in 0..n {
            let idx = potential[(offset + i) % n];
            let mut node = snapshot.nodes[idx].clone();
            let mut state_copy = state.clone();
            let (victims, num_pdb_violations, status) =
                self.interface
                    .select_victims_on_node(ctx, &mut state_copy, pod, &mut node, pdbs);
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
            node_statuses.set(idx, status);
        }
        non_violating.extend(violating);
        (non_violating, node_statuses, aggregate_errors(&errs))
    }
}

/// `NodeToStatus.NodesForStatusCode`: the nodes whose status has `code`, in snapshot order.
pub fn nodes_for_status_code(statuses: &NodeToStatus, num_nodes: usize, code: Code) -> Vec<usize> {
    let absent_code = statuses
        .absent
        .as_ref()
        .map_or(Code::UnschedulableAndUnresolvable, |s| s.code);
    if absent_code == code {
        return (0..num_nodes)
            .filter(|&i| statuses.get(i).map(|s| s.code) == Some(code))
            .collect();
    }
    (0..num_nodes)
        .filter(|&i| statuses.explicit(i).is_some_and(|s| s.code == code))
        .collect()
}

/// `utilerrors.NewAggregate(errs).Error()`: one message as is, several deduplicated in brackets.
fn aggregate_errors(errs: &[String]) -> Option<String> {
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

/// `SelectCandidate` with the default score functions (`pickOneNodeForPreemption`).
pub fn select_candidate(candidates: &[Candidate]) -> Option<&Candidate> {
    match candidates {
        [] => None,
        [one] => Some(one),
        _ => Some(&candidates[pick_one_node_for_preemption(candidates)]),
    }
}

/// `pickOneNodeForPreemption`: the index of the candidate with, in order, the fewest PDB
/// violations, the lowest highest-victim priority, the lowest sum of priorities, the fewest
/// victims and the latest start of its highest-priority victims; then the first one.
pub fn pick_one_node_for_preemption(candidates: &[Candidate]) -> usize {
    type ScoreFn = fn(&Candidate) -> i128;
    const SCORE_FUNCS: [ScoreFn; 5] = [
        |c| -(c.num_pdb_violations as i128),
        |c| -(c.victims.first().map_or(0, |p| p.priority()) as i128),
        |c| {
            // MaxInt32+1 is added to every priority so that negative priorities still make a
            // node with more victims score lower.
            -c.victims
                .iter()
                .map(|p| p.priority() as i128 + i32::MAX as i128 + 1)
                .sum::<i128>()
        },
        |c| -(c.victims.len() as i128),
        |c| earliest_start_of_highest_priority(&c.victims).map_or(i128::MIN, |t| t.as_score()),
    ];
    let mut all: Vec<usize> = (0..candidates.len()).collect();
    for f in SCORE_FUNCS {
        let mut selected: Vec<usize> = Vec::new();
        let mut max = i128::MIN;
        for &i in &all {
            let s = f(&candidates[i]);
            if s > max {
                max = s;
                selected.clear();
            }
            if s == max {
                selected.push(i);
            }
        }
        if selected.len() == 1 {
            return selected[0];
        }
        all = selected;
    }
    all.first().copied().unwrap_or(0)
}

/// Pods nominated to `node` with a lower priority than `pod`: after preempting there, the caller
/// clears their nomination (upstream `getLowerPriorityNominatedPods` + `clearNominatedNodeName`).
pub fn lower_priority_nominated_pods(
    nominated: &dyn NominatedPods,
    pod: &PodInfo,
    node: &str,
) -> Vec<Arc<PodInfo>> {
    nominated
        .nominated_pods_for_node(node)
        .iter()
        .filter(|p| p.priority() < pod.priority())
        .cloned()
        .collect()
}

// ---- start times and importance --------------------------------------------------------------

/// A pod's start time as `util.GetPodStartTime` reads it: `status.startTime`, or "now" for a pod
/// that has not started (ordered after every real time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StartTime {
    /// Nanoseconds since the Unix epoch.
    At(i128),
    NotStarted,
}

impl StartTime {
    pub fn of(pod: &PodInfo) -> StartTime {
        pod.pod
            .status
            .start_time
            .as_deref()
            .and_then(parse_rfc3339_nanos)
            .map_or(StartTime::NotStarted, StartTime::At)
    }

    /// `Time.UnixNano()` as a score (later is higher).
    fn as_score(self) -> i128 {
        match self {
            StartTime::At(t) => t,
            StartTime::NotStarted => i128::MAX,
        }
    }

    /// `Time.Before`.
    pub fn before(self, other: StartTime) -> bool {
        self.cmp(&other) == Ordering::Less
    }
}

/// `util.MoreImportantPod`: higher priority, then earlier start.
pub fn more_important_pod(p1: &PodInfo, p2: &PodInfo) -> bool {
    more_important(
        (p1.priority(), StartTime::of(p1)),
        (p2.priority(), StartTime::of(p2)),
    )
}

/// [`more_important_pod`] on precomputed `(priority, start time)` keys.
pub fn more_important(a: (i32, StartTime), b: (i32, StartTime)) -> bool {
    if a.0 != b.0 {
        return a.0 > b.0;
    }
    a.1.before(b.1)
}

/// `util.GetEarliestPodStartTime`: the earliest start among the highest-priority victims.
pub fn earliest_start_of_highest_priority(victims: &[Arc<PodInfo>]) -> Option<StartTime> {
    let first = victims.first()?;
    let mut earliest = StartTime::of(first);
    let mut max_priority = first.priority();
    for p in victims {
        let pr = p.priority();
        if pr == max_priority {
            let t = StartTime::of(p);
            if t.before(earliest) {
                earliest = t;
            }
        } else if pr > max_priority {
            max_priority = pr;
            earliest = StartTime::of(p);
        }
    }
    Some(earliest)
}

/// Parses an RFC 3339 timestamp (`2024-01-01T00:32:33Z`, optional fraction, `Z` or `±hh:mm`)
/// into nanoseconds since the Unix epoch. `None` when malformed.
pub fn parse_rfc3339_nanos(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let year = num(0, 4)?;
    let month = num(5, 2)?;
    let day = num(8, 2)?;
    let hour = num(11, 2)?;
    let min = num(14, 2)?;
    let sec = num(17, 2)?;
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_nanos: i128 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &s[start..i];
        if digits.is_empty() {
            return None;
        }
        // Nanosecond precision; further digits are truncated as Go does.
        let mut scaled = String::from(&digits[..digits.len().min(9)]);
        while scaled.len() < 9 {
            scaled.push('0');
        }
        frac_nanos = scaled.parse().ok()?;
    }
    let offset_secs: i64 = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let oh = num(i + 1, 2)?;
            let om = num(i + 4, 2)?;
            let o = oh * 3600 + om * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset_secs;
    Some(secs as i128 * 1_000_000_000 + frac_nanos)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Draws upstream's `rand.Int31n(n)` offset from the seeded RNG.
pub fn random_offset(n: usize, rng: &mut ChaCha8Rng) -> usize {
    if n == 0 {
        0
    } else {
        rng.random_range(0..n)
    }
}

// ---- Go's sort.Slice ---------------------------------------------------------------------------

/// Go's `sort.Slice` (pattern-defeating quicksort, `pdqsort_func` of Go's `sort` package),
/// ported so that equal elements end up in the same order as in kube-scheduler: victims of equal
/// priority and start time are reprieved in that order. Up to 12 elements it is an insertion
/// sort, hence stable; beyond that it is not.
pub fn go_sort_slice<T>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = v.len();
    let limit = usize::BITS - n.leading_zeros();
    let mut d = LessSwap { v, less };
    pdqsort(&mut d, 0, n, limit as usize);
}

struct LessSwap<'a, T, F: Fn(&T, &T) -> bool> {
    v: &'a mut [T],
    less: F,
}

impl<T, F: Fn(&T, &T) -> bool> LessSwap<'_, T, F> {
    fn less(&self, i: usize, j: usize) -> bool {
        (self.less)(&self.v[i], &self.v[j])
    }
    fn swap(&mut self, i: usize, j: usize) {
        self.v.swap(i, j);
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum SortedHint {
    Unknown,
    Increasing,
    Decreasing,
}

fn insertion_sort<T, F: Fn(&T, &T) -> bool>(d: &mut LessSwap<'_, T, F>, a: usize, b: usize) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && d.less(j, j - 1) {
            d.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sift_down<T, F: Fn(&T, &T) -> bool>(
    d: &mut LessSwap<'_, T, F>,
    lo: usize,
    hi: usize,
    first: usize,
) {
    let mut root = lo;
    loop {
        let mut child = 2 * root + 1;
        if child >= hi {
            return;
        }
        if child + 1 < hi && d.less(first + child, first + child + 1) {
            child += 1;
        }
        if !d.less(first + root, first + child) {
            return;
        }
        d.swap(first + root, first + child);
        root = child;
    }
}

fn heap_sort<T, F: Fn(&T, &T) -> bool>(d: &mut LessSwap<'_, T, F>, a: usize, b: usize) {
    let first = a;
    let lo = 0;
    let hi = b - a;
    let mut i = (hi as isize - 1) / 2;
    while i >= 0 {
        sift_down(d, i as usize, hi, first);
        i -= 1;
    }
    let mut i = hi as isize - 1;
    while i >= 0 {
        d.swap(first, first + i as usize);
        sift_down(d, lo, i as usize, first);
        i -= 1;
    }
}

fn pdqsort<T, F: Fn(&T, &T) -> bool>(
    d: &mut LessSwap<'_, T, F>,
    mut a: usize,
    mut b: usize,
    mut limit: usize,
) {
    const MAX_INSERTION: usize = 12;
    let mut was_balanced = true;
    let mut was_partitioned = true;
    loop {
        let length = b - a;
        if length <= MAX_INSERTION {
            insertion_sort(d, a, b);
            return;
        }
        if limit == 0 {
            heap_sort(d, a, b);
            return;
        }
        if !was_balanced {
            break_patterns(d, a, b);
            limit -= 1;
        }
        let (mut pivot, mut hint) = choose_pivot(d, a, b);
        if hint == SortedHint::Decreasing {
            reverse_range(d, a, b);
            pivot = (b - 1) - (pivot - a);
            hint = SortedHint::Increasing;
        }
        if was_balanced
            && was_partitioned
            && hint == SortedHint::Increasing
            && partial_insertion_sort(d, a, b)
        {
            return;
        }
        if a > 0 && !d.less(a - 1, pivot) {
            a = partition_equal(d, a, b, pivot);
            continue;
        }
        let (mid, already) = partition(d, a, b, pivot);
        was_partitioned = already;
        let (left, right) = (mid - a, b - mid);
        let balance_threshold = length / 8;
        if left < right {
            was_balanced = left >= balance_threshold;
            pdqsort(d, a, mid, limit);
            a = mid + 1;
        } else {
            was_balanced = right >= balance_threshold;
            pdqsort(d, mid + 1, b, limit);
            b = mid;
        }
    }
}

fn partition<T, F: Fn(&T, &T) -> bool>(
    d: &mut LessSwap<'_, T, F>,
    a: usize,
    b: usize,
    pivot: usize,
) -> (usize, bool) {
    d.swap(a, pivot);
    // i and j are inclusive bounds; j may step below a+1 (to a), so use isize.
    let (mut i, mut j) = (a as isize + 1, b as isize - 1);
    while i <= j && d.less(i as usize, a) {
        i += 1;
    }
    while i <= j && !d.less(j as usize, a) {
        j -= 1;
    }
    if i > j {
        d.swap(j as usize, a);
        return (j as usize, true);
    }
    d.swap(i as usize, j as usize);
    i += 1;
    j -= 1;
    loop {
        while i <= j && d.less(i as usize, a) {
            i += 1;
        }
        while i <= j && !d.less(j as usize, a) {
            j -= 1;
        }
        if i > j {
            break;
        }
        d.swap(i as usize, j as usize);
        i += 1;
        j -= 1;
    }
    d.swap(j as usize, a);
    (j as usize, false)
}

fn partition_equal<T, F: Fn(&T, &T) -> bool>(
    d: &mut LessSwap<'_, T, F>,
    a: usize,
    b: usize,
    pivot: usize,
) -> usize {
    d.swap(a, pivot);
    let (mut i, mut j) = (a as isize + 1, b as isize - 1);
    loop {
        while i <= j && !d.less(a, i as usize) {
            i += 1;
        }
        while i <= j && d.less(a, j as usize) {
            j -= 1;
        }
        if i > j {
            break;
        }
        d.swap(i as usize, j as usize);
        i += 1;
        j -= 1;
    }
    i as usize
}

fn partial_insertion_sort<T, F: Fn(&T, &T) -> bool>(
    d: &mut LessSwap<'_, T, F>,
    a: usize,
    b: usize,
) -> bool {
    const MAX_STEPS: usize = 5;
    const SHORTEST_SHIFTING: usize = 50;
    let mut i = a + 1;
    for _ in 0..MAX_STEPS {
        while i < b && !d.less(i, i - 1) {
            i += 1;
        }
        if i == b {
            return true;
        }
        if b - a < SHORTEST_SHIFTING {
            return false;
        }
        d.swap(i, i - 1);
        // Shift the smaller one to the left (Go's loop runs down to index 1, not to a).
        if i - a >= 2 {
            let mut j = i - 1;
            while j >= 1 {
                if !d.less(j, j - 1) {
                    break;
                }
                d.swap(j, j - 1);
                j -= 1;
            }
        }
        // Shift the greater one to the right.
        if b - i >= 2 {
            let mut j = i + 1;
            while j < b {
                if !d.less(j, j - 1) {
                    break;
                }
                d.swap(j, j - 1);
                j += 1;
            }
        }
    }
    false
}

fn break_patterns<T, F: Fn(&T, &T) -> bool>(d: &mut LessSwap<'_, T, F>, a: usize, b: usize) {
    let length = b - a;
    if length >= 8 {
        let mut random = length as u64;
        let modulus = 1u64 << (u64::BITS - (length as u64).leading_zeros());
        let mut idx = a + (length / 4) * 2 - 1;
        while idx <= a + (length / 4) * 2 + 1 {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let mut other = (random & (modulus - 1)) as usize;
            if other >= length {
                other -= length;
            }
            d.swap(idx, a + other);
            idx += 1;
        }
    }
}

fn choose_pivot<T, F: Fn(&T, &T) -> bool>(
    d: &mut LessSwap<'_, T, F>,
    a: usize,
    b: usize,
) -> (usize, SortedHint) {
    const SHORTEST_NINTHER: usize = 50;
    const MAX_SWAPS: usize = 4 * 3;
    let l = b - a;
    let mut swaps = 0usize;
    let mut i = a + l / 4;
    let mut j = a + l / 4 * 2;
    let mut k = a + l / 4 * 3;
    if l >= 8 {
        if l >= SHORTEST_NINTHER {
            i = median(d, i - 1, i, i + 1, &mut swaps);
            j = median(d, j - 1, j, j + 1, &mut swaps);
            k = median(d, k - 1, k, k + 1, &mut swaps);
        }
        j = median(d, i, j, k, &mut swaps);
    }
    match swaps {
        0 => (j, SortedHint::Increasing),
        MAX_SWAPS => (j, SortedHint::Decreasing),
        _ => (j, SortedHint::Unknown),
    }
}

fn order2<T, F: Fn(&T, &T) -> bool>(
    d: &LessSwap<'_, T, F>,
    a: usize,
    b: usize,
    swaps: &mut usize,
) -> (usize, usize) {
    if d.less(b, a) {
        *swaps += 1;
        return (b, a);
    }
    (a, b)
}

fn median<T, F: Fn(&T, &T) -> bool>(
    d: &LessSwap<'_, T, F>,
    a: usize,
    b: usize,
    c: usize,
    swaps: &mut usize,
) -> usize {
    let (a, b) = order2(d, a, b, swaps);
    let (b, c) = order2(d, b, c, swaps);
    let (_a, b) = order2(d, a, b, swaps);
    let _ = c;
    b
}

fn reverse_range<T, F: Fn(&T, &T) -> bool>(d: &mut LessSwap<'_, T, F>, a: usize, b: usize) {
    let (mut i, mut j) = (a, b - 1);
    while i < j {
        d.swap(i, j);
        i += 1;
        j -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc3339() {
        let cases: &[(&str, Option<i128>)] = &[
            ("1970-01-01T00:00:00Z", Some(0)),
            ("1970-01-01T00:00:01Z", Some(1_000_000_000)),
            ("2024-01-01T00:32:33Z", Some(1_704_069_153_000_000_000)),
            ("2024-01-01T01:32:33+01:00", Some(1_704_069_153_000_000_000)),
            ("2023-12-31T23:32:33-01:00", Some(1_704_069_153_000_000_000)),
            ("2024-01-01T00:32:33.5Z", Some(1_704_069_153_500_000_000)),
            (
                "2024-01-01T00:32:33.123456789123Z",
                Some(1_704_069_153_123_456_789),
            ),
            ("1969-12-31T23:59:59Z", Some(-1_000_000_000)),
            ("2024-02-29T00:00:00Z", Some(1_709_164_800_000_000_000)),
            ("2024-01-01", None),
            ("2024-01-01T00:32:33", None),
            ("2024-13-01T00:32:33Z", None),
            ("2024-01-01T00:32:33.Z", None),
            ("garbage-garbage-garbage", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_rfc3339_nanos(s), *want, "{s}");
        }
    }

    #[test]
    fn start_time_order() {
        let a = StartTime::At(5);
        let b = StartTime::At(6);
        assert!(a.before(b));
        assert!(!b.before(a));
        assert!(b.before(StartTime::NotStarted));
        assert!(!StartTime::NotStarted.before(StartTime::NotStarted));
        assert!(more_important((2, b), (1, a)));
        assert!(more_important((1, a), (1, b)));
        assert!(!more_important((1, a), (1, a)));
    }

    #[test]
    fn aggregates_errors_like_utilerrors() {
        assert_eq!(aggregate_errors(&[]), None);
        assert_eq!(aggregate_errors(&["a".into()]), Some("a".into()));
        assert_eq!(
            aggregate_errors(&["a".into(), "a".into()]),
            Some("a".into())
        );
        assert_eq!(
            aggregate_errors(&["a".into(), "b".into(), "a".into()]),
            Some("[a, b]".into())
        );
    }

    #[test]
    fn nodes_for_status_code_uses_absent_status() {
        let mut m = NodeToStatus::new(4);
        m.set(0, Status::unschedulable("x"));
        m.set(2, Status::unresolvable("y"));
        assert_eq!(nodes_for_status_code(&m, 4, Code::Unschedulable), vec![0]);
        m.absent = Some(Status::unschedulable("pre"));
        assert_eq!(
            nodes_for_status_code(&m, 4, Code::Unschedulable),
            vec![0, 1, 3]
        );
    }

    #[test]
    fn go_sort_small_is_stable_insertion_sort() {
        let mut v: Vec<(i32, usize)> = [3, 1, 2, 1, 3, 2, 1]
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i))
            .collect();
        go_sort_slice(&mut v, |a, b| a.0 < b.0);
        let idx: Vec<usize> = v.iter().map(|p| p.1).collect();
        assert_eq!(idx, vec![1, 3, 6, 2, 5, 0, 4]);
    }

    /// Keys of the test vectors: pattern 0 random with duplicates, 1 descending with
    /// duplicates, 2 ascending with a few out-of-place keys.
    fn gen_keys(n: usize, modulus: u64, pattern: u8) -> Vec<(u64, usize)> {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ n as u64;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = match pattern {
                    0 => x % modulus,
                    1 => (n - i) as u64 / modulus,
                    _ => {
                        if x.is_multiple_of(17) {
                            x % n as u64
                        } else {
                            i as u64 / modulus
                        }
                    }
                };
                (k, i)
            })
            .collect()
    }

    /// The order Go's `sort.Slice` leaves equal keys in, pinned by a checksum over the
    /// resulting permutation. The vectors were produced by Go's `pdqsort_func` (the `sort`
    /// package's code with the xorshift of current Go releases) on the same keys.
    #[test]
    fn go_sort_matches_go_permutations() {
        let vectors: &[(u8, usize, u64, u64)] = &[
            (0, 13, 1, 7747485329106677980),
            (0, 13, 2, 18040114560811316662),
            (0, 13, 7, 15016508814556193118),
            (0, 13, 1000, 7501546983881498874),
            (0, 50, 1, 675778796827664818),
            (0, 50, 2, 10002671023949315902),
            (0, 50, 7, 7169503235696083434),
            (0, 50, 1000, 2258585841240984026),
            (0, 64, 1, 11168009083496242752),
            (0, 64, 2, 3632236397476223910),
            (0, 64, 7, 16324795218510385946),
            (0, 64, 1000, 10008288227133295446),
            (0, 257, 1, 8373525488035867904),
            (0, 257, 2, 12493036861044054546),
            (0, 257, 7, 14484857796608881064),
            (0, 257, 1000, 16825817270794632410),
            (0, 1000, 1, 13593816098738348456),
            (0, 1000, 2, 6462986526089924574),
            (0, 1000, 7, 16139715253742127256),
            (0, 1000, 1000, 13134718231955837540),
            (1, 13, 1, 3088711116598535404),
            (1, 13, 2, 17359448322413799990),
            (1, 13, 7, 2609547746539956656),
            (1, 13, 1000, 7747485329106677980),
            (1, 50, 1, 15193241930186911972),
            (1, 50, 2, 8266228941121786886),
            (1, 50, 7, 18023675907019682582),
            (1, 50, 1000, 675778796827664818),
            (1, 64, 1, 3425424507404188032),
            (1, 64, 2, 15236166644349743680),
            (1, 64, 7, 17234513953041865076),
            (1, 64, 1000, 11168009083496242752),
            (1, 257, 1, 3120337032494055680),
            (1, 257, 2, 17633947363909602204),
            (1, 257, 7, 14690175960043987168),
            (1, 257, 1000, 8373525488035867904),
            (1, 1000, 1, 13413976373993275376),
            (1, 1000, 2, 2063051763858218248),
            (1, 1000, 7, 8728674068446943524),
            (1, 1000, 1000, 11022114202897162320),
            (2, 13, 1, 7140795155711303904),
            (2, 13, 2, 2304550460685023058),
            (2, 13, 7, 14172582177874877024),
            (2, 13, 1000, 14172582177874877024),
            (2, 50, 1, 12862105779656550516),
            (2, 50, 2, 2455731601838947862),
            (2, 50, 7, 12816525438150176330),
            (2, 50, 1000, 10080251874906316404),
            (2, 64, 1, 15082030621254283192),
            (2, 64, 2, 8831006768112269010),
            (2, 64, 7, 5801530864505246344),
            (2, 64, 1000, 5801530864505246344),
            (2, 257, 1, 16311725867202732148),
            (2, 257, 2, 5431035718361482864),
            (2, 257, 7, 1717812545716331536),
            (2, 257, 1000, 14920847119875532294),
            (2, 1000, 1, 5066272415570965006),
            (2, 1000, 2, 13994476417512294512),
            (2, 1000, 7, 7676910725519878226),
            (2, 1000, 1000, 16792382553830089766),
        ];
        for &(pattern, n, modulus, want) in vectors {
            let mut v = gen_keys(n, modulus, pattern);
            go_sort_slice(&mut v, |a, b| a.0 < b.0);
            assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
            let sum = v.iter().enumerate().fold(0u64, |acc, (i, it)| {
                acc.wrapping_mul(1_000_003)
                    .wrapping_add(it.1 as u64)
                    .wrapping_add(i as u64)
            });
            assert_eq!(sum, want, "pattern {pattern} n {n} mod {modulus}");
        }
    }
}
