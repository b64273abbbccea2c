//! Workload controllers in virtual time: ReplicaSet, Deployment, StatefulSet, DaemonSet and Job,
//! each a model of the upstream controller's observable behaviour (which pods exist, named how,
//! when). One module per controller; this one holds what they share: the controllers' state,
//! object create/update/delete, the reaction-delay queue, the pod hooks and pod creation.
//!
//! A controller reacts to a change (its object created or updated, one of its pods gone, started
//! or available, a node added) after the reaction delay `EngineConfig::controller_delay()` (the
//! timing model's informer delay plus reconcile, 10 ms by default; or the scenario's flat
//! `controllerDelay`), and its pod calls are rate limited as upstream's clients are: see
//! [`timing`]. Changes due at the same instant coalesce into one reconcile, as upstream's work
//! queue does.
//!
//! A pod is *running* (upstream: running and ready) once it is bound and started: the bind plus
//! the `podStartup` cost; it is *available* `minReadySeconds` after that.
//!
//! Names are formed as upstream forms them: `<rs>-<5 chars>` from the seeded RNG (upstream's
//! `utilrand.String` alphabet), a Deployment's ReplicaSet `<deploy>-<template hash>`, a
//! StatefulSet's pods `<sts>-<ordinal>`, a DaemonSet's pods `<ds>-<5 chars>`, a Job's pods
//! `<job>-<5 chars>`. A generated name's prefix `<owner>-` is cut to 58 characters first
//! (upstream `names.SimpleNameGenerator.GenerateName`, `MaxGeneratedNameLength` = 63 − 5), so
//! a generated pod name is never longer than 63 characters.
//!
//! Simplifications are listed in each controller's module and in the README. Common to all:
//! every controller's pods carry an `ownerReference` with `controller: true`; a pod lost with its
//! node is replaced by its controller, not by the engine's generic re-creation; a controller's
//! deletions are graceful (each pod keeps its node for its `terminationGracePeriodSeconds`)
//! and take a token from its client, as its creations do.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ksim_api::meta::OwnerReference;
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::workloads::{PodTemplateSpec, Workload};
use ksim_api::Pod;
use ksim_scheduler::pod_info::PodInfo;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{Ev, PodId, PodPhase, SimError, Simulation};
use crate::record::{Observer, Outcome, Record};
use crate::time::{SimDuration, SimTime};

mod adopt;
mod cronjob;
mod daemonset;
mod deployment;
mod dump;
mod job;
mod priorityclass;
mod rank;
mod replicaset;
mod scale;
mod statefulset;
mod timing;

pub(crate) use timing::Bucket;

/// Upstream's `utilrand` alphabet (no vowels, no confusable digits).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The annotation a Job's (or any controller's) pod template gives its pods' run time.
pub const RUN_FOR_ANNOTATION: &str = "ksim.io/run-for";

/// The annotation that makes a pod's containers exit with this code when its run time is
/// over: a non-zero code ends the pod `Failed` (what a Job's `podFailurePolicy` reads).
pub const EXIT_CODE_ANNOTATION: &str = "ksim.io/exit-code";

/// One live pod a controller owns.
#[derive(Debug, Clone)]
pub(crate) struct Owned {
    /// Creation order among all controllers' pods (scale-down ranks newer first).
    pub seq: u64,
    /// Deployment: the template hash of the ReplicaSet the pod belongs to.
    pub hash: String,
    /// StatefulSet: the pod's ordinal.
    pub ordinal: Option<i32>,
    /// When the pod is (or will be) running: bound and started.
    pub ready_at: Option<SimTime>,
    /// When the controller created it (`creationTimestamp`).
    pub created_at: SimTime,
    /// StatefulSet: the pod is terminating (its replacement has its name, so the controller
    /// keeps it until it is gone and waits for it, as upstream's does).
    pub terminating: bool,
}

impl Owned {
    /// Whether the pod is available at `now`: running (bound and started) for `min_ready`,
    /// and not terminating.
    fn available(&self, now: SimTime, min_ready: SimDuration) -> bool {
        !self.terminating && self.ready_at.is_some_and(|t| t + min_ready <= now)
    }
}

/// A Deployment's ReplicaSet: its desired replicas and its pod template.
#[derive(Debug, Clone)]
pub(crate) struct OwnedRs {
    pub replicas: i32,
    pub template: PodTemplateSpec,
    /// Creation order (old ReplicaSets are scaled down oldest first).
    pub order: u64,
    /// Deployment: the annotations `deployment.kubernetes.io/desired-replicas` and
    /// `max-replicas` as the Deployment controller last wrote them (`SetReplicasAnnotations`).
    pub annotated: Option<(i32, i32)>,
}

