//! Kubernetes JSON pieces shared by the property tests that build random nodes and pods.

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
