//! Strict field validation of Kubernetes objects, as the API server does it for kubectl since
//! v1.27 (`--validate=strict`, server-side `fieldValidation=Strict`): a field the object's
//! schema does not have is refused, `strict decoding error: unknown field "spec.containers[0].resource"`,
//! and ksim adds the nearest known field (`did you mean "resources"?`).
//!
//! The schema ([`schema/k8s-fields.txt`](schema/k8s-fields.txt)) is every field of every type
//! reachable from the kinds ksim reads (Pod, Node, Namespace, Service, the workloads,
//! PodDisruptionBudget, PriorityClass, LimitRange, ResourceQuota, the storage objects,
//! ReplicationController), generated from the Kubernetes v1.35 OpenAPI models by
//! `scripts/gen-k8s-fields.py`: status, managedFields and every other real field are known, so
//! dumps and audit logs pass. Maps (labels, resource lists) and free-form values (quantities,
//! int-or-string, raw JSON) are not walked. `apiVersion` and `kind` are checked by the callers
//! first.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::validation::quote;

const SCHEMA: &str = include_str!("schema/k8s-fields.txt");

/// The shape of a field's value.
#[derive(Debug, Clone, Copy)]
enum Shape<'a> {
    /// Not walked.
    Any,
    Obj(&'a str),
    List(&'a str),
    Map(&'a str),
}

struct Schema {
    roots: HashMap<&'static str, &'static str>,
    types: HashMap<&'static str, Vec<(&'static str, Shape<'static>)>>,
}

fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| {
        let mut roots = HashMap::new();
        let mut types = HashMap::new();
        for line in SCHEMA.lines() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let mut parts = line.split(' ');
            let Some(head) = parts.next() else { continue };
            if let Some(kind) = head.strip_prefix('@') {
                if let Some(t) = parts.next() {
                    roots.insert(kind, t);
                }
                continue;
            }
            let fields = parts
                .filter_map(|f| {
                    let (name, shape) = f.split_once(':')?;
                    let shape = if shape == "-" {
                        Shape::Any
                    } else if let Some(t) = shape.strip_prefix('[') {
                        Shape::List(t)
                    } else if let Some(t) = shape.strip_prefix('{') {
                        Shape::Map(t)
                    } else {
                        Shape::Obj(shape)
                    };
                    Some((name, shape))
                })
                .collect();
            types.insert(head, fields);
        }
        Schema { roots, types }
    })
}

/// The `apiVersion` the API server (v1.35) serves `kind` at, for the kinds ksim reads.
pub fn api_version_of(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "Pod"
        | "Node"
        | "Namespace"
        | "Service"
        | "LimitRange"
        | "ResourceQuota"
        | "PersistentVolume"
        | "PersistentVolumeClaim"
        | "ReplicationController" => "v1",
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" => "apps/v1",
        "Job" | "CronJob" => "batch/v1",
        "PodDisruptionBudget" => "policy/v1",
        "PriorityClass" => "scheduling.k8s.io/v1",
        "StorageClass" | "CSINode" | "CSIDriver" | "CSIStorageCapacity" | "VolumeAttachment" => {
            "storage.k8s.io/v1"
        }
        _ => return None,
    })
}

/// apiVersion, then the fields, as the API server checks a document of `kind` (already
/// resolved): `Err((path, message))` for the first problem. A missing `apiVersion` is
/// accepted (ksim's own files leave it out; kubectl would refuse it).
pub fn check_document(kind: &str, v: &Value) -> Result<(), (String, String)> {
    match (v.get("apiVersion"), api_version_of(kind)) {
        (None | Some(Value::Null), _) | (_, None) => {}
        (Some(Value::String(s)), Some(want)) if s == want => {}
        (Some(Value::String(s)), Some(_)) => {
            return Err((
                "apiVersion".into(),
                format!(
                    "no matches for kind {} in version {}",
                    quote(kind),
                    quote(s)
                ),
            ))
        }
        (Some(other), _) => {
            return Err((
                "apiVersion".into(),
                format!("expected a string, got {}", crate::json::value_kind(other)),
            ))
        }
    }
    // ksim's own writers (the audit importer's traces) carry a CronJob's pod template as
    // `spec.template` beside `spec.jobTemplate`: accepted from them (a known gap: a user's
    // `spec.template` on a CronJob passes too).
    match unknown_fields(kind, v)
        .into_iter()
        .find(|u| !(kind == "CronJob" && u.path == "spec.template"))
    {
        Some(u) => Err((u.path.clone(), u.to_string())),
        None => Ok(()),
    }
}

