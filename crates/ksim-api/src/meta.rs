//! `metav1.ObjectMeta` and label selectors.

use crate::sorted_map::SortedMap;

use serde::{Deserialize, Serialize};

/// Labels and annotations are ordered maps so that iteration never depends on hashing
/// (sorted vectors: see [`SortedMap`]).
pub type Labels = SortedMap<String, String>;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    /// `metadata.generateName`: without a name, the object is named this prefix plus five
    /// random characters when it enters the cluster (as the API server does).
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub generate_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub uid: String,
    #[serde(skip_serializing_if = "Labels::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub labels: Labels,
    #[serde(skip_serializing_if = "Labels::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub annotations: Labels,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub owner_references: Vec<OwnerReference>,
    /// Read for DRA claims (the scheduler adds `resource.kubernetes.io/delete-protection`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub finalizers: Vec<String>,
}

impl ObjectMeta {
    pub fn finalizers_contains(&self, f: &str) -> bool {
        self.finalizers.iter().any(|x| x == f)
    }

    /// Appends a finalizer unless present.
    pub fn add_finalizer(&mut self, f: &str) {
        if !self.finalizers_contains(f) {
            self.finalizers.push(f.to_string());
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerReference {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub uid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
}

/// `metav1.LabelSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelector {
    #[serde(skip_serializing_if = "Labels::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub match_labels: Labels,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelectorRequirement {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub key: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub operator: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub values: Vec<String>,
}

/// A label selector turned into requirements, as `metav1.LabelSelectorAsSelector` does.
///
/// `None` inside [`Selector::Nothing`] mirrors upstream's distinction between a nil selector
/// (matches nothing) and an empty one (matches everything).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Selector {
    /// A nil `*LabelSelector`, or one with an invalid operator: selects nothing.
    Nothing,
    /// All requirements must hold; an empty list selects everything.
    Requirements(Vec<Requirement>),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub op: SelectorOp,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SelectorOp {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    /// Only in node selectors.
    Gt,
    /// Only in node selectors.
    Lt,
}

impl SelectorOp {
    pub fn parse(s: &str) -> Option<SelectorOp> {
        Some(match s {
            "In" => SelectorOp::In,
            "NotIn" => SelectorOp::NotIn,
            "Exists" => SelectorOp::Exists,
            "DoesNotExist" => SelectorOp::DoesNotExist,
            "Gt" => SelectorOp::Gt,
            "Lt" => SelectorOp::Lt,
            _ => return None,
        })
    }
}

impl Requirement {
    /// Whether the labels satisfy this requirement (`labels.Requirement.Matches`).
    pub fn matches(&self, labels: &Labels) -> bool {
        match self.op {
            SelectorOp::In => labels
                .get(&self.key)
                .is_some_and(|v| self.values.iter().any(|x| x == v)),
            SelectorOp::NotIn => labels
                .get(&self.key)
                .is_none_or(|v| !self.values.iter().any(|x| x == v)),
            SelectorOp::Exists => labels.contains_key(&self.key),
            SelectorOp::DoesNotExist => !labels.contains_key(&self.key),
            SelectorOp::Gt | SelectorOp::Lt => {
                let Some(v) = labels.get(&self.key) else {
                    return false;
                };
                let (Ok(have), Some(Ok(want))) = (
                    v.parse::<i64>(),
                    self.values.first().map(|s| s.parse::<i64>()),
                ) else {
                    return false;
                };
                if self.values.len() != 1 {
                    return false;
                }
                if self.op == SelectorOp::Gt {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl Selector {
    /// Everything.
    pub fn everything() -> Selector {
        Selector::Requirements(Vec::new())
    }

    /// `metav1.LabelSelectorAsSelector`: nil → nothing, empty → everything.
    pub fn from_label_selector(sel: Option<&LabelSelector>) -> Selector {
        let Some(sel) = sel else {
            return Selector::Nothing;
        };
        let mut reqs = Vec::with_capacity(sel.match_labels.len() + sel.match_expressions.len());
        for (k, v) in &sel.match_labels {
            reqs.push(Requirement {
                key: k.clone(),
                op: SelectorOp::In,
                values: vec![v.clone()],
            });
        }
        for e in &sel.match_expressions {
            let op = match SelectorOp::parse(&e.operator) {
                Some(op @ (SelectorOp::In | SelectorOp::NotIn)) if !e.values.is_empty() => op,
                Some(op @ (SelectorOp::Exists | SelectorOp::DoesNotExist))
                    if e.values.is_empty() =>
                {
                    op
                }
                // Upstream returns an error; callers treat an invalid selector as matching nothing.
                _ => return Selector::Nothing,
            };
            reqs.push(Requirement {
                key: e.key.clone(),
                op,
                values: e.values.clone(),
            });
        }
        Selector::Requirements(reqs)
    }

    /// A selector from plain `key: value` pairs (Service, ReplicationController): empty map
    /// selects everything as `labels.SelectorFromSet` does.
    pub fn from_set(set: &Labels) -> Selector {
        Selector::Requirements(
            set.iter()
                .map(|(k, v)| Requirement {
                    key: k.clone(),
                    op: SelectorOp::In,
                    values: vec![v.clone()],
                })
                .collect(),
        )
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::Requirements(r) => r.iter().all(|r| r.matches(labels)),
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Selector::Requirements(r) if r.is_empty())
    }

    /// Adds `key in (value)` (used for matchLabelKeys).
    pub fn add_requirement(&mut self, r: Requirement) {
        if let Selector::Requirements(v) = self {
            v.push(r);
        }
    }
}

/// The strings joined, in one allocation of the exact size: what `format!` of them gives,
/// without the formatter (every created pod builds its key and uid this way).
pub fn concat(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        s.push_str(p);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(kv: &[(&str, &str)]) -> Labels {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn nil_selects_nothing_and_empty_selects_all() {
        let l = labels(&[("app", "x")]);
        assert!(!Selector::from_label_selector(None).matches(&l));
        assert!(Selector::from_label_selector(Some(&LabelSelector::default())).matches(&l));
    }

    #[test]
    fn expressions() {
        let sel: LabelSelector = serde_json::from_str(
            r#"{"matchLabels":{"app":"x"},"matchExpressions":[{"key":"tier","operator":"NotIn","values":["db"]}]}"#,
        )
        .unwrap();
        let s = Selector::from_label_selector(Some(&sel));
        assert!(s.matches(&labels(&[("app", "x")])));
        assert!(s.matches(&labels(&[("app", "x"), ("tier", "web")])));
        assert!(!s.matches(&labels(&[("app", "x"), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("app", "y")])));
    }
}
