//! The plugin registry (name → constructor) and building a [`Framework`] from a
//! KubeSchedulerConfiguration profile with upstream's defaulting and MultiPoint expansion.

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::config::{
    KubeSchedulerConfiguration, PluginRef as CfgPluginRef, PluginSet, Plugins, Profile,
};

use ksim_api::version::{FeatureGates, KubernetesVersion};

use crate::framework::features::Features;
use crate::framework::interface::PluginRef;
use crate::framework::runtime::{Framework, WeightedScorePlugin};

/// Why a profile could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    #[error("plugin {0:?} is not registered (known plugins: {1})")]
    UnknownPlugin(String, String),
    #[error("plugin {plugin:?}: {message}")]
    BadArgs { plugin: String, message: String },
    #[error("plugin {0:?} already registered as {1}")]
    Duplicate(String, &'static str),
    #[error("profile {0:?}: {1}")]
    Invalid(String, String),
}

/// What a constructor gets: the raw args from `pluginConfig` (None when absent), the whole
/// profile (some plugins read others' settings) and the run's [`Features`] (upstream's `fts`).
pub struct FactoryArgs<'a> {
    pub args: Option<&'a serde_json::Value>,
    pub profile: &'a Profile,
    pub features: &'a Features,
}

pub type Factory = fn(&FactoryArgs<'_>) -> Result<PluginRef, String>;

/// Plugin name → constructor, and the [`Features`] every constructor is given (upstream's
/// `NewInTreeRegistry` closes over `fts` the same way). In-tree plugins are registered by
/// [`Registry::in_tree`]; out-of-tree plugins are added with [`Registry::register`] and
/// enabled by name.
#[derive(Clone, Default)]
pub struct Registry {
    factories: BTreeMap<String, Factory>,
    features: Features,
}

impl Registry {
    /// No plugin, the default version's features.
    pub fn empty() -> Registry {
        Registry::default()
    }

    /// Every in-tree plugin, behaving as the default Kubernetes version (1.36) with its
    /// default gates.
    pub fn in_tree() -> Registry {
        Registry::in_tree_with(Features::default())
    }

    /// Every in-tree plugin, behaving as `version` with its default gates.
    pub fn in_tree_for(version: KubernetesVersion) -> Registry {
        Registry::in_tree_with(Features::of(version))
    }

    /// Every in-tree plugin, with the version and gates of `gates`.
    pub fn in_tree_gates(gates: &FeatureGates) -> Registry {
        Registry::in_tree_with(Features::from_gates(gates))
    }

    /// Every in-tree plugin, given `features`.
    pub fn in_tree_with(features: Features) -> Registry {
        let mut r = Registry {
            factories: BTreeMap::new(),
            features,
        };
        crate::plugins::register_in_tree(&mut r);
        r
    }

    /// The features every constructor of this registry is given.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The same plugins, given other features (a run's version and gates).
    pub fn with_features(mut self, features: Features) -> Registry {
        self.features = features;
        self
    }

    pub fn register(&mut self, name: &str, f: Factory) {
        self.factories.insert(name.to_string(), f);
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.factories.keys().map(String::as_str)
    }

    pub fn get(&self, name: &str) -> Option<Factory> {
        self.factories.get(name).copied()
    }
}

/// One entry of the default profile's MultiPoint (upstream `getDefaultPlugins`): the plugin,
/// its score weight, the first version whose default profile has it, and the feature gate
/// upstream appends it under (None: always).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultPlugin {
    pub name: &'static str,
    pub weight: Option<i32>,
    pub since: KubernetesVersion,
    pub gate: Option<&'static str>,
}

const fn dp(name: &'static str, weight: Option<i32>) -> DefaultPlugin {
    DefaultPlugin {
        name,
        weight,
        since: KubernetesVersion::V1_35,
        gate: None,
    }
}

