//! Kubernetes audit logs: `audit.k8s.io/v1` Event objects, one JSON object per line (the log
//! backend's format), streamed.
//!
//! Which records count: stage `ResponseComplete` (records without a stage too), with a 2xx
//! response code. Time = `stageTimestamp` (else `requestReceivedTimestamp`), made relative to
//! the earliest record in the log. Objects come from `responseObject` (audit level
//! RequestResponse) or else `requestObject` (level Request); a record that needs an object and
//! has neither (level Metadata) is skipped with that reason.
//!
//! | record | native event |
//! |---|---|
//! | pods create | CreatePod (with `spec.nodeName` when created bound) |
//! | pods/binding create (or legacy `bindings`) | no event: the simulator binds by itself; the observed node and delay are kept on the pod as annotations `ksim.io/observed-node` and `ksim.io/observed-binding-delay` (CreatePod is held back until the binding, the pod's deletion or the log's end) |
//! | pods delete | DeletePod (only for pods created in the log) |
//! | nodes create | AddNode |
//! | nodes (and nodes/status) update/patch | UpdateNode when labels, taints, unschedulable, capacity or allocatable changed; a node first seen this way existed before the log and joins the initial nodes |
//! | nodes delete | RemoveNode |
//! | deployments, replicasets, statefulsets, daemonsets (`apps`), jobs, cronjobs (`batch`), priorityclasses (`scheduling.k8s.io`) create | CreateObject |
//! | the same update, patch | UpdateObject when `spec` (or a PriorityClass's value, globalDefault, preemptionPolicy) changed; patches need `responseObject` (level RequestResponse: at level Request the logged object is the patch, not the object) |
//! | deployments/replicasets/statefulsets `scale` update or patch | UpdateObject of the last object seen, with the Scale's `spec.replicas` |
//! | the same delete | DeleteObject (the engine deletes the controller's pods with it) |
//! | deviceclasses, resourceslices, resourceclaims, resourceclaimtemplates (`resource.k8s.io`) | see `audit_dra`: Create/Update/DeleteObject; claim status writes and claims generated for pods are skipped |
//!
//! Controllers and their pods: ksim's controllers create, replace and delete their own pods
//! (and a Deployment its own ReplicaSets), so replaying the pods the real controllers created
//! as well would run every replica twice. Adoption cannot take them either: a controller adopts
//! only at its first reconcile, and the log's pods come later. So a pod (or ReplicaSet) whose
//! controller `ownerReference` names a controller imported from this log (for a ReplicaSet
//! whose create has no object: a Deployment named by the ReplicaSet's name less the pod's
//! `pod-template-hash`) is skipped — and its binding and deletion with it — counted under its
//! own reason in the import table. The same for a Job whose controller is a CronJob imported
//! from the log (ksim's CronJob creates its Jobs) and for that Job's pods; a Job of a CronJob
//! created before the log is imported as a Job. A pod
//! whose controller was not imported (created before the log, or logged at level Metadata) is
//! kept as a plain pod, as before: that replays what the log shows. Likewise an update, scale
//! or delete of a controller created before the log is skipped with that reason (its earlier
//! state is unknown), and so is a ReplicaSet of a Deployment that was not imported.
//! Controller `status` updates are skipped: the simulated controllers keep their own.
//!
//! Everything else (other resources, read verbs, pod updates, failed requests) is counted by
//! reason, never an error. A line that is not JSON, or a timestamp that does not parse, is an
//! error naming the line.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use ksim_api::object::ObjectKind;
use ksim_api::{Node, Pod};
use ksim_engine::InputEvent;
use serde_json::Value;

use super::build;
use super::ImportContext;
use crate::error::TraceError;
use crate::io::{display_name, open_input};
use crate::native::{decode_node, decode_object, decode_pod};