/// One controller's object and what it has done.
#[derive(Debug, Clone)]
pub(crate) struct Controller {
    pub kind: ObjectKind,
    pub obj: Workload,
    /// Live pods it owns, by key.
    pub pods: BTreeMap<String, Owned>,
    /// The template hash of the current template (a Deployment's new ReplicaSet).
    pub hash: String,
    /// Deployment: its ReplicaSets by template hash.
    pub rs: BTreeMap<String, OwnedRs>,
    pub created: u64,
    pub replaced: u64,
    /// Job: pods succeeded and failed.
    pub succeeded: i32,
    pub failed: i32,
    /// Job: completed (or failed for good) and creates nothing more.
    pub finished: bool,
    /// The desired pod count as the controller last computed it (a DaemonSet's eligible nodes).
    pub desired: i64,
    /// Report: when the object was last created or changed, when all its desired pods were
    /// first running since then, and the most pods short of desired once they had been.
    pub changed_at: SimTime,
    pub all_ready_at: Option<SimTime>,
    pub max_unavailable: i64,
    pub finished_at: Option<SimTime>,
    /// Job: its `status.startTime`, the instant its controller first reconciled it (the order
    /// in which a CronJob deletes its oldest finished Jobs).
    pub started_at: Option<SimTime>,
    /// Whether its first reconcile adopted the orphans naming it (`adopt`).
    pub adopted: bool,
    /// Its replica factor (`ControllerScale`), fixed at creation; applied to every spec it
    /// is given.
    pub scale: f64,
    /// StatefulSet: the current revision (`status.currentRevision`, a template hash in `rs`).
    pub revision: String,
}

/// The controllers' state (`Simulation::controllers`).
#[derive(Debug, Clone)]
pub(crate) struct State {
    /// Controllers by `Kind/namespace/name`.
    pub ctls: BTreeMap<String, Controller>,
    /// Owning controller of each live controller-created pod.
    pub owner_of: BTreeMap<String, String>,
    /// Reconciles in the heap, by controller key and time.
    pub pending: BTreeSet<(String, SimTime)>,
    pub rng: ChaCha8Rng,
    pub seq: u64,
    /// PriorityClass objects by name (the built-ins are not stored: see `priorityclass`).
    pub classes: BTreeMap<String, ksim_api::PriorityClass>,
    /// CronJobs' schedule state, by controller key.
    pub cron: BTreeMap<String, cronjob::CronState>,
    /// Jobs' state beyond the counts (backoff, indexes, conditions), by controller key.
    pub jobs: BTreeMap<String, job::JobState>,
    /// Terminating pods a Job waits for before its terminal condition: pod key to Job key.
    pub job_terminating: BTreeMap<String, String>,
    /// The timing model's syncs and client buckets.
    pub timing: timing::Timing,
    /// Draws of `controllerRunTimes`.
    pub run_rng: ChaCha8Rng,
}

impl State {
    pub fn new(seed: u64) -> State {
        State {
            ctls: BTreeMap::new(),
            owner_of: BTreeMap::new(),
            pending: BTreeSet::new(),
            rng: super::rng_stream(seed, 7),
            seq: 0,
            classes: BTreeMap::new(),
            cron: BTreeMap::new(),
            jobs: BTreeMap::new(),
            job_terminating: BTreeMap::new(),
            timing: timing::Timing::default(),
            run_rng: super::rng_stream(seed, 11),
        }
    }

    fn suffix(&mut self) -> String {
        (0..5)
            .map(|_| ALPHABET[self.rng.random_range(0..ALPHABET.len())] as char)
            .collect()
    }
}

/// Upstream's `names.MaxGeneratedNameLength`: a name is at most 63 characters, 5 of them random.
pub(crate) const MAX_GENERATED_NAME_LENGTH: usize = 63 - 5;

/// The part of a `generateName` prefix the API server keeps: upstream's
/// `names.SimpleNameGenerator.GenerateName` cuts it to [`MAX_GENERATED_NAME_LENGTH`] bytes, so
/// a generated name stays within 63 characters. (Names are ASCII; a cut never splits a
/// character.)
pub(crate) fn generated_name_base(prefix: &str) -> &str {
    let mut end = prefix.len().min(MAX_GENERATED_NAME_LENGTH);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    &prefix[..end]
}

