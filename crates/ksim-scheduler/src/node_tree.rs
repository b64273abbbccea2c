//! Upstream's `nodeTree` (pkg/scheduler/backend/cache/node_tree.go): the order in which a
//! scheduling cycle visits the nodes.
//!
//! Zones (region + zone labels) are kept in the order they first appeared; each zone keeps its
//! nodes in the order they were added. [`NodeTree::list`] takes one node from each zone in turn,
//! so consecutive nodes of the list are in different zones. With `percentageOfNodesToScore` a
//! cycle evaluates only part of this list, starting where the previous cycle stopped, so the
//! exact order — including how removals, re-additions and zone-label changes move nodes — decides
//! which nodes a pod can land on.
//!
//! The snapshot re-reads this list only when the set of nodes changed since the previous cycle
//! (see [`crate::node_info::Snapshot::update_for_cycle`]), as upstream's `UpdateSnapshot` does.

use ksim_api::core::Node;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::node_info::zone_key;

/// Zones in order of first appearance, each with its nodes in order of arrival.
#[derive(Debug, Clone, Default)]
pub struct NodeTree {
    zones: Vec<String>,
    tree: FxHashMap<String, Vec<String>>,
    /// (zone, node name) of every node in `tree`: upstream's "already in its zone" test scans
    /// the zone's list, which makes building a tree of n nodes in one zone O(n²) (seconds at
    /// 50,000 nodes); the set answers it at once.
    members: FxHashSet<(String, String)>,
    num_nodes: usize,
}

