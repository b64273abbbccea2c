//! upstream's `ValidateKubeSchedulerConfiguration` (pkg/scheduler/apis/config/validation) and
//! the args validation of every in-tree plugin (validation_pluginargs.go), on the defaulted
//! configuration, with upstream's field paths and messages.
//!
//! Differences, each deliberate: a duplicate `schedulerName` prints the name (upstream prints
//! `{}`); RequestedToCapacityRatio shape errors name the real path
//! (`scoringStrategy.requestedToCapacityRatio.shape[1]`, upstream `scoringStrategy.shape[1]`);
//! `leaderElection` and `clientConnection` are accepted and not checked (ksim has neither);
//! an extender's `urlPrefix` must be `http://` or `https://`.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{
    DefaultPreemptionArgs, InterPodAffinityArgs, KubeSchedulerConfiguration, NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs, PluginSet, PodTopologySpreadArgs,
    Profile, ResourceSpec, UtilizationShapePoint, VolumeBindingArgs, API_VERSION,
};
use crate::core::{NodeSelectorRequirement, NodeSelectorTerm};
use crate::validation::{
    is_qualified_name, is_valid_label_value, quote, validate_label_name, FieldError, FieldErrors,
};

/// Plugins removed from v1 (`invalidPluginsByVersion`).
const INVALID_PLUGINS: [&str; 4] = [
    "AzureDiskLimits",
    "CinderLimits",
    "EBSLimits",
    "GCEPDLimits",
];

/// `config.MaxCustomPriorityScore`.
const MAX_CUSTOM_PRIORITY_SCORE: i32 = 10;

pub(crate) fn validate(cfg: &KubeSchedulerConfiguration) -> FieldErrors {
    let mut errs = FieldErrors::default();
    if !cfg.api_version.is_empty() && cfg.api_version != API_VERSION {
        errs.push(FieldError::not_supported(
            "apiVersion",
            &cfg.api_version,
            &[API_VERSION],
        ));
    }
    if !cfg.kind.is_empty() && cfg.kind != "KubeSchedulerConfiguration" {
        errs.push(FieldError::not_supported(
            "kind",
            &cfg.kind,
            &["KubeSchedulerConfiguration"],
        ));
    }
    if let Some(p) = cfg.parallelism {
        if p <= 0 {
            errs.push(FieldError::invalid(
                "parallelism",
                p,
                "should be an integer value greater than zero",
            ));
        }
    }
    let multi = cfg.profiles.len() > 1;
    let mut names: Vec<(String, usize)> = Vec::new();
    for (i, prof) in cfg.profiles.iter().enumerate() {
        let path = format!("profiles[{i}]");
        // A single profile's name defaults to default-scheduler; with several, each needs one.
        let name = if multi {
            prof.scheduler_name.clone()
        } else {
            prof.name().to_string()
        };
        if name.is_empty() {
            errs.push(FieldError::required(format!("{path}.schedulerName"), ""));
        }
        percentage(
            &mut errs,
            &format!("{path}.percentageOfNodesToScore"),
            prof.percentage_of_nodes_to_score,
        );
        validate_plugin_config(&mut errs, &path, prof);
        if names.iter().any(|(n, _)| *n == name) {
            errs.push(FieldError::duplicate(
                format!("{path}.schedulerName"),
                &name,
            ));
        }
        names.push((name, i));
    }
    if !cfg.profiles.is_empty() {
        validate_common_queue_sort(&mut errs, &cfg.profiles);
    }
    percentage(
        &mut errs,
        "percentageOfNodesToScore",
        cfg.percentage_of_nodes_to_score,
    );
    let initial = cfg.initial_backoff_seconds();
    if initial <= 0 {
        errs.push(FieldError::invalid(
            "podInitialBackoffSeconds",
            initial,
            "must be greater than 0",
        ));
    }
    if cfg.max_backoff_seconds() < initial {
        errs.push(FieldError::invalid(
            "podMaxBackoffSeconds",
            cfg.max_backoff_seconds(),
            "must be greater than or equal to PodInitialBackoffSeconds",
        ));
    }
    super::extender::validate_extenders(&mut errs, &cfg.extenders);
    errs
}

