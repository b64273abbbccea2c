//! What-if forks as a user runs them: `ksim run SCENARIO --fork-at TIME --variant FILE...`.
//! An empty variant's outputs equal the uninterrupted run's byte for byte; a scheduler
//! configuration changes placements only from the fork on; removed nodes behave as a trace's
//! RemoveNode; scaling creates pods; added pools take pending pods; bad variants exit 2 naming
//! file, line and field.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ksim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn incident() -> PathBuf {
    root().join("scenarios/incident-zone-loss.yaml")
}

fn run(args: &[&str], extra: &[&Path]) -> Output {
    let mut c = ksim();
    c.args(args);
    for p in extra {
        c.arg(p);
    }
    c.output().expect("run ksim")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "ksim failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
}

/// `ksim run SCENARIO -q --event-log --out OUT [--fork-at T --variant V...]`.
fn run_scenario(scenario: &Path, out: &Path, fork: Option<(&str, &[PathBuf])>) -> Output {
    let mut c = ksim();
    c.arg("run")
        .arg(scenario)
        .args(["-q", "--event-log", "--out"])
        .arg(out);
    if let Some((t, variants)) = fork {
        c.args(["--fork-at", t]);
        for v in variants {
            c.arg("--variant").arg(v);
        }
    }
    c.output().expect("run ksim")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// CSV rows (header dropped) whose first column, a time in seconds, satisfies `keep`.
fn rows_where(csv: &str, keep: impl Fn(f64) -> bool) -> Vec<String> {
    csv.lines()
        .skip(1)
        .filter(|l| {
            l.split(',')
                .next()
                .and_then(|t| t.parse::<f64>().ok())
                .is_some_and(&keep)
        })
        .map(str::to_string)
        .collect()
}

/// events.jsonl lines whose `at` (µs) satisfies `keep`.
fn events_where(log: &str, keep: impl Fn(i64) -> bool) -> Vec<String> {
    log.lines()
        .filter(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .ok()
                .and_then(|v| v["at"].as_i64())
                .is_some_and(&keep)
        })
        .map(str::to_string)
        .collect()
}

const OUTPUTS: [&str; 7] = [
    "pods.csv",
    "placements.csv",
    "events.jsonl",
    "utilization.csv",
    "controllers.csv",
    "summary.json",
    "report.html",
];

#[test]
fn an_empty_variant_equals_the_uninterrupted_run_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let empty = d.join("empty.yaml");
    std::fs::write(&empty, "# no change\n").unwrap();
    let plain = d.join("plain");
    ok(&run_scenario(&incident(), &plain, None));
    // 11m: after zone b's loss (10m), before the scale-up (12m) and the preemptions (15m).
    let forked = d.join("forked");
    ok(&run_scenario(
        &incident(),
        &forked,
        Some(("11m", std::slice::from_ref(&empty))),
    ));
    let branch = forked.join("branches/empty");
    for f in OUTPUTS {
        let want = std::fs::read(plain.join(f)).expect(f);
        assert!(
            std::fs::read(branch.join(f)).expect(f) == want,
            "{f}: the empty variant's differs from the uninterrupted run's"
        );
        assert!(
            std::fs::read(forked.join(f)).expect(f) == want,
            "{f}: the base branch's differs from the uninterrupted run's"
        );
    }
    // From the fork instant on, explicitly (and not vacuously).
    let t = 660.0;
    let after = rows_where(&read(&plain.join("placements.csv")), |s| s >= t);
    assert!(
        after.len() > 10,
        "placements after the fork: {}",
        after.len()
    );
    assert_eq!(
        rows_where(&read(&branch.join("placements.csv")), |s| s >= t),
        after
    );
    let log_after = events_where(&read(&plain.join("events.jsonl")), |us| us >= 660_000_000);
    assert!(log_after.len() > 50);
    assert_eq!(
        events_where(&read(&branch.join("events.jsonl")), |us| us >= 660_000_000),
        log_after
    );
    // Every branch is a complete run that `ksim compare` accepts; the fork wrote the compare.
    assert!(branch.join("ksim-complete.json").is_file());
    assert!(branch.join("variant.yaml").is_file());
    let cmp = read(&forked.join("compare/compare.csv"));
    assert!(
        cmp.lines().nth(1).is_some_and(|l| l.starts_with("base,")),
        "{cmp}"
    );
    assert!(
        cmp.lines().nth(2).is_some_and(|l| l.starts_with("empty,")),
        "{cmp}"
    );
    ok(&run(&["compare"], &[&forked, &branch]));
    let meta = read(&forked.join("ksim-run.json"));
    assert!(meta.contains("\"forkAt\": \"11m\""), "{meta}");
}

