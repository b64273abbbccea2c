use super::common::default_selector;
use super::filtering::CriticalPaths;
use super::scoring::{go_frexp, go_log};
use super::*;
use crate::framework::CycleState;
use crate::node_info::{ClusterObjects, NodeInfo, Snapshot};
use ksim_api::config::Profile;
use ksim_api::Labels;
use ksim_api::{Pod, ReplicationController, Service, WorkloadSet};
use serde_json::json;

fn node(name: &str, labels: &[(&str, &str)], taints: serde_json::Value) -> Arc<Node> {
    let mut l = serde_json::Map::new();
    l.insert("kubernetes.io/hostname".into(), json!(name));
    for (k, v) in labels {
        l.insert((*k).into(), json!(v));
    }
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": l},
            "spec": {"taints": taints},
        }))
        .unwrap(),
    )
}

fn zoned(name: &str, zone: &str) -> Arc<Node> {
    node(name, &[("topology.kubernetes.io/zone", zone)], json!([]))
}

fn pod(v: serde_json::Value) -> PodInfo {
    let mut p: Pod = serde_json::from_value(v).unwrap();
    if p.metadata.namespace.is_empty() {
        p.metadata.namespace = "default".into();
    }
    p.metadata.uid = format!("uid-{}", p.metadata.name);
    PodInfo::new(p)
}

/// A running pod `name` with labels `app: <app>` on `node`.
fn running(name: &str, app: &str, node: &str) -> Arc<PodInfo> {
    Arc::new(pod(json!({
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": node},
    })))
}

/// The incoming pod `p` (labels app=web) with the given constraints.
fn incoming(tsc: serde_json::Value, extra_spec: serde_json::Value) -> PodInfo {
    let mut spec = json!({ "topologySpreadConstraints": tsc });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra_spec.as_object()) {
        for (k, v) in e {
            s.insert(k.clone(), v.clone());
        }
    }
    pod(json!({"metadata": {"name": "p", "labels": {"app": "web", "rev": "2"}}, "spec": spec}))
}

fn plugin(args: Option<serde_json::Value>) -> PluginRef {
    let profile = Profile::default();
    new(&FactoryArgs {
        args: args.as_ref(),
        profile: &profile,
        features: &Default::default(),
    })
    .unwrap()
}

fn snapshot(nodes: Vec<Arc<Node>>, pods: Vec<Arc<PodInfo>>, objects: ClusterObjects) -> Snapshot {
    Snapshot::build(nodes, pods, Arc::new(objects))
}

/// Runs PreFilter then Filter on every node; returns (prefilter code, node → (code, reason)).
fn filter_all(
    pl: &PluginRef,
    pod: &PodInfo,
    snap: &Snapshot,
) -> (crate::framework::Code, Vec<(String, String)>) {
    let mut state = CycleState::new();
    let (_, s) = pl
        .as_pre_filter()
        .unwrap()
        .pre_filter(&mut state, pod, snap);
    if !s.is_success() {
        return (s.code, Vec::new());
    }
    let f = pl.as_filter().unwrap();
    let mut out: Vec<(String, String)> = snap
        .nodes
        .iter()
        .map(|n| {
            let st = f.filter(&state, pod, n).into_status();
            (
                n.name().to_string(),
                format!("{} {}", st.code, st.message()),
            )
        })
        .collect();
    out.sort();
    (s.code, out)
}

fn zone_constraint(max_skew: i32, extra: serde_json::Value) -> serde_json::Value {
    let mut c = json!({
        "maxSkew": max_skew,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    });
    if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            o.insert(k.clone(), v.clone());
        }
    }
    c
}

const OK: &str = "Success ";
const SKEW: &str = "Unschedulable node(s) didn't match pod topology spread constraints";
const MISSING: &str = "UnschedulableAndUnresolvable node(s) didn't match pod topology spread constraints (missing required label)";

