//! Scheduler extenders called over HTTP: a test server on 127.0.0.1 answers the filter,
//! prioritize, bind and preempt verbs; the pods land where it says, its rejection reasons reach
//! the FitError, an ignorable extender that is down is skipped, a non-ignorable one fails the
//! attempt (or the binding, or the preemption), and `httpTimeout` bounds each call.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
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
            let Ok(s) = s else { continue };
            let h = handler.clone();
            std::thread::spawn(move || answer(s, &*h));
        }
    });
    format!("http://{addr}")
}

/// Serves `handler` over TLS with `cert` (and its key) on a fresh port; returns the URL.
fn serve_tls(handler: Arc<Handler>, cert: &rcgen::CertifiedKey) -> String {
    serve_mtls(handler, cert, None)
}

/// As [`serve_tls`], requiring a client certificate signed by `client_ca` when given.
fn serve_mtls(
    handler: Arc<Handler>,
    cert: &rcgen::CertifiedKey,
    client_ca: Option<&rcgen::Certificate>,
) -> String {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let chain = vec![CertificateDer::from(cert.cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(CertificateDer::from(ca.der().to_vec())).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = Arc::new(builder.with_single_cert(chain, key).unwrap());
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let h = handler.clone();
            let config = config.clone();
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, s);
                answer(&mut tls, &*h);
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    format!("https://{addr}")
}

/// Reads one HTTP request from `s` and writes `h`'s answer.
fn answer(mut s: impl Read + Write, h: &Handler) {
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
    let _ = s.flush();
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

/// Every record of a run of `events` on `nodes` with `cfg`, up to 30 s.
fn simulate(
    cfg: &KubeSchedulerConfiguration,
    nodes: Vec<Node>,
    events: Vec<TimedEvent>,
) -> Vec<Record> {
    let ecfg = EngineConfig {
        horizon: Some(SimTime::from_secs(30)),
        costs: CostModels::zero(),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        ecfg,
        cfg,
        &Registry::in_tree(),
        nodes,
        ClusterObjects::default(),
    )
    .unwrap();
    sim.add_source(Box::new(VecSource::new(events))).unwrap();
    let mut out = Vec::new();
    sim.run(&mut |r: &Record| out.push(r.clone())).unwrap();
    out
}

fn create(s: i64, p: Pod) -> TimedEvent {
    TimedEvent {
        at: SimTime::from_secs(s),
        event: InputEvent::CreatePod {
            pod: Box::new(p),
            run_for: None,
        },
    }
}

/// (pod, node) of every PodBound record.
fn bound(records: &[Record]) -> Vec<(String, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodBound { name, node, .. } => Some((name.clone(), node.clone())),
            _ => None,
        })
        .collect()
}

/// (pod, result, node, message) of every attempt.
fn attempts(records: &[Record]) -> Vec<(String, String, String, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Attempt {
                name,
                result,
                node,
                message,
                ..
            } => Some((
                name.clone(),
                result.as_str().to_string(),
                node.clone(),
                message.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn three_pods() -> Vec<TimedEvent> {
    (0..3).map(|i| create(1, pod(&format!("p{i}")))).collect()
}

fn three_nodes() -> Vec<Node> {
    vec![node("n1"), node("n2"), node("n3")]
}

/// A bind verb that records each ExtenderBindingArgs and answers `error` for the first `fail`
/// calls, then "".
fn binder(calls: Arc<Mutex<Vec<Value>>>, fail: usize, error: &'static str) -> Arc<Handler> {
    Arc::new(move |path, args| {
        assert_eq!(path, "/bind");
        let mut c = calls.lock().unwrap();
        c.push(args.clone());
        let e = if c.len() <= fail { error } else { "" };
        (200, json!({"Error": e}))
    })
}

#[test]
fn bind_verb_binds_each_pod_through_the_extender() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let url = serve(binder(calls.clone(), 0, ""));
    let cfg = config(json!([{"urlPrefix": url, "bindVerb": "bind"}]));
    let records = simulate(&cfg, three_nodes(), three_pods());
    let b = bound(&records);
    assert_eq!(b.len(), 3, "{records:?}");
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 3);
    for (pod, node) in &b {
        // upstream's ExtenderBindingArgs, field for field.
        let args = calls
            .iter()
            .find(|a| a["PodName"] == json!(pod))
            .unwrap_or_else(|| panic!("no bind call for {pod}: {calls:?}"));
        assert_eq!(
            args,
            &json!({"PodName": pod, "PodNamespace": "default",
                    "PodUID": format!("uid-default-{pod}"), "Node": node})
        );
    }
}

#[test]
fn a_bind_error_sends_the_pod_back_through_the_error_path() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let url = serve(binder(calls.clone(), 1, "quota exceeded"));
    let cfg = config(json!([{"urlPrefix": url, "bindVerb": "bind"}]));
    let records = simulate(&cfg, three_nodes(), vec![create(1, pod("p0"))]);
    let a = attempts(&records);
    // Scheduled, then the binding fails with the extender's error (the pod is forgotten and
    // goes to the error backoff), then it is scheduled and bound at the retry.
    assert_eq!(a.len(), 3, "{a:?}");
    assert_eq!(a[0].1, "Scheduled");
    assert_eq!(
        (a[1].1.as_str(), a[1].3.as_str()),
        ("Error", "quota exceeded")
    );
    assert_eq!(a[2].1, "Scheduled");
    let retry_at = records.iter().filter_map(|r| match r {
        Record::Attempt { at, .. } => Some(*at),
        _ => None,
    });
    let times: Vec<SimTime> = retry_at.collect();
    assert!(
        times[2] >= times[1] + ksim_engine::SimDuration::from_secs(1),
        "{times:?}"
    );
    assert_eq!(bound(&records), vec![("p0".to_string(), a[2].2.clone())]);
    assert_eq!(calls.lock().unwrap().len(), 2);
}

