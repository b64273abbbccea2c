//! Upstream's queueing-hint table, rule by rule, each pinned by a small timeline under the
//! oracle's virtual-time model (zero-cost cycles and binding): when a rejected pod is retried
//! after a node or pod event, and when it is not. Each test names the upstream function whose
//! behaviour it pins (kube-scheduler v1.35: pkg/scheduler/scheduler.go `buildQueueingHintMap`,
//! framework/events.go `NodeSchedulingPropertiesChange`, backend/queue/scheduling_queue.go
//! `isPodWorthRequeuing`, schedule_one.go `handleSchedulingFailure`).

use ksim_api::{Node, Pod};
use ksim_engine::config::{CostModels, EngineConfig};
use ksim_engine::{InputEvent, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::{json, Value};

fn node(name: &str, cpu: &str, labels: Value, taints: Value, unschedulable: bool) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints, "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn plain(name: &str, cpu: &str) -> Node {
    node(name, cpu, json!({}), json!([]), false)
}

fn pod(name: &str, cpu: &str, extra_spec: Value) -> Pod {
    let mut spec = json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]});
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), extra_spec.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec
    }))
    .unwrap()
}

fn at(s: i64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime::from_secs(s),
        event,
    }
}

fn create(s: i64, p: Pod) -> TimedEvent {
    at(
        s,
        InputEvent::CreatePod {
            pod: Box::new(p),
            run_for: None,
        },
    )
}

fn update_node(s: i64, n: Node) -> TimedEvent {
    at(s, InputEvent::UpdateNode { node: Box::new(n) })
}

/// (second, pod, result, node) of every attempt.
fn attempts(nodes: Vec<Node>, events: Vec<TimedEvent>, until: i64) -> Vec<(i64, String, String)> {
    let cfg = EngineConfig {
        horizon: Some(SimTime::from_secs(until)),
        costs: CostModels::zero(),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        nodes,
        ClusterObjects::default(),
    )
    .unwrap();
    sim.add_source(Box::new(VecSource::new(events))).unwrap();
    let mut out = Vec::new();
    sim.run(&mut |r: &Record| {
        if let Record::Attempt {
            at,
            name,
            result,
            node,
            ..
        } = r
        {
            out.push((
                at.whole_secs(),
                name.clone(),
                format!("{} {}", result.as_str(), node).trim().to_string(),
            ));
        }
    })
    .unwrap();
    out
}

fn tries(a: &[(i64, String, String)], pod: &str) -> Vec<(i64, String)> {
    a.iter()
        .filter(|x| x.1 == pod)
        .map(|x| (x.0, x.2.clone()))
        .collect()
}

fn unsched(s: i64) -> (i64, String) {
    (s, "Unschedulable".to_string())
}

fn scheduled(s: i64, node: &str) -> (i64, String) {
    (s, format!("Scheduled {node}"))
}

/// `buildQueueingHintMap`: NodeResourcesFit registers Node/Add but not Node/UpdateNodeTaint, so
/// it gets an always-Queue UpdateNodeTaint entry (the kubernetes#109437 workaround). A taint
/// added to a node that cannot fit the pod anyway still retries it; a label-only change (which
/// NodeResourcesFit does not register) does not.
#[test]
fn build_queueing_hint_map_taint_change_requeues_a_pod_rejected_by_node_resources_fit() {
    let events = vec![
        create(0, pod("big", "8", json!({}))),
        update_node(5, node("n2", "2", json!({"team": "a"}), json!([]), false)),
        update_node(
            10,
            node(
                "n2",
                "2",
                json!({"team": "a"}),
                json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]),
                false,
            ),
        ),
    ];
    let a = attempts(vec![plain("n1", "4"), plain("n2", "2")], events, 60);
    assert_eq!(tries(&a, "big"), vec![unsched(0), unsched(10)]);
}

/// `buildQueueingHintMap`: a plugin that registers UpdateNodeTaint itself keeps its own hint.
/// TaintToleration's hint says Skip when the changed node's taints are still not tolerated.
#[test]
fn build_queueing_hint_map_keeps_the_own_taint_hint_of_taint_toleration() {
    let taint = |v: &str| json!([{"key": "k", "value": v, "effect": "NoSchedule"}]);
    let events = vec![
        create(0, pod("p", "1", json!({}))),
        // Still untolerated: TaintToleration says Skip.
        update_node(5, node("n1", "4", json!({}), taint("b"), false)),
        // Taint gone: Queue.
        update_node(10, node("n1", "4", json!({}), json!([]), false)),
    ];
    let a = attempts(
        vec![node("n1", "4", json!({}), taint("a"), false)],
        events,
        60,
    );
    assert_eq!(tries(&a, "p"), vec![unsched(0), scheduled(10, "n1")]);
}

