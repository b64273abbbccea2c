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
    /// Run every case as this Kubernetes version (1.35 or 1.36) instead of the one that
    /// recorded it (`expected.k8sVersion`): for cases recorded with changes ported from
    /// another version.
    #[arg(long, value_name = "VERSION", value_parser = parse_version)]
    pub kubernetes_version: Option<ksim_api::version::KubernetesVersion>,
}

fn parse_version(s: &str) -> Result<ksim_api::version::KubernetesVersion, String> {
    ksim_api::version::KubernetesVersion::parse(s).map_err(|e| e.to_string())
}

pub fn run(a: ConformanceArgs) -> anyhow::Result<ExitCode> {
    let (mut passed, mut failed) = (0usize, 0usize);
    for dir in &a.dirs {
        let outcomes = ksim_conformance::run_dir_as(dir, a.filter.as_deref(), a.kubernetes_version)
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
