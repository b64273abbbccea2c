//! Cluster objects and workload controllers of a scenario: `cluster.objectsFiles` and
//! `workload.controllers` Lists read into the cluster's objects and the controllers' creation
//! events (scale factors, run times, the Jobs that would never finish).

use super::*;

/// Reads a List of cluster objects (see [`ClusterSpec::objects_files`]) into `into`; a workload
/// (Deployment, ReplicaSet or StatefulSet with a pod template, DaemonSet, Job) is an error
/// here, as nothing would run it: use [`load_objects_and_workloads`].
pub fn load_objects_into(path: &Path, into: &mut ClusterObjects) -> Result<(), TraceError> {
    let mut workloads = Vec::new();
    load_objects_and_workloads(path, into, &mut workloads)?;
    match workloads.first() {
        Some(w) => Err(TraceError::at_field(
            &display_name(path),
            "items",
            format!(
                "{} {} is a workload: only a scenario's objectsFiles run workload controllers",
                w.kind(),
                w.key()
            ),
        )),
        None => Ok(()),
    }
}

/// Reads a List of cluster objects into `into` and the workloads the engine's controllers run
/// into `workloads` (created at t=0, in file order). A ReplicaSet or StatefulSet without pod
/// template containers stays what it was before controllers existed: a selector for
/// spreading, no pods.
pub fn load_objects_and_workloads(
    path: &Path,
    into: &mut ClusterObjects,
    workloads: &mut Vec<ksim_api::object::ApiObject>,
) -> Result<(), TraceError> {
    let name = display_name(path);
    let text = read_text(path)?;
    let items = flatten_items(parse_documents(&name, &text)?);
    add_items(&name, &items, into, workloads)
}

/// The kinds a `workload.controllers` file may list.
pub const CONTROLLER_KINDS: [&str; 7] = [
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "PriorityClass",
];

/// Reads a `workload.controllers` file: a List of controller objects only (see
/// [`CONTROLLER_KINDS`]; a ReplicaSet or StatefulSet needs pod template containers). `scale`
/// sets each workload's `ksim.io/scale` annotation. ReplicaSets and StatefulSets are also put
/// into `into` (as selectors for spreading) when given, as `objectsFiles` does at t=0.
pub fn load_controllers(
    path: &Path,
    scale: Option<f64>,
    into: &mut ClusterObjects,
    workloads: &mut Vec<ksim_api::object::ApiObject>,
) -> Result<(), TraceError> {
    let name = display_name(path);
    let text = read_text(path)?;
    let mut items = flatten_items(parse_documents(&name, &text)?);
    for (i, v) in items.iter_mut().enumerate() {
        let kind = ksim_api::load::kind_of(v);
        if !CONTROLLER_KINDS.contains(&kind) {
            let what = if kind.is_empty() {
                "missing kind".to_string()
            } else {
                format!("{kind:?} is not a controller")
            };
            return Err(TraceError::at_field(
                &name,
                format!("items[{i}]: kind"),
                format!(
                    "{what}: a controllers file lists {} (other objects go in cluster.objectsFiles)",
                    CONTROLLER_KINDS.join(", ")
                ),
            ));
        }
        if matches!(kind, "ReplicaSet" | "StatefulSet")
            && v.pointer("/spec/template/spec/containers")
                .and_then(Value::as_array)
                .is_none_or(|c| c.is_empty())
        {
            return Err(TraceError::at_field(
                &name,
                format!("items[{i}]: spec.template.spec.containers"),
                format!(
                    "a {kind} in a controllers file needs a pod template with containers (one \
                     without is only a selector for spreading: list it in cluster.objectsFiles)"
                ),
            ));
        }
        if let (Some(f), true) = (scale, kind != "PriorityClass") {
            set_annotation(v, ksim_engine::config::SCALE_ANNOTATION, &f.to_string());
        }
    }
    add_items(&name, &items, into, workloads)
}

