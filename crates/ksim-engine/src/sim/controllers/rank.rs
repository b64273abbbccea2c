//! Which pods a ReplicaSet deletes first when it scales down: upstream's
//! `controller.ActivePodsWithRanks.Less` (`pkg/controller/controller_utils.go`), as the
//! ReplicaSet controller's `getPodsToDelete` sorts its pods (`pkg/controller/replicaset/
//! replica_set.go`), with the feature gates `PodDeletionCost` and `LogarithmicScaleDown` on
//! (their v1.35 defaults). The first pods in the order are deleted first:
//!
//! 1. unassigned before assigned (`spec.nodeName` empty);
//! 2. phase Pending before Unknown before Running;
//! 3. not ready before ready;
//! 4. lower `controller.kubernetes.io/pod-deletion-cost` before higher (default 0);
//! 5. higher rank before lower: the rank is the number of the controller's active pods on the
//!    pod's node (`getPodsRankedByRelatedPodsOnSameNode`; a Deployment's ReplicaSets count the
//!    pods of all its ReplicaSets), so doubled-up pods go first;
//! 6. both ready: ready for less time before longer, compared in logarithmic buckets of the
//!    time since ready (`logarithmicRankDiff`: ⌊log2(ns)⌋), equal buckets ordered by UID;
//! 7. more container restarts before fewer (ksim pods do not restart: always equal);
//! 8. newer before older by creation time, in the same logarithmic buckets, then by UID.
//!
//! Pods equal on every rule keep the order they were given in (creation order); upstream's
//! unstable sort leaves that order unspecified.

use std::cmp::Ordering;

use crate::time::SimTime;

/// The annotation upstream's `PodDeletionCost` reads (`core.PodDeletionCost`).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// A pod's phase as the ranking orders it (`podPhaseToOrdinal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    Pending = 0,
    /// A pod whose node stopped reporting; ksim's pods are never Unknown (upstream's table
    /// has them, so the order keeps them).
    #[allow(dead_code)]
    Unknown = 1,
    Running = 2,
}

/// What the ranking reads of one pod.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub assigned: bool,
    pub phase: Phase,
    pub ready: bool,
    /// The Ready condition's last transition (`None`: no transition time).
    pub ready_since: Option<SimTime>,
    pub deletion_cost: i32,
    /// Active pods of the controller on the pod's node.
    pub rank: usize,
    pub restarts: i32,
    /// `None`: no creation timestamp.
    pub created: Option<SimTime>,
    pub uid: String,
}

/// The pod-deletion-cost annotation's value as upstream's `GetDeletionCostFromPodAnnotations`
/// reads it: an int32, 0 when absent. A malformed value is refused by the API server's
/// validation; here it counts as 0.
pub(crate) fn deletion_cost(annotations: &ksim_api::SortedMap<String, String>) -> i32 {
    annotations
        .get(POD_DELETION_COST)
        .and_then(|v| v.trim().parse::<i32>().ok())
        .unwrap_or(0)
}

/// ⌊log2(d)⌋ of a duration in nanoseconds as Go's `int64(math.Log2(float64(d)))` gives it for
/// the exponent of the float (−1 for d ≤ 0).
fn log_bucket(now: SimTime, t: SimTime) -> i64 {
    let ns = (now.0 - t.0).saturating_mul(1000);
    if ns <= 0 {
        return -1;
    }
    // float64(d): rounded to 53 bits, then its exponent.
    let f = ns as f64;
    ((f.to_bits() >> 52) & 0x7ff) as i64 - 1023
}

/// `afterOrZero`: a zero time sorts first, then the later time first.
fn after_or_zero(a: Option<SimTime>, b: Option<SimTime>) -> bool {
    match (a, b) {
        (None, _) | (_, None) => a.is_none(),
        (Some(a), Some(b)) => a > b,
    }
}