fn ctl_key(kind: ObjectKind, ns: &str, name: &str) -> String {
    format!("{kind}/{ns}/{name}")
}

/// A stable hash of a pod template, written as upstream writes `pod-template-hash` (a short
/// string of the safe alphabet).
fn template_hash(t: &PodTemplateSpec) -> String {
    let text = serde_json::to_string(t).unwrap_or_default();
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
        ApiObject::CronJob(w) => Ok((ObjectKind::CronJob, w)),
        other => Err(Box::new(other)),
    }
}

/// What a new pod of a controller is: its template, name and the controller's marks on it.
pub(crate) struct NewPod<'a> {
    pub template: &'a PodTemplateSpec,
    /// The owner written in its `ownerReference` (a Deployment's pods: their ReplicaSet).
    pub owner_kind: ObjectKind,
    pub owner_name: String,
    /// A fixed name (StatefulSet), or `None` for `<prefix>-<5 chars>`, the prefix `<prefix>-`
    /// cut to 58 characters first ([`generated_name_base`]).
    pub name: Option<String>,
    pub prefix: String,
    pub hash: String,
    pub ordinal: Option<i32>,
    /// Changes the controller makes to the pod (labels, pinning, volumes).
    pub edit: &'a dyn Fn(&mut Pod),
}

impl Simulation {
    /// `CreateObject` of a workload.
    pub(super) fn create_workload(
        &mut self,
        kind: ObjectKind,
        w: Workload,
    ) -> Result<(), SimError> {
        self.insert_workload(kind, w, None)
    }

    /// Creates a workload's controller; `fixed_scale` replaces the configured factor (a
    /// CronJob's Jobs, whose template is already scaled).
    fn insert_workload(
        &mut self,
        kind: ObjectKind,
        mut w: Workload,
        fixed_scale: Option<f64>,
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
        if kind == ObjectKind::CronJob && self.cfg.horizon.is_none() {
            return Err(self.input_err(format!(
                "CreateObject: CronJob {}/{}: a CronJob fires forever: give the scenario a \
                 horizon",
                w.metadata.namespace, w.metadata.name
            )));
        }
        let scale = match fixed_scale {
            Some(f) => {
                w.metadata
                    .annotations
                    .remove(crate::config::SCALE_ANNOTATION);
                f
            }
            None => self.scale_of(kind, &mut w)?,
        };
        scale::apply(kind, &mut w.spec, scale);
        if kind == ObjectKind::CronJob {
            self.controllers.cron.insert(
                key.clone(),
                cronjob::CronState {
                    created: self.now,
                    ..Default::default()
                },
            );
        }
        if w.metadata.uid.is_empty() {
            w.metadata.uid = format!("{}-{}-uid", kind.as_str().to_lowercase(), key.len());
        }
        let hash = template_hash(&w.spec.template);
        if matches!(kind, ObjectKind::ReplicaSet | ObjectKind::StatefulSet) {
            self.list_workload_set(
                kind == ObjectKind::StatefulSet,
                &w.metadata.namespace,
                &w.metadata.name,
                w.spec.selector.clone(),
            );
        }
        self.controllers.ctls.insert(
            key.clone(),
            Controller {
                kind,
                obj: w,
                pods: BTreeMap::new(),
                hash,
                rs: BTreeMap::new(),
                created: 0,
                replaced: 0,
                succeeded: 0,
                failed: 0,
                finished: false,
                desired: 0,
                changed_at: self.now,
                all_ready_at: None,
                max_unavailable: 0,
                finished_at: None,
                started_at: None,
                adopted: false,
                scale,
                revision: String::new(),
            },
        );
        self.queue_reconcile(&key);
        let ns = key.split('/').nth(1).unwrap_or_default().to_string();
        self.disruption_scale_changed(&ns);
        Ok(())
    }

    /// Lists a ReplicaSet or StatefulSet that exists from now on for PodTopologySpread's
    /// `DefaultSelector` (upstream reads it through the informer's lister). Only the selector
    /// is read there; the replica count lives in the controller, so none is copied.
    pub(super) fn list_workload_set(
        &mut self,
        stateful: bool,
        namespace: &str,
        name: &str,
        selector: Option<ksim_api::meta::LabelSelector>,
    ) {
        let set = ksim_api::WorkloadSet {
            metadata: ksim_api::ObjectMeta {
                name: name.to_string(),
                namespace: namespace.to_string(),
                ..Default::default()
            },
            spec: ksim_api::WorkloadSetSpec {
                replicas: None,
                selector,
            },
        };
        Arc::make_mut(&mut self.snapshot.objects).put_workload_set(stateful, set);
    }