/// The controller kinds an audit log's `objectRef` names (`apiGroup`, `resource`); objectRefs
/// without an `apiGroup` are matched by resource alone.
fn controller_kind(group: Option<&str>, resource: &str) -> Option<ObjectKind> {
    let (g, k) = match resource {
        "deployments" => ("apps", ObjectKind::Deployment),
        "replicasets" => ("apps", ObjectKind::ReplicaSet),
        "statefulsets" => ("apps", ObjectKind::StatefulSet),
        "daemonsets" => ("apps", ObjectKind::DaemonSet),
        "jobs" => ("batch", ObjectKind::Job),
        "cronjobs" => ("batch", ObjectKind::CronJob),
        "priorityclasses" => ("scheduling.k8s.io", ObjectKind::PriorityClass),
        "limitranges" => ("", ObjectKind::LimitRange),
        "resourcequotas" => ("", ObjectKind::ResourceQuota),
        _ => return None,
    };
    match group {
        None => Some(k),
        Some(x) if x == g => Some(k),
        Some(_) => None,
    }
}

/// The part of a controller object whose change is worth an UpdateObject: the spec (a
/// PriorityClass has none; its fields are top-level).
fn desired(v: &Value) -> Value {
    match v.get("spec") {
        Some(s) => s.clone(),
        None => serde_json::json!([
            v.get("value"),
            v.get("globalDefault"),
            v.get("preemptionPolicy")
        ]),
    }
}

/// The Deployment a ReplicaSet `<deployment>-<pod-template-hash>` belongs to, read from its
/// pod's `pod-template-hash` label: how a pod is matched to an imported Deployment when the log
/// has no object for the ReplicaSet's create (logged at level Metadata).
fn deployment_set<'a>(set: &'a str, hash: Option<&String>) -> Option<&'a str> {
    let hash = hash.filter(|h| !h.is_empty())?;
    set.strip_suffix(hash.as_str())?
        .strip_suffix('-')
        .filter(|d| !d.is_empty())
}

/// The kind of controller that creates objects of `kind` in ksim too: a Deployment its
/// ReplicaSets, a CronJob its Jobs.
fn managing_kind(kind: ObjectKind) -> Option<&'static str> {
    match kind {
        ObjectKind::ReplicaSet => Some("Deployment"),
        ObjectKind::Job => Some("CronJob"),
        _ => None,
    }
}

/// The controller `ownerReference` of an object, as (kind, name).
fn controller_owner(v: &Value) -> Option<(String, String)> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("").to_string();
            (s("kind"), s("name"))
        })
}

/// Parses an RFC 3339 timestamp (`2024-05-01T12:34:56.123456Z`, `...+02:00`) to microseconds
/// since the Unix epoch.
pub fn parse_rfc3339(s: &str) -> Result<i64, String> {
    let bad = || format!("{s:?} is not an RFC 3339 timestamp");
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| -> Result<i64, String> {
        s.get(r).and_then(|t| t.parse::<i64>().ok()).ok_or_else(bad)
    };
    let (y, mo, d, h, mi, se) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return Err(bad());
    }
    let mut i = 19;
    let mut micros = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = &s[start..i];
        if frac.is_empty() {
            return Err(bad());
        }
        let six: String = frac.chars().chain(std::iter::repeat('0')).take(6).collect();
        micros = six.parse().map_err(|_| bad())?;
    }
    // Byte-wise on purpose: the zone may hold any character, and slicing a `str` at a
    // non-char boundary panics (issue 16).
    let offset_secs = match &b[i..] {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()) =>
        {
            let digit = |c: &u8| i64::from(c - b'0');
            let (hh, mm) = (digit(h1) * 10 + digit(h2), digit(m1) * 10 + digit(m2));
            if hh > 23 || mm > 59 {
                return Err(bad());
            }
            let o = hh * 3600 + mm * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return Err(bad()),
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset_secs;
    Ok(secs * 1_000_000 + micros)
}

/// The parts of a node the scheduler reads; an update that changes none of them is dropped.
fn relevant(n: &Node) -> impl PartialEq + '_ {
    (
        &n.metadata.labels,
        &n.spec.taints,
        n.spec.unschedulable,
        &n.status.allocatable,
        &n.status.capacity,
    )
}

struct HeldPod {
    at: i64,
    pod: Pod,
}

