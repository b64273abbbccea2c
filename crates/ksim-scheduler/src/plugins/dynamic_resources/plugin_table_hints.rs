//! Upstream's queueing-hint, `computeScore` and `NormalizeScore` tables
//! (`dynamicresources_test.go`: `TestIsSchedulableAfterClaimChange`,
//! `TestIsSchedulableAfterPodChange`, `Test_computesScore`, `TestNormalizeScore`) ported as
//! facts. The plugin and the objects come from `plugin_table.rs`.
//!
//! Not ported: `backoff-wrong-new-object` and `backoff-wrong-old-object` (both tables: an
//! object of the wrong Go type; ksim's events are typed), `more-claims-than-allocations`
//! (`computeScore`'s error for fewer allocations than claims: ksim's Score reads Filter's
//! allocation per claim and has no such state), `TestAllocatorSelection` (upstream picks one of
//! three allocator implementations by gates; ksim has one).

use std::sync::Arc;

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::resource::{AllocationResult, ResourceClaim};
use ksim_api::Pod;
use serde_json::json;

use super::allocator::Features;
use super::plugin_table::{
    allocated_claim, other_allocated_claim, pending_claim, plugin, pod_with_claim_name,
    pod_with_claim_template, pod_with_claim_template_in_status, pod_with_two_claim_templates,
    CLAIM,
};
use super::{score_allocation, DynamicResources};
use crate::framework::{
    ClusterEventKind, ClusterEventObjects, EnqueueExtensions, ObjectAction, QueueingHint,
};
use crate::node_info::ClusterObjects;
use crate::pod_info::PodInfo;

/// The plugin as `setup` builds it for the hint tables, with `claims` stored (uids `UID-<n>`).
fn with_claims(claims: &[ResourceClaim]) -> DynamicResources {
    let p = plugin(Features::default());
    let mut o = ClusterObjects::default();
    for (i, c) in claims.iter().enumerate() {
        let mut c = c.clone();
        c.metadata.uid = format!("UID-{i}");
        o.dra.resource_claims.insert(c.key(), Arc::new(c));
    }
    p.set_objects(Arc::new(o));
    p
}

fn claim_hint(
    p: &DynamicResources,
    pod: Pod,
    old: Option<ResourceClaim>,
    new: Option<ResourceClaim>,
) -> QueueingHint {
    let action = match (&old, &new) {
        (None, Some(_)) => ObjectAction::Add,
        (_, None) => ObjectAction::Delete,
        _ => ObjectAction::Update,
    };
    let old = old.map(ApiObject::ResourceClaim);
    let new = new.map(ApiObject::ResourceClaim);
    p.hint(
        &PodInfo::new(pod),
        ClusterEventKind::Object(ObjectKind::ResourceClaim, action),
        &ClusterEventObjects::Object {
            old: old.as_ref(),
            new: new.as_ref(),
        },
    )
}

/// As the fake API server stores it: the uid the test claims lack.
fn stored(mut c: ResourceClaim, uid: &str) -> ResourceClaim {
    c.metadata.uid = uid.into();
    c
}