#[test]
fn critical_paths_keep_the_minimum() {
    // (updates as (domain, value, count), expected [min, second])
    type Case<'a> = (&'a [(usize, &'a str, i64)], [i64; 2]);
    let cases: &[Case<'_>] = &[
        (&[(0, "a", 3), (1, "b", 1), (2, "c", 2)], [1, 2]),
        (&[(0, "a", 1), (1, "b", 1), (2, "c", 1)], [1, 1]),
        (&[(0, "a", 5)], [5, MAX_INT32]),
        // An existing path updated upwards is swapped behind the other one.
        (&[(0, "a", 1), (1, "b", 2), (0, "a", 3)], [2, 3]),
        // The empty topology value matches the initial entries, as upstream.
        (&[(0, "", 4), (1, "b", 2)], [2, 4]),
    ];
    for (updates, want) in cases {
        let mut p = CriticalPaths::new();
        for (i, v, n) in *updates {
            p.update(*i, v, *n);
        }
        assert_eq!([p.0[0].match_num, p.0[1].match_num], *want, "{updates:?}");
    }
}

#[test]
fn filter_max_skew_min_domains_and_missing_label() {
    let nodes = || {
        vec![
            zoned("n1", "z1"),
            zoned("n2", "z2"),
            node("n3", &[], json!([])),
        ]
    };
    let pods = || {
        vec![
            running("a", "web", "n1"),
            running("b", "web", "n1"),
            running("c", "web", "n2"),
        ]
    };
    let cases = [
        // z1:2 z2:1 → min 1; n1 2+1-1=2 > 1.
        (zone_constraint(1, json!({})), [SKEW, OK, MISSING]),
        (zone_constraint(2, json!({})), [OK, OK, MISSING]),
        // Two domains < minDomains 3 → global minimum 0: n2 1+1-0=2 > 1.
        (
            zone_constraint(1, json!({"minDomains": 3})),
            [SKEW, SKEW, MISSING],
        ),
        (
            zone_constraint(2, json!({"minDomains": 3})),
            [SKEW, OK, MISSING],
        ),
    ];
    let pl = plugin(None);
    for (c, want) in cases {
        let snap = snapshot(nodes(), pods(), ClusterObjects::default());
        let p = incoming(json!([c]), json!({}));
        let (code, got) = filter_all(&pl, &p, &snap);
        assert_eq!(code, crate::framework::Code::Success);
        let got: Vec<&str> = got.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(got, want, "{c}");
    }
}

#[test]
fn counted_pods_exclude_other_namespaces_terminating_and_non_matching() {
    let mut other_ns = pod(json!({
        "metadata": {"name": "x", "namespace": "other", "labels": {"app": "web"}},
        "spec": {"nodeName": "n1"},
    }));
    other_ns.pod.metadata.namespace = "other".into();
    let terminating = pod(json!({
        "metadata": {"name": "t", "labels": {"app": "web"},
                     "deletionTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"nodeName": "n1"},
    }));
    let snap = snapshot(
        vec![zoned("n1", "z1"), zoned("n2", "z2")],
        vec![
            Arc::new(other_ns),
            Arc::new(terminating),
            running("d", "db", "n1"),
        ],
        ClusterObjects::default(),
    );
    let p = incoming(json!([zone_constraint(1, json!({}))]), json!({}));
    let (_, got) = filter_all(&plugin(None), &p, &snap);
    assert_eq!(got[0].1, OK);
    assert_eq!(got[1].1, OK);
}

#[test]
fn node_inclusion_policies() {
    // z1 (n1) has no pod but is excluded by the pod's nodeSelector / by an untolerated
    // taint; z2 (n2) has one matching pod.
    let tainted = json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]);
    let nodes = |taints: &serde_json::Value| {
        vec![
            node(
                "n1",
                &[("topology.kubernetes.io/zone", "z1"), ("pool", "a")],
                taints.clone(),
            ),
            node(
                "n2",
                &[("topology.kubernetes.io/zone", "z2"), ("pool", "b")],
                json!([]),
            ),
        ]
    };
    let sel = json!({"nodeSelector": {"pool": "b"}});
    let tol = json!({"tolerations": [{"key": "k", "operator": "Exists"}]});
    let cases = [
        // Honor (default): z1 not a domain, min = 1 → n2 1+1-1 = 1 passes.
        (zone_constraint(1, json!({})), sel.clone(), json!([]), OK),
        // Ignore: z1 counts with 0 → n2 2 > 1.
        (
            zone_constraint(1, json!({"nodeAffinityPolicy": "Ignore"})),
            sel,
            json!([]),
            SKEW,
        ),
        // Taints ignored by default: z1 counts.
        (
            zone_constraint(1, json!({})),
            json!({}),
            tainted.clone(),
            SKEW,
        ),
        (
            zone_constraint(1, json!({"nodeTaintsPolicy": "Honor"})),
            json!({}),
            tainted.clone(),
            OK,
        ),
        // Honor with a toleration: z1 counts again.
        (
            zone_constraint(1, json!({"nodeTaintsPolicy": "Honor"})),
            tol,
            tainted.clone(),
            SKEW,
        ),
    ];
    for (c, spec, taints, want_n2) in cases {
        let snap = snapshot(
            nodes(&taints),
            vec![running("a", "web", "n2")],
            ClusterObjects::default(),
        );
        let p = incoming(json!([c]), spec);
        let (_, got) = filter_all(&plugin(None), &p, &snap);
        assert_eq!(got[1].1, want_n2, "{c} {taints}");
    }
}

#[test]
fn match_label_keys_narrow_the_selector() {
    let rev = |name: &str, r: &str, node: &str| {
        Arc::new(pod(json!({
            "metadata": {"name": name, "labels": {"app": "web", "rev": r}},
            "spec": {"nodeName": node},
        })))
    };
    let nodes = || vec![zoned("n1", "z1"), zoned("n2", "z2")];
    let pods = || {
        vec![
            rev("a", "1", "n1"),
            rev("b", "1", "n1"),
            rev("c", "2", "n2"),
        ]
    };
    // Without matchLabelKeys z1:2 z2:1 → n1 fails. With rev: only rev=2 counts → z1:0 z2:1,
    // n1 passes and n2 (1+1-0) fails.
    let cases = [
        (zone_constraint(1, json!({})), [SKEW, OK]),
        (
            zone_constraint(1, json!({"matchLabelKeys": ["rev"]})),
            [OK, SKEW],
        ),
    ];
    for (c, want) in cases {
        let snap = snapshot(nodes(), pods(), ClusterObjects::default());
        let p = incoming(json!([c]), json!({}));
        let (_, got) = filter_all(&plugin(None), &p, &snap);
        let got: Vec<&str> = got.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn invalid_selector_is_an_error_and_no_hard_constraint_skips() {
    let snap = snapshot(vec![zoned("n1", "z1")], vec![], ClusterObjects::default());
    let bad = zone_constraint(
        1,
        json!({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}),
    );
    let (code, _) = filter_all(&plugin(None), &incoming(json!([bad]), json!({})), &snap);
    assert_eq!(code, crate::framework::Code::Error);
    let soft = json!([{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                           "whenUnsatisfiable": "ScheduleAnyway"}]);
    let (code, _) = filter_all(&plugin(None), &incoming(soft, json!({})), &snap);
    assert_eq!(code, crate::framework::Code::Skip);
    // No constraints and nothing selecting the pod: skip as well.
    let (code, _) = filter_all(&plugin(None), &incoming(json!([]), json!({})), &snap);
    assert_eq!(code, crate::framework::Code::Skip);
}

#[test]
fn default_selector_from_services_and_controller() {
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}
    }))
    .unwrap();
    let other_ns: Service = serde_json::from_value(json!({
        "metadata": {"name": "s", "namespace": "x"}, "spec": {"selector": {"app": "web"}}
    }))
    .unwrap();
    let rs: WorkloadSet = serde_json::from_value(json!({
        "metadata": {"name": "rs", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"rev": "2"}}}
    }))
    .unwrap();
    let rc: ReplicationController = serde_json::from_value(json!({
        "metadata": {"name": "rc", "namespace": "default"}, "spec": {"selector": {"tier": "f"}}
    }))
    .unwrap();
    let owned = |api: &str, kind: &str, name: &str| {
        pod(
            json!({"metadata": {"name": "p", "labels": {"app": "web", "rev": "2"},
                "ownerReferences": [{"apiVersion": api, "kind": kind, "name": name,
                                     "uid": "u", "controller": true}]}}),
        )
    };
    let plain = pod(json!({"metadata": {"name": "p", "labels": {"app": "web"}}}));
    let labels = |kv: &[(&str, &str)]| -> Labels {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let cases: Vec<(PodInfo, ClusterObjects, Option<Labels>)> = vec![
        (
            plain.clone(),
            ClusterObjects {
                services: vec![svc.clone()],
                ..Default::default()
            },
            Some(labels(&[("app", "web")])),
        ),
        // A Service of another namespace and a ReplicaSet that is not the owner: nothing.
        (
            plain,
            ClusterObjects {
                services: vec![other_ns],
                replica_sets: vec![rs.clone()],
                ..Default::default()
            },
            None,
        ),
        (
            owned("apps/v1", "ReplicaSet", "rs"),
            ClusterObjects {
                replica_sets: vec![rs.clone()],
                ..Default::default()
            },
            Some(labels(&[("rev", "2")])),
        ),
        // The owner must be apps/v1.
        (
            owned("apps/v1beta2", "ReplicaSet", "rs"),
            ClusterObjects {
                replica_sets: vec![rs],
                ..Default::default()
            },
            None,
        ),
        (
            owned("v1", "ReplicationController", "rc"),
            ClusterObjects {
                services: vec![svc],
                replication_controllers: vec![rc],
                ..Default::default()
            },
            Some(labels(&[("app", "web"), ("tier", "f")])),
        ),
    ];
    for (p, objects, want) in cases {
        let sel = default_selector(&p, &objects);
        match want {
            None => assert!(sel.is_empty(), "{sel:?}"),
            Some(l) => {
                assert!(sel.matches(&l), "{sel:?}");
                let mut fewer = l.clone();
                fewer.pop_first();
                assert!(!sel.matches(&fewer), "{sel:?}");
            }
        }
    }
}

