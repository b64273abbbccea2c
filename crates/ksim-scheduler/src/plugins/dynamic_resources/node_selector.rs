//! `createNodeSelector` (upstream `structured/internal/incubating`): the node selector an
//! allocation is written with, from the slices (or, with per-device node selection, the
//! devices) of the chosen devices.

use std::collections::BTreeSet;

use ksim_api::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};

use super::allocator::Pick;
use super::index::DraIndex;
use super::partitionable;

/// `createNodeSelector`.
pub(super) fn node_selector(index: &DraIndex, node: &str, picks: &[Pick]) -> Option<NodeSelector> {
    let mut term = NodeSelectorTerm::default();
    for p in picks {
        let s = &index.slices[p.slice as usize];
        let (node_name, node_selector) = partitionable::node_selection(s, p.device as usize);
        if node_name {
            return Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Vec::new(),
                    match_fields: vec![NodeSelectorRequirement {
                        key: "metadata.name".into(),
                        operator: "In".into(),
                        values: vec![node.to_string()],
                    }],
                }],
            });
        }
        if let Some(ns) = node_selector {
            if let [t] = ns.node_selector_terms.as_slice() {
                add_requirements(&t.match_fields, &mut term.match_fields);
                add_requirements(&t.match_expressions, &mut term.match_expressions);
            }
        }
    }
    if term.match_fields.is_empty() && term.match_expressions.is_empty() {
        None
    } else {
        Some(NodeSelector {
            node_selector_terms: vec![term],
        })
    }
}

fn add_requirements(from: &[NodeSelectorRequirement], to: &mut Vec<NodeSelectorRequirement>) {
    for r in from {
        let values: BTreeSet<&String> = r.values.iter().collect();
        let present = to.iter().any(|e| {
            e.key == r.key
                && e.operator == r.operator
                && e.values.iter().collect::<BTreeSet<_>>() == values
        });
        if !present {
            to.push(r.clone());
        }
    }
}