#[test]
fn a_binder_that_is_down_fails_the_binding_unless_ignorable() {
    let url = closed_url();
    let cfg = config(json!([{"urlPrefix": url, "bindVerb": "bind"}]));
    let records = simulate(&cfg, three_nodes(), vec![create(1, pod("p0"))]);
    assert!(bound(&records).is_empty());
    let a = attempts(&records);
    assert!(a.len() >= 4, "retried with backoff: {a:?}");
    let (_, result, _, message) = &a[1];
    assert_eq!(result, "Error");
    assert!(
        message.starts_with(&format!("Post \"{url}/bind\": ")),
        "{message}"
    );

    // Ignorable: skipped, and the default binder binds.
    let cfg = config(json!([{"urlPrefix": url, "bindVerb": "bind", "ignorable": true}]));
    let records = simulate(&cfg, three_nodes(), three_pods());
    assert_eq!(bound(&records).len(), 3);
    assert_eq!(attempts(&records).len(), 3);
}

#[test]
fn a_binder_not_interested_in_the_pod_leaves_it_to_the_default_binder() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let url = serve(binder(calls.clone(), 100, "never bind"));
    let cfg = config(json!([{"urlPrefix": url, "bindVerb": "bind",
                              "managedResources": [{"name": "example.com/gpu"}]}]));
    let records = simulate(&cfg, three_nodes(), three_pods());
    assert_eq!(bound(&records).len(), 3);
    assert!(calls.lock().unwrap().is_empty());
}

fn sized_node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn prio_pod(name: &str, priority: i32, node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"priority": priority, "nodeName": node,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
    }))
    .unwrap()
}

/// Three full nodes (one low-priority pod each, started in node order, so that without
/// extenders preemption picks n3, whose victim started last) and a high-priority preemptor.
fn preemption_run(cfg: &KubeSchedulerConfiguration) -> Vec<Record> {
    let nodes = vec![sized_node("n1"), sized_node("n2"), sized_node("n3")];
    let events = vec![
        create(0, prio_pod("low-n1", 0, "n1")),
        create(0, prio_pod("low-n2", 0, "n2")),
        create(0, prio_pod("low-n3", 0, "n3")),
        create(5, prio_pod("high", 100, "")),
    ];
    simulate(cfg, nodes, events)
}

/// The preemptor's first attempt: (nominated node, message).
fn first_high_attempt(records: &[Record]) -> (String, String) {
    records
        .iter()
        .find_map(|r| match r {
            Record::Attempt {
                name,
                nominated_node,
                message,
                ..
            } if name == "high" => Some((nominated_node.clone(), message.clone())),
            _ => None,
        })
        .unwrap()
}

