//! The 60 DRA decisions recorded from kube-scheduler v1.36.2
//! (`tests/conformance/v1.36/dra`, see its README): filter verdicts per node, scores, the
//! FitError and PostFilter texts, and the allocation Reserve + PreBind wrote.

use std::path::PathBuf;

#[test]
fn dra_cases_reach_upstreams_verdicts() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/v1.36/dra/cases");
    let outcomes = ksim_conformance::run_dir(&dir, None).expect("cases dir");
    assert_eq!(outcomes.len(), 60);
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed())
        .map(|o| format!("{}: {}", o.name, o.differences.join("\n    ")))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} dra cases failed:\n{}",
        failed.len(),
        outcomes.len(),
        failed.join("\n")
    );
}

/// The runner fails a DRA case whose recorded allocation or DRA input is changed.
#[test]
fn dra_fields_are_compared() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/conformance/v1.36/dra/cases/dra-001.json");
    let case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).expect("case")).expect("JSON");
    assert!(ksim_conformance::run_case(&case).expect("runs").is_empty());

    let mut bad = case.clone();
    bad["expected"]["allocation"]["held-p5"]["devices"][0]["device"] = "nic-9".into();
    let d = ksim_conformance::run_case(&bad).expect("runs");
    assert!(d.iter().any(|x| x.contains("allocation held-p5")), "{d:?}");

    // Without the claim the pod is rejected in PreFilter, which the recording did not see.
    let mut bad = case;
    bad["input"]["resourceClaims"] = serde_json::json!([]);
    let d = ksim_conformance::run_case(&bad).expect("runs");
    assert!(d.iter().any(|x| x.contains("preFilterStatus")), "{d:?}");
}
