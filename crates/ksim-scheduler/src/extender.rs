//! Scheduler extenders (upstream `framework.Extender`): after the Filter plugins the remaining
//! nodes pass through each interested extender's filter in turn; each interested extender's
//! scores, times its weight, scaled from `MaxExtenderPriority` (10) to `MaxNodeScore` (100), are
//! added to the nodes' totals; preemption hands its candidates to each interested extender that
//! supports preemption (`callExtenders`); the binding cycle lets the first interested binder
//! extender bind the pod (`extendersBinding`).
//!
//! The trait does no I/O itself: the engine supplies the implementation (HTTP).

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::core::Node;

use crate::pod_info::PodInfo;

/// `extenderv1.MaxExtenderPriority`.
pub const MAX_EXTENDER_PRIORITY: i64 = 10;
/// `framework.ExtenderName`: how a rejection by an extender is named among the plugins that
/// rejected a pod.
pub const EXTENDER_NAME: &str = "Extender";

/// What an extender's filter answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterResult {
    /// Names of the nodes that pass, in the extender's order.
    pub passed: Vec<String>,
    /// Rejected nodes and why (Unschedulable).
    pub failed: BTreeMap<String, String>,
    /// Rejected nodes that preemption cannot help, and why (UnschedulableAndUnresolvable; takes
    /// precedence over `failed`).
    pub failed_unresolvable: BTreeMap<String, String>,
}

/// A preemption candidate's victims as sent to an extender (`extenderv1.Victims`).
#[derive(Debug, Clone, Copy)]
pub struct Victims<'a> {
    /// Most important first, as the dry run ordered them.
    pub pods: &'a [Arc<PodInfo>],
    pub num_pdb_violations: i64,
}

/// What an extender's preempt verb keeps for one node (`extenderv1.MetaVictims`): the victims
/// by UID, in the extender's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaVictims {
    pub pods: Vec<String>,
    pub num_pdb_violations: i64,
}

/// One configured extender.
pub trait Extender: Send + Sync {
    /// A name for messages (upstream: the URL prefix).
    fn name(&self) -> &str;
    /// Whether it has a filter verb.
    fn is_filter(&self) -> bool;
    /// Whether it has a prioritize verb.
    fn is_prioritizer(&self) -> bool;
    /// Whether an error from it is skipped rather than failing the scheduling attempt.
    fn is_ignorable(&self) -> bool;
    /// Whether it is called for this pod (managed resources).
    fn is_interested(&self, pod: &PodInfo) -> bool;
    /// Filters `nodes`; an error string on transport or extender error.
    fn filter(&self, pod: &PodInfo, nodes: &[&Node]) -> Result<FilterResult, String>;
    /// Scores `nodes` (0..=10 each); returns the scores and the extender's weight.
    #[allow(clippy::type_complexity)]
    fn prioritize(
        &self,
        pod: &PodInfo,
        nodes: &[&Node],
    ) -> Result<(Vec<(String, i64)>, i64), String>;
    /// Whether it has a bind verb.
    fn is_binder(&self) -> bool;
    /// Binds `pod` to `node` (`ExtenderBindingArgs`); an error string on transport or extender
    /// error.
    fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), String>;
    /// Whether it has a preempt verb.
    fn supports_preemption(&self) -> bool;
    /// `ProcessPreemption` up to the answer: sends the candidates (node name → victims, in node
    /// name order) and returns the extender's `NodeNameToMetaVictims`, in its order (a node
    /// whose entry is `null` has no victims).
    fn process_preemption(
        &self,
        pod: &PodInfo,
        victims: &[(&str, Victims<'_>)],
    ) -> Result<Vec<(String, MetaVictims)>, String>;
}

/// `IsInterested` for an extender managing `managed` resources: every pod when the list is
/// empty, else a pod whose containers or init containers request or limit one of them.
pub fn pod_uses_managed_resources(pod: &PodInfo, managed: &[String]) -> bool {
    if managed.is_empty() {
        return true;
    }
    let spec = &pod.pod.spec;
    spec.containers
        .iter()
        .chain(spec.init_containers.iter())
        .any(|c| {
            c.resources
                .requests
                .keys()
                .any(|k| managed.iter().any(|m| m == k))
                || c.resources
                    .limits
                    .keys()
                    .any(|k| managed.iter().any(|m| m == k))
        })
}
