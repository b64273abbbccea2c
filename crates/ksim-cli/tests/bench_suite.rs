//! `ksim bench --suite scheduler-perf --quick`: the suite runs every workload and writes
//! suite.csv and suite.md (no timing is asserted: speed is checked by `ksim bench` itself).

use std::process::Command;

#[test]
fn quick_suite_writes_csv_and_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(["bench", "--suite", "scheduler-perf", "--quick", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(tmp.path().join("suite.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("workload,nodes,init_pods,measured_pods,scheduled"));
    // One line per workload, each with upstream's threshold column and its source file.
    assert_eq!(lines.len(), 15, "{csv}");
    let anti = lines
        .iter()
        .find(|l| l.starts_with("SchedulingPodAntiAffinity/5000Nodes_2000Pods,"))
        .unwrap();
    let cols: Vec<&str> = anti.split(',').collect();
    // 40 measured pods, all placed; threshold 60 from affinity/performance-config.yaml.
    assert_eq!((cols[3], cols[4], cols[8]), ("40", "40", "60"));
    assert!(cols[9].ends_with("scheduler_perf/affinity/performance-config.yaml"));
    let md = std::fs::read_to_string(tmp.path().join("suite.md")).unwrap();
    assert!(md.starts_with("| upstream workload |"));
    assert!(md.contains("| SchedulingWithMixedChurn/5000Nodes_10000Pods |"));
    assert!(stdout.contains("upstream CI threshold: 680 pods/s"));
    // The DRA workloads place every measured pod (50 at the quick size).
    for name in [
        "SchedulingWithResourceClaimTemplate/5000pods_500nodes_QueueingHintsEnabled,",
        "SteadyStateClusterResourceClaimTemplate/half_500nodes_QueueingHintsEnabled,",
    ] {
        let row = lines.iter().find(|l| l.starts_with(name)).unwrap();
        let cols: Vec<&str> = row.split(',').collect();
        assert_eq!((cols[3], cols[4]), ("50", "50"), "{row}");
        assert!(cols[9].ends_with("scheduler_perf/dra/performance-config.yaml"));
    }

    // Unknown suite: an error, exit 2.
    let bad = Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(["bench", "--suite", "nope"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