/// Whether ksim knows the schema of `kind`.
pub fn knows_kind(kind: &str) -> bool {
    schema().roots.contains_key(kind)
}

/// An unknown field: its path (`spec.containers[0].resource`) and the nearest known name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField {
    pub path: String,
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnknownField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "strict decoding error: unknown field {}",
            quote(&self.path)
        )?;
        if let Some(s) = &self.suggestion {
            write!(f, " (did you mean {}?)", quote(s))?;
        }
        Ok(())
    }
}

/// Every unknown field of an object of `kind` (empty for a kind ksim has no schema of), in
/// document order.
pub fn unknown_fields(kind: &str, v: &Value) -> Vec<UnknownField> {
    let s = schema();
    let mut out = Vec::new();
    if let Some(root) = s.roots.get(kind) {
        walk(s, v, Shape::Obj(root), &mut Vec::new(), &mut out);
    }
    out
}

/// The first unknown field of an object of `kind`, as an error message.
pub fn check(kind: &str, v: &Value) -> Result<(), UnknownField> {
    match unknown_fields(kind, v).into_iter().next() {
        Some(u) => Err(u),
        None => Ok(()),
    }
}

/// One step of a path, kept without allocating while the walk goes.
enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

fn render(path: &[Seg<'_>]) -> String {
    let mut p = String::new();
    for s in path {
        match s {
            Seg::Key(k) => {
                if !p.is_empty() {
                    p.push('.');
                }
                p.push_str(k);
            }
            Seg::Index(i) => p.push_str(&format!("[{i}]")),
        }
    }
    p
}

fn walk<'v>(
    s: &Schema,
    v: &'v Value,
    shape: Shape<'_>,
    path: &mut Vec<Seg<'v>>,
    out: &mut Vec<UnknownField>,
) {
    match (shape, v) {
        (Shape::Obj(t), Value::Object(m)) => {
            let Some(fields) = s.types.get(t) else { return };
            for (k, x) in m {
                path.push(Seg::Key(k));
                match fields.iter().find(|(n, _)| n == k) {
                    Some((_, sh)) => walk(s, x, *sh, path, out),
                    None => out.push(UnknownField {
                        path: render(path),
                        suggestion: near_miss(k, fields.iter().map(|(n, _)| *n)),
                    }),
                }
                path.pop();
            }
        }
        (Shape::List(t), Value::Array(items)) => {
            for (i, x) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                walk(s, x, Shape::Obj(t), path, out);
                path.pop();
            }
        }
        (Shape::Map(t), Value::Object(m)) => {
            for (k, x) in m {
                path.push(Seg::Key(k));
                walk(s, x, Shape::Obj(t), path, out);
                path.pop();
            }
        }
        // Scalars, nulls and wrong types: the typed decoding reports those.
        _ => {}
    }
}

/// The known name nearest `key`: the same ignoring case, or within an edit distance of 2
/// (at most a third of the name), or one that starts with it or it starts with (`resource`
/// for `resources`); the smallest distance, then the first in name order.
fn near_miss<'a>(key: &str, names: impl Iterator<Item = &'a str>) -> Option<String> {
    let lower = key.to_ascii_lowercase();
    names
        .filter_map(|n| {
            let d = edit_distance(&n.to_ascii_lowercase(), &lower);
            let close = d == 0
                || (d <= 2 && d * 3 <= n.len().max(key.len()))
                || (key.len() >= 4
                    && (n.starts_with(key) || key.starts_with(n))
                    && n.len().abs_diff(key.len()) <= 3);
            close.then_some((d, n))
        })
        .min()
        .map(|(_, n)| n.to_string())
}

