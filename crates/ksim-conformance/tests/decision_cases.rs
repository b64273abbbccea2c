//! Every recorded decision case in `tests/conformance/cases` must reach upstream's verdict.

use std::path::PathBuf;

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/cases")
}

fn run_family(prefix: &str) {
    let outcomes = ksim_conformance::run_dir(&cases_dir(), Some(prefix)).expect("cases dir");
    let outcomes: Vec<_> = outcomes
        .into_iter()
        .filter(|o| o.name.starts_with(prefix))
        .collect();
    assert!(!outcomes.is_empty(), "no cases for {prefix}");
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed())
        .map(|o| format!("{}: {}", o.name, o.differences.join("\n    ")))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} {prefix} cases failed:\n{}",
        failed.len(),
        outcomes.len(),
        failed.join("\n")
    );
}

macro_rules! family {
    ($($name:ident => $prefix:literal),* $(,)?) => {
        $( #[test] fn $name() { run_family($prefix); } )*
    };
}

family! {
    fit => "fit-",
    least => "least-",
    most => "most-",
    rtcr => "rtcr-",
    balanced => "balanced-",
    nodeaffinity => "nodeaffinity-",
    taint => "taint-",
    unschedulable => "unschedulable-",
    nodename => "nodename-",
    nodeports => "nodeports-",
    image => "image-",
    interpod => "interpod-",
    spread => "spread-",
    spreaddefault => "spreaddefault-",
    config => "config-",
    preempt => "preempt-",
    mixed => "mixed-",
    volume => "volume-",
}
