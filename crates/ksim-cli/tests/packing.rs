//! `ksim compare` of the default profile against MostAllocated on a shrunk quickstart
//! (tests/packing/scenario.yaml): the nodes-in-use difference is the first line, and the whole
//! comparison matches the golden file tests/packing/compare.golden (rewrite it with
//! `KSIM_UPDATE_GOLDEN=1 cargo test -p ksim-cli --test packing` after checking the change).

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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/packing")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn compare_most_allocated_leads_with_nodes_in_use() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = data().join("scenario.yaml");
    let config = data().join("most-allocated.yaml");
    for (name, extra) in [
        ("default", None),
        ("most-allocated", Some(config.to_str().unwrap())),
    ] {
        let mut args = vec!["run", scenario.to_str().unwrap(), "--out", name, "-q"];
        if let Some(c) = extra {
            args.extend(["--scheduler-config", c]);
        }
        let o = ksim(tmp.path(), &args);
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = ksim(
        tmp.path(),
        &["compare", "default", "most-allocated", "--out", "cmp"],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", text(&o));
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("most-allocated uses ") && first.contains(" fewer nodes at the end"),
        "{out}"
    );
    // One CSV, not two.
    let csvs: Vec<_> = std::fs::read_dir(tmp.path().join("cmp"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "csv"))
        .collect();
    assert_eq!(csvs.len(), 1);
    let csv = std::fs::read_to_string(tmp.path().join("cmp/compare.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().contains("nodes_in_use_at_end"),
        "{csv}"
    );

    // The table without the output-directory line, which names the temporary directory.
    let shown: String = out
        .lines()
        .filter(|l| !l.starts_with("compare.csv and plots written to"))
        .map(|l| format!("{l}\n"))
        .collect();
    let golden = data().join("compare.golden");
    if std::env::var_os("KSIM_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &shown).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    assert_eq!(
        shown,
        want,
        "compare output differs from {}",
        golden.display()
    );
}