/// Levenshtein distance.
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

    fn v(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn a_resource_typo_in_a_pod_is_named_with_a_suggestion() {
        let pod = v(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
            "spec":{"containers":[{"name":"c","resource":{"requests":{"cpu":"1"}}}]}}"#);
        let e = check("Pod", &pod).unwrap_err();
        assert_eq!(
            e.to_string(),
            "strict decoding error: unknown field \"spec.containers[0].resource\" (did you mean \"resources\"?)"
        );
    }

    #[test]
    fn real_fields_pass_everywhere() {
        // Status, managedFields, ownerReferences, probes, volumes: all real.
        let pod = v(
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","managedFields":[{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}],"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","uid":"u","controller":true,"blockOwnerDeletion":true}]},
            "spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"1"}},"readinessProbe":{"httpGet":{"path":"/","port":"http"}},"volumeMounts":[{"name":"v","mountPath":"/v"}]}],
              "volumes":[{"name":"v","emptyDir":{}}],"tolerations":[{"key":"k","operator":"Exists"}],"priority":0,"enableServiceLinks":true},
            "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null}],"containerStatuses":[{"name":"c","ready":true,"restartCount":0,"image":"x","imageID":"y","state":{"running":{"startedAt":"2024-01-01T00:00:00Z"}}}],"qosClass":"Burstable"}}"#,
        );
        assert_eq!(unknown_fields("Pod", &pod), vec![]);
        let node = v(
            r#"{"kind":"Node","metadata":{"name":"n"},"spec":{"podCIDR":"10.0.0.0/24","taints":[{"key":"k","effect":"NoSchedule"}]},
            "status":{"capacity":{"cpu":"4"},"allocatable":{"cpu":"4"},"nodeInfo":{"kubeletVersion":"v1.35.0","architecture":"amd64","bootID":"","containerRuntimeVersion":"","kernelVersion":"","kubeProxyVersion":"","machineID":"","operatingSystem":"linux","osImage":"","systemUUID":""},"images":[{"names":["a"],"sizeBytes":1}],"addresses":[{"type":"InternalIP","address":"1.2.3.4"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}}}}"#,
        );
        assert_eq!(unknown_fields("Node", &node), vec![]);
        let deploy = v(
            r#"{"kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":1,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":1}},"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c"}]}}},"status":{"replicas":1}}"#,
        );
        assert_eq!(unknown_fields("Deployment", &deploy), vec![]);
    }

    #[test]
    fn unknown_fields_anywhere_are_found_with_their_paths() {
        let deploy = v(
            r#"{"kind":"Deployment","metadata":{"name":"d","lables":{"a":"b"}},"spec":{"replica":2,"template":{"spec":{"containers":[{"name":"c","imagee":"x"}],"nodeSelectr":{}}}}}"#,
        );
        let got: Vec<String> = unknown_fields("Deployment", &deploy)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            vec![
                "strict decoding error: unknown field \"metadata.lables\" (did you mean \"labels\"?)",
                "strict decoding error: unknown field \"spec.replica\" (did you mean \"replicas\"?)",
                "strict decoding error: unknown field \"spec.template.spec.containers[0].imagee\" (did you mean \"image\"?)",
                "strict decoding error: unknown field \"spec.template.spec.nodeSelectr\" (did you mean \"nodeSelector\"?)",
            ]
        );
        // No near name: no suggestion. Labels are a map: any key is fine.
        let pdb = v(
            r#"{"kind":"PodDisruptionBudget","metadata":{"labels":{"anything":"x"}},"spec":{"minAvailable":1,"zzz":1}}"#,
        );
        assert_eq!(
            unknown_fields("PodDisruptionBudget", &pdb),
            vec![UnknownField {
                path: "spec.zzz".into(),
                suggestion: None
            }]
        );
        assert!(knows_kind("LimitRange") && knows_kind("ResourceQuota") && !knows_kind("Foo"));
    }
}
