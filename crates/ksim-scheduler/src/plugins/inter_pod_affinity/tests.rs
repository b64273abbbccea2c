use super::*;
use crate::framework::Code;
use crate::framework::CycleState;
use crate::node_info::{NodeInfo, Snapshot};
use ksim_api::config::Profile;
use ksim_api::{Namespace, Pod};
use serde_json::{json, Value};

fn labels(kv: &[(&str, &str)]) -> Value {
    Value::Object(
        kv.iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect(),
    )
}

fn node(name: &str, zone: Option<&str>) -> Arc<Node> {
    let mut l = vec![("kubernetes.io/hostname", name)];
    if let Some(z) = zone {
        l.push(("zone", z));
    }
    Arc::new(
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels(&l)}})).unwrap(),
    )
}

fn pod(name: &str, ns: &str, node: &str, l: &[(&str, &str)], affinity: Value) -> PodInfo {
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "uid": name, "labels": labels(l)},
        "spec": {"nodeName": node, "affinity": affinity, "containers": []}
    }))
    .unwrap();
    PodInfo::new(p)
}

fn term(key: &str, sel: &[(&str, &str)]) -> Value {
    json!({"labelSelector": {"matchLabels": labels(sel)}, "topologyKey": key})
}

fn required(kind: &str, terms: Vec<Value>) -> Value {
    json!({kind: {"requiredDuringSchedulingIgnoredDuringExecution": terms}})
}

fn preferred(kind: &str, terms: Vec<(i32, Value)>) -> Value {
    let t: Vec<Value> = terms
        .into_iter()
        .map(|(w, t)| json!({"weight": w, "podAffinityTerm": t}))
        .collect();
    json!({kind: {"preferredDuringSchedulingIgnoredDuringExecution": t}})
}

fn snapshot(
    nodes: Vec<Arc<Node>>,
    pods: Vec<PodInfo>,
    ns: Vec<(&str, &[(&str, &str)])>,
) -> Snapshot {
    let namespaces = ns
        .into_iter()
        .map(|(n, l)| {
            let ns: Namespace =
                serde_json::from_value(json!({"metadata": {"name": n, "labels": labels(l)}}))
                    .unwrap();
            (n.to_string(), ns)
        })
        .collect();
    let objects = ClusterObjects {
        namespaces,
        ..Default::default()
    };
    Snapshot::build(nodes, pods.into_iter().map(Arc::new), Arc::new(objects))
}

fn plugin(args: Value) -> InterPodAffinity {
    let args: InterPodAffinityArgs = decode_args(NAME, Some(&args)).unwrap();
    validate_args(&args).unwrap();
    InterPodAffinity {
        hard_pod_affinity_weight: args.hard_pod_affinity_weight,
        ignore_preferred_terms_of_existing_pods: args.ignore_preferred_terms_of_existing_pods,
    }
}

/// Runs PreFilter and Filter on every node; returns (prefilter skipped, per-node result).
fn run_filter(
    pl: &InterPodAffinity,
    pod: &PodInfo,
    s: &Snapshot,
) -> (bool, Vec<(String, Code, String)>) {
    let mut state = CycleState::new();
    let (_, st) = pl.pre_filter(&mut state, pod, s);
    if st.is_skip() {
        return (true, Vec::new());
    }
    assert!(st.is_success(), "{st}");
    let out = s
        .nodes
        .iter()
        .map(|n| {
            let st = pl.filter(&state, pod, n).into_status();
            // A copy of the node (not the snapshot's own NodeInfo: its value is looked up by
            // label instead of read by node index) gets the same verdict.
            let copy = n.clone();
            let again = pl.filter(&state, pod, &copy).into_status();
            assert_eq!((again.code, again.message()), (st.code, st.message()));
            (n.name().to_string(), st.code, st.message())
        })
        .collect();
    (false, out)
}

fn codes(res: &[(String, Code, String)]) -> Vec<(&str, Code)> {
    let mut v: Vec<(&str, Code)> = res.iter().map(|(n, c, _)| (n.as_str(), *c)).collect();
    v.sort();
    v
}

