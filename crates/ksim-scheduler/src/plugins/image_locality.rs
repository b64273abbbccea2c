//! `ImageLocality` (upstream `imagelocality`): favours nodes that already hold the pod's
//! images, scaled by how widely each image is spread across the cluster.

use std::sync::Arc;

use crate::framework::{
    CycleState, FactoryArgs, Plugin, PluginRef, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::node_info::{NodeFlags, NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

pub struct ImageLocality;

/// What PreScore stores: the cluster's node count (upstream reads it from the snapshot
/// lister) and the normalised image names of the pod's containers, computed once per cycle
/// instead of once per node.
#[derive(Clone)]
struct PreScoreState {
    total_nodes: usize,
    images: Vec<String>,
}

/// The normalised image names of the pod's init containers and containers, in that order.
fn pod_images(pod: &PodInfo) -> Vec<String> {
    let spec = &pod.pod.spec;
    spec.init_containers
        .iter()
        .chain(spec.containers.iter())
        .map(|c| normalized_image_name(&c.image).into_owned())
        .collect()
}

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(ImageLocality))
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreScorePlugin for ImageLocality {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        state.write(
            NAME,
            PreScoreState {
                total_nodes: snapshot.len(),
                images: pod_images(pod),
            },
        );
        Status::success()
    }
}

/// `normalizedImageName`: a name without a tag gets `:latest`.
pub fn normalized_image_name(name: &str) -> std::borrow::Cow<'_, str> {
    let colon = name.rfind(':').map(|i| i as isize).unwrap_or(-1);
    let slash = name.rfind('/').map(|i| i as isize).unwrap_or(-1);
    if colon <= slash {
        format!("{name}:latest").into()
    } else {
        name.into()
    }
}

fn calculate_priority(sum: i64, num_containers: usize) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * num_containers as i64;
    let s = sum.clamp(MIN_THRESHOLD, max_threshold.max(MIN_THRESHOLD));
    if max_threshold == MIN_THRESHOLD {
        return 0;
    }
    MAX_NODE_SCORE * (s - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

impl ImageLocality {
    /// `ImageLocality.Score` for one node given the cycle's node count and image names.
    fn score_one(total_nodes: usize, images: &[String], node: &NodeInfo) -> i64 {
        let total_nodes = total_nodes.max(1);
        let mut sum = 0i64;
        // A node without images scores the empty sum: no lookups.
        if node.lists_images() {
            for name in images {
                if let Some(st) = node.image_states.get(name.as_str()) {
                    let spread = st.num_nodes as f64 / total_nodes as f64;
                    sum += (st.size as f64 * spread) as i64;
                }
            }
        }
        calculate_priority(sum, images.len())
    }
}

impl ScorePlugin for ImageLocality {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(match state.read::<PreScoreState>(NAME) {
            Some(s) => Self::score_one(s.total_nodes, &s.images, node),
            None => Self::score_one(1, &pod_images(pod), node),
        })
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        let computed;
        let (total_nodes, images) = match state.read::<PreScoreState>(NAME) {
            Some(s) => (s.total_nodes, &s.images),
            None => {
                computed = pod_images(pod);
                (1, &computed)
            }
        };
        // Most nodes hold none of the images (synthetic and trace clusters list none at all):
        // they all score the empty sum, computed once per cycle.
        let empty = calculate_priority(0, images.len());
        out.extend(nodes.iter().map(|n| {
            if !n.lists_images() {
                empty
            } else {
                Self::score_one(total_nodes, images, n)
            }
        }));
        Ok(())
    }

    /// No node lists an image (the usual case): every node scores the empty sum.
    fn uniform_score(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Option<(i64, i64)> {
        if nodes.iter().any(|n| n.lists_images()) {
            return None;
        }
        Some(self.empty_score(state, pod))
    }

    /// No node among them lists an image: the empty score, without reading a node.
    fn uniform_score_with_flags(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
        flags: NodeFlags,
    ) -> Option<(i64, i64)> {
        (!flags.intersects(NodeFlags::IMAGES)).then(|| self.empty_score(state, pod))
    }
}

impl ImageLocality {
    /// The (raw, normalized) score of a node listing no image.
    fn empty_score(&self, state: &CycleState, pod: &PodInfo) -> (i64, i64) {
        let num_images = match state.read::<PreScoreState>(NAME) {
            Some(s) => s.images.len(),
            None => pod_images(pod).len(),
        };
        let empty = calculate_priority(0, num_images);
        (empty, empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.2"), "nginx:1.2");
        assert_eq!(
            normalized_image_name("localhost:5000/nginx"),
            "localhost:5000/nginx:latest"
        );
    }
}
