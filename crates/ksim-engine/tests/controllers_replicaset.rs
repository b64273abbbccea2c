//! ReplicaSet scale-down order (upstream `getPodsToDelete` / `ActivePodsWithRanks`) and the
//! 63-character cut of generated names (upstream `names.SimpleNameGenerator`).

mod common;

use std::collections::BTreeMap;

use common::*;
use ksim_engine::Record;
use serde_json::json;

fn nodes_of(live: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut per = BTreeMap::new();
    for n in live.values() {
        *per.entry(n.clone()).or_default() += 1;
    }
    per
}

/// 4 pods on n1 (made while n1 was the only node), then 2 + 2 on n2 and n3; scaling 8 → 4
/// deletes the four doubled-up pods on n1 (rank 4 before rank 2), although they are the oldest.
#[test]
fn scale_down_deletes_the_doubled_up_pods_first() {
    let events = vec![
        at(
            0.0,
            create(workload("ReplicaSet", "web", json!({"replicas": 4}))),
        ),
        at(
            30.0,
            ksim_engine::InputEvent::AddNode {
                node: Box::new(node("n2")),
            },
        ),
        at(
            30.0,
            ksim_engine::InputEvent::AddNode {
                node: Box::new(node("n3")),
            },
        ),
        at(
            40.0,
            update(workload("ReplicaSet", "web", json!({"replicas": 8}))),
        ),
        at(
            100.0,
            update(workload("ReplicaSet", "web", json!({"replicas": 4}))),
        ),
    ];
    let all = run(cfg(200), vec![node("n1")], events.clone());
    // Before the scale-down: 4 on n1, 2 on n2, 2 on n3.
    let before: Vec<Record> = all
        .iter()
        .filter(|r| r.at().0 < 100_000_000)
        .cloned()
        .collect();
    let per = nodes_of(&running(&before));
    assert_eq!(
        per,
        BTreeMap::from([("n1".into(), 4), ("n2".into(), 2), ("n3".into(), 2)]),
        "{:?}",
        running(&before)
    );
    let after = running(&all);
    assert_eq!(after.len(), 4, "{after:?}");
    assert_eq!(
        nodes_of(&after),
        BTreeMap::from([("n2".into(), 2), ("n3".into(), 2)]),
        "{after:?}"
    );
}

/// `controller.kubernetes.io/pod-deletion-cost` outranks the node rank: the n1 pod annotated
/// with a high cost survives; a pod annotated low is deleted first.
#[test]
fn pod_deletion_cost_orders_the_scale_down() {
    // Dumped pods adopted by the ReplicaSet, each with its own cost.
    let pod = |name: &str, node: &str, cost: i32| ksim_engine::InputEvent::CreatePod {
        pod: Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
                    "annotations": {"controller.kubernetes.io/pod-deletion-cost": cost.to_string()},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "name": "web", "uid": "u", "controller": true}]},
                "spec": {"nodeName": node, "containers": [{"name": "c",
                    "resources": {"requests": {"cpu": "100m"}}}]}
            }))
            .expect("pod"),
        ),
        run_for: None,
    };
    let events = vec![
        at(0.0, pod("a", "n1", 100)),
        at(0.0, pod("b", "n1", 0)),
        at(0.0, pod("c", "n2", -10)),
        at(0.0, pod("d", "n2", 0)),
        at(
            1.0,
            create(workload("ReplicaSet", "web", json!({"replicas": 4}))),
        ),
        at(
            50.0,
            update(workload("ReplicaSet", "web", json!({"replicas": 2}))),
        ),
    ];
    let r = run(cfg(100), nodes_of_names(&["n1", "n2"]), events);
    let left: Vec<String> = running(&r).keys().cloned().collect();
    // c (cost −10) first, then b and d (cost 0, rank 2 each: equal up to creation and UID).
    assert!(left.contains(&"a".to_string()), "{left:?}");
    assert!(!left.contains(&"c".to_string()), "{left:?}");
    assert_eq!(left.len(), 2, "{left:?}");
}

fn nodes_of_names(names: &[&str]) -> Vec<ksim_api::Node> {
    names.iter().map(|n| node(n)).collect()
}

/// A Deployment whose name is 60 characters: its ReplicaSet's pod names are cut to 63
/// characters (58 characters of `<deploy>-<hash>-`, then 5 random), as upstream's
/// `SimpleNameGenerator` cuts them (uncut they would be 77).
#[test]
fn generated_names_stay_within_63_characters() {
    let long = "a".repeat(60);
    let r = run(
        cfg(30),
        nodes(1),
        vec![at(
            0.0,
            create(workload("Deployment", &long, json!({"replicas": 3}))),
        )],
    );
    let names: Vec<String> = created(&r).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names.len(), 3);
    for n in &names {
        assert_eq!(n.len(), 63, "{n}");
        // `<deploy>-<hash>-` is 72 characters: 58 of them kept, all `a`s.
        assert!(n.starts_with(&long[..58]), "{n}");
        assert!(!n[58..].contains('-'), "{n}");
    }
    // A short name is not cut: `<rs>-<5>`.
    let r = run(
        cfg(30),
        nodes(1),
        vec![at(
            0.0,
            create(workload("ReplicaSet", "web", json!({"replicas": 1}))),
        )],
    );
    let n = &created(&r)[0].1;
    assert_eq!(n.len(), "web-".len() + 5, "{n}");
}
