//! Volume binding in the engine, and the storage objects (PVs, PVCs, StorageClasses, CSI
//! objects, PDBs, Services) that traces create, update and delete.
//!
//! What happens after a successful scheduling cycle of a pod with claims (upstream
//! `VolumeBinding.PreBind` → `BindPodVolumes`, the PV controller and an external provisioner):
//!
//! 1. PreBind's API writes ([`VolumeBindingDecision::apply_prebind`]) go to the engine's
//!    storage objects: `claimRef` on the static PVs Reserve chose, the
//!    `volume.kubernetes.io/selected-node` annotation on the WaitForFirstConsumer claims to
//!    provision. The snapshot's `Arc<ClusterObjects>` is updated copy-on-write, so a cycle in
//!    progress keeps the objects it started with.
//! 2. The PV controller completes the static bindings at once ([`controller::bind_claim`]).
//! 3. Claims to provision get their PV after `costs.provisioningDelay`
//!    ([`controller::provision_claim`], an [`Ev::Provision`] event). The pod stays assumed on
//!    its node meanwhile (phase `Binding`, resources held) and binds — `BindDone` after the
//!    bind latency — only once every claim it waits for is fully bound.
//! 4. Every change is dispatched as a cluster event (`PersistentVolume`/`PersistentVolumeClaim`
//!    Add/Update...), so pods that storage rejected are retried as their queueing hints say.
//!
//! PreBind fails, as upstream's `checkBindings` would, when a claim the pod waits for is deleted
//! or loses its selected-node annotation (the provisioner gave up: the node is gone or the class
//! cannot provision), and after upstream's default `bindTimeoutSeconds` (600 s) when the
//! provisioning delay is longer. A failed pod is handled as upstream's `handleBindingCycleError`:
//! Unreserve (VolumeBinding reverts its assume cache), the assumed pod is forgotten (an
//! AssignedPodDelete event), and the pod goes to the error backoff; the run records it as an
//! `Error` attempt with the PreBind message. The API writes already made stay, as upstream.
//!
//! Deliberate differences: upstream's PreBind polls the claims once a second, so a real bind
//! lands on the next poll after the provisioning; ksim binds as soon as the claims are bound.
//! Deleting a claim or a PV takes effect at once (no protection finalizers, no reclaim).

use std::sync::Arc;

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::storage::ANN_SELECTED_NODE;
use ksim_scheduler::framework::{ClusterEventKind, CycleState, Framework, ObjectAction};
use ksim_scheduler::node_info::ClusterObjects;
use ksim_scheduler::plugins::volume_binding;
use ksim_scheduler::volume::binder::VolumeBindingDecision;
use ksim_scheduler::volume::controller;

use super::cycle::attempt_record;
use super::hints::OwnedEvent;
use super::{Ev, PodId, PodPhase, SimError, Simulation};
use crate::record::{AttemptResult, Observer};
use crate::time::SimDuration;

/// Upstream's default `bindTimeoutSeconds` (VolumeBindingArgs): how long PreBind waits for the
/// claims to be bound before it fails.
pub const VOLUME_BIND_TIMEOUT: SimDuration = SimDuration(600_000_000);

/// A pod assumed on its node whose PreBind waits for dynamically provisioned claims.
#[derive(Clone)]
pub(super) struct VolumeWait {
    /// The pod's generation when the wait began (a changed one means the wait is stale).
    generation: u32,
    node: String,
    /// `namespace/name` of the claims being provisioned for it.
    claims: Vec<String>,
    /// The cycle's state, for Bind and (on failure) Unreserve.
    state: CycleState,
}

/// An object to watch while storage objects change: (kind, namespace, name).
type Watch = (ObjectKind, String, String);

fn split_key(key: &str) -> (String, String) {
    match key.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), key.to_string()),
    }
}

fn pvc_watch(key: &str) -> Watch {
    let (ns, name) = split_key(key);
    (ObjectKind::PersistentVolumeClaim, ns, name)
}

fn pv_watch(name: &str) -> Watch {
    (
        ObjectKind::PersistentVolume,
        String::new(),
        name.to_string(),
    )
}

