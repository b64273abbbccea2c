//! `ksim sweep`, `ksim merge`, `ksim compare` and `ksim plan` from the command line, on the
//! shipped scenarios (the library tests in ksim-sweep check the figures in depth).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(args)
        .current_dir(root())
        .env("CI", "true")
        .output()
        .unwrap()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn sweep_shards_merge_and_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    let shared = tmp.path().join("shared");
    let w = whole.to_str().unwrap();
    let s = shared.to_str().unwrap();
    let o = ksim(&[
        "sweep",
        "scenarios/openb-small-sweep.yaml",
        "--out",
        w,
        "--jobs",
        "2",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("9 runs; sweep.csv, plots and runs/ written to"),
        "{}",
        text(&o)
    );
    // Two shards into one shared directory, then merged in place.
    for i in 0..2 {
        let shard = format!("{i}/2");
        let o = ksim(&[
            "sweep",
            "scenarios/openb-small-sweep.yaml",
            "--shard",
            &shard,
            "--out",
            s,
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains(&format!("shard {i}/2: ")), "{}", text(&o));
    }
    assert!(!shared.join("sweep.csv").exists());
    let o = ksim(&["merge", s]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read(shared.join("sweep.csv")).unwrap(),
        std::fs::read(whole.join("sweep.csv")).unwrap()
    );

    // compare: runs made separately, baseline first; differences shown, best marked.
    let a = whole.join("runs/000-default-1");
    let b = whole.join("runs/003-most_allocated-1");
    let out = tmp.path().join("cmp");
    let o = ksim(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("latency_max_s"), "{t}");
    assert!(t.contains(" *"), "{t}");
    assert!(
        t.contains("change from the first run, 000-default-1"),
        "{t}"
    );
    assert!(t.contains("same in every run: pods 400"), "{t}");
    for f in ["compare.csv", "runs.svg", "runs.png", "latency_cdf.svg"] {
        assert!(out.join(f).exists(), "{f}");
    }
}

#[test]
fn plan_prints_the_answer_and_bad_input_names_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("plan");
    let o = ksim(&[
        "plan",
        "scenarios/plan-synthetic.yaml",
        "--pool",
        "workers",
        "--slo",
        "scheduled>=100%",
        "--slo",
        "p99<=30s",
        "--max",
        "64",
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("smallest count of pool workers meeting scheduled>=100%, p99<=30s: 25"),
        "{t}"
    );
    for f in ["plan.csv", "plan.json", "plan.svg", "plan.png"] {
        assert!(out.join(f).exists(), "{f}");
    }
    // No count in range: exit 1.
    let o = ksim(&[
        "plan",
        "scenarios/plan-synthetic.yaml",
        "--pool",
        "workers",
        "--slo",
        "scheduled>=100%",
        "--max",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let o = ksim(&[
        "plan",
        "scenarios/plan-synthetic.yaml",
        "--pool",
        "workers",
        "--slo",
        "speed>=3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("--slo \"speed>=3\": unknown figure"),
        "{}",
        text(&o)
    );
    let o = ksim(&[
        "sweep",
        "scenarios/openb-small-sweep.yaml",
        "--shard",
        "2/2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("--shard \"2/2\": I must be less than N"),
        "{}",
        text(&o)
    );
}