#[test]
fn add_and_remove_pod_adjust_counts() {
    let snap = snapshot(
        vec![zoned("n1", "z1"), zoned("n2", "z2")],
        vec![running("a", "web", "n1")],
        ClusterObjects::default(),
    );
    let pl = plugin(None);
    let pf = pl.as_pre_filter().unwrap();
    let f = pl.as_filter().unwrap();
    let p = incoming(json!([zone_constraint(1, json!({}))]), json!({}));
    let mut state = CycleState::new();
    assert!(pf.pre_filter(&mut state, &p, &snap).1.is_success());
    assert!(pf.has_extensions());
    // z1:1 z2:0 → n1 fails.
    assert_eq!(
        f.filter(&state, &p, &snap.nodes[0]).code(),
        crate::framework::Code::Unschedulable
    );
    let a = snap.nodes[0].pods[0].clone();
    let mut removed = state.clone();
    assert!(pf
        .remove_pod(&mut removed, &p, &a, &snap.nodes[0], &snap)
        .is_success());
    assert!(f.filter(&removed, &p, &snap.nodes[0]).is_success());
    // A pod of another namespace changes nothing.
    let mut other = (*running("o", "web", "n2")).clone();
    other.pod.metadata.namespace = "other".into();
    let mut added = state.clone();
    assert!(pf
        .add_pod(&mut added, &p, &Arc::new(other), &snap.nodes[1], &snap)
        .is_success());
    assert!(f.filter(&added, &p, &snap.nodes[1]).is_success());
    // A matching pod on n2: z1:1 z2:1 → both pass.
    assert!(pf
        .add_pod(
            &mut added,
            &p,
            &running("b", "web", "n2"),
            &snap.nodes[1],
            &snap
        )
        .is_success());
    assert!(f.filter(&added, &p, &snap.nodes[0]).is_success());
    // The original state is untouched.
    assert!(!f.filter(&state, &p, &snap.nodes[0]).is_success());
}