impl NodeTree {
    /// A tree with `nodes` added in the given order.
    pub fn new<'a>(nodes: impl IntoIterator<Item = &'a Node>) -> NodeTree {
        let mut t = NodeTree::default();
        for n in nodes {
            t.add_node(n);
        }
        t
    }

    /// Number of nodes in the tree.
    pub fn len(&self) -> usize {
        self.num_nodes
    }

    pub fn is_empty(&self) -> bool {
        self.num_nodes == 0
    }

    /// `addNode`: appends the node to its zone (a new zone goes last). A node already in its
    /// zone is not added twice.
    pub fn add_node(&mut self, node: &Node) {
        let zone = zone_key(node);
        let name = &node.metadata.name;
        if !self.members.insert((zone.clone(), name.clone())) {
            return;
        }
        match self.tree.get_mut(&zone) {
            Some(names) => names.push(name.clone()),
            None => {
                self.zones.push(zone.clone());
                self.tree.insert(zone, vec![name.clone()]);
            }
        }
        self.num_nodes += 1;
    }

    /// `removeNode`: removes the node from the zone its labels name, keeping the others' order;
    /// an emptied zone leaves the zone list. Returns false when the node was not there.
    pub fn remove_node(&mut self, node: &Node) -> bool {
        let zone = zone_key(node);
        let Some(names) = self.tree.get_mut(&zone) else {
            return false;
        };
        let Some(i) = names.iter().position(|n| *n == node.metadata.name) else {
            return false;
        };
        let name = names.remove(i);
        self.members.remove(&(zone.clone(), name));
        if names.is_empty() {
            self.tree.remove(&zone);
            self.zones.retain(|z| *z != zone);
        }
        self.num_nodes -= 1;
        true
    }

    /// `updateNode`: a node whose zone changed moves to the end of its new zone.
    pub fn update_node(&mut self, old: &Node, new: &Node) {
        if zone_key(old) == zone_key(new) {
            return;
        }
        self.remove_node(old);
        self.add_node(new);
    }

    /// `list`: one node from each zone in turn until every node is listed.
    pub fn list(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.num_nodes);
        let mut idx = 0;
        while out.len() < self.num_nodes {
            let before = out.len();
            for z in &self.zones {
                if let Some(name) = self.tree.get(z).and_then(|names| names.get(idx)) {
                    out.push(name.clone());
                }
            }
            if out.len() == before {
                // Every zone exhausted: cannot happen while num_nodes counts the tree's nodes.
                break;
            }
            idx += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, zone: &str) -> Node {
        let mut n = Node::default();
        n.metadata.name = name.to_string();
        if !zone.is_empty() {
            n.metadata
                .labels
                .insert("topology.kubernetes.io/zone".into(), zone.into());
        }
        n
    }

    #[test]
    fn list_interleaves_zones_in_order_of_first_appearance() {
        let nodes = [
            node("a1", "a"),
            node("a2", "a"),
            node("b1", "b"),
            node("a3", "a"),
            node("c1", "c"),
            node("b2", "b"),
        ];
        let t = NodeTree::new(nodes.iter());
        assert_eq!(t.list(), ["a1", "b1", "c1", "a2", "b2", "a3"]);
    }

    #[test]
    fn removing_a_node_keeps_its_zone_in_place_while_the_zone_has_nodes() {
        let (a1, b1, a2) = (node("a1", "a"), node("b1", "b"), node("a2", "a"));
        let mut t = NodeTree::new([&a1, &b1, &a2]);
        assert!(t.remove_node(&a1));
        // Zone a keeps its first place: a recomputation from arrival order would put b first.
        assert_eq!(t.list(), ["a2", "b1"]);
        assert!(!t.remove_node(&a1), "a node is removed once");
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn an_emptied_zone_goes_last_when_it_comes_back() {
        let (a1, b1, c1) = (node("a1", "a"), node("b1", "b"), node("c1", "c"));
        let mut t = NodeTree::new([&a1, &b1, &c1]);
        t.remove_node(&a1);
        t.add_node(&a1);
        assert_eq!(t.list(), ["b1", "c1", "a1"]);
    }

    #[test]
    fn a_zone_change_moves_the_node_to_the_end_of_its_new_zone() {
        let (a1, a2, b1, b2) = (
            node("a1", "a"),
            node("a2", "a"),
            node("b1", "b"),
            node("b2", "b"),
        );
        let mut t = NodeTree::new([&a1, &a2, &b1, &b2]);
        let moved = node("b1", "a");
        t.update_node(&b1, &moved);
        assert_eq!(t.list(), ["a1", "b2", "a2", "b1"]);
        // A label change that keeps the zone changes nothing.
        let mut relabelled = a1.clone();
        relabelled.metadata.labels.insert("x".into(), "y".into());
        t.update_node(&a1, &relabelled);
        assert_eq!(t.list(), ["a1", "b2", "a2", "b1"]);
    }

    /// Upstream's tree as written (a linear "already in its zone" scan), to compare with.
    #[derive(Default)]
    struct Linear {
        zones: Vec<String>,
        tree: std::collections::HashMap<String, Vec<String>>,
    }

    impl Linear {
        fn add(&mut self, n: &Node) {
            let zone = zone_key(n);
            match self.tree.get_mut(&zone) {
                Some(names) if names.contains(&n.metadata.name) => {}
                Some(names) => names.push(n.metadata.name.clone()),
                None => {
                    self.zones.push(zone.clone());
                    self.tree.insert(zone, vec![n.metadata.name.clone()]);
                }
            }
        }
        fn remove(&mut self, n: &Node) -> bool {
            let zone = zone_key(n);
            let Some(names) = self.tree.get_mut(&zone) else {
                return false;
            };
            let Some(i) = names.iter().position(|x| *x == n.metadata.name) else {
                return false;
            };
            names.remove(i);
            if names.is_empty() {
                self.tree.remove(&zone);
                self.zones.retain(|z| *z != zone);
            }
            true
        }
        fn list(&self) -> Vec<String> {
            let mut out = Vec::new();
            let most = self.tree.values().map(Vec::len).max().unwrap_or(0);
            for idx in 0..most {
                for z in &self.zones {
                    if let Some(name) = self.tree[z].get(idx) {
                        out.push(name.clone());
                    }
                }
            }
            out
        }
    }

    #[test]
    fn adds_and_removes_list_as_the_linear_scan_does() {
        // A fixed pseudo-random walk over 12 names in 3 zones: repeated adds, removals of
        // absent nodes, zone moves.
        let mut t = NodeTree::default();
        let mut m = Linear::default();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = node(
                &format!("n{}", x % 12),
                ["a", "b", "c"][(x >> 8) as usize % 3],
            );
            if (x >> 16).is_multiple_of(3) {
                assert_eq!(t.remove_node(&n), m.remove(&n));
            } else {
                t.add_node(&n);
                m.add(&n);
            }
            assert_eq!(t.list(), m.list());
            assert_eq!(t.len(), m.list().len());
        }
    }

    #[test]
    fn a_node_added_twice_is_listed_once() {
        let a1 = node("a1", "a");
        let mut t = NodeTree::new([&a1]);
        t.add_node(&a1);
        assert_eq!(t.list(), ["a1"]);
        assert_eq!(t.len(), 1);
    }
}
