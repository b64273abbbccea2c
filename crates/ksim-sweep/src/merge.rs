//! Joining a sweep's outputs: the manifests in one or more directories (one `sweep.json`, or the
//! `shard-I-of-N.json` files of its shards) become one [`RunTable`], written as `sweep.csv` and
//! the comparison plots. An unsharded sweep goes through the same path, so shards merged give
//! the same bytes as one run of the whole sweep.

use std::path::{Path, PathBuf};

use crate::error::SweepError;
use crate::plots::write_table_plots;
use crate::run::Manifest;
use crate::table::RunTable;

/// The manifests in `dirs`: per directory its shard manifests, or its `sweep.json` when it has
/// none. Sorted by shard for a fixed order.
pub fn find_manifests(dirs: &[PathBuf]) -> Result<Vec<(PathBuf, Manifest)>, SweepError> {
    let mut out = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(dir).map_err(|e| SweepError::io(dir, e))?;
        let mut shards: Vec<PathBuf> = Vec::new();
        for e in entries {
            let e = e.map_err(|e| SweepError::io(dir, e))?;
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with("shard-") && name.ends_with(".json") && name.contains("-of-") {
                shards.push(e.path());
            }
        }
        shards.sort();
        if shards.is_empty() {
            let whole = dir.join("sweep.json");
            if !whole.exists() {
                return Err(SweepError::input(
                    dir.display().to_string(),
                    "neither sweep.json nor shard-I-of-N.json: not a sweep's output directory",
                ));
            }
            shards.push(whole);
        }
        for s in shards {
            out.push((dir.clone(), Manifest::read(&s)?));
        }
    }
    out.sort_by_key(|(_, m)| (m.shard.count, m.shard.index));
    Ok(out)
}

/// Writes `sweep.csv` and the comparison plots of `table` into `out`.
pub fn write_sweep_outputs(table: &RunTable, out: &Path) -> Result<(), SweepError> {
    std::fs::create_dir_all(out).map_err(|e| SweepError::io(out, e))?;
    table.write_csv(&out.join("sweep.csv"))?;
    write_table_plots(table, out)?;
    Ok(())
}

/// `ksim merge DIR... --out OUT`: the table of the shards in `dirs`, written into `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<RunTable, SweepError> {
    let parts = find_manifests(dirs)?;
    let table = RunTable::from_manifests(&parts)?;
    write_sweep_outputs(&table, out)?;
    Ok(table)
}