/// PreScore + Score + NormalizeScore over every node, as the framework runs them.
fn scores(pl: &PluginRef, pod: &PodInfo, snap: &Snapshot) -> Option<(Vec<i64>, Vec<i64>)> {
    let mut state = CycleState::new();
    // By name, so that results line up with the test tables (the snapshot interleaves zones).
    let mut nodes: Vec<&NodeInfo> = snap.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name().cmp(b.name()));
    let s = pl
        .as_pre_score()
        .unwrap()
        .pre_score(&mut state, pod, &nodes, snap);
    if s.is_skip() {
        return None;
    }
    assert!(s.is_success(), "{s}");
    let sp = pl.as_score().unwrap();
    let raw: Vec<i64> = nodes
        .iter()
        .map(|n| sp.score(&state, pod, n).unwrap())
        .collect();
    // The batch form gives the same scores.
    let mut batch = Vec::new();
    sp.score_nodes(&state, pod, &nodes, &mut batch).unwrap();
    assert_eq!(batch, raw);
    let mut norm = raw.clone();
    assert!(sp.normalize(&state, pod, &mut norm).is_success());
    Some((raw, norm))
}

#[test]
fn scoring_hostname_zone_and_ignored_nodes() {
    let nodes = || {
        vec![
            zoned("n1", "z1"),
            zoned("n2", "z1"),
            zoned("n3", "z2"),
            node("n4", &[], json!([])),
        ]
    };
    let pods = || {
        vec![
            running("a", "web", "n1"),
            running("b", "web", "n1"),
            running("c", "web", "n2"),
        ]
    };
    let soft = |key: &str, skew: i32| {
        json!({"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
                   "labelSelector": {"matchLabels": {"app": "web"}}})
    };
    let w3 = go_log(5.0); // hostname: 3 non-ignored nodes
    let w2 = go_log(4.0); // zone: 2 values
    let r = |x: f64| x.round() as i64;
    let cases = [
        // Hostname only: n4 lacks no key (hostname is always set), 4 nodes → log(6).
        (
            json!([soft("kubernetes.io/hostname", 1)]),
            vec![r(2.0 * go_log(6.0)), r(go_log(6.0)), 0, 0],
        ),
        // Zone: n4 is ignored; z1 has 3 pods, z2 none.
        (
            json!([soft("topology.kubernetes.io/zone", 2)]),
            vec![r(3.0 * w2 + 1.0), r(3.0 * w2 + 1.0), r(1.0), 0],
        ),
        (
            json!([
                soft("kubernetes.io/hostname", 1),
                soft("topology.kubernetes.io/zone", 1)
            ]),
            vec![r(2.0 * w3 + 3.0 * w2), r(w3 + 3.0 * w2), 0, 0],
        ),
    ];
    for (tsc, want_raw) in cases {
        let snap = snapshot(nodes(), pods(), ClusterObjects::default());
        let (raw, norm) = scores(&plugin(None), &incoming(tsc.clone(), json!({})), &snap).unwrap();
        assert_eq!(raw, want_raw, "{tsc}");
        // 100*(max+min-s)/max over non-ignored nodes; ignored nodes get 0.
        let ignored = tsc.to_string().contains("zone");
        let live: Vec<i64> = if ignored {
            raw[..3].to_vec()
        } else {
            raw.clone()
        };
        let (max, min) = (*live.iter().max().unwrap(), *live.iter().min().unwrap());
        let want_norm: Vec<i64> = raw
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                if ignored && i == 3 {
                    0
                } else if max == 0 {
                    100
                } else {
                    100 * (max + min - s) / max
                }
            })
            .collect();
        assert_eq!(norm, want_norm, "{tsc}");
    }
}

