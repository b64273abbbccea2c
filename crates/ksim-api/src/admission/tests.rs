//! Upstream's test tables as facts: `defaulttolerationseconds/admission_test.go`
//! (`TestForgivenessAdmission`), `limitranger/admission_test.go` (`TestDefaultContainerResourceRequirements`,
//! `TestMergePodResourceRequirements`, `TestPodLimitFunc`, `TestLimitRangerIgnoresSubresource`
//! where it applies) and `resourcequota` (`TestAdmitBelowQuotaLimit`, `TestAdmitExceedQuotaLimit`,
//! `TestAdmitEnforceQuotaConstraints`, `TestAdmitBelowBestEffortQuotaLimit`).

use super::*;
use std::collections::BTreeMap;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap()
}

fn list(pairs: &[(&str, &str)]) -> ResourceList {
    pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
}

fn pod_json(json: &str) -> Pod {
    serde_json::from_str(json).unwrap()
}

fn tol(key: &str, effect: &str, secs: Option<i64>) -> Toleration {
    Toleration {
        key: key.into(),
        operator: "Exists".into(),
        value: String::new(),
        effect: effect.into(),
        toleration_seconds: secs,
    }
}

#[test]
fn forgiveness_admission_table() {
    let nr = |s| tol(TAINT_NOT_READY, "NoExecute", Some(s));
    let ur = |s| tol(TAINT_UNREACHABLE, "NoExecute", Some(s));
    // (name, tolerations in, tolerations out)
    let cases: Vec<(&str, Vec<Toleration>, Vec<Toleration>)> = vec![
        ("pod has no tolerations, expect add tolerations for not-ready:NoExecute and unreachable:NoExecute",
            vec![], vec![nr(300), ur(300)]),
        ("pod has alpha tolerations, expect add tolerations for not-ready:NoExecute and unreachable:NoExecute",
            vec![tol("foo", "NoSchedule", None)],
            vec![tol("foo", "NoSchedule", None), nr(300), ur(300)]),
        ("pod specified a toleration for not-ready taint, expect add toleration for unreachable",
            vec![nr(700)], vec![nr(700), ur(300)]),
        ("pod specified a toleration for unreachable taint, expect add toleration for not-ready",
            vec![ur(700)], vec![ur(700), nr(300)]),
        ("pod specified tolerations for both not-ready and unreachable taints, expect no change",
            vec![nr(700), ur(60)], vec![nr(700), ur(60)]),
        ("pod specified toleration for not-ready taint with NoSchedule effect, expect add both",
            vec![tol(TAINT_NOT_READY, "NoSchedule", None)],
            vec![tol(TAINT_NOT_READY, "NoSchedule", None), nr(300), ur(300)]),
        ("pod specified toleration for not-ready taint with empty effect, expect add unreachable only",
            vec![tol(TAINT_NOT_READY, "", None)],
            vec![tol(TAINT_NOT_READY, "", None), ur(300)]),
        ("pod specified toleration for unreachable taint with empty effect and no seconds",
            vec![tol(TAINT_UNREACHABLE, "", None)],
            vec![tol(TAINT_UNREACHABLE, "", None), nr(300)]),
    ];
    for (name, input, want) in cases {
        let mut p = Pod::default();
        p.spec.tolerations = input;
        default_toleration_seconds(&mut p, 300, 300);
        assert_eq!(p.spec.tolerations, want, "{name}");
    }
    // The flags set the seconds.
    let mut p = Pod::default();
    default_toleration_seconds(&mut p, 10, 20);
    assert_eq!(p.spec.tolerations, vec![nr(10), ur(20)]);
}

fn limit_range(items: Vec<LimitRangeItem>) -> LimitRange {
    let mut lr = LimitRange::default();
    lr.metadata.name = "abc".into();
    lr.metadata.namespace = "test".into();
    for mut i in items {
        default_limit_range_item(&mut i);
        lr.spec.limits.push(i);
    }
    lr
}

