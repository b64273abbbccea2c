//! DRAExtendedResource in the engine: the claim DynamicResources' PreBind hands on for a
//! pod's extended resources is created (upstream `createExtendedResourceClaimInAPI`, the API
//! server naming it from `generateName`), and the pod's `status.extendedResourceClaimStatus`
//! names it (`patchPodExtendedResourceClaimStatus`). The resource claim controller deletes it
//! once the pod is done (see `resourceclaim.rs`).

use std::sync::Arc;

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::resource::extended::{
    ContainerExtendedResourceRequest, PodExtendedResourceClaimStatus,
};
use ksim_api::resource::ResourceClaim;

use super::{PodId, PodPhase, Simulation};

/// `names.SimpleNameGenerator`: a `generateName` longer than this is cut to it.
const MAX_GENERATED_BASE: usize = 58;

impl Simulation {
    /// Creates the pod's extended resource claim and records it in the pod's status.
    pub(super) fn create_extended_resource_claim(
        &mut self,
        pod: PodId,
        mut claim: ResourceClaim,
        mappings: Vec<ContainerExtendedResourceRequest>,
    ) {
        let ns = claim.metadata.namespace.clone();
        let mut base = claim.metadata.generate_name.clone();
        if base.len() > MAX_GENERATED_BASE {
            let mut end = MAX_GENERATED_BASE;
            while !base.is_char_boundary(end) {
                end -= 1;
            }
            base.truncate(end);
        }
        let name = self.generated_claim_name(&ns, &base);
        claim.metadata.name = name.clone();
        claim.metadata.creation_timestamp = Some(crate::time::rfc3339(self.now));
        ksim_api::resource::default_resource_claim(&mut claim);
        let watch = [(ObjectKind::ResourceClaim, ns, name.clone())];
        self.change_objects(&watch, |objs| {
            objs.put_object(ApiObject::ResourceClaim(claim))
        });
        let status = PodExtendedResourceClaimStatus {
            request_mappings: mappings,
            resource_claim_name: name,
        };
        let slot = &mut self.pods[pod as usize];
        match slot.phase {
            PodPhase::Binding | PodPhase::Bound => {
                self.snapshot
                    .update_pod_status(&slot.node, &mut slot.info, |s| {
                        s.extended_resource_claim_status = Some(status)
                    });
            }
            PodPhase::Pending => {
                let mut p = slot.info.pod.clone();
                p.status.extended_resource_claim_status = Some(status);
                slot.info = Arc::new(slot.info.with_object(p));
            }
            PodPhase::Ended(_) => {}
        }
        // DynamicResources' Unreserve looks the claim up if the binding fails.
        self.refresh_dra_objects(true);
    }
}
