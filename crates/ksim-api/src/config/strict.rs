//! Strict decoding: the field names of `kubescheduler.config.k8s.io/v1` as kube-scheduler's
//! strict decoder knows them (every field of the v1 types, including the ones ksim does not
//! act on such as `leaderElection` or `clientConnection`), and a walk over a document that
//! reports each field it does not know, with its path.
//!
//! The args of in-tree plugins with an args type are checked against that type; the args of
//! other plugins (out-of-tree ones, or in-tree plugins without args) are not, as upstream
//! leaves them undecoded.

use serde_json::Value;

use crate::validation::{quote, FieldError};

/// The shape of a value: which fields an object may have.
pub(crate) enum Shape {
    /// Anything (scalars; values whose type serde checks).
    Any,
    /// An object with these fields.
    Obj(&'static [(&'static str, &'static Shape)]),
    /// A list of values of one shape.
    List(&'static Shape),
    /// A map from names to values of one shape.
    Map(&'static Shape),
}

use Shape::{Any, List, Map, Obj};

static PLUGIN: Shape = Obj(&[("name", &Any), ("weight", &Any)]);
static PLUGIN_SET: Shape = Obj(&[("enabled", &List(&PLUGIN)), ("disabled", &List(&PLUGIN))]);
static PLUGINS: Shape = Obj(&[
    ("preEnqueue", &PLUGIN_SET),
    ("queueSort", &PLUGIN_SET),
    ("preFilter", &PLUGIN_SET),
    ("filter", &PLUGIN_SET),
    ("postFilter", &PLUGIN_SET),
    ("preScore", &PLUGIN_SET),
    ("score", &PLUGIN_SET),
    ("reserve", &PLUGIN_SET),
    ("permit", &PLUGIN_SET),
    ("preBind", &PLUGIN_SET),
    ("bind", &PLUGIN_SET),
    ("postBind", &PLUGIN_SET),
    ("multiPoint", &PLUGIN_SET),
]);
/// `args` is checked per plugin name by [`unknown_fields`].
static PLUGIN_CONFIG: Shape = Obj(&[("name", &Any), ("args", &Any)]);
static PROFILE: Shape = Obj(&[
    ("schedulerName", &Any),
    ("percentageOfNodesToScore", &Any),
    ("plugins", &PLUGINS),
    ("pluginConfig", &List(&PLUGIN_CONFIG)),
]);
static LEADER_ELECTION: Shape = Obj(&[
    ("leaderElect", &Any),
    ("leaseDuration", &Any),
    ("renewDeadline", &Any),
    ("retryPeriod", &Any),
    ("resourceLock", &Any),
    ("resourceName", &Any),
    ("resourceNamespace", &Any),
]);
static CLIENT_CONNECTION: Shape = Obj(&[
    ("kubeconfig", &Any),
    ("acceptContentTypes", &Any),
    ("contentType", &Any),
    ("qps", &Any),
    ("burst", &Any),
]);
static EXTENDER_TLS: Shape = Obj(&[
    ("insecure", &Any),
    ("serverName", &Any),
    ("certFile", &Any),
    ("keyFile", &Any),
    ("caFile", &Any),
    ("certData", &Any),
    ("keyData", &Any),
    ("caData", &Any),
]);
static EXTENDER: Shape = Obj(&[
    ("urlPrefix", &Any),
    ("filterVerb", &Any),
    ("preemptVerb", &Any),
    ("prioritizeVerb", &Any),
    ("weight", &Any),
    ("bindVerb", &Any),
    ("enableHTTPS", &Any),
    ("tlsConfig", &EXTENDER_TLS),
    ("httpTimeout", &Any),
    ("nodeCacheCapable", &Any),
    (
        "managedResources",
        &List(&Obj(&[("name", &Any), ("ignoredByScheduler", &Any)])),
    ),
    ("ignorable", &Any),
]);
pub(crate) static CONFIGURATION: Shape = Obj(&[
    ("apiVersion", &Any),
    ("kind", &Any),
    ("parallelism", &Any),
    ("leaderElection", &LEADER_ELECTION),
    ("clientConnection", &CLIENT_CONNECTION),
    ("enableProfiling", &Any),
    ("enableContentionProfiling", &Any),
    ("percentageOfNodesToScore", &Any),
    ("podInitialBackoffSeconds", &Any),
    ("podMaxBackoffSeconds", &Any),
    ("profiles", &List(&PROFILE)),
    ("extenders", &List(&EXTENDER)),
    ("delayCacheUntilActive", &Any),
]);

// core/v1 and meta/v1 types that plugin args embed.
static LABEL_SELECTOR_REQUIREMENT: Shape =
    Obj(&[("key", &Any), ("operator", &Any), ("values", &Any)]);
static LABEL_SELECTOR: Shape = Obj(&[
    ("matchLabels", &Map(&Any)),
    ("matchExpressions", &List(&LABEL_SELECTOR_REQUIREMENT)),
]);
static TOPOLOGY_SPREAD_CONSTRAINT: Shape = Obj(&[
    ("maxSkew", &Any),
    ("topologyKey", &Any),
    ("whenUnsatisfiable", &Any),
    ("labelSelector", &LABEL_SELECTOR),
    ("minDomains", &Any),
    ("nodeAffinityPolicy", &Any),
    ("nodeTaintsPolicy", &Any),
    ("matchLabelKeys", &Any),
]);
static NODE_SELECTOR_TERM: Shape = Obj(&[
    ("matchExpressions", &List(&LABEL_SELECTOR_REQUIREMENT)),
    ("matchFields", &List(&LABEL_SELECTOR_REQUIREMENT)),
]);
static NODE_AFFINITY: Shape = Obj(&[
    (
        "requiredDuringSchedulingIgnoredDuringExecution",
        &Obj(&[("nodeSelectorTerms", &List(&NODE_SELECTOR_TERM))]),
    ),
    (
        "preferredDuringSchedulingIgnoredDuringExecution",
        &List(&Obj(&[
            ("weight", &Any),
            ("preference", &NODE_SELECTOR_TERM),
        ])),
    ),
]);

// Plugin args (k8s.io/kube-scheduler/config/v1 types_pluginargs.go), with their TypeMeta.
static RESOURCE_SPEC: Shape = Obj(&[("name", &Any), ("weight", &Any)]);
static SHAPE_POINT: Shape = Obj(&[("utilization", &Any), ("score", &Any)]);
static DEFAULT_PREEMPTION_ARGS: Shape = Obj(&[
    ("apiVersion", &Any),
    ("kind", &Any),
    ("minCandidateNodesPercentage", &Any),
    ("minCandidateNodesAbsolute", &Any),
]);
static INTER_POD_AFFINITY_ARGS: Shape = Obj(&[
    ("apiVersion", &Any),
    ("kind", &Any),
    ("hardPodAffinityWeight", &Any),
    ("ignorePreferredTermsOfExistingPods", &Any),
]);
static NODE_RESOURCES_FIT_ARGS: Shape = Obj(&[
    ("apiVersion", &Any),
    ("kind", &Any),
    ("ignoredResources", &Any),
    ("ignoredResourceGroups", &Any),
    (
        "scoringStrategy",
        &Obj(&[
            ("type", &Any),
            ("resources", &List(&RESOURCE_SPEC)),
            (
                "requestedToCapacityRatio",
                &Obj(&[("shape", &List(&SHAPE_POINT))]),
            ),
        ]),
    ),
]);
static POD_TOPOLOGY_SPREAD_ARGS: Shape = Obj(&[
    ("apiVersion", &Any),
    ("kind", &Any),
    ("defaultConstraints", &List(&TOPOLOGY_SPREAD_CONSTRAINT)),
    ("defaultingType", &Any),
]);
static NODE_RESOURCES_BALANCED_ALLOCATION_ARGS: Shape = Obj(&[
    ("apiVersion", &Any),
    ("kind", &Any),
    ("resources", &List(&RESOURCE_SPEC)),
]);
static VOLUME_BINDING_ARGS: Shape = Obj(&[
    ("apiVersion", &Any),
    ("kind", &Any),
    ("bindTimeoutSeconds", &Any),
    ("shape", &List(&SHAPE_POINT)),
]);
static NODE_AFFINITY_ARGS: Shape = Obj(&[
    ("apiVersion", &Any),
    ("kind", &Any),
    ("addedAffinity", &NODE_AFFINITY),
]);
static DYNAMIC_RESOURCES_ARGS: Shape = Obj(&[
    ("apiVersion", &Any),
    ("kind", &Any),
    ("filterTimeout", &Any),
    ("bindingTimeout", &Any),
]);

/// The args shape of an in-tree plugin that has an args type.
pub(crate) fn args_shape(plugin: &str) -> Option<&'static Shape> {
    Some(match plugin {
        "DefaultPreemption" => &DEFAULT_PREEMPTION_ARGS,
        "InterPodAffinity" => &INTER_POD_AFFINITY_ARGS,
        "NodeResourcesFit" => &NODE_RESOURCES_FIT_ARGS,
        "PodTopologySpread" => &POD_TOPOLOGY_SPREAD_ARGS,
        "NodeResourcesBalancedAllocation" => &NODE_RESOURCES_BALANCED_ALLOCATION_ARGS,
        "VolumeBinding" => &VOLUME_BINDING_ARGS,
        "NodeAffinity" => &NODE_AFFINITY_ARGS,
        "DynamicResources" => &DYNAMIC_RESOURCES_ARGS,
        _ => return None,
    })
}

/// Every field of `v` (a KubeSchedulerConfiguration document) the strict decoder would refuse,
/// in document order, as `path: unknown field` (with a suggestion for a near miss).
pub fn unknown_fields(v: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    walk(v, &CONFIGURATION, "", &mut out);
    // Plugin args, by plugin name.
    if let Some(Value::Array(profiles)) = v.get("profiles") {
        for (i, p) in profiles.iter().enumerate() {
            let Some(Value::Array(cfgs)) = p.get("pluginConfig") else {
                continue;
            };
            for (j, c) in cfgs.iter().enumerate() {
                let Some(name) = c.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let (Some(shape), Some(args)) = (args_shape(name), c.get("args")) else {
                    continue;
                };
                walk(
                    args,
                    shape,
                    &format!("profiles[{i}].pluginConfig[{j}].args"),
                    &mut out,
                );
            }
        }
    }
    out
}

fn walk(v: &Value, shape: &Shape, path: &str, out: &mut Vec<FieldError>) {
    match (shape, v) {
        (Obj(fields), Value::Object(m)) => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match fields.iter().find(|(n, _)| n == k) {
                    Some((_, s)) => walk(x, s, &p, out),
                    None => out.push(unknown(p, k, fields)),
                }
            }
        }
        (List(s), Value::Array(items)) => {
            for (i, x) in items.iter().enumerate() {
                walk(x, s, &format!("{path}[{i}]"), out);
            }
        }
        (Map(s), Value::Object(m)) => {
            for (k, x) in m {
                walk(x, s, &format!("{path}[{k}]"), out);
            }
        }
        // Scalars, nulls and wrong types: serde reports type errors.
        _ => {}
    }
}

fn unknown(path: String, key: &str, fields: &[(&str, &Shape)]) -> FieldError {
    let near = did_you_mean(key, fields.iter().map(|(n, _)| *n));
    match near {
        Some(n) => FieldError::new(path, format!("unknown field (did you mean {}?)", quote(n))),
        None => FieldError::new(path, "unknown field"),
    }
}

/// The known name nearest to a mistyped `key`: equal but for case, or at most two edits away
/// (the nearest first, the first listed among equals); `None` when none is that near.
pub fn did_you_mean<'a>(key: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .filter(|n| n.eq_ignore_ascii_case(key) || edit_distance(n, key) <= 2)
        .min_by_key(|n| edit_distance(n, key))
}

/// Levenshtein distance (case-sensitive).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("scoringStrategy", "scoringStratgy"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("profiles", "profile"), 1);
    }
}
