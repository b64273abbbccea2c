//! DaemonSet eligibility (upstream `NodeShouldRunDaemonPod` with the tolerations
//! `AddOrUpdateDaemonPodTolerations` adds, and the template's node affinity), nodes added and
//! removed, and template changes (`rollingUpdate`, `OnDelete`).

mod common;

use std::collections::BTreeSet;

use common::*;
use ksim_api::Node;
use ksim_engine::{InputEvent, SimTime};
use serde_json::{json, Value};

/// The seven nodes of the issue: plain, memory-pressure tainted, cordoned, excluded by the
/// template's node affinity, too small for the pod, network-unavailable, and tainted with an
/// untolerated taint.
fn seven_nodes() -> Vec<Node> {
    let taint = |k: &str| json!({"taints": [{"key": k, "effect": "NoSchedule"}]});
    let mut small = node("small");
    small.status.capacity =
        serde_json::from_value(json!({"cpu": "50m", "memory": "64Gi", "pods": "110"}))
            .expect("capacity");
    small.status.allocatable = small.status.capacity.clone();
    // The node lifecycle controller keeps condition taints in step with their conditions
    // (doNoScheduleTaintingPass): the network-unavailable taint needs its condition.
    let mut netless = node_with(
        "netless",
        taint("node.kubernetes.io/network-unavailable"),
        json!({}),
    );
    netless.status.conditions =
        serde_json::from_value(json!([{"type": "NetworkUnavailable", "status": "True"}]))
            .expect("conditions");
    vec![
        node("plain"),
        node_with(
            "pressure",
            taint("node.kubernetes.io/memory-pressure"),
            json!({}),
        ),
        node_with(
            "cordoned",
            json!({"unschedulable": true, "taints": [{"key": "node.kubernetes.io/unschedulable",
                "effect": "NoSchedule"}]}),
            json!({}),
        ),
        node_with("excluded", json!({}), json!({"pool": "excluded"})),
        small,
        netless,
        node_with("dedicated", taint("dedicated"), json!({})),
    ]
}

fn daemonset(name: &str, host_network: bool, extra: Value) -> ksim_api::object::ApiObject {
    let mut spec = json!({"podSpec": {
        "hostNetwork": host_network,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "pool", "operator": "NotIn", "values": ["excluded"]}]}]}}}
    }});
    if let (Some(m), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            m.insert(k.clone(), v.clone());
        }
    }
    workload("DaemonSet", name, spec)
}

#[test]
fn a_daemonset_runs_where_upstream_node_should_run_daemon_pod_says() {
    let r = run(
        cfg(60),
        seven_nodes(),
        vec![
            at(0.0, create(daemonset("agent", false, json!({})))),
            at(0.0, create(daemonset("netagent", true, json!({})))),
        ],
    );
    let bound = running(&r);
    let nodes_of = |prefix: &str| -> BTreeSet<String> {
        bound
            .iter()
            .filter(|(p, _)| p.starts_with(prefix))
            .map(|(_, n)| n.clone())
            .collect()
    };
    let pending = |prefix: &str| -> usize {
        alive(&r)
            .iter()
            .filter(|(p, n)| p.starts_with(prefix) && n.is_none())
            .count()
    };
    let want: BTreeSet<String> = ["plain", "pressure", "cordoned"].map(String::from).into();
    assert_eq!(nodes_of("agent-"), want);
    // The too-small node's pod is created and stays pending.
    assert_eq!(pending("agent-"), 1);
    let mut want_net = want.clone();
    want_net.insert("netless".into());
    assert_eq!(nodes_of("netagent-"), want_net);
    assert_eq!(pending("netagent-"), 1);
}

