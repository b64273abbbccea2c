//! Room: the resource claim controller of Dynamic Resource Allocation (upstream
//! `pkg/controller/resourceclaim/controller.go`, kube-controller-manager v1.35), and the DRA
//! objects' hand-over to the scheduler (`DynamicResources` reads them in PreEnqueue and in its
//! queueing hints), and PostFilter's deallocations.
//!
//! - **Pods** (`enqueuePod` → `syncPod` → `handleClaim`): a live, not deleted pod whose
//!   `resourceClaimTemplateName` entry has no claim yet gets one created from the template —
//!   named by `generateName` `<pod>-<entry>-` (both parts cut in proportion when longer than 57
//!   characters, as upstream) plus 5 characters of upstream's alphabet from the run's seeded
//!   RNG, owned by the pod (`ownerReference` kind Pod, `controller: true`), annotated
//!   `resource.kubernetes.io/pod-claim-name: <entry>`, with the template's labels, annotations
//!   and claim spec — then `status.resourceClaimStatuses` names it. An existing claim owned by
//!   the pod for that entry is reused (`findPodResourceClaim`). A bound pod gets its allocated
//!   claims reserved (`reserveForPod`) when the scheduler did not do it.
//! - **Claims** (`enqueueResourceClaim` → `syncClaim`): `status.reservedFor` entries of pods
//!   that are gone, replaced (another uid) or done are removed; a claim left with no consumer
//!   that carries the scheduler's finalizer is deallocated (`allocation` cleared) and loses the
//!   finalizer, so its devices are free again; a generated claim with no consumer whose pod is
//!   done, replaced or gone is deleted (the gone case is the garbage collector's, through the
//!   owner reference).
//! - **Start-up** (`startup.rs`): each claim present at t=0 is synced, after the t=0 pods.
//! - **Timing**: every sync runs one reaction delay (`controllerTiming.informerDelay +
//!   reconcile`, or the flat `controllerDelay`) after the change it reacts to, and its API calls
//!   (claim create, update, delete, pod status) go through the controller's own client bucket
//!   (`kubeApiQps` / `kubeApiBurst`); a call that must wait resumes the sync when its token is
//!   due. A sync that fails because the template does not exist is retried as upstream's work
//!   queue does (`DefaultControllerRateLimiter`: 5 ms doubling, capped at 1000 s): ksim runs
//!   the retry that first follows the template's creation, and none while it is missing
//!   (they would all fail alike).
//!
//! The scheduler's side: before the queue runs PreEnqueue or queueing hints, the engine hands
//! `DynamicResources` the cluster objects as they are (`refresh_dra_objects`); a pod gated by it
//! is recorded as [`Record::PodWaiting`] with the plugin's message, and a pod whose claim cannot
//! be created with the controller's (`FailedResourceClaimCreation`).
//!
//! Deliberate differences: the garbage collector's delay is not modelled (a generated claim
//! whose pod is gone is deleted in the claim's sync); a generated name already taken is drawn
//! again instead of failing the sync; the namespace check of `adminAccess` templates is not
//! made.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ksim_api::meta::OwnerReference;
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::resource::{
    claim_name_for, PodResourceClaim, PodResourceClaimStatus, ResourceClaim,
    ResourceClaimConsumerReference, FINALIZER,
};
use ksim_api::Pod;
use ksim_scheduler::plugins::dynamic_resources::{self, DynamicResources};
use ksim_scheduler::pod_info::PodInfo;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

mod gates;
mod startup;

use super::controllers::Bucket;
use super::{Ev, PodId, PodPhase, Simulation};
use crate::record::{Observer, Record};
use crate::time::{SimDuration, SimTime};

/// Upstream's annotation on generated claims: the pod's `spec.resourceClaims[].name`.
pub const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// Who the records of this controller name.
pub const CONTROLLER_NAME: &str = "resourceclaim-controller";

/// `handleClaim`'s `maxBaseLen`: 63 characters less a hyphen and 5 random ones.
const MAX_BASE_LEN: usize = 57;

/// Upstream's `utilrand` alphabet.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The work queue's per-item backoff (`DefaultControllerRateLimiter`): 5 ms doubling.
const RETRY_BASE: SimDuration = SimDuration(5_000);
const RETRY_MAX: SimDuration = SimDuration(1_000_000_000);

