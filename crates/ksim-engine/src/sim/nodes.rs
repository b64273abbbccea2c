//! Room: the node lifecycle. Owns `node_order` (arrival order, the autoscaler's scale-down
//! order) and the ghosts of removed nodes that still had pods (restored if the node comes back).
//!
//! Reacts to: the inputs `AddNode`, `UpdateNode` and `RemoveNode`, and the autoscaler's node
//! additions and removals (`sim/autoscaler.rs` calls `add_node`/`remove_node`). Each change updates
//! the snapshot and is dispatched as a cluster event with upstream's node-change kinds
//! ([`node_change_kinds`]); a removal's pods either stay on a ghost (`keepBound`) or fail through
//! the pods room. Also the record helpers [`pool_of`] and [`amounts`].

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::defaults::default_node;
use ksim_api::Node;
use ksim_scheduler::framework::ClusterEventKind;
use ksim_scheduler::node_info::NodeInfo;

use super::hints::OwnedEvent;
use super::{PodId, SimError, Simulation};
use crate::config::OnNodeRemoval;
use crate::record::{Amounts, Observer, Record};
impl Simulation {
    pub(super) fn add_node(
        &mut self,
        mut node: Node,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        default_node(&mut node);
        let name = node.metadata.name.clone();
        if self.snapshot.index.contains_key(&name) {
            return Err(self.input_err(format!("AddNode: node {name} already exists")));
        }
        let node = Arc::new(node);
        self.node_order.retain(|n| n != &name);
        self.node_order.push(name.clone());
        let info = match self.ghosts.remove(&name) {
            Some(mut g) => {
                g.set_node(node.clone());
                g
            }
            None => NodeInfo::new(node.clone()),
        };
        obs.record(&Record::NodeAdded {
            at: self.now,
            node: name,
            pool: pool_of(&node),
            allocatable: amounts(&info.allocatable),
        });
        self.snapshot.add_node(info);
        self.dispatch(OwnedEvent::Node {
            kinds: vec![ClusterEventKind::NodeAdd],
            old: None,
            new: Some(node.clone()),
        });
        self.controllers_node_added();
        self.taint_eviction_node_written(&name_of(&node));
        self.lifecycle_node_written(None, Some(&node), obs);
        Ok(())
    }

    pub(super) fn update_node(
        &mut self,
        mut node: Node,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        default_node(&mut node);
        let name = node.metadata.name.clone();
        let Some(old) = self.snapshot.get(&name).map(|n| n.node.clone()) else {
            return Err(self.input_err(format!("UpdateNode: node {name} does not exist")));
        };
        let node = Arc::new(node);
        if node
            .spec
            .taints
            .iter()
            .any(|t| t.key == super::podgc::TAINT_OUT_OF_SERVICE)
        {
            // Terminating pods there are the pod GC's (`gcTerminating`).
            self.pod_gc_wake();
        }
        let kinds = node_change_kinds(&old, &node);
        if old.spec.taints != node.spec.taints
            || old.metadata.labels != node.metadata.labels
            || old.spec.unschedulable != node.spec.unschedulable
        {
            self.controllers_node_added();
        }
        self.snapshot.update_node(node.clone());
        if let Some(n) = self.snapshot.get(&name) {
            obs.record(&Record::NodeUpdated {
                at: self.now,
                node: name,
                allocatable: amounts(&n.allocatable),
                unschedulable: node.spec.unschedulable,
            });
        }
        if !kinds.is_empty() {
            self.dispatch(OwnedEvent::Node {
                kinds,
                old: Some(old.clone()),
                new: Some(node.clone()),
            });
        }
        // The controllers see the write: taint-based eviction first (it reads the node as it
        // is), then the node lifecycle controller, whose own writes come back through here.
        self.taint_eviction_node_written(&name_of(&node));
        self.lifecycle_node_written(Some(&old), Some(&node), obs);
        Ok(())
    }

    /// Removes a node; `false` when there was no such node.
    pub(super) fn remove_node(&mut self, name: &str, obs: &mut dyn Observer) -> bool {
        let Some(info) = self.snapshot.remove_node(name) else {
            return false;
        };
        self.node_order.retain(|n| n != name);
        obs.record(&Record::NodeRemoved {
            at: self.now,
            node: name.to_string(),
        });
        let old = info.node.clone();
        match self.cfg.on_node_removal {
            OnNodeRemoval::KeepBound => {
                if !info.pods.is_empty() {
                    self.ghosts.insert(name.to_string(), info);
                    // Orphans for the pod GC (`gcOrphaned`).
                    self.pod_gc_wake();
                }
            }
            mode => {
                let victims: Vec<PodId> = info
                    .pods
                    .iter()
                    .filter_map(|p| self.live_get(&p.key).copied())
                    .collect();
                for id in victims {
                    self.fail_on_node_removal(id, mode, obs);
                }
            }
        }
        self.dispatch(OwnedEvent::Node {
            kinds: vec![ClusterEventKind::NodeDelete],
            old: Some(old.clone()),
            new: None,
        });
        self.controllers_node_added();
        self.taint_eviction_node_written(name);
        self.lifecycle_node_written(Some(&old), None, obs);
        true
    }
}
fn name_of(node: &Node) -> String {
    node.metadata.name.clone()
}

/// The kinds of change between two versions of a node (upstream `NodeSchedulingPropertiesChange`).
pub fn node_change_kinds(old: &Node, new: &Node) -> Vec<ClusterEventKind> {
    // Extractors in upstream's order, each event offered on its own. Only an uncordon counts
    // (as UpdateNodeTaint): a cordon makes no node more schedulable, so it is no event at all.
    let mut k = Vec::new();
    if old.spec.unschedulable && !new.spec.unschedulable {
        k.push(ClusterEventKind::NodeUpdateTaint);
    }
    if old.status.allocatable != new.status.allocatable {
        k.push(ClusterEventKind::NodeUpdateAllocatable);
    }
    if old.metadata.labels != new.metadata.labels {
        k.push(ClusterEventKind::NodeUpdateLabel);
    }
    if old.spec.taints != new.spec.taints {
        k.push(ClusterEventKind::NodeUpdateTaint);
    }
    // Conditions compare as type -> status only (upstream strips reasons and timestamps).
    let conditions = |n: &Node| -> BTreeMap<String, String> {
        n.status
            .conditions
            .iter()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect()
    };
    if conditions(old) != conditions(new) {
        k.push(ClusterEventKind::NodeUpdateCondition);
    }
    if old.metadata.annotations != new.metadata.annotations {
        k.push(ClusterEventKind::NodeUpdateAnnotation);
    }
    k
}
/// The node's pool label (`ksim.io/pool`), or "".
pub fn pool_of(node: &Node) -> String {
    node.metadata
        .labels
        .get("ksim.io/pool")
        .cloned()
        .unwrap_or_default()
}

/// A `Resource` as name → amount pairs.
pub fn amounts(r: &ksim_scheduler::resource::Resource) -> Amounts {
    let mut v: Amounts = vec![("cpu".into(), r.milli_cpu), ("memory".into(), r.memory)];
    if r.ephemeral_storage != 0 {
        v.push(("ephemeral-storage".into(), r.ephemeral_storage));
    }
    if r.allowed_pod_number != 0 {
        v.push(("pods".into(), r.allowed_pod_number));
    }
    for (n, a) in &r.scalar {
        v.push((n.clone(), *a));
    }
    v.sort();
    v
}
