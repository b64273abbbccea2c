//! Label matching the volume plugins need: a PV's `nodeAffinity` (`CheckNodeAffinity` from
//! `component-helpers/storage/volume`) and a StorageClass' `allowedTopologies`
//! (`v1helper.MatchTopologySelectorTerms`).
//!
//! `CheckNodeAffinity` matches against a node built from the labels alone, so the node has no
//! name and upstream's selector skips `matchFields` entirely (it only checks fields when the
//! node has some). A term with any invalid requirement matches nothing, and an empty term
//! matches nothing.

use ksim_api::meta::{Requirement, SelectorOp};
use ksim_api::storage::TopologySelectorTerm;
use ksim_api::{Labels, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};

/// One compiled `NodeSelectorTerm` of a PV's required node affinity.
#[derive(Debug, Clone)]
struct PvTerm {
    /// `None` when the term is empty or failed to parse: it matches nothing.
    requirements: Option<Vec<Requirement>>,
}

/// A PV's `spec.nodeAffinity.required`, compiled once per cycle.
#[derive(Debug, Clone, Default)]
pub struct PvAffinity {
    /// `None`: the PV has no required affinity and fits every node.
    terms: Option<Vec<PvTerm>>,
}

impl PvAffinity {
    /// Compiles `pv.spec.nodeAffinity.required` (`None` = no constraint).
    pub fn new(required: Option<&NodeSelector>) -> PvAffinity {
        PvAffinity {
            terms: required.map(|ns| ns.node_selector_terms.iter().map(compile_term).collect()),
        }
    }

    /// `CheckNodeAffinity(pv, labels) == nil`: some term matches (terms are ORed).
    pub fn matches(&self, labels: &Labels) -> bool {
        match &self.terms {
            None => true,
            Some(terms) => terms.iter().any(|t| match &t.requirements {
                None => false,
                Some(reqs) => reqs.iter().all(|r| r.matches(labels)),
            }),
        }
    }
}

fn compile_term(term: &NodeSelectorTerm) -> PvTerm {
    if term.match_expressions.is_empty() && term.match_fields.is_empty() {
        return PvTerm { requirements: None };
    }
    let mut reqs = Vec::with_capacity(term.match_expressions.len());
    for e in &term.match_expressions {
        match label_requirement(e) {
            Some(r) => reqs.push(r),
            None => return PvTerm { requirements: None },
        }
    }
    for f in &term.match_fields {
        // Parsed (so a malformed field fails the term) but never evaluated: the label-only
        // node has no fields.
        let ok = matches!(f.operator.as_str(), "In" | "NotIn") && f.values.len() == 1;
        if !ok {
            return PvTerm { requirements: None };
        }
    }
    PvTerm {
        requirements: Some(reqs),
    }
}

/// `nodeSelectorRequirementsAsSelector` for one expression; `None` on a parse error.
fn label_requirement(e: &NodeSelectorRequirement) -> Option<Requirement> {
    let op = SelectorOp::parse(&e.operator)?;
    let ok = match op {
        SelectorOp::In | SelectorOp::NotIn => !e.values.is_empty(),
        SelectorOp::Exists | SelectorOp::DoesNotExist => e.values.is_empty(),
        SelectorOp::Gt | SelectorOp::Lt => {
            e.values.len() == 1 && e.values[0].parse::<i64>().is_ok()
        }
    };
    ok.then(|| Requirement {
        key: e.key.clone(),
        op,
        values: e.values.clone(),
    })
}

/// `MatchTopologySelectorTerms`: no terms allow every node; otherwise some non-empty term must
/// have every expression satisfied (the label present with one of the values).
pub fn match_topology_terms(terms: &[TopologySelectorTerm], labels: &Labels) -> bool {
    if terms.is_empty() {
        return true;
    }
    terms.iter().any(|t| {
        !t.match_label_expressions.is_empty()
            && t.match_label_expressions.iter().all(|r| {
                // A requirement without values is invalid and fails the whole term.
                !r.values.is_empty()
                    && labels
                        .get(&r.key)
                        .is_some_and(|v| r.values.iter().any(|x| x == v))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_api::storage::TopologySelectorLabelRequirement;

    fn labels(kv: &[(&str, &str)]) -> Labels {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn selector(json: &str) -> NodeSelector {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn pv_affinity_table() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
        let cases: &[Case] = &[
            // hostname pin
            (
                r#"{"nodeSelectorTerms":[{"matchExpressions":[{"key":"h","operator":"In","values":["n1"]}]}]}"#,
                &[("h", "n1")],
                true,
            ),
            (
                r#"{"nodeSelectorTerms":[{"matchExpressions":[{"key":"h","operator":"In","values":["n1"]}]}]}"#,
                &[("h", "n2")],
                false,
            ),
            // ORed terms
            (
                r#"{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Exists"}]},
                   {"matchExpressions":[{"key":"b","operator":"Exists"}]}]}"#,
                &[("b", "x")],
                true,
            ),
            // Gt
            (
                r#"{"nodeSelectorTerms":[{"matchExpressions":[{"key":"gen","operator":"Gt","values":["4"]}]}]}"#,
                &[("gen", "5")],
                true,
            ),
            (
                r#"{"nodeSelectorTerms":[{"matchExpressions":[{"key":"gen","operator":"Gt","values":["4"]}]}]}"#,
                &[("gen", "4")],
                false,
            ),
            // empty term matches nothing
            (r#"{"nodeSelectorTerms":[{}]}"#, &[("a", "b")], false),
            // no terms at all match nothing
            (r#"{"nodeSelectorTerms":[]}"#, &[("a", "b")], false),
            // matchFields alone: ignored for a label-only node, so the term matches
            (
                r#"{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["n9"]}]}]}"#,
                &[],
                true,
            ),
            // invalid operator fails the term
            (
                r#"{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Bogus","values":["x"]}]}]}"#,
                &[("a", "x")],
                false,
            ),
        ];
        for (sel, l, want) in cases {
            let a = PvAffinity::new(Some(&selector(sel)));
            assert_eq!(a.matches(&labels(l)), *want, "{sel} {l:?}");
        }
        assert!(PvAffinity::new(None).matches(&labels(&[])));
    }

    #[test]
    fn topology_terms() {
        let term = |reqs: &[(&str, &[&str])]| TopologySelectorTerm {
            match_label_expressions: reqs
                .iter()
                .map(|(k, v)| TopologySelectorLabelRequirement {
                    key: k.to_string(),
                    values: v.iter().map(|s| s.to_string()).collect(),
                })
                .collect(),
        };
        let node = labels(&[("zone", "a"), ("region", "r2")]);
        assert!(match_topology_terms(&[], &node));
        // AND within a term
        assert!(!match_topology_terms(
            &[term(&[("zone", &["a"]), ("region", &["r1"])])],
            &node
        ));
        // OR across terms
        assert!(match_topology_terms(
            &[
                term(&[("zone", &["a"]), ("region", &["r1"])]),
                term(&[("zone", &["a", "c"])])
            ],
            &node
        ));
        // an empty term selects nothing
        assert!(!match_topology_terms(&[term(&[])], &node));
    }
}