/// A pod whose sync failed because its template does not exist.
#[derive(Debug, Clone)]
struct Waiting {
    /// `namespace/name` of the missing template.
    template: String,
    /// Failed syncs so far and the time of the last one.
    failures: u32,
    last: SimTime,
}

/// The controller's state (`Simulation::claims`).
#[derive(Debug, Clone)]
pub(super) struct State {
    rng: ChaCha8Rng,
    /// Syncs in the heap, by key (`pod:ns/name`, `claim:ns/name`) and time.
    pending: BTreeSet<(String, SimTime)>,
    /// Pods whose sync waits for a template, by pod key.
    waiting: BTreeMap<String, Waiting>,
    /// Live pods by the claims they name (`podResourceClaimIndex`): claim key → pod keys.
    pods_by_claim: BTreeMap<String, BTreeSet<String>>,
    /// The claim keys each indexed pod named.
    claims_of_pod: BTreeMap<String, Vec<String>>,
    bucket: Bucket,
}

impl State {
    pub fn new(seed: u64) -> State {
        State {
            rng: super::rng_stream(seed, 13),
            pending: BTreeSet::new(),
            waiting: BTreeMap::new(),
            pods_by_claim: BTreeMap::new(),
            claims_of_pod: BTreeMap::new(),
            bucket: Bucket::default(),
        }
    }
}

/// The `generateName` upstream's `handleClaim` gives a pod's claim.
pub fn generate_name(pod: &str, entry: &str) -> String {
    let base = format!("{pod}-{entry}-");
    if base.len() <= MAX_BASE_LEN {
        return base;
    }
    let cut = |s: &str| {
        let mut end = s.len() * MAX_BASE_LEN / base.len();
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s[..end].to_string()
    };
    format!("{}-{}", cut(pod), cut(entry))
}

/// The claim keys a pod names (`resourceclaim.Name` of each entry that resolves).
fn claim_keys(pod: &Pod) -> Vec<String> {
    pod.spec
        .resource_claims
        .iter()
        .filter_map(|rc| claim_name_for(pod, rc).ok().flatten())
        .map(|(name, _)| format!("{}/{name}", pod.metadata.namespace))
        .collect()
}

/// `resourceclaim.IsForPod`: the claim's controller owner is the pod.
fn is_for_pod(pod: &Pod, claim: &ResourceClaim) -> bool {
    claim
        .metadata
        .owner_references
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == pod.metadata.uid)
}

/// `owningPod`: the pod a generated claim belongs to (name, uid).
fn owning_pod(claim: &ResourceClaim) -> Option<(String, String)> {
    claim
        .metadata
        .owner_references
        .iter()
        .find(|o| o.controller == Some(true) && o.api_version == "v1" && o.kind == "Pod")
        .map(|o| (o.name.clone(), o.uid.clone()))
}

/// Why a pod's sync stopped.
enum Stop {
    /// Waits for a client token (the sync is queued again).
    Throttled,
    /// Failed (upstream's error text), and the template it needs if that is why.
    Failed(String, Option<String>),
}

impl Simulation {
    /// Hands the cluster objects to each profile's `DynamicResources` (its PreEnqueue and hints
    /// read them), when the run uses DRA at all (`pod_claims`: the pod at hand names claims).
    pub(super) fn refresh_dra_objects(&self, pod_claims: bool) {
        if !pod_claims && self.snapshot.objects.dra.is_empty() {
            return;
        }
        for f in &self.frameworks {
            let dr = f
                .plugin(dynamic_resources::NAME)
                .and_then(|p| p.as_any())
                .and_then(|a| a.downcast_ref::<DynamicResources>());
            if let Some(dr) = dr {
                dr.set_objects(self.snapshot.objects.clone());
            }
        }
    }

    /// PostFilter's deallocations (upstream `DynamicResources.PostFilter`'s `UpdateStatus`):
    /// the claims the plugin gave up lose `allocation`, `reservedFor` and `devices`.
    pub(super) fn take_dra_deallocations(
        &self,
        fwk: &ksim_scheduler::framework::Framework,
    ) -> Vec<String> {
        fwk.plugin(dynamic_resources::NAME)
            .and_then(|p| p.as_any())
            .and_then(|a| a.downcast_ref::<DynamicResources>())
            .map(DynamicResources::take_deallocations)
            .unwrap_or_default()
    }

