//! The FGD experiment matrix from the command line, with the flags of `ksim fgd`:
//!
//! ```text
//! cargo run --release -p ksim-gpu --example fgd -- [--workload NAME]... [--policy NAME]...
//!     [--seeds 42..51] [--traces DIR] [--threads N] [--tie-break node-name|random]
//!     [--no-plots] [--quiet] --out DIR
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use ksim_gpu::{parse_seeds, run_fgd, FgdOptions, TieBreak};

fn usage() -> &'static str {
    "usage: fgd [--workload NAME]... [--policy NAME]... [--seeds 42..51] [--traces DIR] \
     [--threads N] [--tie-break node-name|random] [--no-plots] [--quiet] --out DIR"
}

fn parse() -> Result<FgdOptions, String> {
    let mut o = FgdOptions {
        plots: true,
        progress: true,
        ..FgdOptions::default()
    };
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .ok_or_else(|| format!("{a} needs a value\n{}", usage()))
        };
        match a.as_str() {
            "--workload" => o.workloads.push(val()?),
            "--policy" => o.policies.push(val()?),
            "--seeds" => o.seeds = parse_seeds(&val()?).map_err(|e| e.to_string())?,
            "--traces" => o.traces = Some(PathBuf::from(val()?)),
            "--out" => out = Some(PathBuf::from(val()?)),
            "--threads" => o.threads = Some(val()?.parse().map_err(|e| format!("--threads: {e}"))?),
            "--max-pods" => {
                o.max_pods = Some(val()?.parse().map_err(|e| format!("--max-pods: {e}"))?)
            }
            "--tie-break" => o.tie_break = TieBreak::parse(&val()?).map_err(|e| e.to_string())?,
            "--no-plots" => o.plots = false,
            "--quiet" => o.progress = false,
            "-h" | "--help" => return Err(usage().into()),
            other => return Err(format!("unknown argument {other:?}\n{}", usage())),
        }
    }
    o.out = out.ok_or_else(|| format!("--out is required\n{}", usage()))?;
    Ok(o)
}

fn main() -> ExitCode {
    let opts = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run_fgd(opts) {
        Ok(s) => {
            println!("{}", s.markdown);
            println!(
                "{} runs ({} workloads × {} policies × {} seeds) in {:.1} s; outputs in {}",
                s.runs,
                s.workloads.len(),
                s.policies.len(),
                s.seeds.len(),
                s.wall_seconds,
                s.out.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