    /// `UpdateObject` of a workload: a new spec (scale, template change).
    pub(super) fn update_workload(
        &mut self,
        kind: ObjectKind,
        mut w: Workload,
    ) -> Result<(), SimError> {
        if w.metadata.namespace.is_empty() {
            w.metadata.namespace = "default".into();
        }
        let key = ctl_key(kind, &w.metadata.namespace, &w.metadata.name);
        let now = self.now;
        let Some(c) = self.controllers.ctls.get_mut(&key) else {
            return Err(self.input_err(format!(
                "UpdateObject: {kind} {}/{} does not exist",
                w.metadata.namespace, w.metadata.name
            )));
        };
        w.metadata.uid = c.obj.metadata.uid.clone();
        // The factor chosen at creation; the update's own annotation does not change it. An
        // update marked unscaled (a fork's `scale:`) already has its final counts.
        w.metadata
            .annotations
            .remove(crate::config::SCALE_ANNOTATION);
        let unscaled = w
            .metadata
            .annotations
            .remove(crate::config::UNSCALED_ANNOTATION)
            .is_some_and(|v| v == "true");
        if !unscaled {
            scale::apply(kind, &mut w.spec, c.scale);
        }
        c.hash = template_hash(&w.spec.template);
        if c.obj.spec != w.spec {
            c.changed_at = now;
            c.all_ready_at = None;
        }
        c.obj = w;
        self.queue_reconcile(&key);
        let ns = key.split('/').nth(1).unwrap_or_default().to_string();
        self.disruption_scale_changed(&ns);
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
        self.controllers.jobs.remove(&key);
        // Its ReplicaSets (a Deployment's) or itself leave the scheduler's listers.
        match kind {
            ObjectKind::ReplicaSet | ObjectKind::StatefulSet => {
                Arc::make_mut(&mut self.snapshot.objects).remove_workload_set(
                    kind == ObjectKind::StatefulSet,
                    ns,
                    name,
                );
            }
            ObjectKind::Deployment => {
                let objects = Arc::make_mut(&mut self.snapshot.objects);
                for h in c.rs.keys() {
                    objects.remove_workload_set(false, ns, &format!("{name}-{h}"));
                }
            }
            _ => {}
        }
        for p in c.pods.keys() {
            self.delete_owned_pod(p, obs);
        }
        self.disruption_scale_changed(ns);
        // A CronJob's Jobs go with it (upstream's garbage collector).
        if let Some(st) = self.controllers.cron.remove(&key) {
            for j in st.jobs {
                if let Some(name) = self
                    .controllers
                    .ctls
                    .get(&j)
                    .map(|c| c.obj.metadata.name.clone())
                {
                    self.delete_workload(ObjectKind::Job, ns, &name, obs)?;
                }
            }
        }
        Ok(())
    }

    /// A controller deletes one of its pods (scale-down, a finished Job's leftovers).
    /// A StatefulSet keeps the pod, marked terminating, until it is gone.
    fn delete_owned_pod(&mut self, pod: &str, obs: &mut dyn Observer) {
        if self.owned_by_stateful_set(pod) {
            self.stateful_pod_terminating(pod);
        } else if let Some(owner) = self.controllers.owner_of.remove(pod) {
            if let Some(c) = self.controllers.ctls.get_mut(&owner) {
                c.pods.remove(pod);
            }
        }
        self.delete_pod_gracefully(pod, "controller", obs);
    }

    /// A controller's pod starts terminating: a StatefulSet marks it and waits for it to be
    /// gone; any other controller no longer counts it (upstream's `FilterActivePods`) and
    /// reacts now.
    pub(super) fn stateful_pod_terminating(&mut self, pod: &str) {
        let Some(owner) = self.controllers.owner_of.get(pod).cloned() else {
            return;
        };
        if owner.starts_with("StatefulSet/") {
            if let Some(o) = self
                .controllers
                .ctls
                .get_mut(&owner)
                .and_then(|c| c.pods.get_mut(pod))
            {
                o.terminating = true;
            }
        }
    }