    /// Writes PostFilter's deallocations (each a ResourceClaim Update event).
    pub(super) fn apply_dra_deallocations(&mut self, keys: &[String]) {
        for key in keys {
            let Some(c) = self.snapshot.objects.dra.resource_claims.get(key).cloned() else {
                continue;
            };
            let mut c = (*c).clone();
            c.status.allocation = None;
            c.status.reserved_for.clear();
            c.status.devices.clear();
            self.write_claim(c);
        }
    }

    /// Unreserve's writes after a failed binding (upstream `Unreserve`'s strategic merge patch
    /// deleting the pod's `reservedFor` entry): each claim loses the pod's reservation (an
    /// Update event; the claim's sync then deallocates a claim left without consumers).
    pub(super) fn apply_dra_unreservations(&mut self, fwk: &ksim_scheduler::framework::Framework) {
        let list = fwk
            .plugin(dynamic_resources::NAME)
            .and_then(|p| p.as_any())
            .and_then(|a| a.downcast_ref::<DynamicResources>())
            .map(DynamicResources::take_unreservations)
            .unwrap_or_default();
        for (key, uid) in list {
            let Some(c) = self.snapshot.objects.dra.resource_claims.get(&key).cloned() else {
                continue;
            };
            if !c.is_reserved_for(&uid) {
                continue;
            }
            let mut c = (*c).clone();
            c.status.reserved_for.retain(|r| r.uid != uid);
            self.write_claim(c);
        }
    }

    /// Replaces a claim in the cluster (an Update event, or Add when new).
    fn write_claim(&mut self, c: ResourceClaim) {
        let watch = [(
            ObjectKind::ResourceClaim,
            c.metadata.namespace.clone(),
            c.metadata.name.clone(),
        )];
        self.change_objects(&watch, |objs| objs.put_object(ApiObject::ResourceClaim(c)));
    }

    /// A pod was created: indexed by its claims, and synced when it needs a claim created.
    pub(super) fn claims_pod_added(&mut self, info: &PodInfo) {
        if info.pod.spec.resource_claims.is_empty() {
            return;
        }
        self.index_pod_claims(info);
        self.enqueue_claims_pod(info);
    }

    /// A pod's object changed (an update, its status).
    pub(super) fn claims_pod_changed(&mut self, info: &PodInfo) {
        if info.pod.spec.resource_claims.is_empty() {
            return;
        }
        self.index_pod_claims(info);
        self.enqueue_claims_pod(info);
    }

    /// A pod is gone (ended): each claim it named is synced (its reservation goes, and a
    /// generated claim with it).
    pub(super) fn claims_pod_gone(&mut self, info: &PodInfo) {
        if info.pod.spec.resource_claims.is_empty() {
            return;
        }
        let key = info.key.clone();
        self.claims.waiting.remove(&key);
        if let Some(old) = self.claims.claims_of_pod.remove(&key) {
            for c in old {
                if let Some(s) = self.claims.pods_by_claim.get_mut(&c) {
                    s.remove(&key);
                    if s.is_empty() {
                        self.claims.pods_by_claim.remove(&c);
                    }
                }
            }
        }
        for c in claim_keys(&info.pod) {
            self.queue_claim_sync(format!("claim:{c}"), self.now + self.cfg.controller_delay());
        }
    }

    fn index_pod_claims(&mut self, info: &PodInfo) {
        let key = info.key.clone();
        let new = claim_keys(&info.pod);
        if self.claims.claims_of_pod.get(&key) == Some(&new) {
            return;
        }
        if let Some(old) = self.claims.claims_of_pod.remove(&key) {
            for c in old {
                if let Some(s) = self.claims.pods_by_claim.get_mut(&c) {
                    s.remove(&key);
                    if s.is_empty() {
                        self.claims.pods_by_claim.remove(&c);
                    }
                }
            }
        }
        for c in &new {
            self.claims
                .pods_by_claim
                .entry(c.clone())
                .or_default()
                .insert(key.clone());
        }
        self.claims.claims_of_pod.insert(key, new);
    }

