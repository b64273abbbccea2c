//! The shipped DRAExtendedResource example, `scenarios/dra-extended-resource.yaml`: n1 and
//! n2 with two GPUs each as ResourceSlices, n3 advertising `example.com/gpu: 2` through its
//! device plugin; six one-GPU pods, a seventh that waits for one, and a pod asking for three.
//! Each expectation is read from the run's pods.csv, placements.csv and devices.csv.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{csv, root, secs};

#[test]
fn extended_resources_use_the_device_plugin_and_dra_devices() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("run");
    let o = Command::new(env!("CARGO_BIN_EXE_ksim"))
        .arg("run")
        .arg(root().join("scenarios/dra-extended-resource.yaml"))
        .args(["-q", "--out"])
        .arg(&out)
        .output()
        .expect("run ksim");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pods: BTreeMap<String, BTreeMap<String, String>> = csv(&out.join("pods.csv"))
        .into_iter()
        .map(|r| (r["name"].clone(), r))
        .collect();
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..6 {
        let p = &pods[&format!("job-{i}")];
        assert_eq!(p["attempts"], "1", "job-{i}: {p:?}");
        *per_node.entry(p["node"].clone()).or_default() += 1;
        let claims = &p["claims"];
        if p["node"] == "n3" {
            // The device plugin serves it: no claim.
            assert_eq!(claims, "", "job-{i}");
        } else {
            // `<pod>-extended-resources-<5 chars>=driver/pool/device`, the pool the node's.
            let prefix = format!("job-{i}-extended-resources-");
            assert!(claims.starts_with(&prefix), "job-{i}: {claims}");
            let (name, device) = claims.split_once('=').expect("claim=device");
            assert_eq!(name.len(), prefix.len() + 5, "{name}");
            assert!(
                device.starts_with(&format!("gpu.example.com/{}/gpu-", p["node"])),
                "{device}"
            );
        }
    }
    assert_eq!(per_node.values().copied().collect::<Vec<_>>(), [2, 2, 2]);

    // job-6 waits for job-0's GPU (job-0 ends at 2 min; an attempt at that instant still finds
    // the claim allocated: the claim controller frees it one reaction delay later), then
    // takes it.
    let t0_end = secs(&pods["job-0"]["finished_s"]);
    let attempts = csv(&out.join("placements.csv"));
    for a in attempts
        .iter()
        .filter(|a| a["name"] == "job-6" && a["result"] != "Scheduled")
    {
        assert!(
            a["message"].starts_with(
                "0/3 nodes are available: 1 Insufficient example.com/gpu, 2 cannot allocate all claims."
            ),
            "{}",
            a["message"]
        );
        assert!(secs(&a["time_s"]) <= t0_end);
    }
    let j6 = &pods["job-6"];
    assert_eq!(j6["node"], pods["job-0"]["node"]);
    assert!(secs(&j6["bound_s"]) > t0_end && secs(&j6["bound_s"]) < t0_end + 15.0);

    // Three GPUs fit no node.
    let big = &pods["big-0"];
    assert_eq!(big["outcome"], "pending");
    assert!(big["last_reason"].starts_with(
        "0/3 nodes are available: 1 Insufficient example.com/gpu, 2 cannot allocate all claims."
    ));

    // devices.csv: the DRA pools fill up (2 of 2 each) while the six jobs run.
    let devices = csv(&out.join("devices.csv"));
    for pool in ["n1", "n2"] {
        let peak = devices
            .iter()
            .filter(|d| d["pool"] == pool)
            .map(|d| d["allocated"].parse::<u32>().expect("allocated"))
            .max();
        assert_eq!(peak, Some(2), "{pool}");
    }
}
