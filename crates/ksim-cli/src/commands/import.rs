//! `ksim import FORMAT INPUT... --out DIR`

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use ksim_api::Quantity;
use ksim_trace::{import, ImportFormat, ImportOptions, MachineShape};

#[derive(Args)]
pub struct ImportArgs {
    /// Input format (alibaba-openb, alibaba-v2017, alibaba-v2018, alibaba-v2020-machines,
    /// alibaba-v2025-dlrm, alibaba-v2026-spot-nodes, borg-2011, borg-2019, kube-dump,
    /// audit-log, simkube).
    pub format: String,
    /// Input files.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Output directory (gets nodes.yaml and trace.jsonl).
    #[arg(long)]
    pub out: PathBuf,
    /// Machine shape that normalised 1.0 stands for, as CPU,MEMORY (e.g. 64,256Gi).
    #[arg(long)]
    pub machine: Option<String>,
    /// Stop after this many pods.
    #[arg(long)]
    pub max_pods: Option<u64>,
    /// Expand at most this many instances per batch task.
    #[arg(long)]
    pub max_instances_per_task: Option<u64>,
    /// Node pool for traces without nodes: NAME:COUNT:NODEFILE (a Node YAML/JSON template).
    #[arg(long = "node-pool")]
    pub node_pools: Vec<String>,
}

pub fn run(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let format: ImportFormat = a.format.parse().map_err(anyhow::Error::msg)?;
    let machine = match &a.machine {
        None => None,
        Some(s) => {
            let (c, m) = s.split_once(',').ok_or_else(|| {
                anyhow::anyhow!("--machine {s:?}: expected CPU,MEMORY such as 64,256Gi")
            })?;
            let cpu = Quantity::parse(c.trim()).with_context(|| format!("--machine cpu {c:?}"))?;
            let memory =
                Quantity::parse(m.trim()).with_context(|| format!("--machine memory {m:?}"))?;
            // Normalised 1.0 stands for this machine: zero or negative would turn every
            // request into nothing (or less).
            for (what, q) in [("cpu", &cpu), ("memory", &memory)] {
                if q.milli_value() <= 0 {
                    anyhow::bail!("--machine {what} {:?}: must be more than 0", q.as_str());
                }
            }
            Some(MachineShape { cpu, memory })
        }
    };
    let mut node_pools = Vec::new();
    for spec in &a.node_pools {
        let mut parts = spec.splitn(3, ':');
        let (Some(name), Some(count), Some(file)) = (parts.next(), parts.next(), parts.next())
        else {
            anyhow::bail!("--node-pool {spec:?}: expected NAME:COUNT:NODEFILE");
        };
        let count: u32 = count
            .parse()
            .with_context(|| format!("--node-pool {spec:?}: count {count:?} is not a number"))?;
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading node template {file}"))?;
        let docs = ksim_api::load::parse_documents(file, &text)?;
        let template = docs
            .into_iter()
            .next()
            .ok_or_else(|| anyhow::anyhow!("{file}: empty node template"))?;
        node_pools.push(ksim_trace::scenario::NodePool {
            name: name.to_string(),
            count,
            template,
        });
    }
    let opts = ImportOptions {
        node_pools,
        machine,
        max_pods: a.max_pods,
        max_instances_per_task: a.max_instances_per_task,
        namespace: None,
    };
    let summary = import(format, &a.inputs, &a.out, &opts)?;
    print!("{summary}");
    Ok(ExitCode::SUCCESS)
}
