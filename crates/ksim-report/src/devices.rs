//! `devices.csv` and the report's device-allocation plot, from the engine's `Devices` records:
//! per DRA driver and pool, the devices claims hold (`allocated`) and the devices the pool
//! publishes (`total`), on the grid of `utilization.csv` (see [`crate::utilization`]: the same
//! sample times, a sample shows the state after every record at or before it, and
//! `allocated_peak` is the highest count left by an instant in `(previous sample, t]`).
//!
//! Written only when the run has `Devices` records (a ResourceSlice or an allocated
//! ResourceClaim existed); other runs' outputs are unchanged.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use ksim_engine::record::PodClaim;
use ksim_engine::time::SimTime;

use crate::error::ReportError;
use crate::recorder::Recorder;
use crate::utilization::grid_step;

/// Header of `devices.csv`: one row per sample and (driver, pool), pools in (driver, pool)
/// order.
pub const DEVICES_HEADER: [&str; 6] = [
    "time_s",
    "driver",
    "pool",
    "allocated",
    "total",
    "allocated_peak",
];

/// One `Devices` record.
#[derive(Debug, Clone)]
pub(crate) struct DeviceRow {
    pub at: SimTime,
    pub driver: String,
    pub pool: String,
    pub allocated: u64,
    pub total: u64,
}

/// Series drawn in the plot at most: with more pools, one line per driver (its pools summed).
pub(crate) const MAX_PLOT_SERIES: usize = 6;

/// The (driver, pool) keys of a run's `Devices` records, sorted (empty without any).
pub(crate) fn keys(rec: &Recorder) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = rec
        .devices
        .iter()
        .map(|d| (d.driver.clone(), d.pool.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The plot's lines: (label, per sample (time, allocated, total)).
pub(crate) type PlotLines = Vec<(String, Vec<(SimTime, u64, u64)>)>;

/// The pods.csv `claims` cell: `claim=dev,dev;claim2=dev` (a claim without devices: its name).
pub(crate) fn claims_cell(claims: &[PodClaim]) -> String {
    claims
        .iter()
        .filter(|c| !c.name.is_empty())
        .map(|c| {
            if c.devices.is_empty() {
                c.name.clone()
            } else {
                format!("{}={}", c.name, c.devices.join(","))
            }
        })
        .collect::<Vec<_>>()
        .join(";")
}

impl Recorder {
    /// Whether the run used DRA (pods.csv's `claims` column, devices.csv).
    pub(crate) fn has_dra(&self) -> bool {
        !self.devices.is_empty() || self.pod_claims > 0
    }
}

/// Walks the utilization grid; `each` gets every sample's time and, per key of [`keys`], the
/// (allocated, total, allocated_peak) counts.
fn walk(
    rec: &Recorder,
    keys: &[(String, String)],
    mut each: impl FnMut(SimTime, &[(u64, u64, u64)]) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let index: BTreeMap<(&str, &str), usize> = keys
        .iter()
        .enumerate()
        .map(|(i, (d, p))| ((d.as_str(), p.as_str()), i))
        .collect();
    let horizon = rec.horizon().micros().max(0);
    let step = grid_step(SimTime(horizon), rec.options.max_steps);
    let nsamples = (horizon + step - 1) / step;
    let sample_time = |k: i64| (k * step).min(horizon);
    let mut state = vec![(0u64, 0u64); keys.len()];
    let mut peak = vec![0u64; keys.len()];
    let mut counts = vec![(0u64, 0u64, 0u64); keys.len()];
    let mut i = 0;
    let rows = &rec.devices;
    for k in 0..=nsamples {
        let t = sample_time(k);
        // Apply every instant up to t; the state after each instant counts for the peak.
        while i < rows.len() && rows[i].at.micros() <= t {
            let at = rows[i].at;
            while i < rows.len() && rows[i].at == at {
                let r = &rows[i];
                if let Some(&j) = index.get(&(r.driver.as_str(), r.pool.as_str())) {
                    state[j] = (r.allocated, r.total);
                }
                i += 1;
            }
            for (p, s) in peak.iter_mut().zip(&state) {
                *p = (*p).max(s.0);
            }
        }
        for ((c, s), p) in counts.iter_mut().zip(&state).zip(&peak) {
            *c = (s.0, s.1, (*p).max(s.0));
        }
        each(SimTime(t), &counts)?;
        // The state at this sample starts the next interval's peak.
        for (p, s) in peak.iter_mut().zip(&state) {
            *p = s.0;
        }
    }
    Ok(())
}

/// Writes `devices.csv` (streamed: memory does not grow with samples × pools).
pub(crate) fn write_csv(
    rec: &Recorder,
    keys: &[(String, String)],
    path: &Path,
) -> Result<(), ReportError> {
    let file = File::create(path).map_err(|e| ReportError::io(path, e))?;
    let mut w = csv::Writer::from_writer(BufWriter::new(file));
    w.write_record(DEVICES_HEADER)
        .map_err(|e| ReportError::csv(path, e))?;
    walk(rec, keys, |at, counts| {
        let time = at.secs_string();
        for ((driver, pool), (a, t, p)) in keys.iter().zip(counts) {
            w.write_record([
                time.as_str(),
                driver,
                pool,
                &a.to_string(),
                &t.to_string(),
                &p.to_string(),
            ])
            .map_err(|e| ReportError::csv(path, e))?;
        }
        Ok(())
    })?;
    w.flush().map_err(|e| ReportError::io(path, e))
}

/// The plot's lines: one per pool (`driver/pool`) up to [`MAX_PLOT_SERIES`] pools, else one per
/// driver with its pools summed (`driver (N pools)`).
pub(crate) fn plot_lines(
    rec: &Recorder,
    keys: &[(String, String)],
) -> Result<PlotLines, ReportError> {
    let per_pool = keys.len() <= MAX_PLOT_SERIES;
    let mut groups: Vec<String> = Vec::new();
    let mut group_of: Vec<usize> = Vec::with_capacity(keys.len());
    for (d, p) in keys {
        let label = if per_pool {
            format!("{d}/{p}")
        } else {
            d.clone()
        };
        match groups.iter().position(|g| *g == label) {
            Some(i) => group_of.push(i),
            None => {
                groups.push(label);
                group_of.push(groups.len() - 1);
            }
        }
    }
    let mut pools_in = vec![0usize; groups.len()];
    for &g in &group_of {
        pools_in[g] += 1;
    }
    let mut lines: PlotLines = groups
        .iter()
        .zip(&pools_in)
        .map(|(g, n)| {
            let label = if per_pool {
                g.clone()
            } else {
                format!("{g} ({n} pools)")
            };
            (label, Vec::new())
        })
        .collect();
    walk(rec, keys, |at, counts| {
        let mut sums = vec![(0u64, 0u64); lines.len()];
        for (&g, (a, t, _)) in group_of.iter().zip(counts) {
            sums[g].0 += a;
            sums[g].1 += t;
        }
        for (line, (a, t)) in lines.iter_mut().zip(sums) {
            line.1.push((at, a, t));
        }
        Ok(())
    })?;
    Ok(lines)
}