    /// `enqueuePod` for a live pod: a sync when `podNeedsWork` says so.
    fn enqueue_claims_pod(&mut self, info: &PodInfo) {
        if self.pod_needs_work(&info.pod) {
            let at = self.now + self.cfg.controller_delay();
            self.queue_claim_sync(format!("pod:{}", info.key), at);
        }
    }

    /// `podNeedsWork`.
    fn pod_needs_work(&self, pod: &Pod) -> bool {
        if pod.metadata.deletion_timestamp.is_some() {
            return false;
        }
        let claims = &self.snapshot.objects.dra.resource_claims;
        for rc in &pod.spec.resource_claims {
            let (name, check_owner) = match claim_name_for(pod, rc) {
                Err(_) => return true,
                Ok(None) => return false,
                Ok(Some(n)) => n,
            };
            let key = format!("{}/{name}", pod.metadata.namespace);
            let Some(claim) = claims.get(&key) else {
                return rc.resource_claim_template_name.is_some();
            };
            if check_owner && !is_for_pod(pod, claim) {
                return false;
            }
            if pod.spec.node_name.is_empty() {
                continue;
            }
            if claim.status.allocation.is_some()
                && !claim.is_reserved_for(&pod.metadata.uid)
                && claim.can_be_reserved()
            {
                return true;
            }
        }
        false
    }

    /// A claim was added, updated or deleted (from any source): it is synced (unless deleted),
    /// and so are the pods that name it (`enqueueResourceClaim`).
    pub(super) fn claims_claim_changed(&mut self, namespace: &str, name: &str, deleted: bool) {
        let key = format!("{namespace}/{name}");
        let at = self.now + self.cfg.controller_delay();
        if !deleted {
            self.queue_claim_sync(format!("claim:{key}"), at);
        }
        let pods: Vec<String> = self
            .claims
            .pods_by_claim
            .get(&key)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for p in pods {
            let Some(&id) = self.live_get(&p) else {
                continue;
            };
            let info = self.pods[id as usize].info.clone();
            self.enqueue_claims_pod(&info);
        }
    }

    /// A template was created or updated: the pods whose sync failed for want of it are synced
    /// at the work queue's next retry after the informer has seen it.
    pub(super) fn claims_template_changed(&mut self, namespace: &str, name: &str) {
        let key = format!("{namespace}/{name}");
        let seen = self.now + self.cfg.controller_delay();
        let mut due = Vec::new();
        for (pod, w) in self.claims.waiting.iter_mut() {
            if w.template != key {
                continue;
            }
            let mut next = w.last + retry_delay(w.failures);
            while next < seen {
                w.failures += 1;
                w.last = next;
                next = w.last + retry_delay(w.failures);
            }
            due.push((format!("pod:{pod}"), next));
        }
        for (k, at) in due {
            self.queue_claim_sync(k, at);
        }
    }

    fn queue_claim_sync(&mut self, key: String, at: SimTime) {
        if self.claims.pending.insert((key.clone(), at)) {
            self.schedule(at, 0, Ev::ClaimSync(key));
        }
    }

    /// One API call of the controller's client; `false` (with the sync queued for the token)
    /// when it must wait.
    fn claims_call(&mut self, key: &str) -> bool {
        if self.cfg.controller_delay.is_some() {
            return true;
        }
        let t = &self.cfg.controller_timing;
        let (qps, burst) = (t.kube_api_qps, t.kube_api_burst);
        match self.claims.bucket.take(self.now, qps, burst) {
            Ok(()) => true,
            Err(at) => {
                self.queue_claim_sync(key.to_string(), at);
                false
            }
        }
    }

    /// `Ev::ClaimSync`: `syncHandler`.
    pub(super) fn claim_sync(&mut self, key: &str, obs: &mut dyn Observer) {
        self.claims.pending.remove(&(key.to_string(), self.now));
        if let Some(pod) = key.strip_prefix("pod:") {
            self.sync_claims_pod(key, pod, obs);
        } else if let Some(claim) = key.strip_prefix("claim:") {
            self.sync_claim(key, claim);
        }
    }

