//! Admission and input parity as a user meets them through a scenario (issue 34): the
//! namespace label, LimitRanger defaults, Priority admission refusing only its own pods,
//! ResourceQuota, DefaultTolerationSeconds, and nodes the API server accepts.

use std::collections::BTreeMap;
use std::path::Path;

use ksim_engine::{Outcome, Record, Simulation};
use ksim_scheduler::framework::Registry;

/// What a run tells: each pod's node (empty when never bound) and final outcome, and the
/// refusals (name, message).
#[derive(Debug, Default)]
struct Run {
    node: BTreeMap<String, String>,
    outcome: BTreeMap<String, Outcome>,
    refused: Vec<(String, String)>,
}

fn run_in(dir: &Path, scenario: &str, files: &[(&str, &str)]) -> (Run, Simulation) {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let path = dir.join("s.yaml");
    std::fs::write(&path, scenario).unwrap();
    let plan = ksim_trace::load_scenario(&path).unwrap();
    let seed = plan.engine.seed;
    let mut sim = Simulation::new(
        plan.engine,
        &plan.scheduler,
        &Registry::in_tree(),
        plan.nodes,
        plan.objects,
    )
    .unwrap();
    sim.retain_ended_pods(true);
    let mut events = plan.events;
    events.set_seed(seed);
    sim.add_source(Box::new(events)).unwrap();
    let mut run = Run::default();
    sim.run(&mut |r: &Record| match r {
        Record::PodCreated { name, .. } => {
            run.node.insert(name.clone(), String::new());
        }
        Record::PodBound { name, node, .. } => {
            run.node.insert(name.clone(), node.clone());
        }
        Record::PodEnded { name, outcome, .. } => {
            run.outcome.insert(name.clone(), *outcome);
        }
        Record::PodRefused { name, message, .. } => {
            run.refused.push((name.clone(), message.clone()));
        }
        _ => {}
    })
    .unwrap();
    (run, sim)
}

const POOL2: &str = "cluster:\n  pools: [{name: w, count: 2, template: {status: {capacity: {cpu: '1', memory: 4Gi, pods: '110'}}}}]\n";

fn pod(name: &str, ns: &str, spec: &str) -> String {
    format!(
        r#"{{"at": 0, "kind": "CreatePod", "pod": {{"metadata": {{"name": "{name}", "namespace": "{ns}", "labels": {{"app": "{name}"}}}}, "spec": {spec}}}}}"#
    )
}

#[test]
fn cross_namespace_affinity_by_the_name_label_schedules_next_to_its_peer() {
    let dir = tempfile::tempdir().unwrap();
    // The peer in namespace `other`, pinned to w-1; the pod in `default` asks for the peer's
    // node through a namespaceSelector on the label every namespace carries. `team` is a
    // listed Namespace (with a label of its own); `other` is only implied by its pod.
    let affinity = |ns: &str| {
        format!(
            r#"{{"containers": [{{"name": "c", "resources": {{"requests": {{"cpu": "100m"}}}}}}], "affinity": {{"podAffinity": {{"requiredDuringSchedulingIgnoredDuringExecution": [{{"topologyKey": "kubernetes.io/hostname", "labelSelector": {{"matchLabels": {{"app": "peer-{ns}"}}}}, "namespaceSelector": {{"matchLabels": {{"kubernetes.io/metadata.name": "{ns}"}}}}}}]}}}}}}"#
        )
    };
    let trace = [
        pod(
            "peer-other",
            "other",
            r#"{"nodeSelector": {"kubernetes.io/hostname": "w-1"}, "containers": [{"name": "c"}]}"#,
        ),
        pod(
            "peer-team",
            "team",
            r#"{"nodeSelector": {"kubernetes.io/hostname": "w-0"}, "containers": [{"name": "c"}]}"#,
        ),
        pod("near-other", "default", &affinity("other")),
        pod("near-team", "default", &affinity("team")),
    ]
    .join("\n");
    let objects = "kind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: team, labels: {owner: x}}}\n";
    let scenario = format!(
        "name: s\nhorizon: 1m\n{POOL2}  objectsFiles: [objects.yaml]\nworkload:\n  traces: [t.jsonl]\n"
    );
    let (run, _) = run_in(
        dir.path(),
        &scenario,
        &[("t.jsonl", &trace), ("objects.yaml", objects)],
    );
    assert_eq!(run.node["peer-other"], "w-1");
    assert_eq!(run.node["near-other"], "w-1", "{run:?}");
    assert_eq!(run.node["peer-team"], "w-0");
    assert_eq!(run.node["near-team"], "w-0", "{run:?}");
}

