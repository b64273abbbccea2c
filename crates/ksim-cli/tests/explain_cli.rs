//! `ksim run --explain`: the recorded detail does not change any other output, and each record
//! carries the filter results, scores, pick and PostFilter outcome of its attempt.

use std::path::Path;
use std::process::Command;

const NODES: &str = r#"{"apiVersion":"v1","kind":"List","items":[
 {"kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}},
 {"kind":"Node","metadata":{"name":"n2"},"spec":{"taints":[{"key":"dedicated","value":"infra","effect":"NoSchedule"}]},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}},
 {"kind":"Node","metadata":{"name":"n3"},"status":{"allocatable":{"cpu":"8","memory":"32Gi","pods":"110"}}}]}"#;

fn trace(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        let cpu = ["500m", "1", "1500m", "3"][i % 4];
        let prio = if i % 13 == 12 { 1000 } else { 0 };
        s.push_str(&format!(
            "{{\"at\": \"{}s\", \"kind\": \"CreatePod\", \"runFor\": \"{}s\", \"pod\": {{\"metadata\": {{\"name\": \"p{i}\", \"labels\": {{\"app\": \"a{}\"}}}}, \"spec\": {{\"priority\": {prio}, \"containers\": [{{\"name\": \"c\", \"resources\": {{\"requests\": {{\"cpu\": \"{cpu}\", \"memory\": \"1Gi\"}}}}}}]}}}}}}\n",
            i * 3,
            60 + (i * 17) % 300,
            i % 2
        ));
    }
    s
}

fn run(dir: &Path, out: &str, explain: Option<&str>) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ksim"));
    c.args(["run", "--nodes"])
        .arg(dir.join("nodes.json"))
        .arg("--trace")
        .arg(dir.join("trace.jsonl"))
        .args(["--seed", "3", "--until", "20m", "-q", "--out"])
        .arg(dir.join(out));
    if let Some(e) = explain {
        c.args(["--explain", e]);
    }
    c.output().expect("run ksim")
}

#[test]
fn explain_changes_no_other_output_and_records_each_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    std::fs::write(d.join("trace.jsonl"), trace(150)).unwrap();
    let plain = run(d, "plain", None);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    for sel in ["all", "app=a1", "pending", "default/p5"] {
        let o = run(d, "explained", Some(sel));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for f in [
            "pods.csv",
            "placements.csv",
            "utilization.csv",
            "summary.json",
        ] {
            let a = std::fs::read(d.join("plain").join(f)).unwrap();
            let b = std::fs::read(d.join("explained").join(f)).unwrap();
            assert!(a == b, "{f} differs with --explain {sel}");
        }
        let text = std::fs::read_to_string(d.join("explained/explain.jsonl")).unwrap();
        let recs: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!recs.is_empty(), "no record for --explain {sel}");
        for r in &recs {
            assert_eq!(r["nodes"], 3);
            match r["result"].as_str().unwrap() {
                "Scheduled" => {
                    let pick = r["pick"].as_str().unwrap();
                    let best: Vec<&str> = r["best"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap())
                        .collect();
                    assert!(best.contains(&pick));
                    // The tainted node is rejected by TaintToleration whenever it was evaluated
                    // (a nominated node is tried alone first).
                    if r["evaluated"].as_u64().unwrap() == 3 {
                        // Written grouped: each distinct status once with its nodes.
                        let groups = r["filter"]["rejected"].as_array().unwrap();
                        let g = groups
                            .iter()
                            .find(|g| g["nodes"].as_array().unwrap().contains(&"n2".into()))
                            .unwrap_or_else(|| panic!("n2 not rejected in {r}"));
                        assert_eq!(g["plugin"], "TaintToleration", "{r}");
                        assert_eq!(
                            r["filter"]["passed"].as_array().unwrap().len() as u64,
                            r["feasible"].as_u64().unwrap(),
                            "{r}"
                        );
                    }
                    if r["feasible"].as_u64().unwrap() > 1 {
                        // Written column-wise: plugins and weights once, per node the
                        // normalized scores in that order; their weighted sum is the total.
                        let weights = r["scores"]["weights"].as_array().unwrap();
                        let rows = r["scores"]["nodes"].as_array().unwrap();
                        assert_eq!(rows.len() as u64, r["feasible"].as_u64().unwrap());
                        for row in rows {
                            let sum: i64 = row["normalized"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .zip(weights)
                                .map(|(n, w)| n.as_i64().unwrap() * w.as_i64().unwrap())
                                .sum();
                            assert_eq!(sum, row["total"].as_i64().unwrap(), "{r}");
                        }
                    }
                }
                "Unschedulable" => {
                    assert!(r["message"].as_str().unwrap().starts_with("0/3 nodes"));
                }
                other => panic!("unexpected result {other}"),
            }
            if sel == "app=a1" {
                let n: usize = r["pod"].as_str().unwrap()[9..].parse().unwrap();
                assert_eq!(n % 2, 1);
            }
            if sel == "default/p5" {
                assert_eq!(r["pod"], "default/p5");
            }
        }
        if sel == "pending" {
            assert!(recs.iter().any(|r| r["result"] == "Unschedulable"));
        }
        std::fs::remove_dir_all(d.join("explained")).unwrap();
    }
    let bad = run(d, "bad", Some("a/b/c"));
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--explain"));
}