fn preempted(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodEnded { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// A preempt verb answering `answer(args)` and recording the args.
fn preempter(
    calls: Arc<Mutex<Vec<Value>>>,
    answer: impl Fn(&Value) -> Value + Send + Sync + 'static,
) -> Arc<Handler> {
    Arc::new(move |path, args| {
        assert_eq!(path, "/preempt");
        calls.lock().unwrap().push(args.clone());
        (200, answer(args))
    })
}

#[test]
fn without_extenders_preemption_picks_n3() {
    // The control for the tests below: the extender, not the tie-break, decides there.
    let records = preemption_run(&config(json!([])));
    assert_eq!(first_high_attempt(&records).0, "n3");
    assert_eq!(preempted(&records), vec!["low-n3"]);
}

#[test]
fn preempt_verb_replaces_the_candidates_with_the_extenders_answer() {
    for cache_capable in [false, true] {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let url = serve(preempter(calls.clone(), |_| {
            json!({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-default-low-n1"}],
                                                    "NumPDBViolations": 0}}})
        }));
        let cfg = config(json!([{"urlPrefix": url, "preemptVerb": "preempt",
                                  "nodeCacheCapable": cache_capable}]));
        let records = preemption_run(&cfg);
        assert_eq!(first_high_attempt(&records).0, "n1", "{cache_capable}");
        assert_eq!(preempted(&records), vec!["low-n1"]);
        assert!(bound(&records).contains(&("high".to_string(), "n1".to_string())));
        let calls = calls.lock().unwrap();
        assert_eq!(calls.len(), 1);
        let args = &calls[0];
        assert_eq!(args["Pod"]["metadata"]["name"], "high");
        let nodes: Vec<&String> = if cache_capable {
            assert!(args["NodeNameToVictims"].is_null());
            let m = args["NodeNameToMetaVictims"].as_object().unwrap();
            assert_eq!(
                m["n2"],
                json!({"Pods": [{"UID": "uid-default-low-n2"}], "NumPDBViolations": 0})
            );
            m.keys().collect()
        } else {
            assert!(args["NodeNameToMetaVictims"].is_null());
            let m = args["NodeNameToVictims"].as_object().unwrap();
            assert_eq!(m["n2"]["Pods"][0]["metadata"]["name"], "low-n2");
            assert_eq!(m["n2"]["NumPDBViolations"], 0);
            m.keys().collect()
        };
        // Go writes map keys sorted.
        assert_eq!(nodes, ["n1", "n2", "n3"]);
    }
}

#[test]
fn a_preempt_answer_with_no_candidates_means_no_preemption() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let url = serve(preempter(
        calls.clone(),
        |_| json!({"NodeNameToMetaVictims": {}}),
    ));
    let cfg = config(json!([{"urlPrefix": url, "preemptVerb": "preempt"}]));
    let records = preemption_run(&cfg);
    let (nominated, message) = first_high_attempt(&records);
    assert_eq!(nominated, "");
    assert!(
        message.ends_with("preemption: no candidate node for preemption"),
        "{message}"
    );
    assert!(preempted(&records).is_empty());
}

#[test]
fn a_preempt_answer_naming_an_unknown_pod_fails_the_preemption_unless_ignorable() {
    let answer = |_: &Value| {
        json!({"NodeNameToMetaVictims": {"n2": {"Pods": [{"UID": "no-such-uid"}],
                                                "NumPDBViolations": 0}}})
    };
    let url = serve(preempter(Arc::new(Mutex::new(Vec::new())), answer));
    let cfg = config(json!([{"urlPrefix": url, "preemptVerb": "preempt"}]));
    let records = preemption_run(&cfg);
    let (nominated, message) = first_high_attempt(&records);
    assert_eq!(nominated, "");
    assert!(message.ends_with(&format!(
        "preemption: extender: {url} claims to preempt pod (UID: &{{no-such-uid}}) on node: n2, but the pod is not found on that node"
    )), "{message}");
    assert!(preempted(&records).is_empty());

    // Ignorable: its error is skipped and the candidates stay as found (n3 wins, as without).
    let url = serve(preempter(Arc::new(Mutex::new(Vec::new())), answer));
    let cfg = config(json!([{"urlPrefix": url, "preemptVerb": "preempt", "ignorable": true}]));
    let records = preemption_run(&cfg);
    assert_eq!(first_high_attempt(&records).0, "n3");
    assert_eq!(preempted(&records), vec!["low-n3"]);
}