fn percentage(errs: &mut FieldErrors, path: &str, v: Option<i32>) {
    if let Some(p) = v {
        if !(0..=100).contains(&p) {
            errs.push(FieldError::invalid(path, p, "not in valid range [0-100]"));
        }
    }
}

fn invalid_plugin(errs: &mut FieldErrors, path: String, name: &str) {
    if INVALID_PLUGINS.contains(&name) {
        errs.push(FieldError::invalid(
            path,
            quote(name),
            &format!(
                "was invalid in version \"{API_VERSION}\" (KubeSchedulerConfiguration is version \"{API_VERSION}\")"
            ),
        ));
    }
}

fn validate_plugin_config(errs: &mut FieldErrors, path: &str, prof: &Profile) {
    if let Some(p) = &prof.plugins {
        let stages: [(&str, &PluginSet); 12] = [
            ("preEnqueue", &p.pre_enqueue),
            ("queueSort", &p.queue_sort),
            ("preFilter", &p.pre_filter),
            ("filter", &p.filter),
            ("postFilter", &p.post_filter),
            ("preScore", &p.pre_score),
            ("score", &p.score),
            ("reserve", &p.reserve),
            ("permit", &p.permit),
            ("preBind", &p.pre_bind),
            ("bind", &p.bind),
            ("postBind", &p.post_bind),
        ];
        for (stage, set) in stages {
            for (k, pl) in set.enabled.iter().enumerate() {
                invalid_plugin(
                    errs,
                    format!("{path}.plugins.{stage}.enabled[{k}]"),
                    &pl.name,
                );
            }
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for (j, pc) in prof.plugin_config.iter().enumerate() {
        let pc_path = format!("{path}.pluginConfig[{j}]");
        if seen.contains(&pc.name.as_str()) {
            errs.push(FieldError::duplicate(&pc_path, &pc.name));
        } else {
            seen.push(&pc.name);
        }
        if INVALID_PLUGINS.contains(&pc.name.as_str()) {
            invalid_plugin(errs, pc_path, &pc.name);
            continue;
        }
        let args_path = format!("{pc_path}.args");
        if super::strict::args_shape(&pc.name).is_none() {
            continue; // out-of-tree, or an in-tree plugin without args: not decoded upstream
        }
        if let Some(kind) = pc.args.get("kind").and_then(Value::as_str) {
            let want = format!("{}Args", pc.name);
            if kind != want {
                errs.push(FieldError::invalid(
                    format!("{args_path}.kind"),
                    quote(kind),
                    &format!("args for plugin {} must be of kind {want}", pc.name),
                ));
                continue;
            }
        }
        if let Some(v) = pc.args.get("apiVersion").and_then(Value::as_str) {
            if v != API_VERSION {
                errs.push(FieldError::not_supported(
                    format!("{args_path}.apiVersion"),
                    v,
                    &[API_VERSION],
                ));
                continue;
            }
        }
        let res = match pc.name.as_str() {
            "DefaultPreemption" => typed(&pc.args).map(|a| default_preemption(&a)),
            "InterPodAffinity" => typed(&pc.args).map(|a| inter_pod_affinity(&a)),
            "NodeAffinity" => typed(&pc.args).map(|a| node_affinity(&a)),
            "NodeResourcesBalancedAllocation" => typed(&pc.args).map(|a| balanced(&a)),
            "NodeResourcesFit" => typed(&pc.args).map(|a| fit(&a)),
            "PodTopologySpread" => typed(&pc.args).map(|a| topology_spread(&a)),
            "VolumeBinding" => typed(&pc.args).map(|a| volume_binding(&a)),
            _ => Ok(FieldErrors::default()),
        };
        match res {
            Ok(e) => errs.0.extend(e.prefixed(&args_path).0),
            Err(e) => errs.push(e.prefixed(&args_path)),
        }
    }
}

/// Decodes typed args (absent or null args are the defaults), a decoding error at its path.
fn typed<T: DeserializeOwned + Default>(v: &Value) -> Result<T, FieldError> {
    if v.is_null() {
        return Ok(T::default());
    }
    serde_path_to_error::deserialize(&crate::nulls::without_nulls(v)).map_err(|e| {
        let p = e.path().to_string();
        FieldError::new(
            if p == "." { String::new() } else { p },
            e.inner().to_string(),
        )
    })
}

fn validate_common_queue_sort(errs: &mut FieldErrors, profiles: &[Profile]) {
    let empty = PluginSet::default();
    // v1's default plugins are all MultiPoint, so the defaulted queueSort set is the user's,
    // with the weights of disabled plugins dropped.
    let set_of = |p: &Profile| -> PluginSet {
        let mut s = p
            .plugins
            .as_ref()
            .map(|x| x.queue_sort.clone())
            .unwrap_or_else(|| empty.clone());
        for d in &mut s.disabled {
            d.weight = None;
        }
        s
    };
    let canon = set_of(&profiles[0]);
    if canon.enabled.len() > 1 {
        errs.push(FieldError::invalid(
            "profiles[0].plugins.queueSort.Enabled",
            canon.enabled.len(),
            "only one queue sort plugin can be enabled",
        ));
    }
    let qs_name = canon.enabled.first().map(|p| p.name.as_str());
    let qs_args = qs_name.and_then(|n| profiles[0].args_of(n));
    for (i, p) in profiles.iter().enumerate().skip(1) {
        let cur = set_of(p);
        if cur != canon {
            errs.push(FieldError::invalid(
                format!("profiles[{i}].plugins.queueSort"),
                serde_json::to_string(&cur).unwrap_or_default(),
                "must be the same for all profiles",
            ));
        }
        if let Some(n) = qs_name {
            for c in p.plugin_config.iter().filter(|c| c.name == n) {
                if Some(&c.args) != qs_args {
                    errs.push(FieldError::invalid(
                        format!("profiles[{i}].pluginConfig.args"),
                        serde_json::to_string(&c.args).unwrap_or_default(),
                        "queueSort must be the same for all profiles",
                    ));
                }
            }
        }
    }
}

fn default_preemption(a: &DefaultPreemptionArgs) -> FieldErrors {
    let mut errs = FieldErrors::default();
    let (pct, abs) = (
        a.min_candidate_nodes_percentage,
        a.min_candidate_nodes_absolute,
    );
    if !(0..=100).contains(&pct) {
        errs.push(FieldError::invalid(
            "minCandidateNodesPercentage",
            pct,
            "not in valid range [0, 100]",
        ));
    }
    if abs < 0 {
        errs.push(FieldError::invalid(
            "minCandidateNodesAbsolute",
            abs,
            "not in valid range [0, inf)",
        ));
    }
    if pct == 0 && abs == 0 {
        errs.push(FieldError::invalid(
            "minCandidateNodesPercentage",
            pct,
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ));
        errs.push(FieldError::invalid(
            "minCandidateNodesAbsolute",
            abs,
            "cannot be zero at the same time as minCandidateNodesPercentage",
        ));
    }
    errs
}

fn inter_pod_affinity(a: &InterPodAffinityArgs) -> FieldErrors {
    let mut errs = FieldErrors::default();
    let w = a.hard_pod_affinity_weight;
    if !(0..=100).contains(&w) {
        errs.push(FieldError::invalid(
            "hardPodAffinityWeight",
            w,
            "not in valid range [0, 100]",
        ));
    }
    errs
}

fn topology_spread(a: &PodTopologySpreadArgs) -> FieldErrors {
    let mut errs = FieldErrors::default();
    match a.defaulting_type.as_str() {
        // An empty type is defaulted to System.
        "" | "System" if !a.default_constraints.is_empty() => errs.push(FieldError::invalid(
            "defaultingType",
            quote("System"),
            "when .defaultConstraints are not empty",
        )),
        "" | "System" | "List" => {}
        other => errs.push(FieldError::not_supported(
            "defaultingType",
            other,
            &["System", "List"],
        )),
    }
    for (i, c) in a.default_constraints.iter().enumerate() {
        let p = format!("defaultConstraints[{i}]");
        if c.max_skew <= 0 {
            errs.push(FieldError::invalid(
                format!("{p}.maxSkew"),
                c.max_skew,
                "not in valid range (0, inf)",
            ));
        }
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(
                format!("{p}.topologyKey"),
                "can not be empty",
            ));
        } else {
            errs.0.extend(validate_label_name(
                &c.topology_key,
                &format!("{p}.topologyKey"),
            ));
        }
        match c.when_unsatisfiable.as_str() {
            "" => errs.push(FieldError::required(
                format!("{p}.whenUnsatisfiable"),
                "can not be empty",
            )),
            "DoNotSchedule" | "ScheduleAnyway" => {}
            other => errs.push(FieldError::not_supported(
                format!("{p}.whenUnsatisfiable"),
                other,
                &["DoNotSchedule", "ScheduleAnyway"],
            )),
        }
        if c.label_selector.is_some() {
            errs.push(FieldError::forbidden(
                format!("{p}.labelSelector"),
                "constraint must not define a selector, as they deduced for each pod",
            ));
        }
        if a.default_constraints[..i].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                &p,
                &format!("{{{}, {}}}", c.topology_key, c.when_unsatisfiable),
            ));
        }
    }
    errs
}