impl Simulation {
    /// Runs PreBind for a pod just assumed on `node`. Returns the cycle state when the pod can
    /// go on to Bind now; `None` when PreBind failed (handled here) or the pod waits for its
    /// claims to be provisioned (it binds when they are).
    pub(super) fn pre_bind(
        &mut self,
        pod: PodId,
        node: &str,
        fwk: &Framework,
        state: CycleState,
        obs: &mut dyn Observer,
    ) -> Option<CycleState> {
        let info = self.pods[pod as usize].info.clone();
        let s = fwk.run_pre_bind(&state, &info, node);
        if !s.is_success() {
            let msg = format!("running PreBind plugin {:?}: {}", s.plugin, s.message());
            self.binding_failed(pod, node, state, msg, obs);
            return None;
        }
        // DynamicResources' PreBind: the claims it wrote (allocation, finalizer, reservedFor).
        let claims = ksim_scheduler::plugins::dynamic_resources::prebind_writes(&state);
        if !claims.is_empty() {
            let watch: Vec<Watch> = claims
                .iter()
                .map(|c| {
                    (
                        ObjectKind::ResourceClaim,
                        c.metadata.namespace.clone(),
                        c.metadata.name.clone(),
                    )
                })
                .collect();
            let keys: Vec<String> = watch.iter().map(|(_, ns, n)| format!("{ns}/{n}")).collect();
            self.change_objects(&watch, |objs| {
                for c in claims {
                    objs.put_object(ApiObject::ResourceClaim(c));
                }
            });
            if let Some(dr) = fwk
                .plugin(ksim_scheduler::plugins::dynamic_resources::NAME)
                .and_then(|p| p.as_any())
                .and_then(|a| {
                    a.downcast_ref::<ksim_scheduler::plugins::dynamic_resources::DynamicResources>()
                })
            {
                dr.writes_applied(&keys);
            }
        }
        let decision = match volume_binding::decision(&state) {
            Some(d) if !d.all_bound && d.node == node => d.clone(),
            _ => return Some(state),
        };
        if let Err(msg) = self.apply_volume_writes(&decision) {
            let msg = format!("running PreBind plugin \"VolumeBinding\": binding volumes: {msg}");
            self.binding_failed(pod, node, state, msg, obs);
            return None;
        }
        if decision.provisioned_claims.is_empty() {
            return Some(state);
        }
        let claims: Vec<String> = decision
            .provisioned_claims
            .iter()
            .map(|p| p.pvc.clone())
            .collect();
        let generation = self.pods[pod as usize].generation;
        self.volume_waits.insert(
            pod,
            VolumeWait {
                generation,
                node: node.to_string(),
                claims: claims.clone(),
                state,
            },
        );
        let delay = self.cfg.costs.provisioning_delay;
        if delay.micros() == 0 {
            self.provision(&claims, node, obs);
        } else {
            self.schedule(
                self.now + delay,
                0,
                Ev::Provision {
                    claims,
                    node: node.to_string(),
                },
            );
            // Only a provisioning slower than the timeout can hit it; scheduling the timer
            // otherwise would leave a stale event that keeps a horizon-less run going.
            if delay > VOLUME_BIND_TIMEOUT {
                self.schedule(
                    self.now + VOLUME_BIND_TIMEOUT,
                    0,
                    Ev::VolumeBindTimeout { pod, generation },
                );
            }
        }
        None
    }