/// `NodeSchedulingPropertiesChange` (extractNodeSpecUnschedulableChange): a cordon makes no
/// node more schedulable and is no event at all; an uncordon is UpdateNodeTaint, which reaches
/// NodeResourcesFit through its always-Queue entry even though the node is still too small.
#[test]
fn node_scheduling_properties_change_cordon_is_no_event_and_uncordon_is_update_node_taint() {
    let events = vec![
        create(0, pod("big", "8", json!({}))),
        update_node(10, node("n2", "2", json!({}), json!([]), true)),
        update_node(20, node("n2", "2", json!({}), json!([]), false)),
    ];
    let a = attempts(vec![plain("n1", "4"), plain("n2", "2")], events, 60);
    assert_eq!(tries(&a, "big"), vec![unsched(0), unsched(20)]);
}

/// `isPodWorthRequeuing`: only the plugins that rejected the pod are asked, and only for the
/// events they registered. NodeAffinity registers Node Add | UpdateNodeLabel: an allocatable
/// change does not retry a pod it rejected, a label change that makes the node match does.
#[test]
fn is_pod_worth_requeuing_asks_only_the_rejecting_plugins_registered_events() {
    let selector = json!({"nodeSelector": {"disk": "ssd"}});
    let events = vec![
        create(0, pod("sel", "1", selector)),
        update_node(5, node("n1", "8", json!({}), json!([]), false)),
        update_node(
            10,
            node("n1", "8", json!({"disk": "ssd"}), json!([]), false),
        ),
    ];
    let a = attempts(vec![plain("n1", "4")], events, 60);
    assert_eq!(tries(&a, "sel"), vec![unsched(0), scheduled(10, "n1")]);
}

/// `handleSchedulingFailure` sets the pod's UnschedulablePlugins from each failed attempt's
/// diagnosis: the set is replaced, not merged. Rejected first by NodeAffinity, then (after the
/// label matched) by NodeResourcesFit only, the pod is not retried by a node that NodeAffinity
/// would welcome but that is too small for it (NodeResourcesFit's Add hint says Skip).
#[test]
fn handle_scheduling_failure_replaces_the_rejector_set() {
    let selector = json!({"nodeSelector": {"disk": "ssd"}});
    let events = vec![
        create(0, pod("sel", "2", selector)),
        create(5, pod("filler", "3", json!({}))),
        update_node(
            10,
            node("n1", "4", json!({"disk": "ssd"}), json!([]), false),
        ),
        at(
            15,
            InputEvent::AddNode {
                node: Box::new(node("n2", "1", json!({"disk": "ssd"}), json!([]), false)),
            },
        ),
        at(
            20,
            InputEvent::DeletePod {
                namespace: "default".into(),
                name: "filler".into(),
            },
        ),
    ];
    let a = attempts(vec![plain("n1", "4")], events, 60);
    assert_eq!(tries(&a, "filler"), vec![scheduled(5, "n1")]);
    assert_eq!(
        tries(&a, "sel"),
        vec![unsched(0), unsched(10), scheduled(20, "n1")]
    );
}

/// `NodeSchedulingPropertiesChange` extracts one event per changed property, in upstream's
/// order, and `updateNodeInCache` offers each on its own: an update that changes both labels and
/// allocatable retries a pod rejected by NodeResourcesFit through the allocatable event, even
/// though NodeResourcesFit does not register label changes.
#[test]
fn node_scheduling_properties_change_offers_each_extracted_event() {
    let events = vec![
        create(0, pod("big", "6", json!({}))),
        update_node(10, node("n1", "8", json!({"x": "y"}), json!([]), false)),
    ];
    let a = attempts(vec![plain("n1", "4")], events, 60);
    assert_eq!(tries(&a, "big"), vec![unsched(0), scheduled(10, "n1")]);
}

/// An out-of-tree Filter plugin that waits for a node label: `Pending` (or, for comparison,
/// `Unschedulable`) until the node has `device=ready`; it registers label changes and says Queue.
mod waits_for_device {
    use std::sync::Arc;

