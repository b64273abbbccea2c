//! The StatefulSet and DaemonSet controllers' deletions go through their clients' rate limits
//! as their creations do (client-go's token bucket, kube-controller-manager `--kube-api-qps`
//! 20 and `--kube-api-burst` 30, one client per controller): 40 deletions in one sync make 30
//! at once, then one every 50 ms.

mod common;

use common::*;
use ksim_engine::SimTime;
use serde_json::json;

/// The times of the pods ended at or after `from` seconds, in order.
fn ends_after(r: &[ksim_engine::Record], from: f64) -> Vec<f64> {
    let mut t: Vec<f64> = ended(r)
        .into_iter()
        .map(|(t, _)| t.as_secs_f64())
        .filter(|t| *t >= from)
        .collect();
    t.sort_by(f64::total_cmp);
    t
}

/// 30 at the sync (60.01 s), then one every 50 ms: the 40th at 60.51 s.
fn assert_rate_limited(ends: &[f64]) {
    assert_eq!(ends.len(), 40, "{ends:?}");
    let at_once = ends.iter().filter(|t| (**t - 60.01).abs() < 1e-6).count();
    assert_eq!(at_once, 30, "the burst: {ends:?}");
    for (i, t) in ends[30..].iter().enumerate() {
        let want = 60.01 + 0.05 * (i + 1) as f64;
        assert!(
            (t - want).abs() < 1e-6,
            "deletion {} at {t}, want {want}",
            31 + i
        );
    }
}

#[test]
fn a_statefulset_scaled_from_40_to_0_deletes_30_at_once_then_20_per_second() {
    let sts = |replicas: i32| {
        workload(
            "StatefulSet",
            "db",
            json!({"replicas": replicas, "serviceName": "db",
                "podManagementPolicy": "Parallel",
                "podSpec": {"terminationGracePeriodSeconds": 0}}),
        )
    };
    let r = run(
        cfg(120),
        nodes(2),
        vec![at(0.0, create(sts(40))), at(60.0, update(sts(0)))],
    );
    let before: Vec<_> = r
        .iter()
        .filter(|x| x.at() < SimTime::from_secs(60))
        .cloned()
        .collect();
    assert_eq!(running(&before).len(), 40);
    assert_rate_limited(&ends_after(&r, 60.0));
    assert!(alive(&r).is_empty());
}

#[test]
fn a_daemonset_rolling_40_pods_at_once_deletes_30_at_once_then_20_per_second() {
    let ds = |image: &str| {
        workload(
            "DaemonSet",
            "agent",
            json!({"image": image,
                "updateStrategy": {"rollingUpdate": {"maxUnavailable": "100%"}},
                "podSpec": {"terminationGracePeriodSeconds": 0}}),
        )
    };
    let r = run(
        cfg(120),
        nodes(40),
        vec![at(0.0, create(ds("img:1"))), at(60.0, update(ds("img:2")))],
    );
    assert_rate_limited(&ends_after(&r, 60.0));
    // syncNodes makes its creations before its deletions: the replacements come in the syncs
    // after the last deletion.
    let made: Vec<SimTime> = created(&r)
        .into_iter()
        .map(|(t, _)| t)
        .filter(|t| *t >= SimTime::from_secs(60))
        .collect();
    assert_eq!(made.len(), 40);
    assert!(made.iter().all(|t| t.as_secs_f64() > 60.51), "{made:?}");
    assert_eq!(running(&r).len(), 40);
}
