//! `ksim gen bench --kind KIND --nodes N --pods P [--seed S] --out FILE`: writes a benchmark
//! workload (`{"nodes": [...], "pods": [...]}`) for `ksim bench`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use ksim_bench::{Kind, Spec};

#[derive(Args)]
pub struct GenArgs {
    #[command(subcommand)]
    pub what: GenWhat,
}

#[derive(Subcommand)]
pub enum GenWhat {
    /// A benchmark workload for `ksim bench`.
    Bench(GenBenchArgs),
}

#[derive(Args)]
pub struct GenBenchArgs {
    /// plain, mixed (preferred anti-affinity + zone spread), affinity (required pod
    /// (anti-)affinity) or node-affinity (node affinity, node selectors, taints).
    #[arg(long, default_value = "plain")]
    pub kind: String,
    #[arg(long, default_value_t = 5000)]
    pub nodes: usize,
    #[arg(long, default_value_t = 10000)]
    pub pods: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Max pods per node (the node's `pods` capacity).
    #[arg(long, default_value_t = 110)]
    pub max_pods: u32,
    /// Cpu cores per node.
    #[arg(long, default_value_t = 32)]
    pub node_cpu: u32,
    /// Memory per node, GiB.
    #[arg(long, default_value_t = 128)]
    pub node_memory_gi: u32,
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(a: GenArgs) -> anyhow::Result<ExitCode> {
    match a.what {
        GenWhat::Bench(b) => {
            let mut spec = Spec::reference(Kind::parse(&b.kind)?, b.nodes, b.pods, b.seed);
            spec.max_pods = b.max_pods;
            spec.node_cpu = b.node_cpu;
            spec.node_memory_gi = b.node_memory_gi;
            let w = ksim_bench::gen::generate(&spec)?;
            ksim_bench::save(&w, &b.out)?;
            println!(
                "wrote {} ({} nodes, {} pods, kind {})",
                b.out.display(),
                w.nodes.len(),
                w.pods.len(),
                spec.kind.as_str()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