#[test]
fn nodes_added_later_get_a_pod_and_removed_ones_lose_it() {
    let r = run(
        cfg(120),
        vec![node("a"), node("b")],
        vec![
            at(0.0, create(daemonset("agent", false, json!({})))),
            at(
                30.0,
                InputEvent::AddNode {
                    node: Box::new(node("c")),
                },
            ),
            at(
                30.0,
                InputEvent::AddNode {
                    node: Box::new(node_with("d", json!({}), json!({"pool": "excluded"}))),
                },
            ),
            at(60.0, InputEvent::RemoveNode { name: "a".into() }),
        ],
    );
    let nodes: BTreeSet<String> = running(&r).values().cloned().collect();
    assert_eq!(nodes, ["b", "c"].map(String::from).into());
    assert_eq!(alive(&r).len(), 2, "{:?}", alive(&r));
}

#[test]
fn an_untolerated_no_execute_taint_removes_the_pod_a_no_schedule_one_keeps_it() {
    let tainted = |effect: &str| InputEvent::UpdateNode {
        node: Box::new(node_with(
            "a",
            json!({"taints": [{"key": "dedicated", "effect": effect}]}),
            json!({}),
        )),
    };
    let r = run(
        cfg(60),
        vec![node("a")],
        vec![
            at(0.0, create(daemonset("agent", false, json!({})))),
            at(20.0, tainted("NoSchedule")),
        ],
    );
    assert_eq!(running(&r).len(), 1);
    let r = run(
        cfg(60),
        vec![node("a")],
        vec![
            at(0.0, create(daemonset("agent", false, json!({})))),
            at(20.0, tainted("NoExecute")),
        ],
    );
    assert_eq!(alive(&r).len(), 0);
}

fn ds_update(image: &str, strategy: Value) -> ksim_api::object::ApiObject {
    daemonset(
        "agent",
        false,
        json!({"image": image, "updateStrategy": strategy}),
    )
}

#[test]
fn a_template_change_rolls_every_pod_one_node_at_a_time() {
    let r = run(
        cfg(300),
        nodes(4),
        vec![
            at(0.0, create(ds_update("img:1", json!({})))),
            at(60.0, update(ds_update("img:2", json!({})))),
        ],
    );
    let first: BTreeSet<String> = created(&r)
        .iter()
        .filter(|(t, _)| *t < SimTime::from_secs(60))
        .map(|(_, n)| n.clone())
        .collect();
    assert_eq!(first.len(), 4);
    let live = running(&r);
    assert_eq!(live.len(), 4, "{live:?}");
    // Every pod was replaced: none of the first pods is alive, one per node.
    assert!(live.keys().all(|p| !first.contains(p)), "{live:?}");
    let per_node: BTreeSet<String> = live.values().cloned().collect();
    assert_eq!(per_node.len(), 4);
    // maxUnavailable 1: never two of the first pods deleted before a replacement ran.
    let deleted: Vec<SimTime> = ended(&r).iter().map(|(t, _)| *t).collect();
    assert_eq!(deleted.len(), 4);
    assert!(deleted.windows(2).all(|w| w[0] < w[1]), "{deleted:?}");
}

#[test]
fn max_surge_starts_the_new_pod_before_the_old_one_goes() {
    let strategy = json!({"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    let r = run(
        cfg(300),
        nodes(3),
        vec![
            at(0.0, create(ds_update("img:1", strategy.clone()))),
            at(60.0, update(ds_update("img:2", strategy))),
        ],
    );
    let live = running(&r);
    assert_eq!(live.len(), 3, "{live:?}");
    // Each old pod ends after its node's new pod was created.
    let made = created(&r);
    for (t, _) in ended(&r) {
        assert!(
            made.iter()
                .filter(|(c, _)| *c >= SimTime::from_secs(60) && *c < t)
                .count()
                >= 1
        );
    }
    assert_eq!(ended(&r).len(), 3);
}

#[test]
fn on_delete_does_not_roll_existing_pods() {
    let strategy = json!({"type": "OnDelete"});
    let r = run(
        cfg(200),
        nodes(3),
        vec![
            at(0.0, create(ds_update("img:1", strategy.clone()))),
            at(60.0, update(ds_update("img:2", strategy))),
        ],
    );
    // Nothing rolls.
    assert_eq!(ended(&r).len(), 0);
    assert_eq!(running(&r).len(), 3);
}