/// A warning per Job or CronJob whose pods would never finish: no `ksim.io/run-for`
/// annotation on its pod template and no `workload.runTimes` entry for it.
pub(super) fn jobs_without_run_time<'a>(
    source: &str,
    objects: impl Iterator<Item = &'a ksim_api::object::ApiObject>,
    run_times: &ksim_engine::config::ControllerRunTimes,
) -> Vec<String> {
    use ksim_api::object::ApiObject;
    let mut out = Vec::new();
    for o in objects {
        let (kind, w, template) = match o {
            ApiObject::Job(w) => ("Job", w, &w.spec.template),
            ApiObject::CronJob(w) => match &w.spec.job_template {
                Some(jt) => ("CronJob", w, &jt.spec.template),
                None => continue,
            },
            _ => continue,
        };
        let ns = if w.metadata.namespace.is_empty() {
            "default"
        } else {
            &w.metadata.namespace
        };
        let annotated = template
            .metadata
            .annotations
            .contains_key("ksim.io/run-for");
        if annotated
            || run_times.named(kind, ns, &w.metadata.name).is_some()
            || run_times.fallback().is_some()
        {
            continue;
        }
        out.push(format!(
            "{source}: {kind} {ns}/{}: its pods have no run time (no ksim.io/run-for annotation \
             on the pod template, no workload.runTimes entry): they run until deleted and the \
             Job never completes",
            w.metadata.name
        ));
    }
    out
}

/// Sets `metadata.annotations[key]` of an object as written (creating the maps it needs).
fn set_annotation(v: &mut Value, key: &str, value: &str) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if !meta.is_object() {
        *meta = Value::Object(Default::default());
    }
    if let Some(meta) = meta.as_object_mut() {
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if !ann.is_object() {
            *ann = Value::Object(Default::default());
        }
        if let Some(ann) = ann.as_object_mut() {
            ann.insert(key.to_string(), Value::String(value.to_string()));
        }
    }
}

