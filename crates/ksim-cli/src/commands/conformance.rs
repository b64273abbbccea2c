//! `ksim conformance DIR...`

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

#[derive(Args)]
pub struct ConformanceArgs {
    /// Directories of case files (searched recursively for *.json).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Only cases whose name contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Print every difference of a failing case, not just the first.
    #[arg(long)]
    pub all_differences: bool,
}

pub fn run(a: ConformanceArgs) -> anyhow::Result<ExitCode> {
    let (mut passed, mut failed) = (0usize, 0usize);
    for dir in &a.dirs {
        let outcomes = ksim_conformance::run_dir(dir, a.filter.as_deref())
            .with_context(|| format!("reading cases in {}", dir.display()))?;
        for o in outcomes {
            if o.passed() {
                passed += 1;
                continue;
            }
            failed += 1;
            if a.all_differences {
                println!("FAIL {}: {}", o.name, o.differences.join("\n    "));
            } else {
                let first = o.differences.first().map(String::as_str).unwrap_or("");
                let first = first.replace('\n', " ");
                println!("FAIL {}: {}", o.name, first);
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