#[test]
fn a_limit_range_default_request_of_500m_fits_two_of_three_pods_on_a_1_cpu_node() {
    let dir = tempfile::tempdir().unwrap();
    let trace = (0..3)
        .map(|i| {
            pod(
                &format!("p{i}"),
                "default",
                r#"{"containers": [{"name": "c"}]}"#,
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let objects = "apiVersion: v1\nkind: LimitRange\nmetadata: {name: cpu-defaults, namespace: default}\nspec:\n  limits:\n  - type: Container\n    defaultRequest: {cpu: 500m}\n    default: {cpu: '1'}\n";
    let scenario = "name: s\nhorizon: 1m\ncluster:\n  pools: [{name: w, count: 1, template: {status: {capacity: {cpu: '1', memory: 4Gi, pods: '110'}}}}]\n  objectsFiles: [objects.yaml]\nworkload:\n  traces: [t.jsonl]\n";
    let (run, sim) = run_in(
        dir.path(),
        scenario,
        &[("t.jsonl", &trace), ("objects.yaml", objects)],
    );
    let bound = run.node.values().filter(|n| !n.is_empty()).count();
    assert_eq!(bound, 2, "{run:?}");
    assert_eq!(run.node.len(), 3);
    // The pods carry what LimitRanger set, and its annotation.
    let p = sim.pods().iter().find(|s| s.info.name() == "p0").unwrap();
    let c = &p.info.pod.spec.containers[0];
    assert_eq!(c.resources.requests["cpu"].milli_value(), 500);
    assert_eq!(c.resources.limits["cpu"].milli_value(), 1000);
    assert_eq!(
        p.info.pod.metadata.annotations["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu request for container c; cpu limit for container c"
    );
    // Without the LimitRange (or with LimitRanger disabled) all three fit: no requests.
    let dir = tempfile::tempdir().unwrap();
    let off = format!("{scenario}controlPlane:\n  admission: {{disablePlugins: [LimitRanger]}}\n");
    let (run, _) = run_in(
        dir.path(),
        &off,
        &[("t.jsonl", &trace), ("objects.yaml", objects)],
    );
    assert_eq!(run.node.values().filter(|n| !n.is_empty()).count(), 3);
}

#[test]
fn a_limit_range_max_refuses_only_the_pods_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = [
        pod(
            "small",
            "default",
            r#"{"containers": [{"name": "c", "resources": {"limits": {"cpu": "500m"}}}]}"#,
        ),
        pod(
            "big",
            "default",
            r#"{"containers": [{"name": "c", "resources": {"limits": {"cpu": "2"}}}]}"#,
        ),
    ]
    .join("\n");
    let objects = "apiVersion: v1\nkind: LimitRange\nmetadata: {name: caps}\nspec:\n  limits:\n  - type: Container\n    max: {cpu: '1'}\n";
    let scenario = format!("name: s\nhorizon: 1m\n{POOL2}  objectsFiles: [objects.yaml]\nworkload:\n  traces: [t.jsonl]\n");
    let (run, _) = run_in(
        dir.path(),
        &scenario,
        &[("t.jsonl", &trace), ("objects.yaml", objects)],
    );
    assert!(run.node.contains_key("small"));
    assert!(!run.node.contains_key("big"));
    assert_eq!(
        run.refused,
        vec![(
            "big".to_string(),
            "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
                .to_string()
        )]
    );
}

#[test]
fn an_unknown_priority_class_fails_only_its_own_pods_and_its_controller_retries() {
    let dir = tempfile::tempdir().unwrap();
    let apps = "kind: List\nitems:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: good}
  spec:
    replicas: 2
    selector: {matchLabels: {app: good}}
    template:
      metadata: {labels: {app: good}}
      spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: bad}
  spec:
    replicas: 2
    selector: {matchLabels: {app: bad}}
    template:
      metadata: {labels: {app: bad}}
      spec: {priorityClassName: missing, containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
";
    let trace = pod(
        "lonely",
        "default",
        r#"{"priorityClassName": "nope", "containers": [{"name": "c"}]}"#,
    );
    let scenario = format!("name: s\nhorizon: 10m\n{POOL2}workload:\n  controllers: [apps.yaml]\n  traces: [t.jsonl]\n");
    let (run, sim) = run_in(
        dir.path(),
        &scenario,
        &[("apps.yaml", apps), ("t.jsonl", &trace)],
    );
    let good = run
        .node
        .iter()
        .filter(|(n, node)| n.starts_with("good-") && !node.is_empty())
        .count();
    assert_eq!(good, 2, "{run:?}");
    assert!(!run
        .node
        .keys()
        .any(|n| n.starts_with("bad-") || n == "lonely"));
    assert_eq!(
        run.refused[0],
        (
            "lonely".to_string(),
            "pods \"lonely\" is forbidden: no PriorityClass with name nope was found".to_string()
        )
    );
    let bad: Vec<&(String, String)> = run
        .refused
        .iter()
        .filter(|(n, _)| n.starts_with("bad-"))
        .collect();
    // The controller retries with its work queue's backoff (5 ms doubling to 1000 s): in 10
    // minutes, 17 doublings up to 327 s and then one at 655 s is past the horizon.
    assert!(bad.len() >= 10 && bad.len() <= 20, "{}", bad.len());
    let (_, msg) = bad[0];
    assert!(
        msg.starts_with("pods \"bad-")
            && msg.ends_with("-\" is forbidden: no PriorityClass with name missing was found"),
        "{msg}"
    );
    assert_eq!(sim.refused_pods(), run.refused.len() as u64);
}

#[test]
fn a_resource_quota_refuses_creation_over_it_and_releases_usage_when_pods_end() {
    let dir = tempfile::tempdir().unwrap();
    // Three pods asking 400m each under a 1-cpu quota: the third is refused; after the first
    // ends at 10 s, a fourth fits.
    let p = |name: &str, at: u32| {
        format!(
            r#"{{"at": {at}, "kind": "CreatePod", "pod": {{"metadata": {{"name": "{name}", "namespace": "team"}}, "spec": {{"containers": [{{"name": "c", "resources": {{"requests": {{"cpu": "400m", "memory": "1Gi"}}}}}}]}}}}{}}}"#,
            if name == "q0" {
                r#", "runFor": "10s""#
            } else {
                ""
            }
        )
    };
    let trace = [p("q0", 0), p("q1", 0), p("q2", 0), p("q3", 20)].join("\n");
    let objects = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: compute, namespace: team}\nspec:\n  hard: {requests.cpu: '1', pods: '10'}\n";
    let scenario = "name: s\nhorizon: 1m\ncluster:\n  pools: [{name: w, count: 2, template: {status: {capacity: {cpu: '4', memory: 16Gi, pods: '110'}}}}]\n  objectsFiles: [objects.yaml]\nworkload:\n  traces: [t.jsonl]\n";
    let (run, sim) = run_in(
        dir.path(),
        scenario,
        &[("t.jsonl", &trace), ("objects.yaml", objects)],
    );
    assert_eq!(
        run.refused,
        vec![(
            "q2".to_string(),
            "pods \"q2\" is forbidden: exceeded quota: compute, requested: requests.cpu=400m, used: requests.cpu=800m, limited: requests.cpu=1".to_string()
        )]
    );
    assert!(run.node.contains_key("q3"), "{run:?}");
    assert_eq!(run.outcome.get("q0"), Some(&Outcome::Succeeded));
    let used = sim.quota_used("team/compute").unwrap();
    assert_eq!(used["requests.cpu"], 800);
    assert_eq!(used["pods"], 2000);
}

#[test]
fn every_pod_gets_the_default_tolerations_unless_it_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let trace = [
        pod("plain", "default", r#"{"containers": [{"name": "c"}]}"#),
        pod("own", "default", r#"{"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}], "containers": [{"name": "c"}]}"#),
    ]
    .join("\n");
    let scenario = format!("name: s\nhorizon: 1m\n{POOL2}workload:\n  traces: [t.jsonl]\ncontrolPlane:\n  admission: {{defaultNotReadyTolerationSeconds: 120}}\n");
    let (_, sim) = run_in(dir.path(), &scenario, &[("t.jsonl", &trace)]);
    let tols = |name: &str| -> Vec<(String, Option<i64>)> {
        let s = sim.pods().iter().find(|s| s.info.name() == name).unwrap();
        s.info
            .pod
            .spec
            .tolerations
            .iter()
            .map(|t| (t.key.clone(), t.toleration_seconds))
            .collect()
    };
    assert_eq!(
        tols("plain"),
        vec![
            ("node.kubernetes.io/not-ready".to_string(), Some(120)),
            ("node.kubernetes.io/unreachable".to_string(), Some(300)),
        ]
    );
    assert_eq!(
        tols("own"),
        vec![
            ("node.kubernetes.io/unreachable".to_string(), Some(60)),
            ("node.kubernetes.io/not-ready".to_string(), Some(120)),
        ]
    );
    // A bad setting is refused naming its field.
    let bad = format!("name: s\n{POOL2}controlPlane:\n  admission: {{disablePlugins: [Typo]}}\n");
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, bad).unwrap();
    let err = ksim_trace::load_scenario(&path).unwrap_err().to_string();
    assert!(
        err.contains("controlPlane.admission.disablePlugins[0]"),
        "{err}"
    );
}

/// Nodes shaped as open-simulator's published demo cluster writes them: allocatable above
/// capacity (cpu 8 of 4, memory 16Gi of 8Gi), and a node with no status at all. The API
/// server accepts both; so does ksim, and pods schedule on the first.
#[test]
fn demo_nodes_with_allocatable_over_capacity_and_without_status_run() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: master-3
    labels: {kubernetes.io/hostname: master-3, node-role.kubernetes.io/master: ''}
  status:
    allocatable: {cpu: '8', ephemeral-storage: 61255492Ki, hugepages-1Gi: '0', hugepages-2Mi: '0', memory: 16Gi, pods: '110'}
    capacity: {cpu: '4', ephemeral-storage: 61255492Ki, hugepages-1Gi: '0', hugepages-2Mi: '0', memory: 8Gi, pods: '110'}
    conditions:
    - {type: Ready, status: 'True', reason: KubeletReady, message: kubelet is posting ready status}
- apiVersion: v1
  kind: Node
  metadata: {name: bare}
";
    let trace = pod(
        "p",
        "default",
        r#"{"containers": [{"name": "c", "resources": {"requests": {"cpu": "6"}}}]}"#,
    );
    let scenario = "name: s\nhorizon: 1m\ncluster:\n  nodesFiles: [nodes.yaml]\nworkload:\n  traces: [t.jsonl]\n";
    let (run, _) = run_in(
        dir.path(),
        scenario,
        &[("nodes.yaml", nodes), ("t.jsonl", &trace)],
    );
    assert_eq!(run.node["p"], "master-3");
}

/// Runs a scenario expecting an input error; returns its message.
fn run_err(dir: &Path, scenario: &str, files: &[(&str, &str)]) -> String {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let path = dir.join("s.yaml");
    std::fs::write(&path, scenario).unwrap();
    let plan = match ksim_trace::load_scenario(&path) {
        Ok(p) => p,
        Err(e) => return e.to_string(),
    };
    let mut sim = Simulation::new(
        plan.engine,
        &plan.scheduler,
        &Registry::in_tree(),
        plan.nodes,
        plan.objects,
    )
    .unwrap();
    if let Err(e) = sim.add_source(Box::new(plan.events)) {
        return e.to_string();
    }
    sim.run(&mut |_: &Record| {}).unwrap_err().to_string()
}

#[test]
fn a_resource_typo_is_refused_with_its_path_and_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let trace = pod(
        "p",
        "default",
        r#"{"containers": [{"name": "c", "resource": {"requests": {"cpu": "1"}}}]}"#,
    );
    let scenario = format!("name: s\nhorizon: 1m\n{POOL2}workload:\n  traces: [t.jsonl]\n");
    let err = run_err(dir.path(), &scenario, &[("t.jsonl", &trace)]);
    assert!(
        err.contains("t.jsonl")
            && err.contains("pod.spec.containers[0].resource: strict decoding error: unknown field \"spec.containers[0].resource\" (did you mean \"resources\"?)"),
        "{err}"
    );
    // In an objects file, a controller's template, and a pool's node template alike; and
    // apiVersion is checked before the fields.
    let objects = "kind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: d}\n  spec:\n    replicas: 1\n    selector: {matchLabels: {a: b}}\n    template:\n      metadata: {labels: {a: b}}\n      spec: {containers: [{name: c, resorces: {}}]}\n";
    let scenario = format!("name: s\nhorizon: 1m\n{POOL2}  objectsFiles: [objects.yaml]\n");
    let err = run_err(dir.path(), &scenario, &[("objects.yaml", objects)]);
    assert!(
        err.contains("items[0]: spec.template.spec.containers[0].resorces")
            && err.contains("did you mean \"resources\""),
        "{err}"
    );
    let bad_version = objects.replace("apps/v1", "apps/v1beta1");
    let err = run_err(dir.path(), &scenario, &[("objects.yaml", &bad_version)]);
    assert!(
        err.contains(
            "items[0]: apiVersion: no matches for kind \"Deployment\" in version \"apps/v1beta1\""
        ),
        "{err}"
    );
    let pool = "name: s\ncluster:\n  pools: [{name: w, count: 1, template: {status: {capacty: {cpu: '1'}}}}]\n";
    let err = run_err(dir.path(), pool, &[]);
    assert!(
        err.contains("status.capacty") && err.contains("did you mean \"capacity\""),
        "{err}"
    );
}