#[test]
fn system_defaults_score_nodes_without_zone_and_skip_without_selector() {
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}
    }))
    .unwrap();
    let nodes = || vec![zoned("n1", "z1"), node("n2", &[], json!([]))];
    let p = incoming(json!([]), json!({}));
    let snap = snapshot(
        nodes(),
        vec![running("a", "web", "n1")],
        ClusterObjects::default(),
    );
    assert!(scores(&plugin(None), &p, &snap).is_none());
    let objects = ClusterObjects {
        services: vec![svc],
        ..Default::default()
    };
    let snap = snapshot(nodes(), vec![running("a", "web", "n1")], objects);
    let (raw, norm) = scores(&plugin(None), &p, &snap).unwrap();
    // Hostname (maxSkew 3) over 2 nodes, zone (maxSkew 5) over {"z1", ""}: n2 is not
    // ignored (system defaulting) and only gets the hostname term.
    let (wh, wz) = (go_log(4.0), go_log(4.0));
    assert_eq!(raw, vec![(wh + 2.0 + wz + 4.0).round() as i64, 2]);
    assert_eq!(norm[1], 100);
    // Defaults never apply to DoNotSchedule with System defaulting: Filter is skipped.
    let (code, _) = filter_all(&plugin(None), &p, &snap);
    assert_eq!(code, crate::framework::Code::Skip);
}

#[test]
fn list_defaulting_args() {
    let list = json!({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]});
    let profile = Profile::default();
    let mk = |v: serde_json::Value| {
        new(&FactoryArgs {
            args: Some(&v),
            profile: &profile,
            features: &Default::default(),
        })
        .map(|_| ())
    };
    assert!(mk(list.clone()).is_ok());
    assert!(mk(json!({"defaultingType": "List"})).is_ok());
    let mut system = list.clone();
    system["defaultingType"] = json!("System");
    assert!(mk(system).is_err());
    let mut bad = list.clone();
    bad["defaultConstraints"][0]["whenUnsatisfiable"] = json!("Maybe");
    assert!(mk(bad).is_err());
    let mut sel = list.clone();
    sel["defaultConstraints"][0]["labelSelector"] = json!({});
    assert!(mk(sel).is_err());

    let pl = plugin(Some(list));
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}
    }))
    .unwrap();
    let snap = snapshot(
        vec![zoned("n1", "z1"), zoned("n2", "z2")],
        vec![running("a", "web", "n1")],
        ClusterObjects {
            services: vec![svc],
            ..Default::default()
        },
    );
    let (_, got) = filter_all(&pl, &incoming(json!([]), json!({})), &snap);
    assert_eq!(got[0].1, SKEW);
    assert_eq!(got[1].1, OK);
}

#[test]
fn go_log_matches_the_platform_log_on_small_sizes() {
    for n in 2..=5002u32 {
        let x = f64::from(n);
        assert!((go_log(x) - x.ln()).abs() <= f64::EPSILON * 8.0, "{n}");
    }
    assert_eq!(go_log(1.0), 0.0);
    // The bit patterns are Go's decimal constants.
    for (dec, bits) in [
        ("6.93147180369123816490e-01", 0x3fe6_2e42_fee0_0000u64),
        ("1.90821492927058770002e-10", 0x3dea_39ef_3579_3c76),
        ("6.666666666666735130e-01", 0x3fe5_5555_5555_5593),
        ("3.999999999940941908e-01", 0x3fd9_9999_9997_fa04),
        ("2.857142874366239149e-01", 0x3fd2_4924_9422_9359),
        ("2.222219843214978396e-01", 0x3fcc_71c5_1d8e_78af),
        ("1.818357216161805012e-01", 0x3fc7_4664_96cb_03de),
        ("1.531383769920937332e-01", 0x3fc3_9a09_d078_c69f),
        ("1.479819860511658591e-01", 0x3fc2_f112_df3e_5244),
    ] {
        assert_eq!(dec.parse::<f64>().unwrap().to_bits(), bits, "{dec}");
    }
    assert_eq!(go_frexp(8.0), (0.5, 4));
}