#[test]
fn a_node_without_victims_in_a_preempt_answer_is_an_error_unless_ignorable() {
    let answer = |_: &Value| {
        json!({"NodeNameToMetaVictims": {
            "n1": {"Pods": [{"UID": "uid-default-low-n1"}], "NumPDBViolations": 0},
            "n2": {"Pods": [], "NumPDBViolations": 0}}})
    };
    let url = serve(preempter(Arc::new(Mutex::new(Vec::new())), answer));
    let cfg = config(json!([{"urlPrefix": url, "preemptVerb": "preempt"}]));
    let (nominated, message) = first_high_attempt(&preemption_run(&cfg));
    assert_eq!(nominated, "");
    assert!(
        message.ends_with("preemption: expected at least one victim pod on node \"n2\""),
        "{message}"
    );
    // Ignorable: the empty node is dropped, the rest kept.
    let url = serve(preempter(Arc::new(Mutex::new(Vec::new())), answer));
    let cfg = config(json!([{"urlPrefix": url, "preemptVerb": "preempt", "ignorable": true}]));
    let records = preemption_run(&cfg);
    assert_eq!(first_high_attempt(&records).0, "n1");
    assert_eq!(preempted(&records), vec!["low-n1"]);
}

#[test]
fn a_preempt_extender_that_is_down_fails_the_preemption() {
    let url = closed_url();
    let cfg = config(json!([{"urlPrefix": url, "preemptVerb": "preempt"}]));
    let records = preemption_run(&cfg);
    let (nominated, message) = first_high_attempt(&records);
    assert_eq!(nominated, "");
    assert!(
        message.contains(&format!("preemption: Post \"{url}/preempt\": ")),
        "{message}"
    );
    assert!(preempted(&records).is_empty());
}

/// A self-signed certificate for `names`.
fn self_signed(names: &[&str]) -> rcgen::CertifiedKey {
    rcgen::generate_simple_self_signed(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
        .unwrap()
}

fn b64(pem: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(pem)
}

/// `configs` run with three pods; `Err` is the setup error.
fn try_run(cfg: &KubeSchedulerConfiguration) -> Result<Vec<Record>, String> {
    let ecfg = EngineConfig {
        horizon: Some(SimTime::from_secs(5)),
        costs: CostModels::zero(),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        ecfg,
        cfg,
        &Registry::in_tree(),
        three_nodes(),
        ClusterObjects::default(),
    )
    .map_err(|e| e.to_string())?;
    sim.add_source(Box::new(VecSource::new(three_pods())))
        .unwrap();
    let mut out = Vec::new();
    sim.run(&mut |r: &Record| out.push(r.clone())).unwrap();
    Ok(out)
}

#[test]
fn https_with_the_servers_ca_trusted_filters_as_over_http() {
    let cert = self_signed(&["127.0.0.1", "localhost"]);
    let url = serve_tls(keep_only(&["n2"]), &cert);
    // caData (base64 of the PEM, as Go's []byte) and caFile.
    let file = std::env::temp_dir().join(format!("ksim-ext-ca-{}.pem", std::process::id()));
    std::fs::write(&file, cert.cert.pem()).unwrap();
    for tls in [
        json!({"caData": b64(&cert.cert.pem())}),
        json!({"caFile": file.to_str().unwrap()}),
    ] {
        let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter",
                                  "enableHTTPS": true, "tlsConfig": tls}]));
        let a = attempts(&try_run(&cfg).unwrap());
        assert_eq!(a.len(), 3, "{a:?}");
        for (p, result, node, _) in &a {
            assert_eq!((result.as_str(), node.as_str()), ("Scheduled", "n2"), "{p}");
        }
    }
    let _ = std::fs::remove_file(&file);
}

#[test]
fn https_server_name_is_the_name_the_certificate_must_carry() {
    let cert = self_signed(&["extender.example"]);
    let url = serve_tls(keep_only(&["n1"]), &cert);
    let tls = |name: &str| json!({"caData": b64(&cert.cert.pem()), "serverName": name});
    let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter",
                              "tlsConfig": tls("extender.example")}]));
    let a = attempts(&try_run(&cfg).unwrap());
    assert!(a.iter().all(|x| x.1 == "Scheduled" && x.2 == "n1"), "{a:?}");
    // Without it the certificate does not name 127.0.0.1.
    let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter",
                              "tlsConfig": {"caData": b64(&cert.cert.pem())}}]));
    let a = attempts(&try_run(&cfg).unwrap());
    assert!(a.iter().all(|x| x.1 == "Error"), "{a:?}");
    assert!(
        a[0].3.starts_with(&format!("Post \"{url}/filter\": tls: ")),
        "{}",
        a[0].3
    );
}