/// upstream `createLimitRange(limitType, min, max, defaultLimit, defaultRequest, ratio)`.
fn item(
    t: &str,
    min: ResourceList,
    max: ResourceList,
    dl: ResourceList,
    dr: ResourceList,
    ratio: ResourceList,
) -> LimitRangeItem {
    LimitRangeItem {
        type_: t.into(),
        max,
        min,
        default: dl,
        default_request: dr,
        max_limit_request_ratio: ratio,
    }
}

/// upstream `getComputeResourceList(cpu, memory)` (empty strings left out).
fn res(cpu: &str, mem: &str) -> ResourceList {
    let mut l = ResourceList::new();
    if !cpu.is_empty() {
        l.insert("cpu".into(), q(cpu));
    }
    if !mem.is_empty() {
        l.insert("memory".into(), q(mem));
    }
    l
}

/// upstream `validPod(name, numContainers, resources)`.
fn valid_pod(n: usize, req: ResourceList, lim: ResourceList) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = "p".into();
    p.metadata.namespace = "test".into();
    for i in 0..n {
        let mut c = crate::core::Container {
            name: format!("foo-{i}"),
            ..Default::default()
        };
        c.resources.requests = req.clone();
        c.resources.limits = lim.clone();
        p.spec.containers.push(c);
    }
    p
}

fn valid_pod_init(p: Pod, n: usize, req: ResourceList, lim: ResourceList) -> Pod {
    let mut p = p;
    for i in 0..n {
        let mut c = crate::core::Container {
            name: format!("foo-init-{i}"),
            ..Default::default()
        };
        c.resources.requests = req.clone();
        c.resources.limits = lim.clone();
        p.spec.init_containers.push(c);
    }
    p
}

#[test]
fn limit_range_item_defaults() {
    // SetDefaults_LimitRangeItem: default <- max, defaultRequest <- default, then min.
    let mut i = item(
        "Container",
        res("100m", ""),
        res("2", "1Gi"),
        ResourceList::new(),
        ResourceList::new(),
        ResourceList::new(),
    );
    default_limit_range_item(&mut i);
    assert_eq!(i.default, res("2", "1Gi"));
    assert_eq!(i.default_request, res("2", "1Gi"));
    let mut i = item(
        "Container",
        res("100m", "10Mi"),
        ResourceList::new(),
        ResourceList::new(),
        ResourceList::new(),
        ResourceList::new(),
    );
    default_limit_range_item(&mut i);
    assert_eq!(i.default_request, res("100m", "10Mi"));
    let mut i = item(
        "Pod",
        res("100m", ""),
        res("2", ""),
        ResourceList::new(),
        ResourceList::new(),
        ResourceList::new(),
    );
    default_limit_range_item(&mut i);
    assert!(i.default.is_empty() && i.default_request.is_empty());
}