#[test]
fn filter_table() {
    use Code::*;
    let nodes = || {
        vec![
            node("a", Some("z1")),
            node("b", Some("z1")),
            node("c", Some("z2")),
            node("d", None),
        ]
    };
    struct Case {
        name: &'static str,
        existing: Vec<PodInfo>,
        pod: PodInfo,
        skipped: bool,
        want: Vec<(&'static str, Code)>,
    }
    let web = |n: &str, node: &str| pod(n, "default", node, &[("app", "web")], Value::Null);
    let cases = vec![
        Case {
            name: "required affinity zone; node without the key is unresolvable",
            existing: vec![web("w", "a")],
            pod: pod(
                "p",
                "default",
                "",
                &[],
                required("podAffinity", vec![term("zone", &[("app", "web")])]),
            ),
            skipped: false,
            want: vec![
                ("a", Success),
                ("b", Success),
                ("c", UnschedulableAndUnresolvable),
                ("d", UnschedulableAndUnresolvable),
            ],
        },
        Case {
            name: "first pod of a group: allowed wherever the topology key exists",
            existing: vec![],
            pod: pod(
                "p",
                "default",
                "",
                &[("app", "web")],
                required("podAffinity", vec![term("zone", &[("app", "web")])]),
            ),
            skipped: false,
            want: vec![
                ("a", Success),
                ("b", Success),
                ("c", Success),
                ("d", UnschedulableAndUnresolvable),
            ],
        },
        Case {
            name: "affinity to nothing that the pod itself does not match",
            existing: vec![],
            pod: pod(
                "p",
                "default",
                "",
                &[("app", "x")],
                required("podAffinity", vec![term("zone", &[("app", "web")])]),
            ),
            skipped: false,
            want: vec![
                ("a", UnschedulableAndUnresolvable),
                ("b", UnschedulableAndUnresolvable),
                ("c", UnschedulableAndUnresolvable),
                ("d", UnschedulableAndUnresolvable),
            ],
        },
        Case {
            name: "required anti-affinity zone; node without the key passes",
            existing: vec![web("w", "a")],
            pod: pod(
                "p",
                "default",
                "",
                &[],
                required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
            ),
            skipped: false,
            want: vec![
                ("a", Unschedulable),
                ("b", Unschedulable),
                ("c", Success),
                ("d", Success),
            ],
        },
        Case {
            name: "anti-affinity in another namespace does not count",
            existing: vec![pod("w", "other", "a", &[("app", "web")], Value::Null)],
            pod: pod(
                "p",
                "default",
                "",
                &[],
                required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
            ),
            skipped: false,
            want: vec![
                ("a", Success),
                ("b", Success),
                ("c", Success),
                ("d", Success),
            ],
        },
        Case {
            name: "existing pod's anti-affinity repels the incoming pod",
            existing: vec![pod(
                "w",
                "default",
                "c",
                &[],
                required(
                    "podAntiAffinity",
                    vec![term("kubernetes.io/hostname", &[("app", "web")])],
                ),
            )],
            pod: web("p", ""),
            skipped: false,
            want: vec![
                ("a", Success),
                ("b", Success),
                ("c", Unschedulable),
                ("d", Success),
            ],
        },
        Case {
            name: "nothing to do: PreFilter skips",
            existing: vec![pod(
                "w",
                "default",
                "c",
                &[],
                required("podAntiAffinity", vec![term("zone", &[("app", "db")])]),
            )],
            pod: web("p", ""),
            skipped: true,
            want: vec![],
        },
    ];
    let pl = plugin(json!({}));
    for c in cases {
        let s = snapshot(nodes(), c.existing, vec![]);
        let (skipped, res) = run_filter(&pl, &c.pod, &s);
        assert_eq!(skipped, c.skipped, "{}", c.name);
        assert_eq!(codes(&res), c.want, "{}", c.name);
    }
}

#[test]
fn filter_reasons() {
    let nodes = vec![node("a", Some("z1")), node("b", Some("z2"))];
    let existing = vec![
        pod("w", "default", "a", &[("app", "web")], Value::Null),
        pod(
            "g",
            "default",
            "b",
            &[],
            required("podAntiAffinity", vec![term("zone", &[("role", "x")])]),
        ),
    ];
    let s = snapshot(nodes, existing, vec![]);
    let pl = plugin(json!({}));
    let p = pod(
        "p",
        "default",
        "",
        &[("role", "x")],
        required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
    );
    let (_, res) = run_filter(&pl, &p, &s);
    assert_eq!(res[0].2, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
    assert_eq!(res[1].2, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
    let p = pod(
        "p",
        "default",
        "",
        &[],
        required(
            "podAffinity",
            vec![term("zone", &[("app", "nope")]), term("zone", &[])],
        ),
    );
    let (_, res) = run_filter(&pl, &p, &s);
    assert_eq!(res[0].2, ERR_REASON_AFFINITY_RULES_NOT_MATCH);
}

#[test]
fn namespace_selector() {
    let nodes = vec![
        node("a", Some("z1")),
        node("b", Some("z2")),
        node("c", Some("z3")),
    ];
    let existing = vec![
        pod("x", "ns-a", "a", &[("app", "web")], Value::Null),
        pod("y", "ns-b", "b", &[("app", "web")], Value::Null),
        pod("z", "unlisted", "c", &[("app", "web")], Value::Null),
    ];
    let s = snapshot(
        nodes,
        existing,
        vec![("ns-a", &[("team", "a")]), ("ns-b", &[("team", "b")])],
    );
    let pl = plugin(json!({}));
    let with_ns_sel = |sel: Value| {
        let mut t = term("zone", &[("app", "web")]);
        t["namespaceSelector"] = sel;
        pod("p", "default", "", &[], required("podAffinity", vec![t]))
    };
    let pass = |p: &PodInfo| -> Vec<String> {
        let (_, res) = run_filter(&pl, p, &s);
        res.into_iter()
            .filter(|r| r.1 == Code::Success)
            .map(|r| r.0)
            .collect()
    };
    assert_eq!(
        pass(&with_ns_sel(json!({"matchLabels": {"team": "b"}}))),
        vec!["b"]
    );
    assert_eq!(pass(&with_ns_sel(json!({}))), vec!["a", "b", "c"]);
    // An unlisted namespace exists with no labels.
    assert_eq!(
        pass(&with_ns_sel(
            json!({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]})
        )),
        vec!["c"]
    );
}

#[test]
fn add_and_remove_pod_update_counts() {
    let nodes = vec![node("a", Some("z1")), node("b", Some("z2"))];
    let repeller = Arc::new(pod(
        "r",
        "default",
        "a",
        &[],
        required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
    ));
    let s = snapshot(nodes, vec![(*repeller).clone()], vec![]);
    let pl = plugin(json!({}));
    let p = pod(
        "p",
        "default",
        "",
        &[("app", "web")],
        required("podAffinity", vec![term("zone", &[("app", "web")])]),
    );
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &p, &s).1.is_success());
    // First pod of its group: z2 is fine, z1 is repelled by the existing pod.
    assert_eq!(
        pl.filter(&state, &p, &s.nodes[0]).code(),
        Code::Unschedulable
    );
    assert!(pl.filter(&state, &p, &s.nodes[1]).is_success());

    // Preemption dry run: without the repeller, z1 passes.
    let mut removed = state.clone();
    assert!(pl
        .remove_pod(&mut removed, &p, &repeller, &s.nodes[0], &s)
        .is_success());
    assert!(pl.filter(&removed, &p, &s.nodes[0]).is_success());

    // A nominated matching pod on b: now only z2 satisfies the affinity.
    let nominated = Arc::new(pod("n", "default", "b", &[("app", "web")], Value::Null));
    let mut added = removed.clone();
    assert!(pl
        .add_pod(&mut added, &p, &nominated, &s.nodes[1], &s)
        .is_success());
    assert_eq!(
        pl.filter(&added, &p, &s.nodes[0]).code(),
        Code::UnschedulableAndUnresolvable
    );
    assert!(pl.filter(&added, &p, &s.nodes[1]).is_success());
    // Removing it again restores the "first pod" state (entries at zero are deleted).
    assert!(pl
        .remove_pod(&mut added, &p, &nominated, &s.nodes[1], &s)
        .is_success());
    assert!(pl.filter(&added, &p, &s.nodes[0]).is_success());
}