#[test]
fn queueing_hints() {
    let pl = plugin(None);
    let ext = pl.as_enqueue_extensions().unwrap();
    let p = incoming(
        json!([zone_constraint(1, json!({"nodeTaintsPolicy": "Honor"}))]),
        json!({}),
    );
    let web = running("a", "web", "n1");
    let db = running("d", "db", "n1");
    let unassigned = pod(json!({"metadata": {"name": "u", "labels": {"app": "web"}}}));
    let pods = |old: Option<&PodInfo>, new: Option<&PodInfo>| {
        ext.hint(
            &p,
            ClusterEventKind::AssignedPodAdd,
            &ClusterEventObjects::Pod { old, new },
        )
    };
    assert_eq!(pods(None, Some(&web)), QueueingHint::Queue);
    assert_eq!(pods(None, Some(&db)), QueueingHint::Skip);
    assert_eq!(pods(Some(&web), None), QueueingHint::Queue);
    assert_eq!(pods(None, Some(&unassigned)), QueueingHint::Skip);
    assert_eq!(pods(Some(&db), Some(&web)), QueueingHint::Queue);
    assert_eq!(pods(Some(&web), Some(&web)), QueueingHint::Skip);
    // The pod itself got a toleration, and a constraint honours taints.
    let mut tolerant = p.clone();
    tolerant.pod.spec.tolerations = vec![Default::default()];
    assert_eq!(pods(Some(&p), Some(&tolerant)), QueueingHint::Queue);

    let n = |labels: &[(&str, &str)], taints: serde_json::Value| node("n", labels, taints);
    let z1 = n(&[("topology.kubernetes.io/zone", "z1")], json!([]));
    let z2 = n(&[("topology.kubernetes.io/zone", "z2")], json!([]));
    let z1x = n(
        &[("topology.kubernetes.io/zone", "z1"), ("x", "y")],
        json!([]),
    );
    let bare = n(&[], json!([]));
    let z1t = n(
        &[("topology.kubernetes.io/zone", "z1")],
        json!([{"key": "k", "effect": "NoSchedule"}]),
    );
    let nodes = |old: Option<&Node>, new: Option<&Node>| {
        ext.hint(
            &p,
            ClusterEventKind::NodeUpdateLabel,
            &ClusterEventObjects::Node { old, new },
        )
    };
    assert_eq!(nodes(None, Some(&z1)), QueueingHint::Queue);
    assert_eq!(nodes(None, Some(&bare)), QueueingHint::Skip);
    assert_eq!(nodes(Some(&z1), None), QueueingHint::Queue);
    assert_eq!(nodes(Some(&z1), Some(&z2)), QueueingHint::Queue);
    assert_eq!(nodes(Some(&z1), Some(&z1x)), QueueingHint::Skip);
    assert_eq!(nodes(Some(&bare), Some(&z1)), QueueingHint::Queue);
    assert_eq!(nodes(Some(&z1), Some(&z1t)), QueueingHint::Queue);
    assert!(ext.events().contains(&ClusterEventKind::NodeUpdateTaint));
}

// ---- the plugin on the pod index's counts against upstream's walk ------------------------------

mod against_walk {
    use super::super::common::{count_pods_match_selector, node_labels_match};
    use super::super::scoring::{score_for_count, topology_normalizing_weight};
    use super::*;
    use crate::plugins::helper::RequiredNodeAffinity;
    use indexmap::IndexMap;
    use proptest::prelude::*;

    const KEYS: [&str; 3] = [
        "topology.kubernetes.io/zone",
        "kubernetes.io/hostname",
        "region",
    ];

    /// (zone: 0..3 a value, 3 the empty value, 4 none; region: 0..2, 2 none; tainted; ssd)
    type NodeSpec = (u8, u8, bool, bool);

    fn make_node(i: usize, (zone, region, tainted, ssd): NodeSpec) -> Arc<Node> {
        let mut labels: Vec<(&str, String)> = Vec::new();
        if zone < 4 {
            let v = if zone == 3 {
                String::new()
            } else {
                format!("z{zone}")
            };
            labels.push((KEYS[0], v));
        }
        if region < 2 {
            labels.push(("region", format!("r{region}")));
        }
        if ssd {
            labels.push(("disk", "ssd".into()));
        }
        let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let taints = if tainted {
            json!([{"key": "t", "effect": "NoSchedule"}])
        } else {
            json!([])
        };
        node(&format!("n{i}"), &l, taints)
    }

    /// (app: 0..2 a value, 2 none; other namespace; being deleted)
    type PodSpec = (u8, bool, bool);

    fn make_pod(i: usize, (app, other_ns, deleting): PodSpec, node: &str) -> Arc<PodInfo> {
        let mut labels = serde_json::Map::new();
        if app < 2 {
            labels.insert("app".into(), json!(["web", "db"][app as usize]));
        }
        labels.insert(
            "rev".into(),
            json!(if i.is_multiple_of(2) { "1" } else { "2" }),
        );
        let mut p = pod(json!({
            "metadata": {"name": format!("b{i}"), "labels": labels},
            "spec": {"nodeName": node},
        }));
        if other_ns {
            p.pod.metadata.namespace = "other".into();
        }
        if deleting {
            p.pod.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
        }
        Arc::new(p)
    }

    /// (key, hard unless 0, selector, maxSkew, minDomains, nodeAffinityPolicy,
    /// nodeTaintsPolicy, matchLabelKeys)
    type ConstraintSpec = (u8, u8, u8, u8, u8, u8, u8, bool);