#[test]
fn merge_pod_resource_requirements_table() {
    // TestMergePodResourceRequirements: a pod with no resources gets the defaults.
    let lr = limit_range(vec![item(
        "Container",
        ResourceList::new(),
        ResourceList::new(),
        res("50m", "5Mi"),
        res("25m", "1Mi"),
        ResourceList::new(),
    )]);
    let mut p = valid_pod(1, ResourceList::new(), ResourceList::new());
    limit_range_mutate(&lr, &mut p);
    assert_eq!(p.spec.containers[0].resources.requests, res("25m", "1Mi"));
    assert_eq!(p.spec.containers[0].resources.limits, res("50m", "5Mi"));
    assert_eq!(
        p.metadata.annotations[LIMIT_RANGER_ANNOTATION],
        "LimitRanger plugin set: cpu, memory request for container foo-0; cpu, memory limit for container foo-0"
    );
    // A pod that gives its own values keeps them: only the missing ones are filled.
    let mut p = valid_pod(1, res("", "2Mi"), res("1", ""));
    limit_range_mutate(&lr, &mut p);
    assert_eq!(p.spec.containers[0].resources.requests, res("25m", "2Mi"));
    assert_eq!(p.spec.containers[0].resources.limits, res("1", "5Mi"));
    // Init containers too.
    let mut p = valid_pod_init(
        valid_pod(1, res("1", "1Gi"), res("1", "1Gi")),
        1,
        ResourceList::new(),
        ResourceList::new(),
    );
    limit_range_mutate(&lr, &mut p);
    assert_eq!(
        p.spec.init_containers[0].resources.requests,
        res("25m", "1Mi")
    );
    assert_eq!(
        p.metadata.annotations[LIMIT_RANGER_ANNOTATION],
        "LimitRanger plugin set: cpu, memory request for init container foo-init-0; cpu, memory limit for init container foo-init-0"
    );
    // A full pod is not annotated.
    let mut p = valid_pod(1, res("1", "1Gi"), res("1", "1Gi"));
    limit_range_mutate(&lr, &mut p);
    assert!(!p.metadata.annotations.contains_key(LIMIT_RANGER_ANNOTATION));
}