    /// `syncPod`.
    fn sync_claims_pod(&mut self, sync_key: &str, pod_key: &str, obs: &mut dyn Observer) {
        let Some(&id) = self.live_get(pod_key) else {
            return;
        };
        let pod = self.pods[id as usize].info.pod.clone();
        if pod.metadata.deletion_timestamp.is_some() {
            return;
        }
        let mut statuses: Vec<PodResourceClaimStatus> = Vec::new();
        for rc in &pod.spec.resource_claims {
            match self.handle_claim(sync_key, &pod, rc) {
                Ok(Some(name)) => statuses.push(PodResourceClaimStatus {
                    name: rc.name.clone(),
                    resource_claim_name: Some(name),
                }),
                Ok(None) => {}
                Err(Stop::Throttled) => return,
                Err(Stop::Failed(msg, template)) => {
                    self.claims_sync_failed(pod_key, &pod, &rc.name, msg, template, obs);
                    return;
                }
            }
        }
        self.claims.waiting.remove(pod_key);
        if !statuses.is_empty() {
            if !self.claims_call(sync_key) {
                return;
            }
            self.set_claim_statuses(id, statuses);
        }
        if pod.spec.node_name.is_empty() || !matches!(self.pods[id as usize].phase, PodPhase::Bound)
        {
            return;
        }
        // `reserveForPod`: a pod bound without the scheduler.
        let pod = self.pods[id as usize].info.pod.clone();
        for rc in &pod.spec.resource_claims {
            let Ok(Some((name, check_owner))) = claim_name_for(&pod, rc) else {
                continue;
            };
            let key = format!("{}/{name}", pod.metadata.namespace);
            let Some(claim) = self.snapshot.objects.dra.resource_claims.get(&key).cloned() else {
                return;
            };
            if check_owner && !is_for_pod(&pod, &claim) {
                return;
            }
            if claim.status.allocation.is_some()
                && !claim.is_reserved_for(&pod.metadata.uid)
                && claim.can_be_reserved()
            {
                if !self.claims_call(sync_key) {
                    return;
                }
                let mut c = (*claim).clone();
                c.status.reserved_for.push(ResourceClaimConsumerReference {
                    api_group: String::new(),
                    resource: "pods".into(),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                });
                self.write_claim(c);
            }
        }
    }

