//! Seeded generators of benchmark workloads: a cluster of identical nodes spread over zones and
//! a list of pending pods, written as `{"nodes": [...], "pods": [...]}` in Kubernetes JSON.
//!
//! The reference shape (issue 8): nodes with 32 cpu, 128Gi memory and 110 pods, labelled with
//! `kubernetes.io/hostname` and `topology.kubernetes.io/zone = zone-(i mod 10)`; pods in
//! namespace `default` labelled `app=app-NN` (50 values), each requesting a cpu amount from
//! {250m, 500m, ..., 2} and a memory amount from {256Mi, 512Mi, 1Gi, 2Gi, 3Gi, 4Gi}. The kinds
//! add constraints on top of that:
//!
//! - `plain`: nothing else.
//! - `mixed`: 25% of pods prefer anti-affinity to their own `app` per hostname (weight 100),
//!   15% spread over zones (maxSkew 1, ScheduleAnyway), 10% spread over zones (maxSkew 2,
//!   DoNotSchedule).
//! - `affinity`: 20% require anti-affinity to their own `app` per hostname, 10% require
//!   affinity to their own `app` per zone.
//! - `node-affinity`: nodes get a `pool` label (pool-0..3) and a `disk` label (ssd on every
//!   third node); every fifth node is tainted `dedicated=batch:NoSchedule`. 30% of pods require
//!   `pool In [pool-0, pool-1]`, 30% prefer `disk=ssd` (weight 50), 10% tolerate the taint and
//!   select `pool=pool-2` with a node selector.
//!
//! Determinism: one `ChaCha8Rng` seeded with the seed; per pod the draws are made in a fixed
//! order (cpu, memory, app, constraint class), whatever the kind, so that two kinds with the
//! same seed request the same resources.

use ksim_api::{
    Affinity, Container, LabelSelector, Labels, Node, NodeAffinity, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, ObjectMeta, Pod, PodAffinity, PodAffinityTerm,
    PreferredSchedulingTerm, Quantity, ResourceList, Taint, Toleration, TopologySpreadConstraint,
    WeightedPodAffinityTerm,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::BenchError;

/// Label keys the generators use.
pub const HOSTNAME: &str = "kubernetes.io/hostname";
pub const ZONE: &str = "topology.kubernetes.io/zone";

/// Cpu requests to draw from (millicores): 250m, 500m, ..., 2.
pub const CPU_CHOICES: [&str; 8] = ["250m", "500m", "750m", "1", "1250m", "1500m", "1750m", "2"];
/// Memory requests to draw from.
pub const MEMORY_CHOICES: [&str; 6] = ["256Mi", "512Mi", "1Gi", "2Gi", "3Gi", "4Gi"];

/// Which constraints the pods carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Plain,
    Mixed,
    Affinity,
    NodeAffinity,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Plain, Kind::Mixed, Kind::Affinity, Kind::NodeAffinity];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Plain => "plain",
            Kind::Mixed => "mixed",
            Kind::Affinity => "affinity",
            Kind::NodeAffinity => "node-affinity",
        }
    }

    pub fn parse(s: &str) -> Result<Kind, BenchError> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                BenchError::Spec(format!(
                    "unknown workload kind {s:?} (plain, mixed, affinity, node-affinity)"
                ))
            })
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub kind: Kind,
    pub nodes: usize,
    pub pods: usize,
    pub seed: u64,
    /// Node capacity: cpu cores, memory GiB, max pods.
    pub node_cpu: u32,
    pub node_memory_gi: u32,
    pub max_pods: u32,
    /// Number of zones (`zone-(i mod zones)`).
    pub zones: usize,
    /// Number of distinct `app` labels.
    pub apps: usize,
}

impl Spec {
    /// The reference shape with the given kind and size.
    pub fn reference(kind: Kind, nodes: usize, pods: usize, seed: u64) -> Spec {
        Spec {
            kind,
            nodes,
            pods,
            seed,
            node_cpu: 32,
            node_memory_gi: 128,
            max_pods: 110,
            zones: 10,
            apps: 50,
        }
    }

    fn check(&self) -> Result<(), BenchError> {
        if self.zones == 0 || self.apps == 0 {
            return Err(BenchError::Spec("zones and apps must be at least 1".into()));
        }
        Ok(())
    }
}

/// A benchmark workload: nodes and pending pods, in the order they are added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Workload {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
}

fn q(s: &str) -> Quantity {
    // Only literal quantities and formatted integers reach here; no input does.
    Quantity::parse(s).expect("generator quantities are valid")
}