/// upstream `getDefaultPlugins` per version: MultiPoint, in order, with score weights. v1.35.4
/// and v1.36.2 share the list; `NodeDeclaredFeatures` is appended when its gate is on (alpha
/// and off in v1.35, beta and on in v1.36). No plugin's default args differ between them.
pub const DEFAULT_PLUGINS: &[DefaultPlugin] = &[
    dp("SchedulingGates", None),
    dp("PrioritySort", None),
    dp("NodeUnschedulable", None),
    dp("NodeName", None),
    dp("TaintToleration", Some(3)),
    dp("NodeAffinity", Some(2)),
    dp("NodePorts", None),
    dp("NodeResourcesFit", Some(1)),
    dp("VolumeRestrictions", None),
    dp("NodeVolumeLimits", None),
    dp("VolumeBinding", None),
    dp("VolumeZone", None),
    dp("PodTopologySpread", Some(2)),
    dp("InterPodAffinity", Some(2)),
    dp("DynamicResources", Some(2)),
    dp("DefaultPreemption", None),
    dp("NodeResourcesBalancedAllocation", Some(1)),
    dp("ImageLocality", Some(1)),
    dp("DefaultBinder", None),
    DefaultPlugin {
        name: "NodeDeclaredFeatures",
        weight: None,
        since: KubernetesVersion::V1_35,
        gate: Some("NodeDeclaredFeatures"),
    },
];

/// The default MultiPoint of `features`' version and gates: [`DEFAULT_PLUGINS`] filtered.
pub fn default_multi_point(features: &Features) -> Vec<(&'static str, Option<i32>)> {
    DEFAULT_PLUGINS
        .iter()
        .filter(|p| p.since <= features.version())
        .filter(|p| p.gate.is_none_or(|g| features.gates.enabled(g)))
        .map(|p| (p.name, p.weight))
        .collect()
}

fn default_plugins(features: &Features) -> Plugins {
    Plugins {
        multi_point: PluginSet {
            enabled: default_multi_point(features)
                .into_iter()
                .map(|(n, w)| CfgPluginRef {
                    name: n.to_string(),
                    weight: w,
                })
                .collect(),
            disabled: Vec::new(),
        },
        ..Default::default()
    }
}

/// upstream `mergePluginSet`.
fn merge_plugin_set(default: &PluginSet, custom: &PluginSet) -> PluginSet {
    let mut disabled: Vec<CfgPluginRef> = Vec::new();
    let mut disabled_names: Vec<&str> = Vec::new();
    for d in custom.disabled.iter().chain(default.disabled.iter()) {
        disabled.push(CfgPluginRef {
            name: d.name.clone(),
            weight: None,
        });
        disabled_names.push(&d.name);
    }
    let mut replaced = vec![false; custom.enabled.len()];
    let mut enabled = Vec::new();
    if !disabled_names.contains(&"*") {
        for de in &default.enabled {
            if disabled_names.contains(&de.name.as_str()) {
                continue;
            }
            // The last custom entry of that name wins, as with a Go map keyed by name.
            match custom.enabled.iter().rposition(|c| c.name == de.name) {
                Some(i) => {
                    replaced[i] = true;
                    enabled.push(custom.enabled[i].clone());
                }
                None => enabled.push(de.clone()),
            }
        }
    }
    for (i, c) in custom.enabled.iter().enumerate() {
        if !replaced[i] {
            enabled.push(c.clone());
        }
    }
    PluginSet { enabled, disabled }
}

/// upstream `mergePlugins` applied to every extension point, over the default version's
/// default profile.
pub fn defaulted_plugins(custom: Option<&Plugins>) -> Plugins {
    defaulted_plugins_with(&Features::default(), custom)
}

