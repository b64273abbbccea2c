//! The runner fails a case whose recorded fields disagree with ksim, for every field it
//! records: copies of real cases with one field made wrong, written to a temporary directory.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

fn case(rel: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/conformance")
        .join(rel);
    let text = std::fs::read_to_string(&p).expect("case file");
    serde_json::from_str(&text).expect("case JSON")
}

/// A fresh temporary directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ksim-conformance-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Writes the case to `dir` and runs it through the file runner; returns the differences.
fn run(dir: &Path, file: &str, v: &Value) -> Vec<String> {
    let p = dir.join(file);
    std::fs::write(&p, serde_json::to_string(v).expect("JSON")).expect("write case");
    ksim_conformance::run_file(&p).differences
}

/// Asserts the unmodified copy passes and the modified one fails with a difference mentioning
/// `needle`.
fn assert_caught(name: &str, rel: &str, needle: &str, modify: impl FnOnce(&mut Value)) {
    let dir = temp_dir(name);
    let original = case(rel);
    let ok = run(&dir, "original.json", &original);
    assert!(ok.is_empty(), "{rel} should pass unmodified: {ok:?}");
    let mut bad = original;
    modify(&mut bad);
    let diffs = run(&dir, "modified.json", &bad);
    assert!(
        diffs.iter().any(|d| d.contains(needle)),
        "{name}: expected a difference mentioning {needle:?}, got {diffs:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The first `plugin → node → score` entry of a score map, incremented.
fn bump_first(map: &mut Value) {
    let node_scores = map
        .as_object_mut()
        .and_then(|m| m.values_mut().next())
        .and_then(Value::as_object_mut)
        .expect("a plugin with scores");
    let score = node_scores.values_mut().next().expect("a node score");
    *score = json!(score.as_i64().expect("integer score") + 1);
}

#[test]
fn wrong_raw_score_fails() {
    assert_caught("raw", "cases/least-001.json", "rawScores", |v| {
        bump_first(&mut v["expected"]["rawScores"])
    });
}

#[test]
fn wrong_normalized_score_fails() {
    assert_caught(
        "normalized",
        "cases/least-001.json",
        "normalizedScores",
        |v| bump_first(&mut v["expected"]["normalizedScores"]),
    );
}

#[test]
fn wrong_pre_filter_status_fails() {
    assert_caught(
        "prefilter-reason",
        "cases/volume-009.json",
        "preFilterStatus",
        |v| {
            v["expected"]["preFilterStatus"]["reasons"] = json!(["some other reason"]);
        },
    );
    assert_caught(
        "prefilter-plugin",
        "cases/volume-009.json",
        "preFilterStatus",
        |v| {
            v["expected"]["preFilterStatus"]["plugin"] = json!("VolumeZone");
        },
    );
    // A PreFilter rejection recorded where ksim's PreFilter passes.
    assert_caught(
        "prefilter-extra",
        "cases/least-001.json",
        "preFilterStatus",
        |v| {
            v["expected"]["preFilterStatus"] = json!({"code": "UnschedulableAndUnresolvable", "plugin": "VolumeBinding", "reasons": ["x"]});
        },
    );
}

#[test]
fn wrong_skipped_plugins_fail() {
    assert_caught(
        "skip-filter",
        "cases/least-001.json",
        "skippedFilterPlugins",
        |v| {
            v["expected"]["skippedFilterPlugins"] = json!(["NodePorts"]);
        },
    );
    assert_caught(
        "skip-score",
        "cases/least-001.json",
        "skippedScorePlugins",
        |v| {
            v["expected"]["skippedScorePlugins"] = json!([]);
        },
    );
}

#[test]
fn scheduled_node_outside_ksims_best_nodes_fails() {
    assert_caught("scheduled", "cases/least-001.json", "scheduledNode", |v| {
        let feasible = v["expected"]["feasibleNodes"]
            .as_array()
            .expect("list")
            .clone();
        let best = v["expected"]["bestNodes"].clone();
        let other = feasible
            .into_iter()
            .find(|n| !best.as_array().is_some_and(|b| b.contains(n)))
            .expect("a feasible node that is not best");
        v["expected"]["scheduledNode"] = other;
    });
}

#[test]
fn wrong_best_nodes_fail() {
    assert_caught("best", "cases/least-001.json", "bestNodes", |v| {
        v["expected"]["bestNodes"] = v["expected"]["feasibleNodes"].clone();
    });
}

#[test]
fn wrong_preemption_message_or_victims_fail() {
    assert_caught(
        "pf-message",
        "cases/preempt-001.json",
        "preemption status",
        |v| {
            v["expected"]["preemption"]["statusMessage"] = json!("something else");
        },
    );
    assert_caught(
        "pf-victims",
        "cases/preempt-001.json",
        "preemption victims",
        |v| {
            v["expected"]["preemption"]["victims"] = json!(["nobody"]);
        },
    );
    assert_caught(
        "pf-deleted",
        "cases/preempt-001.json",
        "deletedVictims",
        |v| {
            v["expected"]["preemption"]["deletedVictims"] = json!([]);
        },
    );
}

#[test]
fn undecodable_preemption_args_fail() {
    for (name, args) in [
        (
            "pf-args-type",
            json!({"minCandidateNodesPercentage": "ten"}),
        ),
        ("pf-args-range", json!({"minCandidateNodesPercentage": 500})),
        ("pf-args-field", json!({"noSuchField": 1})),
    ] {
        let dir = temp_dir(name);
        let mut v = case("cases/preempt-001.json");
        v["input"]["config"] = json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{
                "schedulerName": "default-scheduler",
                "pluginConfig": [{
                    "name": "DefaultPreemption",
                    "args": args,
                }],
            }],
        });
        let diffs = run(&dir, "case.json", &v);
        assert!(!diffs.is_empty(), "{name}: a case with args {args} passed");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn unknown_recorded_fields_fail() {
    assert_caught(
        "unknown-expected",
        "cases/least-001.json",
        "unknown field",
        |v| {
            v["expected"]["newlyRecorded"] = json!(1);
        },
    );
    assert_caught(
        "unknown-top",
        "cases/least-001.json",
        "unknown top-level",
        |v| {
            v["extra"] = json!(1);
        },
    );
    assert_caught(
        "unknown-timeline",
        "timelines/cases/preempt-one-victim.json",
        "unknown field",
        |v| {
            v["expected"]["attempts"][0]["newlyRecorded"] = json!(1);
        },
    );
}

#[test]
fn timeline_final_fields_fail() {
    assert_caught(
        "final-plugins",
        "timelines/cases/backoff-idle-retries-0.json",
        "unschedulablePlugins",
        |v| {
            let pending = v["expected"]["final"]
                .as_object_mut()
                .and_then(|m| {
                    m.values_mut()
                        .find(|f| f.get("unschedulablePlugins").is_some())
                })
                .expect("a pending pod with unschedulablePlugins");
            pending["unschedulablePlugins"] = json!(["NoSuchPlugin"]);
        },
    );
}