/// PreScore + Score + NormalizeScore over every node; None when PreScore skipped.
fn run_score(pl: &InterPodAffinity, pod: &PodInfo, s: &Snapshot) -> Option<(Vec<i64>, Vec<i64>)> {
    let mut state = CycleState::new();
    let nodes: Vec<&NodeInfo> = s.nodes.iter().collect();
    let st = pl.pre_score(&mut state, pod, &nodes, s);
    if st.is_skip() {
        return None;
    }
    let raw: Vec<i64> = nodes
        .iter()
        .map(|n| pl.score(&state, pod, n).unwrap())
        .collect();
    // The batch form gives the same scores.
    let mut batch = Vec::new();
    pl.score_nodes(&state, pod, &nodes, &mut batch).unwrap();
    assert_eq!(batch, raw);
    // Copies of the nodes (values looked up by label, not read by node index) score the same.
    let copies: Vec<NodeInfo> = s.nodes.to_vec();
    let copy_refs: Vec<&NodeInfo> = copies.iter().collect();
    let mut again = Vec::new();
    pl.score_nodes(&state, pod, &copy_refs, &mut again).unwrap();
    assert_eq!(again, raw);
    let mut norm = raw.clone();
    assert!(pl.normalize(&state, pod, &mut norm).is_success());
    Some((raw, norm))
}

