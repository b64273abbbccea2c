//! `NodeInfo`: a node with the aggregates of the pods placed on it, and the [`Snapshot`] a
//! scheduling cycle reads: every node in upstream's zone-interleaved order, plus the cluster
//! objects plugins consult (namespaces, services, workload selectors, PDBs).

use std::sync::Arc;

use ksim_api::{Labels, Node};
use rustc_hash::FxHashMap;

pub use crate::cluster_objects::*;
use crate::node_columns::NodeColumns;
use crate::node_tree::NodeTree;
use crate::pod_index::PodIndex;
use crate::pod_info::{HostPort, PodInfo};
use crate::resource::Resource;

/// Size of an image and how many nodes have it (`ImageStateSummary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageState {
    pub size: i64,
    pub num_nodes: usize,
}

/// Fields are laid out in declaration order (`repr(C)`), the ones every filtered and scored
/// node reads first, so that a cycle touches few cache lines per node.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct NodeInfo {
    /// [`NodeFlags`] of `node`, kept beside the counters so that filtering a pod that
    /// tolerates nothing special never reads the node object (kept in step by
    /// [`NodeInfo::new`] and [`NodeInfo::set_node`], the only writers of `node`).
    flags: NodeFlags,
    pub pods: Vec<Arc<PodInfo>>,
    pub allocatable: Resource,
    pub requested: Resource,
    /// Requested with the scoring defaults for pods/containers that request nothing.
    pub non_zero_requested: Resource,
    /// Raw image name (as in node status) → state; filled by the snapshot.
    pub image_states: FxHashMap<String, ImageState>,
    pub node: Arc<Node>,
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    pub used_ports: Vec<HostPort>,
    /// Bumped on every change, so a snapshot can refresh only what changed.
    pub generation: u64,
}

/// `dst.clone_from(src)`, with the usual empty list (no pod with affinity, no host port)
/// copied without the generic clone's setup.
#[inline]
pub(crate) fn copy_vec<T: Clone>(dst: &mut Vec<T>, src: &[T]) {
    if src.is_empty() {
        dst.clear();
    } else {
        src.clone_into(dst);
    }
}

/// Properties of a node object that decide whether some Filter plugins can reject it at all:
/// a plugin may promise to pass every node without certain flags
/// ([`crate::framework::FilterPlugin::passes_nodes_without`]), so a cycle filters an ordinary
/// node with one bit test instead of calling that plugin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeFlags(u8);

impl NodeFlags {
    /// No flag: what a promise "passes every node" masks with.
    pub const NONE: NodeFlags = NodeFlags(0);
    /// `spec.unschedulable` (cordoned).
    pub const UNSCHEDULABLE: NodeFlags = NodeFlags(1);
    /// The node has at least one taint.
    pub const TAINTED: NodeFlags = NodeFlags(2);
    /// `status.images` names at least one image (otherwise the node's image states are empty).
    pub const IMAGES: NodeFlags = NodeFlags(4);

    fn of(node: &Node) -> NodeFlags {
        let mut f = NodeFlags::NONE;
        if node.spec.unschedulable {
            f = f | NodeFlags::UNSCHEDULABLE;
        }
        if !node.spec.taints.is_empty() {
            f = f | NodeFlags::TAINTED;
        }
        if node.status.images.iter().any(|i| !i.names.is_empty()) {
            f = f | NodeFlags::IMAGES;
        }
        f
    }

    /// Whether the two share a flag.
    #[inline]
    pub fn intersects(self, other: NodeFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// The flags as bits (bit `b` set when the flag `1 << b` is).
    #[inline]
    pub(crate) fn bits(self) -> u8 {
        self.0
    }

    /// The flags of `bits` (see [`NodeFlags::bits`]).
    #[inline]
    pub(crate) fn from_bits(bits: u8) -> NodeFlags {
        NodeFlags(bits)
    }
}

impl std::ops::BitOr for NodeFlags {
    type Output = NodeFlags;
    fn bitor(self, rhs: NodeFlags) -> NodeFlags {
        NodeFlags(self.0 | rhs.0)
    }
}

impl NodeInfo {
    /// The most pods of a node [`NodeInfo::copy_removing_into`] takes (its positions are
    /// bytes); more than the default 110 pods a node allows is rare.
    pub const COPY_REMOVING_MAX_PODS: usize = 128;

