//! Upstream's `disruption_test.go` cases, ported as facts: the PDB, its pods and their
//! controllers' scale in, the status out.

use std::collections::BTreeMap;

use ksim_api::PodDisruptionBudget;
use serde_json::{json, Value};

use super::status::{scaled_value, sync, PdbPod, Synced};

fn pdb(spec: Value) -> PodDisruptionBudget {
    serde_json::from_value(
        json!({"metadata": {"name": "pdb", "namespace": "default"}, "spec": spec}),
    )
    .expect("a PDB")
}

fn pod(name: &str, controller: Option<(&str, &str)>, ready: bool) -> PdbPod {
    PdbPod {
        name: name.into(),
        controller: controller.map(|(k, n)| (k.into(), n.into())),
        ready,
        deleting: false,
    }
}

/// (allowed, currentHealthy, desiredHealthy, expectedPods) of a sync.
fn counts(s: &Synced) -> (i32, i32, i32, i32) {
    (
        s.disruptions_allowed,
        s.current_healthy,
        s.desired_healthy,
        s.expected_pods,
    )
}

fn scales(
    table: &'static [(&'static str, &'static str, i32)],
) -> impl Fn(&str, &str) -> Result<Option<i32>, String> {
    move |kind: &str, name: &str| {
        if kind == "Job" {
            return Err("jobs.batch does not implement the scale subresource".into());
        }
        Ok(table
            .iter()
            .find(|(k, n, _)| *k == kind && *n == name)
            .map(|t| t.2))
    }
}

fn run(
    spec: Value,
    pods: &[PdbPod],
    table: &'static [(&'static str, &'static str, i32)],
) -> Synced {
    sync(&pdb(spec), pods, &BTreeMap::new(), &scales(table))
}

#[test]
fn rounding_is_get_scaled_value_from_int_or_percent_rounding_up() {
    assert_eq!(scaled_value(&json!(3), 10), Ok(3));
    assert_eq!(scaled_value(&json!("30%"), 7), Ok(3), "ceil(2.1)");
    assert_eq!(scaled_value(&json!("34%"), 3), Ok(2), "ceil(1.02)");
    assert_eq!(scaled_value(&json!("28%"), 0), Ok(0));
    assert_eq!(scaled_value(&json!("100%"), 5), Ok(5));
    assert_eq!(
        scaled_value(&json!("5"), 9),
        Ok(5),
        "a string without % is its number"
    );
    assert!(scaled_value(&json!("x%"), 9).is_err());
}

/// TestNoSelector: a PDB without a selector selects no pod.
#[test]
fn no_selector_selects_nothing() {
    let s = run(json!({"minAvailable": 3}), &[], &[]);
    assert_eq!(counts(&s), (0, 0, 3, 0));
}

/// TestUnavailable: minAvailable 3 over 4 ready pods allows 1; one pod not ready allows 0.
#[test]
fn unavailable_pod_takes_the_allowance() {
    let mut pods: Vec<PdbPod> = (0..4).map(|i| pod(&format!("p{i}"), None, true)).collect();
    assert_eq!(
        counts(&run(json!({"minAvailable": 3}), &pods, &[])),
        (1, 4, 3, 4)
    );
    pods[0].ready = false;
    assert_eq!(
        counts(&run(json!({"minAvailable": 3}), &pods, &[])),
        (0, 3, 3, 4)
    );
}

/// TestIntegerMaxUnavailable: maxUnavailable 1 over unmanaged pods: expectedCount 0, so 0.
#[test]
fn integer_max_unavailable_over_unmanaged_pods_allows_none() {
    let pods = [pod("a", None, true), pod("b", None, true)];
    let s = run(json!({"maxUnavailable": 1}), &pods, &[]);
    assert_eq!(s.disruptions_allowed, 0);
    assert_eq!(s.expected_pods, 0);
    assert_eq!(s.unmanaged, vec!["a".to_string(), "b".to_string()]);
}

/// TestIntegerMaxUnavailableWithScaling: maxUnavailable 2 over a ReplicaSet of 7 with one
/// ready pod: desired 5, healthy 1, none allowed; at scale 5, desired 3, still none.
#[test]
fn integer_max_unavailable_follows_the_scale() {
    let pods = [pod("p", Some(("ReplicaSet", "rs")), true)];
    let s = run(
        json!({"maxUnavailable": 2}),
        &pods,
        &[("ReplicaSet", "rs", 7)],
    );
    assert_eq!(counts(&s), (0, 1, 5, 7));
    let s = run(
        json!({"maxUnavailable": 2}),
        &pods,
        &[("ReplicaSet", "rs", 5)],
    );
    assert_eq!(counts(&s), (0, 1, 3, 5));
}

/// TestPercentageMaxUnavailableWithScaling: maxUnavailable 30% of 7 is 3 (rounded up).
#[test]
fn percentage_max_unavailable_rounds_up() {
    let pods = [pod("p", Some(("ReplicaSet", "rs")), true)];
    let s = run(
        json!({"maxUnavailable": "30%"}),
        &pods,
        &[("ReplicaSet", "rs", 7)],
    );
    assert_eq!(counts(&s), (0, 1, 4, 7));
    let s = run(
        json!({"maxUnavailable": "30%"}),
        &pods,
        &[("ReplicaSet", "rs", 3)],
    );
    assert_eq!(counts(&s), (0, 1, 2, 3));
}