#[test]
fn pod_limit_func_table() {
    let e = ResourceList::new;
    // TestPodLimitFunc successCases (pod, limitRange) after defaulting.
    let success: Vec<(LimitRange, Pod)> = vec![
        (
            limit_range(vec![item(
                "Container",
                res("", "50Mi"),
                res("", "100Mi"),
                e(),
                e(),
                e(),
            )]),
            valid_pod(1, res("", "55Mi"), res("", "55Mi")),
        ),
        (
            limit_range(vec![item(
                "Container",
                res("", ""),
                res("", "100Mi"),
                e(),
                e(),
                e(),
            )]),
            valid_pod(1, res("", "55Mi"), res("", "55Mi")),
        ),
        (
            limit_range(vec![item(
                "Container",
                res("", "50Mi"),
                res("", ""),
                e(),
                e(),
                e(),
            )]),
            valid_pod(1, res("", "55Mi"), res("", "")),
        ),
        (
            limit_range(vec![item(
                "Pod",
                res("", "50Mi"),
                res("", "100Mi"),
                e(),
                e(),
                e(),
            )]),
            valid_pod(2, res("", "26Mi"), res("", "50Mi")),
        ),
        (
            limit_range(vec![item("Container", e(), e(), e(), e(), res("", "1.5"))]),
            valid_pod(1, res("", "100Mi"), res("", "150Mi")),
        ),
        (
            limit_range(vec![item("Pod", e(), e(), e(), e(), res("", "1.5"))]),
            valid_pod(2, res("", "100Mi"), res("", "150Mi")),
        ),
        (
            limit_range(vec![item(
                "Container",
                res("", "1"),
                res("", "100Mi"),
                e(),
                e(),
                e(),
            )]),
            valid_pod(1, res("", "2"), res("", "100Mi")),
        ),
        // Init containers: the pod total is the larger of the containers' sum and an init
        // container's own.
        (
            limit_range(vec![item(
                "Pod",
                res("", "50Mi"),
                res("", "100Mi"),
                e(),
                e(),
                e(),
            )]),
            valid_pod_init(
                valid_pod(1, res("", "30Mi"), res("", "30Mi")),
                2,
                res("", "60Mi"),
                res("", "100Mi"),
            ),
        ),
    ];
    for (i, (lr, mut pod)) in success.into_iter().enumerate() {
        limit_range_mutate(&lr, &mut pod);
        let errs = limit_range_validate(&lr, &pod);
        assert!(errs.is_empty(), "success case {i}: {errs:?}");
    }
    // errorCases, with the message each gives.
    let errors: Vec<(LimitRange, Pod, &str)> = vec![
        (limit_range(vec![item("Container", res("", "50Mi"), res("", "100Mi"), e(), e(), e())]),
            valid_pod(1, res("", "25Mi"), res("", "25Mi")),
            "minimum memory usage per Container is 50Mi, but request is 25Mi"),
        (limit_range(vec![item("Container", res("", "50Mi"), res("", "100Mi"), e(), e(), e())]),
            valid_pod(1, res("", "75Mi"), res("", "200Mi")),
            "maximum memory usage per Container is 100Mi, but limit is 200Mi"),
        (limit_range(vec![item("Container", e(), res("", "100Mi"), e(), e(), e())]),
            valid_pod(1, res("", "101Mi"), res("", "100Mi")),
            "maximum memory usage per Container is 100Mi, but request is 101Mi"),
        (limit_range(vec![item("Pod", res("", "50Mi"), res("", "100Mi"), e(), e(), e())]),
            valid_pod(2, res("", "10Mi"), res("", "20Mi")),
            "minimum memory usage per Pod is 50Mi, but request is 20971520"),
        (limit_range(vec![item("Pod", res("", "50Mi"), res("", "100Mi"), e(), e(), e())]),
            valid_pod(3, res("", "40Mi"), res("", "40Mi")),
            "maximum memory usage per Pod is 100Mi, but limit is 125829120"),
        (limit_range(vec![item("Container", e(), e(), e(), e(), res("1", ""))]),
            valid_pod(1, res("1", ""), res("2", "")),
            "cpu max limit to request ratio per Container is 1, but provided ratio is 2.000000"),
        (limit_range(vec![item("Container", e(), e(), e(), e(), res("", "1.5"))]),
            valid_pod(1, res("", "100Mi"), res("", "151Mi")),
            "memory max limit to request ratio per Container is 1500m, but provided ratio is 1.510000"),
        (limit_range(vec![item("Pod", e(), e(), e(), e(), res("", "1.5"))]),
            valid_pod(2, res("", "100Mi"), res("", "151Mi")),
            "memory max limit to request ratio per Pod is 1500m, but provided ratio is 1.510000"),
        (limit_range(vec![item("Pod", res("", "50Mi"), e(), e(), e(), e())]),
            valid_pod_init(valid_pod(1, res("", "10Mi"), res("", "10Mi")), 1, res("", "20Mi"), res("", "20Mi")),
            "minimum memory usage per Pod is 50Mi, but request is 20971520"),
    ];
    for (i, (lr, mut pod, want)) in errors.into_iter().enumerate() {
        limit_range_mutate(&lr, &mut pod);
        let errs = limit_range_validate(&lr, &pod);
        assert!(!errs.is_empty(), "error case {i} passed");
        if !want.is_empty() {
            assert!(
                errs.iter().any(|m| m == want),
                "error case {i}: {errs:?}, want {want}"
            );
        }
    }
    // A Container item with a max and no default defaults the limit to the max, so a pod
    // without limits passes (defaulting) rather than "No limit is specified".
    let lr = limit_range(vec![item(
        "Container",
        e(),
        res("", "100Mi"),
        e(),
        e(),
        e(),
    )]);
    let mut p = valid_pod(1, ResourceList::new(), ResourceList::new());
    limit_range_mutate(&lr, &mut p);
    assert!(limit_range_validate(&lr, &p).is_empty());
    // Without defaulting, the message upstream gives.
    let raw = LimitRange {
        spec: LimitRangeSpec {
            limits: vec![item("Container", e(), res("", "100Mi"), e(), e(), e())],
        },
        ..Default::default()
    };
    assert_eq!(
        limit_range_validate(&raw, &valid_pod(1, e(), e())),
        vec!["maximum memory usage per Container is 100Mi.  No limit is specified".to_string()]
    );
    let raw = LimitRange {
        spec: LimitRangeSpec {
            limits: vec![item("Container", res("100m", ""), e(), e(), e(), e())],
        },
        ..Default::default()
    };
    assert_eq!(
        limit_range_validate(&raw, &valid_pod(1, e(), e())),
        vec!["minimum cpu usage per Container is 100m.  No request is specified".to_string()]
    );
}

