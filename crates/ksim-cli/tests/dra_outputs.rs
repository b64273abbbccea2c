//! DRA in the outputs, dumps and imports, on tests/dra (nodes gpu-0 with two a100 devices,
//! gpu-1 with four h100, gpu-2 with none; train-0..4 each name their own h100 claim, share-a
//! and share-b one shared a100 claim; train-0 ends at 2 min, its claim deallocated by the resource claim controller, and is
//! deleted at 3 min).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ksim(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(args)
        .current_dir(dir)
        .env("CI", "true")
        .output()
        .unwrap()
}

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dra")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The rows of a CSV file as maps from header to value.
fn rows(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

/// devices.csv: (allocated, total) of a pool at a sample time.
fn devices_at(
    rows: &[std::collections::BTreeMap<String, String>],
    t: &str,
    pool: &str,
) -> (u64, u64) {
    let r = rows
        .iter()
        .find(|r| r["time_s"] == t && r["pool"] == pool)
        .unwrap_or_else(|| panic!("no devices.csv row at {t} for {pool}"));
    assert_eq!(r["driver"], "gpu.example.com");
    (r["allocated"].parse().unwrap(), r["total"].parse().unwrap())
}

#[test]
fn dra_run_reports_claims_devices_and_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = data().join("scenario.yaml");
    ok(&ksim(
        tmp.path(),
        &[
            "run",
            scenario.to_str().unwrap(),
            "--out",
            "run",
            "-q",
            "--explain",
            "all",
        ],
    ));
    let run = tmp.path().join("run");

    // pods.csv: the claims column, each claim with the device its allocation holds.
    let pods = rows(&run.join("pods.csv"));
    let claims = |name: &str| {
        pods.iter()
            .find(|p| p["name"] == name)
            .map(|p| (p["node"].clone(), p["claims"].clone()))
            .unwrap()
    };
    assert_eq!(
        claims("train-0"),
        ("gpu-1".into(), "train-0=gpu.example.com/gpu-1/gpu-0".into())
    );
    assert_eq!(
        claims("train-3"),
        ("gpu-1".into(), "train-3=gpu.example.com/gpu-1/gpu-3".into())
    );
    // train-4 waits for a device until train-0 ends at 2 min: the resource claim controller
    // then deallocates train-0's claim (no consumer left) and train-4 takes its device.
    assert_eq!(
        claims("train-4"),
        ("gpu-1".into(), "train-4=gpu.example.com/gpu-1/gpu-0".into())
    );
    let t4 = pods.iter().find(|p| p["name"] == "train-4").unwrap();
    assert!(
        t4["last_reason"].contains("cannot allocate all claims"),
        "{t4:?}"
    );
    let bound: f64 = t4["bound_s"].parse().unwrap();
    assert!(bound > 120.0 && bound < 121.0, "{t4:?}");
    for p in ["share-a", "share-b"] {
        assert_eq!(
            claims(p),
            (
                "gpu-0".into(),
                "shared-a100=gpu.example.com/gpu-0/gpu-0".into()
            )
        );
    }

    // devices.csv: allocated / total per pool over time.
    let dev = rows(&run.join("devices.csv"));
    assert_eq!(devices_at(&dev, "0", "gpu-1"), (0, 4));
    assert_eq!(devices_at(&dev, "0", "gpu-0"), (0, 2));
    assert_eq!(devices_at(&dev, "5", "gpu-1"), (4, 4));
    assert_eq!(devices_at(&dev, "15", "gpu-0"), (1, 2));
    // train-0's device goes to train-4 within the same half-second sample.
    assert_eq!(devices_at(&dev, "200", "gpu-1"), (4, 4));
    assert_eq!(devices_at(&dev, "600", "gpu-1"), (4, 4));
    // gpu-2 publishes no slice: no pool.
    assert!(dev.iter().all(|r| r["pool"] != "gpu-2"));

    // The report has the device plot.
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("id=\"plot-devices\""));
    assert!(run.join("devices.svg").is_file() && run.join("devices.png").is_file());

    // ksim explain names the DRA verdict per node.
    let o = ksim(
        tmp.path(),
        &["explain", "run", "default/train-4", "--attempt", "1"],
    );
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("cannot allocate all claims"), "{out}");
    assert!(out.contains("DynamicResources"), "{out}");
}

#[test]
fn runs_without_dra_have_no_device_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/packing/scenario.yaml");
    ok(&ksim(
        tmp.path(),
        &["run", scenario.to_str().unwrap(), "--out", "run", "-q"],
    ));
    let run = tmp.path().join("run");
    assert!(!run.join("devices.csv").exists());
    let pods = std::fs::read_to_string(run.join("pods.csv")).unwrap();
    assert!(pods.lines().next().unwrap().ends_with(",owner_name"));
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(!html.contains("plot-devices"));
}

/// `--dump-at` writes the DRA objects as they stand (allocations, reservedFor) and `ksim import
/// kube-dump` carries them to objects.yaml: the imported run starts from the same allocation.
#[test]
fn dump_and_kube_dump_import_carry_dra_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let scenario = data().join("scenario.yaml");
    ok(&ksim(
        d,
        &[
            "run",
            scenario.to_str().unwrap(),
            "--out",
            "run",
            "-q",
            "--dump-at",
            "4m",
        ],
    ));
    let dump: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("run/cluster-dump.json")).unwrap()).unwrap();
    let items = dump["items"].as_array().unwrap();
    let count = |k: &str| items.iter().filter(|i| i["kind"] == k).count();
    // train-0's claim was deleted at 3 min.
    assert_eq!(
        (
            count("DeviceClass"),
            count("ResourceSlice"),
            count("ResourceClaim")
        ),
        (1, 2, 5)
    );
    let shared = items
        .iter()
        .find(|i| i["kind"] == "ResourceClaim" && i["metadata"]["name"] == "shared-a100")
        .unwrap();
    assert_eq!(shared["apiVersion"], "resource.k8s.io/v1");
    assert_eq!(
        shared["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-0"
    );
    let reserved: Vec<&str> = shared["status"]["reservedFor"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(reserved, ["share-a", "share-b"]);

    ok(&ksim(
        d,
        &[
            "import",
            "kube-dump",
            "run/cluster-dump.json",
            "--out",
            "imported",
        ],
    ));
    std::fs::write(
        d.join("imported/scenario.yaml"),
        "name: imported\nseed: 1\nhorizon: 1m\ncluster:\n  nodesFiles: [nodes.yaml]\n  objectsFiles: [objects.yaml]\nworkload:\n  traces: [trace.jsonl]\n",
    )
    .unwrap();
    ok(&ksim(
        d,
        &["run", "imported/scenario.yaml", "--out", "again", "-q"],
    ));
    let dev = rows(&d.join("again/devices.csv"));
    // The allocations of the dump hold from t=0: three h100 and the shared a100.
    assert_eq!(devices_at(&dev, "0", "gpu-1").1, 4);
    assert_eq!(devices_at(&dev, "0", "gpu-0"), (1, 2));
    // train-4, pending in the dump, takes the free h100 at once.
    let pods = rows(&d.join("again/pods.csv"));
    let t4 = pods.iter().find(|p| p["name"] == "train-4").unwrap();
    assert_eq!(t4["node"], "gpu-1");
    assert_eq!(t4["claims"], "train-4=gpu.example.com/gpu-1/gpu-0");
    assert_eq!(devices_at(&dev, "60", "gpu-1"), (4, 4));
}