pub fn import(cx: &mut ImportContext<'_>, inputs: &[PathBuf]) -> Result<(), TraceError> {
    let mut held: BTreeMap<String, HeldPod> = BTreeMap::new();
    let mut created: std::collections::HashSet<String> = Default::default();
    let mut nodes: HashMap<String, Node> = HashMap::new();
    let mut min_t: Option<i64> = None;
    let mut bindings = 0u64;
    // Controllers imported from the log (key: kind/namespace/name), with their last object.
    let mut controllers: HashMap<String, Value> = HashMap::new();
    let mut dra = super::audit_dra::DraState::default();
    // ReplicaSets and Jobs the log shows created by an imported Deployment or CronJob
    // (kind/namespace/name).
    let mut managed: std::collections::HashSet<String> = Default::default();
    // Pods skipped because an imported controller creates its own (namespace/name).
    let mut owned_pods: std::collections::HashSet<String> = Default::default();
    let ckey = |k: ObjectKind, ns: &str, name: &str| format!("{}/{ns}/{name}", k.as_str());
    for path in inputs {
        let file = display_name(path);
        let mut src = open_input(path)?;
        let mut buf = Vec::new();
        let mut line = 0u64;
        let mut count = 0u64;
        let mut audit_events = 0u64;
        loop {
            buf.clear();
            let read = crate::io::read_line_capped(&mut src, &mut buf)
                .map_err(|e| TraceError::io(path, e))?;
            line += 1;
            match read {
                crate::io::LineRead::Eof => break,
                crate::io::LineRead::TooLong => {
                    return Err(TraceError::at_line(
                        &file,
                        line,
                        "",
                        crate::io::line_too_long(),
                    ))
                }
                crate::io::LineRead::Line => {}
            }
            let text = String::from_utf8_lossy(&buf);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            count += 1;
            let err = |f: &str, m: String| TraceError::at_line(&file, line, f, m);
            let ev: Value = ksim_api::json::parse_value(text)
                .map_err(|e| err("", format!("not valid JSON: {e}")))?;
            if ev
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k != "Event")
            {
                cx.summary.skip("not an audit Event");
                continue;
            }
            if ev.get("auditID").is_some()
                || ev
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("audit.k8s.io/"))
            {
                audit_events += 1;
            }
            let ts_field = if ev.get("stageTimestamp").is_some() {
                "stageTimestamp"
            } else {
                "requestReceivedTimestamp"
            };
            let Some(ts) = ev.get(ts_field).and_then(Value::as_str) else {
                return Err(err("stageTimestamp", "required".into()));
            };
            let t = parse_rfc3339(ts).map_err(|m| err(ts_field, m))?;
            min_t = Some(min_t.map_or(t, |m: i64| m.min(t)));
            let stage = ev
                .get("stage")
                .and_then(Value::as_str)
                .unwrap_or("ResponseComplete");
            if stage != "ResponseComplete" {
                cx.summary.skip(format!("stage {stage}"));
                continue;
            }
            let code = ev
                .pointer("/responseStatus/code")
                .and_then(Value::as_i64)
                .unwrap_or(200);
            if !(200..300).contains(&code) {
                cx.summary.skip("request failed (non-2xx response)");
                continue;
            }
            let verb = ev.get("verb").and_then(Value::as_str).unwrap_or("");
            let oref = ev.get("objectRef").cloned().unwrap_or(Value::Null);
            let resource = oref.get("resource").and_then(Value::as_str).unwrap_or("");
            let sub = oref
                .get("subresource")
                .and_then(Value::as_str)
                .unwrap_or("");
            let ns = oref.get("namespace").and_then(Value::as_str).unwrap_or("");
            let group = oref
                .get("apiGroup")
                .and_then(Value::as_str)
                .filter(|g| !g.is_empty());
            let oname = oref.get("name").and_then(Value::as_str).unwrap_or("");
            let object = ev
                .get("responseObject")
                .filter(|o| {
                    o.get("kind")
                        .and_then(Value::as_str)
                        .is_some_and(|k| k != "Status")
                })
                .or_else(|| ev.get("requestObject"))
                .filter(|o| o.is_object());
            let obj_field = if ev.get("responseObject").is_some() {
                "responseObject"
            } else {
                "requestObject"
            };
            if matches!(verb, "get" | "list" | "watch") {
                cx.summary.skip("read-only verb (get/list/watch)");
                continue;
            }
            match (resource, sub, verb) {
                ("pods", "", "create") => {
                    let Some(o) = object else {
                        cx.summary
                            .skip("pod create without object (audit level Metadata)");
                        continue;
                    };
                    let mut pod = decode_pod(o, obj_field).map_err(|(f, m)| err(&f, m))?;
                    if !ns.is_empty() {
                        pod.metadata.namespace = ns.to_string();
                    }
                    let pns = pod.metadata.namespace.clone();
                    let owned = pod
                        .metadata
                        .owner_references
                        .iter()
                        .find(|r| r.controller == Some(true))
                        .is_some_and(|r| {
                            ObjectKind::from_kind(&r.kind).is_some_and(|k| {
                                controllers.contains_key(&ckey(k, &pns, &r.name))
                                    || managed.contains(&ckey(k, &pns, &r.name))
                                    || (k == ObjectKind::ReplicaSet
                                        && (deployment_set(
                                            &r.name,
                                            pod.metadata.labels.get("pod-template-hash"),
                                        )
                                        .is_some_and(|d| {
                                            controllers.contains_key(&ckey(
                                                ObjectKind::Deployment,
                                                &pns,
                                                d,
                                            ))
                                        })))
                            })
                        });
                    if owned {
                        owned_pods.insert(pod.key());
                        cx.summary.skip(
                            "pod create by an imported controller (ksim's controller creates its own)",
                        );
                        continue;
                    }
                    pod.status = Default::default();
                    let key = pod.key();
                    created.insert(key.clone());
                    if pod.spec.node_name.is_empty() {
                        held.insert(key, HeldPod { at: t, pod });
                    } else {
                        build::create(cx, t, pod, None, |m| err("", m))?;
                    }
                }
                ("pods", "binding", "create") | ("bindings", "", "create") => {
                    bindings += 1;
                    let pod_name = if resource == "bindings" {
                        object
                            .and_then(|o| o.pointer("/metadata/name"))
                            .and_then(Value::as_str)
                            .unwrap_or(oname)
                    } else {
                        oname
                    };
                    let node = object
                        .and_then(|o| o.pointer("/target/name"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let key = format!("{ns}/{pod_name}");
                    match held.remove(&key) {
                        Some(mut h) => {
                            let a = &mut h.pod.metadata.annotations;
                            if !node.is_empty() {
                                a.insert("ksim.io/observed-node".into(), node.to_string());
                            }
                            a.insert(
                                "ksim.io/observed-binding-delay".into(),
                                crate::check::format_duration(ksim_engine::SimDuration(t - h.at)),
                            );
                            build::create(cx, h.at, h.pod, None, |m| err("", m))?;
                        }
                        None if owned_pods.contains(&key) => cx
                            .summary
                            .skip("binding of a pod of an imported controller"),
                        None => cx.summary.skip("binding of a pod not created in the log"),
                    }
                }
                ("pods", "", "delete") => {
                    let key = format!("{ns}/{oname}");
                    if let Some(h) = held.remove(&key) {
                        build::create(cx, h.at, h.pod, None, |m| err("", m))?;
                    }
                    if created.remove(&key) {
                        cx.sink.push(
                            t,
                            InputEvent::DeletePod {
                                namespace: ns.to_string(),
                                name: oname.to_string(),
                            },
                        )?;
                    } else if owned_pods.remove(&key) {
                        cx.summary.skip(
                            "delete of a pod of an imported controller (ksim's controller manages its pods)",
                        );
                    } else {
                        cx.summary
                            .skip("delete of a pod created before the log started");
                    }
                }
                ("pods", _, _) => cx.summary.skip(format!(
                    "pods{} {verb} (not replayed)",
                    if sub.is_empty() {
                        String::new()
                    } else {
                        format!("/{sub}")
                    }
                )),
                ("nodes", "", "create") => {
                    let Some(o) = object else {
                        cx.summary
                            .skip("node create without object (audit level Metadata)");
                        continue;
                    };
                    let node = decode_node(o, obj_field).map_err(|(f, m)| err(&f, m))?;
                    let name = node.metadata.name.clone();
                    nodes.insert(name, node.clone());
                    cx.sink.push(
                        t,
                        InputEvent::AddNode {
                            node: Box::new(node),
                        },
                    )?;
                }
                ("nodes", "" | "status", "update" | "patch") => {
                    let Some(o) =
                        object.filter(|_| verb == "update" || ev.get("responseObject").is_some())
                    else {
                        cx.summary.skip(
                            "node patch without responseObject (audit level below RequestResponse)",
                        );
                        continue;
                    };
                    let node = decode_node(o, obj_field).map_err(|(f, m)| err(&f, m))?;
                    let name = node.metadata.name.clone();
                    match nodes.get(&name) {
                        None => {
                            // Existed before the log: part of the initial cluster.
                            cx.nodes.push(node.clone());
                            nodes.insert(name, node);
                        }
                        Some(old) if relevant(old) == relevant(&node) => {
                            cx.summary
                                .skip("node update without scheduling-relevant change");
                        }
                        Some(_) => {
                            nodes.insert(name, node.clone());
                            cx.sink.push(
                                t,
                                InputEvent::UpdateNode {
                                    node: Box::new(node),
                                },
                            )?;
                        }
                    }
                }
                ("nodes", "", "delete") => {
                    if nodes.remove(oname).is_some() {
                        cx.sink.push(
                            t,
                            InputEvent::RemoveNode {
                                name: oname.to_string(),
                            },
                        )?;
                    } else {
                        cx.summary.skip("delete of a node never seen in the log");
                    }
                }
                ("nodes", _, _) => cx.summary.skip(format!("nodes {verb} (not replayed)")),
                (r, _, _) if controller_kind(group, r).is_some() => {
                    let Some(kind) = controller_kind(group, r) else {
                        continue;
                    };
                    let cev = ControllerEvent {
                        kind,
                        resource: r,
                        ns,
                        name: oname,
                        sub,
                        verb,
                        object,
                        obj_field,
                        has_response: ev.get("responseObject").is_some(),
                    };
                    let state = ControllerState {
                        controllers: &mut controllers,
                        managed: &mut managed,
                    };
                    if let Some(e) = controller_event(&cev, state, cx, &err)? {
                        cx.sink.push(t, e)?;
                    }
                }
                (r, _, _) if super::audit_dra::dra_kind(group, r).is_some() => {
                    let Some(kind) = super::audit_dra::dra_kind(group, r) else {
                        continue;
                    };
                    let rec = super::audit_dra::DraRecord {
                        kind,
                        resource: r,
                        ns,
                        name: oname,
                        sub,
                        verb,
                        object,
                        obj_field,
                        has_response: ev.get("responseObject").is_some(),
                    };
                    if let Some(e) = super::audit_dra::dra_event(&rec, &mut dra, cx, &err)? {
                        cx.sink.push(t, e)?;
                    }
                }
                (r, _, _) => cx.summary.skip(format!(
                    "resource {:?} not replayed",
                    if r.is_empty() { "(none)" } else { r }
                )),
            }
        }
        if count > 0 && audit_events == 0 {
            // A pod list, a trace or any other JSON Lines file would otherwise import as
            // "nothing happened" with exit 0.
            return Err(TraceError::at_field(
                &file,
                "",
                format!(
                    "not a Kubernetes audit log: none of its {count} lines is an audit.k8s.io Event \
                     (with apiVersion audit.k8s.io/v1 or an auditID); pass the API server's \
                     --audit-log-path output in JSON format"
                ),
            ));
        }
        cx.summary.read.insert(file, count);
    }
    // Pods never bound or deleted within the log: created at their time, still pending.
    for (_, h) in std::mem::take(&mut held) {
        let name = h.pod.key();
        build::create(cx, h.at, h.pod, None, |m| {
            TraceError::at_field("audit log", name.clone(), m)
        })?;
    }
    if bindings > 0 {
        cx.summary.note(format!(
            "{bindings} bindings observed: the simulator makes its own; the observed node is in the annotation ksim.io/observed-node"
        ));
    }
    cx.time_base = min_t.unwrap_or(0);
    Ok(())
}