    pub fn new(node: Arc<Node>) -> NodeInfo {
        let allocatable = Resource::from_list(&node.status.allocatable);
        NodeInfo {
            pods: Vec::new(),
            pods_with_affinity: Vec::new(),
            pods_with_required_anti_affinity: Vec::new(),
            used_ports: Vec::new(),
            requested: Resource::default(),
            non_zero_requested: Resource::default(),
            allocatable,
            image_states: FxHashMap::default(),
            generation: 0,
            flags: NodeFlags::of(&node),
            node,
        }
    }

    pub fn name(&self) -> &str {
        &self.node.metadata.name
    }

    pub fn labels(&self) -> &Labels {
        &self.node.metadata.labels
    }

    /// The node object's [`NodeFlags`].
    #[inline]
    pub fn flags(&self) -> NodeFlags {
        self.flags
    }

    /// `spec.unschedulable`.
    #[inline]
    pub fn unschedulable(&self) -> bool {
        self.flags.intersects(NodeFlags::UNSCHEDULABLE)
    }

    /// Whether the node has taints.
    #[inline]
    pub fn tainted(&self) -> bool {
        self.flags.intersects(NodeFlags::TAINTED)
    }

    /// Whether the node object names any image: when not, its image states are empty, so
    /// ImageLocality reads this bit (beside the counters) instead of the map.
    #[inline]
    pub fn lists_images(&self) -> bool {
        self.flags.intersects(NodeFlags::IMAGES)
    }

    /// Makes `dst` an exact copy of `self` (what `*dst = self.clone()` gives), reusing `dst`'s
    /// allocations: a dry run that copies node after node into one scratch `NodeInfo` allocates
    /// only when a node holds more than any node before it.
    pub fn copy_into(&self, dst: &mut NodeInfo) {
        copy_vec(&mut dst.pods, &self.pods);
        self.copy_all_but_pods_into(dst);
    }

    /// [`copy_into`](Self::copy_into) of every field but the pod list.
    fn copy_all_but_pods_into(&self, dst: &mut NodeInfo) {
        // Destructured so that a new field cannot be forgotten here.
        let NodeInfo {
            flags,
            pods: _,
            allocatable,
            requested,
            non_zero_requested,
            image_states,
            node,
            pods_with_affinity,
            pods_with_required_anti_affinity,
            used_ports,
            generation,
        } = self;
        dst.flags = *flags;
        dst.allocatable.clone_from(allocatable);
        dst.requested.clone_from(requested);
        dst.non_zero_requested.clone_from(non_zero_requested);
        if image_states.is_empty() {
            dst.image_states.clear();
        } else {
            dst.image_states.clone_from(image_states);
        }
        if !Arc::ptr_eq(&dst.node, node) {
            dst.node.clone_from(node);
        }
        copy_vec(&mut dst.pods_with_affinity, pods_with_affinity);
        copy_vec(
            &mut dst.pods_with_required_anti_affinity,
            pods_with_required_anti_affinity,
        );
        copy_vec(&mut dst.used_ports, used_ports);
        dst.generation = *generation;
    }