/// `TestIsSchedulableAfterClaimChange`.
#[test]
fn is_schedulable_after_claim_change() {
    // skip-deletes
    let p = with_claims(&[]);
    assert_eq!(
        claim_hint(&p, pod_with_claim_template(), Some(allocated_claim()), None),
        QueueingHint::Skip,
        "skip-deletes"
    );

    // skip-wrong-claim: the pod's generated claim is not created yet.
    let mut wrong = allocated_claim();
    wrong.metadata.owner_references[0].uid += "123";
    let p = with_claims(&[]);
    assert_eq!(
        claim_hint(&p, pod_with_claim_template(), None, Some(wrong.clone())),
        QueueingHint::Skip,
        "skip-wrong-claim"
    );

    // skip-unrelated-claim
    let mut unrelated = allocated_claim();
    unrelated.metadata.name += "-foo";
    let p = with_claims(&[allocated_claim(), stored(unrelated.clone(), "UID-1123")]);
    assert_eq!(
        claim_hint(
            &p,
            pod_with_claim_template(),
            None,
            Some(stored(unrelated, "UID-1123"))
        ),
        QueueingHint::Skip,
        "skip-unrelated-claim"
    );

    // queue-on-add: the pod's claim was created.
    let p = with_claims(&[pending_claim()]);
    assert_eq!(
        claim_hint(
            &p,
            pod_with_claim_name(),
            None,
            Some(stored(pending_claim(), "UID-0"))
        ),
        QueueingHint::Queue,
        "queue-on-add"
    );

    // skip-adding-finalizer: only metadata changed.
    let mut finalized = stored(pending_claim(), "UID-0");
    finalized.metadata.finalizers.push("foo".into());
    let p = with_claims(&[finalized.clone()]);
    assert_eq!(
        claim_hint(
            &p,
            pod_with_claim_name(),
            Some(stored(pending_claim(), "UID-0")),
            Some(finalized)
        ),
        QueueingHint::Skip,
        "skip-adding-finalizer"
    );

    // queue-on-status-change
    let mut allocated = stored(pending_claim(), "UID-0");
    allocated.status.allocation = Some(AllocationResult::default());
    let p = with_claims(&[allocated.clone()]);
    assert_eq!(
        claim_hint(
            &p,
            pod_with_claim_name(),
            Some(stored(pending_claim(), "UID-0")),
            Some(allocated)
        ),
        QueueingHint::Queue,
        "queue-on-status-change"
    );

    // claim-deallocate: another claim's devices are free again.
    let mut deallocated = stored(other_allocated_claim(), "UID-1");
    deallocated.status.allocation = None;
    let p = with_claims(&[pending_claim(), deallocated.clone()]);
    assert_eq!(
        claim_hint(
            &p,
            pod_with_claim_name(),
            Some(stored(other_allocated_claim(), "UID-1")),
            Some(deallocated)
        ),
        QueueingHint::Queue,
        "claim-deallocate"
    );
}

fn pod_hint(p: &DynamicResources, pod: Pod, new: Pod) -> QueueingHint {
    let new = PodInfo::new(new);
    p.hint(
        &PodInfo::new(pod),
        ClusterEventKind::UnscheduledPodUpdate,
        &ClusterEventObjects::Pod {
            old: None,
            new: Some(&new),
        },
    )
}

/// `TestIsSchedulableAfterPodChange`.
#[test]
fn is_schedulable_after_pod_change() {
    // complete: the claim exists and the pod's status now names it.
    let p = with_claims(&[pending_claim()]);
    assert_eq!(
        pod_hint(
            &p,
            pod_with_claim_template(),
            pod_with_claim_template_in_status()
        ),
        QueueingHint::Queue,
        "complete"
    );

    // wrong-pod: another pod's update.
    let mut other = pod_with_claim_template();
    other.metadata.name += "2";
    other.metadata.uid += "2";
    assert_eq!(
        pod_hint(&p, other, pod_with_claim_template_in_status()),
        QueueingHint::Skip,
        "wrong-pod"
    );

    // missing-claim
    let p = with_claims(&[]);
    assert_eq!(
        pod_hint(
            &p,
            pod_with_claim_template(),
            pod_with_claim_template_in_status()
        ),
        QueueingHint::Skip,
        "missing-claim"
    );

    // incomplete: only one of two claims created.
    let p = with_claims(&[pending_claim()]);
    let mut incomplete = pod_with_two_claim_templates();
    incomplete.status.resource_claim_statuses =
        vec![
            serde_json::from_value(json!({"name": "my-resource", "resourceClaimName": CLAIM}))
                .expect("status"),
        ];
    assert_eq!(
        pod_hint(&p, pod_with_two_claim_templates(), incomplete),
        QueueingHint::Skip,
        "incomplete"
    );
}