#[test]
fn https_insecure_accepts_any_certificate() {
    let cert = self_signed(&["127.0.0.1"]);
    let url = serve_tls(keep_only(&["n3"]), &cert);
    // Explicitly, and as upstream's makeTransport makes enableHTTPS without a CA.
    for ext in [
        json!({"urlPrefix": url, "filterVerb": "filter", "tlsConfig": {"insecure": true}}),
        json!({"urlPrefix": url, "filterVerb": "filter", "enableHTTPS": true}),
    ] {
        let a = attempts(&try_run(&config(json!([ext]))).unwrap());
        assert_eq!(a.len(), 3, "{a:?}");
        assert!(a.iter().all(|x| x.1 == "Scheduled" && x.2 == "n3"), "{a:?}");
    }
}

#[test]
fn https_refuses_a_certificate_its_ca_did_not_sign() {
    let cert = self_signed(&["127.0.0.1"]);
    let other = self_signed(&["127.0.0.1"]);
    let url = serve_tls(keep_only(&["n3"]), &cert);
    let cfg = config(
        json!([{"urlPrefix": url, "filterVerb": "filter", "enableHTTPS": true,
                              "tlsConfig": {"caData": b64(&other.cert.pem())}}]),
    );
    let a = attempts(&try_run(&cfg).unwrap());
    // Each pod fails, and fails again at its retries (error backoff).
    assert!(a.len() >= 3, "{a:?}");
    for (_, result, node, message) in &a {
        assert_eq!((result.as_str(), node.as_str()), ("Error", ""));
        assert!(
            message.starts_with(&format!("Post \"{url}/filter\": tls: ")),
            "{message}"
        );
        assert!(message.contains("invalid peer certificate"), "{message}");
    }
    // Without any CA (and without enableHTTPS) the system's roots do not know it either.
    let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter"}]));
    let a = attempts(&try_run(&cfg).unwrap());
    assert!(a.iter().all(|x| x.1 == "Error"), "{a:?}");
}

#[test]
fn bad_tls_settings_stop_the_run_before_it_starts() {
    let cert = self_signed(&["127.0.0.1"]);
    let ca = b64(&cert.cert.pem());
    let err = |tls: Value| {
        let cfg = config(
            json!([{"urlPrefix": "https://127.0.0.1:1", "filterVerb": "filter",
                                  "tlsConfig": tls}]),
        );
        try_run(&cfg).err().unwrap()
    };
    assert_eq!(
        err(json!({"insecure": true, "caData": ca})),
        "scheduler configuration: extenders[0] (https://127.0.0.1:1): specifying a root certificates file with the insecure flag is not allowed"
    );
    assert_eq!(
        err(json!({"caData": b64("not a certificate")})),
        "scheduler configuration: extenders[0] (https://127.0.0.1:1): unable to load root certificates: no valid certificate authority data seen"
    );
    assert!(err(json!({"caFile": "/no/such/ca.pem"})).starts_with(
        "scheduler configuration: extenders[0] (https://127.0.0.1:1): open /no/such/ca.pem: "
    ));
}

#[test]
fn https_sends_the_client_certificate_a_server_requires() {
    // A CA, and a client certificate it signed.
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let client = rcgen::CertificateParams::new(vec!["scheduler".to_string()])
        .unwrap()
        .signed_by(&client_key, &ca, &ca_key)
        .unwrap();
    let server = self_signed(&["127.0.0.1"]);
    let url = serve_mtls(keep_only(&["n2"]), &server, Some(&ca));
    let tls = json!({"caData": b64(&server.cert.pem()),
                     "certData": b64(&client.pem()), "keyData": b64(&client_key.serialize_pem())});
    let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter", "tlsConfig": tls}]));
    let a = attempts(&try_run(&cfg).unwrap());
    assert_eq!(a.len(), 3, "{a:?}");
    assert!(a.iter().all(|x| x.1 == "Scheduled" && x.2 == "n2"), "{a:?}");
    // A certificate without its key is not sent (client-go's HasCertAuth): the server refuses.
    let tls = json!({"caData": b64(&server.cert.pem()), "certData": b64(&client.pem())});
    let cfg = config(json!([{"urlPrefix": url, "filterVerb": "filter", "tlsConfig": tls}]));
    let a = attempts(&try_run(&cfg).unwrap());
    assert!(a.iter().all(|x| x.1 == "Error"), "{a:?}");
    assert!(
        a[0].3.starts_with(&format!("Post \"{url}/filter\": ")),
        "{}",
        a[0].3
    );
}