    /// A reconcile of `key` one reaction delay from now.
    fn queue_reconcile(&mut self, key: &str) {
        let at = self.now + self.cfg.controller_delay();
        self.queue_reconcile_at(key, at);
    }

    /// A reconcile of `key` at `at` (one per controller and instant).
    fn queue_reconcile_at(&mut self, key: &str, at: SimTime) {
        if self.controllers.pending.insert((key.to_string(), at)) {
            self.schedule(at, 0, Ev::Reconcile(key.to_string()));
        }
    }

    /// A pod ended or was lost with its node (`by` says how, as `PodSlot::ended_by`): its
    /// controller (if any) reacts.
    pub(super) fn controller_pod_gone(
        &mut self,
        info: &ksim_scheduler::pod_info::PodInfo,
        outcome: Outcome,
        by: &str,
    ) {
        if !self.controllers.job_terminating.is_empty() && self.job_terminating_pod_gone(&info.key)
        {
            return;
        }
        if self.controllers.owner_of.is_empty() {
            return;
        }
        let pod = info.key.as_str();
        let Some(owner) = self.controllers.owner_of.remove(pod) else {
            return;
        };
        if self
            .controllers
            .ctls
            .get(&owner)
            .is_some_and(|c| c.kind == ObjectKind::Job)
        {
            self.job_pod_gone(&owner, info, outcome, by);
            return;
        }
        if let Some(c) = self.controllers.ctls.get_mut(&owner) {
            let condemned =
                c.pods.remove(pod).is_some_and(|o| o.terminating) && outcome == Outcome::Deleted;
            if condemned {
                // Its own scale-down, now complete: the controller goes on.
                self.queue_reconcile(&owner);
                return;
            }
            match outcome {
                Outcome::Succeeded => c.succeeded += 1,
                Outcome::Failed => {
                    c.failed += 1;
                    c.replaced += 1;
                }
                _ => c.replaced += 1,
            }
            self.note_unavailable(&owner);
            self.queue_reconcile(&owner);
        }
    }

    /// A pod was bound and starts (after `podStartup`): its controller notes when it runs and
    /// reacts once it is running (StatefulSet) or available (Deployment).
    pub(super) fn controller_pod_running(&mut self, id: PodId) {
        if self.controllers.owner_of.is_empty() {
            return;
        }
        let key = self.pods[id as usize].info.key.clone();
        let Some(owner) = self.controllers.owner_of.get(&key).cloned() else {
            return;
        };
        let ready = self.now + self.cfg.costs.pod_startup;
        let delay = self.cfg.controller_delay();
        let Some(c) = self.controllers.ctls.get_mut(&owner) else {
            return;
        };
        if let Some(o) = c.pods.get_mut(&key) {
            o.ready_at = Some(ready);
        }
        let min_ready =
            SimDuration::from_secs(i64::from(c.obj.spec.min_ready_seconds.unwrap_or(0)));
        let kind = c.kind;
        // A DaemonSet in the middle of a rolling update waits for its pods to be available.
        let rolling_ds = kind == ObjectKind::DaemonSet && c.pods.values().any(|o| o.hash != c.hash);
        if matches!(kind, ObjectKind::StatefulSet | ObjectKind::Deployment) || rolling_ds {
            self.queue_reconcile_at(&owner, ready + min_ready + delay);
        }
        self.check_all_running(&owner);
    }