    /// PreBind's API writes, then the PV controller binding the static PVs.
    fn apply_volume_writes(&mut self, d: &VolumeBindingDecision) -> Result<(), String> {
        let mut watch: Vec<Watch> = Vec::new();
        for b in &d.static_bindings {
            watch.push(pv_watch(&b.pv));
            watch.push(pvc_watch(&b.pvc));
        }
        for p in &d.provisioned_claims {
            watch.push(pvc_watch(&p.pvc));
        }
        self.change_objects(&watch, |objs| {
            d.apply_prebind(&mut objs.storage);
            for b in &d.static_bindings {
                controller::bind_claim(&mut objs.storage, &b.pvc, &b.pv)
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    }

    /// The external provisioner and the PV controller: each claim still annotated for `node`
    /// and not bound gets a new PV. A claim that cannot be provisioned (node gone, no
    /// provisioner, name taken) loses its selected-node annotation, as the provisioner does to
    /// ask for rescheduling.
    pub(super) fn provision(&mut self, claims: &[String], node: &str, obs: &mut dyn Observer) {
        let node_obj = self
            .snapshot
            .get(node)
            .map(|n| n.node.clone())
            .or_else(|| self.ghosts.get(node).map(|g| g.node.clone()));
        let mut watch: Vec<Watch> = Vec::new();
        for key in claims {
            watch.push(pvc_watch(key));
            if let Some(pvc) = self
                .snapshot
                .objects
                .storage
                .persistent_volume_claims
                .get(key)
            {
                watch.push(pv_watch(&format!("pvc-{}", pvc.metadata.uid)));
            }
        }
        self.change_objects(&watch, |objs| {
            for key in claims {
                let Some(pvc) = objs.storage.persistent_volume_claims.get(key).cloned() else {
                    continue;
                };
                let selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE);
                if pvc.is_fully_bound() || selected.map(String::as_str) != Some(node) {
                    continue;
                }
                let ok = match &node_obj {
                    Some(n) => controller::provision_claim(&mut objs.storage, key, n).is_ok(),
                    None => false,
                };
                if !ok {
                    let mut c = (*pvc).clone();
                    c.metadata.annotations.remove(ANN_SELECTED_NODE);
                    objs.storage
                        .persistent_volume_claims
                        .insert(key.clone(), Arc::new(c));
                }
            }
        });
        self.check_volume_waits(obs);
    }

    /// Binds the waiting pods whose claims are all bound, and fails those whose claims are
    /// gone or were handed back for rescheduling (upstream `checkBindings`).
    pub(super) fn check_volume_waits(&mut self, obs: &mut dyn Observer) {
        let ids: Vec<PodId> = self.volume_waits.keys().copied().collect();
        for id in ids {
            let Some(w) = self.volume_waits.get(&id) else {
                continue;
            };
            let slot = &self.pods[id as usize];
            if slot.generation != w.generation || slot.phase != PodPhase::Binding {
                // The pod ended another way (e.g. its node was removed).
                self.drop_volume_wait(id);
                continue;
            }
            let storage = &self.snapshot.objects.storage;
            let mut failure = None;
            let mut bound = true;
            for key in &w.claims {
                match storage.persistent_volume_claims.get(key) {
                    None => {
                        failure = Some(format!(
                            "failed to check provisioning pvc: could not find v1.PersistentVolumeClaim {key:?}"
                        ));
                        break;
                    }
                    Some(pvc) if pvc.is_fully_bound() => {}
                    Some(pvc) => {
                        let selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE);
                        if selected != Some(&w.node) {
                            failure = Some(format!(
                                "selectedNode annotation reset for PVC {:?}",
                                pvc.metadata.name
                            ));
                            break;
                        }
                        bound = false;
                    }
                }
            }
            if failure.is_none() && !bound {
                continue;
            }
            let Some(w) = self.volume_waits.remove(&id) else {
                continue;
            };
            match failure {
                Some(msg) => {
                    let msg =
                        format!("running PreBind plugin \"VolumeBinding\": binding volumes: {msg}");
                    self.binding_failed(id, &w.node, w.state, msg, obs);
                }
                None => {
                    let info = self.pods[id as usize].info.clone();
                    let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
                    self.bind(id, &w.node, &fwk, w.state, obs);
                }
            }
        }
    }

    /// PreBind gave up waiting (`costs.provisioningDelay` longer than the bind timeout).
    pub(super) fn volume_bind_timeout(
        &mut self,
        pod: PodId,
        generation: u32,
        obs: &mut dyn Observer,
    ) {
        if self
            .volume_waits
            .get(&pod)
            .is_none_or(|w| w.generation != generation)
        {
            return;
        }
        if let Some(w) = self.volume_waits.remove(&pod) {
            let msg = "running PreBind plugin \"VolumeBinding\": binding volumes: context deadline exceeded";
            self.binding_failed(pod, &w.node, w.state, msg.to_string(), obs);
        }
    }

    /// A pod that waited for its volumes ended (deleted, preempted) or its wait went stale:
    /// Unreserve, and drop it from the queue where it stayed in flight.
    pub(super) fn drop_volume_wait(&mut self, id: PodId) {
        let Some(mut w) = self.volume_waits.remove(&id) else {
            return;
        };
        let info = self.pods[id as usize].info.clone();
        let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
        fwk.run_unreserve(&mut w.state, &info, &w.node);
        self.apply_dra_unreservations(&fwk);
        self.queue.remove(id);
    }

    /// Runs Unreserve for a cycle whose outcome is dropped.
    pub(super) fn unreserve(&mut self, pod: PodId, node: &str, state: &mut CycleState) {
        let info = self.pods[pod as usize].info.clone();
        let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
        fwk.run_unreserve(state, &info, node);
        self.apply_dra_unreservations(&fwk);
    }

    /// The binding cycle failed (upstream `handleBindingCycleError`): Unreserve, forget the
    /// assumed pod (an AssignedPodDelete event for the others), then the error backoff.
    pub(super) fn binding_failed(
        &mut self,
        pod: PodId,
        node: &str,
        mut state: CycleState,
        message: String,
        obs: &mut dyn Observer,
    ) {
        let assumed = self.pods[pod as usize].info.clone();
        let fwk = self.framework_for(&assumed).unwrap_or_else(|| self.fwk0());
        fwk.run_unreserve(&mut state, &assumed, node);
        self.apply_dra_unreservations(&fwk);
        if !self.snapshot.remove_pod(node, assumed.uid()) {
            if let Some(g) = self.ghosts.get_mut(node) {
                g.remove_pod(assumed.uid());
            }
        }
        let mut p = assumed.pod.clone();
        p.spec.node_name.clear();
        p.status.nominated_node_name.clear();
        let pending = Arc::new(assumed.with_object(p));
        let slot = &mut self.pods[pod as usize];
        slot.info = pending.clone();
        slot.phase = PodPhase::Pending;
        slot.node.clear();
        slot.generation += 1;
        self.queue.set_pod(pod, pending.clone());
        let attempt = self.queue.get(pod).map(|q| q.attempts).unwrap_or(0);
        obs.record(&attempt_record(
            self.now,
            &pending,
            attempt,
            AttemptResult::Error,
            "",
            "",
            message,
            0,
            0,
        ));
        self.dispatch(OwnedEvent::Pod {
            kind: ClusterEventKind::AssignedPodDelete,
            old: Some(assumed),
            new: None,
        });
        let stamp = self.next_action();
        self.queue.failed_error(pod, stamp);
    }

    /// Changes cluster objects and dispatches a cluster event for each watched object that
    /// changed, in `watch` order.
    pub(super) fn change_objects<R>(
        &mut self,
        watch: &[Watch],
        f: impl FnOnce(&mut ClusterObjects) -> R,
    ) -> R {
        let before: Vec<Option<ApiObject>> = watch
            .iter()
            .map(|(k, ns, name)| self.snapshot.objects.get_object(*k, ns, name))
            .collect();
        let r = f(Arc::make_mut(&mut self.snapshot.objects));
        if watch
            .iter()
            .any(|w| matches!(w.0, ObjectKind::ResourceClaim | ObjectKind::ResourceSlice))
        {
            self.devices_stale = true;
        }
        for ((k, ns, name), old) in watch.iter().zip(before) {
            let new = self.snapshot.objects.get_object(*k, ns, name);
            self.object_event(*k, old, new);
        }
        r
    }

    /// Dispatches the event for an object that went from `old` to `new` (nothing if equal).
    fn object_event(&mut self, kind: ObjectKind, old: Option<ApiObject>, new: Option<ApiObject>) {
        let action = match (&old, &new) {
            (None, Some(_)) => ObjectAction::Add,
            (Some(o), Some(n)) if o != n => ObjectAction::Update,
            (Some(_), None) => ObjectAction::Delete,
            _ => return,
        };
        let (ns, name) = match new.as_ref().or(old.as_ref()) {
            Some(o) => (o.namespace().to_string(), o.name().to_string()),
            None => return,
        };
        let old = old.map(Arc::new);
        let new = new.map(Arc::new);
        self.dispatch(OwnedEvent::Object {
            kind: ClusterEventKind::Object(kind, action),
            old: old.clone(),
            new: new.clone(),
        });
        // The device taint eviction controller's informers (`sim/devicetainteviction.rs`).
        match kind {
            ObjectKind::ResourceClaim => {
                self.device_taint_claim_changed(old.as_deref(), new.as_deref())
            }
            ObjectKind::ResourceSlice => self.device_taint_slices_changed(),
            _ => {}
        }
        // The resource claim controller's informers (`sim/resourceclaim.rs`).
        match kind {
            ObjectKind::ResourceClaim => {
                self.claims_claim_changed(&ns, &name, action == ObjectAction::Delete)
            }
            ObjectKind::ResourceClaimTemplate if action != ObjectAction::Delete => {
                self.claims_template_changed(&ns, &name)
            }
            _ => {}
        }
    }

    /// `CreateObject`: the object must not exist yet.
    pub(super) fn create_object(
        &mut self,
        mut obj: ApiObject,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        obj.apply_defaults();
        self.stamp_device_taints(&mut obj)?;
        if let ApiObject::PersistentVolumeClaim(pvc) = &mut obj {
            if pvc.spec.storage_class_name.is_none() {
                pvc.spec.storage_class_name =
                    default_storage_class(&self.snapshot.objects.storage.storage_classes);
            }
        }
        let kind = obj.kind();
        if self
            .snapshot
            .objects
            .get_object(kind, obj.namespace(), obj.name())
            .is_some()
        {
            return Err(
                self.input_err(format!("CreateObject: {kind} {} already exists", obj.key()))
            );
        }
        let watch = [(kind, obj.namespace().to_string(), obj.name().to_string())];
        self.change_objects(&watch, |objs| objs.put_object(obj));
        if kind == ObjectKind::PodDisruptionBudget {
            self.disruption_pdb_changed(&watch[0].1, &watch[0].2);
        }
        self.check_volume_waits(obs);
        Ok(())
    }

    /// `UpdateObject`: replaces an existing object.
    pub(super) fn update_object(
        &mut self,
        mut obj: ApiObject,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        obj.apply_defaults();
        self.stamp_device_taints(&mut obj)?;
        let kind = obj.kind();
        if self
            .snapshot
            .objects
            .get_object(kind, obj.namespace(), obj.name())
            .is_none()
        {
            return Err(
                self.input_err(format!("UpdateObject: {kind} {} does not exist", obj.key()))
            );
        }
        let watch = [(kind, obj.namespace().to_string(), obj.name().to_string())];
        self.change_objects(&watch, |objs| objs.put_object(obj));
        if kind == ObjectKind::PodDisruptionBudget {
            self.disruption_pdb_changed(&watch[0].1, &watch[0].2);
        }
        self.check_volume_waits(obs);
        Ok(())
    }

    /// `DeleteObject`: the object must exist (the API server's 404 otherwise).
    pub(super) fn delete_object(
        &mut self,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        let ns = match (kind.namespaced(), namespace) {
            (false, _) => "",
            (true, "") => "default",
            (true, ns) => ns,
        };
        if self.snapshot.objects.get_object(kind, ns, name).is_none() {
            let key = if ns.is_empty() {
                name.to_string()
            } else {
                format!("{ns}/{name}")
            };
            return Err(self.input_err(format!("DeleteObject: {kind} {key} does not exist")));
        }
        let watch = [(kind, ns.to_string(), name.to_string())];
        self.change_objects(&watch, |objs| objs.delete_object(kind, ns, name));
        self.check_volume_waits(obs);
        Ok(())
    }
}

/// The DefaultStorageClass admission plugin: a claim created without `storageClassName` (not
/// `""`, which asks for no class) gets the class annotated
/// `storageclass.kubernetes.io/is-default-class: "true"` (or the beta annotation); among
/// several, the newest by `creationTimestamp`, then the first by name, as upstream's
/// `GetDefaultClass` picks. None when the cluster has no default class: the claim stays
/// without one, as upstream's would until a default appears.
pub fn default_storage_class(
    classes: &std::collections::BTreeMap<String, std::sync::Arc<ksim_api::storage::StorageClass>>,
) -> Option<String> {
    const KEYS: [&str; 2] = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ];
    classes
        .values()
        .filter(|c| {
            KEYS.iter()
                .any(|k| c.metadata.annotations.get(*k).map(String::as_str) == Some("true"))
        })
        // RFC 3339 timestamps in UTC order as text; `max_by` keeps the last of equals, so
        // the names (iterated ascending) are compared reversed to keep the first.
        .max_by(|a, b| {
            a.metadata
                .creation_timestamp
                .cmp(&b.metadata.creation_timestamp)
                .then_with(|| b.metadata.name.cmp(&a.metadata.name))
        })
        .map(|c| c.metadata.name.clone())
}