/// Compares two times as upstream's rules 6 and 8 do, given they differ: `Some(true)` when
/// `a` sorts first.
fn time_less(
    a: Option<SimTime>,
    b: Option<SimTime>,
    a_uid: &str,
    b_uid: &str,
    now: SimTime,
) -> bool {
    match (a, b) {
        (Some(ta), Some(tb)) => {
            let diff = log_bucket(now, ta) - log_bucket(now, tb);
            if diff == 0 {
                a_uid < b_uid
            } else {
                diff < 0
            }
        }
        _ => after_or_zero(a, b),
    }
}

/// `ActivePodsWithRanks.Less`: whether `a` is deleted before `b`.
pub(crate) fn less(a: &Candidate, b: &Candidate, now: SimTime) -> bool {
    if a.assigned != b.assigned {
        return !a.assigned;
    }
    if a.phase != b.phase {
        return a.phase < b.phase;
    }
    if a.ready != b.ready {
        return !a.ready;
    }
    if a.deletion_cost != b.deletion_cost {
        return a.deletion_cost < b.deletion_cost;
    }
    if a.rank != b.rank {
        return a.rank > b.rank;
    }
    if a.ready && b.ready && a.ready_since != b.ready_since {
        return time_less(a.ready_since, b.ready_since, &a.uid, &b.uid, now);
    }
    if a.restarts != b.restarts {
        return a.restarts > b.restarts;
    }
    if a.created != b.created {
        return time_less(a.created, b.created, &a.uid, &b.uid, now);
    }
    false
}