/// Adds the items of one List (file `name`) to `into` and `workloads`.
fn add_items(
    name: &str,
    items: &[Value],
    into: &mut ClusterObjects,
    workloads: &mut Vec<ksim_api::object::ApiObject>,
) -> Result<(), TraceError> {
    let name = name.to_string();
    for (i, v) in items.iter().enumerate() {
        let field = |f: String| format!("items[{i}]: {f}");
        let err = |e: ksim_api::load::LoadError| match e {
            ksim_api::load::LoadError::Field { path, message, .. } => {
                TraceError::at_field(&name, field(path), message)
            }
            other => TraceError::at_field(&name, format!("items[{i}]"), other.to_string()),
        };
        let kind = ksim_api::load::kind_of(v);
        // apiVersion and kind, then strict field validation, for every kind ksim knows the
        // schema of (Namespace, Service, ReplicationController... which are read here).
        if ksim_api::strict::knows_kind(kind) {
            ksim_api::strict::check_document(kind, v)
                .map_err(|(f, m)| TraceError::at_field(&name, field(f), m))?;
        }
        let str_at = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
        if str_at("/metadata/name").is_empty() && !str_at("/metadata/generateName").is_empty() {
            // Only the API server names an object, on create: a generateName object is created
            // at t=0 (as the workloads are) and the merged source names it from the run seed.
            let has_template = v
                .pointer("/spec/template/spec/containers")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty());
            let creatable = match ObjectKind::from_kind(kind) {
                Some(ObjectKind::ReplicaSet | ObjectKind::StatefulSet) => has_template,
                Some(_) => true,
                None => false,
            };
            if !creatable {
                return Err(TraceError::at_field(
                    &name,
                    field("metadata.name".into()),
                    format!(
                        "a {kind} needs a name: generateName is supported for nodes, storage \
                         objects, PDBs, Services and workloads with a pod template"
                    ),
                ));
            }
            let obj = decode_object_to_create(v, "")
                .map_err(|(f, m)| TraceError::at_field(&name, field(f), m))?;
            workloads.push(obj);
            continue;
        }
        match kind {
            "Namespace" => {
                let mut ns: ksim_api::Namespace =
                    ksim_api::load::decode(&name, v).map_err(err)?;
                ksim_api::defaults::default_namespace(&mut ns);
                into.namespaces.insert(ns.metadata.name.clone(), ns);
            }
            "Service" => into.services.push(ksim_api::load::decode(&name, v).map_err(err)?),
            "ReplicationController" => into
                .replication_controllers
                .push(ksim_api::load::decode(&name, v).map_err(err)?),
            "ReplicaSet" | "StatefulSet" => {
                let set = ksim_api::load::decode(&name, v).map_err(err)?;
                if ksim_api::load::kind_of(v) == "ReplicaSet" {
                    into.replica_sets.push(set);
                } else {
                    into.stateful_sets.push(set);
                }
                let has_template = v
                    .pointer("/spec/template/spec/containers")
                    .and_then(Value::as_array)
                    .is_some_and(|c| !c.is_empty());
                if has_template {
                    let obj = decode_object(v, "")
                        .map_err(|(f, m)| TraceError::at_field(&name, field(f), m))?;
                    workloads.push(obj);
                }
            }
            k if ObjectKind::from_kind(k).is_some_and(|k| {
                k.is_workload() || admitting(k)
            }) =>
            {
                let obj = decode_object(v, "")
                    .map_err(|(f, m)| TraceError::at_field(&name, field(f), m))?;
                if workloads
                    .iter()
                    .any(|w| w.kind() == obj.kind() && w.key() == obj.key())
                {
                    return Err(TraceError::at_field(
                        &name,
                        field("metadata.name".into()),
                        format!("{} {} is listed twice", obj.kind(), obj.key()),
                    ));
                }
                if admitting(obj.kind()) {
                    // Classes, LimitRanges and quotas first: the workloads' pods are admitted
                    // against them.
                    let at = workloads
                        .iter()
                        .position(|w| !admitting(w.kind()))
                        .unwrap_or(workloads.len());
                    workloads.insert(at, obj);
                } else {
                    workloads.push(obj);
                }
            }
            "PodDisruptionBudget" => {
                // Defaulted as the API server would (its namespace `default` when absent), as a
                // trace's `CreateObject` is: a PDB without a namespace protects the pods of
                // `default` (it protected none before: issue 34's objectsFiles PDB).
                let obj = decode_object(v, "")
                    .map_err(|(f, m)| TraceError::at_field(&name, field(f), m))?;
                if into.get_object(obj.kind(), obj.namespace(), obj.name()).is_some() {
                    return Err(TraceError::at_field(
                        &name,
                        field("metadata.name".into()),
                        format!("{} {} is listed twice", obj.kind(), obj.key()),
                    ));
                }
                into.put_object(obj);
            }
            k if ObjectKind::from_kind(k).is_some() => {
                // Storage objects, defaulted as the API server would.
                let obj = decode_object(v, "").map_err(|(f, m)| TraceError::at_field(&name, field(f), m))?;
                if into.get_object(obj.kind(), obj.namespace(), obj.name()).is_some() {
                    return Err(TraceError::at_field(
                        &name,
                        field("metadata.name".into()),
                        format!("{} {} is listed twice", obj.kind(), obj.key()),
                    ));
                }
                into.put_object(obj);
            }
            other => {
                return Err(TraceError::at_field(
                    &name,
                    field("kind".into()),
                    format!("{other:?} is not a cluster object ksim reads (Namespace, Service, ReplicationController, ReplicaSet, StatefulSet, Deployment, DaemonSet, Job, PriorityClass, PodDisruptionBudget, PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment, DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate)"),
                ))
            }
        }
    }
    Ok(())
}
