//! Indexes over the pods bound in a [`Snapshot`](crate::node_info::Snapshot), so that the
//! affinity and spreading plugins look at the pods a selector can select instead of every pod
//! of the cluster.
//!
//! - [`PodIndex::pods_by_label`]: bound pods by label `(key, value)`.
//! - [`PodIndex::terms`]: the pod-affinity terms of bound pods, filed under the first `In`
//!   requirement of their label selector (one key, its values), or in a list of their own when
//!   the selector has no `In` requirement.
//!
//! Both only narrow the candidates: whoever asks still matches the selector (and namespaces)
//! exactly, so a result computed from the candidates is the result over all pods. Sums and
//! "any" are all the plugins compute from them, so the order of candidates does not matter; it
//! is deterministic all the same (insertion order).
//!
//! Entries carry the node's index in `Snapshot::nodes`; the snapshot rebuilds the index when
//! node indices change (a node added, removed or moved to another zone).

use std::sync::Arc;

use indexmap::IndexMap;
use ksim_api::meta::SelectorOp;
use ksim_api::{Labels, Selector};
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::pod_info::{AffinityTerm, PodInfo};

/// Bound pods keyed by the address of their `PodInfo` (UIDs need not be unique in hand-written
/// inputs; an `Arc` in the snapshot is), with their node index, in insertion order.
type PodSet = IndexMap<usize, (u32, Arc<PodInfo>), FxBuildHasher>;

fn key_of(p: &PodInfo) -> usize {
    p as *const PodInfo as usize
}

/// The four kinds of pod-affinity terms a pod can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermKind {
    RequiredAffinity,
    RequiredAntiAffinity,
    PreferredAffinity,
    PreferredAntiAffinity,
}

impl TermKind {
    const ALL: [TermKind; 4] = [
        TermKind::RequiredAffinity,
        TermKind::RequiredAntiAffinity,
        TermKind::PreferredAffinity,
        TermKind::PreferredAntiAffinity,
    ];

    fn slot(self) -> usize {
        self as usize
    }

    /// The pod's terms of this kind, with their weights (0 for required terms).
    fn terms(self, p: &PodInfo) -> impl Iterator<Item = (&AffinityTerm, i32)> {
        let (req, pref) = match self {
            TermKind::RequiredAffinity => (&p.required_affinity[..], &[][..]),
            TermKind::RequiredAntiAffinity => (&p.required_anti_affinity[..], &[][..]),
            TermKind::PreferredAffinity => (&[][..], &p.preferred_affinity[..]),
            TermKind::PreferredAntiAffinity => (&[][..], &p.preferred_anti_affinity[..]),
        };
        req.iter()
            .map(|t| (t, 0))
            .chain(pref.iter().map(|w| (&w.term, w.weight)))
    }
}

/// One term of a bound pod: the pod, its node and the term's position among the pod's terms of
/// its kind.
#[derive(Debug, Clone)]
pub struct TermRef {
    pub node: u32,
    pub pod: Arc<PodInfo>,
    pub index: usize,
}

/// Terms keyed by (pod address, position).
type TermSet = IndexMap<(usize, usize), TermRef, FxBuildHasher>;

/// The terms of one kind.
#[derive(Debug, Clone, Default)]
struct TermIndex {
    /// Label key → label value → terms whose first `In` requirement is on that key and lists
    /// that value.
    by_label: FxHashMap<String, FxHashMap<String, TermSet>>,
    /// Terms whose selector has no `In` requirement (they may select anything).
    other: TermSet,
}

/// The first `In` requirement of a selector, with its values deduplicated; `Err(())` when the
/// selector selects nothing, `Ok(None)` when it has no `In` requirement.
fn first_in(selector: &Selector) -> Result<Option<(&str, Vec<&str>)>, ()> {
    match selector {
        Selector::Nothing => Err(()),
        Selector::Requirements(reqs) => Ok(reqs.iter().find(|r| r.op == SelectorOp::In).map(|r| {
            let mut values: Vec<&str> = r.values.iter().map(String::as_str).collect();
            values.sort_unstable();
            values.dedup();
            (r.key.as_str(), values)
        })),
    }
}

