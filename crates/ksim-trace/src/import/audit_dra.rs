//! The DRA records of an audit log (`resource.k8s.io`): DeviceClasses, ResourceSlices,
//! ResourceClaims and ResourceClaimTemplates.
//!
//! | record | native event |
//! |---|---|
//! | deviceclasses, resourceslices, resourceclaimtemplates create | CreateObject |
//! | the same update, patch | UpdateObject when the object (less `status`, `managedFields`, `resourceVersion`) changed; patches need `responseObject` |
//! | the same delete | DeleteObject |
//! | resourceclaims create | CreateObject without `status` |
//! | resourceclaims update, patch (and `status`) | none: the allocation and `reservedFor` are what the simulated scheduler writes at PreBind; a claim's spec is immutable |
//! | resourceclaims delete | DeleteObject |
//!
//! A ResourceClaim whose controller `ownerReference` is a Pod was generated from a template by
//! the resource claim controller, which the simulation runs itself: it is skipped, and so is
//! its deletion. An update or delete of an object created before the log is skipped (its
//! earlier state is unknown): give such objects in the scenario's `objectsFiles` (a kube-dump's
//! `objects.yaml`).

use std::collections::HashMap;

use ksim_api::object::ObjectKind;
use ksim_engine::InputEvent;
use serde_json::Value;

use super::ImportContext;
use crate::error::TraceError;
use crate::native::decode_object;

/// The DRA kind an `objectRef` names (`apiGroup` resource.k8s.io, or none).
pub(super) fn dra_kind(group: Option<&str>, resource: &str) -> Option<ObjectKind> {
    let k = match resource {
        "deviceclasses" => ObjectKind::DeviceClass,
        "resourceslices" => ObjectKind::ResourceSlice,
        "resourceclaims" => ObjectKind::ResourceClaim,
        "resourceclaimtemplates" => ObjectKind::ResourceClaimTemplate,
        _ => return None,
    };
    match group {
        None | Some("resource.k8s.io") => Some(k),
        Some(_) => None,
    }
}

/// One DRA record of the log.
pub(super) struct DraRecord<'a> {
    pub kind: ObjectKind,
    pub resource: &'a str,
    pub ns: &'a str,
    pub name: &'a str,
    pub sub: &'a str,
    pub verb: &'a str,
    pub object: Option<&'a Value>,
    pub obj_field: &'a str,
    pub has_response: bool,
}

/// The objects created in the log so far (`kind/ns/name` → the object as last replayed), and
/// the generated claims skipped.
#[derive(Default)]
pub(super) struct DraState {
    seen: HashMap<String, Value>,
    generated: std::collections::HashSet<String>,
}

/// The object as a trace carries it: no status (the simulation writes its own), no
/// managedFields or resourceVersion, the namespace of the request.
fn clean(kind: ObjectKind, ns: &str, o: &Value) -> Value {
    let mut v = o.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("status");
    }
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
        m.remove("resourceVersion");
        if kind.namespaced() && !ns.is_empty() {
            m.insert("namespace".into(), Value::String(ns.to_string()));
        }
    }
    v
}

/// Whether the object's controller `ownerReference` is a Pod (a claim generated from a
/// template).
fn owned_by_pod(v: &Value) -> bool {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r.get("kind").and_then(Value::as_str) == Some("Pod")
                    && r.get("controller").and_then(Value::as_bool) == Some(true)
            })
        })
}

/// The trace event for a DRA record, or `None` when it is skipped (counted by reason).
pub(super) fn dra_event(
    e: &DraRecord<'_>,
    st: &mut DraState,
    cx: &mut ImportContext<'_>,
    err: &dyn Fn(&str, String) -> TraceError,
) -> Result<Option<InputEvent>, TraceError> {
    let kind = e.kind;
    let ns = match (kind.namespaced(), e.ns) {
        (false, _) => "",
        (true, "") => "default",
        (true, ns) => ns,
    };
    let key = |name: &str| format!("{}/{ns}/{name}", kind.as_str());
    let decode = |v: &Value| decode_object(v, e.obj_field).map_err(|(f, m)| err(&f, m));
    let claim = kind == ObjectKind::ResourceClaim;
    match (e.sub, e.verb) {
        ("", "create") => {
            let Some(o) = e.object else {
                cx.summary.skip(format!(
                    "{} create without object (audit level Metadata)",
                    e.resource
                ));
                return Ok(None);
            };
            let v = clean(kind, e.ns, o);
            let name = v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(e.name)
                .to_string();
            if claim && owned_by_pod(&v) {
                st.generated.insert(key(&name));
                cx.summary.skip(
                    "ResourceClaim generated for a pod from a template (ksim's resource claim controller creates its own)",
                );
                return Ok(None);
            }
            let obj = decode(&v)?;
            st.seen.insert(key(obj.name()), v);
            Ok(Some(InputEvent::CreateObject {
                object: Box::new(obj),
            }))
        }
        ("", "delete") => {
            if st.seen.remove(&key(e.name)).is_some() {
                return Ok(Some(InputEvent::DeleteObject {
                    object_kind: kind,
                    namespace: ns.to_string(),
                    name: e.name.to_string(),
                }));
            }
            if st.generated.remove(&key(e.name)) {
                cx.summary.skip(
                    "delete of a ResourceClaim generated from a template (ksim's resource claim controller deletes its own)",
                );
            } else {
                cx.summary.skip(format!(
                    "delete of a {} created before the log (its earlier state is unknown)",
                    kind.as_str()
                ));
            }
            Ok(None)
        }
        (_, "update" | "patch") if claim => {
            cx.summary.skip(format!(
                "resourceclaims{} {} (allocation and reservedFor: the simulated scheduler writes its own)",
                if e.sub.is_empty() {
                    String::new()
                } else {
                    format!("/{}", e.sub)
                },
                e.verb
            ));
            Ok(None)
        }
        ("", "update" | "patch") => {
            let Some(o) = e.object.filter(|_| e.verb == "update" || e.has_response) else {
                cx.summary.skip(format!(
                    "{} {} without the object (audit level below {})",
                    e.resource,
                    e.verb,
                    if e.verb == "patch" {
                        "RequestResponse"
                    } else {
                        "Request"
                    }
                ));
                return Ok(None);
            };
            let v = clean(kind, e.ns, o);
            let name = v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(e.name)
                .to_string();
            let Some(old) = st.seen.get(&key(&name)) else {
                cx.summary.skip(format!(
                    "{} of a {} created before the log (its earlier state is unknown)",
                    e.verb,
                    kind.as_str()
                ));
                return Ok(None);
            };
            if *old == v {
                cx.summary
                    .skip(format!("{} {} without change", e.resource, e.verb));
                return Ok(None);
            }
            let obj = decode(&v)?;
            st.seen.insert(key(&name), v);
            Ok(Some(InputEvent::UpdateObject {
                object: Box::new(obj),
            }))
        }
        (sub, verb) => {
            cx.summary.skip(format!(
                "{}{} {verb} (not replayed)",
                e.resource,
                if sub.is_empty() {
                    String::new()
                } else {
                    format!("/{sub}")
                }
            ));
            Ok(None)
        }
    }
}
