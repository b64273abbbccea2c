//! Workload controllers in virtual time: ReplicaSet, Deployment, DaemonSet and Job, each a model
//! of the upstream controller's observable behaviour (which pods exist, named how, when).
//!
//! A controller reacts to a change (its object created or updated, one of its pods gone, a node
//! added) after the reaction delay `EngineConfig::controller_delay` (default 1 s, about what a
//! real controller manager's informer + work queue + API round trip takes). Changes within the
//! delay coalesce into one reconcile, as upstream's work queue does.
//!
//! Names are formed as upstream forms them: `<rs>-<5 chars>` from the seeded RNG (upstream's
//! `utilrand.String` alphabet), a Deployment's ReplicaSet `<deploy>-<template hash>`, a
//! DaemonSet's pods `<ds>-<5 chars>`, a Job's pods `<job>-<5 chars>`.
//!
//! Simplified compared with the real controllers (documented in the README):
//! - ReplicaSet scale-down picks victims pending before scheduled, then the newest first
//!   (upstream's full `ActivePods` ranking also compares readiness, restarts and co-location).
//! - A Deployment's template change replaces the old pods at once (the `Recreate` strategy);
//!   `RollingUpdate`'s `maxSurge` / `maxUnavailable` pacing is not modelled yet.
//! - Job pods run for the template annotation `ksim.io/run-for` (a Go duration); without it they
//!   run until deleted and the Job never completes. Only pods that fail (node lost) count
//!   against `backoffLimit`; deleted or preempted pods are replaced without counting.
//! - StatefulSets are not run yet (their pods are not created).
//! - Every controller's pods carry an `ownerReference` with `controller: true`; a pod lost with
//!   its node is replaced by its controller, not by the engine's generic re-creation.

use std::collections::{BTreeMap, BTreeSet};

use ksim_api::meta::OwnerReference;
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::workloads::Workload;
use ksim_api::{Pod, Toleration};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{Ev, PodPhase, SimError, Simulation};
use crate::record::{Observer, Outcome};
use crate::time::{SimDuration, SimTime};

/// Upstream's `utilrand` alphabet (no vowels, no confusable digits).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The annotation a Job's (or any controller's) pod template gives its pods' run time.
pub const RUN_FOR_ANNOTATION: &str = "ksim.io/run-for";

/// One controller's object and what it has done.
#[derive(Debug, Clone)]
pub(crate) struct Controller {
    pub kind: ObjectKind,
    pub obj: Workload,
    /// Live pods it owns, by key, with the order they were created in.
    pub pods: BTreeMap<String, u64>,
    /// The template hash of a Deployment's current ReplicaSet.
    pub hash: String,
    pub created: u64,
    pub replaced: u64,
    /// Job: pods succeeded and failed.
    pub succeeded: i32,
    pub failed: i32,
    /// Job: completed (or failed for good) and creates nothing more.
    pub finished: bool,
}

/// The controllers' state (`Simulation::controllers`).
#[derive(Debug)]
pub(crate) struct State {
    /// Controllers by `Kind/namespace/name`.
    pub ctls: BTreeMap<String, Controller>,
    /// Owning controller of each live controller-created pod.
    pub owner_of: BTreeMap<String, String>,
    /// Controllers with a reconcile in the heap.
    pub pending: BTreeSet<String>,
    pub rng: ChaCha8Rng,
    pub seq: u64,
}

impl State {
    pub fn new(seed: u64) -> State {
        State {
            ctls: BTreeMap::new(),
            owner_of: BTreeMap::new(),
            pending: BTreeSet::new(),
            rng: super::rng_stream(seed, 7),
            seq: 0,
        }
    }

    fn suffix(&mut self) -> String {
        (0..5)
            .map(|_| ALPHABET[self.rng.random_range(0..ALPHABET.len())] as char)
            .collect()
    }
}

fn ctl_key(kind: ObjectKind, ns: &str, name: &str) -> String {
    format!("{kind}/{ns}/{name}")
}