    /// What [`copy_into`](Self::copy_into) `dst` followed by
    /// [`remove_pod_info`](Self::remove_pod_info) of each pod of `remove`, in order, leaves in
    /// `dst`, when every removal finds a pod and the node has at most
    /// [`COPY_REMOVING_MAX_PODS`](Self::COPY_REMOVING_MAX_PODS) pods (`true`); otherwise
    /// `false` and `dst` untouched (the caller takes the long way).
    ///
    /// The removals are played on the positions of this node's pods first (the same scan by
    /// address or UID, the same swaps), so the copy clones only the pods that stay and
    /// subtracts the removed ones' counts: a preemption dry run removes every lower-priority
    /// pod of each node it checks, often all of them, and each clone and drop of a pod is an
    /// atomic update of its reference count.
    pub fn copy_removing_into<'a>(
        &self,
        dst: &mut NodeInfo,
        remove: impl IntoIterator<Item = &'a Arc<PodInfo>>,
    ) -> bool {
        const MAX: usize = NodeInfo::COPY_REMOVING_MAX_PODS;
        let n = self.pods.len();
        if n > MAX {
            return false;
        }
        // Positions of the remaining pods (the first `len`), in the order the removals' swaps
        // leave them; positions of the removed pods (the first `num_gone`), in removal order.
        // Fixed arrays on the stack: positions fit a byte, and a node's copy costs no
        // allocation and no list setup.
        let mut order = [0u8; MAX];
        for (i, o) in order[..n].iter_mut().enumerate() {
            *o = i as u8;
        }
        let mut len = n;
        let mut gone = [0u8; MAX];
        let mut num_gone = 0;
        for pod in remove {
            // (The UIDs are read only past a pod found by address: `remove_pod_info`'s scan.)
            let Some(j) = order[..len].iter().position(|&o| {
                let p = &self.pods[o as usize];
                Arc::ptr_eq(p, pod) || p.same_uid(pod)
            }) else {
                return false;
            };
            // At most `len` removals find a pod, so `num_gone < MAX` here.
            gone[num_gone] = order[j];
            num_gone += 1;
            len -= 1;
            order[j] = order[len];
        }
        let order = &order[..len];
        let gone = &gone[..num_gone];
        let pods = &self.pods;
        dst.pods.clear();
        dst.pods
            .extend(order.iter().map(|&o| pods[o as usize].clone()));
        self.copy_all_but_pods_into(dst);
        // What `remove_pod_at` does for each removed pod but the list removal.
        for &g in gone {
            dst.forget_pod(&pods[g as usize]);
        }
        true
    }

    /// Replaces the node object, keeping the pods (a node update).
    pub fn set_node(&mut self, node: Arc<Node>) {
        self.allocatable = Resource::from_list(&node.status.allocatable);
        self.flags = NodeFlags::of(&node);
        self.node = node;
        self.generation += 1;
    }

    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(&pod.requests);
        self.requested.allowed_pod_number = 0;
        self.non_zero_requested.milli_cpu += pod.non_zero_requests.milli_cpu;
        self.non_zero_requested.memory += pod.non_zero_requests.memory;
        self.used_ports.extend(pod.host_ports.iter().cloned());
        if pod.has_affinity() {
            self.pods_with_affinity.push(pod.clone());
        }
        if !pod.required_anti_affinity.is_empty() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.pods.push(pod);
        self.generation += 1;
    }

    /// Removes a pod by UID (upstream swaps the last pod into its place). Returns whether found.
    pub fn remove_pod(&mut self, uid: &str) -> bool {
        let Some(i) = self.pods.iter().position(|p| p.uid() == uid) else {
            return false;
        };
        self.remove_pod_at(i);
        true
    }

    /// [`remove_pod`](Self::remove_pod) of `pod`'s UID, for a caller holding the pod itself (a
    /// dry run removing a node's own pods): the same pod is found by address before its UID
    /// is read (a pod found by address has that UID, so the first match is the same).
    pub fn remove_pod_info(&mut self, pod: &Arc<PodInfo>) -> bool {
        let Some(i) = self
            .pods
            .iter()
            .position(|p| Arc::ptr_eq(p, pod) || p.same_uid(pod))
        else {
            return false;
        };
        self.remove_pod_at(i);
        true
    }

    /// Removes the pod at position `i` of `pods`, as [`NodeInfo::remove_pod`] of its UID does
    /// when it is the first pod with that UID, and returns it.
    pub fn remove_pod_at(&mut self, i: usize) -> Arc<PodInfo> {
        let pod = self.pods.swap_remove(i);
        self.forget_pod(&pod);
        pod
    }

    /// What removing `pod` changes besides the pod list: its affinity list entries (the
    /// first with its UID), its requests, its host ports, the generation.
    fn forget_pod(&mut self, pod: &PodInfo) {
        // The affinity lists are usually empty: the UID is read only when they are not.
        if !self.pods_with_affinity.is_empty() {
            let uid = pod.uid();
            if let Some(j) = self.pods_with_affinity.iter().position(|p| p.uid() == uid) {
                self.pods_with_affinity.swap_remove(j);
            }
        }
        if !self.pods_with_required_anti_affinity.is_empty() {
            let uid = pod.uid();
            if let Some(j) = self
                .pods_with_required_anti_affinity
                .iter()
                .position(|p| p.uid() == uid)
            {
                self.pods_with_required_anti_affinity.swap_remove(j);
            }
        }
        self.requested.sub(&pod.requests);
        self.requested.allowed_pod_number = 0;
        self.non_zero_requested.milli_cpu -= pod.non_zero_requests.milli_cpu;
        self.non_zero_requested.memory -= pod.non_zero_requests.memory;
        for hp in &pod.host_ports {
            if let Some(k) = self.used_ports.iter().position(|x| x == hp) {
                self.used_ports.swap_remove(k);
            }
        }
        self.generation += 1;
    }

    /// `HostPortInfo.CheckConflict`.
    pub fn host_port_conflicts(&self, want: &HostPort) -> bool {
        if want.port <= 0 {
            return false;
        }
        if want.ip == "0.0.0.0" {
            return self
                .used_ports
                .iter()
                .any(|u| u.port == want.port && u.protocol == want.protocol);
        }
        self.used_ports.iter().any(|u| {
            u.port == want.port
                && u.protocol == want.protocol
                && (u.ip == "0.0.0.0" || u.ip == want.ip)
        })
    }
}

