//! The node lifecycle controller's zone bookkeeping, as pure functions and small types:
//! upstream `ComputeZoneState`, `ReducedQPSFunc` / `HealthyQPSFunc` (through
//! `setLimiterInZone`), the per-zone `RateLimitedTimedQueue` of nodes waiting for their
//! NoExecute taint, and the token bucket behind it (`flowcontrol.NewTokenBucketRateLimiter`
//! with `EvictionRateLimiterBurst` 1, and `NewFakeNeverRateLimiter` for a rate of 0).
//!
//! Upstream computes in `float32`; so does this module, so that thresholds on the boundary
//! (11 of 20 nodes against 0.55) decide as upstream's.

use std::collections::{BTreeSet, VecDeque};

use ksim_api::Node;

use crate::time::{SimDuration, SimTime};

/// A zone's state (upstream `ZoneState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneState {
    Initial,
    Normal,
    PartialDisruption,
    FullDisruption,
}

impl ZoneState {
    pub fn as_str(self) -> &'static str {
        match self {
            ZoneState::Initial => "Initial",
            ZoneState::Normal => "Normal",
            ZoneState::PartialDisruption => "PartialDisruption",
            ZoneState::FullDisruption => "FullDisruption",
        }
    }
}

/// Upstream `ComputeZoneState`: from the Ready statuses of a zone's nodes (`true` = Ready
/// True; a missing condition counts as not ready), the number of not-ready nodes and the
/// state: FullDisruption when none is ready (and some is not), PartialDisruption when more
/// than 2 are not ready and their share is at least `unhealthy_threshold`, else Normal.
pub fn compute_zone_state(ready: &[bool], unhealthy_threshold: f32) -> (usize, ZoneState) {
    let ready_nodes = ready.iter().filter(|r| **r).count();
    let not_ready = ready.len() - ready_nodes;
    let state = if ready_nodes == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2
        && (not_ready as f32) / ((not_ready + ready_nodes) as f32) >= unhealthy_threshold
    {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    };
    (not_ready, state)
}

/// The tainting rate of a zone entering `state` (upstream `setLimiterInZone`): Normal →
/// `--node-eviction-rate`; PartialDisruption → `ReducedQPSFunc`: the secondary rate when the
/// zone has more than `--large-cluster-size-threshold` nodes, else 0 (tainting stops);
/// FullDisruption → `HealthyQPSFunc`: the normal rate (the case where every zone is fully
/// disrupted is handled by the caller, which stops everything). `None` for Initial (no change).
pub fn zone_qps(
    state: ZoneState,
    zone_size: usize,
    eviction_qps: f32,
    secondary_qps: f32,
    large_cluster_threshold: i32,
) -> Option<f32> {
    match state {
        ZoneState::Initial => None,
        ZoneState::Normal | ZoneState::FullDisruption => Some(eviction_qps),
        ZoneState::PartialDisruption => {
            Some(if zone_size as i64 > large_cluster_threshold as i64 {
                secondary_qps
            } else {
                0.0
            })
        }
    }
}

/// A token bucket of burst 1 (`golang.org/x/time/rate` as `flowcontrol` builds it): one token
/// refills every `1/qps` seconds; a rate of 0 never accepts (`NewFakeNeverRateLimiter`).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    qps: f32,
    /// When the bucket next holds a token; `None` while it is full.
    refill_at: Option<SimTime>,
}

impl TokenBucket {
    pub fn new(qps: f32) -> TokenBucket {
        TokenBucket {
            qps,
            refill_at: None,
        }
    }

    fn period(&self) -> SimDuration {
        SimDuration((1e6 / f64::from(self.qps)).round() as i64)
    }

    /// `TryAccept`: takes the token if there is one at `now`.
    pub fn try_accept(&mut self, now: SimTime) -> bool {
        if self.qps <= 0.0 {
            return false;
        }
        if self.refill_at.is_some_and(|t| now < t) {
            return false;
        }
        self.refill_at = Some(now + self.period());
        true
    }

    /// When a token is next available (`None`: never).
    pub fn next_token(&self, now: SimTime) -> Option<SimTime> {
        if self.qps <= 0.0 {
            return None;
        }
        Some(self.refill_at.map_or(now, |t| t.max(now)))
    }