fn selector_app(app: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Labels::from([("app".to_string(), app.to_string())]),
        match_expressions: Vec::new(),
    }
}

/// Generates the nodes of a workload.
pub fn nodes(spec: &Spec) -> Vec<Node> {
    (0..spec.nodes).map(|i| node(spec, i)).collect()
}

/// Node `i` of the workload.
pub fn node(spec: &Spec, i: usize) -> Node {
    let name = format!("node-{i:05}");
    let mut labels = Labels::new();
    labels.insert(HOSTNAME.into(), name.clone());
    labels.insert(ZONE.into(), format!("zone-{}", i % spec.zones));
    let mut taints = Vec::new();
    if spec.kind == Kind::NodeAffinity {
        labels.insert("pool".into(), format!("pool-{}", i % 4));
        labels.insert(
            "disk".into(),
            if i.is_multiple_of(3) { "ssd" } else { "hdd" }.into(),
        );
        if i % 5 == 4 {
            taints.push(Taint {
                key: "dedicated".into(),
                value: "batch".into(),
                effect: "NoSchedule".into(),
            });
        }
    }
    let mut capacity = ResourceList::new();
    capacity.insert("cpu".into(), q(&spec.node_cpu.to_string()));
    capacity.insert("memory".into(), q(&format!("{}Gi", spec.node_memory_gi)));
    capacity.insert("pods".into(), q(&spec.max_pods.to_string()));
    let mut n = Node {
        api_version: "v1".into(),
        kind: "Node".into(),
        metadata: ObjectMeta {
            name,
            labels,
            ..Default::default()
        },
        ..Default::default()
    };
    n.spec.taints = taints;
    n.status.allocatable = capacity.clone();
    n.status.capacity = capacity;
    n
}

/// The generator of pods: call [`PodGen::next_pod`] repeatedly (the engine replay streams them
/// without holding them all).
pub struct PodGen {
    spec: Spec,
    rng: ChaCha8Rng,
    next: usize,
}

impl PodGen {
    pub fn new(spec: &Spec) -> PodGen {
        PodGen {
            spec: spec.clone(),
            rng: ChaCha8Rng::seed_from_u64(spec.seed),
            next: 0,
        }
    }

    /// The next pod (`pod-000000`, `pod-000001`, ...).
    pub fn next_pod(&mut self) -> Pod {
        let i = self.next;
        self.next += 1;
        let cpu = CPU_CHOICES[self.rng.random_range(0..CPU_CHOICES.len())];
        let mem = MEMORY_CHOICES[self.rng.random_range(0..MEMORY_CHOICES.len())];
        let app = format!("app-{:02}", self.rng.random_range(0..self.spec.apps));
        let class: u32 = self.rng.random_range(0..100);
        let mut requests = ResourceList::new();
        requests.insert("cpu".into(), q(cpu));
        requests.insert("memory".into(), q(mem));
        let mut pod = Pod {
            api_version: "v1".into(),
            kind: "Pod".into(),
            metadata: ObjectMeta {
                name: format!("pod-{i:06}"),
                namespace: "default".into(),
                labels: Labels::from([("app".to_string(), app.clone())]),
                ..Default::default()
            },
            ..Default::default()
        };
        pod.spec.containers.push(Container {
            name: "c".into(),
            image: "registry.k8s.io/pause:3.10".into(),
            resources: ksim_api::ResourceRequirements {
                requests,
                limits: ResourceList::new(),
                claims: Vec::new(),
            },
            ..Default::default()
        });
        match self.spec.kind {
            Kind::Plain => {}
            Kind::Mixed => mixed(&mut pod, &app, class),
            Kind::Affinity => affinity(&mut pod, &app, class),
            Kind::NodeAffinity => node_affinity(&mut pod, class),
        }
        pod
    }
}

fn term(app: &str, topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(selector_app(app)),
        topology_key: topology_key.into(),
        ..Default::default()
    }
}

fn spread(app: &str, max_skew: i32, when: &str) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: ZONE.into(),
        when_unsatisfiable: when.into(),
        label_selector: Some(selector_app(app)),
        ..Default::default()
    }
}

fn mixed(pod: &mut Pod, app: &str, class: u32) {
    match class {
        0..25 => {
            pod.spec.affinity = Some(Box::new(Affinity {
                pod_anti_affinity: Some(PodAffinity {
                    required: Vec::new(),
                    preferred: vec![WeightedPodAffinityTerm {
                        weight: 100,
                        pod_affinity_term: term(app, HOSTNAME),
                    }],
                }),
                ..Default::default()
            }))
        }
        25..40 => pod
            .spec
            .topology_spread_constraints
            .push(spread(app, 1, "ScheduleAnyway")),
        40..50 => pod
            .spec
            .topology_spread_constraints
            .push(spread(app, 2, "DoNotSchedule")),
        _ => {}
    }
}

