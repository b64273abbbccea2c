//! `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration and the plugin args it carries,
//! with upstream's defaulting of the top-level fields and of each args type.
//!
//! [`KubeSchedulerConfiguration::from_value`] reads a document as kube-scheduler does: strictly
//! (an unknown field anywhere, plugin args included, is an error naming its path; see
//! [`strict`]), then validated as upstream's `ValidateKubeSchedulerConfiguration` and the
//! plugin args validations do ([`KubeSchedulerConfiguration::check`]).
//!
//! Expanding a profile into the plugin set per extension point (default plugins merged with the
//! user's enable/disable lists) is scheduler logic and lives in `ksim-scheduler`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::nulls::or_default;
use crate::validation::{quote, FieldError, FieldErrors};

mod extender;
pub mod strict;

pub use extender::{
    parse_go_duration, Extender, ExtenderManagedResource, ExtenderTlsConfig,
    DEFAULT_EXTENDER_TIMEOUT,
};
mod validate;

/// The only configuration version kube-scheduler v1.35 reads.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";

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
    #[serde(deserialize_with = "or_default")]
    pub profiles: Vec<Profile>,
    /// Scheduler extenders (filter, prioritize, preempt and bind verbs over HTTP(S); see
    /// [`Extender`]).
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "or_default")]
    pub extenders: Vec<Extender>,
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
            extenders: Vec::new(),
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

    /// upstream's validation (see [`validate`](self::validate)): every problem, with its path.
    pub fn check(&self) -> Result<(), FieldErrors> {
        validate::validate(self).into_result()
    }

    /// [`check`](Self::check) as one message (upstream's aggregate form).
    pub fn validate(&self) -> Result<(), String> {
        self.check().map_err(|e| e.to_string())
    }

    /// Reads a KubeSchedulerConfiguration document as kube-scheduler does: a ConfigMap wrapping
    /// one is refused with the command that extracts it; unknown fields anywhere are refused
    /// (strict decoding); then the typed decoding and upstream's validation. Errors name the
    /// field path.
    pub fn from_value(v: &Value) -> Result<KubeSchedulerConfiguration, FieldErrors> {
        if let Some(e) = configmap_hint(v) {
            return Err(FieldErrors(vec![e]));
        }
        if !v.is_object() {
            return Err(FieldErrors(vec![FieldError::new(
                "",
                format!(
                    "expected a KubeSchedulerConfiguration object, got {}",
                    crate::json::value_kind(v)
                ),
            )]));
        }
        // apiVersion and kind before any field: a v1beta1 file's fields are not v1's, and the
        // news that matters is its version (as kube-scheduler's decoder refuses an unregistered
        // version before it reads a field).
        if let Some(e) = version_error(v) {
            return Err(FieldErrors(vec![e]));
        }
        let unknown = strict::unknown_fields(v);
        if !unknown.is_empty() {
            return Err(FieldErrors(unknown));
        }
        let v = crate::nulls::without_nulls(v);
        let cfg: KubeSchedulerConfiguration =
            serde_path_to_error::deserialize(&v).map_err(|e| {
                let p = e.path().to_string();
                FieldErrors(vec![FieldError::new(
                    if p == "." { String::new() } else { p },
                    e.inner().to_string(),
                )])
            })?;
        cfg.check()?;
        Ok(cfg)
    }
}

/// For `#[serde(deserialize_with)]` on an `Option<KubeSchedulerConfiguration>` field: the
/// configuration read strictly and validated by [`KubeSchedulerConfiguration::from_value`].
pub fn strict_option<'de, D>(d: D) -> Result<Option<KubeSchedulerConfiguration>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(v) => KubeSchedulerConfiguration::from_value(&v)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// A wrong `apiVersion` or `kind` (when given), checked before any other field. The versions
/// kube-scheduler no longer reads (v1alpha1, v1alpha2, v1beta1–v1beta3: only v1 is served
/// since v1.29) are named as such.
fn version_error(v: &Value) -> Option<FieldError> {
    let api = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !api.is_empty() && api != API_VERSION {
        let mut e = FieldError::not_supported("apiVersion", api, &[API_VERSION]);
        if let Some(old) = api.strip_prefix("kubescheduler.config.k8s.io/") {
            e.body.push_str(&format!(
                " ({old} is no longer served: kube-scheduler v1.35 reads only {API_VERSION}; \
                 convert the file to v1 first, see \
                 https://kubernetes.io/docs/reference/scheduling/config/)"
            ));
        }
        return Some(e);
    }
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != "KubeSchedulerConfiguration" {
        return Some(FieldError::not_supported(
            "kind",
            kind,
            &["KubeSchedulerConfiguration"],
        ));
    }
    None
}