#[test]
fn score_table() {
    let nodes = || {
        vec![
            node("a", Some("z1")),
            node("b", Some("z1")),
            node("c", Some("z2")),
            node("d", None),
        ]
    };
    let db = |n: &str, node: &str| pod(n, "default", node, &[("app", "db")], Value::Null);
    struct Case {
        name: &'static str,
        args: Value,
        existing: Vec<PodInfo>,
        pod: PodInfo,
        want: Option<(Vec<i64>, Vec<i64>)>,
    }
    let cases = vec![
        Case {
            name: "preferred affinity by zone",
            args: json!({}),
            existing: vec![db("x", "a"), db("y", "c"), db("z", "c")],
            pod: pod(
                "p",
                "default",
                "",
                &[],
                preferred("podAffinity", vec![(10, term("zone", &[("app", "db")]))]),
            ),
            want: Some((vec![10, 10, 20, 0], vec![50, 50, 100, 0])),
        },
        Case {
            name: "preferred anti-affinity goes negative; min-max keeps order",
            args: json!({}),
            existing: vec![db("x", "a")],
            pod: pod(
                "p",
                "default",
                "",
                &[],
                preferred(
                    "podAntiAffinity",
                    vec![(30, term("kubernetes.io/hostname", &[("app", "db")]))],
                ),
            ),
            want: Some((vec![-30, 0, 0, 0], vec![0, 100, 100, 100])),
        },
        Case {
            name: "preferred affinity to nothing: skipped",
            args: json!({}),
            existing: vec![db("x", "a")],
            pod: pod(
                "p",
                "default",
                "",
                &[],
                preferred("podAffinity", vec![(10, term("zone", &[("app", "none")]))]),
            ),
            want: None,
        },
        Case {
            name: "existing pod's required affinity counts hardPodAffinityWeight",
            args: json!({"hardPodAffinityWeight": 10}),
            existing: vec![pod(
                "x",
                "default",
                "c",
                &[],
                required("podAffinity", vec![term("zone", &[("app", "web")])]),
            )],
            pod: pod("p", "default", "", &[("app", "web")], Value::Null),
            want: Some((vec![0, 0, 10, 0], vec![0, 0, 100, 0])),
        },
        Case {
            name: "hardPodAffinityWeight 0 disables it",
            args: json!({"hardPodAffinityWeight": 0}),
            existing: vec![pod(
                "x",
                "default",
                "c",
                &[],
                required("podAffinity", vec![term("zone", &[("app", "web")])]),
            )],
            pod: pod("p", "default", "", &[("app", "web")], Value::Null),
            want: None,
        },
        Case {
            name: "existing pod's preferred anti-affinity toward the incoming pod",
            args: json!({}),
            existing: vec![pod(
                "x",
                "default",
                "a",
                &[],
                preferred(
                    "podAntiAffinity",
                    vec![(5, term("zone", &[("app", "web")]))],
                ),
            )],
            pod: pod("p", "default", "", &[("app", "web")], Value::Null),
            want: Some((vec![-5, -5, 0, 0], vec![0, 0, 100, 100])),
        },
        Case {
            name: "ignorePreferredTermsOfExistingPods skips when the pod has no preferences",
            args: json!({"ignorePreferredTermsOfExistingPods": true}),
            existing: vec![pod(
                "x",
                "default",
                "a",
                &[],
                preferred(
                    "podAntiAffinity",
                    vec![(5, term("zone", &[("app", "web")]))],
                ),
            )],
            pod: pod("p", "default", "", &[("app", "web")], Value::Null),
            want: None,
        },
    ];
    for c in cases {
        let s = snapshot(nodes(), c.existing, vec![]);
        assert_eq!(run_score(&plugin(c.args), &c.pod, &s), c.want, "{}", c.name);
    }
}