/// The snapshot's pod indexes.
#[derive(Debug, Clone, Default)]
pub struct PodIndex {
    /// Label key → label value → pods.
    pods_by_label: FxHashMap<String, FxHashMap<String, PodSet>>,
    /// Every bound pod.
    all: PodSet,
    terms: [TermIndex; 4],
}

impl PodIndex {
    /// Adds a pod bound to node `node`.
    pub fn add(&mut self, node: usize, pod: &Arc<PodInfo>) {
        let node = node as u32;
        let uid = key_of(pod);
        for (k, v) in pod.labels() {
            // Look up before inserting: the key and value strings are cloned only when new.
            if !self.pods_by_label.contains_key(k.as_str()) {
                self.pods_by_label.insert(k.clone(), FxHashMap::default());
            }
            let Some(by_value) = self.pods_by_label.get_mut(k.as_str()) else {
                continue;
            };
            if !by_value.contains_key(v.as_str()) {
                by_value.insert(v.clone(), PodSet::default());
            }
            if let Some(set) = by_value.get_mut(v.as_str()) {
                set.insert(uid, (node, pod.clone()));
            }
        }
        self.all.insert(uid, (node, pod.clone()));
        if !pod.has_affinity() {
            return;
        }
        for kind in TermKind::ALL {
            let idx = &mut self.terms[kind.slot()];
            for (i, (t, _)) in kind.terms(pod).enumerate() {
                let r = TermRef {
                    node,
                    pod: pod.clone(),
                    index: i,
                };
                match first_in(&t.selector) {
                    Err(()) => {}
                    Ok(None) => {
                        idx.other.insert((uid, i), r);
                    }
                    Ok(Some((key, values))) => {
                        let by_value = idx.by_label.entry(key.to_string()).or_default();
                        for v in values {
                            by_value
                                .entry(v.to_string())
                                .or_default()
                                .insert((uid, i), r.clone());
                        }
                    }
                }
            }
        }
    }

