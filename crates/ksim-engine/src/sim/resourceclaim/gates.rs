//! The API server's side of the DRA feature gates: a DRA object whose fields belong to a gate
//! is admitted only when the run's gate is on and ksim models the gate
//! ([`ksim_scheduler::plugins::dynamic_resources::MODELLED_GATES`]); otherwise it is refused,
//! naming the object, the field and the gate (`ksim_api::resource::check_gates`). Upstream's
//! API server drops such fields when the gate is off (`dropDisabledFields`); ksim refuses
//! rather than scheduling as if they were absent.

use ksim_api::object::ApiObject;
use ksim_scheduler::cluster_objects::DraObjects;
use ksim_scheduler::plugins::dynamic_resources::MODELLED_GATES;

use crate::sim::{SimError, Simulation};

impl Simulation {
    /// `CreateObject` / `UpdateObject` of a DRA object: its gated fields against the run.
    pub(in crate::sim) fn check_dra_gates(&self, obj: &ApiObject) -> Result<(), SimError> {
        ksim_api::resource::check_gates(obj, self.feature_gates(), MODELLED_GATES)
            .map_err(|e| self.input_err(format!("{} {}: {e}", obj.kind(), obj.key())))
    }

    /// The DRA objects present at t=0, in kind and name order.
    pub(in crate::sim) fn check_initial_dra_gates(&self, dra: &DraObjects) -> Result<(), SimError> {
        let objects = dra
            .device_classes
            .values()
            .map(|c| ApiObject::DeviceClass((**c).clone()))
            .chain(
                dra.resource_slices
                    .values()
                    .map(|s| ApiObject::ResourceSlice((**s).clone())),
            )
            .chain(
                dra.resource_claims
                    .values()
                    .map(|c| ApiObject::ResourceClaim((**c).clone())),
            )
            .chain(
                dra.resource_claim_templates
                    .values()
                    .map(|t| ApiObject::ResourceClaimTemplate((**t).clone())),
            );
        for o in objects {
            self.check_dra_gates(&o)?;
        }
        Ok(())
    }
}
