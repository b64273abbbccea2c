//! DRAPartitionableDevices' fields of a `ResourceSlice` (`resource.k8s.io/v1`): a slice's
//! `sharedCounters` ([`CounterSet`]), a device's `consumesCounters`
//! ([`DeviceCounterConsumption`]) and per-device node selection (`perDeviceNodeSelection` on
//! the slice, `nodeName` / `nodeSelector` / `allNodes` on its devices), with the API server's
//! content checks of them ([`validate_partitionable`], upstream
//! `pkg/apis/resource/validation` `validateResourceSliceSpec`, `validateCounterSet`,
//! `validateDevice`, `validateDeviceCounterConsumption`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{is_dns1123_label, ResourceSliceSpec};
use crate::quantity::Quantity;
use crate::validation::{is_dns1123_subdomain, quote, FieldError, FieldErrors};

/// `ResourceSliceMaxCounterSets`: counter sets per slice.
pub const MAX_COUNTER_SETS: usize = 8;
/// `ResourceSliceMaxCountersPerCounterSet`.
pub const MAX_COUNTERS_PER_COUNTER_SET: usize = 32;
/// `ResourceSliceMaxDeviceCounterConsumptionsPerDevice`.
pub const MAX_COUNTER_CONSUMPTIONS_PER_DEVICE: usize = 2;
/// `ResourceSliceMaxCountersPerDeviceCounterConsumption`.
pub const MAX_COUNTERS_PER_CONSUMPTION: usize = 32;
/// `ResourceSliceMaxDevicesWithTaintsOrConsumesCounters`.
pub const MAX_DEVICES_WITH_COUNTERS: usize = 64;

/// `CounterSet`: named counters a pool's devices draw from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CounterSet {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub counters: BTreeMap<String, Counter>,
}

/// `Counter`: one amount (`value` is required).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Counter {
    pub value: Quantity,
}

/// `DeviceCounterConsumption`: what a device takes from one counter set of its pool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceCounterConsumption {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub counter_set: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub counters: BTreeMap<String, Counter>,
}

/// `validateCounterName`: a DNS label.
fn validate_counter_name(errs: &mut FieldErrors, field: &str, name: &str) {
    if !is_dns1123_label(name) {
        errs.push(FieldError::invalid(
            field,
            quote(name),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ));
    }
}

fn too_many(errs: &mut FieldErrors, field: &str, n: usize, max: usize) {
    errs.push(FieldError::new(
        field,
        format!("Too many: {n}: must have at most {max} items"),
    ));
}

/// `validateMap` of counters: at most `max`, each key a counter name.
fn validate_counters(
    errs: &mut FieldErrors,
    field: &str,
    counters: &BTreeMap<String, Counter>,
    max: usize,
) {
    if counters.is_empty() {
        errs.push(FieldError::required(field, ""));
        return;
    }
    if counters.len() > max {
        too_many(errs, field, counters.len(), max);
    }
    for k in counters.keys() {
        validate_counter_name(errs, &format!("{field}[{}]", quote(k)), k);
    }
}

/// A node name as `ValidateNodeName`: a DNS subdomain.
fn validate_node_name(errs: &mut FieldErrors, field: &str, name: &str) {
    for m in is_dns1123_subdomain(name) {
        errs.push(FieldError::invalid(field, quote(name), &m));
    }
}