/// What one scheduling cycle sees.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Nodes in upstream's node-tree order (zones interleaved).
    pub nodes: Vec<NodeInfo>,
    pub index: FxHashMap<String, usize>,
    /// Indices of nodes that hold a pod with (anti-)affinity.
    pub have_pods_with_affinity: Vec<usize>,
    /// Indices of nodes that hold a pod with required anti-affinity.
    pub have_pods_with_required_anti_affinity: Vec<usize>,
    pub objects: Arc<ClusterObjects>,
    /// The bound pods by label and their affinity terms by selector (kept current by
    /// `add_pod`/`remove_pod`, rebuilt by `refresh_derived`).
    pub pod_index: PodIndex,
    /// Label columns built on demand ([`Snapshot::label_column`]), dropped when nodes change.
    columns: ColumnCache,
    /// The nodes' resource columns, kept equal to `nodes` (see [`Snapshot::sync_columns`]).
    resource_columns: NodeColumns,
    /// The cache's node tree, updated on every node event (upstream's `cache.nodeTree`).
    tree: NodeTree,
    /// The node names as the last cycle listed them: the order `nodes` must have during a
    /// cycle until the set of nodes changes.
    listed: Vec<String>,
    /// A node was added or removed since the last listing.
    membership_changed: bool,
    /// Per node (as `nodes`), its pods' UID hashes ([`PodInfo::uid_hash`]) in the order of its
    /// `pods`: finding a pod by UID compares these (one array, no pod object read) and reads a
    /// pod's UID only where the hash matches. Kept by `add_pod`, `remove_pod` and
    /// `update_pod_status`, rebuilt with the pod index; a node whose list has another length is
    /// scanned the plain way.
    uid_hashes: Vec<Vec<u32>>,
}

/// One label key's values on every node, interned: what the spreading plugins read for every
/// node of the cluster in each cycle, without a map lookup per node.
#[derive(Debug, Default)]
pub struct LabelColumn {
    /// Per node, in snapshot order: the id of the node's value, or [`LabelColumn::ABSENT`].
    pub ids: Vec<u32>,
    /// The value of each id, ids in order of first appearance.
    pub values: Vec<String>,
}

impl LabelColumn {
    pub const ABSENT: u32 = u32::MAX;
}

/// The columns built so far. Derived data: a clone starts empty and rebuilds on demand.
#[derive(Default)]
struct ColumnCache(std::sync::Mutex<FxHashMap<String, Arc<LabelColumn>>>);

impl Clone for ColumnCache {
    fn clone(&self) -> Self {
        ColumnCache::default()
    }
}

impl std::fmt::Debug for ColumnCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ColumnCache")
    }
}

