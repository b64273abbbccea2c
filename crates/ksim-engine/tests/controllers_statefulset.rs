//! StatefulSet scale-down with an unhealthy highest ordinal and template-change rollouts
//! (upstream `stateful_set_control.go`: `processCondemned` with the first unhealthy pod,
//! `updateStatefulSetAfterInvariantEstablished` with `partition` and `maxUnavailable`,
//! `OnDelete`).

mod common;

use common::*;
use ksim_api::object::ApiObject;
use ksim_engine::SimTime;
use serde_json::{json, Value};

/// StatefulSet `db` whose pods request `cpu`.
fn db(replicas: i32, cpu: &str, image: &str, strategy: Value) -> ApiObject {
    object(json!({
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "updateStrategy": strategy,
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": image,
                    "resources": {"requests": {"cpu": cpu}}}]}
            }
        }
    }))
}

fn sized(name: &str, cpu: &str) -> ksim_api::Node {
    let mut n = node(name);
    n.status.capacity =
        serde_json::from_value(json!({"cpu": cpu, "memory": "64Gi", "pods": "110"})).expect("cap");
    n.status.allocatable = n.status.capacity.clone();
    n
}

#[test]
fn scaling_3_to_1_while_the_highest_ordinal_is_pending_leaves_only_db_0() {
    // Room for two 1-CPU pods: db-2 stays pending.
    let r = run(
        cfg(120),
        vec![sized("n1", "2500m")],
        vec![
            at(0.0, create(db(3, "1", "img:1", json!({})))),
            at(60.0, update(db(1, "1", "img:1", json!({})))),
        ],
    );
    let before: Vec<_> = r
        .iter()
        .filter(|x| x.at() < SimTime::from_secs(60))
        .cloned()
        .collect();
    let pending: Vec<String> = alive(&before)
        .into_iter()
        .filter(|(_, n)| n.is_none())
        .map(|(p, _)| p)
        .collect();
    assert_eq!(pending, vec!["db-2".to_string()]);
    let left: Vec<String> = alive(&r).into_keys().collect();
    assert_eq!(left, vec!["db-0".to_string()]);
    // db-2 (pending) went first, then db-1.
    let gone: Vec<String> = ended(&r).into_iter().map(|(_, n)| n).collect();
    assert_eq!(gone, vec!["db-2".to_string(), "db-1".to_string()]);
}

#[test]
fn a_template_change_recreates_the_pods_highest_ordinal_first() {
    let r = run(
        cfg(300),
        nodes(2),
        vec![
            at(0.0, create(db(3, "100m", "img:1", json!({})))),
            at(60.0, update(db(3, "100m", "img:2", json!({})))),
        ],
    );
    let gone: Vec<String> = ended(&r).into_iter().map(|(_, n)| n).collect();
    assert_eq!(gone, ["db-2", "db-1", "db-0"].map(String::from).to_vec());
    // Each one recreated (under its name) before the next one goes.
    let made: Vec<(SimTime, String)> = created(&r)
        .into_iter()
        .filter(|(t, _)| *t >= SimTime::from_secs(60))
        .collect();
    assert_eq!(
        made.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(),
        vec!["db-2", "db-1", "db-0"]
    );
    let ends = ended(&r);
    assert!(
        made[0].0 < ends[1].0 && made[1].0 < ends[2].0,
        "{made:?} {ends:?}"
    );
    assert_eq!(alive(&r).len(), 3);
}

#[test]
fn a_partition_keeps_the_ordinals_below_it_and_max_unavailable_rolls_two_at_once() {
    let strategy = json!({"rollingUpdate": {"partition": 2}});
    let r = run(
        cfg(300),
        nodes(2),
        vec![
            at(0.0, create(db(4, "100m", "img:1", strategy.clone()))),
            at(60.0, update(db(4, "100m", "img:2", strategy))),
        ],
    );
    let gone: Vec<String> = ended(&r).into_iter().map(|(_, n)| n).collect();
    assert_eq!(gone, ["db-3", "db-2"].map(String::from).to_vec());

    let strategy = json!({"rollingUpdate": {"maxUnavailable": 2}});
    let r = run(
        cfg(300),
        nodes(2),
        vec![
            at(0.0, create(db(4, "100m", "img:1", strategy.clone()))),
            at(60.0, update(db(4, "100m", "img:2", strategy))),
        ],
    );
    let ends = ended(&r);
    assert_eq!(ends.len(), 4);
    // db-3 and db-2 go together, then db-1 and db-0.
    assert_eq!(ends[0].0, ends[1].0);
    assert_eq!(ends[2].0, ends[3].0);
    assert!(ends[1].0 < ends[2].0);
}

#[test]
fn on_delete_does_not_roll() {
    let strategy = json!({"type": "OnDelete"});
    let r = run(
        cfg(300),
        nodes(2),
        vec![
            at(0.0, create(db(3, "100m", "img:1", strategy.clone()))),
            at(60.0, update(db(3, "100m", "img:2", strategy))),
        ],
    );
    assert!(ended(&r).is_empty());
    assert_eq!(alive(&r).len(), 3);
}