/// One controller record of the log, as [`import`] read it.
struct ControllerEvent<'a> {
    kind: ObjectKind,
    /// The objectRef's resource (`deployments`), as the import table names it.
    resource: &'a str,
    ns: &'a str,
    name: &'a str,
    sub: &'a str,
    verb: &'a str,
    object: Option<&'a Value>,
    obj_field: &'a str,
    has_response: bool,
}

/// What the import remembers of controllers across records.
struct ControllerState<'a> {
    controllers: &'a mut HashMap<String, Value>,
    managed: &'a mut std::collections::HashSet<String>,
}

/// The trace event for a controller record, or `None` when it is skipped (counted by reason).
fn controller_event(
    e: &ControllerEvent<'_>,
    st: ControllerState<'_>,
    cx: &mut ImportContext<'_>,
    err: &dyn Fn(&str, String) -> TraceError,
) -> Result<Option<InputEvent>, TraceError> {
    let kind = e.kind;
    let plural = e.resource;
    let key_of = |ns: &str, name: &str| format!("{}/{ns}/{name}", kind.as_str());
    let decode = |v: &Value| decode_object(v, e.obj_field).map_err(|(f, m)| err(&f, m));
    // The object as a trace carries it: no status (the simulated controller keeps its own),
    // no managedFields (bulk), the namespace of the request.
    let clean = |o: &Value| {
        let mut v = o.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("status");
        }
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
            if kind.namespaced() && !e.ns.is_empty() {
                m.insert("namespace".into(), Value::String(e.ns.to_string()));
            }
        }
        v
    };
    match (e.sub, e.verb) {
        ("", "create") => {
            let Some(o) = e.object else {
                cx.summary.skip(format!(
                    "{plural} create without object (audit level Metadata)"
                ));
                return Ok(None);
            };
            let v = clean(o);
            if let Some(parent) = managing_kind(kind) {
                if let Some((ok, on)) = controller_owner(&v).filter(|(k, _)| k == parent) {
                    let ns = v
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("default");
                    let name = v
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or(e.name);
                    if st.controllers.contains_key(&format!("{ok}/{ns}/{on}")) {
                        st.managed.insert(format!("{}/{ns}/{name}", kind.as_str()));
                        cx.summary.skip(format!(
                            "{} create by an imported {parent} (ksim's {parent} creates its own)",
                            kind.as_str()
                        ));
                        return Ok(None);
                    }
                    // A Job of a CronJob created before the log runs as a Job of its own.
                    if kind == ObjectKind::ReplicaSet {
                        cx.summary
                            .skip("ReplicaSet of a Deployment not imported from the log");
                        return Ok(None);
                    }
                }
            }
            let obj = decode(&v)?;
            st.controllers
                .insert(key_of(&obj.metadata().namespace, obj.name()), v);
            Ok(Some(InputEvent::CreateObject {
                object: Box::new(obj),
            }))
        }
        ("", "delete") => {
            let ns = if kind.namespaced() {
                if e.ns.is_empty() {
                    "default"
                } else {
                    e.ns
                }
            } else {
                ""
            };
            if st.controllers.remove(&key_of(ns, e.name)).is_none() {
                skip_unknown(kind, e, &*st.managed, cx);
                return Ok(None);
            }
            Ok(Some(InputEvent::DeleteObject {
                object_kind: kind,
                namespace: ns.to_string(),
                name: e.name.to_string(),
            }))
        }
        ("", "update" | "patch") => {
            let Some(o) = e.object.filter(|_| e.verb == "update" || e.has_response) else {
                cx.summary.skip(format!(
                    "{plural} {} without the object (audit level below {})",
                    e.verb,
                    if e.verb == "patch" {
                        "RequestResponse"
                    } else {
                        "Request"
                    }
                ));
                return Ok(None);
            };
            let v = clean(o);
            let ns = if kind.namespaced() {
                v.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("default")
            } else {
                ""
            };
            let name = v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(e.name);
            let key = key_of(ns, name);
            let Some(old) = st.controllers.get(&key) else {
                skip_unknown(kind, e, &*st.managed, cx);
                return Ok(None);
            };
            if desired(old) == desired(&v) {
                cx.summary
                    .skip(format!("{plural} {} without spec change", e.verb));
                return Ok(None);
            }
            let obj = decode(&v)?;
            st.controllers.insert(key, v);
            Ok(Some(InputEvent::UpdateObject {
                object: Box::new(obj),
            }))
        }
        ("scale", "update" | "patch")
            if matches!(
                kind,
                ObjectKind::Deployment | ObjectKind::ReplicaSet | ObjectKind::StatefulSet
            ) =>
        {
            // A Scale object (responseObject, or an update's requestObject) and a merge patch
            // `{"spec": {"replicas": n}}` (a patch's requestObject) both carry spec.replicas.
            let replicas = e.object.and_then(|o| o.pointer("/spec/replicas"));
            let Some(replicas) = replicas else {
                cx.summary.skip(format!(
                    "{plural}/scale {} without spec.replicas (audit level Metadata, or a JSON patch)",
                    e.verb
                ));
                return Ok(None);
            };
            let n = match replicas.as_i64() {
                Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => n,
                _ => {
                    return Err(err(
                        &format!("{}.spec.replicas", e.obj_field),
                        format!(
                            "expected a replica count from 0 to {}, got {replicas}",
                            i32::MAX
                        ),
                    ))
                }
            };
            let ns = if e.ns.is_empty() { "default" } else { e.ns };
            let key = key_of(ns, e.name);
            let Some(old) = st.controllers.get_mut(&key) else {
                skip_unknown(kind, e, &*st.managed, cx);
                return Ok(None);
            };
            if old.pointer("/spec/replicas").and_then(Value::as_i64) == Some(n) {
                cx.summary
                    .skip(format!("{plural}/scale {} without change", e.verb));
                return Ok(None);
            }
            if let Some(spec) = old.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("replicas".into(), Value::from(n));
            }
            let obj = decode(old)?;
            Ok(Some(InputEvent::UpdateObject {
                object: Box::new(obj),
            }))
        }
        ("status", _) => {
            cx.summary.skip(format!(
                "{plural}/status {} (the simulated controller keeps its own status)",
                e.verb
            ));
            Ok(None)
        }
        (sub, verb) => {
            cx.summary.skip(if sub.is_empty() {
                format!("{plural} {verb} (not replayed)")
            } else {
                format!("{plural}/{sub} {verb} (not replayed)")
            });
            Ok(None)
        }
    }
}

