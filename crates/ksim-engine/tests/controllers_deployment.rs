//! Deployment `paused`, proportional scaling during a rollout (upstream sync.go `scale`,
//! `GetReplicaSetProportion`) and Recreate waiting for the old pods to be gone
//! (`rolloutRecreate`, `oldPodsRunning`).

mod common;

use std::collections::BTreeMap;

use common::*;
use ksim_api::object::ApiObject;
use ksim_engine::SimTime;
use serde_json::{json, Value};

/// Deployment `web` with `replicas`, container image `image` requesting `cpu`, and `extra`
/// spec fields.
fn web(replicas: i32, image: &str, cpu: &str, extra: Value) -> ApiObject {
    let mut spec = json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": image,
                "resources": {"requests": {"cpu": cpu}}}]}
        }
    });
    if let (Some(m), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            m.insert(k.clone(), v.clone());
        }
    }
    object(json!({"kind": "Deployment", "metadata": {"name": "web"}, "spec": spec}))
}

/// Live pods per ReplicaSet (the pod name without its 5-character suffix).
fn per_rs(live: &BTreeMap<String, Option<String>>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for p in live.keys() {
        let rs = p
            .rsplit_once('-')
            .map(|(a, _)| a.to_string())
            .unwrap_or_default();
        *out.entry(rs).or_default() += 1;
    }
    out
}

#[test]
fn a_paused_deployment_does_not_roll_but_scales() {
    let r = run(
        cfg(200),
        nodes(2),
        vec![
            at(0.0, create(web(4, "img:1", "100m", json!({})))),
            at(
                30.0,
                update(web(4, "img:2", "100m", json!({"paused": true}))),
            ),
            at(
                60.0,
                update(web(6, "img:2", "100m", json!({"paused": true}))),
            ),
        ],
    );
    let live = alive(&r);
    let sets = per_rs(&live);
    // One ReplicaSet (the first template's), scaled to 6; no pod ended.
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert_eq!(sets.values().copied().collect::<Vec<_>>(), vec![6]);
    assert!(ended(&r).is_empty());

    // Resumed: the rollout happens.
    let r = run(
        cfg(300),
        nodes(2),
        vec![
            at(0.0, create(web(4, "img:1", "100m", json!({})))),
            at(
                30.0,
                update(web(4, "img:2", "100m", json!({"paused": true}))),
            ),
            at(
                60.0,
                update(web(4, "img:2", "100m", json!({"paused": false}))),
            ),
        ],
    );
    let made_after: Vec<_> = created(&r)
        .into_iter()
        .filter(|(t, _)| *t > SimTime::from_secs(60))
        .collect();
    assert_eq!(made_after.len(), 4, "{made_after:?}");
    assert_eq!(ended(&r).len(), 4);
}

#[test]
fn scaling_in_the_middle_of_a_rollout_is_proportional() {
    // The new template's pods cannot fit (100 CPUs): the rollout stalls at old 8 / new 5
    // (maxSurge 3, maxUnavailable 2 of 10). Scaling to 20 (maxSurge 5): 12 more replicas,
    // old 8 × 25/13 → 15 (+7), new 5 × 25/13 → 10 (+5).
    let r = run(
        cfg(200),
        nodes(2),
        vec![
            at(0.0, create(web(10, "img:1", "100m", json!({})))),
            at(60.0, update(web(10, "img:2", "100", json!({})))),
            at(120.0, update(web(20, "img:2", "100", json!({})))),
        ],
    );
    let before: Vec<_> = r
        .iter()
        .filter(|x| x.at() < SimTime::from_secs(120))
        .cloned()
        .collect();
    let mut counts: Vec<usize> = per_rs(&alive(&before)).into_values().collect();
    counts.sort();
    assert_eq!(counts, vec![5, 8]);
    let live = alive(&r);
    let sets = per_rs(&live);
    let bound: usize = live.values().filter(|n| n.is_some()).count();
    let mut counts: Vec<usize> = sets.into_values().collect();
    counts.sort();
    assert_eq!(counts, vec![10, 15], "{live:?}");
    // The 15 old pods run; the 10 new ones pend.
    assert_eq!(bound, 15);
}

#[test]
fn recreate_creates_the_new_pods_one_reaction_after_the_old_ones_are_gone() {
    let r = run(
        cfg(200),
        nodes(2),
        vec![
            at(
                0.0,
                create(web(
                    3,
                    "img:1",
                    "100m",
                    json!({"strategy": {"type": "Recreate"}}),
                )),
            ),
            at(
                60.0,
                update(web(
                    3,
                    "img:2",
                    "100m",
                    json!({"strategy": {"type": "Recreate"}}),
                )),
            ),
        ],
    );
    let gone = ended(&r);
    assert_eq!(gone.len(), 3);
    let last_gone = gone.iter().map(|(t, _)| *t).max().expect("ended");
    let new: Vec<SimTime> = created(&r)
        .into_iter()
        .filter(|(t, _)| *t >= SimTime::from_secs(60))
        .map(|(t, _)| t)
        .collect();
    assert_eq!(new.len(), 3);
    // Not before every old pod is gone (they terminate for their 30 s grace period):
    // upstream's `oldPodsRunning` holds the new ReplicaSet back until then.
    assert!(last_gone >= SimTime::from_secs(90), "{last_gone:?}");
    assert!(
        new.iter().all(|t| *t >= last_gone),
        "{new:?} vs {last_gone:?}"
    );
}