/// TestNakedPod / TestStatusForUnmanagedPod: minAvailable 28% over a pod without controller.
#[test]
fn percentage_min_available_over_a_naked_pod_allows_none() {
    let s = run(
        json!({"minAvailable": "28%"}),
        &[pod("naked", None, true)],
        &[],
    );
    assert_eq!(counts(&s), (0, 1, 0, 0));
    assert_eq!(s.unmanaged, vec!["naked".to_string()]);
    assert_eq!(s.failed, None);
}

/// TestReplicaSet: minAvailable 20% of a ReplicaSet of 10 with one ready pod.
#[test]
fn replica_set_percentage() {
    let pods = [pod("p", Some(("ReplicaSet", "rs")), true)];
    let s = run(
        json!({"minAvailable": "20%"}),
        &pods,
        &[("ReplicaSet", "rs", 10)],
    );
    assert_eq!(counts(&s), (0, 1, 2, 10));
}

/// TestStatefulSetController / TestReplicationController: minAvailable 34% of 3 is 2; with
/// all three ready 1 is allowed, with two 0.
#[test]
fn stateful_set_34_percent_of_three() {
    let mut pods: Vec<PdbPod> = (0..3)
        .map(|i| pod(&format!("ss-{i}"), Some(("StatefulSet", "ss")), true))
        .collect();
    const T: &[(&str, &str, i32)] = &[("StatefulSet", "ss", 3)];
    assert_eq!(
        counts(&run(json!({"minAvailable": "34%"}), &pods, T)),
        (1, 3, 2, 3)
    );
    pods.pop();
    assert_eq!(
        counts(&run(json!({"minAvailable": "34%"}), &pods, T)),
        (0, 2, 2, 3)
    );
}

/// After TestTwoControllers: two controllers of 11 each add up to 22 expected; minAvailable
/// 28% of 22 is 7 (ceil 6.16).
#[test]
fn two_controllers_add_their_scales() {
    let mut pods: Vec<PdbPod> = (0..11)
        .map(|i| pod(&format!("a{i:02}"), Some(("ReplicaSet", "a")), true))
        .collect();
    pods.extend((0..11).map(|i| pod(&format!("b{i:02}"), Some(("StatefulSet", "b")), true)));
    const T: &[(&str, &str, i32)] = &[("ReplicaSet", "a", 11), ("StatefulSet", "b", 11)];
    assert_eq!(
        counts(&run(json!({"minAvailable": "28%"}), &pods, T)),
        (15, 22, 7, 22)
    );
}

/// A pod whose controller is not found, or has no scale subresource: the sync fails and
/// `failSafe` sets 0 allowed (`found no controllers for pod`).
#[test]
fn controller_not_found_fails_safe() {
    let pods = [pod("p", Some(("ReplicaSet", "gone")), true)];
    let s = run(json!({"maxUnavailable": 1}), &pods, &[]);
    assert_eq!(s.disruptions_allowed, 0);
    assert_eq!(
        s.failed.as_deref(),
        Some("found no controllers for pod \"p\"")
    );
    let s = run(
        json!({"maxUnavailable": 1}),
        &[pod("j", Some(("Job", "j")), true)],
        &[],
    );
    assert_eq!(
        s.failed.as_deref(),
        Some("jobs.batch does not implement the scale subresource")
    );
}

/// Integer minAvailable needs no scale: a Job's pods count as they are.
#[test]
fn integer_min_available_reads_no_scale() {
    let pods = [
        pod("a", Some(("Job", "j")), true),
        pod("b", Some(("Job", "j")), true),
    ];
    assert_eq!(
        counts(&run(json!({"minAvailable": 1}), &pods, &[])),
        (1, 2, 1, 2)
    );
}

/// TestUpdateDisruptedPods: a disrupted pod is not healthy; entries of pods being deleted or
/// gone are dropped.
#[test]
fn disrupted_pods_are_not_healthy() {
    let mut pods: Vec<PdbPod> = (1..=3).map(|i| pod(&format!("p{i}"), None, true)).collect();
    pods[2].deleting = true;
    let disrupted: BTreeMap<String, String> = [("p1", "t"), ("p3", "t"), ("gone", "t")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let s = sync(
        &pdb(json!({"minAvailable": 1})),
        &pods,
        &disrupted,
        &scales(&[]),
    );
    assert_eq!(s.current_healthy, 1, "p1 disrupted, p3 deleting");
    assert_eq!(s.disrupted_pods.keys().collect::<Vec<_>>(), vec!["p1"]);
    assert_eq!(s.disruptions_allowed, 0);
}

/// maxUnavailable larger than the scale: desiredHealthy floors at 0.
#[test]
fn desired_healthy_floors_at_zero() {
    let pods = [pod("p", Some(("ReplicaSet", "rs")), true)];
    let s = run(
        json!({"maxUnavailable": 5}),
        &pods,
        &[("ReplicaSet", "rs", 1)],
    );
    assert_eq!(counts(&s), (1, 1, 0, 1));
}
