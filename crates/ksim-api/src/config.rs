//! `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration and the plugin args it carries,
//! with upstream's defaulting of the top-level fields and of each args type.
//!
//! Expanding a profile into the plugin set per extension point (default plugins merged with the
//! user's enable/disable lists) is scheduler logic and lives in `ksim-scheduler`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KubeSchedulerConfiguration {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_initial_backoff_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_max_backoff_seconds: Option<i64>,
    pub profiles: Vec<Profile>,
}

impl Default for KubeSchedulerConfiguration {
    fn default() -> Self {
        KubeSchedulerConfiguration {
            api_version: "kubescheduler.config.k8s.io/v1".into(),
            kind: "KubeSchedulerConfiguration".into(),
            parallelism: None,
            percentage_of_nodes_to_score: None,
            pod_initial_backoff_seconds: None,
            pod_max_backoff_seconds: None,
            profiles: Vec::new(),
        }
    }
}

impl KubeSchedulerConfiguration {
    /// `podInitialBackoffSeconds`, defaulted to 1.
    pub fn initial_backoff_seconds(&self) -> i64 {
        self.pod_initial_backoff_seconds.unwrap_or(1)
    }
    /// `podMaxBackoffSeconds`, defaulted to 10.
    pub fn max_backoff_seconds(&self) -> i64 {
        self.pod_max_backoff_seconds.unwrap_or(10)
    }

    /// Checks what upstream's validation rejects and a user is likely to get wrong.
    pub fn validate(&self) -> Result<(), String> {
        if !self.api_version.is_empty() && self.api_version != "kubescheduler.config.k8s.io/v1" {
            return Err(format!(
                "apiVersion {:?} is not supported (expected kubescheduler.config.k8s.io/v1)",
                self.api_version
            ));
        }
        if !self.kind.is_empty() && self.kind != "KubeSchedulerConfiguration" {
            return Err(format!(
                "kind {:?} is not KubeSchedulerConfiguration",
                self.kind
            ));
        }
        if let Some(p) = self.percentage_of_nodes_to_score {
            if !(0..=100).contains(&p) {
                return Err(format!(
                    "percentageOfNodesToScore: {p} is not in the range 0..100"
                ));
            }
        }
        if self.initial_backoff_seconds() <= 0 {
            return Err("podInitialBackoffSeconds must be greater than 0".into());
        }
        if self.max_backoff_seconds() < self.initial_backoff_seconds() {
            return Err(
                "podMaxBackoffSeconds must be greater than or equal to podInitialBackoffSeconds"
                    .into(),
            );
        }
        for (i, p) in self.profiles.iter().enumerate() {
            if let Some(pct) = p.percentage_of_nodes_to_score {
                if !(0..=100).contains(&pct) {
                    return Err(format!(
                        "profiles[{i}].percentageOfNodesToScore: {pct} is not in the range 0..100"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Profile {
    pub scheduler_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Plugins>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plugin_config: Vec<PluginConfig>,
}

impl Profile {
    /// `schedulerName`, defaulted to `default-scheduler`.
    pub fn name(&self) -> &str {
        if self.scheduler_name.is_empty() {
            "default-scheduler"
        } else {
            &self.scheduler_name
        }
    }

    /// The raw args of a plugin, if the profile configures any.
    pub fn args_of(&self, plugin: &str) -> Option<&serde_json::Value> {
        self.plugin_config
            .iter()
            .find(|c| c.name == plugin)
            .map(|c| &c.args)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Plugins {
    pub pre_enqueue: PluginSet,
    pub queue_sort: PluginSet,
    pub pre_filter: PluginSet,
    pub filter: PluginSet,
    pub post_filter: PluginSet,
    pub pre_score: PluginSet,
    pub score: PluginSet,
    pub reserve: PluginSet,
    pub permit: PluginSet,
    pub pre_bind: PluginSet,
    pub bind: PluginSet,
    pub post_bind: PluginSet,
    pub multi_point: PluginSet,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PluginSet {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub enabled: Vec<PluginRef>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disabled: Vec<PluginRef>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PluginRef {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PluginConfig {
    pub name: String,
    pub args: serde_json::Value,
}

// ---------------------------------------------------------------------------------------------
// Typed plugin args with upstream defaults (pkg/scheduler/apis/config/v1/defaults.go).

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceSpec {
    pub name: String,
    pub weight: i64,
}

impl Default for ResourceSpec {
    fn default() -> Self {
        ResourceSpec {
            name: String::new(),
            weight: 1,
        }
    }
}

fn default_cpu_mem() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec {
            name: "cpu".into(),
            weight: 1,
        },
        ResourceSpec {
            name: "memory".into(),
            weight: 1,
        },
    ]
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeResourcesFitArgs {
    pub ignored_resources: Vec<String>,
    pub ignored_resource_groups: Vec<String>,
    pub scoring_strategy: ScoringStrategy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScoringStrategy {
    #[serde(rename = "type")]
    pub type_: String,
    pub resources: Vec<ResourceSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

impl Default for ScoringStrategy {
    fn default() -> Self {
        ScoringStrategy {
            type_: "LeastAllocated".into(),
            resources: default_cpu_mem(),
            requested_to_capacity_ratio: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RequestedToCapacityRatioParam {
    pub shape: Vec<UtilizationShapePoint>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UtilizationShapePoint {
    pub utilization: i32,
    pub score: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeResourcesBalancedAllocationArgs {
    pub resources: Vec<ResourceSpec>,
}

impl Default for NodeResourcesBalancedAllocationArgs {
    fn default() -> Self {
        NodeResourcesBalancedAllocationArgs {
            resources: default_cpu_mem(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InterPodAffinityArgs {
    pub hard_pod_affinity_weight: i32,
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodTopologySpreadArgs {
    pub default_constraints: Vec<crate::core::TopologySpreadConstraint>,
    pub defaulting_type: String,
}

impl Default for PodTopologySpreadArgs {
    fn default() -> Self {
        PodTopologySpreadArgs {
            default_constraints: Vec::new(),
            defaulting_type: "System".into(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeAffinityArgs {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_affinity: Option<crate::core::NodeAffinity>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DefaultPreemptionArgs {
    pub min_candidate_nodes_percentage: i32,
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
        }
    }
}

/// Decodes typed args from a profile's raw `args`, applying upstream defaults for absent fields.
///
/// Upstream's defaulting of some list fields depends on whether the user set them at all (for
/// example an empty `scoringStrategy.resources` is defaulted to cpu+memory); that is done here.
pub fn decode_args<T: serde::de::DeserializeOwned + Default>(
    plugin: &str,
    raw: Option<&serde_json::Value>,
) -> Result<T, String> {
    match raw {
        None | Some(serde_json::Value::Null) => Ok(T::default()),
        Some(v) => {
            serde_json::from_value(v.clone()).map_err(|e| format!("args of plugin {plugin}: {e}"))
        }
    }
}

impl NodeResourcesFitArgs {
    /// Upstream `SetDefaults_NodeResourcesFitArgs`.
    pub fn defaulted(mut self) -> Self {
        if self.scoring_strategy.type_.is_empty() {
            self.scoring_strategy.type_ = "LeastAllocated".into();
        }
        if self.scoring_strategy.resources.is_empty() {
            self.scoring_strategy.resources = default_cpu_mem();
        }
        for r in &mut self.scoring_strategy.resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
        self
    }
}

impl NodeResourcesBalancedAllocationArgs {
    pub fn defaulted(mut self) -> Self {
        if self.resources.is_empty() {
            self.resources = default_cpu_mem();
        }
        for r in &mut self.resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
        self
    }
}