fn quota(name: &str, hard: &[(&str, &str)]) -> ResourceQuota {
    let mut rq = ResourceQuota::default();
    rq.metadata.name = name.into();
    rq.metadata.namespace = "test".into();
    rq.spec.hard = list(hard);
    rq
}

fn used(pairs: &[(&str, &str)]) -> BTreeMap<String, i64> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), q(v).milli_value()))
        .collect()
}

#[test]
fn quota_admission_table() {
    // TestAdmitBelowQuotaLimit: used cpu 1, memory 50Gi, pods 3 of 3, 100Gi, 5.
    let rq = quota("quota", &[("cpu", "3"), ("memory", "100Gi"), ("pods", "5")]);
    let now = used(&[("cpu", "1"), ("memory", "50Gi"), ("pods", "3")]);
    let pod = valid_pod(1, res("100m", "2Gi"), ResourceList::new());
    let add = quota_check(&rq, &now, &pod).unwrap();
    assert_eq!(
        add,
        used(&[("cpu", "100m"), ("memory", "2Gi"), ("pods", "1")])
    );
    // TestAdmitExceedQuotaLimit.
    let pod = valid_pod(1, res("3", "2Gi"), ResourceList::new());
    assert_eq!(
        quota_check(&rq, &now, &pod).unwrap_err(),
        "exceeded quota: quota, requested: cpu=3, used: cpu=1, limited: cpu=3"
    );
    // Several exceeded resources, in name order.
    let pod = valid_pod(1, res("3", "60Gi"), ResourceList::new());
    let err = quota_check(&rq, &now, &pod).unwrap_err();
    assert!(
        err.starts_with("exceeded quota: quota, requested: cpu=3,memory="),
        "{err}"
    );
    // TestAdmitEnforceQuotaConstraints: a quota on limits.cpu needs every container to give it.
    let rq = quota(
        "quota",
        &[
            ("cpu", "3"),
            ("memory", "100Gi"),
            ("limits.cpu", "2"),
            ("limits.memory", "100Gi"),
            ("pods", "5"),
        ],
    );
    let pod = valid_pod(1, res("100m", "2Gi"), res("200m", ""));
    assert_eq!(
        quota_check(&rq, &BTreeMap::new(), &pod).unwrap_err(),
        "failed quota: quota: must specify limits.memory"
    );
    // A quota on pods only constrains nothing about resources.
    let rq = quota("quota", &[("pods", "1")]);
    let pod = valid_pod(1, ResourceList::new(), ResourceList::new());
    assert!(quota_check(&rq, &BTreeMap::new(), &pod).is_ok());
    assert_eq!(
        quota_check(&rq, &used(&[("pods", "1")]), &pod).unwrap_err(),
        "exceeded quota: quota, requested: pods=1, used: pods=1, limited: pods=1"
    );
    // count/pods and requests.* forms.
    let rq = quota("q2", &[("count/pods", "2"), ("requests.cpu", "1")]);
    let pod = valid_pod(2, res("300m", ""), ResourceList::new());
    assert_eq!(
        quota_check(&rq, &used(&[("requests.cpu", "500m")]), &pod).unwrap_err(),
        "exceeded quota: q2, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1"
    );
}

