//! The shipped DRA example, `scenarios/dra-gpus.yaml` (issue 36's done-when): n1 with two
//! a100, n2 with four h100, n3 without GPUs; five pods from a template asking for an h100 with
//! at least 64Gi, two pods sharing one a100 claim, and a pod naming a template that does not
//! exist. Each expectation is read from the run's pods.csv and placements.csv.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{csv, root, secs};

#[test]
fn dra_gpus_scenario_places_claims_as_upstream() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("run");
    let o = Command::new(env!("CARGO_BIN_EXE_ksim"))
        .arg("run")
        .arg(root().join("scenarios/dra-gpus.yaml"))
        .args(["-q", "--out"])
        .arg(&out)
        .output()
        .expect("run ksim");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pods: BTreeMap<String, BTreeMap<String, String>> = csv(&out.join("pods.csv"))
        .into_iter()
        .map(|r| (r["name"].clone(), r))
        .collect();
    let attempts = csv(&out.join("placements.csv"));
    let of = |name: &str| -> Vec<&BTreeMap<String, String>> {
        attempts.iter().filter(|a| a["name"] == name).collect()
    };

    // The first four template pods take n2's h100s, each at its first attempt.
    for i in 0..4 {
        let p = &pods[&format!("train-{i}")];
        assert_eq!(p["node"], "n2", "train-{i}: {p:?}");
        assert_eq!(p["attempts"], "1", "train-{i}");
        // It waited 10 ms for its claim (the controller's delay); once attempted, that is
        // no longer its reason.
        assert_eq!(p["last_reason"], "", "train-{i}");
    }
    // The fifth: "cannot allocate all claims" on every node until train-0 ends (2 min after
    // it started), then its own device on n2.
    let t0_end = secs(&pods["train-0"]["finished_s"]);
    assert!((120.0..121.0).contains(&t0_end), "{t0_end}");
    let t4 = of("train-4");
    type Row<'a> = &'a BTreeMap<String, String>;
    let (fails, ok): (Vec<Row>, Vec<Row>) =
        t4.iter().copied().partition(|a| a["result"] != "Scheduled");
    assert!(!fails.is_empty());
    for a in &fails {
        assert_eq!(a["result"], "Unschedulable");
        assert!(
            a["message"].starts_with("0/3 nodes are available: 3 cannot allocate all claims."),
            "{}",
            a["message"]
        );
        assert!(secs(&a["time_s"]) < t0_end);
    }
    assert_eq!(ok.len(), 1, "{t4:?}");
    assert_eq!(ok[0]["node"], "n2");
    let bound4 = secs(&pods["train-4"]["bound_s"]);
    assert!(bound4 > t0_end && bound4 < t0_end + 15.0, "{bound4}");

    // The two pods sharing the a100 claim both run on n1.
    for name in ["infer-0", "infer-1"] {
        assert_eq!(pods[name]["node"], "n1", "{name}");
        assert_eq!(pods[name]["outcome"], "succeeded", "{name}");
    }

    // The pod naming a missing template never entered the queue.
    let orphan = &pods["orphan-0"];
    assert_eq!(orphan["attempts"], "0");
    assert!(of("orphan-0").is_empty());
    assert_eq!(orphan["outcome"], "pending");
    assert_eq!(
        orphan["last_reason"],
        "PodResourceClaim gpu: resource claim template \"no-such-template\": \
         resourceclaimtemplate.resource.k8s.io \"no-such-template\" not found"
    );
}