/// `st.MakeResourceClaim().NamedRequestWithPrioritizedList(name, subrequests...)` with
/// `subreq-1`..`subreq-<n>` per request.
fn prioritized_claim(requests: &[(&str, usize)]) -> ResourceClaim {
    let requests: Vec<serde_json::Value> = requests
        .iter()
        .map(|(name, n)| {
            let subs: Vec<serde_json::Value> = (1..=*n)
                .map(|i| {
                    json!({"name": format!("subreq-{i}"), "deviceClassName": "my-resource-class",
                    "allocationMode": "ExactCount", "count": 1})
                })
                .collect();
            json!({"name": name, "firstAvailable": subs})
        })
        .collect();
    serde_json::from_value(json!({"metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": requests}}}))
    .expect("claim")
}

fn allocation(requests: &[&str]) -> AllocationResult {
    let results: Vec<serde_json::Value> = requests.iter().map(|r| json!({"request": r})).collect();
    serde_json::from_value(json!({"devices": {"results": results}})).expect("allocation")
}

/// `Test_computesScore`: the sum over claims of `8 − index` of each chosen subrequest.
#[test]
fn computes_score() {
    type Claims = Vec<(ResourceClaim, AllocationResult)>;
    let rows: Vec<(&str, Claims, i64)> = vec![
        (
            "single-request-only-subrequest-allocated",
            vec![(
                prioritized_claim(&[("req-1", 1)]),
                allocation(&["req-1/subreq-1"]),
            )],
            8,
        ),
        (
            "single-request-last-subrequest-allocated",
            vec![(
                prioritized_claim(&[("req-1", 8)]),
                allocation(&["req-1/subreq-8"]),
            )],
            1,
        ),
        (
            "multiple-requests-with-middle-subrequests-allocated",
            vec![(
                prioritized_claim(&[("req-1", 4), ("req-2", 5)]),
                allocation(&["req-1/subreq-4", "req-2/subreq-5"]),
            )],
            9,
        ),
        (
            "multiple-requests-with-top-subrequests-allocated",
            vec![(
                prioritized_claim(&[("req-1", 8), ("req-2", 1)]),
                allocation(&["req-1/subreq-8", "req-2/subreq-1"]),
            )],
            9,
        ),
        (
            "multiple-claims-with-last-subrequests-allocated",
            vec![
                (
                    prioritized_claim(&[("req-1", 8)]),
                    allocation(&["req-1/subreq-8"]),
                ),
                (
                    prioritized_claim(&[("req-2", 8)]),
                    allocation(&["req-2/subreq-8"]),
                ),
            ],
            2,
        ),
        (
            "multiple-claims-with-top-subrequests-allocated",
            vec![
                (
                    prioritized_claim(&[("req-1", 1)]),
                    allocation(&["req-1/subreq-1"]),
                ),
                (
                    prioritized_claim(&[("req-2", 1)]),
                    allocation(&["req-2/subreq-1"]),
                ),
            ],
            16,
        ),
    ];
    for (name, claims, want) in rows {
        let got: i64 = claims.iter().map(|(c, a)| score_allocation(c, a)).sum();
        assert_eq!(got, want, "{name}");
    }
}

/// `TestNormalizeScore`: `score × 100 / max`, rounding down; all zero stays zero.
#[test]
fn normalize_score() {
    use crate::framework::{CycleState, ScorePlugin};
    const MAX: i64 = i32::MAX as i64;
    let rows: Vec<(&str, Vec<i64>, Vec<i64>)> = vec![
        ("empty", vec![], vec![]),
        ("single-score", vec![42], vec![100]),
        ("all-same", vec![8, 8], vec![100, 100]),
        ("all-same-very-large", vec![MAX, MAX], vec![100, 100]),
        ("max-and-min-values", vec![MAX, 0], vec![100, 0]),
        ("mid-value", vec![99, 98, 97], vec![100, 98, 97]),
        (
            "large-spread-lost-precision",
            vec![MAX, MAX - 1, 1, 0],
            vec![100, 99, 0, 0],
        ),
    ];
    let p = plugin(Features::default());
    let pod = PodInfo::new(pod_with_claim_name());
    for (name, mut scores, want) in rows {
        let st = p.normalize(&CycleState::new(), &pod, &mut scores);
        assert!(st.is_success(), "{name}");
        assert_eq!(scores, want, "{name}");
    }
}
