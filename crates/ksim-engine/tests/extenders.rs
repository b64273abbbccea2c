//! Scheduler extenders called over HTTP: a test server on 127.0.0.1 answers the filter and
//! prioritize verbs; the pods land where it says, its rejection reasons reach the FitError, an
//! ignorable extender that is down is skipped, a non-ignorable one fails the attempt, and
//! `httpTimeout` bounds each call.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::{Node, Pod};
use ksim_engine::config::{CostModels, EngineConfig};
use ksim_engine::{InputEvent, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::{json, Value};

type Handler = dyn Fn(&str, &Value) -> (u16, Value) + Send + Sync;

/// Serves `handler` (path, JSON body → status, JSON answer) on a fresh port; returns the URL.
fn serve(handler: Arc<Handler>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let h = handler.clone();
            std::thread::spawn(move || {
                let mut req = Vec::new();
                let mut buf = [0u8; 8192];
                let (head_end, len) = loop {
                    let n = s.read(&mut buf).unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    req.extend_from_slice(&buf[..n]);
                    if let Some(i) = req.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&req[..i]).to_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .map(|v| v.trim().parse::<usize>().unwrap())
                            .unwrap_or(0);
                        break (i + 4, len);
                    }
                };
                while req.len() < head_end + len {
                    let n = s.read(&mut buf).unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    req.extend_from_slice(&buf[..n]);
                }
                let head = String::from_utf8_lossy(&req[..head_end]).to_string();
                let path = head.split(' ').nth(1).unwrap_or("").to_string();
                let body: Value = serde_json::from_slice(&req[head_end..]).unwrap_or(Value::Null);
                let (code, answer) = h(&path, &body);
                let out = answer.to_string();
                let _ = write!(
                    s,
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{out}",
                    out.len()
                );
            });
        }
    });
    format!("http://{addr}")
}

/// A URL nothing listens on.
fn closed_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

/// The candidate node names in an ExtenderArgs.
fn names(args: &Value) -> Vec<String> {
    if let Some(n) = args["NodeNames"].as_array() {
        return n.iter().map(|x| x.as_str().unwrap().to_string()).collect();
    }
    args["Nodes"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    }))
    .unwrap()
}

fn config(extenders: Value) -> KubeSchedulerConfiguration {
    KubeSchedulerConfiguration::from_value(&json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": extenders,
    }))
    .unwrap()
}

/// (pod, result, node, message) of every attempt of `pods` pods on nodes n1..n3.
fn run(cfg: &KubeSchedulerConfiguration, pods: usize) -> Vec<(String, String, String, String)> {
    let ecfg = EngineConfig {
        horizon: Some(SimTime::from_secs(5)),
        costs: CostModels::zero(),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        ecfg,
        cfg,
        &Registry::in_tree(),
        vec![node("n1"), node("n2"), node("n3")],
        ClusterObjects::default(),
    )
    .unwrap();
    let events = (0..pods)
        .map(|i| TimedEvent {
            at: SimTime::from_secs(1),
            event: InputEvent::CreatePod {
                pod: Box::new(pod(&format!("p{i}"))),
                run_for: None,
            },
        })
        .collect();
    sim.add_source(Box::new(VecSource::new(events))).unwrap();
    let mut out = Vec::new();
    sim.run(&mut |r: &Record| {
        if let Record::Attempt {
            name,
            result,
            node,
            message,
            ..
        } = r
        {
            out.push((
                name.clone(),
                result.as_str().to_string(),
                node.clone(),
                message.clone(),
            ));
        }
    })
    .unwrap();
    out
}

