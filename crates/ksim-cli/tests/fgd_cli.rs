//! `ksim fgd` from the command line on the project's own openb traces (the default traces
//! folder, found from the repository root): the three curve CSVs in the layout
//! `workload,policy,seed,0,1,...,130` with one row per run, byte-identical outputs for the same
//! seeds, and clear errors with a non-zero exit for bad flag values. `--max-pods` keeps the runs
//! short in debug builds (the library tests in ksim-gpu check the figures themselves).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run ksim")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const CSVS: [&str; 3] = [
    "allocation.csv",
    "fragmentation.csv",
    "fragmentation_ratio.csv",
];

fn small_run(out: &Path) -> Output {
    ksim(&[
        "fgd",
        "--workload",
        "multigpu20",
        "--policy",
        "FGD",
        "--policy",
        "bestfit",
        "--seeds",
        "42..43",
        "--max-pods",
        "200",
        "--threads",
        "2",
        "--quiet",
        "--out",
        out.to_str().expect("utf-8 temp path"),
    ])
}

#[test]
fn fgd_writes_the_curve_csvs_one_row_per_run_byte_identical_by_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    let o = small_run(&a);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("4 runs (1 workloads × 2 policies × 2 seeds)"),
        "{}",
        text(&o)
    );
    let header = format!(
        "workload,policy,seed,{}",
        (0..=130)
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    for name in CSVS {
        let body = std::fs::read_to_string(a.join(name)).unwrap();
        let lines: Vec<&str> = body.lines().collect();
        assert_eq!(lines[0], header, "{name}");
        let keys: Vec<String> = lines[1..]
            .iter()
            .map(|l| l.split(',').take(3).collect::<Vec<_>>().join(","))
            .collect();
        assert_eq!(
            keys,
            [
                "multigpu20,FGD,42",
                "multigpu20,FGD,43",
                "multigpu20,BestFit,42",
                "multigpu20,BestFit,43"
            ],
            "{name}: one row per run, in matrix order"
        );
        for l in &lines[1..] {
            assert_eq!(l.split(',').count(), 3 + 131, "{name}: {l}");
        }
    }
    // Every run allocated something in the first buckets.
    let alloc = std::fs::read_to_string(a.join("allocation.csv")).unwrap();
    for l in alloc.lines().skip(1) {
        let first: f64 = l.split(',').nth(3).unwrap().parse().unwrap();
        assert!(first > 0.0, "{l}");
    }
    for f in [
        "summary.md",
        "summary.csv",
        "runs.csv",
        "scheduler-config/FGD.yaml",
        "scheduler-config/BestFit.yaml",
        "plots/multigpu20_allocation.svg",
        "plots/multigpu20_allocation.png",
    ] {
        assert!(a.join(f).is_file(), "{f} missing");
    }
    let o = small_run(&b);
    assert!(o.status.success(), "{}", text(&o));
    for name in CSVS
        .iter()
        .chain(&["runs.csv", "summary.csv", "summary.md"])
    {
        assert_eq!(
            std::fs::read(a.join(name)).unwrap(),
            std::fs::read(b.join(name)).unwrap(),
            "{name} differs between two runs with the same seeds"
        );
    }
}

#[test]
fn fgd_rejects_bad_flag_values_with_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out = out.to_str().unwrap();
    for (args, expected) in [
        (vec!["--policy", "Tetris"], "unknown policy \"Tetris\""),
        (vec!["--seeds", "51..42"], "bad seeds \"51..42\""),
        (vec!["--tie-break", "first"], "tie break \"first\""),
        (vec!["--threads", "0"], "at least 1"),
        (
            vec!["--traces", "no/such/dir"],
            "--traces no/such/dir does not exist",
        ),
        (
            vec!["--traces", "traces/openb-small"],
            "has no openb_node_list_gpu_node.csv[.gz]",
        ),
        (
            vec!["--workload", "gpushare99", "--seeds", "1"],
            "unknown workload \"gpushare99\"",
        ),
    ] {
        let mut all = vec!["fgd", "--quiet", "--out", out];
        all.extend(&args);
        let o = ksim(&all);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(text(&o).contains(expected), "{args:?}: {}", text(&o));
    }
    let o = ksim(&["fgd"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("--out <DIR>"), "{}", text(&o));
}
