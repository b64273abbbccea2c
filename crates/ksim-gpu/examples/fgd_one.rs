//! Times single runs of the FGD experiment (release build):
//! `cargo run --release -p ksim-gpu --example fgd_one -- [WORKLOAD] [POLICY...]`.

use std::time::Instant;

use ksim_gpu::experiment::{load_workload, registry, run_one, Policy, RunOptions, TieBreak};
use ksim_gpu::matrix::traces_dir;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workload = args.first().map(String::as_str).unwrap_or("default");
    let policies: Vec<Policy> = if args.len() > 1 {
        args[1..]
            .iter()
            .map(|p| Policy::parse(p))
            .collect::<Result<_, _>>()?
    } else {
        Policy::ALL.to_vec()
    };
    let t = Instant::now();
    let w = load_workload(&traces_dir(None), workload)?;
    println!(
        "loaded {workload}: {} nodes, {} pods, {} typical pods ({} shapes), {:.2} s",
        w.nodes.len(),
        w.pods.len(),
        w.typical.pods.len(),
        w.typical.distinct_shapes,
        t.elapsed().as_secs_f64()
    );
    let reg = registry();
    for p in policies {
        let fw = p.framework(&reg, TieBreak::NodeName)?;
        let t = Instant::now();
        let o = run_one(&w, p, 42, &fw, RunOptions::default())?;
        println!(
            "{:<14} seed 42: {} pods, {} failed, alloc@100 {:.2}%, frag@100 {:.2}%, {:.2} s",
            p.name(),
            o.pods,
            o.failed,
            o.curves.allocation[100].unwrap_or(f64::NAN),
            o.curves.fragmentation[100].unwrap_or(f64::NAN),
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
