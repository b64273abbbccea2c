//! Upstream's `TestPlugin` rows (see `plugin_table.rs` for how they are driven and compared,
//! and for the rows not ported), one test per row or per group of rows that differ only in
//! their inputs.

use ksim_api::resource::ResourceClaim;
use serde_json::json;

use super::allocator::Features;
use super::plugin_table::{
    admin_access, allocated, allocated_claim, allocated_with_topology, break_cel_in_claim,
    break_cel_in_class, check_steps, check_stored, claim, claim_with_prioritized_list, cmp_all,
    device_class, node, other_allocated_claim, other_claim, parse, pending_claim,
    pod_with_claim_name, pod_with_claim_template, pod_with_claim_template_in_status, req, reserve,
    run, slice, stored_form, with_class, worker_node_slice, Case, CLAIM, CLASS, W,
};
use crate::framework::Code;

// ---- the table ---------------------------------------------------------------------------------

#[test]
fn empty() {
    let r = run(Case {
        pod: parse(json!({"metadata": {"name": "foo", "namespace": "default"},
            "spec": {"containers": [{"name": "c"}]}})),
        ..Default::default()
    });
    // PreFilter skips; upstream's loop still calls Filter, which passes, so the pod reaches
    // Reserve and PreBind with nothing to do (its PostFilter expectation is never checked).
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Skip),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    check_stored(&r, &[]);
    assert!(r.in_flight_after_reserve.is_empty());
    assert_eq!(r.after_prebind, (vec![], vec![]));
}

