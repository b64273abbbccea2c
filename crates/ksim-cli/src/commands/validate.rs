//! `ksim validate [--nodes FILE] TRACE...`: every problem of each trace, with its line. The
//! reference checks are the ones `ksim run` refuses with (a test keeps the two in step); with
//! `--nodes`, the nodes of that file exist from the start, as in a run with the same file; with
//! `--kubernetes-version` / `--feature-gates`, DRA objects are checked against those gates.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use ksim_trace::{load_nodes, validate_trace_with, ValidateOptions};

#[derive(Args)]
pub struct ValidateArgs {
    /// Native traces (JSON Lines, or CSV by extension).
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// The nodes file the traces run against (a List or a kube-dump), as `ksim run --nodes`.
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// The version and gates the traces run as: DRA objects' gated fields are checked
    /// against them, as `ksim run` checks them.
    #[command(flatten)]
    pub version: super::version_args::VersionArgs,
}

pub fn run(a: ValidateArgs) -> anyhow::Result<ExitCode> {
    let mut opts = ValidateOptions::default();
    opts.gates = a.version.apply(&opts.gates)?;
    if let Some(n) = &a.nodes {
        opts.known_nodes = load_nodes(n)?
            .into_iter()
            .map(|n| n.metadata.name)
            .collect();
    }
    let mut ok = true;
    for t in &a.traces {
        let report = validate_trace_with(t, &opts)?;
        print!("{report}");
        ok &= report.is_ok();
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