    /// Upstream `RateLimitedTimedQueue.SwapLimiter`: nothing when the rate is the same; else a
    /// new bucket (full), drained of its token when the old one had none left at `now`.
    pub fn swap(&mut self, new_qps: f32, now: SimTime) {
        if self.qps == new_qps {
            return;
        }
        let old_had_token = self.try_accept(now);
        let mut fresh = TokenBucket::new(new_qps);
        if new_qps > 0.0 && !old_had_token {
            fresh.try_accept(now);
        }
        *self = fresh;
    }
}

/// A zone's queue of nodes waiting for their NoExecute taint (upstream
/// `RateLimitedTimedQueue` over a `UniqueQueue`): a node is added once; processing takes it
/// off the queue but keeps it in the set, so it is not queued again until `remove`
/// (`markNodeAsReachable`, or `markNodeForTainting` when its taint is missing).
#[derive(Debug, Clone)]
pub struct TaintQueue {
    pub limiter: TokenBucket,
    queue: VecDeque<String>,
    set: BTreeSet<String>,
}

impl TaintQueue {
    pub fn new(qps: f32) -> TaintQueue {
        TaintQueue {
            limiter: TokenBucket::new(qps),
            queue: VecDeque::new(),
            set: BTreeSet::new(),
        }
    }

    /// `Add`: false when the node is already in the set.
    pub fn add(&mut self, node: &str) -> bool {
        if !self.set.insert(node.to_string()) {
            return false;
        }
        self.queue.push_back(node.to_string());
        true
    }

    /// `Remove`: out of the queue and the set; whether it was in the set.
    pub fn remove(&mut self, node: &str) -> bool {
        self.queue.retain(|n| n != node);
        self.set.remove(node)
    }

    #[cfg(test)]
    pub fn contains(&self, node: &str) -> bool {
        self.set.contains(node)
    }

    pub fn is_waiting(&self) -> bool {
        !self.queue.is_empty()
    }

    /// `Try`: while the queue has a head and the limiter a token, the head is taken off the
    /// queue (kept in the set) and returned, in order.
    pub fn take_ready(&mut self, now: SimTime) -> Vec<String> {
        let mut out = Vec::new();
        while !self.queue.is_empty() {
            if !self.limiter.try_accept(now) {
                break;
            }
            if let Some(n) = self.queue.pop_front() {
                out.push(n);
            }
        }
        out
    }
}

/// Upstream `nodetopology.GetZoneKey`: `region:\0:zone` from the topology labels (the beta
/// failure-domain labels when those are absent), "" when the node has neither.
pub fn zone_key(node: &Node) -> String {
    let l = &node.metadata.labels;
    let zone = l
        .get("topology.kubernetes.io/zone")
        .or_else(|| l.get("failure-domain.beta.kubernetes.io/zone"))
        .cloned()
        .unwrap_or_default();
    let region = l
        .get("topology.kubernetes.io/region")
        .or_else(|| l.get("failure-domain.beta.kubernetes.io/region"))
        .cloned()
        .unwrap_or_default();
    if zone.is_empty() && region.is_empty() {
        return String::new();
    }
    format!("{region}:\0:{zone}")
}

