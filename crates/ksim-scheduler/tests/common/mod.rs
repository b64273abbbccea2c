//! Kubernetes JSON pieces shared by the property tests that build random nodes and pods.
// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use serde_json::{json, Value};

/// Taint effects by index.
pub const EFFECTS: [&str; 3] = ["NoSchedule", "NoExecute", "PreferNoSchedule"];

/// Taints `k<key>=v:<effect>` from (key index, effect index) pairs.
pub fn taints(pairs: &[(usize, usize)]) -> Vec<Value> {
    pairs
        .iter()
        .map(|&(k, e)| json!({"key": format!("k{k}"), "value": "v", "effect": EFFECTS[e]}))
        .collect()
}

/// Tolerations from (key index or any key, effect index or any effect) pairs: `k<key>=v`
/// with operator Equal, or Exists for any key.
pub fn tolerations(pairs: &[(Option<usize>, Option<usize>)]) -> Vec<Value> {
    pairs
        .iter()
        .map(|&(k, e)| {
            let mut t = match k {
                Some(k) => json!({"key": format!("k{k}"), "operator": "Equal", "value": "v"}),
                None => json!({"operator": "Exists"}),
            };
            if let Some(e) = e {
                t["effect"] = json!(EFFECTS[e]);
            }
            t
        })
        .collect()
}

/// Gives the pod JSON `v` required pod affinity and/or anti-affinity to pods labelled
/// `app=a` on the same host, and a host port on its first container.
pub fn with_terms_and_port(v: &mut Value, aff: bool, anti: bool, port: Option<u16>) {
    let term = json!([{"labelSelector": {"matchLabels": {"app": "a"}},
                       "topologyKey": "kubernetes.io/hostname"}]);
    if aff {
        v["spec"]["affinity"]["podAffinity"] =
            json!({"requiredDuringSchedulingIgnoredDuringExecution": term.clone()});
    }
    if anti {
        v["spec"]["affinity"]["podAntiAffinity"] =
            json!({"requiredDuringSchedulingIgnoredDuringExecution": term});
    }
    if let Some(p) = port {
        v["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": p}]);
    }
}