#[test]
fn quota_scopes() {
    // TestAdmitBelowBestEffortQuotaLimit: a BestEffort quota counts only best-effort pods.
    let mut rq = quota("quota", &[("pods", "5")]);
    rq.spec.scopes = vec!["BestEffort".into()];
    assert!(quota_matches(
        &rq,
        &valid_pod(1, ResourceList::new(), ResourceList::new())
    ));
    assert!(!quota_matches(
        &rq,
        &valid_pod(1, res("1", ""), ResourceList::new())
    ));
    rq.spec.scopes = vec!["NotBestEffort".into()];
    assert!(quota_matches(
        &rq,
        &valid_pod(1, res("1", ""), ResourceList::new())
    ));
    rq.spec.scopes = vec!["Unknown".into()];
    assert_eq!(check_quota(&rq).unwrap_err().0, "spec.scopes[0]");
    rq.spec.scopes = vec!["Terminating".into()];
    assert!(check_quota(&rq).is_ok());
}

fn req(scope: &str, op: &str, values: &[&str]) -> ScopedResourceSelectorRequirement {
    ScopedResourceSelectorRequirement {
        scope_name: scope.into(),
        operator: op.into(),
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

/// upstream `TestPodEvaluatorMatchingScopes` (`pkg/quota/v1/evaluator/core/pods_test.go`):
/// which of the six selectors (Terminating, NotTerminating, BestEffort, NotBestEffort,
/// PriorityClass In [class1], CrossNamespacePodAffinity) match each pod.
#[test]
fn pod_evaluator_matching_scopes_table() {
    let all = [
        req("Terminating", "", &[]),
        req("NotTerminating", "", &[]),
        req("BestEffort", "", &[]),
        req("NotBestEffort", "", &[]),
        req("PriorityClass", "In", &["class1"]),
        req("CrossNamespacePodAffinity", "", &[]),
    ];
    let pod = |v: serde_json::Value| -> Pod { serde_json::from_value(v).expect("pod") };
    let deadline = serde_json::json!(30);
    let term = |ns: bool, sel: bool| {
        let mut t = serde_json::json!({"labelSelector": {}, "topologyKey": "zone"});
        if ns {
            t["namespaces"] = serde_json::json!(["ns1"]);
        }
        if sel {
            t["namespaceSelector"] = serde_json::json!({});
        }
        t
    };
    let affinity = |kind: &str, required: bool, t: serde_json::Value| {
        let terms = if required {
            serde_json::json!({"requiredDuringSchedulingIgnoredDuringExecution": [t]})
        } else {
            serde_json::json!({"preferredDuringSchedulingIgnoredDuringExecution":
                [{"weight": 1, "podAffinityTerm": t}]})
        };
        pod(
            serde_json::json!({"spec": {"activeDeadlineSeconds": deadline,
            "affinity": {kind: terms}}}),
        )
    };
    let cases: Vec<(&str, Pod, Vec<&str>)> = vec![
        (
            "EmptyPod",
            Pod::default(),
            vec!["NotTerminating", "BestEffort"],
        ),
        (
            "PriorityClass",
            pod(serde_json::json!({"spec": {"priorityClassName": "class1"}})),
            vec!["NotTerminating", "BestEffort", "PriorityClass"],
        ),
        (
            "NotBestEffort",
            pod(
                serde_json::json!({"spec": {"containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1", "memory": "50M", "example.com/dongle": "1"},
                "limits": {"cpu": "2", "memory": "100M", "example.com/dongle": "1"}}}]}}),
            ),
            vec!["NotTerminating", "NotBestEffort"],
        ),
        (
            "Terminating",
            pod(serde_json::json!({"spec": {"activeDeadlineSeconds": deadline}})),
            vec!["Terminating", "BestEffort"],
        ),
        (
            "CrossNamespaceRequiredAffinity",
            affinity("podAffinity", true, term(true, true)),
            vec!["Terminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "CrossNamespaceRequiredAffinityWithSlice",
            affinity("podAffinity", true, term(true, false)),
            vec!["Terminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "CrossNamespacePreferredAffinity",
            affinity("podAffinity", false, term(true, true)),
            vec!["Terminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "CrossNamespacePreferredAffinityWithSelector",
            affinity("podAffinity", false, term(false, true)),
            vec!["Terminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "CrossNamespacePreferredAntiAffinity",
            affinity("podAntiAffinity", false, term(false, true)),
            vec!["Terminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "CrossNamespaceRequiredAntiAffinity",
            affinity("podAntiAffinity", true, term(true, false)),
            vec!["Terminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "SameNamespaceAffinity",
            affinity("podAffinity", true, term(false, false)),
            vec!["Terminating", "BestEffort"],
        ),
    ];
    for (name, p, want) in cases {
        let got: Vec<&str> = all
            .iter()
            .filter(|r| pod_matches_scope(r, &p))
            .map(|r| r.scope_name.as_str())
            .collect();
        assert_eq!(got, want, "{name}");
    }
    // "OnlyTerminating": the Terminating selector alone.
    let p = pod(serde_json::json!({"spec": {"activeDeadlineSeconds": deadline}}));
    assert!(pod_matches_scope(&req("Terminating", "", &[]), &p));
}

/// A quota's `scopeSelector` on PriorityClass, as the label selector upstream builds
/// (`ScopedResourceSelectorRequirementsAsSelector`): In, NotIn, Exists, DoesNotExist, with and
/// without a class on the pod; spec.scopes and the selector must all match.
#[test]
fn priority_class_scope_selector() {
    let high: Pod =
        serde_json::from_value(serde_json::json!({"spec": {"priorityClassName": "high"}}))
            .expect("pod");
    let none = Pod::default();
    let cases = [
        (req("PriorityClass", "In", &["high", "low"]), true, false),
        (req("PriorityClass", "In", &["low"]), false, false),
        (req("PriorityClass", "NotIn", &["low"]), true, true),
        (req("PriorityClass", "NotIn", &["high"]), false, true),
        (req("PriorityClass", "Exists", &[]), true, false),
        (req("PriorityClass", "DoesNotExist", &[]), false, true),
    ];
    for (r, on_high, on_none) in cases {
        assert_eq!(pod_matches_scope(&r, &high), on_high, "{r:?} high");
        assert_eq!(pod_matches_scope(&r, &none), on_none, "{r:?} none");
    }
    let mut rq = quota("quota", &[("pods", "5")]);
    rq.spec.scopes = vec!["BestEffort".into()];
    rq.spec.scope_selector = Some(ScopeSelector {
        match_expressions: vec![req("PriorityClass", "In", &["high"])],
    });
    assert!(check_quota(&rq).is_ok());
    assert!(quota_matches(&rq, &high));
    assert!(!quota_matches(&rq, &none));
    // Refused as the API server refuses them, naming the field.
    rq.spec.scope_selector = Some(ScopeSelector {
        match_expressions: vec![req("PriorityClass", "In", &[])],
    });
    assert_eq!(
        check_quota(&rq).unwrap_err().0,
        "spec.scopeSelector.matchExpressions[0].values"
    );
    rq.spec.scope_selector = Some(ScopeSelector {
        match_expressions: vec![req("BestEffort", "In", &["x"])],
    });
    assert_eq!(
        check_quota(&rq).unwrap_err().0,
        "spec.scopeSelector.matchExpressions[0].operator"
    );
}

#[test]
fn pod_usage_counts_init_containers_and_overhead() {
    let mut p = valid_pod_init(
        valid_pod(2, res("100m", "1Gi"), res("200m", "")),
        1,
        res("500m", ""),
        ResourceList::new(),
    );
    p.spec.overhead = res("10m", "");
    let u = pod_usage(&p);
    assert_eq!(u["requests.cpu"], 510);
    assert_eq!(u["cpu"], 510);
    assert_eq!(u["limits.cpu"], 410);
    assert_eq!(u["requests.memory"], q("2Gi").milli_value());
    assert!(!u.contains_key("limits.memory"));
    assert_eq!(u["pods"], 1000);
    let _ = pod_json(r#"{"metadata":{"name":"x"}}"#);
}