fn function_shape(errs: &mut FieldErrors, shape: &[UtilizationShapePoint], path: &str) {
    if shape.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one point must be specified",
        ));
        return;
    }
    for i in 1..shape.len() {
        if shape[i - 1].utilization >= shape[i].utilization {
            errs.push(FieldError::invalid(
                format!("{path}[{i}].utilization"),
                shape[i].utilization,
                "values must be sorted in increasing order",
            ));
            break;
        }
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            errs.push(FieldError::invalid(
                format!("{path}[{i}].utilization"),
                p.utilization,
                "not in valid range [0, 100]",
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&p.score) {
            errs.push(FieldError::invalid(
                format!("{path}[{i}].score"),
                p.score,
                &format!("not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"),
            ));
        }
    }
}

/// A resource weight after defaulting (0 becomes 1).
fn weight(r: &ResourceSpec) -> i64 {
    if r.weight == 0 {
        1
    } else {
        r.weight
    }
}

fn balanced(a: &NodeResourcesBalancedAllocationArgs) -> FieldErrors {
    let mut errs = FieldErrors::default();
    let mut seen: Vec<&str> = Vec::new();
    for (i, r) in a.resources.iter().enumerate() {
        if seen.contains(&r.name.as_str()) {
            errs.push(FieldError::duplicate(
                format!("resources[{i}].name"),
                &r.name,
            ));
        } else {
            seen.push(&r.name);
        }
        if weight(r) != 1 {
            errs.push(FieldError::invalid(
                format!("resources[{i}].weight"),
                r.weight,
                "must be 1",
            ));
        }
    }
    errs
}

