//! Sanity checks shared by every reader: resource quantities and times that a real cluster could
//! not have, and required names. The API server would reject a negative request; the limits on
//! "absurd" values are ksim's own, chosen far above any real machine so that they only catch unit
//! mistakes (bytes written as Ei, seconds written as microseconds):
//!
//! - every quantity in requests, limits, overhead, capacity and allocatable is ≥ 0;
//! - `cpu` is at most [`MAX_CPU_CORES`] cores; any other resource at most [`MAX_QUANTITY`] units
//!   (2⁵⁰ ≈ 1.13 × 10¹⁵, i.e. 1 PiB of memory; the quantity parser itself
//!   rejects anything whose milli-value overflows 64 bits);
//! - times and durations are at most [`MAX_TIME_SECS`] (100 years).

use ksim_api::object::ApiObject;
use ksim_api::{Node, Pod, Quantity, ResourceList};
use ksim_engine::{SimDuration, SimTime};
use serde_json::Value;

/// The largest cpu quantity accepted, in cores.
pub const MAX_CPU_CORES: i64 = 1_000_000;
/// The largest quantity of any other resource, in whole units.
pub const MAX_QUANTITY: i64 = 1 << 50;
/// The largest time or duration accepted, in seconds (100 years).
pub const MAX_TIME_SECS: i64 = 100 * 365 * 86_400;

/// A problem inside an object: the field path relative to the object and a message.
pub type FieldProblem = (String, String);

/// Checks one quantity of resource `name`.
pub fn check_quantity(name: &str, q: &Quantity) -> Result<(), String> {
    if q.milli_value() < 0 || q.value() < 0 {
        return Err(format!("quantity {:?} is negative", q.as_str()));
    }
    if name == "cpu" {
        if q.milli_value() > MAX_CPU_CORES * 1000 {
            return Err(format!(
                "quantity {:?} is more than {MAX_CPU_CORES} cores; is the unit right?",
                q.as_str()
            ));
        }
    } else if q.value() > MAX_QUANTITY {
        return Err(format!(
            "quantity {:?} is absurdly large (more than 2^50); is the unit right?",
            q.as_str()
        ));
    }
    Ok(())
}

fn check_list(prefix: &str, list: &ResourceList) -> Result<(), FieldProblem> {
    for (name, q) in list {
        check_quantity(name, q).map_err(|m| (format!("{prefix}.{name}"), m))?;
    }
    Ok(())
}

/// Checks a pod after defaulting: a name, and sane quantities everywhere.
pub fn check_pod(pod: &Pod) -> Result<(), FieldProblem> {
    if pod.metadata.name.is_empty() && pod.metadata.generate_name.is_empty() {
        return Err((
            "metadata.name".into(),
            "a pod needs a name (metadata.name, or metadata.generateName)".into(),
        ));
    }
    if !pod.kind.is_empty() && pod.kind != "Pod" {
        return Err(("kind".into(), format!("expected Pod, got {:?}", pod.kind)));
    }
    for (what, list) in [
        ("containers", &pod.spec.containers),
        ("initContainers", &pod.spec.init_containers),
    ] {
        for (i, c) in list.iter().enumerate() {
            let base = format!("spec.{what}[{i}].resources");
            check_list(&format!("{base}.requests"), &c.resources.requests)?;
            check_list(&format!("{base}.limits"), &c.resources.limits)?;
        }
    }
    check_list("spec.overhead", &pod.spec.overhead)?;
    // Upstream ValidatePodSpec.
    if let Some(d) = pod.spec.active_deadline_seconds {
        if !(1..=i64::from(i32::MAX)).contains(&d) {
            return Err((
                "spec.activeDeadlineSeconds".into(),
                format!("Invalid value: {d}: must be between 1 and 2147483647, inclusive"),
            ));
        }
    }
    if let Err(e) = ksim_api::resource::validate_pod_claims(pod) {
        let field = e.0.first().map(|f| f.field.clone()).unwrap_or_default();
        return Err((field, e.to_string()));
    }
    Ok(())
}

/// Checks a node after defaulting: a name (or `generateName`), and sane capacity and
/// allocatable.
pub fn check_node(node: &Node) -> Result<(), FieldProblem> {
    if node.metadata.name.is_empty() && node.metadata.generate_name.is_empty() {
        return Err(("metadata.name".into(), "a node needs a name".into()));
    }
    if !node.kind.is_empty() && node.kind != "Node" {
        return Err(("kind".into(), format!("expected Node, got {:?}", node.kind)));
    }
    check_list("status.capacity", &node.status.capacity)?;
    check_list("status.allocatable", &node.status.allocatable)?;
    // The API server accepts a node without status (no capacity, no allocatable: it hosts
    // nothing until its kubelet reports) and an allocatable above capacity (upstream's
    // `ValidateNode` checks each quantity alone, not one against the other; open-simulator's
    // published demo cluster has such nodes): so does ksim.
    for (i, t) in node.spec.taints.iter().enumerate() {
        if t.key.is_empty() {
            return Err((format!("spec.taints[{i}].key"), "required".into()));
        }
        // As the API server's ValidateNodeSpec: the three effects a taint may have.
        if !matches!(
            t.effect.as_str(),
            "NoSchedule" | "PreferNoSchedule" | "NoExecute"
        ) {
            return Err((
                format!("spec.taints[{i}].effect"),
                format!(
                    "unsupported value {:?}: supported values are \"NoExecute\", \"NoSchedule\", \"PreferNoSchedule\"",
                    t.effect
                ),
            ));
        }
    }
    Ok(())
}

