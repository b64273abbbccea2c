//! `ksim validate TRACE...`

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct ValidateArgs {
    /// Native traces (JSON Lines, or CSV by extension).
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
}

pub fn run(a: ValidateArgs) -> anyhow::Result<ExitCode> {
    let mut ok = true;
    for t in &a.traces {
        let report = ksim_trace::validate_trace(t)?;
        print!("{report}");
        ok &= report.is_ok();
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
