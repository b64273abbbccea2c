//! `NodeAffinity` (upstream `nodeaffinity`): required node affinity and `nodeSelector` as a
//! filter (with the `metadata.name` PreFilterResult), preferred terms as a max-normalised score,
//! and `NodeAffinityArgs.addedAffinity` enforced on every pod.

use std::sync::Arc;

use ksim_api::config::{decode_args, NodeAffinityArgs};

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, Code, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, Plugin, PluginRef, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, QueueingHint, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::node_info::{NodeInfo, Snapshot};
use crate::plugins::helper::{
    default_normalize_score, CompiledNodeSelector, PreferredTerms, RequiredNodeAffinity,
};
use crate::pod_info::PodInfo;

pub const NAME: &str = "NodeAffinity";
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

pub struct NodeAffinity {
    added_node_selector: Option<CompiledNodeSelector>,
    added_pref_terms: Option<PreferredTerms>,
}

pub fn new(a: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    let args: NodeAffinityArgs = decode_args(NAME, a.args)?;
    let mut pl = NodeAffinity {
        added_node_selector: None,
        added_pref_terms: None,
    };
    if let Some(aa) = &args.added_affinity {
        pl.added_node_selector = aa.required.as_ref().map(CompiledNodeSelector::new);
        if !aa.preferred.is_empty() {
            pl.added_pref_terms = Some(PreferredTerms::new(&aa.preferred));
        }
    }
    Ok(Arc::new(pl))
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

#[derive(Clone)]
struct PreFilterState(Arc<RequiredNodeAffinity>);

#[derive(Clone)]
struct PreScoreState(Option<Arc<PreferredTerms>>);

const PRE_SCORE_KEY: &str = "PreScoreNodeAffinity";

fn pod_preferred(pod: &PodInfo) -> Option<PreferredTerms> {
    let na = pod.pod.spec.affinity.as_ref()?.node_affinity.as_ref()?;
    if na.preferred.is_empty() {
        return None;
    }
    Some(PreferredTerms::new(&na.preferred))
}

impl PreFilterPlugin for NodeAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let required = pod
            .pod
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| na.required.as_ref());
        if required.is_none()
            && self.added_node_selector.is_none()
            && pod.pod.spec.node_selector.is_empty()
        {
            return (None, Status::skip());
        }
        state.write(
            NAME,
            PreFilterState(Arc::new(RequiredNodeAffinity::of_pod(&pod.pod))),
        );
        let Some(required) = required else {
            return (None, Status::success());
        };
        if required.node_selector_terms.is_empty() {
            return (None, Status::success());
        }
        // Affinity to specific node names via matchFields metadata.name In.
        let mut node_names: Option<Vec<String>> = None;
        for t in &required.node_selector_terms {
            let mut term_names: Option<Vec<String>> = None;
            for r in &t.match_fields {
                if r.key == "metadata.name" && r.operator == "In" {
                    let mut s: Vec<String> = r.values.clone();
                    s.sort();
                    s.dedup();
                    term_names = Some(match term_names {
                        None => s,
                        Some(prev) => prev.into_iter().filter(|n| s.contains(n)).collect(),
                    });
                }
            }
            let Some(term_names) = term_names else {
                // A term without a name restriction allows every node (terms are ORed).
                return (None, Status::success());
            };
            let mut acc = node_names.unwrap_or_default();
            for n in term_names {
                if !acc.contains(&n) {
                    acc.push(n);
                }
            }
            node_names = Some(acc);
        }
        match node_names {
            Some(n) if n.is_empty() => (None, Status::unresolvable(ERR_REASON_CONFLICT)),
            Some(mut n) => {
                n.sort();
                (
                    Some(PreFilterResult {
                        node_names: Some(n),
                    }),
                    Status::success(),
                )
            }
            None => (None, Status::success()),
        }
    }
}

// Filter's two fixed rejections, shared by every node they reject (named by the plugin, as the
// framework names them anyway): rejecting most of a cluster allocates nothing.
static ENFORCED_NOT_MATCH: Status = Status::fixed(
    Code::UnschedulableAndUnresolvable,
    ERR_REASON_ENFORCED,
    NAME,
);
static POD_NOT_MATCH: Status =
    Status::fixed(Code::UnschedulableAndUnresolvable, ERR_REASON_POD, NAME);

impl FilterPlugin for NodeAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        if let Some(sel) = &self.added_node_selector {
            if !sel.matches(&node.node) {
                return FilterResult::shared(&ENFORCED_NOT_MATCH);
            }
        }
        let ok = match state.read::<PreFilterState>(NAME) {
            Some(s) => s.0.matches(&node.node),
            None => RequiredNodeAffinity::of_pod(&pod.pod).matches(&node.node),
        };
        if ok {
            FilterResult::PASS
        } else {
            FilterResult::shared(&POD_NOT_MATCH)
        }
    }

    /// The verdict reads the node object only (its labels and fields).
    fn ignores_pods(&self) -> bool {
        true
    }
}

impl PreScorePlugin for NodeAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        if nodes.is_empty() {
            return Status::success();
        }
        let pref = pod_preferred(pod);
        if pref.is_none() && self.added_pref_terms.is_none() {
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, PreScoreState(pref.map(Arc::new)));
        Status::success()
    }
}

impl ScorePlugin for NodeAffinity {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let mut count = 0;
        if let Some(t) = &self.added_pref_terms {
            count += t.score(&node.node);
        }
        match state.read::<PreScoreState>(PRE_SCORE_KEY) {
            Some(PreScoreState(Some(p))) => count += p.score(&node.node),
            Some(PreScoreState(None)) => {}
            None => {
                if let Some(p) = pod_preferred(pod) {
                    count += p.score(&node.node);
                }
            }
        }
        Ok(count)
    }
    fn has_normalize(&self) -> bool {
        true
    }
    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
        Status::success()
    }
}

impl EnqueueExtensions for NodeAffinity {
    fn events(&self) -> &'static [ClusterEventKind] {
        &[
            ClusterEventKind::NodeAdd,
            ClusterEventKind::NodeUpdateLabel,
            ClusterEventKind::UnscheduledPodUpdate,
        ]
    }

    fn hint(
        &self,
        pod: &PodInfo,
        _: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match objs {
            ClusterEventObjects::Node {
                old,
                new: Some(new),
            } => {
                if let Some(sel) = &self.added_node_selector {
                    if !sel.matches(new) {
                        return QueueingHint::Skip;
                    }
                }
                let req = RequiredNodeAffinity::of_pod(&pod.pod);
                if !req.matches(new) {
                    return QueueingHint::Skip;
                }
                match old {
                    None => QueueingHint::Queue,
                    Some(o) if !req.matches(o) => QueueingHint::Queue,
                    Some(_) => QueueingHint::Skip,
                }
            }
            _ => QueueingHint::Queue,
        }
    }
}
