//! The `ksim` binary: a thin layer over the library crates. Arguments are parsed in two steps
//! (clap → a validated plan), errors surface through `anyhow` with context, and exit codes are
//! 0 (success), 1 (a check failed: conformance differences, validation problems) and 2 (bad
//! input or I/O error).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;
mod progress;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// mimalloc's option setter (libmimalloc-sys declares it only under its `extended` feature,
// which would pull in another crate; the symbol is in the linked library either way).
extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in `mi_option_e` of the mimalloc v3 that libmimalloc-sys 0.1.49
/// builds (`c_src/mimalloc/v3/include/mimalloc.h`); ksim-cli pins that version exactly.
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Tells mimalloc never to purge (return to the OS) the memory it frees, unless the user set
/// `MIMALLOC_PURGE_DELAY`. A run frees and allocates pod objects at every event, and a replay
/// allocates its pods on the prefetch thread and frees them on the engine's: with purging,
/// freed pages went back to the OS and came back as fresh transparent huge pages that the
/// kernel zeroes (perf of a 10,000-node replay: `clear_page_erms` under `mi_page_fresh_alloc`,
/// about 12% of the samples). Without it, a 250,000-pod replay takes 600 to 650 page faults
/// instead of 1,700 to 4,600, for up to 6% more peak memory (429 to 446 MiB against 421 MiB);
/// its CPU time fell by 15% in one run on a quiet machine, and by less than the noise in
/// runs on a busy one.
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an option value; mimalloc reads options atomically, and this runs
        // before any other thread starts.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
}

#[derive(Parser)]
#[command(
    name = "ksim",
    version,
    about = "Discrete-event simulator of Kubernetes scheduling (kube-scheduler v1.35.4 core)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario (or nodes + traces) and write the reports.
    Run(commands::run::RunArgs),
    /// Run recorded kube-scheduler conformance cases (decision and timeline) in directories.
    Conformance(commands::conformance::ConformanceArgs),
    /// One recorded scheduling attempt of a pod (`ksim run --explain`): verdicts per node,
    /// scores per plugin, nearest misses.
    Explain(commands::explain::ExplainArgs),
    /// Check a native trace and report every problem with its line.
    Validate(commands::validate::ValidateArgs),
    /// Convert a public trace, cluster dump or audit log into a native trace and nodes file.
    Import(commands::import::ImportArgs),
    /// Re-render the reports of a run from its event log.
    Report(commands::report::ReportArgs),
    /// Compare runs side by side (their summary.json), best value per column marked.
    Compare(commands::compare::CompareArgs),
    /// Time the scheduling loop over a workload (pods/s, peak memory, placement digest).
    Bench(commands::bench::BenchArgs),
    /// Generate inputs (`gen bench`: a benchmark workload).
    Gen(commands::gen::GenArgs),
    /// Run a sweep: a base scenario × axes (configurations, pools, scale, seeds), in parallel.
    Sweep(commands::sweep::SweepArgs),
    /// Join the outputs of a sweep's shards (`ksim sweep --shard I/N`) into one sweep.csv.
    Merge(commands::merge::MergeArgs),
    /// Find the smallest count of a node pool that meets an SLO, by bisection over runs.
    Plan(commands::plan::PlanArgs),
    /// The FGD paper's GPU-sharing experiment: openb workloads × six policies × seeds.
    Fgd(commands::fgd::FgdArgs),
}

fn main() -> ExitCode {
    // `ksim compare a b | head`: a closed pipe ends the process quietly, as for other command
    // line tools, instead of a panic from `println!`.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    tune_allocator();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => commands::run::run(a),
        Command::Conformance(a) => commands::conformance::run(a),
        Command::Explain(a) => commands::explain::run(a),
        Command::Validate(a) => commands::validate::run(a),
        Command::Import(a) => commands::import::run(a),
        Command::Report(a) => commands::report::run(a),
        Command::Compare(a) => commands::compare::run(a),
        Command::Bench(a) => commands::bench::run(a),
        Command::Gen(a) => commands::gen::run(a),
        Command::Sweep(a) => commands::sweep::run(a),
        Command::Merge(a) => commands::merge::run(a),
        Command::Plan(a) => commands::plan::run(a),
        Command::Fgd(a) => commands::fgd::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes joined by ": ", leaving out a cause whose text the message before
/// it already ends with (library errors print their source themselves: "file: No such file").
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