/// A filter keeping only `keep`, rejecting the others "rejected by test extender".
fn keep_only(keep: &'static [&'static str]) -> Arc<Handler> {
    Arc::new(move |path, args| {
        assert_eq!(path, "/filter");
        assert!(args["Pod"]["metadata"]["name"].is_string());
        let all = names(args);
        let mut failed = serde_json::Map::new();
        for n in &all {
            if !keep.contains(&n.as_str()) {
                failed.insert(n.clone(), json!("rejected by test extender"));
            }
        }
        let passed: Vec<&String> = all.iter().filter(|n| keep.contains(&n.as_str())).collect();
        let nodes: Vec<Value> = passed
            .iter()
            .map(|n| json!({"metadata": {"name": n}}))
            .collect();
        (
            200,
            json!({"Nodes": {"items": nodes}, "NodeNames": passed, "FailedNodes": failed, "Error": ""}),
        )
    })
}

#[test]
fn filter_keeps_pods_off_the_nodes_the_extender_rejects() {
    for cache_capable in [false, true] {
        let url = serve(keep_only(&["n3"]));
        let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter",
                                  "nodeCacheCapable": cache_capable}]));
        let a = run(&cfg, 6);
        assert_eq!(a.len(), 6, "{a:?}");
        for (p, result, node, _) in &a {
            assert_eq!((result.as_str(), node.as_str()), ("Scheduled", "n3"), "{p}");
        }
    }
}

#[test]
fn a_pod_no_node_passes_the_extender_for_names_its_reason() {
    let url = serve(keep_only(&[]));
    let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter"}]));
    let a = run(&cfg, 1);
    let (_, result, _, message) = &a[0];
    assert_eq!(result, "Unschedulable");
    assert!(
        message.starts_with("0/3 nodes are available: 3 rejected by test extender."),
        "{message}"
    );
}

#[test]
fn prioritize_draws_pods_to_the_node_it_prefers() {
    let url = serve(Arc::new(|path, args| {
        assert_eq!(path, "/prioritize");
        let list: Vec<Value> = names(args)
            .iter()
            .map(|n| json!({"Host": n, "Score": if n == "n2" { 10 } else { 0 }}))
            .collect();
        (200, Value::Array(list))
    }));
    let cfg = config(json!([{"urlPrefix": url, "prioritizeVerb": "prioritize", "weight": 5}]));
    let a = run(&cfg, 6);
    assert_eq!(a.len(), 6);
    for (p, result, node, _) in &a {
        assert_eq!((result.as_str(), node.as_str()), ("Scheduled", "n2"), "{p}");
    }
}

#[test]
fn an_ignorable_extender_that_is_down_is_skipped() {
    let cfg = config(json!([{"urlPrefix": closed_url(), "filterVerb": "filter",
                              "prioritizeVerb": "prioritize", "weight": 1, "ignorable": true}]));
    let a = run(&cfg, 3);
    assert_eq!(a.len(), 3);
    assert!(a.iter().all(|x| x.1 == "Scheduled"), "{a:?}");
}

#[test]
fn a_non_ignorable_extender_that_is_down_fails_the_attempt() {
    let url = closed_url();
    let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter"}]));
    let a = run(&cfg, 1);
    let (_, result, node, message) = &a[0];
    assert_eq!(result, "Error");
    assert_eq!(node, "");
    assert!(
        message.starts_with(&format!("Post \"{url}/filter\": ")),
        "{message}"
    );
}

#[test]
fn http_timeout_bounds_each_call() {
    let url = serve(Arc::new(|_, _| {
        std::thread::sleep(Duration::from_secs(3));
        (200, json!({}))
    }));
    let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter", "httpTimeout": "200ms"}]));
    let t = Instant::now();
    let a = run(&cfg, 1);
    let took = t.elapsed();
    let (_, result, _, message) = &a[0];
    assert_eq!(result, "Error");
    assert!(
        message.contains("Client.Timeout exceeded (200ms)"),
        "{message}"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn an_extender_not_interested_in_the_pod_is_not_called() {
    // It manages a resource the pods do not ask for: were it called, every node would fail.
    let url = serve(keep_only(&[]));
    let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter",
                              "managedResources": [{"name": "example.com/gpu"}]}]));
    let a = run(&cfg, 2);
    assert!(a.iter().all(|x| x.1 == "Scheduled"), "{a:?}");
}