/// A ConfigMap holding a KubeSchedulerConfiguration (as clusters store it): an error saying so,
/// naming the data key and the command that extracts it.
fn configmap_hint(v: &Value) -> Option<FieldError> {
    if v.get("kind").and_then(Value::as_str) != Some("ConfigMap") {
        return None;
    }
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("NAME");
    let data = v.get("data").and_then(Value::as_object);
    let key = data.and_then(|d| {
        d.iter()
            .find(|(_, x)| {
                x.as_str()
                    .is_some_and(|s| s.contains("KubeSchedulerConfiguration"))
            })
            .or_else(|| d.iter().next())
            .map(|(k, _)| k.clone())
    });
    Some(match key {
        Some(k) => FieldError::new(
            "kind",
            format!(
                "this is a ConfigMap, not a KubeSchedulerConfiguration; its data key {} holds the configuration. Extract it with: kubectl get cm {name} -o jsonpath='{{.data.{}}}' > scheduler-config.yaml",
                quote(&k),
                k.replace('.', "\\.")
            ),
        ),
        None => FieldError::new(
            "kind",
            "this is a ConfigMap, not a KubeSchedulerConfiguration, and it has no data keys",
        ),
    })
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Profile {
    #[serde(deserialize_with = "or_default")]
    pub scheduler_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Plugins>,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "or_default")]
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
    #[serde(deserialize_with = "or_default")]
    pub pre_enqueue: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub queue_sort: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub pre_filter: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub filter: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub post_filter: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub pre_score: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub score: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub reserve: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub permit: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub pre_bind: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub bind: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub post_bind: PluginSet,
    #[serde(deserialize_with = "or_default")]
    pub multi_point: PluginSet,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PluginSet {
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "or_default")]
    pub enabled: Vec<PluginRef>,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "or_default")]
    pub disabled: Vec<PluginRef>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PluginRef {
    #[serde(deserialize_with = "or_default")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PluginConfig {
    #[serde(deserialize_with = "or_default")]
    pub name: String,
    #[serde(deserialize_with = "or_default")]
    pub args: serde_json::Value,
}

// ---------------------------------------------------------------------------------------------
// Typed plugin args with upstream defaults (pkg/scheduler/apis/config/v1/defaults.go).

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceSpec {
    #[serde(deserialize_with = "or_default")]
    pub name: String,
    #[serde(deserialize_with = "or_default")]
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
    #[serde(deserialize_with = "or_default")]
    pub ignored_resources: Vec<String>,
    #[serde(deserialize_with = "or_default")]
    pub ignored_resource_groups: Vec<String>,
    #[serde(deserialize_with = "or_default")]
    pub scoring_strategy: ScoringStrategy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScoringStrategy {
    /// Empty when a `scoringStrategy` is given without a type: upstream's defaulting leaves it
    /// empty and its validation refuses it.
    #[serde(rename = "type", default, deserialize_with = "or_default")]
    pub type_: String,
    #[serde(deserialize_with = "or_default")]
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
    #[serde(deserialize_with = "or_default")]
    pub shape: Vec<UtilizationShapePoint>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UtilizationShapePoint {
    #[serde(deserialize_with = "or_default")]
    pub utilization: i32,
    #[serde(deserialize_with = "or_default")]
    pub score: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeResourcesBalancedAllocationArgs {
    #[serde(deserialize_with = "or_default")]
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
    #[serde(deserialize_with = "or_default")]
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
    #[serde(deserialize_with = "or_default")]
    pub default_constraints: Vec<crate::core::TopologySpreadConstraint>,
    #[serde(deserialize_with = "or_default")]
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

/// `VolumeBindingArgs` (validated; the engine uses upstream's default bind timeout).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeBindingArgs {
    pub bind_timeout_seconds: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<UtilizationShapePoint>>,
}

impl Default for VolumeBindingArgs {
    fn default() -> Self {
        VolumeBindingArgs {
            bind_timeout_seconds: 600,
            shape: None,
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
        Some(v) => serde_path_to_error::deserialize(&crate::nulls::without_nulls(v)).map_err(|e| {
            let p = e.path().to_string();
            if p == "." {
                format!("args of plugin {plugin}: {}", e.inner())
            } else {
                format!("args of plugin {plugin}: {p}: {}", e.inner())
            }
        }),
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