    use ksim_scheduler::framework::{
        ClusterEventKind, ClusterEventObjects, Code, CycleState, EnqueueExtensions, FactoryArgs,
        FilterPlugin, FilterResult, Plugin, PluginRef, QueueingHint, Status,
    };
    use ksim_scheduler::node_info::NodeInfo;
    use ksim_scheduler::pod_info::PodInfo;

    pub struct WaitsForDevice(pub Code);

    impl Plugin for WaitsForDevice {
        fn name(&self) -> &'static str {
            "WaitsForDevice"
        }
        fn as_filter(&self) -> Option<&dyn FilterPlugin> {
            Some(self)
        }
        fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
            Some(self)
        }
    }

    impl FilterPlugin for WaitsForDevice {
        fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> FilterResult {
            if node.labels().get("device").map(String::as_str) == Some("ready") {
                FilterResult::PASS
            } else {
                Status::new(self.0, "device not ready")
                    .with_plugin("WaitsForDevice")
                    .into()
            }
        }
    }

    impl EnqueueExtensions for WaitsForDevice {
        fn events(&self) -> &'static [ClusterEventKind] {
            &[ClusterEventKind::NodeUpdateLabel]
        }
        fn hint(
            &self,
            _: &PodInfo,
            _: ClusterEventKind,
            _: &ClusterEventObjects<'_>,
        ) -> QueueingHint {
            QueueingHint::Queue
        }
    }

    pub fn pending(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
        Ok(Arc::new(WaitsForDevice(Code::Pending)))
    }

    pub fn unschedulable(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
        Ok(Arc::new(WaitsForDevice(Code::Unschedulable)))
    }
}

/// Attempts (second, pod, result) when pod `p`, rejected at 0 and backing off for 10 s, sees
/// its node labelled at t=4 just before pod `q` is created, with the plugin built by `factory`.
fn device_attempts(factory: ksim_scheduler::framework::Factory) -> Vec<(i64, String, String)> {
    let mut registry = Registry::in_tree();
    registry.register("WaitsForDevice", factory);
    let sched: ksim_api::config::KubeSchedulerConfiguration = serde_json::from_value(json!({
        "podInitialBackoffSeconds": 10,
        "podMaxBackoffSeconds": 10,
        "profiles": [{"schedulerName": "default-scheduler",
                      "plugins": {"filter": {"enabled": [{"name": "WaitsForDevice"}]}}}]
    }))
    .unwrap();
    let cfg = EngineConfig {
        horizon: Some(SimTime::from_secs(60)),
        costs: CostModels::zero(),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        cfg,
        &sched,
        &registry,
        vec![plain("n1", "4")],
        ClusterObjects::default(),
    )
    .unwrap();
    let events = vec![
        create(0, pod("p", "1", json!({}))),
        update_node(
            4,
            node("n1", "4", json!({"device": "ready"}), json!([]), false),
        ),
        create(4, pod("q", "1", json!({}))),
    ];
    sim.add_source(Box::new(VecSource::new(events))).unwrap();
    let mut out = Vec::new();
    sim.run(&mut |r: &Record| {
        if let Record::Attempt {
            at,
            name,
            result,
            node,
            ..
        } = r
        {
            out.push((
                at.whole_secs(),
                name.clone(),
                format!("{} {}", result.as_str(), node).trim().to_string(),
            ));
        }
    })
    .unwrap();
    out
}

/// `isPodWorthRequeuing` / `requeuePodWithQueueingStrategy`: a `Queue` hint from a plugin that
/// answered `Pending` is queueImmediately — the pod goes to activeQ at once, skipping its 10 s
/// backoff, and (with the earlier timestamp) is popped before `q`; the same hint from a plugin
/// that answered `Unschedulable` is queueAfterBackoff — the pod waits in backoffQ, which is
/// popped only once activeQ is empty (SchedulerPopFromBackoffQ), so `q` goes first.
#[test]
fn is_pod_worth_requeuing_pending_plugin_queue_skips_backoff() {
    let a = |p: &str, s: i64, r: &str| (s, p.to_string(), r.to_string());
    assert_eq!(
        device_attempts(waits_for_device::pending),
        vec![
            a("p", 0, "Unschedulable"),
            a("p", 4, "Scheduled n1"),
            a("q", 4, "Scheduled n1")
        ]
    );
    assert_eq!(
        device_attempts(waits_for_device::unschedulable),
        vec![
            a("p", 0, "Unschedulable"),
            a("q", 4, "Scheduled n1"),
            a("p", 4, "Scheduled n1")
        ]
    );
}