/// Scoped quotas through a scenario: a `Terminating` quota of one pod and a quota of one pod
/// for priority class `high` (scopeSelector `PriorityClass In [high]`). Pods with an
/// `activeDeadlineSeconds`, or of class `high`, are counted by their quota only; the second of
/// each kind is refused, every other pod is created.
#[test]
fn scoped_quotas_count_only_the_pods_their_scopes_match() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str, extra: &str| {
        format!(
            r#"{{"at": 0, "kind": "CreatePod", "pod": {{"metadata": {{"name": "{name}", "namespace": "team"}}, "spec": {{{extra}"containers": [{{"name": "c", "resources": {{"requests": {{"cpu": "100m"}}}}}}]}}}}}}"#
        )
    };
    let trace = [
        p("deadline-1", r#""activeDeadlineSeconds": 600, "#),
        p("deadline-2", r#""activeDeadlineSeconds": 600, "#),
        p("plain-1", ""),
        p("plain-2", ""),
        p("high-1", r#""priorityClassName": "high", "#),
        p("high-2", r#""priorityClassName": "high", "#),
    ]
    .join("\n");
    let objects = "apiVersion: v1\nkind: List\nitems:\n\
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 1000}\n\
- apiVersion: v1\n  kind: ResourceQuota\n  metadata: {name: batch, namespace: team}\n  spec:\n    hard: {pods: '1'}\n    scopes: [Terminating]\n\
- apiVersion: v1\n  kind: ResourceQuota\n  metadata: {name: urgent, namespace: team}\n  spec:\n    hard: {pods: '1'}\n    scopeSelector:\n      matchExpressions: [{scopeName: PriorityClass, operator: In, values: [high]}]\n";
    let scenario = "name: s\nhorizon: 1m\ncluster:\n  pools: [{name: w, count: 1, template: {status: {capacity: {cpu: '4', memory: 16Gi, pods: '110'}}}}]\n  objectsFiles: [objects.yaml]\nworkload:\n  traces: [t.jsonl]\n";
    let (run, sim) = run_in(
        dir.path(),
        scenario,
        &[("t.jsonl", &trace), ("objects.yaml", objects)],
    );
    let refused: Vec<&str> = run.refused.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(refused, vec!["deadline-2", "high-2"], "{run:?}");
    assert!(
        run.refused[0].1.contains("exceeded quota: batch"),
        "{:?}",
        run.refused
    );
    for p in ["deadline-1", "plain-1", "plain-2", "high-1"] {
        assert!(
            run.node.get(p).is_some_and(|n| !n.is_empty()),
            "{p}: {run:?}"
        );
    }
    assert_eq!(sim.quota_used("team/batch").unwrap()["pods"], 1000);
    assert_eq!(sim.quota_used("team/urgent").unwrap()["pods"], 1000);
}

/// A scopeSelector the API server refuses is refused with its field path.
#[test]
fn a_scope_selector_the_api_server_refuses_names_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let objects = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: team}\nspec:\n  hard: {pods: '1'}\n  scopeSelector:\n    matchExpressions: [{scopeName: BestEffort, operator: In, values: [x]}]\n";
    let scenario = "name: s\nhorizon: 1m\ncluster:\n  pools: [{name: w, count: 1, template: {status: {capacity: {cpu: '4', memory: 16Gi, pods: '110'}}}}]\n  objectsFiles: [objects.yaml]\n";
    let err = run_err(dir.path(), scenario, &[("objects.yaml", objects)]);
    assert!(
        err.contains("spec.scopeSelector.matchExpressions[0].operator"),
        "{err}"
    );
}
