//! `ksim bench --suite scheduler-perf`: upstream's scheduler_perf workloads
//! (kubernetes/kubernetes `test/integration/scheduler_perf`), regenerated from the shapes of
//! their node and pod templates at the sizes of their `performance` variants, run through the
//! scheduling loop of [`crate::run`] with upstream's op sequence: nodes, then the init pods
//! (scheduled, not timed), then the measured pods (timed), with the churn ops of the tests that
//! have them. Each result stands beside upstream's CI threshold for that test (minimum pods/s
//! on measured pods, `threshold:` in the test's `performance-config.yaml`); upstream's figure
//! includes an API server and informers, ksim's loop has none.
//!
//! Shapes, as the templates give them (templates/*.yaml of the same directory):
//! - node: `node-default.yaml`, 4 cpu, 32Gi, 110 pods; `labelNodePrepareStrategy` zone labels
//!   where the test sets them (zone1, or moon-1..3 round robin). Nodes also carry
//!   `kubernetes.io/hostname` (a kubelet sets it; upstream's fake nodes do not, which leaves
//!   their hostname terms without a topology value — here they bite).
//! - pods: 100m cpu / 500Mi (`pod-default.yaml` and the constraint templates), with the
//!   template's labels and constraints: required anti-affinity `color=green` per hostname
//!   (`pod-with-pod-anti-affinity.yaml`), required affinity `color=blue` per zone
//!   (`pod-with-pod-affinity.yaml`), preferred affinity `color=red` / anti-affinity
//!   `color=yellow` per hostname, weight 1, node affinity zone In [zone1, zone2], spreading
//!   `color=blue` over zones maxSkew 5 (DoNotSchedule / ScheduleAnyway); low priority 900m
//!   (`pod-low-priority.yaml`), high priority 10 with 3 cpu (`pod-high-priority.yaml`) or 9 cpu
//!   (`pod-high-priority-large-cpu.yaml`, never fits a 4-cpu node).
//!
//! Churn (`opcode: churn`) runs on a clock in upstream (every `intervalMilliseconds`). The loop
//! has no clock, so a churn op runs every `threshold × interval` measured pods: the mix
//! upstream's CI sees when it runs at its threshold. The Service of SchedulingWithMixedChurn's
//! churn is left out (no plugin of the default profile reads a Service for pods without
//! labels).

use std::time::Instant;

use ksim_api::defaults::default_pod;
use ksim_api::{
    Affinity, Container, LabelSelector, Labels, Node, NodeAffinity, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, ObjectMeta, Pod, PodAffinity, PodAffinityTerm,
    Quantity, ResourceList, TopologySpreadConstraint, WeightedPodAffinityTerm,
};

use crate::gen::{HOSTNAME, ZONE};
use crate::run::Loop;
use crate::{BenchError, Options};

/// Where upstream's workloads and thresholds are (kubernetes/kubernetes).
pub const UPSTREAM_DIR: &str = "test/integration/scheduler_perf";

/// A pod template of scheduler_perf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    Default,
    PodAntiAffinity,
    PodAffinity,
    PreferredPodAffinity,
    PreferredPodAntiAffinity,
    NodeAffinity,
    TopologySpreading,
    PreferredTopologySpreading,
    LowPriority,
    HighPriority,
    HighPriorityLargeCpu,
}

/// How the nodes are labelled (`labelNodePrepareStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zones {
    None,
    /// Every node in `zone1`.
    Zone1,
    /// `moon-1`, `moon-2`, `moon-3`, round robin.
    Moons,
}

/// A churn op: every `every` measured pods, create (or, `recreate`, replace the previous) one
/// of each of `pods`, and with `node` one node.
#[derive(Debug, Clone, PartialEq)]
pub struct Churn {
    pub every: usize,
    pub recreate: bool,
    pub pods: Vec<Template>,
    pub node: bool,
}