/// upstream `mergePlugins` applied to every extension point, over the default profile of
/// `features`' version and gates.
pub fn defaulted_plugins_with(features: &Features, custom: Option<&Plugins>) -> Plugins {
    let d = default_plugins(features);
    let empty = Plugins::default();
    let c = custom.unwrap_or(&empty);
    Plugins {
        pre_enqueue: merge_plugin_set(&d.pre_enqueue, &c.pre_enqueue),
        queue_sort: merge_plugin_set(&d.queue_sort, &c.queue_sort),
        pre_filter: merge_plugin_set(&d.pre_filter, &c.pre_filter),
        filter: merge_plugin_set(&d.filter, &c.filter),
        post_filter: merge_plugin_set(&d.post_filter, &c.post_filter),
        pre_score: merge_plugin_set(&d.pre_score, &c.pre_score),
        score: merge_plugin_set(&d.score, &c.score),
        reserve: merge_plugin_set(&d.reserve, &c.reserve),
        permit: merge_plugin_set(&d.permit, &c.permit),
        pre_bind: merge_plugin_set(&d.pre_bind, &c.pre_bind),
        bind: merge_plugin_set(&d.bind, &c.bind),
        post_bind: merge_plugin_set(&d.post_bind, &c.post_bind),
        multi_point: merge_plugin_set(&d.multi_point, &c.multi_point),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ext {
    PreEnqueue,
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
    PostBind,
}

impl Ext {
    fn all() -> [Ext; 12] {
        use Ext::*;
        [
            PreEnqueue, QueueSort, PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Permit,
            PreBind, Bind, PostBind,
        ]
    }
    fn set(self, p: &Plugins) -> &PluginSet {
        match self {
            Ext::PreEnqueue => &p.pre_enqueue,
            Ext::QueueSort => &p.queue_sort,
            Ext::PreFilter => &p.pre_filter,
            Ext::Filter => &p.filter,
            Ext::PostFilter => &p.post_filter,
            Ext::PreScore => &p.pre_score,
            Ext::Score => &p.score,
            Ext::Reserve => &p.reserve,
            Ext::Permit => &p.permit,
            Ext::PreBind => &p.pre_bind,
            Ext::Bind => &p.bind,
            Ext::PostBind => &p.post_bind,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Ext::PreEnqueue => "PreEnqueuePlugin",
            Ext::QueueSort => "QueueSortPlugin",
            Ext::PreFilter => "PreFilterPlugin",
            Ext::Filter => "FilterPlugin",
            Ext::PostFilter => "PostFilterPlugin",
            Ext::PreScore => "PreScorePlugin",
            Ext::Score => "ScorePlugin",
            Ext::Reserve => "ReservePlugin",
            Ext::Permit => "PermitPlugin",
            Ext::PreBind => "PreBindPlugin",
            Ext::Bind => "BindPlugin",
            Ext::PostBind => "PostBindPlugin",
        }
    }
    fn implemented_by(self, p: &PluginRef) -> bool {
        match self {
            Ext::PreEnqueue => p.as_pre_enqueue().is_some(),
            Ext::QueueSort => p.as_queue_sort().is_some(),
            Ext::PreFilter => p.as_pre_filter().is_some(),
            Ext::Filter => p.as_filter().is_some(),
            Ext::PostFilter => p.as_post_filter().is_some(),
            Ext::PreScore => p.as_pre_score().is_some(),
            Ext::Score => p.as_score().is_some(),
            Ext::Reserve => p.as_reserve().is_some(),
            Ext::Permit => p.as_permit().is_some(),
            Ext::PreBind => p.as_pre_bind().is_some(),
            Ext::Bind => p.as_bind().is_some(),
            Ext::PostBind => p.as_post_bind().is_some(),
        }
    }
}

/// Builds the framework of one profile: defaulting, plugin instantiation (once per plugin),
/// per-extension lists with upstream's MultiPoint expansion and ordering, and score weights.
pub fn build_framework(
    registry: &Registry,
    cfg: &KubeSchedulerConfiguration,
    profile: &Profile,
) -> Result<Framework, ProfileError> {
    let plugins = defaulted_plugins_with(&registry.features, profile.plugins.as_ref());

    // Instantiate every plugin named anywhere, in first-seen order.
    let mut instances: Vec<PluginRef> = Vec::new();
    let mut names_needed: Vec<&str> = Vec::new();
    for set in Ext::all()
        .iter()
        .map(|e| e.set(&plugins))
        .chain(std::iter::once(&plugins.multi_point))
    {
        for p in &set.enabled {
            if !names_needed.contains(&p.name.as_str()) {
                names_needed.push(&p.name);
            }
        }
    }
    for name in &names_needed {
        let f = registry.get(name).ok_or_else(|| {
            ProfileError::UnknownPlugin(
                name.to_string(),
                registry.names().collect::<Vec<_>>().join(", "),
            )
        })?;
        let fa = FactoryArgs {
            args: profile.args_of(name),
            profile,
            features: &registry.features,
        };
        let inst = f(&fa).map_err(|message| ProfileError::BadArgs {
            plugin: name.to_string(),
            message,
        })?;
        instances.push(inst);
    }
    let get = |name: &str| -> PluginRef {
        instances
            .iter()
            .find(|p| p.name() == name)
            .cloned()
            .expect("instantiated above")
    };

    let mut fw = Framework {
        profile_name: profile.name().to_string(),
        percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
        ..Default::default()
    };
    let mut weights: BTreeMap<String, i64> = BTreeMap::new();
    for ext in Ext::all() {
        let set = ext.set(&plugins);
        // Plugins enabled at this specific extension point.
        let mut enabled: Vec<String> = Vec::new();
        for p in &set.enabled {
            let inst = get(&p.name);
            if !ext.implemented_by(&inst) {
                return Err(ProfileError::Invalid(
                    profile.name().into(),
                    format!("plugin {:?} does not extend {}", p.name, ext.name()),
                ));
            }
            if enabled.contains(&p.name) {
                return Err(ProfileError::Duplicate(p.name.clone(), ext.name()));
            }
            enabled.push(p.name.clone());
            if ext == Ext::Score {
                weights.insert(
                    p.name.clone(),
                    p.weight.filter(|w| *w != 0).unwrap_or(1) as i64,
                );
            }
        }
        let disabled: Vec<&str> = set.disabled.iter().map(|d| d.name.as_str()).collect();
        let list: Vec<String> = if disabled.contains(&"*") {
            enabled
        } else {
            let mut multi: Vec<String> = Vec::new();
            let mut overrides: Vec<String> = Vec::new();
            for mp in &plugins.multi_point.enabled {
                let inst = get(&mp.name);
                if !ext.implemented_by(&inst) || disabled.contains(&mp.name.as_str()) {
                    continue;
                }
                if enabled.contains(&mp.name) {
                    overrides.push(mp.name.clone());
                    continue;
                }
                if multi.contains(&mp.name) {
                    return Err(ProfileError::Duplicate(mp.name.clone(), ext.name()));
                }
                multi.push(mp.name.clone());
                if ext == Ext::Score {
                    weights.insert(
                        mp.name.clone(),
                        mp.weight.filter(|w| *w != 0).unwrap_or(1) as i64,
                    );
                }
            }
            let mut out: Vec<String> = enabled
                .iter()
                .filter(|n| overrides.contains(n))
                .cloned()
                .collect();
            out.extend(multi);
            out.extend(enabled.iter().filter(|n| !overrides.contains(n)).cloned());
            out
        };
        let refs: Vec<PluginRef> = list.iter().map(|n| get(n)).collect();
        match ext {
            Ext::PreEnqueue => fw.pre_enqueue = refs,
            Ext::QueueSort => fw.queue_sort = refs,
            Ext::PreFilter => fw.pre_filter = refs,
            Ext::Filter => fw.filter = refs,
            Ext::PostFilter => fw.post_filter = refs,
            Ext::PreScore => fw.pre_score = refs,
            Ext::Score => {
                fw.score = refs
                    .into_iter()
                    .map(|plugin| WeightedScorePlugin {
                        weight: weights.get(plugin.name()).copied().unwrap_or(1),
                        plugin,
                    })
                    .collect()
            }
            Ext::Reserve => fw.reserve = refs,
            Ext::Permit => fw.permit = refs,
            Ext::PreBind => fw.pre_bind = refs,
            Ext::Bind => fw.bind = refs,
            Ext::PostBind => fw.post_bind = refs,
        }
    }
    if fw.queue_sort.len() != 1 {
        return Err(ProfileError::Invalid(
            profile.name().into(),
            format!(
                "exactly one queue sort plugin is required, found {}",
                fw.queue_sort.len()
            ),
        ));
    }
    if fw.bind.is_empty() {
        return Err(ProfileError::Invalid(
            profile.name().into(),
            "at least one bind plugin is required".into(),
        ));
    }
    fw.percentage_of_nodes_to_score = profile
        .percentage_of_nodes_to_score
        .or(cfg.percentage_of_nodes_to_score);
    fw.plugins = instances;
    Ok(fw)
}

/// Builds every profile of a configuration (one default profile when it has none).
pub fn build_frameworks(
    registry: &Registry,
    cfg: &KubeSchedulerConfiguration,
) -> Result<Vec<Arc<Framework>>, ProfileError> {
    cfg.validate()
        .map_err(|e| ProfileError::Invalid("configuration".into(), e))?;
    let default_profile = [Profile::default()];
    let profiles: &[Profile] = if cfg.profiles.is_empty() {
        &default_profile
    } else {
        &cfg.profiles
    };
    profiles
        .iter()
        .map(|p| build_framework(registry, cfg, p).map(Arc::new))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: KubernetesVersion) -> Vec<(&'static str, Option<i32>)> {
        default_multi_point(&Features::of(v))
    }

    #[test]
    fn default_profile_per_version() {
        let base: Vec<(&str, Option<i32>)> = vec![
            ("SchedulingGates", None),
            ("PrioritySort", None),
            ("NodeUnschedulable", None),
            ("NodeName", None),
            ("TaintToleration", Some(3)),
            ("NodeAffinity", Some(2)),
            ("NodePorts", None),
            ("NodeResourcesFit", Some(1)),
            ("VolumeRestrictions", None),
            ("NodeVolumeLimits", None),
            ("VolumeBinding", None),
            ("VolumeZone", None),
            ("PodTopologySpread", Some(2)),
            ("InterPodAffinity", Some(2)),
            ("DynamicResources", Some(2)),
            ("DefaultPreemption", None),
            ("NodeResourcesBalancedAllocation", Some(1)),
            ("ImageLocality", Some(1)),
            ("DefaultBinder", None),
        ];
        assert_eq!(names(KubernetesVersion::V1_35), base);
        let mut v136 = base.clone();
        v136.push(("NodeDeclaredFeatures", None));
        assert_eq!(names(KubernetesVersion::V1_36), v136);
        // The gate, not the version, adds it.
        let mut g = FeatureGates::new(KubernetesVersion::V1_35);
        g.set_from_str("NodeDeclaredFeatures=true").unwrap();
        assert_eq!(default_multi_point(&Features::from_gates(&g)), v136);
        let mut g = FeatureGates::new(KubernetesVersion::V1_36);
        g.set_from_str("NodeDeclaredFeatures=false").unwrap();
        assert_eq!(default_multi_point(&Features::from_gates(&g)), base);
    }

    #[test]
    fn the_framework_filters_with_node_declared_features_last_in_v136() {
        let cfg = KubeSchedulerConfiguration::default();
        let filters = |v| -> Vec<&'static str> {
            let fws = build_frameworks(&Registry::in_tree_for(v), &cfg).unwrap();
            fws[0].filter.iter().map(|p| p.name()).collect()
        };
        let (a, b) = (
            filters(KubernetesVersion::V1_35),
            filters(KubernetesVersion::V1_36),
        );
        assert!(!a.contains(&"NodeDeclaredFeatures"), "{a:?}");
        assert_eq!(b.last().copied(), Some("NodeDeclaredFeatures"), "{b:?}");
        assert_eq!(a[..], b[..b.len() - 1]);
    }
}