    fn constraint(
        (key, hard, sel, skew, min_domains, aff, taints, mlk): ConstraintSpec,
    ) -> serde_json::Value {
        let hard = hard != 0;
        let selector = match sel % 4 {
            0 => json!({"matchLabels": {"app": "web"}}),
            1 => {
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]})
            }
            2 => json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
            _ => json!({}),
        };
        let mut c = json!({
            "maxSkew": 1 + skew % 3,
            "topologyKey": KEYS[key as usize % 3],
            "whenUnsatisfiable": if hard { "DoNotSchedule" } else { "ScheduleAnyway" },
            "labelSelector": selector,
        });
        if min_domains % 4 > 0 && hard {
            c["minDomains"] = json!(min_domains % 4 + 1);
        }
        match aff % 3 {
            0 => {}
            1 => c["nodeAffinityPolicy"] = json!("Honor"),
            _ => c["nodeAffinityPolicy"] = json!("Ignore"),
        }
        match taints % 3 {
            0 => {}
            1 => c["nodeTaintsPolicy"] = json!("Honor"),
            _ => c["nodeTaintsPolicy"] = json!("Ignore"),
        }
        if mlk {
            c["matchLabelKeys"] = json!(["rev"]);
        }
        c
    }

    /// The Filter verdicts as upstream's PreFilter computes them: every node walked, every
    /// node's pods counted.
    fn filter_by_walk(
        pl: &PodTopologySpread,
        p: &PodInfo,
        snap: &Snapshot,
    ) -> Option<Vec<(String, String)>> {
        let cs = pl
            .constraints_for(p, DO_NOT_SCHEDULE, Some(&snap.objects))
            .ok()?
            .unwrap_or_default();
        if cs.is_empty() {
            return None;
        }
        let required = RequiredNodeAffinity::of_pod(&p.pod);
        let mut domains: Vec<IndexMap<String, i64>> = vec![IndexMap::new(); cs.len()];
        for n in &snap.nodes {
            if !node_labels_match(n.labels(), &cs) {
                continue;
            }
            for (i, c) in cs.iter().enumerate() {
                if !c.match_node_inclusion_policies(p, &n.node, &required) {
                    continue;
                }
                let v = n.labels()[&c.topology_key].clone();
                *domains[i].entry(v).or_insert(0) +=
                    count_pods_match_selector(&n.pods, &c.selector, p.namespace());
            }
        }
        let mut out: Vec<(String, String)> = snap
            .nodes
            .iter()
            .map(|n| {
                let mut verdict = OK;
                for (i, c) in cs.iter().enumerate() {
                    let Some(v) = n.labels().get(&c.topology_key) else {
                        verdict = MISSING;
                        break;
                    };
                    let min = if (domains[i].len() as i64) < i64::from(c.min_domains) {
                        0
                    } else {
                        domains[i].values().copied().min().unwrap_or(MAX_INT32)
                    };
                    let count = domains[i].get(v).copied().unwrap_or(0);
                    let self_match = i64::from(c.selector.matches(p.labels()));
                    if count + self_match - min > i64::from(c.max_skew) {
                        verdict = SKEW;
                        break;
                    }
                }
                (n.name().to_string(), verdict.to_string())
            })
            .collect();
        out.sort();
        Some(out)
    }

    /// PreScore + Score as upstream computes them (every node's pods counted) over the
    /// feasible `nodes`; `None` when PreScore skips.
    fn scores_by_walk(
        pl: &PodTopologySpread,
        p: &PodInfo,
        nodes: &[&NodeInfo],
        snap: &Snapshot,
    ) -> Option<Vec<i64>> {
        let require_all =
            !p.pod.spec.topology_spread_constraints.is_empty() || !pl.system_defaulted;
        let cs = pl
            .constraints_for(p, SCHEDULE_ANYWAY, Some(&snap.objects))
            .ok()?
            .unwrap_or_default();
        if cs.is_empty() {
            return None;
        }
        let ignored = |n: &NodeInfo| require_all && !node_labels_match(n.labels(), &cs);
        let mut counts: Vec<IndexMap<String, i64>> = vec![IndexMap::new(); cs.len()];
        for n in nodes.iter().filter(|n| !ignored(n)) {
            for (i, c) in cs.iter().enumerate() {
                if c.topology_key != LABEL_HOSTNAME {
                    let v = n.labels().get(&c.topology_key).cloned().unwrap_or_default();
                    counts[i].entry(v).or_insert(0);
                }
            }
        }
        let eligible = nodes.iter().filter(|n| !ignored(n)).count();
        let required = RequiredNodeAffinity::of_pod(&p.pod);
        for n in &snap.nodes {
            if ignored(n) {
                continue;
            }
            for (i, c) in cs.iter().enumerate() {
                if !c.match_node_inclusion_policies(p, &n.node, &required) {
                    continue;
                }
                let v = n.labels().get(&c.topology_key).cloned().unwrap_or_default();
                if let Some(cnt) = counts[i].get_mut(&v) {
                    *cnt += count_pods_match_selector(&n.pods, &c.selector, p.namespace());
                }
            }
        }
        Some(
            nodes
                .iter()
                .map(|n| {
                    if ignored(n) {
                        return 0;
                    }
                    let mut score = 0f64;
                    for (i, c) in cs.iter().enumerate() {
                        let Some(v) = n.labels().get(&c.topology_key) else {
                            continue;
                        };
                        let (cnt, size) = if c.topology_key == LABEL_HOSTNAME {
                            (
                                count_pods_match_selector(&n.pods, &c.selector, p.namespace()),
                                eligible,
                            )
                        } else {
                            (counts[i].get(v).copied().unwrap_or(0), counts[i].len())
                        };
                        score +=
                            score_for_count(cnt, c.max_skew, topology_normalizing_weight(size));
                    }
                    score.round() as i64
                })
                .collect(),
        )
    }

    /// Filter verdicts by node name (`None`: PreFilter skipped) and scores of the feasible
    /// nodes (`None`: PreScore skipped).
    type Outcome = (Option<Vec<(String, String)>>, Option<Vec<i64>>);

    fn run_plugin(pl: &PluginRef, p: &PodInfo, feasible: &[bool], snap: &Snapshot) -> Outcome {
        let (code, verdicts) = filter_all(pl, p, snap);
        let filtered = (code != crate::framework::Code::Skip).then_some(verdicts);
        let nodes: Vec<&NodeInfo> = snap
            .nodes
            .iter()
            .zip(feasible.iter().cycle())
            .filter(|(_, &f)| f)
            .map(|(n, _)| n)
            .collect();
        let mut state = CycleState::new();
        let s = pl
            .as_pre_score()
            .unwrap()
            .pre_score(&mut state, p, &nodes, snap);
        let scored = (!s.is_skip()).then(|| {
            let sp = pl.as_score().unwrap();
            let each: Vec<i64> = nodes
                .iter()
                .map(|n| sp.score(&state, p, n).unwrap())
                .collect();
            let mut batch = Vec::new();
            sp.score_nodes(&state, p, &nodes, &mut batch).unwrap();
            assert_eq!(batch, each, "score_nodes and score disagree");
            each
        });
        (filtered, scored)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Random clusters and incoming pods: PreFilter/Filter and PreScore/Score on the pod
        /// index's counts give what upstream's walk over every node's pods gives, on a fresh
        /// snapshot and again after pods were bound and unbound with the counts kept.
        #[test]
        fn spreading_on_indexed_counts_equals_the_walk(
            nodes in proptest::collection::vec((0u8..5, 0u8..3, any::<bool>(), any::<bool>()), 1..10),
            first in proptest::collection::vec(((0u8..3, any::<bool>(), any::<bool>()), 0usize..10), 0..30),
            later in proptest::collection::vec(((0u8..3, any::<bool>(), any::<bool>()), 0usize..8), 0..20),
            unbind in proptest::collection::vec(0usize..40, 0..10),
            constraints in proptest::collection::vec(
                (0u8..3, 0u8..3, 0u8..4, 0u8..3, 0u8..4, 0u8..3, 0u8..3, any::<bool>()), 1..4),
            ssd_affinity in any::<bool>(),
            tolerate in any::<bool>(),
            feasible in proptest::collection::vec(any::<bool>(), 1..8),
            system_defaults in any::<bool>(),
        ) {
            let node_objs: Vec<Arc<Node>> =
                nodes.iter().enumerate().map(|(i, n)| make_node(i, *n)).collect();
            let on = |k: usize| format!("n{}", k % nodes.len());
            let first: Vec<Arc<PodInfo>> = first
                .iter()
                .enumerate()
                .map(|(i, (spec, k))| make_pod(i, *spec, &on(*k)))
                .collect();
            // Without constraints of its own, the pod gets the system defaults (hostname and
            // zone, ScheduleAnyway) with the selector of a Service that selects it: then nodes
            // without a zone are not ignored and count under the empty value.
            let mut objects = ClusterObjects::default();
            if system_defaults {
                objects.services.push(serde_json::from_value(json!({
                    "metadata": {"name": "s", "namespace": "default"},
                    "spec": {"selector": {"app": "web"}}
                })).unwrap());
            }
            let mut snap = snapshot(node_objs, first.clone(), objects);
            let mut extra = json!({});
            if ssd_affinity {
                extra["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}});
            }
            if tolerate {
                extra["tolerations"] = json!([{"key": "t", "operator": "Exists"}]);
            }
            let cs: Vec<serde_json::Value> = if system_defaults {
                Vec::new()
            } else {
                constraints.iter().map(|c| constraint(*c)).collect()
            };
            let p = incoming(json!(cs), extra);
            let concrete = PodTopologySpread {
                system_defaulted: true,
                default_constraints: system_default_constraints(),
            };
            let pl: PluginRef = Arc::new(PodTopologySpread {
                system_defaulted: true,
                default_constraints: system_default_constraints(),
            });
            for round in 0..2 {
                let (filtered, scored) = run_plugin(&pl, &p, &feasible, &snap);
                prop_assert_eq!(filtered, filter_by_walk(&concrete, &p, &snap), "round {}", round);
                let nodes: Vec<&NodeInfo> = snap
                    .nodes
                    .iter()
                    .zip(feasible.iter().cycle())
                    .filter(|(_, &f)| f)
                    .map(|(n, _)| n)
                    .collect();
                prop_assert_eq!(scored, scores_by_walk(&concrete, &p, &nodes, &snap), "round {}", round);
                if round == 1 {
                    break;
                }
                // Bind and unbind with the index's groups in place.
                let mut bound: Vec<Arc<PodInfo>> = first.clone();
                for (i, (spec, k)) in later.iter().enumerate() {
                    let pi = make_pod(100 + i, *spec, &on(*k));
                    prop_assert!(snap.add_pod(pi.clone()));
                    bound.push(pi);
                }
                for u in &unbind {
                    if bound.is_empty() {
                        break;
                    }
                    let pi = bound.remove(u % bound.len());
                    prop_assert!(snap.remove_pod(&pi.pod.spec.node_name, pi.uid()));
                }
            }
        }
    }
}
