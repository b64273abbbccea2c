//! CI's share of fuzzing: every committed seed (`fuzz/corpus/<target>/`) and every crash the
//! fuzzers found (`fuzz/regressions/<target>/`, each also a named test below) goes through its
//! target again. Fast, deterministic, and a panic fails the test with the file's name.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

fn replay(target: &str, path: &Path) {
    let data = std::fs::read(path).unwrap();
    let result = std::panic::catch_unwind(|| ksim_fuzz::run(target, &data));
    assert!(
        result.is_ok(),
        "target {target} panicked on {}",
        path.display()
    );
}

#[test]
fn every_target_has_seeds_and_none_panics_on_them() {
    for (target, _) in ksim_fuzz::TARGETS {
        let seeds = files(&fuzz_dir().join("corpus").join(target));
        assert!(!seeds.is_empty(), "no seed for target {target}");
        for s in &seeds {
            replay(target, s);
        }
    }
}

#[test]
fn every_crash_found_so_far_stays_fixed() {
    for (target, _) in ksim_fuzz::TARGETS {
        for f in files(&fuzz_dir().join("regressions").join(target)) {
            replay(target, &f);
        }
    }
}

#[test]
fn every_fuzz_target_is_a_cargo_fuzz_binary() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for (target, _) in ksim_fuzz::TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "fuzz/Cargo.toml lacks the target {target}"
        );
        let src =
            std::fs::read_to_string(fuzz_dir().join("fuzz_targets").join(format!("{target}.rs")))
                .unwrap();
        assert!(src.contains(&format!("ksim_fuzz::run(\"{target}\"")));
    }
}

/// Fuzzing found: "1h2m333…3m" — a part too large for the cast saturated, and the sum of two
/// saturated parts overflowed (a panic with overflow checks, a wrong duration without).
#[test]
fn crash_duration_sum_overflow() {
    replay(
        "quantity",
        &fuzz_dir().join("regressions/quantity/duration-sum-overflow"),
    );
    let e = ksim_engine::SimDuration::parse(&format!("1h2m{}m", "3".repeat(60))).unwrap_err();
    assert!(e.contains("is too large"), "{e}");
}

/// Fuzzing found: a spot-GPU node list whose GPU count times 1000 overflowed i64; now the
/// node check refuses the absurd quantity with its line and field.
#[test]
fn crash_spot_nodes_gpu_count_overflow() {
    replay(
        "import",
        &fuzz_dir().join("regressions/import/spot-nodes-gpu-count-overflow"),
    );
}
