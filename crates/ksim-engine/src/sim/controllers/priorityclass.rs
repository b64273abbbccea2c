//! PriorityClasses and the Priority admission plugin: a pod's priority and preemption policy
//! are resolved when it is created, as upstream's `plugin/pkg/admission/priority` does.
//!
//! - A pod without `priorityClassName` gets the `globalDefault` class (the lowest-valued one if
//!   several claim it): its name, value and preemption policy; with no default class, priority 0.
//! - A pod naming a class gets its value and policy; the built-ins `system-node-critical`
//!   (2000001000) and `system-cluster-critical` (2000000000) always exist.
//! - Refused, as upstream refuses them: a class that does not exist (`no PriorityClass with
//!   name foo was found`), a `spec.priority` or `spec.preemptionPolicy` that differs from what
//!   the class gives. Only that pod's creation is refused (`sim/admission` records it); a
//!   workload whose template names an unknown class is accepted, as the API server accepts it,
//!   and its controller keeps retrying its pods.
//!
//! Deliberate difference: a pod that already carries `spec.priority` and names a class ksim was
//! not given (a recorded or imported pod that was admitted in its own cluster) keeps its
//! priority, so traces need not ship their PriorityClasses. Deleting or changing a class does
//! not change existing pods (as upstream).

use ksim_api::defaults::builtin_priority;
use ksim_api::object::ApiObject;
use ksim_api::{Pod, PriorityClass};

use super::Simulation;
use crate::record::Observer;
use crate::sim::SimError;

const PREEMPT_LOWER: &str = "PreemptLowerPriority";

impl Simulation {
    /// `CreateObject` / `UpdateObject` of any object: workloads go to their controllers,
    /// PriorityClasses to admission, the rest to the cluster objects.
    pub(in crate::sim) fn create_any(
        &mut self,
        object: Box<ApiObject>,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        self.check_dra_gates(&object)?;
        match super::as_workload(object) {
            Ok((kind, w)) => self.create_workload(kind, w),
            Err(o) => match *o {
                ApiObject::PriorityClass(pc) => self.put_priority_class(pc, true),
                o @ (ApiObject::LimitRange(_) | ApiObject::ResourceQuota(_)) => {
                    self.put_admission_object(o, true)
                }
                o => self.create_object(o, obs),
            },
        }
    }

    pub(in crate::sim) fn update_any(
        &mut self,
        object: Box<ApiObject>,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        self.check_dra_gates(&object)?;
        match super::as_workload(object) {
            Ok((kind, w)) => self.update_workload(kind, w),
            Err(o) => match *o {
                ApiObject::PriorityClass(pc) => self.put_priority_class(pc, false),
                o @ (ApiObject::LimitRange(_) | ApiObject::ResourceQuota(_)) => {
                    self.put_admission_object(o, false)
                }
                o => self.update_object(o, obs),
            },
        }
    }

    fn put_priority_class(&mut self, pc: PriorityClass, create: bool) -> Result<(), SimError> {
        let name = pc.metadata.name.clone();
        let exists = self.controllers.classes.contains_key(&name);
        if create && exists {
            return Err(
                self.input_err(format!("CreateObject: PriorityClass {name} already exists"))
            );
        }
        if !create && !exists {
            return Err(
                self.input_err(format!("UpdateObject: PriorityClass {name} does not exist"))
            );
        }
        if let Some(old) = self.controllers.classes.get(&name) {
            // Upstream: value and preemptionPolicy are immutable.
            if old.value != pc.value || old.preemption_policy != pc.preemption_policy {
                return Err(self.input_err(format!(
                    "UpdateObject: PriorityClass {name}: value and preemptionPolicy may not change"
                )));
            }
        }
        if pc.global_default {
            if let Some(other) = self
                .controllers
                .classes
                .values()
                .find(|c| c.global_default && c.metadata.name != name)
            {
                return Err(self.input_err(format!(
                    "PriorityClass {name}: globalDefault: PriorityClass {} is already marked as default; only one default can exist",
                    other.metadata.name
                )));
            }
        }
        self.controllers.classes.insert(name, pc);
        Ok(())
    }

    /// `DeleteObject` of a PriorityClass.
    pub(in crate::sim) fn delete_priority_class(&mut self, name: &str) -> Result<(), SimError> {
        if self.controllers.classes.remove(name).is_none() {
            return Err(
                self.input_err(format!("DeleteObject: PriorityClass {name} does not exist"))
            );
        }
        Ok(())
    }

    /// The Priority admission plugin on a new pod: sets `spec.priority`, `spec.preemptionPolicy`
    /// (and the default class's name), or says why the pod is refused.
    pub(in crate::sim) fn admit_priority(&self, pod: &mut Pod) -> Result<(), String> {
        let spec = &mut pod.spec;
        let (name, value, policy) = if spec.priority_class_name.is_empty() {
            match self
                .controllers
                .classes
                .values()
                .filter(|c| c.global_default)
                .min_by_key(|c| c.value)
            {
                Some(c) => (
                    c.metadata.name.clone(),
                    c.value,
                    c.preemption_policy.clone(),
                ),
                // No default class: priority 0 (unset reads as 0; a recorded pod keeps the
                // priority it has).
                None => return Ok(()),
            }
        } else if let Some(v) = builtin_priority(&spec.priority_class_name) {
            (spec.priority_class_name.clone(), v, None)
        } else if let Some(c) = self.controllers.classes.get(&spec.priority_class_name) {
            (
                c.metadata.name.clone(),
                c.value,
                c.preemption_policy.clone(),
            )
        } else if spec.priority.is_some() {
            // Admitted elsewhere (see the module docs).
            return Ok(());
        } else {
            return Err(format!(
                "no PriorityClass with name {} was found",
                spec.priority_class_name
            ));
        };
        if let Some(p) = spec.priority.filter(|p| *p != value) {
            return Err(format!(
                "the integer value of priority ({p}) must not be provided in pod spec; priority \
                 admission controller computed {value} from the given PriorityClass name"
            ));
        }
        let policy = policy.unwrap_or_else(|| PREEMPT_LOWER.to_string());
        if let Some(p) = spec.preemption_policy.as_ref().filter(|p| **p != policy) {
            return Err(format!(
                "the string value of PreemptionPolicy ({p}) must not be provided in pod spec; \
                 priority admission controller computed {policy} from the given PriorityClass \
                 name"
            ));
        }
        spec.priority_class_name = name;
        spec.priority = Some(value);
        spec.preemption_policy = Some(policy);
        Ok(())
    }
}
