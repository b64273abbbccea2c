//! `ImageLocality` (upstream `imagelocality`): favours nodes that already hold the pod's
//! images, scaled by how widely each image is spread across the cluster.

use std::sync::Arc;

use crate::framework::{
    CycleState, FactoryArgs, Plugin, PluginRef, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

pub struct ImageLocality;

/// The cluster's node count, stored by PreScore (upstream reads it from the snapshot lister).
#[derive(Clone)]
struct TotalNodes(usize);

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
        _: &PodInfo,
        _: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        state.write(NAME, TotalNodes(snapshot.len()));
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

impl ScorePlugin for ImageLocality {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let total_nodes = state
            .read::<TotalNodes>(NAME)
            .map(|t| t.0)
            .unwrap_or(1)
            .max(1);
        let spec = &pod.pod.spec;
        let mut sum = 0i64;
        for c in spec.init_containers.iter().chain(spec.containers.iter()) {
            if let Some(st) = node
                .image_states
                .get(normalized_image_name(&c.image).as_ref())
            {
                let spread = st.num_nodes as f64 / total_nodes as f64;
                sum += (st.size as f64 * spread) as i64;
            }
        }
        Ok(calculate_priority(
            sum,
            spec.init_containers.len() + spec.containers.len(),
        ))
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