#[test]
fn a_scheduler_config_variant_changes_placements_only_after_the_fork() {
    let tmp = tempfile::tempdir().unwrap();
    let forked = tmp.path().join("forked");
    let variant = root().join("scenarios/variants/most-allocated.yaml");
    ok(&run_scenario(
        &incident(),
        &forked,
        Some(("11m", std::slice::from_ref(&variant))),
    ));
    let base = read(&forked.join("placements.csv"));
    let ma = read(&forked.join("branches/most-allocated/placements.csv"));
    let t = 660.0;
    let before = rows_where(&base, |s| s <= t);
    assert!(before.len() > 10);
    assert_eq!(
        rows_where(&ma, |s| s <= t),
        before,
        "placements up to the fork"
    );
    let (a, b) = (rows_where(&base, |s| s > t), rows_where(&ma, |s| s > t));
    let differ = a.iter().zip(&b).filter(|(x, y)| x != y).count();
    assert!(
        differ > 0,
        "MostAllocated placed every pod after the fork as LeastAllocated did"
    );
    let cfg = read(&forked.join("branches/most-allocated/variant-scheduler-config.yaml"));
    assert!(cfg.contains("MostAllocated"), "{cfg}");
}

const NODES: &str = r#"{"apiVersion":"v1","kind":"List","items":[
 {"kind":"Node","metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"a"}},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}},
 {"kind":"Node","metadata":{"name":"n2","labels":{"topology.kubernetes.io/zone":"b"}},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}},
 {"kind":"Node","metadata":{"name":"n3","labels":{"topology.kubernetes.io/zone":"a"}},"status":{"allocatable":{"cpu":"8","memory":"32Gi","pods":"110"}}}]}"#;

/// Pods every 3 s (long runs, some high priority); with `remove`, RemoveNode lines for those
/// nodes at that time (s), in time order.
fn trace(remove: Option<(f64, &[&str])>) -> String {
    let mut s = String::new();
    let mut removed = false;
    for i in 0..120 {
        let at = (i * 3) as f64;
        if let Some((t, nodes)) = remove {
            if !removed && at > t {
                for n in nodes {
                    s.push_str(&format!(
                        "{{\"at\": \"{t}s\", \"kind\": \"RemoveNode\", \"name\": \"{n}\"}}\n"
                    ));
                }
                removed = true;
            }
        }
        let cpu = ["500m", "1", "1500m", "3"][i % 4];
        let prio = if i % 13 == 12 { 1000 } else { 0 };
        s.push_str(&format!(
            "{{\"at\": \"{at}s\", \"kind\": \"CreatePod\", \"runFor\": \"{}s\", \"pod\": {{\"metadata\": {{\"name\": \"p{i}\"}}, \"spec\": {{\"priority\": {prio}, \"containers\": [{{\"name\": \"c\", \"resources\": {{\"requests\": {{\"cpu\": \"{cpu}\", \"memory\": \"1Gi\"}}}}}}]}}}}}}\n",
            100 + (i * 17) % 300
        ));
    }
    s
}

