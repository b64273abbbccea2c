//! The Kubernetes Jobs under examples/ (a sweep as an Indexed Job, then its merge) checked
//! against the Job API: every key at every level must be a field of the batch/v1 Job, PodSpec,
//! Container, ... types (so a typo, which the API server would drop or reject, fails here), and
//! the sharding must be consistent: `--shard "${JOB_COMPLETION_INDEX}/N"` with N = completions,
//! the merge reading the folder the shards write, on the same claim.

use serde_json::Value;
use std::path::{Path, PathBuf};

// Field names (JSON) of the Kubernetes API types, as in the API reference (k8s.io/api v1.35).
const TYPE_META: &[&str] = &["apiVersion", "kind"];
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
const JOB: &[&str] = &["metadata", "spec", "status"];
const JOB_SPEC: &[&str] = &[
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "podFailurePolicy",
    "successPolicy",
    "backoffLimit",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    "selector",
    "manualSelector",
    "template",
    "ttlSecondsAfterFinished",
    "completionMode",
    "suspend",
    "podReplacementPolicy",
    "managedBy",
];
const POD_TEMPLATE_SPEC: &[&str] = &["metadata", "spec"];
const POD_SPEC: &[&str] = &[
    "volumes",
    "initContainers",
    "containers",
    "ephemeralContainers",
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "nodeSelector",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "securityContext",
    "imagePullSecrets",
    "hostname",
    "subdomain",
    "affinity",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "priority",
    "dnsConfig",
    "readinessGates",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "overhead",
    "topologySpreadConstraints",
    "setHostnameAsFQDN",
    "os",
    "hostUsers",
    "schedulingGates",
    "resourceClaims",
    "resources",
];
const CONTAINER: &[&str] = &[
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
];
const RESOURCE_REQUIREMENTS: &[&str] = &["limits", "requests", "claims"];
const VOLUME_MOUNT: &[&str] = &[
    "name",
    "readOnly",
    "recursiveReadOnly",
    "mountPath",
    "subPath",
    "mountPropagation",
    "subPathExpr",
];
const ENV_VAR: &[&str] = &["name", "value", "valueFrom"];
/// Volume: its name and one VolumeSource (inlined).
const VOLUME: &[&str] = &[
    "name",
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];
const CONFIG_MAP_VOLUME_SOURCE: &[&str] = &["name", "items", "defaultMode", "optional"];
const PVC_VOLUME_SOURCE: &[&str] = &["claimName", "readOnly"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(name: &str) -> Value {
    let path = root().join("examples").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every key of `v` (an object) at `path` must be in `allowed`; a missing or non-object `v`
/// is an error too.
fn keys(errors: &mut Vec<String>, v: Option<&Value>, path: &str, allowed: &[&str]) {
    match v {
        Some(Value::Object(map)) => {
            for k in map.keys() {
                if !allowed.contains(&k.as_str()) {
                    errors.push(format!("{path}.{k}: not a field of this API type"));
                }
            }
        }
        Some(other) => errors.push(format!("{path}: expected an object, got {other}")),
        None => errors.push(format!("{path}: missing")),
    }
}

fn list<'a>(errors: &mut Vec<String>, v: Option<&'a Value>, path: &str) -> &'a [Value] {
    match v {
        None => &[],
        Some(Value::Array(items)) => items,
        Some(other) => {
            errors.push(format!("{path}: expected a list, got {other}"));
            &[]
        }
    }
}