/// One workload of the suite.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteWorkload {
    /// Upstream's test and workload name (`Test/Workload`).
    pub name: &'static str,
    /// The file upstream's workload and threshold are in, under [`UPSTREAM_DIR`].
    pub source: &'static str,
    /// Upstream's CI threshold (pods/s on measured pods), when the variant has one.
    pub threshold: Option<f64>,
    pub nodes: usize,
    pub zones: Zones,
    /// Init pods, by template, in order.
    pub init: Vec<(Template, usize)>,
    pub measured: (Template, usize),
    pub churn: Option<Churn>,
    /// The DRA workloads' slices, class and claims (see [`crate::suite_dra`]).
    pub dra: Option<crate::suite_dra::DraSetup>,
}

/// The suite at upstream's `performance` sizes, or (`quick`) at 1/50 of them (at least 20
/// nodes), for checking that it runs.
pub fn workloads(quick: bool) -> Vec<SuiteWorkload> {
    use Template as T;
    let s = |n: usize| if quick { (n / 50).max(2) } else { n };
    let nodes = |n: usize| if quick { (n / 50).max(20) } else { n };
    let churn = |threshold: f64, interval_ms: f64, recreate, pods, node| Churn {
        every: ((threshold * interval_ms / 1000.0).round() as usize).max(1),
        recreate,
        pods,
        node,
    };
    vec![
        SuiteWorkload {
            name: "SchedulingBasic/5000Nodes_10000Pods",
            source: "misc/performance-config.yaml",
            threshold: Some(680.0),
            nodes: nodes(5000),
            zones: Zones::None,
            init: vec![(T::Default, s(1000))],
            measured: (T::Default, s(10000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            name: "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
            source: "affinity/performance-config.yaml",
            threshold: Some(60.0),
            nodes: nodes(5000),
            zones: Zones::None,
            init: vec![(T::PodAntiAffinity, s(1000))],
            measured: (T::PodAntiAffinity, s(2000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            name: "SchedulingPodAffinity/5000Nodes_5000Pods",
            source: "affinity/performance-config.yaml",
            threshold: Some(35.0),
            nodes: nodes(5000),
            zones: Zones::Zone1,
            init: vec![(T::PodAffinity, s(5000))],
            measured: (T::PodAffinity, s(5000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            name: "SchedulingPreferredPodAffinity/5000Nodes_5000Pods",
            source: "affinity/performance-config.yaml",
            threshold: Some(90.0),
            nodes: nodes(5000),
            zones: Zones::None,
            init: vec![(T::PreferredPodAffinity, s(5000))],
            measured: (T::PreferredPodAffinity, s(5000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            name: "SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods",
            source: "affinity/performance-config.yaml",
            threshold: Some(90.0),
            nodes: nodes(5000),
            zones: Zones::None,
            init: vec![(T::PreferredPodAntiAffinity, s(5000))],
            measured: (T::PreferredPodAntiAffinity, s(5000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            name: "SchedulingNodeAffinity/5000Nodes_10000Pods",
            source: "affinity/performance-config.yaml",
            threshold: Some(220.0),
            nodes: nodes(5000),
            zones: Zones::Zone1,
            init: vec![(T::NodeAffinity, s(5000))],
            measured: (T::NodeAffinity, s(10000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            name: "MixedSchedulingBasePod/5000Nodes_5000Pods",
            source: "affinity/performance-config.yaml",
            threshold: Some(140.0),
            nodes: nodes(5000),
            zones: Zones::Zone1,
            init: vec![
                (T::Default, s(2000)),
                (T::PodAffinity, s(2000)),
                (T::PodAntiAffinity, s(2000)),
                (T::PreferredPodAffinity, s(2000)),
                (T::PreferredPodAntiAffinity, s(2000)),
            ],
            measured: (T::Default, s(5000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            name: "TopologySpreading/5000Nodes_5000Pods",
            source: "topology_spreading/performance-config.yaml",
            threshold: Some(460.0),
            nodes: nodes(5000),
            zones: Zones::Moons,
            init: vec![(T::Default, s(5000))],
            measured: (T::TopologySpreading, s(5000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            name: "PreferredTopologySpreading/5000Nodes_5000Pods",
            source: "topology_spreading/performance-config.yaml",
            threshold: Some(340.0),
            nodes: nodes(5000),
            zones: Zones::Moons,
            init: vec![(T::Default, s(5000))],
            measured: (T::PreferredTopologySpreading, s(5000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            // Upstream's performance variant (no threshold); its 5000-node one is disabled.
            name: "PreemptionBasic/1000Nodes",
            source: "misc/performance-config.yaml",
            threshold: None,
            nodes: nodes(1000),
            zones: Zones::None,
            init: vec![(T::LowPriority, s(4000))],
            measured: (T::HighPriority, s(1000)),
            churn: None,
            dra: None,
        },
        SuiteWorkload {
            name: "Unschedulable/5kNodes/100Init/10kPods",
            source: "misc/performance-config.yaml",
            threshold: Some(590.0),
            nodes: nodes(5000),
            zones: Zones::None,
            init: vec![(T::Default, s(100))],
            measured: (T::Default, s(10000)),
            churn: Some(churn(
                590.0,
                200.0,
                false,
                vec![T::HighPriorityLargeCpu],
                false,
            )),
            dra: None,
        },
        SuiteWorkload {
            name: "SchedulingWithMixedChurn/5000Nodes_10000Pods",
            source: "misc/performance-config.yaml",
            threshold: Some(710.0),
            nodes: nodes(5000),
            zones: Zones::None,
            init: vec![],
            measured: (T::Default, s(10000)),
            churn: Some(churn(
                710.0,
                1000.0,
                true,
                vec![T::HighPriorityLargeCpu],
                true,
            )),
            dra: None,
        },
        // DRA (see crate::suite_dra: one pre-created claim per pod instead of the template's
        // generated claims). The template fields are unused: suite_dra builds the pods.
        SuiteWorkload {
            name: "SchedulingWithResourceClaimTemplate/5000pods_500nodes_QueueingHintsEnabled",
            source: "dra/performance-config.yaml",
            threshold: Some(56.0),
            nodes: nodes(500),
            zones: Zones::None,
            init: vec![(T::Default, s(2500))],
            measured: (T::Default, s(2500)),
            churn: None,
            dra: Some(crate::suite_dra::DraSetup {
                devices_per_node: 10,
                init_claims: 0,
                steady_batch: None,
            }),
        },
        SuiteWorkload {
            name: "SteadyStateClusterResourceClaimTemplate/half_500nodes_QueueingHintsEnabled",
            source: "dra/performance-config.yaml",
            threshold: Some(60.0),
            nodes: nodes(500),
            zones: Zones::None,
            init: vec![],
            measured: (T::Default, s(2500)),
            churn: None,
            dra: Some(crate::suite_dra::DraSetup {
                devices_per_node: 10,
                init_claims: s(2500),
                steady_batch: Some(10),
            }),
        },
    ]
}

fn q(s: &str) -> Quantity {
    // Only literal quantities reach here; no input does.
    Quantity::parse(s).expect("template quantities are valid")
}

/// `node-default.yaml`: 4 cpu, 32Gi, 110 pods.
pub(crate) fn node(name: String, zones: Zones, i: usize) -> Node {
    let mut labels = Labels::from([(HOSTNAME.to_string(), name.clone())]);
    match zones {
        Zones::None => {}
        Zones::Zone1 => {
            labels.insert(ZONE.into(), "zone1".into());
        }
        Zones::Moons => {
            labels.insert(ZONE.into(), format!("moon-{}", i % 3 + 1));
        }
    }
    let mut n = Node {
        metadata: ObjectMeta {
            name,
            labels,
            ..Default::default()
        },
        ..Default::default()
    };
    let cap = ResourceList::from([
        ("cpu".to_string(), q("4")),
        ("memory".to_string(), q("32Gi")),
        ("pods".to_string(), q("110")),
    ]);
    n.status.capacity = cap.clone();
    n.status.allocatable = cap;
    n
}

fn match_color(color: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Labels::from([("color".to_string(), color.to_string())]),
        match_expressions: Vec::new(),
    }
}

/// The templates' pod affinity term: `color` within `key`, namespaces sched-0 and sched-1.
fn color_term(color: &str, key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(match_color(color)),
        topology_key: key.to_string(),
        namespaces: vec!["sched-1".into(), "sched-0".into()],
        ..Default::default()
    }
}

/// A pod of `template` named `name` in `namespace`.
pub fn pod(template: Template, name: String, namespace: &str) -> Pod {
    use Template as T;
    let (cpu, mem) = match template {
        T::LowPriority => ("900m", "500Mi"),
        T::HighPriority => ("3", "500Mi"),
        T::HighPriorityLargeCpu => ("9", "500Mi"),
        _ => ("100m", "500Mi"),
    };
    let mut p = Pod {
        metadata: ObjectMeta {
            name,
            namespace: namespace.to_string(),
            ..Default::default()
        },
        ..Default::default()
    };
    p.spec.containers = vec![Container {
        name: "pause".into(),
        resources: ksim_api::ResourceRequirements {
            requests: ResourceList::from([
                ("cpu".to_string(), q(cpu)),
                ("memory".to_string(), q(mem)),
            ]),
            ..Default::default()
        },
        ..Default::default()
    }];
    let color = |p: &mut Pod, c: &str| {
        p.metadata.labels.insert("color".into(), c.into());
    };
    match template {
        T::Default | T::LowPriority => {}
        T::HighPriority | T::HighPriorityLargeCpu => p.spec.priority = Some(10),
        T::PodAntiAffinity => {
            color(&mut p, "green");
            p.spec.affinity = Some(Box::new(Affinity {
                pod_anti_affinity: Some(PodAffinity {
                    required: vec![color_term("green", HOSTNAME)],
                    preferred: vec![],
                }),
                ..Default::default()
            }));
        }
        T::PodAffinity => {
            color(&mut p, "blue");
            p.spec.affinity = Some(Box::new(Affinity {
                pod_affinity: Some(PodAffinity {
                    required: vec![color_term("blue", ZONE)],
                    preferred: vec![],
                }),
                ..Default::default()
            }));
        }
        T::PreferredPodAffinity | T::PreferredPodAntiAffinity => {
            let c = if template == T::PreferredPodAffinity {
                "red"
            } else {
                "yellow"
            };
            color(&mut p, c);
            let a = PodAffinity {
                required: vec![],
                preferred: vec![WeightedPodAffinityTerm {
                    weight: 1,
                    pod_affinity_term: color_term(c, HOSTNAME),
                }],
            };
            p.spec.affinity = Some(Box::new(if template == T::PreferredPodAffinity {
                Affinity {
                    pod_affinity: Some(a),
                    ..Default::default()
                }
            } else {
                Affinity {
                    pod_anti_affinity: Some(a),
                    ..Default::default()
                }
            }));
        }
        T::NodeAffinity => {
            p.spec.affinity = Some(Box::new(Affinity {
                node_affinity: Some(NodeAffinity {
                    required: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: vec![NodeSelectorRequirement {
                                key: ZONE.into(),
                                operator: "In".into(),
                                values: vec!["zone1".into(), "zone2".into()],
                            }],
                            ..Default::default()
                        }],
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }));
        }
        T::TopologySpreading | T::PreferredTopologySpreading => {
            color(&mut p, "blue");
            p.spec.topology_spread_constraints = vec![TopologySpreadConstraint {
                max_skew: 5,
                topology_key: ZONE.into(),
                when_unsatisfiable: if template == T::TopologySpreading {
                    "DoNotSchedule".into()
                } else {
                    "ScheduleAnyway".into()
                },
                label_selector: Some(match_color("blue")),
                ..Default::default()
            }];
        }
    }
    default_pod(&mut p);
    p
}

/// Upstream's namespaces: the affinity tests create init pods in sched-0 and measured pods in
/// sched-1; the others use the default namespace.
fn namespaces(w: &SuiteWorkload) -> (&'static str, &'static str) {
    if w.source.starts_with("affinity/") && !w.name.starts_with("SchedulingNodeAffinity") {
        ("sched-0", "sched-1")
    } else {
        ("default", "default")
    }
}

/// The workload as a `ksim bench` file: its nodes and every pod pending, init pods first,
/// then the measured ones (churn is not representable and left out), so that any build of
/// `ksim bench` can time it whole.
pub fn as_workload(w: &SuiteWorkload) -> crate::Workload {
    let nodes = (0..w.nodes)
        .map(|i| node(format!("node-{i:05}"), w.zones, i))
        .collect();
    let (init_ns, measured_ns) = namespaces(w);
    let mut pods = Vec::new();
    let mut n = 0usize;
    for &(t, count) in &w.init {
        for _ in 0..count {
            n += 1;
            pods.push(pod(t, format!("init-{n:06}"), init_ns));
        }
    }
    let (t, count) = w.measured;
    for _ in 0..count {
        n += 1;
        pods.push(pod(t, format!("pod-{n:06}"), measured_ns));
    }
    crate::Workload { nodes, pods }
}

/// What one workload measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteResult {
    pub name: &'static str,
    pub source: &'static str,
    pub threshold: Option<f64>,
    pub nodes: usize,
    pub init_pods: usize,
    pub measured_pods: usize,
    /// Measured pods placed at the end.
    pub scheduled: usize,
    /// Churn pods created during the measured phase.
    pub churn_pods: usize,
    /// Seconds of the measured phase (init pods are scheduled before the clock starts).
    pub secs: f64,
    /// Placement digest of every pod (init, measured, churn).
    pub digest: u64,
}

impl SuiteResult {
    pub fn pods_per_sec(&self) -> f64 {
        if self.secs > 0.0 {
            self.measured_pods as f64 / self.secs
        } else {
            0.0
        }
    }
}

/// Runs one workload: nodes, init pods (untimed), measured pods with churn (timed).
pub fn run_workload(w: &SuiteWorkload, opts: &Options) -> Result<SuiteResult, BenchError> {
    if let Some(d) = &w.dra {
        return crate::suite_dra::run_workload(w, d, opts);
    }
    let nodes: Vec<Node> = (0..w.nodes)
        .map(|i| node(format!("node-{i:05}"), w.zones, i))
        .collect();
    let mut lp = Loop::new(&nodes, Vec::new(), opts)?;
    let (init_ns, measured_ns) = namespaces(w);
    let mut n = 0usize;
    let mut next_name = |prefix: &str| {
        n += 1;
        format!("{prefix}-{n:06}")
    };
    let mut init_pods = 0;
    for &(t, count) in &w.init {
        for _ in 0..count {
            lp.enqueue(pod(t, next_name("init"), init_ns));
            init_pods += 1;
        }
    }
    lp.drain();

    let (t, count) = w.measured;
    let measured: Vec<Pod> = (0..count)
        .map(|_| pod(t, next_name("pod"), measured_ns))
        .collect();
    let first_measured = lp.placements.len();
    let mut churn_pods = 0;
    let mut churn_ids: Vec<u32> = Vec::new();
    let mut churn_node: Option<String> = None;
    let mut churn_round = 0usize;
    let start = Instant::now();
    for (i, p) in measured.into_iter().enumerate() {
        if let Some(c) = &w.churn {
            if i.is_multiple_of(c.every) {
                churn_round += 1;
                if c.recreate {
                    for id in churn_ids.drain(..) {
                        lp.delete_pending(id);
                    }
                    if let Some(name) = churn_node.take() {
                        lp.remove_node(&name);
                    }
                }
                if c.node {
                    let name = format!("churn-node-{churn_round:05}");
                    lp.add_node(&node(name.clone(), w.zones, churn_round));
                    churn_node = Some(name);
                }
                for &ct in &c.pods {
                    let name = format!("churn-{churn_round:05}");
                    churn_ids.push(lp.enqueue(pod(ct, name, "default")));
                    churn_pods += 1;
                }
            }
        }
        lp.enqueue(p);
        lp.drain();
    }
    let secs = start.elapsed().as_secs_f64();
    let scheduled = lp.placements[first_measured..]
        .iter()
        .filter(|(k, n)| !n.is_empty() && !k.contains("/churn-"))
        .count();
    Ok(SuiteResult {
        name: w.name,
        source: w.source,
        threshold: w.threshold,
        nodes: w.nodes,
        init_pods,
        measured_pods: count,
        scheduled,
        churn_pods,
        secs,
        digest: crate::digest(&lp.placements),
    })
}

/// The suite's CSV (one line per workload).
pub fn csv(results: &[SuiteResult]) -> String {
    let mut s = String::from(
        "workload,nodes,init_pods,measured_pods,scheduled,churn_pods,seconds,pods_per_sec,upstream_threshold,source,digest\n",
    );
    for r in results {
        s.push_str(&format!(
            "{},{},{},{},{},{},{:.4},{:.1},{},{}/{},{:016x}\n",
            r.name,
            r.nodes,
            r.init_pods,
            r.measured_pods,
            r.scheduled,
            r.churn_pods,
            r.secs,
            r.pods_per_sec(),
            r.threshold.map(|t| format!("{t}")).unwrap_or_default(),
            UPSTREAM_DIR,
            r.source,
            r.digest
        ));
    }
    s
}

fn thousands(x: f64) -> String {
    let n = x.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The suite as a Markdown table; `plain` is the row whose pods/s the ratios divide by
/// (SchedulingBasic).
pub fn markdown(results: &[SuiteResult]) -> String {
    let basic = results
        .iter()
        .find(|r| r.name.starts_with("SchedulingBasic/"))
        .map(SuiteResult::pods_per_sec);
    let mut s = String::from(
        "| upstream workload | nodes | init + measured pods | ksim pods/s (measured) | of SchedulingBasic | upstream CI threshold | digest |\n|---|---:|---:|---:|---:|---:|---|\n",
    );
    for r in results {
        let ratio = match basic {
            Some(b) if b > 0.0 => format!("{:.2}", r.pods_per_sec() / b),
            _ => "n/a".into(),
        };
        let churn = if r.churn_pods > 0 {
            format!(" (+{} churn)", r.churn_pods)
        } else {
            String::new()
        };
        s.push_str(&format!(
            "| {} | {} | {} + {}{} | {} | {} | {} | `{:016x}` |\n",
            r.name,
            thousands(r.nodes as f64),
            thousands(r.init_pods as f64),
            thousands(r.measured_pods as f64),
            churn,
            thousands(r.pods_per_sec()),
            ratio,
            r.threshold
                .map(|t| format!(
                    "{} ([{}]({}))",
                    thousands(t),
                    r.source,
                    upstream_url(r.source)
                ))
                .unwrap_or_else(|| format!("none ([{}]({}))", r.source, upstream_url(r.source))),
            r.digest
        ));
    }
    s
}

fn upstream_url(source: &str) -> String {
    format!("https://github.com/kubernetes/kubernetes/blob/master/{UPSTREAM_DIR}/{source}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_suite_places_pods_deterministically() {
        let ws = workloads(true);
        assert_eq!(ws.len(), 14);
        let opts = Options::default();
        for w in &ws {
            let a = run_workload(w, &opts).unwrap();
            let b = run_workload(w, &opts).unwrap();
            assert_eq!(a.digest, b.digest, "{}", w.name);
            assert!(a.scheduled > 0, "{}: nothing scheduled", w.name);
            if w.name.starts_with("SchedulingPodAntiAffinity") {
                // One pod per host, and fewer pods than hosts: every measured pod fits.
                assert_eq!(a.scheduled, a.measured_pods);
            }
            if w.dra.is_some() {
                // The DRA workloads fit: every measured pod gets a device.
                assert_eq!(a.scheduled, a.measured_pods, "{}", w.name);
            }
        }
    }
}
