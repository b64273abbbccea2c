//! Generates one test per case family found on disk (`tests/conformance/cases`,
//! `tests/conformance/timelines/cases` and the v1.36.2 decision cases
//! `tests/conformance/v1.36/cases`), so a new family runs without editing code.
//! The tests include `$OUT_DIR/families.rs`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[path = "src/family.rs"]
#[allow(dead_code)]
mod family;

fn ident(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("../../tests/conformance");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/family.rs");
    let mut out = String::new();
    for (suite, rel) in [
        ("decision", "cases"),
        ("timeline", "timelines/cases"),
        ("decision_v1_36", "v1.36/cases"),
    ] {
        let dir = root.join(rel);
        println!("cargo:rerun-if-changed={}", dir.display());
        // A missing directory (the crate built on its own) yields no tests; the tests that
        // include this list check it is not empty.
        let fams = family::families(&dir).unwrap_or_default();
        let names: Vec<String> = fams.keys().map(|f| format!("{f:?}")).collect();
        let _ = writeln!(
            out,
            "pub const {}_FAMILIES: &[&str] = &[{}];",
            suite.to_uppercase(),
            names.join(", ")
        );
        for f in fams.keys() {
            let _ = writeln!(
                out,
                "#[test] fn {suite}_{}() {{ run_family({rel:?}, {f:?}); }}",
                ident(f)
            );
        }
    }
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap_or_default()).join("families.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        panic!("cannot write {}: {e}", dest.display());
    }
}
