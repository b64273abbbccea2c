//! Variant files: reading and checking them ([`load_variant`]) and applying one to a branch at
//! the fork instant ([`apply_variant`]). The format is in the parent module's doc.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail};
use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::meta::{LabelSelector, Selector};
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::Node;
use ksim_engine::{InputEvent, SimTime, Simulation};
use ksim_trace::scenario::{pool_nodes, NodePool};
use ksim_trace::TraceError;
use serde_json::Value;

/// A variant file, read and checked.
#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    /// The file as named on the command line, for errors.
    pub source: String,
    /// Its text, copied into the branch's folder.
    pub text: String,
    pub scheduler: Option<KubeSchedulerConfiguration>,
    pub add_nodes: Vec<(String, Node)>,
    pub remove_names: Vec<(String, String)>,
    pub remove_selector: Option<(String, Selector)>,
    pub scale: Vec<Scale>,
    /// `objects:` (field path, object): applied at the fork instant as a trace's
    /// `UpdateObject` when the object exists then, as its `CreateObject` otherwise.
    pub objects: Vec<(String, ApiObject)>,
}

/// One `scale:` entry.
#[derive(Debug, Clone)]
pub struct Scale {
    pub field: String,
    pub kind: ObjectKind,
    pub namespace: String,
    pub name: String,
    pub to: ScaleTo,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScaleTo {
    Replicas(i32),
    Factor(f64),
}

/// The line of `field` (a path like `scale.deployment/web` or `addPools[1].count`) in `text`:
/// the line of its top-level key, then of its first sub-key or list item found below it.
fn line_of(text: &str, field: &str) -> Option<u64> {
    let top_end = field.find(['.', '[']).unwrap_or(field.len());
    let top = &field[..top_end];
    let lines: Vec<&str> = text.lines().collect();
    let is_key = |l: &str| {
        let t = l
            .trim_start()
            .trim_start_matches(['{', ' '])
            .trim_start_matches('"');
        t.starts_with(&format!("{top}:")) || t.starts_with(&format!("{top}\":"))
    };
    // A top-level key is unindented in YAML; in JSON (or flow style) take the first match.
    let start = lines
        .iter()
        .position(|l| !l.starts_with([' ', '\t', '#']) && is_key(l))
        .or_else(|| lines.iter().position(|l| is_key(l)))?;
    let rest = &field[top_end..];
    let mut line = start;
    if let Some(idx) = rest
        .strip_prefix('[')
        .and_then(|r| r.split(']').next())
        .and_then(|n| n.parse::<usize>().ok())
    {
        // The idx-th list item below the key.
        let mut seen = 0;
        for (i, l) in lines.iter().enumerate().skip(start + 1) {
            if !l.starts_with([' ', '\t', '-']) && !l.trim().is_empty() && !l.starts_with('#') {
                break;
            }
            if l.trim_start().starts_with("- ") || l.trim() == "-" {
                if seen == idx {
                    line = i;
                    break;
                }
                seen += 1;
            }
        }
    } else if let Some(sub) = rest.strip_prefix('.') {
        let sub = sub.split(['.', '[']).next().unwrap_or(sub);
        for (i, l) in lines.iter().enumerate().skip(start + 1) {
            if !l.starts_with([' ', '\t', '-']) && !l.trim().is_empty() && !l.starts_with('#') {
                break;
            }
            let t = l
                .trim_start()
                .trim_start_matches("- ")
                .trim_start_matches('"');
            if t.starts_with(&format!("{sub}:")) || t.starts_with(&format!("{sub}\":")) {
                line = i;
                break;
            }
        }
    }
    Some(line as u64 + 1)
}

/// An error at `field` of the variant file `source`, with the field's line when found.
fn at(source: &str, text: &str, field: &str, message: impl Into<String>) -> anyhow::Error {
    let e = match line_of(text, field) {
        Some(l) => TraceError::at_line(source, l, field, message),
        None => TraceError::at_field(source, field, message),
    };
    anyhow!(e)
}

/// Reads and checks a variant file.
pub fn load_variant(path: &Path) -> anyhow::Result<Variant> {
    let source = path.display().to_string();
    let text = ksim_trace::io::read_text(path)?;
    let docs = ksim_trace::nodes::parse_documents(&source, &text)?;
    let doc = match <[Value; 1]>::try_from(docs) {
        Ok([d]) => d,
        Err(d) if d.is_empty() => Value::Object(Default::default()),
        Err(d) => bail!(TraceError::at_field(
            &source,
            "",
            format!("expected one YAML document, found {}", d.len())
        )),
    };
    let Value::Object(map) = doc else {
        bail!(TraceError::at_field(
            &source,
            "",
            format!(
                "a variant is a mapping (name, schedulerConfig, addNodes, addPools, \
                 removeNodes, scale, objects), got {}",
                ksim_api::json::value_kind(&doc)
            )
        ));
    };
    let err = |field: &str, m: String| at(&source, &text, field, m);
    let stem = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "variant".into());
    let stem = stem
        .trim_end_matches(".yaml")
        .trim_end_matches(".yml")
        .trim_end_matches(".json")
        .to_string();
    let mut v = Variant {
        name: stem,
        source: source.clone(),
        text: text.clone(),
        scheduler: None,
        add_nodes: Vec::new(),
        remove_names: Vec::new(),
        remove_selector: None,
        scale: Vec::new(),
        objects: Vec::new(),
    };
    let base = path.parent().unwrap_or(Path::new("."));
    for (key, val) in &map {
        match key.as_str() {
            "name" => {
                let Some(n) = val.as_str() else {
                    return Err(err("name", "expected a string".into()));
                };
                if n.is_empty()
                    || n == "."
                    || n == ".."
                    || !n
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                {
                    return Err(err(
                        "name",
                        format!("{n:?} is not a folder name (letters, digits, '-', '_', '.')"),
                    ));
                }
                v.name = n.to_string();
            }
            "schedulerConfig" => {
                v.scheduler = Some(match val {
                    Value::String(p) => {
                        let p = if Path::new(p).is_absolute() {
                            PathBuf::from(p)
                        } else {
                            base.join(p)
                        };
                        ksim_trace::scenario::load_scheduler_config(&p)
                            .map_err(|e| err("schedulerConfig", e.to_string()))?
                    }
                    Value::Object(_) => KubeSchedulerConfiguration::from_value(val)
                        .map_err(|e| err("schedulerConfig", e.to_string()))?,
                    _ => {
                        return Err(err(
                            "schedulerConfig",
                            "expected a file name or a KubeSchedulerConfiguration mapping".into(),
                        ))
                    }
                });
            }
            "addNodes" => {
                let Some(items) = val.as_array() else {
                    return Err(err("addNodes", "expected a list of Node objects".into()));
                };
                for (i, item) in items.iter().enumerate() {
                    let f = format!("addNodes[{i}]");
                    let n =
                        ksim_trace::native::decode_node(item, &f).map_err(|(p, m)| err(&p, m))?;
                    v.add_nodes.push((f, n));
                }
            }
            "addPools" => {
                let Some(items) = val.as_array() else {
                    return Err(err(
                        "addPools",
                        "expected a list of pools (name, count, template)".into(),
                    ));
                };
                for (i, item) in items.iter().enumerate() {
                    let f = format!("addPools[{i}]");
                    let pool: NodePool = serde_path_to_error::deserialize(item).map_err(|e| {
                        let p = e.path().to_string();
                        let p = if p == "." {
                            f.clone()
                        } else {
                            format!("{f}.{p}")
                        };
                        err(&p, e.inner().to_string())
                    })?;
                    for n in pool_nodes(&pool, &f).map_err(|(p, m)| err(&p, m))? {
                        v.add_nodes.push((f.clone(), n));
                    }
                }
            }
            "removeNodes" => parse_remove(val, &mut v, &err)?,
            "objects" => {
                let Some(items) = val.as_array() else {
                    return Err(err(
                        "objects",
                        "expected a list of Kubernetes objects (as a trace's CreateObject \
                         carries)"
                            .into(),
                    ));
                };
                for (i, item) in items.iter().enumerate() {
                    let f = format!("objects[{i}]");
                    let o =
                        ksim_trace::native::decode_object(item, &f).map_err(|(p, m)| err(&p, m))?;
                    v.objects.push((f, o));
                }
            }
            "scale" => {
                let Some(m) = val.as_object() else {
                    return Err(err(
                        "scale",
                        "expected a mapping KIND/NAME: replicas (or a factor \"x1.5\")".into(),
                    ));
                };
                for (k, to) in m {
                    let f = format!("scale.{k}");
                    v.scale.push(parse_scale(k, to).map_err(|m| err(&f, m))?);
                    if let Some(s) = v.scale.last_mut() {
                        s.field = f;
                    }
                }
            }
            other => {
                return Err(err(
                    other,
                    "unknown field (expected name, schedulerConfig, addNodes, addPools, \
                     removeNodes, scale or objects)"
                        .into(),
                ))
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (f, n) in &v.add_nodes {
        if !seen.insert(n.metadata.name.clone()) {
            return Err(err(f, format!("node {:?} is added twice", n.metadata.name)));
        }
    }
    let ns = |o: &ApiObject| match (o.kind().namespaced(), o.namespace()) {
        (true, "") => "default".to_string(),
        (_, n) => n.to_string(),
    };
    let mut seen = std::collections::BTreeSet::new();
    for (f, o) in &v.objects {
        let id = (o.kind(), ns(o), o.name().to_string());
        if !seen.insert(id.clone()) {
            return Err(err(f, format!("{} {}/{} is given twice", id.0, id.1, id.2)));
        }
        if let Some(s) = v
            .scale
            .iter()
            .find(|s| s.kind == id.0 && s.namespace == id.1 && s.name == id.2)
        {
            return Err(err(
                f,
                format!(
                    "{} {}/{} is also scaled by {}: give its replicas in the object instead",
                    id.0, id.1, id.2, s.field
                ),
            ));
        }
    }
    Ok(v)
}

fn parse_remove(
    val: &Value,
    v: &mut Variant,
    err: &dyn Fn(&str, String) -> anyhow::Error,
) -> anyhow::Result<()> {
    let names = |list: &Value, field: &str, v: &mut Variant| -> anyhow::Result<()> {
        let Some(items) = list.as_array() else {
            return Err(err(field, "expected a list of node names".into()));
        };
        for (i, n) in items.iter().enumerate() {
            let f = format!("{field}[{i}]");
            match n.as_str() {
                Some(s) if !s.is_empty() => v.remove_names.push((f, s.to_string())),
                _ => return Err(err(&f, "expected a node name".into())),
            }
        }
        Ok(())
    };
    match val {
        Value::Array(_) => names(val, "removeNodes", v),
        Value::Object(m) => {
            for (k, x) in m {
                match k.as_str() {
                    "names" => names(x, "removeNodes.names", v)?,
                    "selector" => {
                        let f = "removeNodes.selector";
                        let sel = match x {
                            Value::String(s) => {
                                let mut labels = std::collections::BTreeMap::new();
                                for part in s.split(',') {
                                    let Some((k, val)) = part.split_once('=') else {
                                        return Err(err(
                                            f,
                                            format!("selector term {part:?} is not key=value"),
                                        ));
                                    };
                                    if k.trim().is_empty() {
                                        return Err(err(
                                            f,
                                            format!("selector term {part:?} has an empty key"),
                                        ));
                                    }
                                    labels.insert(k.trim().to_string(), val.trim().to_string());
                                }
                                LabelSelector {
                                    match_labels: labels.into_iter().collect(),
                                    ..Default::default()
                                }
                            }
                            _ => serde_path_to_error::deserialize::<_, LabelSelector>(x).map_err(
                                |e| err(f, format!("not a label selector: {}", e.inner())),
                            )?,
                        };
                        let s = Selector::from_label_selector(Some(&sel));
                        if s == Selector::Nothing {
                            return Err(err(f, "an invalid selector operator".into()));
                        }
                        if s == Selector::everything() {
                            return Err(err(f, "an empty selector would remove every node".into()));
                        }
                        v.remove_selector = Some((f.to_string(), s));
                    }
                    other => {
                        return Err(err(
                            &format!("removeNodes.{other}"),
                            "unknown field (expected names or selector)".into(),
                        ))
                    }
                }
            }
            Ok(())
        }
        _ => Err(err(
            "removeNodes",
            "expected a list of node names, or a mapping with names and/or selector".into(),
        )),
    }
}

fn parse_scale(key: &str, to: &Value) -> Result<Scale, String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (kind, namespace, name) = match parts.as_slice() {
        [k, n] => (*k, "default", *n),
        [k, ns, n] => (*k, *ns, *n),
        _ => return Err("expected KIND/NAME or KIND/NAMESPACE/NAME".into()),
    };
    let kind = match kind.to_ascii_lowercase().as_str() {
        "deployment" | "deploy" | "deployments" => ObjectKind::Deployment,
        "replicaset" | "rs" | "replicasets" => ObjectKind::ReplicaSet,
        "statefulset" | "sts" | "statefulsets" => ObjectKind::StatefulSet,
        _ => {
            return Err(format!(
                "{kind:?} cannot be scaled (Deployment, ReplicaSet or StatefulSet)"
            ))
        }
    };
    if namespace.is_empty() || name.is_empty() {
        return Err("expected KIND/NAME or KIND/NAMESPACE/NAME".into());
    }
    let to = match to {
        Value::Number(n) => match n.as_i64() {
            Some(r) if (0..=i64::from(i32::MAX)).contains(&r) => ScaleTo::Replicas(r as i32),
            _ => return Err(format!("replicas {n} is not a whole number >= 0")),
        },
        Value::String(s) => {
            let t = s.trim();
            let f = t
                .strip_prefix(['x', '×'])
                .or_else(|| t.strip_suffix(['x', '×']))
                .and_then(|f| f.trim().parse::<f64>().ok());
            match f {
                Some(f) if f.is_finite() && f >= 0.0 => ScaleTo::Factor(f),
                _ => match t.parse::<i32>() {
                    Ok(r) if r >= 0 => ScaleTo::Replicas(r),
                    _ => {
                        return Err(format!(
                            "{s:?} is neither replicas (a whole number) nor a factor (\"x1.5\")"
                        ))
                    }
                },
            }
        }
        _ => return Err("expected replicas (a whole number) or a factor (\"x1.5\")".into()),
    };
    Ok(Scale {
        field: String::new(),
        kind,
        namespace: namespace.to_string(),
        name: name.to_string(),
        to,
    })
}

/// Changes a branch at the fork instant `t` as its variant says.
pub(super) fn apply_variant(v: &Variant, sim: &mut Simulation, t: SimTime) -> anyhow::Result<()> {
    let err = |field: &str, m: String| at(&v.source, &v.text, field, m);
    if let Some(c) = &v.scheduler {
        sim.set_scheduler_config(c)
            .map_err(|e| err("schedulerConfig", e.to_string()))?;
    }
    let snap = sim.snapshot();
    let mut events = Vec::new();
    let mut removed = std::collections::BTreeSet::new();
    for (f, n) in &v.remove_names {
        if !snap.index.contains_key(n) {
            return Err(err(f, format!("no node {n:?} in the cluster at {t}")));
        }
        if removed.insert(n.clone()) {
            events.push(InputEvent::RemoveNode { name: n.clone() });
        }
    }
    if let Some((f, sel)) = &v.remove_selector {
        let mut names: Vec<String> = snap
            .nodes
            .iter()
            .filter(|n| sel.matches(&n.node.metadata.labels))
            .map(|n| n.name().to_string())
            .collect();
        if names.is_empty() {
            return Err(err(f, format!("selects no node of the cluster at {t}")));
        }
        names.sort();
        for n in names {
            if removed.insert(n.clone()) {
                events.push(InputEvent::RemoveNode { name: n });
            }
        }
    }
    for (f, n) in &v.add_nodes {
        if snap.index.contains_key(&n.metadata.name) && !removed.contains(&n.metadata.name) {
            return Err(err(
                f,
                format!(
                    "node {:?} is already in the cluster at {t}",
                    n.metadata.name
                ),
            ));
        }
        events.push(InputEvent::AddNode {
            node: Box::new(n.clone()),
        });
    }
    // Objects as `kubectl apply` gives them: replaced when they exist, created otherwise.
    for (_, o) in &v.objects {
        let object = Box::new(o.clone());
        events.push(if sim.object_exists(o) {
            InputEvent::UpdateObject { object }
        } else {
            InputEvent::CreateObject { object }
        });
    }
    for s in &v.scale {
        let Some(mut w) = sim.controller_object(s.kind, &s.namespace, &s.name) else {
            return Err(err(
                &s.field,
                format!("no {} {}/{} at {t}", s.kind, s.namespace, s.name),
            ));
        };
        let now = w.spec.replicas.unwrap_or(1);
        let to = match s.to {
            ScaleTo::Replicas(r) => r,
            ScaleTo::Factor(f) => {
                let r = (f64::from(now) * f).ceil();
                if r > f64::from(i32::MAX) {
                    return Err(err(&s.field, format!("{now} × {f} replicas is too many")));
                }
                // A factor stays: later counts the trace gives this controller are multiplied
                // too (`x2` at 11m is still twice the trace's `replicas: 28` at 12m).
                sim.multiply_controller_scale(s.kind, &s.namespace, &s.name, f);
                r as i32
            }
        };
        w.spec.replicas = Some(to);
        // The variant's count is what runs: not multiplied again by the scenario's
        // controllerScale (the current count, which `x` multiplies, already is).
        w.metadata.annotations.insert(
            ksim_engine::config::UNSCALED_ANNOTATION.to_string(),
            "true".to_string(),
        );
        let object = match s.kind {
            ObjectKind::Deployment => ApiObject::Deployment(w),
            ObjectKind::ReplicaSet => ApiObject::ReplicaSet(w),
            _ => ApiObject::StatefulSet(w),
        };
        events.push(InputEvent::UpdateObject {
            object: Box::new(object),
        });
    }
    sim.inject(t, events)
        .map_err(|e| anyhow!("{}: {e}", v.source))?;
    Ok(())
}
