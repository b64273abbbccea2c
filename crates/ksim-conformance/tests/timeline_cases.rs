//! Every recorded timeline case in `tests/conformance/timelines/cases` must replay exactly:
//! attempt order, seconds, results, nodes, FitError texts and final states.

use std::path::PathBuf;

#[test]
fn timeline_cases() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/timelines/cases");
    let outcomes = ksim_conformance::run_dir(&dir, None).expect("timeline cases dir");
    assert!(
        outcomes.len() >= 60,
        "expected the timeline cases, found {}",
        outcomes.len()
    );
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed())
        .map(|o| format!("{}: {}", o.name, o.differences.join("\n    ")))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} timeline cases failed:\n{}",
        failed.len(),
        outcomes.len(),
        failed.join("\n")
    );
}