/// The Job's keys against the API, level by level; the list of problems (empty: it is a Job).
fn job_schema_errors(job: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let e = &mut errors;
    let top: Vec<&str> = TYPE_META.iter().chain(JOB).copied().collect();
    keys(e, Some(job), "", &top);
    if job.get("apiVersion").and_then(Value::as_str) != Some("batch/v1") {
        e.push(format!(
            ".apiVersion: {:?}, not batch/v1",
            job.get("apiVersion")
        ));
    }
    if job.get("kind").and_then(Value::as_str) != Some("Job") {
        e.push(format!(".kind: {:?}, not Job", job.get("kind")));
    }
    keys(e, job.get("metadata"), ".metadata", OBJECT_META);
    let spec = job.get("spec");
    keys(e, spec, ".spec", JOB_SPEC);
    for n in [
        "parallelism",
        "completions",
        "backoffLimit",
        "backoffLimitPerIndex",
    ] {
        if let Some(v) = spec.and_then(|s| s.get(n)) {
            if v.as_u64().is_none() {
                e.push(format!(".spec.{n}: {v} is not a non-negative integer"));
            }
        }
    }
    let template = spec.and_then(|s| s.get("template"));
    keys(e, template, ".spec.template", POD_TEMPLATE_SPEC);
    if let Some(m) = template.and_then(|t| t.get("metadata")) {
        keys(e, Some(m), ".spec.template.metadata", OBJECT_META);
    }
    let pod = template.and_then(|t| t.get("spec"));
    let p = ".spec.template.spec";
    keys(e, pod, p, POD_SPEC);
    // A Job's pods must not restart in place (the API rejects Always).
    match pod
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
    {
        Some("Never" | "OnFailure") => {}
        other => e.push(format!(
            "{p}.restartPolicy: {other:?}, not Never or OnFailure"
        )),
    }
    let containers = list(
        e,
        pod.and_then(|s| s.get("containers")),
        &format!("{p}.containers"),
    );
    if containers.is_empty() {
        e.push(format!("{p}.containers: none"));
    }
    for (i, c) in containers.iter().enumerate() {
        let cp = format!("{p}.containers[{i}]");
        keys(e, Some(c), &cp, CONTAINER);
        for f in ["name", "image"] {
            if c.get(f).and_then(Value::as_str).is_none_or(str::is_empty) {
                e.push(format!("{cp}.{f}: missing"));
            }
        }
        for f in ["command", "args"] {
            for (j, a) in list(e, c.get(f), &format!("{cp}.{f}")).iter().enumerate() {
                if !a.is_string() {
                    e.push(format!("{cp}.{f}[{j}]: {a} is not a string"));
                }
            }
        }
        if let Some(r) = c.get("resources") {
            keys(
                e,
                Some(r),
                &format!("{cp}.resources"),
                RESOURCE_REQUIREMENTS,
            );
        }
        for (j, m) in list(e, c.get("volumeMounts"), &format!("{cp}.volumeMounts"))
            .iter()
            .enumerate()
        {
            keys(e, Some(m), &format!("{cp}.volumeMounts[{j}]"), VOLUME_MOUNT);
        }
        for (j, v) in list(e, c.get("env"), &format!("{cp}.env"))
            .iter()
            .enumerate()
        {
            keys(e, Some(v), &format!("{cp}.env[{j}]"), ENV_VAR);
        }
    }
    let volumes = list(
        e,
        pod.and_then(|s| s.get("volumes")),
        &format!("{p}.volumes"),
    );
    let names: Vec<&str> = volumes
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    for (i, v) in volumes.iter().enumerate() {
        let vp = format!("{p}.volumes[{i}]");
        keys(e, Some(v), &vp, VOLUME);
        if let Some(c) = v.get("configMap") {
            keys(
                e,
                Some(c),
                &format!("{vp}.configMap"),
                CONFIG_MAP_VOLUME_SOURCE,
            );
        }
        if let Some(c) = v.get("persistentVolumeClaim") {
            keys(
                e,
                Some(c),
                &format!("{vp}.persistentVolumeClaim"),
                PVC_VOLUME_SOURCE,
            );
        }
    }
    // Every mount names a volume of the pod.
    for (i, c) in containers.iter().enumerate() {
        for m in c
            .get("volumeMounts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = m.get("name").and_then(Value::as_str).unwrap_or("");
            if !names.contains(&name) {
                e.push(format!(
                    "{p}.containers[{i}]: mounts unknown volume {name:?}"
                ));
            }
        }
    }
    errors
}