/// `claim-reference`, `claim-template`: an allocated claim gets the pod in `reservedFor`.
#[test]
fn claim_reference_and_claim_template() {
    for pod in [pod_with_claim_name(), pod_with_claim_template_in_status()] {
        let r = run(Case {
            pod,
            claims: vec![allocated_claim(), other_claim()],
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
        check_stored(&r, &[(CLAIM, reserve)]);
        assert!(r.in_flight_after_reserve.is_empty());
        assert_eq!(r.after_prebind.0, vec![]);
        assert_eq!(
            cmp_all(&r.after_prebind.1),
            cmp_all(&[stored_form(reserve(allocated_claim()))]),
            "assumed"
        );
    }
}

/// `missing-claim`, `deleted-claim`, `wrong-claim`: PreEnqueue keeps the pod out.
#[test]
fn preenqueue_rejections() {
    let r = run(Case {
        pod: pod_with_claim_template(),
        claims: vec![allocated_claim(), other_claim()],
        ..Default::default()
    });
    check_steps(
        &r,
        &[(
            "PreEnqueue",
            W::Msg("pod \"default/my-pod\": ResourceClaim not created yet"),
        )],
    );

    let mut deleted = allocated_claim();
    deleted.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
    let r = run(Case {
        pod: pod_with_claim_template_in_status(),
        claims: vec![deleted],
        ..Default::default()
    });
    check_steps(
        &r,
        &[(
            "PreEnqueue",
            W::Msg("resourceclaim \"my-pod-my-resource\" is being deleted"),
        )],
    );

    let mut wrong = allocated_claim();
    wrong.metadata.owner_references[0].uid += "123";
    let r = run(Case {
        pod: pod_with_claim_template_in_status(),
        claims: vec![wrong],
        ..Default::default()
    });
    check_steps(&r, &[("PreEnqueue", W::Msg("ResourceClaim default/my-pod-my-resource was not created for pod default/my-pod (pod is not owner)"))]);
    check_stored(&r, &[]);
}

/// `no-resources`, `exhausted-resources`: no device left → Filter rejects, PostFilter gives up.
#[test]
fn no_resources_and_exhausted_resources() {
    for (claims, slices) in [
        (vec![pending_claim()], vec![]),
        (
            vec![pending_claim(), other_allocated_claim()],
            vec![worker_node_slice()],
        ),
    ] {
        let r = run(Case {
            claims,
            classes: vec![device_class()],
            slices,
            ..Default::default()
        });
        check_steps(
            &r,
            &[
                ("PreEnqueue", W::Ok),
                ("PreFilter", W::Ok),
                ("Filter/worker", W::Msg("cannot allocate all claims")),
                ("PostFilter", W::Msg("still not schedulable")),
            ],
        );
        check_stored(&r, &[]);
    }
}

fn allocate_and_reserve(c: ResourceClaim) -> ResourceClaim {
    reserve(allocated(c, &[("req-1", "instance-1")]))
}

/// `with-resources`, `with-resources-has-finalizer`, `with-resources-finalizer-gets-removed`,
/// `with-resources-finalizer-gets-added`: Reserve holds the allocation in flight, PreBind
/// writes finalizer, allocation and reservation, and the written claim stays assumed.
#[test]
fn with_resources() {
    fn with_finalizer(mut c: ResourceClaim) -> ResourceClaim {
        c.metadata.finalizers = vec![super::FINALIZER.into()];
        c
    }
    fn drop_finalizers(c: &mut ResourceClaim) {
        c.metadata.finalizers.clear();
    }
    fn add_finalizer(c: &mut ResourceClaim) {
        c.metadata.finalizers = vec![super::FINALIZER.into()];
    }
    type Prepare = Option<fn(&mut ResourceClaim)>;
    let variants: [(&str, ResourceClaim, Prepare); 4] = [
        ("with-resources", pending_claim(), None),
        (
            "with-resources-has-finalizer",
            with_finalizer(pending_claim()),
            None,
        ),
        (
            "with-resources-finalizer-gets-removed",
            with_finalizer(pending_claim()),
            Some(drop_finalizers),
        ),
        (
            "with-resources-finalizer-gets-added",
            pending_claim(),
            Some(add_finalizer),
        ),
    ];
    for (name, c, prepare) in variants {
        let r = run(Case {
            claims: vec![c],
            classes: vec![device_class()],
            slices: vec![worker_node_slice()],
            prepare_prebind: prepare,
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
        assert_eq!(
            cmp_all(&r.in_flight_after_reserve),
            cmp_all(&[stored_form(allocated_claim())]),
            "{name}: in flight after Reserve"
        );
        assert_eq!(r.after_prebind.0, vec![], "{name}: in flight after PreBind");
        assert_eq!(
            cmp_all(&r.after_prebind.1),
            cmp_all(&[stored_form(reserve(allocated_claim()))]),
            "{name}: assumed after PreBind"
        );
        // Finalizer once, allocation of instance-1 on worker, the pod reserved.
        check_stored(&r, &[(CLAIM, allocate_and_reserve)]);
        assert_eq!(
            r.stored[&format!("default/{CLAIM}")].metadata.finalizers,
            vec![super::FINALIZER.to_string()],
            "{name}"
        );
    }
}

/// `skip-bind`: Unreserve before PreBind drops the in-flight allocation; nothing is written.
#[test]
fn skip_bind() {
    let r = run(Case {
        claims: vec![pending_claim()],
        classes: vec![device_class()],
        slices: vec![worker_node_slice()],
        unreserve_before_prebind: true,
        ..Default::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("Unreserve", W::Ok),
        ],
    );
    assert_eq!(
        cmp_all(&r.in_flight_after_reserve),
        cmp_all(&[stored_form(allocated_claim())])
    );
    assert_eq!(r.after_unreserve, (vec![], vec![]));
    check_stored(&r, &[]);
}

/// `request-admin-access-with-DRAAdminAccess-featuregate`,
/// `request-admin-access-without-DRAAdminAccess-featuregate`,
/// `structured-ignore-allocated-admin-access`.
#[test]
fn admin_access_cases() {
    let case = |admin: bool, claims: Vec<ResourceClaim>| Case {
        features: Features {
            admin_access: admin,
            prioritized_list: false,
            ..Features::default()
        },
        claims,
        classes: vec![device_class()],
        slices: vec![worker_node_slice()],
        ..Default::default()
    };
    let bound = [
        ("PreEnqueue", W::Ok),
        ("PreFilter", W::Ok),
        ("Filter/worker", W::Ok),
        ("Reserve", W::Ok),
        ("PreBind", W::Ok),
    ];

    // With the gate: the device in use is allocated again with admin access.
    let r = run(case(
        true,
        vec![admin_access(pending_claim()), other_allocated_claim()],
    ));
    check_steps(&r, &bound);
    assert_eq!(
        cmp_all(&r.in_flight_after_reserve),
        cmp_all(&[stored_form(admin_access(allocated_claim()))])
    );
    assert_eq!(
        cmp_all(&r.after_prebind.1),
        cmp_all(&[stored_form(reserve(admin_access(allocated_claim())))])
    );
    check_stored(&r, &[(CLAIM, |c| admin_access(allocate_and_reserve(c)))]);

    // Without it: Filter fails with the allocator's error.
    let r = run(case(
        false,
        vec![admin_access(pending_claim()), other_allocated_claim()],
    ));
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Msg("claim default/my-pod-my-resource, request req-1: admin access is requested, but the feature is disabled")),
        ],
    );
    check_stored(&r, &[]);

    // An allocation with admin access does not use up the device (gate off in the table).
    let r = run(case(
        false,
        vec![pending_claim(), admin_access(other_allocated_claim())],
    ));
    check_steps(&r, &bound);
    assert_eq!(
        cmp_all(&r.in_flight_after_reserve),
        cmp_all(&[stored_form(allocated_claim())])
    );
    check_stored(&r, &[(CLAIM, allocate_and_reserve)]);
}

/// `claim-parameters-CEL-runtime-error`, `class-parameters-CEL-runtime-error`,
/// `CEL-runtime-error-for-one-of-two-nodes`, `CEL-runtime-error-for-one-of-three-nodes`: a
/// selector that fails on a device is an error that aborts the attempt at the first node.
#[test]
fn cel_runtime_errors() {
    let claim_err =
        "claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: healthy";
    let rows = [
        (
            vec![node("worker")],
            vec![break_cel_in_claim(pending_claim())],
            device_class(),
            claim_err,
        ),
        (
            vec![node("worker")],
            vec![pending_claim()],
            break_cel_in_class(device_class()),
            "class my-resource-class: selector #0: CEL runtime error: no such key: healthy",
        ),
        (
            vec![node("worker"), node("worker-2")],
            vec![break_cel_in_claim(pending_claim())],
            device_class(),
            claim_err,
        ),
        (
            vec![node("worker"), node("worker-2"), node("worker-3")],
            vec![break_cel_in_claim(pending_claim())],
            device_class(),
            claim_err,
        ),
    ];
    for (nodes, claims, class, err) in rows {
        let r = run(Case {
            nodes,
            claims,
            classes: vec![class],
            slices: vec![
                worker_node_slice(),
                slice("worker-2", &[("instance-1", Some(true))]),
                slice("worker-3", &[("instance-1", Some(true))]),
            ],
            ..Default::default()
        });
        check_steps(
            &r,
            &[
                ("PreEnqueue", W::Ok),
                ("PreFilter", W::Ok),
                ("Filter/worker", W::Msg(err)),
            ],
        );
        assert_eq!(r.steps[2].1.code, Code::Error, "the attempt is aborted");
        check_stored(&r, &[]);
    }
}

/// `missing-class`, `claim-with-request-with-unknown-device-class`,
/// `claim-with-prioritized-list-feature-disabled`,
/// `claim-with-prioritized-list-unknown-device-class`: PreFilter rejects, PostFilter has no
/// claim to deallocate.
#[test]
fn prefilter_rejections() {
    let rows = [
        (
            false,
            pending_claim(),
            vec![],
            "request req-1: device class my-resource-class does not exist",
        ),
        (
            false,
            with_class(claim(CLAIM, vec![req(1, CLASS)]), "does-not-exist"),
            vec![],
            "request req-1: device class does-not-exist does not exist",
        ),
        (
            false,
            claim_with_prioritized_list(),
            vec![device_class()],
            "claim default/my-pod-my-resource, request req-1: has subrequests, but the DRAPrioritizedList feature is disabled",
        ),
        (
            true,
            with_class(claim_with_prioritized_list(), "does-not-exist"),
            vec![],
            "request req-1/subreq-1: device class does-not-exist does not exist",
        ),
    ];
    for (prioritized_list, c, classes, err) in rows {
        let r = run(Case {
            features: Features {
                admin_access: false,
                prioritized_list,
                ..Features::default()
            },
            claims: vec![c],
            classes,
            ..Default::default()
        });
        check_steps(
            &r,
            &[
                ("PreEnqueue", W::Ok),
                ("PreFilter", W::Msg(err)),
                ("PostFilter", W::Msg("no new claims to deallocate")),
            ],
        );
        check_stored(&r, &[]);
    }
}

/// `wrong-topology`: an allocation for elsewhere → Filter rejects, PostFilter deallocates.
#[test]
fn wrong_topology() {
    let r = run(Case {
        claims: vec![allocated_with_topology("no-such-label", "no-such-value")],
        ..Default::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            (
                "Filter/worker",
                W::Msg("resourceclaim not available on the node"),
            ),
            (
                "PostFilter",
                W::Msg("deallocation of ResourceClaim completed"),
            ),
        ],
    );
    check_stored(
        &r,
        &[(CLAIM, |mut c| {
            c.status.allocation = None;
            c
        })],
    );
}

/// `good-topology`: the allocation is for this node → only `reservedFor` is written.
#[test]
fn good_topology() {
    let good = || allocated_with_topology("kubernetes.io/hostname", "worker");
    let r = run(Case {
        claims: vec![good()],
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
    check_stored(&r, &[(CLAIM, reserve)]);
    assert_eq!(
        cmp_all(&r.after_prebind.1),
        cmp_all(&[stored_form(reserve(good()))])
    );
}

/// `bind-failure`: after PreBind the binding fails; Unreserve takes the pod back out of the
/// claim's `reservedFor` (upstream's strategic merge patch), so the stored claim is as before.
/// (Upstream also expects the reserved copy to linger in its assume cache until the informer
/// delivers the patch; ksim's copy is gone once the engine applied PreBind's write.)
#[test]
fn bind_failure() {
    let good = || allocated_with_topology("kubernetes.io/hostname", "worker");
    let r = run(Case {
        claims: vec![good()],
        unreserve_after_bind_failure: true,
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
            ("Unreserve", W::Ok),
        ],
    );
    check_stored(&r, &[]);
}

/// `reserved-okay`: the claim is already allocated and reserved for the pod: nothing to do.
#[test]
fn reserved_okay() {
    let r = run(Case {
        claims: vec![reserve(allocated_claim())],
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
    check_stored(&r, &[]);
    assert!(r.in_flight_after_reserve.is_empty());
    assert_eq!(r.after_prebind, (vec![], vec![]));
}