/// Counts an update, scale or delete of a controller the import does not hold.
fn skip_unknown(
    kind: ObjectKind,
    e: &ControllerEvent<'_>,
    managed: &std::collections::HashSet<String>,
    cx: &mut ImportContext<'_>,
) {
    let ns = if e.ns.is_empty() { "default" } else { e.ns };
    let parent = managing_kind(kind)
        .filter(|_| managed.contains(&format!("{}/{ns}/{}", kind.as_str(), e.name)));
    if let Some(parent) = parent {
        cx.summary.skip(format!(
            "{} {} by an imported {parent} (ksim's {parent} manages its own)",
            kind.as_str(),
            if e.sub.is_empty() {
                e.verb.to_string()
            } else {
                format!("{}/{}", e.sub, e.verb)
            }
        ));
    } else {
        cx.summary.skip(format!(
            "{} of a {} created before the log (its earlier state is unknown)",
            if e.sub.is_empty() {
                e.verb.to_string()
            } else {
                format!("{}/{}", e.sub, e.verb)
            },
            kind.as_str()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(
            parse_rfc3339("1970-01-02T00:00:01.5Z").unwrap(),
            86_401_500_000
        );
        assert_eq!(
            parse_rfc3339("2024-03-01T12:00:00.000001+01:00").unwrap(),
            parse_rfc3339("2024-03-01T11:00:00.000001Z").unwrap()
        );
        assert_eq!(
            parse_rfc3339("2000-03-01T00:00:00Z").unwrap(),
            951_868_800_000_000
        );
        for bad in [
            "",
            "2024-13-01T00:00:00Z",
            "yesterday",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            // Multi-byte characters in the zone are an error, never a panic (issue 16).
            "2024-01-01T00:00:00+0\u{e9}:00",
            "2024-01-01T00:00:00+\u{e9}\u{e9}00",
            "2024-01-01T00:00:00\u{2212}01:00",
            "2024-01-01T00:00:00+01:\u{e9}",
            "2024-01-01T00:00:00.5\u{e9}",
            "2024-01-01T00:00:00+01:60",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }
}