/// The order of `less` as an [`Ordering`] (stable sorts keep equal pods in their given order).
pub(crate) fn compare(a: &Candidate, b: &Candidate, now: SimTime) -> Ordering {
    if less(a, b, now) {
        Ordering::Less
    } else if less(b, a, now) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    //! Upstream's `TestSortingActivePodsWithRanks` (controller_utils_test.go), ported as facts:
    //! the same pods, ranks and expected order (restart counts included: the ranking reads
    //! them although ksim's pods never restart).
    use super::*;

    const HOUR: i64 = 3_600_000_000;

    fn now() -> SimTime {
        SimTime(1_000 * HOUR)
    }

    fn ago(us: i64) -> Option<SimTime> {
        Some(SimTime(now().0 - us))
    }

    #[allow(clippy::too_many_arguments)]
    fn pod(
        name: &str,
        assigned: bool,
        phase: Phase,
        ready: bool,
        restarts: i32,
        ready_since: Option<SimTime>,
        created: Option<SimTime>,
        cost: i32,
    ) -> (String, Candidate) {
        (
            name.to_string(),
            Candidate {
                assigned,
                phase,
                ready,
                ready_since: ready_since.filter(|_| ready),
                deletion_cost: cost,
                rank: 0,
                restarts: if ready { restarts } else { 0 },
                created,
                uid: String::new(),
            },
        )
    }

    #[test]
    fn active_pods_with_ranks_orders_as_upstream() {
        use Phase::*;
        let month = 30 * 24 * HOUR;
        let n = Some(now());
        let then1m = ago(month);
        let unscheduled = pod("unscheduled", false, Pending, false, 0, None, None, 0);
        let pending = pod("pending", true, Pending, false, 0, None, None, 0);
        let unknown = pod("unknown-phase", true, Unknown, false, 0, None, None, 0);
        let not_ready = pod("not-ready", true, Running, false, 0, None, None, 0);
        let ready_no_ltt = pod("ready-no-ltt", true, Running, true, 0, None, None, 0);
        let ready_now = pod("ready-now", true, Running, true, 0, n, n, 0);
        let ready_then = pod("ready-then", true, Running, true, 0, then1m, then1m, 0);
        let high_restarts = pod("ready-high-restarts", true, Running, true, 9001, n, n, 0);
        let now_created_then = pod(
            "ready-now-created-then",
            true,
            Running,
            true,
            0,
            n,
            then1m,
            0,
        );
        let low_cost = pod("low-deletion-cost", true, Running, true, 0, n, then1m, 10);
        let high_cost = pod("high-deletion-cost", true, Running, true, 0, n, then1m, 100);
        let unsched5 = pod(
            "unscheduled-5-hours",
            false,
            Pending,
            false,
            0,
            ago(5 * HOUR),
            ago(5 * HOUR),
            0,
        );
        let unsched8 = pod(
            "unscheduled-8-hours",
            false,
            Pending,
            false,
            0,
            ago(8 * HOUR),
            ago(8 * HOUR),
            0,
        );
        let ready2h = pod(
            "ready-2-hours",
            false,
            Running,
            true,
            0,
            ago(2 * HOUR),
            then1m,
            0,
        );
        let ready5h = pod(
            "ready-5-hours",
            false,
            Running,
            true,
            0,
            ago(5 * HOUR),
            then1m,
            0,
        );
        let ready8h = pod(
            "ready-8-hours",
            false,
            Running,
            true,
            0,
            ago(8 * HOUR),
            then1m,
            0,
        );

        let with = |p: &(String, Candidate), rank: usize| {
            let mut c = p.1.clone();
            c.rank = rank;
            (p.0.clone(), c)
        };
        // Equalities (rank 1 each): neither sorts before the other.
        for (a, b) in [
            (&unscheduled, &unscheduled),
            (&pending, &pending),
            (&unknown, &unknown),
            (&not_ready, &not_ready),
            (&now_created_then, &now_created_then),
            (&ready_now, &ready_now),
            (&ready_then, &ready_then),
            (&high_restarts, &high_restarts),
            (&unsched5, &unsched8),
            (&ready5h, &ready8h),
        ] {
            let (a, b) = (with(a, 1), with(b, 1));
            assert!(
                !less(&a.1, &b.1, now()) && !less(&b.1, &a.1, now()),
                "{} = {}",
                a.0,
                b.0
            );
        }
        // Inequalities: (lesser, rank), (greater, rank).
        for ((l, lr), (g, gr)) in [
            ((&unscheduled, 1), (&pending, 2)),
            ((&unscheduled, 2), (&pending, 1)),
            ((&pending, 1), (&unknown, 2)),
            ((&unknown, 1), (&not_ready, 2)),
            ((&not_ready, 1), (&ready_no_ltt, 1)),
            ((&ready_no_ltt, 1), (&ready_now, 1)),
            ((&ready_now, 2), (&ready_no_ltt, 1)),
            ((&ready_now, 1), (&ready_then, 1)),
            ((&ready_now, 2), (&ready_then, 1)),
            ((&high_restarts, 1), (&ready_now, 1)),
            ((&ready_now, 2), (&high_restarts, 1)),
            ((&ready_now, 1), (&now_created_then, 1)),
            ((&now_created_then, 2), (&ready_now, 1)),
            ((&low_cost, 2), (&high_cost, 1)),
            ((&ready2h, 1), (&ready5h, 1)),
        ] {
            let (l, g) = (with(l, lr), with(g, gr));
            assert!(less(&l.1, &g.1, now()), "{} ({lr}) < {} ({gr})", l.0, g.0);
            assert!(
                !less(&g.1, &l.1, now()),
                "not {} ({gr}) < {} ({lr})",
                g.0,
                l.0
            );
        }
    }

    #[test]
    fn log_buckets_are_floor_log2_of_nanoseconds() {
        let t = SimTime(0);
        assert_eq!(log_bucket(t, t), -1);
        // 1 µs = 1000 ns: ⌊log2 1000⌋ = 9.
        assert_eq!(log_bucket(SimTime(1), t), 9);
        // 2 h and 5 h: 2^42.7 and 2^44.0 ns, 8 h: 2^44.7 ns.
        assert_eq!(log_bucket(SimTime(2 * HOUR), t), 42);
        assert_eq!(log_bucket(SimTime(5 * HOUR), t), 44);
        assert_eq!(log_bucket(SimTime(8 * HOUR), t), 44);
    }

    #[test]
    fn deletion_cost_reads_the_annotation() {
        let mut a = ksim_api::SortedMap::new();
        assert_eq!(deletion_cost(&a), 0);
        a.insert(POD_DELETION_COST.to_string(), "-5".to_string());
        assert_eq!(deletion_cost(&a), -5);
    }
}