/// A zone key as outputs show it: `region:zone` without upstream's NUL separator, or the zone
/// alone when the node has no region label.
pub fn zone_display(key: &str) -> String {
    match key.split_once(":\0:") {
        Some(("", zone)) => zone.to_string(),
        Some((region, zone)) => format!("{region}:{zone}"),
        None => key.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ComputeZoneState`'s cases, as facts: (Ready flags, threshold 0.55) → (not ready, state).
    #[test]
    fn compute_zone_state_table() {
        let t = 0.55f32;
        let cases: &[(&[bool], (usize, ZoneState))] = &[
            (&[], (0, ZoneState::Normal)),
            (&[true, true, true], (0, ZoneState::Normal)),
            // No ready node at all: full disruption, whatever the count.
            (&[false], (1, ZoneState::FullDisruption)),
            (&[false, false], (2, ZoneState::FullDisruption)),
            // Two not ready of three: 67% but not more than 2 → Normal.
            (&[false, false, true], (2, ZoneState::Normal)),
            // Three of four not ready: 75% ≥ 55% and > 2 → partial.
            (
                &[false, false, false, true],
                (3, ZoneState::PartialDisruption),
            ),
            // Three of six: 50% < 55% → Normal.
            (
                &[false, false, false, true, true, true],
                (3, ZoneState::Normal),
            ),
        ];
        for (ready, want) in cases {
            assert_eq!(compute_zone_state(ready, t), *want, "{ready:?}");
        }
        // The boundary decides as upstream's float32: 11 of 20 is exactly 0.55.
        let mut z = vec![false; 11];
        z.extend(vec![true; 9]);
        assert_eq!(
            compute_zone_state(&z, t),
            (11, ZoneState::PartialDisruption)
        );
        let mut z = vec![false; 10];
        z.extend(vec![true; 10]);
        assert_eq!(compute_zone_state(&z, t), (10, ZoneState::Normal));
    }

    /// `setLimiterInZone` with upstream's defaults (0.1, 0.01, threshold 50).
    #[test]
    fn zone_rates_follow_state_and_size() {
        let q = |s, n| zone_qps(s, n, 0.1, 0.01, 50);
        assert_eq!(q(ZoneState::Normal, 3), Some(0.1));
        assert_eq!(q(ZoneState::FullDisruption, 3), Some(0.1));
        // ReducedQPSFunc: a small zone stops, a large one slows down.
        assert_eq!(q(ZoneState::PartialDisruption, 50), Some(0.0));
        assert_eq!(q(ZoneState::PartialDisruption, 51), Some(0.01));
        assert_eq!(q(ZoneState::Initial, 51), None);
    }

    #[test]
    fn token_bucket_refills_once_per_period_and_swaps_as_upstream() {
        let s = SimTime::from_secs;
        let mut b = TokenBucket::new(0.1);
        assert!(b.try_accept(s(100)));
        assert!(!b.try_accept(s(105)));
        assert_eq!(b.next_token(s(105)), Some(s(110)));
        assert!(b.try_accept(s(110)));
        // Swap to the same rate: nothing changes.
        b.swap(0.1, s(111));
        assert!(!b.try_accept(s(111)));
        // Swap while empty: the new bucket is drained, so the next token is a new period away
        // (0.01 as upstream's float32 is 0.00999999977: a period of 100.000002 s).
        b.swap(0.01, s(112));
        assert_eq!(b.next_token(s(112)), Some(SimTime(212_000_002)));
        // Rate 0 never accepts.
        b.swap(0.0, s(120));
        assert!(!b.try_accept(s(10_000)) && b.next_token(s(120)).is_none());
        // From 0 back to a rate: the never-limiter had no token, so the new one starts drained.
        b.swap(0.1, s(130));
        assert_eq!(b.next_token(s(130)), Some(s(140)));
    }

    #[test]
    fn taint_queue_keeps_processed_nodes_in_its_set() {
        let mut q = TaintQueue::new(0.1);
        assert!(q.add("a") && q.add("b") && !q.add("a"));
        assert_eq!(q.take_ready(SimTime::from_secs(0)), vec!["a".to_string()]);
        // "a" was processed but stays in the set: not queued again.
        assert!(!q.add("a") && q.contains("a"));
        assert_eq!(q.take_ready(SimTime::from_secs(10)), vec!["b".to_string()]);
        assert!(q.remove("a") && q.add("a"));
    }

    #[test]
    fn zone_keys_as_upstream() {
        let mut n = Node::default();
        assert_eq!(zone_key(&n), "");
        n.metadata
            .labels
            .insert("topology.kubernetes.io/zone".into(), "a".into());
        assert_eq!(zone_key(&n), ":\0:a");
        assert_eq!(zone_display(&zone_key(&n)), "a");
        n.metadata.labels.insert(
            "failure-domain.beta.kubernetes.io/region".into(),
            "r".into(),
        );
        assert_eq!(zone_key(&n), "r:\0:a");
        assert_eq!(zone_display(&zone_key(&n)), "r:a");
    }
}