/// The API server's checks of a slice's partitionable-device fields (upstream
/// `validateResourceSliceSpec`): `sharedCounters` and `devices` not both set; at most 64
/// devices when one consumes counters; at most 8 counter sets with unique DNS-label names,
/// each with 1–32 counters named as DNS labels; per device at most 2 `consumesCounters`
/// entries with unique, DNS-label `counterSet` names and 1–32 counters; with
/// `perDeviceNodeSelection: true` exactly one of a device's `nodeName` (non-empty node
/// name), `nodeSelector`, `allNodes: true`; without it none of them; `perDeviceNodeSelection`
/// set to false is refused.
pub fn validate_partitionable(spec: &ResourceSliceSpec, errs: &mut FieldErrors) {
    if spec.per_device_node_selection == Some(false) {
        errs.push(FieldError::invalid(
            "spec.perDeviceNodeSelection",
            false,
            "must be either unset or set to true",
        ));
    }
    if !spec.shared_counters.is_empty() && !spec.devices.is_empty() {
        errs.push(FieldError::invalid(
            "spec",
            "\"\"",
            "only one of `sharedCounters` or `devices` is allowed",
        ));
    }
    let consumes = spec.devices.iter().any(|d| !d.consumes_counters.is_empty());
    if consumes && spec.devices.len() > MAX_DEVICES_WITH_COUNTERS {
        too_many(
            errs,
            "spec.devices",
            spec.devices.len(),
            MAX_DEVICES_WITH_COUNTERS,
        );
    }
    if spec.shared_counters.len() > MAX_COUNTER_SETS {
        too_many(
            errs,
            "spec.sharedCounters",
            spec.shared_counters.len(),
            MAX_COUNTER_SETS,
        );
    }
    let mut names = BTreeSet::new();
    for (i, set) in spec.shared_counters.iter().enumerate() {
        let f = format!("spec.sharedCounters[{i}]");
        if set.name.is_empty() {
            errs.push(FieldError::required(format!("{f}.name"), ""));
        } else {
            validate_counter_name(errs, &format!("{f}.name"), &set.name);
            if !names.insert(set.name.as_str()) {
                errs.push(FieldError::duplicate(format!("{f}.name"), &set.name));
            }
        }
        validate_counters(
            errs,
            &format!("{f}.counters"),
            &set.counters,
            MAX_COUNTERS_PER_COUNTER_SET,
        );
    }
    let per_device = spec.per_device_node_selection == Some(true);
    for (i, d) in spec.devices.iter().enumerate() {
        let f = format!("spec.devices[{i}]");
        if d.consumes_counters.len() > MAX_COUNTER_CONSUMPTIONS_PER_DEVICE {
            too_many(
                errs,
                &format!("{f}.consumesCounters"),
                d.consumes_counters.len(),
                MAX_COUNTER_CONSUMPTIONS_PER_DEVICE,
            );
        }
        let mut sets = BTreeSet::new();
        for (j, c) in d.consumes_counters.iter().enumerate() {
            let cf = format!("{f}.consumesCounters[{j}]");
            if c.counter_set.is_empty() {
                errs.push(FieldError::required(format!("{cf}.counterSet"), ""));
            } else {
                validate_counter_name(errs, &format!("{cf}.counterSet"), &c.counter_set);
                if !sets.insert(c.counter_set.as_str()) {
                    errs.push(FieldError::duplicate(
                        format!("{cf}.counterSet"),
                        &c.counter_set,
                    ));
                }
            }
            validate_counters(
                errs,
                &format!("{cf}.counters"),
                &c.counters,
                MAX_COUNTERS_PER_CONSUMPTION,
            );
        }
        const EXACTLY_ONE: &str = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec";
        if per_device {
            let mut set = Vec::new();
            if let Some(n) = &d.node_name {
                if n.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{f}.nodeName"),
                        "\"\"",
                        "must not be empty",
                    ));
                } else {
                    set.push("`nodeName`");
                    validate_node_name(errs, &format!("{f}.nodeName"), n);
                }
            }
            if d.node_selector.is_some() {
                set.push("`nodeSelector`");
            }
            match d.all_nodes {
                Some(true) => set.push("`allNodes`"),
                Some(false) => errs.push(FieldError::invalid(
                    format!("{f}.allNodes"),
                    false,
                    "must be either unset or set to true",
                )),
                None => {}
            }
            match set.len() {
                0 => errs.push(FieldError::required(f.clone(), EXACTLY_ONE)),
                1 => {}
                _ => errs.push(FieldError::invalid(
                    f.clone(),
                    format!("{{{}}}", set.join(", ")),
                    EXACTLY_ONE,
                )),
            }
        } else if d.node_name.is_some() || d.node_selector.is_some() || d.all_nodes.is_some() {
            errs.push(FieldError::invalid(
                f.clone(),
                "null",
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{validate_resource_slice, ResourceSlice};
    use serde_json::json;

    fn errors(v: serde_json::Value) -> Vec<String> {
        let s: ResourceSlice = serde_json::from_value(v).expect("slice");
        let mut errs = FieldErrors::default();
        validate_partitionable(&s.spec, &mut errs);
        errs.0.iter().map(|e| e.to_string()).collect()
    }

    fn counter_slice(sets: serde_json::Value) -> serde_json::Value {
        json!({"metadata": {"name": "s"}, "spec": {"driver": "d.example.com",
            "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n",
            "sharedCounters": sets}})
    }

    #[test]
    fn a_valid_counter_slice_and_consuming_devices_pass() {
        let v =
            counter_slice(json!([{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}]));
        assert!(errors(v).is_empty());
        let d = json!({"metadata": {"name": "s"}, "spec": {"driver": "d.example.com",
            "pool": {"name": "p", "resourceSliceCount": 1}, "perDeviceNodeSelection": true,
            "devices": [{"name": "mig-1", "nodeName": "n",
                "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "10Gi"}}}]}]}});
        assert!(errors(d).is_empty());
    }

    #[test]
    fn counter_sets_names_and_limits_are_checked() {
        let sets: Vec<_> = (0..9)
            .map(|i| json!({"name": format!("set-{i}"), "counters": {"c": {"value": "1"}}}))
            .collect();
        let e = errors(counter_slice(json!(sets)));
        assert!(
            e.iter()
                .any(|e| e.contains("spec.sharedCounters: Too many: 9: must have at most 8 items")),
            "{e:?}"
        );
        let e = errors(counter_slice(json!([
            {"name": "Bad_Name", "counters": {"c": {"value": "1"}}},
            {"name": "a", "counters": {}},
            {"name": "a", "counters": {"x_y": {"value": "1"}}},
        ])));
        assert!(
            e.iter()
                .any(|e| e.starts_with("spec.sharedCounters[0].name: Invalid value: \"Bad_Name\"")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|e| e == "spec.sharedCounters[1].counters: Required value"),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|e| e == "spec.sharedCounters[2].name: Duplicate value: \"a\""),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|e| e.starts_with("spec.sharedCounters[2].counters[\"x_y\"]: Invalid value")),
            "{e:?}"
        );
        let many: BTreeMap<String, serde_json::Value> = (0..33)
            .map(|i| (format!("c{i}"), json!({"value": "1"})))
            .collect();
        let e = errors(counter_slice(json!([{"name": "a", "counters": many}])));
        assert!(
            e.iter().any(|e| e
                == "spec.sharedCounters[0].counters: Too many: 33: must have at most 32 items"),
            "{e:?}"
        );
    }

    #[test]
    fn devices_and_counters_in_one_slice_are_refused() {
        let mut v = counter_slice(json!([{"name": "a", "counters": {"c": {"value": "1"}}}]));
        v["spec"]["devices"] = json!([{"name": "d"}]);
        let e = errors(v);
        assert!(
            e.iter()
                .any(|e| e.contains("only one of `sharedCounters` or `devices` is allowed")),
            "{e:?}"
        );
    }

    #[test]
    fn device_consumption_and_node_selection_are_checked() {
        let c = json!({"counterSet": "a", "counters": {"c": {"value": "1"}}});
        let v = json!({"metadata": {"name": "s"}, "spec": {"driver": "d.example.com",
        "pool": {"name": "p", "resourceSliceCount": 1}, "perDeviceNodeSelection": true,
        "devices": [
            {"name": "d0", "nodeName": "n", "consumesCounters": [c, c, {"counterSet": "b", "counters": {"c": {"value": "1"}}}]},
            {"name": "d1"},
            {"name": "d2", "nodeName": "n", "allNodes": true},
        ]}});
        let e = errors(v);
        assert!(
            e.iter()
                .any(|e| e
                    == "spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items"),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|e| e
                    == "spec.devices[0].consumesCounters[1].counterSet: Duplicate value: \"a\""),
            "{e:?}"
        );
        assert!(
            e.iter().any(
                |e| e.starts_with("spec.devices[1]: Required value: exactly one of `nodeName`")
            ),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|e| e.starts_with("spec.devices[2]: Invalid value: {`nodeName`, `allNodes`}")),
            "{e:?}"
        );
        let v = json!({"metadata": {"name": "s"}, "spec": {"driver": "d.example.com",
            "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n",
            "devices": [{"name": "d0", "allNodes": true}]}});
        let e = errors(v);
        assert!(
            e.iter()
                .any(|e| e.contains("can only be set if `perDeviceNodeSelection` is set to true")),
            "{e:?}"
        );
    }

    #[test]
    fn at_most_64_devices_when_one_consumes_counters() {
        let mut devices: Vec<_> = (0..65).map(|i| json!({"name": format!("d{i}")})).collect();
        let v = json!({"metadata": {"name": "s"}, "spec": {"driver": "d.example.com",
            "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n", "devices": devices.clone()}});
        assert!(errors(v).is_empty());
        devices[0]["consumesCounters"] =
            json!([{"counterSet": "a", "counters": {"c": {"value": "1"}}}]);
        let v = json!({"metadata": {"name": "s"}, "spec": {"driver": "d.example.com",
            "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n", "devices": devices}});
        let e = errors(v);
        assert!(
            e.iter()
                .any(|e| e == "spec.devices: Too many: 65: must have at most 64 items"),
            "{e:?}"
        );
    }

    #[test]
    fn validate_resource_slice_runs_these_checks() {
        let v = counter_slice(json!([{"name": "Bad", "counters": {"c": {"value": "1"}}}]));
        let s: ResourceSlice = serde_json::from_value(v).expect("slice");
        let e = validate_resource_slice(&s)
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("spec.sharedCounters[0].name: Invalid value: \"Bad\""),
            "{e}"
        );
    }

    #[test]
    fn a_counter_without_value_does_not_parse() {
        let v = counter_slice(json!([{"name": "a", "counters": {"c": {}}}]));
        assert!(serde_json::from_value::<ResourceSlice>(v).is_err());
    }
}