fn fit(a: &NodeResourcesFitArgs) -> FieldErrors {
    let mut errs = FieldErrors::default();
    for (i, r) in a.ignored_resources.iter().enumerate() {
        errs.0
            .extend(validate_label_name(r, &format!("ignoredResources[{i}]")));
    }
    for (i, g) in a.ignored_resource_groups.iter().enumerate() {
        let p = format!("ignoredResourceGroups[{i}]");
        if g.contains('/') {
            errs.push(FieldError::invalid(
                &p,
                quote(g),
                "resource group name can't contain '/'",
            ));
        }
        errs.0.extend(validate_label_name(g, &p));
    }
    let s = &a.scoring_strategy;
    if ![
        "LeastAllocated",
        "MostAllocated",
        "RequestedToCapacityRatio",
    ]
    .contains(&s.type_.as_str())
    {
        errs.push(FieldError::not_supported(
            "scoringStrategy.type",
            &s.type_,
            &[
                "LeastAllocated",
                "MostAllocated",
                "RequestedToCapacityRatio",
            ],
        ));
    }
    for (i, r) in s.resources.iter().enumerate() {
        let w = weight(r);
        if !(1..=100).contains(&w) {
            errs.push(FieldError::invalid(
                format!("scoringStrategy.resources[{i}].weight"),
                w,
                &format!("resource weight of {} not in valid range (0, 100]", r.name),
            ));
        }
    }
    if let Some(r) = &s.requested_to_capacity_ratio {
        function_shape(
            &mut errs,
            &r.shape,
            "scoringStrategy.requestedToCapacityRatio.shape",
        );
    }
    errs
}