    /// `handleClaim`: the claim name to record in the pod's status (`None`: nothing to
    /// record).
    fn handle_claim(
        &mut self,
        sync_key: &str,
        pod: &Pod,
        rc: &PodResourceClaim,
    ) -> Result<Option<String>, Stop> {
        let ns = &pod.metadata.namespace;
        match claim_name_for(pod, rc) {
            Ok(None) => return Ok(None),
            Ok(Some((name, must_check_owner))) => {
                let key = format!("{ns}/{name}");
                if let Some(c) = self.snapshot.objects.dra.resource_claims.get(&key) {
                    if !must_check_owner || is_for_pod(pod, c) {
                        return Ok(None);
                    }
                }
            }
            Err(_) if rc.resource_claim_template_name.is_some() => {}
            Err(e) => {
                return Err(Stop::Failed(
                    format!("checking for claim before creating it: {e}"),
                    None,
                ))
            }
        }
        let Some(template) = rc.resource_claim_template_name.clone() else {
            return Ok(None);
        };
        // `findPodResourceClaim`: one the controller made before the pod's status said so.
        let deterministic = format!("{}-{}", pod.metadata.name, rc.name);
        let found = self
            .snapshot
            .objects
            .dra
            .resource_claims
            .range(format!("{ns}/")..)
            .take_while(|(k, _)| k.starts_with(&format!("{ns}/")))
            .find(|(_, c)| {
                is_for_pod(pod, c)
                    && match c.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION) {
                        Some(n) => *n == rc.name,
                        None => c.metadata.name == deterministic,
                    }
            })
            .map(|(_, c)| c.metadata.name.clone());
        if let Some(name) = found {
            return Ok(Some(name));
        }
        let tkey = format!("{ns}/{template}");
        let Some(t) = self
            .snapshot
            .objects
            .dra
            .resource_claim_templates
            .get(&tkey)
            .cloned()
        else {
            return Err(Stop::Failed(
                format!(
                    "resource claim template {template:?}: resourceclaimtemplate.resource.k8s.io \
                     {template:?} not found"
                ),
                Some(tkey),
            ));
        };
        if !self.claims_call(sync_key) {
            return Err(Stop::Throttled);
        }
        let base = generate_name(&pod.metadata.name, &rc.name);
        let name = loop {
            let suffix: String = (0..5)
                .map(|_| ALPHABET[self.claims.rng.random_range(0..ALPHABET.len())] as char)
                .collect();
            let name = format!("{base}{suffix}");
            if !self
                .snapshot
                .objects
                .dra
                .resource_claims
                .contains_key(&format!("{ns}/{name}"))
            {
                break name;
            }
        };
        let mut c = ResourceClaim {
            api_version: ksim_api::resource::API_VERSION.into(),
            kind: "ResourceClaim".into(),
            ..Default::default()
        };
        c.metadata.name = name.clone();
        c.metadata.namespace = ns.clone();
        c.metadata.generate_name = base;
        c.metadata.labels = t.spec.metadata.labels.clone();
        c.metadata.annotations = t.spec.metadata.annotations.clone();
        c.metadata
            .annotations
            .insert(POD_CLAIM_NAME_ANNOTATION.into(), rc.name.clone());
        c.metadata.creation_timestamp = Some(crate::time::rfc3339(self.now));
        c.metadata.owner_references = vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            controller: Some(true),
        }];
        c.spec = t.spec.spec.clone();
        ksim_api::resource::default_resource_claim(&mut c);
        self.write_claim(c);
        Ok(Some(name))
    }

    /// A pod's sync failed: recorded once per message (upstream's `FailedResourceClaimCreation`
    /// event), and, when a template is missing, remembered for its creation.
    fn claims_sync_failed(
        &mut self,
        pod_key: &str,
        pod: &Pod,
        entry: &str,
        msg: String,
        template: Option<String>,
        obs: &mut dyn Observer,
    ) {
        let now = self.now;
        match template {
            Some(template) => {
                let w = self
                    .claims
                    .waiting
                    .entry(pod_key.to_string())
                    .or_insert(Waiting {
                        template: template.clone(),
                        failures: 0,
                        last: now,
                    });
                let first = w.failures == 0;
                w.template = template;
                w.failures += 1;
                w.last = now;
                if !first {
                    return;
                }
            }
            None => {
                // Retried after the work queue's backoff.
                let at = now + SimDuration::from_micros(5_000);
                self.queue_claim_sync(format!("pod:{pod_key}"), at);
            }
        }
        obs.record(&Record::PodWaiting {
            at: now,
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            by: CONTROLLER_NAME.into(),
            message: format!("PodResourceClaim {entry}: {msg}"),
        });
    }

    /// The controller's status apply: `status.resourceClaimStatuses` entries set by name.
    fn set_claim_statuses(&mut self, id: PodId, statuses: Vec<PodResourceClaimStatus>) {
        let merge = |list: &mut Vec<PodResourceClaimStatus>| {
            for s in &statuses {
                match list.iter_mut().find(|x| x.name == s.name) {
                    Some(x) => *x = s.clone(),
                    None => list.push(s.clone()),
                }
            }
        };
        let phase = self.pods[id as usize].phase;
        match phase {
            PodPhase::Pending => {
                let old = self.pods[id as usize].info.clone();
                let mut p = old.pod.clone();
                merge(&mut p.status.resource_claim_statuses);
                let info = Arc::new(old.with_object(p));
                self.pods[id as usize].info = info.clone();
                if self.in_flight == Some(id) {
                    self.queue.replace_in_flight(id, info.clone());
                } else if let Some(fwk) = self.framework_for(&info) {
                    self.refresh_dra_objects(true);
                    self.queue.update(id, info.clone(), self.now.micros(), &fwk);
                }
                self.nominator.update(info.clone());
                self.claims_pod_changed(&info);
            }
            PodPhase::Binding | PodPhase::Bound => {
                let slot = &mut self.pods[id as usize];
                self.snapshot
                    .update_pod_status(&slot.node, &mut slot.info, |s| {
                        merge(&mut s.resource_claim_statuses)
                    });
                let info = self.pods[id as usize].info.clone();
                self.claims_pod_changed(&info);
            }
            PodPhase::Ended(_) => {}
        }
    }

    /// `syncClaim`.
    fn sync_claim(&mut self, sync_key: &str, claim_key: &str) {
        let Some(claim) = self
            .snapshot
            .objects
            .dra
            .resource_claims
            .get(claim_key)
            .cloned()
        else {
            return;
        };
        let valid: Vec<ResourceClaimConsumerReference> = claim
            .status
            .reserved_for
            .iter()
            .filter(|r| {
                !(r.api_group.is_empty() && r.resource == "pods")
                    || self.pod_runs(&claim.metadata.namespace, &r.name, &r.uid)
            })
            .cloned()
            .collect();
        let finalizer = claim.metadata.finalizers_contains(FINALIZER);
        let mut current = (*claim).clone();
        if valid.len() < claim.status.reserved_for.len() {
            if !self.claims_call(sync_key) {
                return;
            }
            current.status.reserved_for = valid.clone();
            if valid.is_empty() && finalizer {
                current.status.allocation = None;
                current.status.devices.clear();
            }
            self.write_claim(current.clone());
            if finalizer && current.status.allocation.is_none() {
                if !self.claims_call(sync_key) {
                    return;
                }
                current.metadata.finalizers.retain(|f| f != FINALIZER);
                self.write_claim(current.clone());
            }
        }
        if !valid.is_empty() {
            return;
        }
        let Some((pod_name, pod_uid)) = owning_pod(&current) else {
            return;
        };
        let ns = current.metadata.namespace.clone();
        let pod_key = format!("{ns}/{pod_name}");
        let gone_or_replaced = match self.live_get(&pod_key) {
            None => true,
            Some(&id) => self.pods[id as usize].info.pod.metadata.uid != pod_uid,
        };
        if gone_or_replaced {
            if !self.claims_call(sync_key) {
                return;
            }
            let name = current.metadata.name.clone();
            let watch = [(ObjectKind::ResourceClaim, ns.clone(), name.clone())];
            self.change_objects(&watch, |objs| {
                objs.delete_object(ObjectKind::ResourceClaim, &ns, &name)
            });
        }
    }

    /// Whether the pod `namespace/name` with `uid` is live and not done (`isPodDone`: a live
    /// pod in ksim has not terminated).
    fn pod_runs(&self, namespace: &str, name: &str, uid: &str) -> bool {
        match self.live_get(&format!("{namespace}/{name}")) {
            Some(&id) => {
                let slot = &self.pods[id as usize];
                slot.info.pod.metadata.uid == uid && !matches!(slot.phase, PodPhase::Ended(_))
            }
            None => false,
        }
    }

    /// Records a pod that `DynamicResources` keeps out of the queue (its PreEnqueue message).
    pub(super) fn record_dra_gate(&self, id: PodId, obs: &mut dyn Observer) {
        let Some(q) = self.queue.get(id) else {
            return;
        };
        if q.gated_by != Some(dynamic_resources::NAME) {
            return;
        }
        let info = &self.pods[id as usize].info;
        obs.record(&Record::PodWaiting {
            at: self.now,
            namespace: info.namespace().to_string(),
            name: info.name().to_string(),
            by: dynamic_resources::NAME.into(),
            message: q.gate_message.clone(),
        });
    }
}

/// The work queue's delay before retry number `failures` (1-based count of failures so far).
fn retry_delay(failures: u32) -> SimDuration {
    let exp = failures.saturating_sub(1).min(30);
    let d = RETRY_BASE.micros().saturating_mul(1i64 << exp);
    SimDuration::from_micros(d.min(RETRY_MAX.micros()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_name_is_pod_entry_then_cut_in_proportion() {
        assert_eq!(generate_name("train-0", "gpu"), "train-0-gpu-");
        let pod = "p".repeat(60);
        let entry = "e".repeat(20);
        // base "<60>-<20>-" is 82 long: 60*57/82 = 41 and 20*57/82 = 13, no trailing hyphen.
        let g = generate_name(&pod, &entry);
        assert_eq!(g, format!("{}-{}", "p".repeat(41), "e".repeat(13)));
        assert!(g.len() + 5 <= 63);
    }

    #[test]
    fn retries_double_from_5ms_to_1000s() {
        assert_eq!(retry_delay(1), SimDuration::from_millis(5));
        assert_eq!(retry_delay(2), SimDuration::from_millis(10));
        assert_eq!(retry_delay(40), SimDuration::from_secs(1000));
    }
}
