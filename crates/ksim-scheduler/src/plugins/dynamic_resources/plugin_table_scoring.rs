//! Upstream's `TestPlugin` rows for `firstAvailable` (DRAPrioritizedList): allocation of the
//! first subrequest that fits, and Score / NormalizeScore across nodes
//! (`claim-with-prioritized-list`, `single-claim-prioritized-list-scoring`,
//! `multiple-claims-prioritized-list-scoring`, `multiple-requests-prioritized-list-scoring`),
//! driven by the loop of `plugin_table.rs`.

use ksim_api::resource::{ResourceClaim, ResourceSlice};
use ksim_api::Pod;

use super::allocator::Features;
use super::plugin_table::{
    allocated, check_steps, check_stored, claim, claim_with_prioritized_list, cmp_all,
    device_class, node, owned, pod_with_claim_name, pod_with_two_claim_names, prioritized, reserve,
    run, slice, stored_form, sub, sub_with_selector, worker_node_slice, Case, Run, BROKEN, CLAIM,
    CLAIM2, W,
};

/// `claim-with-prioritized-list`: the first subrequest is allocated.
#[test]
fn claim_with_prioritized_list_allocates_its_first_subrequest() {
    let pending = || owned(claim_with_prioritized_list());
    let r = run(Case {
        features: Features {
            admin_access: false,
            prioritized_list: true,
            ..Features::default()
        },
        claims: vec![pending()],
        classes: vec![device_class()],
        slices: vec![worker_node_slice()],
        ..Default::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    let want = allocated(pending(), &[("req-1/subreq-1", "instance-1")]);
    assert_eq!(
        cmp_all(&r.in_flight_after_reserve),
        cmp_all(&[stored_form(want.clone())])
    );
    check_stored(
        &r,
        &[(CLAIM, |c| {
            reserve(allocated(c, &[("req-1/subreq-1", "instance-1")]))
        })],
    );
}

/// The prioritized-list scoring rows: Score per node, NormalizeScore, and the best node's
/// allocation written.
fn scoring_case(
    claims: Vec<ResourceClaim>,
    pod: Pod,
    slices: Vec<ResourceSlice>,
    nodes: &[&str],
) -> Run {
    run(Case {
        features: Features {
            admin_access: false,
            prioritized_list: true,
            ..Features::default()
        },
        nodes: nodes.iter().map(|n| node(n)).collect(),
        pod,
        claims,
        classes: vec![device_class()],
        slices,
        ..Default::default()
    })
}

fn pairs(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, s)| (n.to_string(), *s)).collect()
}