/// Checks the quantities of a storage object: a PV's capacity, a claim's requests and limits,
/// a CSIStorageCapacity's capacity and maximum volume size.
pub fn check_object(obj: &ApiObject) -> Result<(), FieldProblem> {
    match obj {
        ApiObject::PersistentVolume(pv) => check_list("spec.capacity", &pv.spec.capacity),
        ApiObject::PersistentVolumeClaim(pvc) => {
            check_list("spec.resources.requests", &pvc.spec.resources.requests)?;
            check_list("spec.resources.limits", &pvc.spec.resources.limits)
        }
        ApiObject::CsiStorageCapacity(c) => {
            for (field, q) in [
                ("capacity", &c.capacity),
                ("maximumVolumeSize", &c.maximum_volume_size),
            ] {
                if let Some(q) = q {
                    check_quantity("storage", q).map_err(|m| (field.to_string(), m))?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Checks a duration against [`MAX_TIME_SECS`].
pub fn check_duration(d: SimDuration) -> Result<SimDuration, String> {
    if d.0 < 0 {
        return Err(format!("duration {d} is negative"));
    }
    if d.0 > MAX_TIME_SECS * 1_000_000 {
        return Err(format!(
            "duration {d} is more than 100 years; is the unit right?"
        ));
    }
    Ok(d)
}

/// Parses a time or duration written as a Go-style duration string (`"1h2m3.5s"`) or a plain
/// number of seconds (`90`, `1.5`, `"90"`), and checks its range.
pub fn parse_duration_value(v: &Value) -> Result<SimDuration, String> {
    let d = match v {
        Value::String(s) => SimDuration::parse(s)?,
        Value::Number(n) => {
            let f = n
                .as_f64()
                .ok_or_else(|| format!("{n} is not a number of seconds"))?;
            seconds_f64(f)?
        }
        other => {
            return Err(format!(
                "expected a duration such as \"1m30s\" or a number of seconds, got {other}"
            ))
        }
    };
    check_duration(d)
}

/// A duration from a number of seconds (finite, non-negative, within range).
pub fn seconds_f64(f: f64) -> Result<SimDuration, String> {
    if !f.is_finite() {
        return Err(format!("{f} is not a finite number of seconds"));
    }
    if f < 0.0 {
        return Err(format!("{f} seconds is negative"));
    }
    if f > MAX_TIME_SECS as f64 {
        return Err(format!(
            "{f} seconds is more than 100 years; is the unit right?"
        ));
    }
    Ok(SimDuration((f * 1e6).round() as i64))
}

/// Parses a time (offset from the start of the run) the same way as a duration.
pub fn parse_time_value(v: &Value) -> Result<SimTime, String> {
    parse_duration_value(v).map(|d| SimTime(d.0))
}

/// Writes a duration the way the native trace writes `at` and `runFor`: seconds with up to six
/// decimals and an `s` suffix (`"1.5s"`, `"600s"`), which every reader parses back exactly.
pub fn format_duration(d: SimDuration) -> String {
    format!("{}s", ksim_engine::time::format_micros(d.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        let q = |s: &str| Quantity::parse(s).unwrap();
        assert!(check_quantity("cpu", &q("500m")).is_ok());
        assert!(check_quantity("cpu", &q("-1")).is_err());
        assert!(check_quantity("cpu", &q("2000000")).is_err());
        assert!(check_quantity("memory", &q("64Gi")).is_ok());
        assert!(check_quantity("memory", &q("2Pi")).is_err());
    }

    #[test]
    fn active_deadline_seconds_in_range_as_validate_pod_spec() {
        let pod = |d: i64| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p"},
                "spec": {"activeDeadlineSeconds": d, "containers": [{"name": "c"}]}
            }))
            .unwrap()
        };
        assert!(check_pod(&pod(1)).is_ok());
        assert!(check_pod(&pod(2_147_483_647)).is_ok());
        for bad in [0, -5, 2_147_483_648] {
            let (field, msg) = check_pod(&pod(bad)).unwrap_err();
            assert_eq!(field, "spec.activeDeadlineSeconds");
            assert_eq!(
                msg,
                format!("Invalid value: {bad}: must be between 1 and 2147483647, inclusive")
            );
        }
    }

    #[test]
    fn durations() {
        let v = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert_eq!(parse_duration_value(&v("\"1.5s\"")).unwrap().0, 1_500_000);
        assert_eq!(parse_duration_value(&v("90")).unwrap().0, 90_000_000);
        assert_eq!(parse_duration_value(&v("0.25")).unwrap().0, 250_000);
        assert!(parse_duration_value(&v("-1")).is_err());
        assert!(parse_duration_value(&v("\"-1s\"")).is_err());
        assert!(parse_duration_value(&v("1e30")).is_err());
        assert!(parse_duration_value(&v("true")).is_err());
        assert_eq!(format_duration(SimDuration(1_500_000)), "1.5s");
    }
}