/// A stable hash of a pod template, written as upstream writes `pod-template-hash` (a short
/// string of the safe alphabet).
fn template_hash(w: &Workload) -> String {
    let text = serde_json::to_string(&w.spec.template).unwrap_or_default();
    // FNV-1a: stable across runs and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (0..10)
        .map(|_| {
            let c = ALPHABET[(h % ALPHABET.len() as u64) as usize] as char;
            h /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// Splits a workload [`ApiObject`] into its kind and object.
pub(crate) fn as_workload(obj: Box<ApiObject>) -> Result<(ObjectKind, Workload), Box<ApiObject>> {
    match *obj {
        ApiObject::Deployment(w) => Ok((ObjectKind::Deployment, w)),
        ApiObject::ReplicaSet(w) => Ok((ObjectKind::ReplicaSet, w)),
        ApiObject::StatefulSet(w) => Ok((ObjectKind::StatefulSet, w)),
        ApiObject::DaemonSet(w) => Ok((ObjectKind::DaemonSet, w)),
        ApiObject::Job(w) => Ok((ObjectKind::Job, w)),
        other => Err(Box::new(other)),
    }
}

impl Simulation {
    /// `CreateObject` of a workload.
    pub(super) fn create_workload(
        &mut self,
        kind: ObjectKind,
        mut w: Workload,
    ) -> Result<(), SimError> {
        if w.metadata.namespace.is_empty() {
            w.metadata.namespace = "default".into();
        }
        let key = ctl_key(kind, &w.metadata.namespace, &w.metadata.name);
        if self.controllers.ctls.contains_key(&key) {
            return Err(self.input_err(format!(
                "CreateObject: {kind} {}/{} already exists",
                w.metadata.namespace, w.metadata.name
            )));
        }
        if w.metadata.uid.is_empty() {
            w.metadata.uid = format!("{}-{}-uid", kind.as_str().to_lowercase(), key.len());
        }
        let hash = template_hash(&w);
        self.controllers.ctls.insert(
            key.clone(),
            Controller {
                kind,
                obj: w,
                pods: BTreeMap::new(),
                hash,
                created: 0,
                replaced: 0,
                succeeded: 0,
                failed: 0,
                finished: false,
            },
        );
        self.queue_reconcile(&key);
        Ok(())
    }

    /// `UpdateObject` of a workload: a new spec (scale, template change).
    pub(super) fn update_workload(
        &mut self,
        kind: ObjectKind,
        mut w: Workload,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        if w.metadata.namespace.is_empty() {
            w.metadata.namespace = "default".into();
        }
        let key = ctl_key(kind, &w.metadata.namespace, &w.metadata.name);
        let Some(c) = self.controllers.ctls.get_mut(&key) else {
            return Err(self.input_err(format!(
                "UpdateObject: {kind} {}/{} does not exist",
                w.metadata.namespace, w.metadata.name
            )));
        };
        w.metadata.uid = c.obj.metadata.uid.clone();
        let hash = template_hash(&w);
        let changed = hash != c.hash;
        c.obj = w;
        c.hash = hash;
        if changed && kind == ObjectKind::Deployment {
            // Recreate (see the module docs): the old ReplicaSet's pods go now, the new ones
            // come at the reconcile.
            let old: Vec<String> = c.pods.keys().cloned().collect();
            for p in old {
                self.delete_owned_pod(&p, obs);
            }
        }
        self.queue_reconcile(&key);
        Ok(())
    }

    /// `DeleteObject` of a workload: its pods are deleted with it (foreground cascading, at
    /// once).
    pub(super) fn delete_workload(
        &mut self,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        let ns = if namespace.is_empty() {
            "default"
        } else {
            namespace
        };
        let key = ctl_key(kind, ns, name);
        let Some(c) = self.controllers.ctls.remove(&key) else {
            return Err(self.input_err(format!("DeleteObject: {kind} {ns}/{name} does not exist")));
        };
        for p in c.pods.keys() {
            self.delete_owned_pod(p, obs);
        }
        Ok(())
    }

    fn delete_owned_pod(&mut self, pod: &str, obs: &mut dyn Observer) {
        if let Some(owner) = self.controllers.owner_of.remove(pod) {
            if let Some(c) = self.controllers.ctls.get_mut(&owner) {
                c.pods.remove(pod);
            }
        }
        self.delete_pod(pod, Outcome::Deleted, "controller", obs);
    }

    fn queue_reconcile(&mut self, key: &str) {
        if self.controllers.pending.insert(key.to_string()) {
            let at = self.now + self.cfg.controller_delay();
            self.schedule(at, 0, Ev::Reconcile(key.to_string()));
        }
    }

    /// A pod ended or was lost with its node: its controller (if any) reacts.
    pub(super) fn controller_pod_gone(&mut self, pod: &str, outcome: Outcome) {
        if self.controllers.owner_of.is_empty() {
            return;
        }
        let Some(owner) = self.controllers.owner_of.remove(pod) else {
            return;
        };
        if let Some(c) = self.controllers.ctls.get_mut(&owner) {
            c.pods.remove(pod);
            match outcome {
                Outcome::Succeeded => c.succeeded += 1,
                Outcome::Failed => {
                    c.failed += 1;
                    c.replaced += 1;
                }
                _ => c.replaced += 1,
            }
            self.queue_reconcile(&owner);
        }
    }

    /// Whether a pod is owned by a modelled controller (which replaces it itself).
    pub(super) fn controller_owns(&self, pod: &str) -> bool {
        self.controllers.owner_of.contains_key(pod)
    }

    /// A node was added: DaemonSets react.
    pub(super) fn controllers_node_added(&mut self) {
        let ds: Vec<String> = self
            .controllers
            .ctls
            .iter()
            .filter(|(_, c)| c.kind == ObjectKind::DaemonSet)
            .map(|(k, _)| k.clone())
            .collect();
        for k in ds {
            self.queue_reconcile(&k);
        }
    }

    /// The delayed reconcile of one controller.
    pub(super) fn reconcile(&mut self, key: &str, obs: &mut dyn Observer) {
        self.controllers.pending.remove(key);
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        match c.kind {
            ObjectKind::ReplicaSet | ObjectKind::Deployment => {
                let want = c.obj.replicas().max(0) as usize;
                self.scale_to(key, want, obs);
            }
            ObjectKind::Job => self.reconcile_job(key, obs),
            ObjectKind::DaemonSet => self.reconcile_daemonset(key, obs),
            _ => {}
        }
    }

    /// ReplicaSet semantics: create or delete pods until `want` live pods.
    fn scale_to(&mut self, key: &str, want: usize, obs: &mut dyn Observer) {
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let have = c.pods.len();
        if have < want {
            for _ in have..want {
                self.create_owned_pod(key, None, obs);
            }
        } else if have > want {
            // Victims: pending before scheduled, then the newest first.
            let mut ranked: Vec<(bool, std::cmp::Reverse<u64>, String)> = c
                .pods
                .iter()
                .map(|(p, seq)| {
                    let scheduled = self.live.get(p).is_some_and(|&id| {
                        matches!(
                            self.pods[id as usize].phase,
                            PodPhase::Binding | PodPhase::Bound
                        )
                    });
                    (scheduled, std::cmp::Reverse(*seq), p.clone())
                })
                .collect();
            ranked.sort();
            for (_, _, p) in ranked.into_iter().take(have - want) {
                self.delete_owned_pod(&p, obs);
            }
        }
    }

    fn reconcile_job(&mut self, key: &str, obs: &mut dyn Observer) {
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        if c.finished {
            return;
        }
        let parallelism = c.obj.spec.parallelism.unwrap_or(1).max(0);
        let completions = c.obj.spec.completions;
        let backoff = c.obj.spec.backoff_limit.unwrap_or(6);
        if c.failed > backoff
            || completions.is_some_and(|n| c.succeeded >= n)
            || (completions.is_none() && c.succeeded > 0)
        {
            // Complete (or failed for good): the remaining pods are deleted.
            c.finished = true;
            let rest: Vec<String> = c.pods.keys().cloned().collect();
            for p in rest {
                self.delete_owned_pod(&p, obs);
            }
            return;
        }
        let active = c.pods.len() as i32;
        let want = match completions {
            Some(n) => parallelism.min(n - c.succeeded),
            None => parallelism,
        };
        for _ in active..want {
            self.create_owned_pod(key, None, obs);
        }
    }

    fn reconcile_daemonset(&mut self, key: &str, obs: &mut dyn Observer) {
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        // Nodes that already have a pod of this DaemonSet (by the pinned node name).
        let mut covered = BTreeSet::new();
        for p in c.pods.keys() {
            if let Some(&id) = self.live.get(p) {
                if let Some(n) = pinned_node(&self.pods[id as usize].info.pod) {
                    covered.insert(n);
                }
            }
        }
        let template = Pod {
            metadata: c.obj.spec.template.metadata.clone(),
            spec: c.obj.spec.template.spec.clone(),
            ..Default::default()
        };
        let eligible: Vec<String> = self
            .snapshot
            .nodes
            .iter()
            .filter(|n| !covered.contains(n.name()))
            .filter(|n| daemon_fits(&template, &n.node))
            .map(|n| n.name().to_string())
            .collect();
        for n in eligible {
            self.create_owned_pod(key, Some(&n), obs);
        }
    }

    /// Creates one pod of a controller from its template.
    fn create_owned_pod(&mut self, key: &str, node: Option<&str>, obs: &mut dyn Observer) {
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let w = &c.obj;
        let (owner_kind, owner_name, prefix) = match c.kind {
            ObjectKind::Deployment => {
                let rs = format!("{}-{}", w.metadata.name, c.hash);
                (ObjectKind::ReplicaSet, rs.clone(), rs)
            }
            k => (k, w.metadata.name.clone(), w.metadata.name.clone()),
        };
        let mut pod = Pod {
            metadata: w.spec.template.metadata.clone(),
            spec: w.spec.template.spec.clone(),
            ..Default::default()
        };
        pod.metadata.namespace = w.metadata.namespace.clone();
        pod.metadata.generate_name = format!("{prefix}-");
        if c.kind == ObjectKind::Deployment {
            pod.metadata
                .labels
                .insert("pod-template-hash".into(), c.hash.clone());
        }
        pod.metadata.owner_references = vec![OwnerReference {
            api_version: owner_kind.api_version().into(),
            kind: owner_kind.as_str().into(),
            name: owner_name,
            uid: w.metadata.uid.clone(),
            controller: Some(true),
        }];
        let run_for = w
            .spec
            .template
            .metadata
            .annotations
            .get(RUN_FOR_ANNOTATION)
            .and_then(|s| SimDuration::parse(s).ok());
        if let Some(n) = node {
            pin_to_node(&mut pod, n);
        }
        let ns = pod.metadata.namespace.clone();
        // A fresh name; a clash with a live pod draws again, as the API server's generateName
        // retry does.
        for _ in 0..16 {
            let name = format!("{prefix}-{}", self.controllers.suffix());
            if !self.live.contains_key(&format!("{ns}/{name}")) {
                pod.metadata.name = name;
                break;
            }
        }
        let pod_key = format!("{ns}/{}", pod.metadata.name);
        self.controllers.seq += 1;
        let seq = self.controllers.seq;
        if self.create_pod(pod, run_for, obs).is_ok() {
            if let Some(c) = self.controllers.ctls.get_mut(key) {
                c.pods.insert(pod_key.clone(), seq);
                c.created += 1;
            }
            self.controllers.owner_of.insert(pod_key, key.to_string());
        }
    }

    /// The controllers, for reports: (kind, namespace/name, desired, live pods, created,
    /// replaced).
    pub fn controller_summaries(&self) -> Vec<(String, String, i64, usize, u64, u64)> {
        self.controllers
            .ctls
            .values()
            .map(|c| {
                let desired = match c.kind {
                    ObjectKind::Job => i64::from(c.obj.spec.completions.unwrap_or(1)),
                    ObjectKind::DaemonSet => -1,
                    _ => i64::from(c.obj.replicas()),
                };
                (
                    c.kind.as_str().to_string(),
                    format!("{}/{}", c.obj.metadata.namespace, c.obj.metadata.name),
                    desired,
                    c.pods.len(),
                    c.created,
                    c.replaced,
                )
            })
            .collect()
    }

    /// The time at which the controller reaction delay ends from now (tests).
    pub fn controller_reaction_at(&self) -> SimTime {
        self.now + self.cfg.controller_delay()
    }
}

/// The node a DaemonSet pod is pinned to by its required node affinity on `metadata.name`.
fn pinned_node(pod: &Pod) -> Option<String> {
    let aff = pod.spec.affinity.as_ref()?.node_affinity.as_ref()?;
    let req = aff.required.as_ref()?;
    req.node_selector_terms
        .iter()
        .flat_map(|t| t.match_fields.iter())
        .find(|f| f.key == "metadata.name" && f.operator == "In")
        .and_then(|f| f.values.first().cloned())
}

/// Pins a pod to a node as upstream's DaemonSet controller does: a required node affinity term
/// matching the field `metadata.name` (replacing any `matchFields` of the template's terms),
/// and the tolerations the controller adds.
fn pin_to_node(pod: &mut Pod, node: &str) {
    use ksim_api::{Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement};
    let field = NodeSelectorRequirement {
        key: "metadata.name".into(),
        operator: "In".into(),
        values: vec![node.to_string()],
    };
    let aff = pod.spec.affinity.get_or_insert_with(Affinity::default);
    let na = aff.node_affinity.get_or_insert_with(NodeAffinity::default);
    let req = na.required.get_or_insert_with(NodeSelector::default);
    if req.node_selector_terms.is_empty() {
        req.node_selector_terms.push(Default::default());
    }
    for t in &mut req.node_selector_terms {
        t.match_fields = vec![field.clone()];
    }
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ] {
        if !pod
            .spec
            .tolerations
            .iter()
            .any(|t| t.key == key && t.effect == effect)
        {
            pod.spec.tolerations.push(Toleration {
                key: key.into(),
                operator: "Exists".into(),
                effect: effect.into(),
                ..Default::default()
            });
        }
    }
}

/// Whether a DaemonSet pod belongs on a node: the template's node selector matches and the
/// node's NoSchedule/NoExecute taints are tolerated (upstream's `NodeShouldRunDaemonPod`,
/// without the resource check: an over-full node gets its pod, which stays pending).
fn daemon_fits(pod: &Pod, node: &ksim_api::Node) -> bool {
    let labels = &node.metadata.labels;
    if !pod
        .spec
        .node_selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    node.spec.taints.iter().all(|t| {
        t.effect == "PreferNoSchedule" || pod.spec.tolerations.iter().any(|tol| tol.tolerates(t))
    })
}