    /// Removes a pod (the same `PodInfo` that was added).
    pub fn remove(&mut self, pod: &PodInfo) {
        let uid = key_of(pod);
        for (k, v) in pod.labels() {
            if let Some(by_value) = self.pods_by_label.get_mut(k) {
                if let Some(set) = by_value.get_mut(v) {
                    set.swap_remove(&uid);
                    if set.is_empty() {
                        by_value.remove(v);
                    }
                }
                if by_value.is_empty() {
                    self.pods_by_label.remove(k);
                }
            }
        }
        self.all.swap_remove(&uid);
        if !pod.has_affinity() {
            return;
        }
        for kind in TermKind::ALL {
            let idx = &mut self.terms[kind.slot()];
            for (i, (t, _)) in kind.terms(pod).enumerate() {
                let key = (uid, i);
                match first_in(&t.selector) {
                    Err(()) => {}
                    Ok(None) => {
                        idx.other.swap_remove(&key);
                    }
                    Ok(Some((label, values))) => {
                        if let Some(by_value) = idx.by_label.get_mut(label) {
                            for v in values {
                                if let Some(set) = by_value.get_mut(v) {
                                    set.swap_remove(&key);
                                    if set.is_empty() {
                                        by_value.remove(v);
                                    }
                                }
                            }
                            if by_value.is_empty() {
                                idx.by_label.remove(label);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Calls `f(node, pod)` for every bound pod that `selector` may select: the pods carrying
    /// a value of its first `In` requirement, or every pod when it has none. A superset of the
    /// selected pods; nothing for a selector that selects nothing.
    pub fn for_each_candidate(&self, selector: &Selector, mut f: impl FnMut(usize, &Arc<PodInfo>)) {
        match first_in(selector) {
            Err(()) => {}
            Ok(None) => {
                for (node, p) in self.all.values() {
                    f(*node as usize, p);
                }
            }
            Ok(Some((key, values))) => {
                let Some(by_value) = self.pods_by_label.get(key) else {
                    return;
                };
                for v in values {
                    if let Some(set) = by_value.get(v) {
                        for (node, p) in set.values() {
                            f(*node as usize, p);
                        }
                    }
                }
            }
        }
    }

    /// Calls `f(node, pod, term, weight)` for every term of `kind` of a bound pod that may
    /// select a pod labelled `labels` (weight 0 for required terms): a superset of the terms
    /// whose selector matches `labels`.
    pub fn for_each_term_candidate(
        &self,
        kind: TermKind,
        labels: &Labels,
        mut f: impl FnMut(usize, &Arc<PodInfo>, &AffinityTerm, i32),
    ) {
        let idx = &self.terms[kind.slot()];
        let mut call = |r: &TermRef| {
            if let Some((t, w)) = kind.terms(&r.pod).nth(r.index) {
                f(r.node as usize, &r.pod, t, w);
            }
        };
        if !idx.by_label.is_empty() {
            for (k, v) in labels {
                if let Some(set) = idx.by_label.get(k).and_then(|m| m.get(v)) {
                    set.values().for_each(&mut call);
                }
            }
        }
        idx.other.values().for_each(&mut call);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_api::Pod;

    fn pod(name: &str, labels: &[(&str, &str)], anti_app: Option<&str>) -> Arc<PodInfo> {
        let mut p = Pod::default();
        p.metadata.name = name.into();
        p.metadata.namespace = "default".into();
        p.metadata.uid = name.into();
        p.metadata.labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if let Some(app) = anti_app {
            let term: ksim_api::PodAffinityTerm = serde_json::from_value(serde_json::json!({
                "labelSelector": {"matchExpressions": [
                    {"key": "tier", "operator": "Exists"},
                    {"key": "app", "operator": "In", "values": [app, app, "other"]}]},
                "topologyKey": "kubernetes.io/hostname"
            }))
            .unwrap();
            p.spec.affinity = Some(ksim_api::Affinity {
                pod_anti_affinity: Some(ksim_api::PodAffinity {
                    required: vec![term],
                    preferred: vec![],
                }),
                ..Default::default()
            });
        }
        PodInfo::arc(p)
    }

    fn candidates(ix: &PodIndex, sel: &Selector) -> Vec<String> {
        let mut v = Vec::new();
        ix.for_each_candidate(sel, |n, p| v.push(format!("{n}:{}", p.name())));
        v.sort();
        v
    }

    #[test]
    fn pods_by_label_narrow_and_fall_back() {
        let mut ix = PodIndex::default();
        let a = pod("a", &[("app", "x")], None);
        ix.add(0, &a);
        ix.add(1, &pod("b", &[("app", "y")], None));
        ix.add(1, &pod("c", &[("tier", "t")], None));
        let sel = |json: serde_json::Value| {
            Selector::from_label_selector(Some(&serde_json::from_value(json).unwrap()))
        };
        assert_eq!(
            candidates(&ix, &sel(serde_json::json!({"matchLabels": {"app": "x"}}))),
            vec!["0:a"]
        );
        // No In requirement: every pod.
        assert_eq!(
            candidates(
                &ix,
                &sel(
                    serde_json::json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]})
                )
            ),
            vec!["0:a", "1:b", "1:c"]
        );
        assert!(candidates(&ix, &Selector::Nothing).is_empty());
        ix.remove(&a);
        assert!(candidates(&ix, &sel(serde_json::json!({"matchLabels": {"app": "x"}}))).is_empty());
    }

    #[test]
    fn terms_are_found_once_by_an_in_value() {
        let mut ix = PodIndex::default();
        let holder = pod("h", &[], Some("x"));
        ix.add(3, &holder);
        let labels: Labels = [("app".to_string(), "x".to_string())].into();
        let mut found = Vec::new();
        ix.for_each_term_candidate(TermKind::RequiredAntiAffinity, &labels, |n, p, t, _| {
            found.push((n, p.name().to_string(), t.topology_key.clone()))
        });
        assert_eq!(
            found,
            vec![(3, "h".into(), "kubernetes.io/hostname".into())]
        );
        let other: Labels = [("app".to_string(), "z".to_string())].into();
        let mut n = 0;
        ix.for_each_term_candidate(TermKind::RequiredAntiAffinity, &other, |_, _, _, _| n += 1);
        assert_eq!(n, 0);
        ix.remove(&holder);
        ix.for_each_term_candidate(TermKind::RequiredAntiAffinity, &labels, |_, _, _, _| n += 1);
        assert_eq!(n, 0);
    }
}