#[test]
fn remove_nodes_variants_act_as_a_traces_remove_node() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    std::fs::write(d.join("trace.jsonl"), trace(None)).unwrap();
    std::fs::write(d.join("lose-n3.jsonl"), trace(Some((100.5, &["n3"])))).unwrap();
    std::fs::write(
        d.join("lose-zone-a.jsonl"),
        trace(Some((100.5, &["n1", "n3"]))),
    )
    .unwrap();
    std::fs::write(d.join("lose-n3.yaml"), "removeNodes: [n3]\n").unwrap();
    std::fs::write(
        d.join("lose-zone-a.yaml"),
        "removeNodes:\n  selector: topology.kubernetes.io/zone=a\n",
    )
    .unwrap();
    let base_args = |trace: &str, out: &str| -> Vec<String> {
        [
            "run",
            "--nodes",
            &d.join("nodes.json").display().to_string(),
            "--trace",
            &d.join(trace).display().to_string(),
            "--seed",
            "3",
            "--until",
            "15m",
            "-q",
            "--out",
            &d.join(out).display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let mut a = base_args("trace.jsonl", "forked");
    a.extend(["--fork-at", "100.5s"].map(String::from));
    for v in ["lose-n3.yaml", "lose-zone-a.yaml"] {
        a.push("--variant".into());
        a.push(d.join(v).display().to_string());
    }
    ok(&ksim().args(&a).output().unwrap());
    for name in ["lose-n3", "lose-zone-a"] {
        let traced = format!("traced-{name}");
        ok(&ksim()
            .args(base_args(&format!("{name}.jsonl"), &traced))
            .output()
            .unwrap());
        let branch = d.join("forked/branches").join(name);
        for f in ["pods.csv", "placements.csv", "utilization.csv"] {
            assert!(
                read(&branch.join(f)) == read(&d.join(&traced).join(f)),
                "{name}: {f}: the variant's removal differs from the trace's RemoveNode"
            );
        }
        // n3's pods really were evicted (they ran there before the fork, failed with it).
        let pods = read(&branch.join("pods.csv"));
        assert!(
            pods.lines().any(|l| l.contains(",n3,failed,")),
            "{name}: no pod failed with n3:\n{pods}"
        );
        assert_ne!(pods, read(&d.join("forked/pods.csv")));
    }
}

#[test]
fn scale_and_add_pool_variants_create_and_place_pods() {
    let tmp = tempfile::tempdir().unwrap();
    let forked = tmp.path().join("forked");
    let variants = [
        root().join("scenarios/variants/web-x2.yaml"),
        root().join("scenarios/variants/zone-b-back.yaml"),
    ];
    ok(&run_scenario(
        &incident(),
        &forked,
        Some(("13m", &variants)),
    ));
    let web = |p: &Path| {
        read(&p.join("pods.csv"))
            .lines()
            .filter(|l| l.starts_with("default,web-"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let base = web(&forked);
    let x2 = web(&forked.join("branches/web-x2"));
    assert!(
        x2.len() >= base.len() + 28,
        "{} vs {}",
        x2.len(),
        base.len()
    );
    // The new pods are created after the fork (13m = 780 s, plus the controller's delay).
    let created_after = x2
        .iter()
        .filter(|l| !base.contains(l))
        .filter(|l| {
            l.split(',')
                .nth(3)
                .and_then(|c| c.parse::<f64>().ok())
                .is_some_and(|c| c > 780.0)
        })
        .count();
    assert!(created_after >= 28, "{created_after}");
    // Two zone-b nodes back: the payments pods pinned to zone b are placed there.
    let zb = read(&forked.join("branches/zone-b-back/pods.csv"));
    let payments_on_new = zb
        .lines()
        .filter(|l| l.starts_with("default,payments-") && l.contains(",zone-b-new-"))
        .count();
    assert!(payments_on_new >= 4, "{zb}");
    let summary = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&read(&p.join("summary.json"))).unwrap()
    };
    let pending = |v: &serde_json::Value| v["pods"]["pending_at_end"].as_u64();
    assert!(
        pending(&summary(&forked.join("branches/zone-b-back"))) < pending(&summary(&forked)),
        "zone-b-back should leave fewer pods pending"
    );
}

#[test]
fn volume_binding_state_is_forked_too() {
    // cache-0 is scheduled at 70 s and binds at 85 s (its claim is provisioned meanwhile),
    // cache-1 at 80 s / 95 s; db-4 binds at 300 s to the disk added then; db-1 is re-created at
    // 511 s (8m31s: the db-1 deleted at 8 min first terminates for its 30 s grace period).
    // Fork inside those windows: the empty branch is still the uninterrupted run.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let scenario = root().join("scenarios/stateful-local-pv.yaml");
    let empty = d.join("empty.yaml");
    std::fs::write(&empty, "").unwrap();
    let plain = d.join("plain");
    ok(&run_scenario(&scenario, &plain, None));
    for t in ["75s", "82s", "90s", "300.02s", "511s"] {
        let out = d.join(format!("fork-{t}"));
        ok(&run_scenario(
            &scenario,
            &out,
            Some((t, std::slice::from_ref(&empty))),
        ));
        for f in ["pods.csv", "placements.csv", "events.jsonl", "summary.json"] {
            assert!(
                read(&out.join("branches/empty").join(f)) == read(&plain.join(f)),
                "fork at {t}: {f} differs"
            );
        }
    }
}

#[test]
fn autoscaler_controllers_and_generators_are_forked_too() {
    // quickstart-autoscale: generators and the node-group autoscaler (scans, nodes being
    // provisioned); controllers: every workload controller with its reconciles in flight.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let empty = d.join("empty.yaml");
    std::fs::write(&empty, "").unwrap();
    for (scenario, until) in [("quickstart-autoscale", "40m"), ("controllers", "1h")] {
        let sc = root().join(format!("scenarios/{scenario}.yaml"));
        let run_until = |out: &Path, fork: Option<&str>| {
            let mut c = ksim();
            c.arg("run")
                .arg(&sc)
                .args(["-q", "--event-log", "--until", until, "--out"])
                .arg(out);
            if let Some(t) = fork {
                c.args(["--fork-at", t, "--variant"]).arg(&empty);
            }
            ok(&c.output().unwrap());
        };
        let plain = d.join(format!("{scenario}-plain"));
        run_until(&plain, None);
        for t in ["17m", "31m"] {
            let out = d.join(format!("{scenario}-{t}"));
            run_until(&out, Some(t));
            for f in OUTPUTS {
                assert!(
                    std::fs::read(out.join("branches/empty").join(f)).unwrap()
                        == std::fs::read(plain.join(f)).unwrap(),
                    "{scenario}, fork at {t}: {f} differs"
                );
            }
        }
    }
}

#[test]
fn a_config_variant_must_keep_the_profiles() {
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("renamed.yaml");
    std::fs::write(
        &v,
        "schedulerConfig:\n  apiVersion: kubescheduler.config.k8s.io/v1\n  kind: KubeSchedulerConfiguration\n  profiles: [{schedulerName: other}]\n",
    )
    .unwrap();
    let o = run_scenario(
        &incident(),
        &tmp.path().join("out"),
        Some(("11m", std::slice::from_ref(&v))),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("renamed.yaml:1: schedulerConfig"), "{err}");
    assert!(err.contains("no profile \"default-scheduler\""), "{err}");
}

#[test]
fn bad_variants_and_fork_times_exit_2_naming_file_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let cases: [(&str, &str, &[&str]); 7] = [
        (
            "json.json",
            "{\n  \"name\": \"j\",\n  \"scale\": {\"deployment/web\": \"lots\"}\n}\n",
            &["json.json:3", "scale.deployment/web"],
        ),
        (
            "unknown.yaml",
            "name: x\naddNode: []\n",
            &["unknown.yaml:2", "addNode", "unknown field"],
        ),
        (
            "scale.yaml",
            "scale:\n  deployment/web: lots\n",
            &["scale.yaml:2", "scale.deployment/web", "neither replicas"],
        ),
        (
            "kind.yaml",
            "scale:\n  daemonset/node-agent: 3\n",
            &["kind.yaml:2", "cannot be scaled"],
        ),
        (
            "pool.yaml",
            "addPools:\n  - name: p\n    count: two\n    template: {}\n",
            &["pool.yaml:2", "addPools[0].count"],
        ),
        (
            "missing.yaml",
            "removeNodes:\n  names: [zone-c-0]\n",
            &[
                "missing.yaml:2",
                "removeNodes.names[0]",
                "no node \"zone-c-0\"",
            ],
        ),
        (
            "noctl.yaml",
            "scale: {deployment/nope: 3}\n",
            &[
                "noctl.yaml:1",
                "scale.deployment/nope",
                "no Deployment default/nope",
            ],
        ),
    ];
    for (file, text, want) in cases {
        let p = d.join(file);
        std::fs::write(&p, text).unwrap();
        let o = run_scenario(
            &incident(),
            &d.join("out"),
            Some(("11m", std::slice::from_ref(&p))),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        for w in want {
            assert!(err.contains(w), "{file}: {w:?} not in {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            !d.join("out").exists(),
            "{file}: a failed fork left an output folder"
        );
    }
    let empty = d.join("empty.yaml");
    std::fs::write(&empty, "").unwrap();
    let o = run_scenario(
        &incident(),
        &d.join("out"),
        Some(("2h", std::slice::from_ref(&empty))),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--fork-at 2h: past the run's horizon"),
        "{err}"
    );
    // --variant needs --fork-at.
    let o = ksim()
        .arg("run")
        .arg(incident())
        .arg("--variant")
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_variants_replica_count_is_not_multiplied_again_by_controller_scale() {
    // controllers-scaled.yaml runs every controller ×1.5: `web` is at 120 × 1.5 = 180 replicas
    // from 10m. A variant's `deployment/web: 50` runs 50 (not 75); `x2` doubles what runs
    // (360, not 540).
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("fifty.yaml"), "scale:\n  deployment/web: 50\n").unwrap();
    std::fs::write(d.join("double.yaml"), "scale:\n  deployment/web: x2\n").unwrap();
    let out = d.join("out");
    let o = ksim()
        .arg("run")
        .arg(root().join("scenarios/controllers-scaled.yaml"))
        .args(["-q", "--until", "14m", "--fork-at", "12m", "--out"])
        .arg(&out)
        .arg("--variant")
        .arg(d.join("fifty.yaml"))
        .arg("--variant")
        .arg(d.join("double.yaml"))
        .output()
        .unwrap();
    ok(&o);
    let desired = |p: &Path| -> String {
        read(&p.join("controllers.csv"))
            .lines()
            .find(|l| l.starts_with("Deployment,default,web,"))
            .and_then(|l| l.split(',').nth(3).map(str::to_string))
            .unwrap_or_else(|| panic!("no web row in {}", p.display()))
    };
    assert_eq!(desired(&out), "180");
    assert_eq!(desired(&out.join("branches/fifty")), "50");
    assert_eq!(desired(&out.join("branches/double")), "360");
}

/// Issue 37: the shipped `web-x2` variant at 11m, before the trace's `replicas: 28` at 12m,
/// stays a doubling: the branch's web Deployment ends wanting 56, the base's 28.
#[test]
fn a_factor_variant_before_the_traces_scale_up_stays_a_factor() {
    let tmp = tempfile::tempdir().unwrap();
    let forked = tmp.path().join("forked");
    let variants = [root().join("scenarios/variants/web-x2.yaml")];
    ok(&run_scenario(
        &incident(),
        &forked,
        Some(("11m", &variants)),
    ));
    let desired = |dir: &Path| -> String {
        let text = read(&dir.join("controllers.csv"));
        let line = text
            .lines()
            .find(|l| l.starts_with("Deployment,default,web,"))
            .unwrap_or_else(|| panic!("no web row:\n{text}"))
            .to_string();
        line.split(',').nth(3).unwrap_or("").to_string()
    };
    assert_eq!(desired(&forked), "28");
    assert_eq!(desired(&forked.join("branches/web-x2")), "56");
}