    /// The report's "all desired pods running" instant, the first time since the last change:
    /// every desired pod (of the current template, for a Deployment) has started and no pod is
    /// surplus. Pods start in bind order, so the latest start is the instant.
    fn check_all_running(&mut self, key: &str) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        if c.all_ready_at.is_some()
            || matches!(c.kind, ObjectKind::Job | ObjectKind::CronJob)
            || c.pods.len() as i64 != c.desired
        {
            return;
        }
        let current = |o: &&Owned| c.kind != ObjectKind::Deployment || o.hash == c.hash;
        let starts: Vec<SimTime> = c
            .pods
            .values()
            .filter(current)
            .filter_map(|o| o.ready_at)
            .collect();
        if starts.len() as i64 == c.desired {
            c.all_ready_at = Some(starts.into_iter().fold(now, SimTime::max));
        }
    }

    /// Updates a controller's report of the most pods short of desired (once all had run).
    fn note_unavailable(&mut self, key: &str) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        if c.all_ready_at.is_none_or(|t| t > now)
            || matches!(c.kind, ObjectKind::Job | ObjectKind::CronJob)
        {
            return;
        }
        let running = c
            .pods
            .values()
            .filter(|o| o.ready_at.is_some_and(|t| t <= now))
            .count() as i64;
        c.max_unavailable = c.max_unavailable.max(c.desired - running);
    }

    /// A pod of a StatefulSet is gone after terminating: the StatefulSet reacts (it may now
    /// create the pod's replacement, which has its name).
    pub(super) fn controller_stateful_pod_gone(&mut self, pod: &PodInfo) {
        let Some(o) = pod
            .pod
            .metadata
            .owner_references
            .iter()
            .find(|o| o.controller == Some(true) && o.kind == "StatefulSet")
        else {
            return;
        };
        let key = ctl_key(ObjectKind::StatefulSet, pod.namespace(), &o.name);
        if self.controllers.ctls.contains_key(&key) {
            self.queue_reconcile(&key);
        }
    }

    /// Whether a live pod belongs to a StatefulSet (its replacement has its name: the
    /// controller reacts only once it is gone).
    pub(super) fn owned_by_stateful_set(&self, pod: &str) -> bool {
        self.controllers
            .owner_of
            .get(pod)
            .is_some_and(|k| k.starts_with("StatefulSet/"))
    }

    /// Whether the live pod `key` is scheduled (assumed or bound).
    fn is_scheduled(&self, key: &str) -> bool {
        self.live_get(key).is_some_and(|&id| {
            matches!(
                self.pods[id as usize].phase,
                PodPhase::Binding | PodPhase::Bound
            )
        })
    }

    /// Whether a pod is owned by a modelled controller (which replaces it itself).
    pub(super) fn controller_owns(&self, pod: &str) -> bool {
        self.controllers.owner_of.contains_key(pod)
    }

    /// A node was added, updated or removed: DaemonSets react (upstream's `addNode`,
    /// `updateNode`, `deleteNode` handlers enqueue the DaemonSets whose verdict may change).
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
        self.controllers
            .pending
            .remove(&(key.to_string(), self.now));
        self.adopt_orphans(key);
        let Some(c) = self.controllers.ctls.get(key) else {
            self.controllers.timing.syncs.remove(key);
            return;
        };
        let kind = c.kind;
        self.begin_sync(key);
        match kind {
            ObjectKind::ReplicaSet => self.reconcile_replicaset(key, obs),
            ObjectKind::Deployment => self.reconcile_deployment(key, obs),
            ObjectKind::StatefulSet => self.reconcile_statefulset(key, obs),
            ObjectKind::Job => self.reconcile_job(key, obs),
            ObjectKind::DaemonSet => self.reconcile_daemonset(key, obs),
            ObjectKind::CronJob => self.reconcile_cronjob(key, obs),
            _ => {}
        }
        self.end_sync(key);
        self.note_unavailable(key);
        self.check_all_running(key);
    }

    /// Creates one pod of a controller from a template. Returns its key when created.
    fn create_owned_pod(
        &mut self,
        key: &str,
        new: NewPod<'_>,
        obs: &mut dyn Observer,
    ) -> Option<String> {
        // Refused a moment ago: nothing until the rate-limited requeue (upstream stops a
        // sync at its first failed creation and requeues the key with backoff).
        if self.controller_backing_off(key) {
            return None;
        }
        let kind = self.controllers.ctls.get(key)?.kind;
        if !self.client_call(key, kind, true) {
            return None;
        }
        let run_for = self.run_time_of(key, new.template);
        let c = self.controllers.ctls.get(key)?;
        let w = &c.obj;
        let mut pod = Pod {
            metadata: new.template.metadata.clone(),
            spec: new.template.spec.clone(),
            ..Default::default()
        };
        pod.metadata.namespace = w.metadata.namespace.clone();
        pod.metadata.owner_references = vec![OwnerReference {
            api_version: new.owner_kind.api_version().into(),
            kind: new.owner_kind.as_str().into(),
            name: new.owner_name,
            uid: w.metadata.uid.clone(),
            controller: Some(true),
        }];
        (new.edit)(&mut pod);
        let ns = pod.metadata.namespace.clone();
        match new.name {
            Some(n) => pod.metadata.name = n,
            None => {
                pod.metadata.generate_name = format!("{}-", new.prefix);
                let base = generated_name_base(&pod.metadata.generate_name).to_string();
                // A fresh name; a clash with a live pod draws again, as the API server's
                // generateName retry does.
                for _ in 0..16 {
                    let name = format!("{base}{}", self.controllers.suffix());
                    if !self.live_contains(&format!("{ns}/{name}")) {
                        pod.metadata.name = name;
                        break;
                    }
                }
            }
        }
        let pod_key = format!("{ns}/{}", pod.metadata.name);
        self.controllers.seq += 1;
        let seq = self.controllers.seq;
        if self.create_pod(pod, run_for, obs).is_err() {
            self.client_create_failed(key);
            return None;
        }
        if !self.live_contains(&pod_key) {
            // Refused by admission (recorded): retry after the work queue's backoff. A run
            // without a horizon would never end on a pod refused for good: there the retries
            // stop once the backoff reaches its cap (see `sim/admission`).
            let (at, capped) = self.controller_refused(key);
            if !(capped && self.cfg.horizon.is_none()) {
                self.queue_reconcile_at(key, at);
            }
            return None;
        }
        self.controller_admitted(key);
        if let Some(c) = self.controllers.ctls.get_mut(key) {
            c.pods.insert(
                pod_key.clone(),
                Owned {
                    seq,
                    hash: new.hash,
                    ordinal: new.ordinal,
                    ready_at: None,
                    created_at: self.now,
                    terminating: false,
                },
            );
            c.created += 1;
        }
        self.controllers
            .owner_of
            .insert(pod_key.clone(), key.to_string());
        // A pod created bound (none today) would have started in create_pod before it was
        // registered: note it now.
        if let Some(&id) = self.live_get(&pod_key) {
            if self.pods[id as usize].phase == PodPhase::Bound {
                self.controller_pod_running(id);
            }
        }
        Some(pod_key)
    }

    /// The run time of a new pod of controller `key` from `template`: its `ksim.io/run-for`
    /// annotation, else the scenario's `controllerRunTimes` entry naming the controller (or, for
    /// a CronJob's Job, its CronJob), else the `*` entry; `None`: it runs until deleted.
    fn run_time_of(&mut self, key: &str, template: &PodTemplateSpec) -> Option<SimDuration> {
        if let Some(d) = template
            .metadata
            .annotations
            .get(RUN_FOR_ANNOTATION)
            .and_then(|s| SimDuration::parse(s).ok())
        {
            return Some(d);
        }
        let rts = &self.cfg.controller_run_times;
        if rts.is_empty() {
            return None;
        }
        let c = self.controllers.ctls.get(key)?;
        let (ns, name) = (&c.obj.metadata.namespace, &c.obj.metadata.name);
        let dist = rts
            .named(c.kind.as_str(), ns, name)
            .or_else(|| {
                let cj = job::cronjob_name(&c.obj)?;
                rts.named("CronJob", ns, &cj)
            })
            .or_else(|| rts.fallback())?
            .clone();
        Some(dist.draw(&mut self.controllers.run_rng))
    }

    /// One [`Record::Controller`] per controller, in key order (at the end of the run).
    pub(super) fn report_controllers(&self, at: SimTime, obs: &mut dyn Observer) {
        for c in self.controllers.ctls.values() {
            let running = c
                .pods
                .values()
                .filter(|o| o.ready_at.is_some_and(|t| t <= at))
                .count() as u64;
            let all_ready = c
                .all_ready_at
                .filter(|t| *t <= at)
                .map(|t| t.since(c.changed_at));
            obs.record(&Record::Controller {
                at,
                kind: c.kind.as_str().to_string(),
                namespace: c.obj.metadata.namespace.clone(),
                name: c.obj.metadata.name.clone(),
                desired: c.desired,
                created: c.created,
                live: c.pods.len() as u64,
                running,
                time_to_all_running: all_ready,
                max_unavailable: c.max_unavailable as u64,
                replaced: c.replaced,
                succeeded: u64::try_from(c.succeeded).unwrap_or(0),
                failed: u64::try_from(c.failed).unwrap_or(0),
                completed_at: c.finished_at,
                condition: self
                    .controllers
                    .jobs
                    .get(&ctl_key(
                        c.kind,
                        &c.obj.metadata.namespace,
                        &c.obj.metadata.name,
                    ))
                    .and_then(job::JobState::condition),
            });
        }
    }

    /// The time at which the controller reaction delay ends from now (tests).
    pub fn controller_reaction_at(&self) -> SimTime {
        self.now + self.cfg.controller_delay()
    }
}