/// The container's command line, command and args joined.
fn command_line(job: &Value) -> String {
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    ["command", "args"]
        .iter()
        .filter_map(|f| c[f].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The value after `flag` on a command line (quotes dropped).
fn flag_value(line: &str, flag: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == flag)?;
    words.next().map(|w| w.trim_matches('"').to_string())
}

fn claim(job: &Value) -> Option<&str> {
    job["spec"]["template"]["spec"]["volumes"]
        .as_array()?
        .iter()
        .find_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
}

#[test]
fn indexed_job_is_a_valid_job_and_shards_by_completion_index() {
    let job = load("sweep-indexed-job.yaml");
    assert_eq!(job_schema_errors(&job), Vec::<String>::new());
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let completions = spec["completions"].as_u64().expect("completions");
    let parallelism = spec["parallelism"].as_u64().unwrap_or(1);
    // parallelism is how many shards run at once (documented in the file): at most N.
    assert!(
        (1..=completions).contains(&parallelism),
        "parallelism {parallelism} with {completions} completions"
    );
    // `ksim sweep SWEEP --shard "${JOB_COMPLETION_INDEX}/N"` with N = completions: indices
    // 0..N-1 are exactly the shards, which count from 0.
    let line = command_line(&job);
    assert!(line.contains("ksim sweep "), "{line}");
    let shard = flag_value(&line, "--shard").expect("--shard");
    assert_eq!(shard, format!("${{JOB_COMPLETION_INDEX}}/{completions}"));
    // The sweep file is a file of scenarios/ (the configMap is made from that folder).
    let sweep = line
        .split_whitespace()
        .skip_while(|w| *w != "sweep")
        .nth(1)
        .expect("sweep file");
    let file = Path::new(sweep).file_name().expect("file name");
    assert!(root().join("scenarios").join(file).is_file(), "{sweep}");
}

#[test]
fn merge_job_reads_what_the_shards_write() {
    let sharded = load("sweep-indexed-job.yaml");
    let merge = load("sweep-merge-job.yaml");
    assert_eq!(job_schema_errors(&merge), Vec::<String>::new());
    // One pod: not indexed, one completion.
    assert!(merge["spec"]
        .get("completionMode")
        .is_none_or(|m| m == "NonIndexed"));
    assert!(merge["spec"].get("completions").is_none_or(|c| c == 1));
    let line = command_line(&merge);
    let out = flag_value(&command_line(&sharded), "--out").expect("--out");
    assert_eq!(line, format!("ksim merge {out}"));
    assert_eq!(claim(&sharded), claim(&merge));
    assert!(claim(&merge).is_some());
}

#[test]
fn a_misspelt_field_fails() {
    let text = std::fs::read_to_string(root().join("examples/sweep-indexed-job.yaml")).unwrap();
    for (from, to, error) in [
        ("completionMode:", "completionmode:", ".spec.completionmode"),
        (
            "restartPolicy:",
            "restartpolicy:",
            ".spec.template.spec.restartpolicy",
        ),
        (
            "volumeMounts:",
            "volumesMounts:",
            ".spec.template.spec.containers[0].volumesMounts",
        ),
        (
            "claimName:",
            "claim:",
            ".spec.template.spec.volumes[1].persistentVolumeClaim.claim",
        ),
        ("  template:", "  podTemplate:", ".spec.podTemplate"),
    ] {
        assert!(text.contains(from), "{from}");
        let job: Value = serde_saphyr::from_str(&text.replacen(from, to, 1)).unwrap();
        let errors = job_schema_errors(&job);
        assert!(
            errors.iter().any(|e| e.starts_with(error)),
            "{from} -> {to}: {errors:?}"
        );
    }
}