fn affinity(pod: &mut Pod, app: &str, class: u32) {
    match class {
        0..20 => {
            pod.spec.affinity = Some(Box::new(Affinity {
                pod_anti_affinity: Some(PodAffinity {
                    required: vec![term(app, HOSTNAME)],
                    preferred: Vec::new(),
                }),
                ..Default::default()
            }))
        }
        20..30 => {
            pod.spec.affinity = Some(Box::new(Affinity {
                pod_affinity: Some(PodAffinity {
                    required: vec![term(app, ZONE)],
                    preferred: Vec::new(),
                }),
                ..Default::default()
            }))
        }
        _ => {}
    }
}

fn node_affinity(pod: &mut Pod, class: u32) {
    match class {
        0..30 => {
            pod.spec.affinity = Some(Box::new(Affinity {
                node_affinity: Some(NodeAffinity {
                    required: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: vec![NodeSelectorRequirement {
                                key: "pool".into(),
                                operator: "In".into(),
                                values: vec!["pool-0".into(), "pool-1".into()],
                            }],
                            match_fields: Vec::new(),
                        }],
                    }),
                    preferred: Vec::new(),
                }),
                ..Default::default()
            }))
        }
        30..60 => {
            pod.spec.affinity = Some(Box::new(Affinity {
                node_affinity: Some(NodeAffinity {
                    required: None,
                    preferred: vec![PreferredSchedulingTerm {
                        weight: 50,
                        preference: NodeSelectorTerm {
                            match_expressions: vec![NodeSelectorRequirement {
                                key: "disk".into(),
                                operator: "In".into(),
                                values: vec!["ssd".into()],
                            }],
                            match_fields: Vec::new(),
                        },
                    }],
                }),
                ..Default::default()
            }))
        }
        60..70 => {
            pod.spec.tolerations.push(Toleration {
                key: "dedicated".into(),
                operator: "Equal".into(),
                value: "batch".into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            });
            pod.spec.node_selector = Labels::from([("pool".to_string(), "pool-2".to_string())]);
        }
        _ => {}
    }
}

/// Generates a whole workload.
pub fn generate(spec: &Spec) -> Result<Workload, BenchError> {
    spec.check()?;
    let mut g = PodGen::new(spec);
    Ok(Workload {
        nodes: nodes(spec),
        pods: (0..spec.pods).map(|_| g.next_pod()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_workload_and_kinds_share_requests() {
        let a = generate(&Spec::reference(Kind::Mixed, 20, 200, 7)).unwrap();
        let b = generate(&Spec::reference(Kind::Mixed, 20, 200, 7)).unwrap();
        assert_eq!(a, b);
        let p = generate(&Spec::reference(Kind::Plain, 20, 200, 7)).unwrap();
        for (x, y) in a.pods.iter().zip(&p.pods) {
            assert_eq!(
                x.spec.containers[0].resources,
                y.spec.containers[0].resources
            );
            assert_eq!(x.metadata.labels, y.metadata.labels);
        }
        assert_eq!(a.nodes[13].metadata.labels[ZONE], "zone-3");
    }

    #[test]
    fn mixed_shares_are_about_right() {
        let w = generate(&Spec::reference(Kind::Mixed, 10, 4000, 1)).unwrap();
        let anti = w.pods.iter().filter(|p| p.spec.affinity.is_some()).count();
        let soft = w
            .pods
            .iter()
            .filter(|p| {
                p.spec
                    .topology_spread_constraints
                    .iter()
                    .any(|c| c.when_unsatisfiable == "ScheduleAnyway")
            })
            .count();
        let hard = w
            .pods
            .iter()
            .filter(|p| {
                p.spec
                    .topology_spread_constraints
                    .iter()
                    .any(|c| c.when_unsatisfiable == "DoNotSchedule")
            })
            .count();
        assert!((900..1100).contains(&anti), "{anti}");
        assert!((500..700).contains(&soft), "{soft}");
        assert!((300..500).contains(&hard), "{hard}");
    }

    #[test]
    fn json_round_trip() {
        let w = generate(&Spec::reference(Kind::NodeAffinity, 6, 30, 3)).unwrap();
        let text = serde_json::to_string(&w).unwrap();
        let back: Workload = serde_json::from_str(&text).unwrap();
        assert_eq!(w, back);
    }
}