#[test]
fn args_validation() {
    let profile = Profile::default();
    let bad = json!({"hardPodAffinityWeight": 101});
    let err = new(&FactoryArgs {
        args: Some(&bad),
        profile: &profile,
        features: &Default::default(),
    })
    .err()
    .unwrap();
    assert!(err.contains("not in valid range [0, 100]"), "{err}");
    let ok = json!({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": true});
    assert!(new(&FactoryArgs {
        args: Some(&ok),
        profile: &profile,
        features: &Default::default(),
    })
    .is_ok());
}

#[test]
fn pod_hints() {
    use QueueingHint::*;
    let target = pod(
        "p",
        "default",
        "",
        &[],
        json!({
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("zone", &[("app", "web")])]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("zone", &[("app", "db")])]}
        }),
    );
    let web = pod("w", "default", "a", &[("app", "web")], Value::Null);
    let db = pod("d", "default", "a", &[("app", "db")], Value::Null);
    let other = pod("o", "default", "a", &[("app", "x")], Value::Null);
    let unassigned = pod("u", "default", "", &[("app", "web")], Value::Null);
    let h = |old: Option<&PodInfo>, new: Option<&PodInfo>| {
        InterPodAffinity::hint_pod(&target, old, new)
    };
    assert_eq!(h(None, Some(&web)), Queue);
    assert_eq!(h(None, Some(&other)), Skip);
    assert_eq!(h(None, Some(&unassigned)), Skip);
    assert_eq!(h(Some(&db), None), Queue);
    assert_eq!(h(Some(&web), None), Skip);
    assert_eq!(h(Some(&other), Some(&web)), Queue);
    assert_eq!(h(Some(&db), Some(&other)), Queue);
    assert_eq!(h(Some(&web), Some(&web)), Skip);
}

#[test]
fn node_hints() {
    use QueueingHint::*;
    let aff = pod(
        "p",
        "default",
        "",
        &[],
        required("podAffinity", vec![term("zone", &[("app", "web")])]),
    );
    let anti = pod(
        "p",
        "default",
        "",
        &[],
        required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
    );
    let (z1, z2, none) = (
        node("n", Some("z1")),
        node("n", Some("z2")),
        node("n", None),
    );
    let h = |p: &PodInfo, old: Option<&Arc<Node>>, new: &Arc<Node>| {
        InterPodAffinity::hint_node(p, old.map(|n| &**n), Some(&**new))
    };
    // Affinity: a node with the key appears, or the key appears / changes value.
    assert_eq!(h(&aff, None, &z1), Queue);
    assert_eq!(h(&aff, None, &none), Skip);
    assert_eq!(h(&aff, Some(&none), &z1), Queue);
    assert_eq!(h(&aff, Some(&z1), &z2), Queue);
    assert_eq!(h(&aff, Some(&z1), &z1), Skip);
    assert_eq!(h(&aff, Some(&z1), &none), Skip);
    // Anti-affinity: any new node, or the key disappears / changes value.
    assert_eq!(h(&anti, None, &none), Queue);
    assert_eq!(h(&anti, Some(&z1), &none), Queue);
    assert_eq!(h(&anti, Some(&z1), &z2), Queue);
    assert_eq!(h(&anti, Some(&none), &z1), Skip);
    assert_eq!(h(&anti, Some(&z1), &z1), Skip);
}
