//! In-tree plugins, one module each, named as upstream names them. Each module's doc comment
//! names the upstream plugin it mirrors and any deliberate difference.

use crate::framework::Registry;

pub mod default_binder;
pub mod default_preemption;
pub mod dynamic_resources;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_declared_features;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_balanced_allocation;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pod_topology_spread;
pub mod priority_sort;
pub mod scheduling_gates;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

pub mod helper;

/// Registers every in-tree plugin under its upstream name.
pub fn register_in_tree(r: &mut Registry) {
    r.register(scheduling_gates::NAME, scheduling_gates::new);
    r.register(priority_sort::NAME, priority_sort::new);
    r.register(node_unschedulable::NAME, node_unschedulable::new);
    r.register(node_name::NAME, node_name::new);
    r.register(taint_toleration::NAME, taint_toleration::new);
    r.register(node_affinity::NAME, node_affinity::new);
    r.register(node_ports::NAME, node_ports::new);
    r.register(node_resources_fit::NAME, node_resources_fit::new);
    r.register(volume_restrictions::NAME, volume_restrictions::new);
    r.register(node_volume_limits::NAME, node_volume_limits::new);
    r.register(volume_binding::NAME, volume_binding::new);
    r.register(volume_zone::NAME, volume_zone::new);
    r.register(pod_topology_spread::NAME, pod_topology_spread::new);
    r.register(inter_pod_affinity::NAME, inter_pod_affinity::new);
    r.register(dynamic_resources::NAME, dynamic_resources::new);
    r.register(default_preemption::NAME, default_preemption::new);
    r.register(
        node_resources_balanced_allocation::NAME,
        node_resources_balanced_allocation::new,
    );
    r.register(image_locality::NAME, image_locality::new);
    r.register(default_binder::NAME, default_binder::new);
    r.register(node_declared_features::NAME, node_declared_features::new);
}