fn volume_binding(a: &VolumeBindingArgs) -> FieldErrors {
    let mut errs = FieldErrors::default();
    if a.bind_timeout_seconds < 0 {
        errs.push(FieldError::invalid(
            "bindTimeoutSeconds",
            a.bind_timeout_seconds,
            "invalid BindTimeoutSeconds, should not be a negative value",
        ));
    }
    // The StorageCapacityScoring feature gate is alpha (off) in v1.35.
    if let Some(shape) = &a.shape {
        errs.push(FieldError::invalid(
            "shape",
            serde_json::to_string(shape).unwrap_or_default(),
            "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
        ));
    }
    errs
}

fn node_affinity(a: &NodeAffinityArgs) -> FieldErrors {
    let mut errs = FieldErrors::default();
    let Some(aff) = &a.added_affinity else {
        return errs;
    };
    if let Some(ns) = &aff.required {
        let p = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
        for (i, t) in ns.node_selector_terms.iter().enumerate() {
            node_selector_term(&mut errs, t, &format!("{p}[{i}]"));
        }
    }
    let p = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution";
    for (i, t) in aff.preferred.iter().enumerate() {
        if t.weight == 0 {
            continue;
        }
        node_selector_term(&mut errs, &t.preference, &format!("{p}[{i}]"));
    }
    errs
}

/// `newNodeSelectorTerm`: label requirements and field requirements.
fn node_selector_term(errs: &mut FieldErrors, t: &NodeSelectorTerm, path: &str) {
    for (i, e) in t.match_expressions.iter().enumerate() {
        label_requirement(errs, e, &format!("{path}.matchExpressions[{i}]"));
    }
    for (i, e) in t.match_fields.iter().enumerate() {
        let p = format!("{path}.matchFields[{i}]");
        match e.operator.as_str() {
            "In" | "NotIn" => {
                if e.values.len() != 1 {
                    errs.push(FieldError::invalid(
                        format!("{p}.values"),
                        serde_json::to_string(&e.values).unwrap_or_default(),
                        "must have one element",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                format!("{p}.operator"),
                other,
                &["In", "NotIn"],
            )),
        }
    }
}

/// `nodeSelectorRequirementsAsSelector` + `labels.NewRequirement`.
fn label_requirement(errs: &mut FieldErrors, e: &NodeSelectorRequirement, p: &str) {
    let values = || serde_json::to_string(&e.values).unwrap_or_default();
    match e.operator.as_str() {
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        other => {
            errs.push(FieldError::not_supported(
                format!("{p}.operator"),
                other,
                &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"],
            ));
            return;
        }
    }
    let key_errs = is_qualified_name(&e.key);
    if !key_errs.is_empty() {
        errs.push(FieldError::invalid(
            format!("{p}.key"),
            quote(&e.key),
            &key_errs.join("; "),
        ));
    }
    let vp = format!("{p}.values");
    match e.operator.as_str() {
        "In" | "NotIn" if e.values.is_empty() => errs.push(FieldError::invalid(
            &vp,
            values(),
            "for 'in', 'notin' operators, values set can't be empty",
        )),
        "Exists" | "DoesNotExist" if !e.values.is_empty() => errs.push(FieldError::invalid(
            &vp,
            values(),
            "values set must be empty for exists and does not exist",
        )),
        "Gt" | "Lt" => {
            if e.values.len() != 1 {
                errs.push(FieldError::invalid(
                    &vp,
                    values(),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                ));
            }
            for (i, v) in e.values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(FieldError::invalid(
                        format!("{vp}[{i}]"),
                        quote(v),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, v) in e.values.iter().enumerate() {
        let m = is_valid_label_value(v);
        if !m.is_empty() {
            errs.push(FieldError::invalid(
                format!("{vp}[{i}][{}]", e.key),
                quote(v),
                &m.join("; "),
            ));
        }
    }
}
