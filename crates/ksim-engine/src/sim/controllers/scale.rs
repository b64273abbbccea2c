//! What-if replica factors (`EngineConfig::controller_scale`, see
//! [`crate::config::ControllerScale`]): a controller's factor is chosen when it is created and
//! multiplies `spec.replicas` (Deployment, ReplicaSet, StatefulSet) or `spec.parallelism` and
//! `spec.completions` (Job; a CronJob's `jobTemplate`) of its object and of every
//! `UpdateObject` it gets, rounded up.
//! DaemonSets and PriorityClasses are not scaled.

use ksim_api::object::ObjectKind;
use ksim_api::workloads::{Workload, WorkloadSpec};

use super::Simulation;
use crate::config::{check_scale, scale_count, SCALE_ANNOTATION};
use crate::sim::SimError;

/// Multiplies the counts of `spec` by `f` (a no-op for 1).
pub(super) fn apply(kind: ObjectKind, spec: &mut WorkloadSpec, f: f64) {
    if f == 1.0 {
        return;
    }
    match kind {
        ObjectKind::Deployment | ObjectKind::ReplicaSet | ObjectKind::StatefulSet => {
            spec.replicas = Some(scale_count(spec.replicas.unwrap_or(1), f));
        }
        ObjectKind::Job => {
            spec.parallelism = Some(scale_count(spec.parallelism.unwrap_or(1), f));
            spec.completions = spec.completions.map(|n| scale_count(n, f));
        }
        ObjectKind::CronJob => {
            if let Some(jt) = spec.job_template.as_mut() {
                apply(ObjectKind::Job, &mut jt.spec, f);
            }
        }
        _ => {}
    }
}

impl Simulation {
    /// The factor of a new controller; its `ksim.io/scale` annotation is read and removed.
    pub(super) fn scale_of(&self, kind: ObjectKind, w: &mut Workload) -> Result<f64, SimError> {
        let annotated = match w.metadata.annotations.remove(SCALE_ANNOTATION) {
            None => None,
            Some(text) => {
                let f: f64 = text.trim().parse().map_err(|_| {
                    self.input_err(format!(
                        "CreateObject: {kind} {}/{}: metadata.annotations[{SCALE_ANNOTATION}]: \
                         {text:?} is not a number",
                        w.metadata.namespace, w.metadata.name
                    ))
                })?;
                check_scale(f).map_err(|m| {
                    self.input_err(format!(
                        "CreateObject: {kind} {}/{}: metadata.annotations[{SCALE_ANNOTATION}]: {m}",
                        w.metadata.namespace, w.metadata.name
                    ))
                })?;
                Some(f)
            }
        };
        Ok(self.cfg.controller_scale.factor_of(
            kind.as_str(),
            &w.metadata.namespace,
            &w.metadata.name,
            annotated,
        ))
    }
}
