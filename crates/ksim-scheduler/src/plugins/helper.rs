//! Shared plugin helpers: node selector matching (`nodeaffinity`), taint lookups and
//! `DefaultNormalizeScore`.

use ksim_api::meta::{Requirement, SelectorOp};
use ksim_api::{
    Labels, Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration,
};

/// A parsed `NodeSelectorTerm`. A term with any invalid requirement (an unknown operator, `In`
/// without values, a `matchFields` `In` with other than one value, ...) never matches, as
/// upstream's lazy-error selector; so does a term with neither half.
#[derive(Debug, Clone)]
pub struct CompiledTerm {
    labels: Option<Vec<Requirement>>,
    /// (equal?, key, value) on node fields; only `metadata.name` exists.
    fields: Option<Vec<(bool, String, String)>>,
    invalid: bool,
}

impl CompiledTerm {
    pub fn new(term: &NodeSelectorTerm) -> CompiledTerm {
        let mut invalid = false;
        let labels = if term.match_expressions.is_empty() {
            None
        } else {
            let l = label_requirements(&term.match_expressions);
            invalid |= l.is_none();
            l
        };
        let fields = if term.match_fields.is_empty() {
            None
        } else {
            let f = field_requirements(&term.match_fields);
            invalid |= f.is_none();
            f
        };
        CompiledTerm {
            labels,
            fields,
            invalid,
        }
    }

    pub fn matches(&self, node: &Node) -> bool {
        if self.invalid || (self.labels.is_none() && self.fields.is_none()) {
            return false;
        }
        if let Some(reqs) = &self.labels {
            if !reqs.iter().all(|r| r.matches(&node.metadata.labels)) {
                return false;
            }
        }
        if let Some(fs) = &self.fields {
            for (equal, key, value) in fs {
                let have = if key == "metadata.name" {
                    node.metadata.name.as_str()
                } else {
                    ""
                };
                if (have == value) != *equal {
                    return false;
                }
            }
        }
        true
    }
}

fn label_requirements(exprs: &[NodeSelectorRequirement]) -> Option<Vec<Requirement>> {
    let mut out = Vec::with_capacity(exprs.len());
    for e in exprs {
        let op = SelectorOp::parse(&e.operator)?;
        let ok = match op {
            SelectorOp::In | SelectorOp::NotIn => !e.values.is_empty(),
            SelectorOp::Exists | SelectorOp::DoesNotExist => e.values.is_empty(),
            SelectorOp::Gt | SelectorOp::Lt => {
                e.values.len() == 1 && e.values[0].parse::<i64>().is_ok()
            }
        };
        if !ok {
            return None;
        }
        out.push(Requirement {
            key: e.key.clone(),
            op,
            values: e.values.clone(),
        });
    }
    Some(out)
}

fn field_requirements(exprs: &[NodeSelectorRequirement]) -> Option<Vec<(bool, String, String)>> {
    let mut out = Vec::with_capacity(exprs.len());
    for e in exprs {
        let equal = match e.operator.as_str() {
            "In" => true,
            "NotIn" => false,
            _ => return None,
        };
        if e.values.len() != 1 {
            return None;
        }
        out.push((equal, e.key.clone(), e.values[0].clone()));
    }
    Some(out)
}

/// `nodeaffinity.NodeSelector`: terms are ORed.
#[derive(Debug, Clone)]
pub struct CompiledNodeSelector {
    terms: Vec<CompiledTerm>,
}

impl CompiledNodeSelector {
    pub fn new(ns: &NodeSelector) -> CompiledNodeSelector {
        CompiledNodeSelector {
            terms: ns
                .node_selector_terms
                .iter()
                .map(CompiledTerm::new)
                .collect(),
        }
    }
    pub fn matches(&self, node: &Node) -> bool {
        self.terms.iter().any(|t| t.matches(node))
    }
}

/// `nodeaffinity.RequiredNodeAffinity`: the pod's `nodeSelector` map AND its required node
/// affinity.
#[derive(Debug, Clone)]
pub struct RequiredNodeAffinity {
    node_selector: Option<Labels>,
    affinity: Option<CompiledNodeSelector>,
}

impl RequiredNodeAffinity {
    pub fn of_pod(pod: &ksim_api::Pod) -> RequiredNodeAffinity {
        let node_selector = if pod.spec.node_selector.is_empty() {
            None
        } else {
            Some(pod.spec.node_selector.clone())
        };
        let affinity = pod
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| na.required.as_ref())
            .map(CompiledNodeSelector::new);
        RequiredNodeAffinity {
            node_selector,
            affinity,
        }
    }

    /// No node selector and no required node affinity: every node matches.
    pub fn is_empty(&self) -> bool {
        self.node_selector.is_none() && self.affinity.is_none()
    }

    pub fn matches(&self, node: &Node) -> bool {
        if let Some(sel) = &self.node_selector {
            if !sel
                .iter()
                .all(|(k, v)| node.metadata.labels.get(k) == Some(v))
            {
                return false;
            }
        }
        match &self.affinity {
            Some(a) => a.matches(node),
            None => true,
        }
    }
}

/// `nodeaffinity.PreferredSchedulingTerms`.
#[derive(Debug, Clone, Default)]
pub struct PreferredTerms {
    terms: Vec<(CompiledTerm, i64)>,
}

impl PreferredTerms {
    pub fn new(terms: &[ksim_api::PreferredSchedulingTerm]) -> PreferredTerms {
        PreferredTerms {
            terms: terms
                .iter()
                .filter(|t| t.weight != 0)
                .map(|t| (CompiledTerm::new(&t.preference), t.weight as i64))
                .collect(),
        }
    }
    /// Sum of the weights of the matching terms.
    pub fn score(&self, node: &Node) -> i64 {
        self.terms
            .iter()
            .filter(|(t, _)| t.matches(node))
            .map(|(_, w)| *w)
            .sum()
    }
}

/// Whether any toleration tolerates the taint.
pub fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

/// `FindMatchingUntoleratedTaint` with a filter on taints.
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    include: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| include(t))
        .find(|t| !tolerations_tolerate(tolerations, t))
}

/// `helper.DefaultNormalizeScore`.
pub fn default_normalize_score(max_priority: i64, reverse: bool, scores: &mut [i64]) {
    let max = scores.iter().copied().max().unwrap_or(0).max(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = max_priority);
        }
        return;
    }
    for s in scores.iter_mut() {
        let mut v = max_priority * *s / max;
        if reverse {
            v = max_priority - v;
        }
        *s = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize() {
        let mut s = vec![0, 5, 10];
        default_normalize_score(100, false, &mut s);
        assert_eq!(s, vec![0, 50, 100]);
        let mut s = vec![0, 0];
        default_normalize_score(100, true, &mut s);
        assert_eq!(s, vec![100, 100]);
    }
}