impl Snapshot {
    /// Builds a snapshot from nodes (in the order the cache received them) and bound pods.
    ///
    /// A real scheduler receives a cluster's initial nodes from the informer's list, which the
    /// API server returns sorted by name: sort them with [`initial_node_order`] first.
    /// Pods naming a node that does not exist are ignored, as the cache keeps them aside.
    pub fn build(
        nodes: impl IntoIterator<Item = Arc<Node>>,
        pods: impl IntoIterator<Item = Arc<PodInfo>>,
        objects: Arc<ClusterObjects>,
    ) -> Snapshot {
        let nodes: Vec<Arc<Node>> = nodes.into_iter().collect();
        let tree = NodeTree::new(nodes.iter().map(|n| n.as_ref()));
        let listed = tree.list();
        let mut by_name: FxHashMap<String, Arc<Node>> = nodes
            .into_iter()
            .map(|n| (n.metadata.name.clone(), n))
            .collect();
        let mut infos: Vec<NodeInfo> = listed
            .iter()
            .filter_map(|name| by_name.remove(name))
            .map(NodeInfo::new)
            .collect();
        let index: FxHashMap<String, usize> = infos
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name().to_string(), i))
            .collect();
        for p in pods {
            if let Some(&i) = index.get(&p.pod.spec.node_name) {
                infos[i].add_pod(p);
            }
        }
        let mut s = Snapshot {
            nodes: infos,
            index,
            have_pods_with_affinity: Vec::new(),
            have_pods_with_required_anti_affinity: Vec::new(),
            objects,
            pod_index: PodIndex::default(),
            columns: ColumnCache::default(),
            resource_columns: NodeColumns::default(),
            tree,
            listed,
            membership_changed: false,
            uid_hashes: Vec::new(),
        };
        s.refresh_derived();
        s
    }

    /// Upstream's `UpdateSnapshot` at the start of a scheduling cycle, for the node order: when
    /// the set of nodes differs from the last cycle's, the list is re-read from the node tree;
    /// otherwise the previous order stands, even if zone labels changed or a node was removed
    /// and re-added in between.
    pub fn update_for_cycle(&mut self) {
        if !self.membership_changed {
            return;
        }
        self.membership_changed = false;
        let same_set = self.listed.len() == self.nodes.len()
            && self.listed.iter().all(|n| self.index.contains_key(n));
        if !same_set {
            self.listed = self.tree.list();
        }
        let in_order = self.listed.len() == self.nodes.len()
            && self
                .listed
                .iter()
                .zip(&self.nodes)
                .all(|(name, info)| name == info.name());
        if !in_order {
            let order = self.listed.clone();
            self.reorder(&order);
            self.refresh_derived();
        }
    }

    /// The node tree (zones and their nodes in arrival order).
    pub fn node_tree(&self) -> &NodeTree {
        &self.tree
    }

    /// Recomputes the image states and the affinity node lists after nodes or pods changed.
    pub fn refresh_derived(&mut self) {
        let mut images: FxHashMap<&str, (i64, usize)> = FxHashMap::default();
        for n in &self.nodes {
            let mut seen: Vec<&str> = Vec::new();
            for img in &n.node.status.images {
                for name in &img.names {
                    if seen.contains(&name.as_str()) {
                        continue;
                    }
                    seen.push(name);
                    let e = images.entry(name).or_insert((img.size_bytes, 0));
                    e.1 += 1;
                }
            }
        }
        let states: Vec<FxHashMap<String, ImageState>> = self
            .nodes
            .iter()
            .map(|n| {
                let mut m = FxHashMap::default();
                for img in &n.node.status.images {
                    for name in &img.names {
                        let (size, num_nodes) = images[name.as_str()];
                        m.entry(name.clone())
                            .or_insert(ImageState { size, num_nodes });
                    }
                }
                m
            })
            .collect();
        for (n, st) in self.nodes.iter_mut().zip(states) {
            n.image_states = st;
        }
        self.refresh_affinity_lists();
        self.refresh_pod_index();
        self.invalidate_columns();
        self.resource_columns.rebuild(&self.nodes);
    }

    /// The nodes' resource columns (indexed like `nodes`), what the batch paths of
    /// NodeResourcesFit and the resource scorers read.
    #[inline]
    pub fn resource_columns(&self) -> &NodeColumns {
        &self.resource_columns
    }

    /// Brings node `i`'s resource columns up to date: called after every change of a node's
    /// pods, requests, allocatable or flags in place (node additions, removals and reorders
    /// rebuild the columns in `refresh_derived`, which follows each of them).
    #[inline]
    fn sync_columns(&mut self, i: usize) {
        if let Some(n) = self.nodes.get(i) {
            self.resource_columns.set(i, n);
        }
    }

    /// The values of label `key` on every node (built on first use after the nodes changed).
    pub fn label_column(&self, key: &str) -> Arc<LabelColumn> {
        let mut cache = self.columns.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.get(key) {
            return c.clone();
        }
        let mut col = LabelColumn::default();
        let mut ids: FxHashMap<&str, u32> = FxHashMap::default();
        for n in &self.nodes {
            let id = match n.labels().get(key) {
                None => LabelColumn::ABSENT,
                Some(v) => *ids.entry(v.as_str()).or_insert_with(|| {
                    col.values.push(v.clone());
                    (col.values.len() - 1) as u32
                }),
            };
            col.ids.push(id);
        }
        let col = Arc::new(col);
        cache.insert(key.to_string(), col.clone());
        col
    }

    /// Drops the label columns (nodes were added, removed, reordered or relabelled).
    fn invalidate_columns(&mut self) {
        self.columns
            .0
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Rebuilds the pod index (and the pods' UID hashes) from the nodes (after node indices
    /// changed).
    pub fn refresh_pod_index(&mut self) {
        let mut ix = PodIndex::default();
        for (i, n) in self.nodes.iter().enumerate() {
            for p in &n.pods {
                ix.add(i, p, &self.nodes);
            }
        }
        self.pod_index = ix;
        self.uid_hashes = self
            .nodes
            .iter()
            .map(|n| n.pods.iter().map(|p| p.uid_hash()).collect())
            .collect();
    }

    /// The position in node `i`'s pods of the first pod with UID `uid`: what
    /// `pods.iter().position(|p| p.uid() == uid)` gives, comparing the UID hashes first.
    fn position_of_uid(&self, i: usize, uid: &str) -> Option<usize> {
        let pods = &self.nodes.get(i)?.pods;
        match self.uid_hashes.get(i).filter(|h| h.len() == pods.len()) {
            // A miss is checked by the plain scan (absent pods are rare), so that hashes out
            // of step with the list can cost time but never give another answer.
            Some(hashes) => {
                let h = crate::pod_info::uid_hash(uid);
                (0..hashes.len())
                    .find(|&p| hashes[p] == h && pods[p].uid() == uid)
                    .or_else(|| pods.iter().position(|p| p.uid() == uid))
            }
            None => pods.iter().position(|p| p.uid() == uid),
        }
    }

    /// Node `i`'s UID hashes after its pod list changed: `edit` applied when they were in step
    /// with the list before (`before` pods), else rebuilt from the list.
    fn sync_uid_hashes(&mut self, i: usize, before: usize, edit: impl FnOnce(&mut Vec<u32>)) {
        if self.uid_hashes.len() != self.nodes.len() {
            self.uid_hashes.resize_with(self.nodes.len(), Vec::new);
        }
        let hashes = &mut self.uid_hashes[i];
        if hashes.len() == before {
            edit(hashes);
        }
        let pods = &self.nodes[i].pods;
        if hashes.len() != pods.len() {
            *hashes = pods.iter().map(|p| p.uid_hash()).collect();
        }
    }

    pub fn refresh_affinity_lists(&mut self) {
        self.have_pods_with_affinity = (0..self.nodes.len())
            .filter(|&i| !self.nodes[i].pods_with_affinity.is_empty())
            .collect();
        self.have_pods_with_required_anti_affinity = (0..self.nodes.len())
            .filter(|&i| !self.nodes[i].pods_with_required_anti_affinity.is_empty())
            .collect();
    }

    pub fn get(&self, name: &str) -> Option<&NodeInfo> {
        self.index.get(name).map(|&i| &self.nodes[i])
    }

    /// Puts the nodes in exactly the order `order` names them (every node is named once).
    fn reorder(&mut self, order: &[String]) {
        self.invalidate_columns();
        let mut by_name: FxHashMap<String, NodeInfo> = self
            .nodes
            .drain(..)
            .map(|n| (n.name().to_string(), n))
            .collect();
        for name in order {
            if let Some(info) = by_name.remove(name) {
                self.nodes.push(info);
            }
        }
        // Not named (cannot happen while the tree and the nodes agree): kept, by name.
        let mut rest: Vec<NodeInfo> = by_name.into_values().collect();
        rest.sort_by(|a, b| a.name().cmp(b.name()));
        self.nodes.extend(rest);
        self.reindex();
    }

    fn reindex(&mut self) {
        self.index = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name().to_string(), i))
            .collect();
    }

    /// Adds a node (or restores `info` with its pods, for a node re-added after removal). It
    /// joins the node tree now; cycles see it in tree order from the next
    /// [`update_for_cycle`](Self::update_for_cycle).
    pub fn add_node(&mut self, info: NodeInfo) {
        self.tree.add_node(&info.node);
        self.nodes.push(info);
        self.membership_changed = true;
        self.reindex();
        self.refresh_derived();
    }

    /// Removes a node, returning its NodeInfo (with its pods).
    pub fn remove_node(&mut self, name: &str) -> Option<NodeInfo> {
        let i = *self.index.get(name)?;
        let info = self.nodes.remove(i);
        self.tree.remove_node(&info.node);
        self.membership_changed = true;
        self.reindex();
        self.refresh_derived();
        Some(info)
    }

    /// Replaces a node object, keeping its pods. A zone change moves the node in the node tree;
    /// the cycle order follows only when the set of nodes next changes, as upstream's.
    pub fn update_node(&mut self, node: Arc<Node>) -> bool {
        let Some(&i) = self.index.get(node.metadata.name.as_str()) else {
            return false;
        };
        let zone_changed = zone_key(&self.nodes[i].node) != zone_key(&node);
        let images_changed = self.nodes[i].node.status.images != node.status.images;
        // The pod index counts pods by their node's labels.
        let labels_changed = self.nodes[i].node.metadata.labels != node.metadata.labels;
        if zone_changed {
            let old = self.nodes[i].node.clone();
            self.tree.update_node(&old, &node);
        }
        self.nodes[i].set_node(node);
        self.sync_columns(i);
        self.invalidate_columns();
        if images_changed {
            self.refresh_derived();
        } else if labels_changed {
            self.refresh_pod_index();
        }
        true
    }

    /// Places a pod on its node (`spec.nodeName`), keeping the affinity node lists current.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) -> bool {
        let Some(&i) = self.index.get(pod.pod.spec.node_name.as_str()) else {
            return false;
        };
        let had_aff = !self.nodes[i].pods_with_affinity.is_empty();
        let had_anti = !self.nodes[i].pods_with_required_anti_affinity.is_empty();
        self.pod_index.add(i, &pod, &self.nodes);
        let (before, h) = (self.nodes[i].pods.len(), pod.uid_hash());
        self.nodes[i].add_pod(pod);
        self.sync_columns(i);
        self.sync_uid_hashes(i, before, |hs| hs.push(h));
        if !had_aff && !self.nodes[i].pods_with_affinity.is_empty() {
            insert_sorted(&mut self.have_pods_with_affinity, i);
        }
        if !had_anti && !self.nodes[i].pods_with_required_anti_affinity.is_empty() {
            insert_sorted(&mut self.have_pods_with_required_anti_affinity, i);
        }
        true
    }

    /// Removes a pod (by UID) from a node.
    pub fn remove_pod(&mut self, node: &str, uid: &str) -> bool {
        let Some(&i) = self.index.get(node) else {
            return false;
        };
        // The first pod with that UID, as NodeInfo::remove_pod takes it (by the UID hashes:
        // comparing pod objects' UIDs costs two cache misses per pod).
        let Some(p) = self.position_of_uid(i, uid) else {
            return false;
        };
        let before = self.nodes[i].pods.len();
        let pod = self.nodes[i].remove_pod_at(p);
        self.sync_columns(i);
        self.sync_uid_hashes(i, before, |hs| {
            hs.swap_remove(p);
        });
        self.pod_index.remove(&pod);
        if self.nodes[i].pods_with_affinity.is_empty() {
            if let Ok(k) = self.have_pods_with_affinity.binary_search(&i) {
                self.have_pods_with_affinity.remove(k);
            }
        }
        if self.nodes[i].pods_with_required_anti_affinity.is_empty() {
            if let Ok(k) = self.have_pods_with_required_anti_affinity.binary_search(&i) {
                self.have_pods_with_required_anti_affinity.remove(k);
            }
        }
        true
    }

    /// Changes the status of a pod (`pod`, the caller's reference to its object) with `f`:
    /// exactly what [`Snapshot::remove_pod`] of it from `node`, `f` on the object
    /// (`Arc::make_mut`) and [`Snapshot::add_pod`] of the result give, the order of the node's
    /// pods and of the pod index's sets included. Returns whether the pod was in the snapshot
    /// (the status changes either way).
    ///
    /// Nothing the snapshot derives from a pod reads its status (requests, ports, labels,
    /// affinity terms, and the deletion mark PodTopologySpread's counts read are elsewhere in
    /// the object), so when the pod is the snapshot's own object on `node`, has no affinity
    /// terms and no host ports (its node's affinity lists and ports stay as they are), its
    /// counts are left alone: only the node's pod list and the index's sets let go of the object
    /// and take it back, in the places a removal and an addition would put it. Otherwise it
    /// takes the long way, removal then addition.
    pub fn update_pod_status(
        &mut self,
        node: &str,
        pod: &mut Arc<PodInfo>,
        f: impl FnOnce(&mut ksim_api::PodStatus),
    ) -> bool {
        let found = self
            .index
            .get(node)
            .and_then(|&i| Some((i, self.position_of_uid(i, pod.uid())?)));
        let Some((i, p)) = found else {
            f(&mut Arc::make_mut(pod).pod.status);
            return false;
        };
        // A removal by UID also drops the node's first affinity entry with that UID, which is
        // another pod's when UIDs repeat: then the long way, to drop the same one.
        let uid = pod.uid();
        let n = &self.nodes[i];
        let fast = Arc::ptr_eq(&n.pods[p], pod)
            && pod.pod.spec.node_name == node
            && !pod.has_affinity()
            && pod.host_ports.is_empty()
            && !n.pods_with_affinity.iter().any(|q| q.uid() == uid)
            && !n
                .pods_with_required_anti_affinity
                .iter()
                .any(|q| q.uid() == uid)
            && self.pod_index.node_of(pod) == Some(i);
        if !fast {
            let uid = pod.uid().to_string();
            self.remove_pod(node, &uid);
            f(&mut Arc::make_mut(pod).pod.status);
            self.add_pod(pod.clone());
            return true;
        }
        // remove_pod: the node's list swaps its last pod into the pod's place.
        let n = &mut self.nodes[i];
        let before = n.pods.len();
        n.pods.swap_remove(p);
        n.generation += 1;
        self.pod_index.unlink(pod);
        // The snapshot no longer holds the object: usually changed in place.
        f(&mut Arc::make_mut(pod).pod.status);
        // add_pod: appended to the node's list and the index's sets.
        self.pod_index.link(i, pod);
        let n = &mut self.nodes[i];
        n.pods.push(pod.clone());
        n.generation += 1;
        // The node's resource columns stay: its requests, allocatable, flags and pod count
        // are what they were.
        // The UID hashes move as the pods did: the last into the pod's place, the pod's to
        // the end.
        self.sync_uid_hashes(i, before, |hs| {
            let h = hs.swap_remove(p);
            hs.push(h);
        });
        true
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

fn insert_sorted(v: &mut Vec<usize>, x: usize) {
    if let Err(k) = v.binary_search(&x) {
        v.insert(k, x);
    }
}

/// `utilnode.GetZoneKey`: region and zone joined, from the GA labels or the beta ones.
pub fn zone_key(node: &Node) -> String {
    let l = &node.metadata.labels;
    let zone = l
        .get("topology.kubernetes.io/zone")
        .or_else(|| l.get("failure-domain.beta.kubernetes.io/zone"));
    let region = l
        .get("topology.kubernetes.io/region")
        .or_else(|| l.get("failure-domain.beta.kubernetes.io/region"));
    if zone.is_none() && region.is_none() {
        return String::new();
    }
    format!(
        "{}:\x00:{}",
        region.map(String::as_str).unwrap_or(""),
        zone.map(String::as_str).unwrap_or("")
    )
}

/// The order in which a scheduler's cache receives a cluster's initial nodes: the informer's
/// list, which the API server returns sorted by name, whatever order a file lists them in.
pub fn initial_node_order<T: std::borrow::Borrow<Node>>(nodes: &mut [T]) {
    nodes.sort_by(|a, b| a.borrow().metadata.name.cmp(&b.borrow().metadata.name));
}

/// An object's namespace, `default` when empty.
pub(crate) fn namespace_or_default(ns: &str) -> &str {
    if ns.is_empty() {
        "default"
    } else {
        ns
    }
}