/// `single-claim-prioritized-list-scoring`: the healthy device (subrequest 1) scores 8, the
/// other node's fallback (subrequest 2) 7; normalized 100 and 87.
#[test]
fn single_claim_prioritized_list_scoring() {
    let pending = || {
        owned(claim(
            CLAIM,
            vec![prioritized(
                1,
                vec![sub_with_selector("subreq-1", BROKEN), sub("subreq-2", 1)],
            )],
        ))
    };
    let r = scoring_case(
        vec![pending()],
        pod_with_claim_name(),
        vec![
            slice("worker", &[("instance-1", Some(true))]),
            slice("worker-2", &[("instance-1", Some(false))]),
        ],
        &["worker", "worker-2"],
    );
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Filter/worker-2", W::Ok),
            ("Score/worker", W::Ok),
            ("Score/worker-2", W::Ok),
            ("NormalizeScore", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    assert_eq!(r.scores, pairs(&[("worker", 8), ("worker-2", 7)]));
    assert_eq!(r.normalized, pairs(&[("worker", 100), ("worker-2", 87)]));
    let want = allocated(pending(), &[("req-1/subreq-1", "instance-1")]);
    assert_eq!(
        cmp_all(&r.in_flight_after_reserve),
        cmp_all(&[stored_form(want)])
    );
    check_stored(
        &r,
        &[(CLAIM, |c| {
            reserve(allocated(c, &[("req-1/subreq-1", "instance-1")]))
        })],
    );
}

/// `multiple-claims-prioritized-list-scoring`: worker (4 devices) gives the second claim its
/// subrequest 2 (3 devices): 8 + 7; worker-2 (2 devices) its subrequest 4: 8 + 5; worker-3
/// (1 device) cannot allocate both claims.
#[test]
fn multiple_claims_prioritized_list_scoring() {
    let c1 = || owned(claim_with_prioritized_list());
    let c2 = || {
        owned(claim(
            CLAIM2,
            vec![prioritized(
                1,
                vec![
                    sub("subreq-1", 4),
                    sub("subreq-2", 3),
                    sub("subreq-3", 2),
                    sub("subreq-4", 1),
                ],
            )],
        ))
    };
    let four = [
        ("instance-1", None),
        ("instance-2", None),
        ("instance-3", None),
        ("instance-4", None),
    ];
    let r = scoring_case(
        vec![c1(), c2()],
        pod_with_two_claim_names(),
        vec![
            slice("worker", &four),
            slice("worker-2", &four[..2]),
            slice("worker-3", &four[..1]),
        ],
        &["worker", "worker-2", "worker-3"],
    );
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Filter/worker-2", W::Ok),
            ("Filter/worker-3", W::Msg("cannot allocate all claims")),
            ("Score/worker", W::Ok),
            ("Score/worker-2", W::Ok),
            ("NormalizeScore", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    assert_eq!(r.scores, pairs(&[("worker", 15), ("worker-2", 13)]));
    assert_eq!(r.normalized, pairs(&[("worker", 100), ("worker-2", 86)]));
    let sub2 = [
        ("req-1/subreq-2", "instance-1"),
        ("req-1/subreq-2", "instance-2"),
        ("req-1/subreq-2", "instance-3"),
    ];
    assert_eq!(
        cmp_all(&r.in_flight_after_reserve),
        cmp_all(&[
            stored_form(allocated(c1(), &[("req-1/subreq-1", "instance-1")])),
            stored_form(allocated(c2(), &sub2)),
        ])
    );
    check_stored(
        &r,
        &[
            (CLAIM, |c| {
                reserve(allocated(c, &[("req-1/subreq-1", "instance-1")]))
            }),
            (CLAIM2, |c| {
                reserve(allocated(
                    c,
                    &[
                        ("req-1/subreq-2", "instance-1"),
                        ("req-1/subreq-2", "instance-2"),
                        ("req-1/subreq-2", "instance-3"),
                    ],
                ))
            }),
        ],
    );
}

/// `multiple-requests-prioritized-list-scoring`: two requests of [2 devices, 1 device] score
/// 16, 15 and 14 on nodes with 4, 3 and 2 devices; normalized 100, 93, 87.
#[test]
fn multiple_requests_prioritized_list_scoring() {
    let pending = || {
        let r = || vec![sub("subreq-1", 2), sub("subreq-2", 1)];
        owned(claim(CLAIM, vec![prioritized(1, r()), prioritized(2, r())]))
    };
    let four = [
        ("instance-1", None),
        ("instance-2", None),
        ("instance-3", None),
        ("instance-4", None),
    ];
    let r = scoring_case(
        vec![pending()],
        pod_with_claim_name(),
        vec![
            slice("worker", &four),
            slice("worker-2", &four[..3]),
            slice("worker-3", &four[..2]),
        ],
        &["worker", "worker-2", "worker-3"],
    );
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Filter/worker-2", W::Ok),
            ("Filter/worker-3", W::Ok),
            ("Score/worker", W::Ok),
            ("Score/worker-2", W::Ok),
            ("Score/worker-3", W::Ok),
            ("NormalizeScore", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    assert_eq!(
        r.scores,
        pairs(&[("worker", 16), ("worker-2", 15), ("worker-3", 14)])
    );
    assert_eq!(
        r.normalized,
        pairs(&[("worker", 100), ("worker-2", 93), ("worker-3", 87)])
    );
    check_stored(
        &r,
        &[(CLAIM, |c| {
            reserve(allocated(
                c,
                &[
                    ("req-1/subreq-1", "instance-1"),
                    ("req-1/subreq-1", "instance-2"),
                    ("req-2/subreq-1", "instance-3"),
                    ("req-2/subreq-1", "instance-4"),
                ],
            ))
        })],
    );
}
