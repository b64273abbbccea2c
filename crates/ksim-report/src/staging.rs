//! Atomic run directories. A run writes into a hidden staging folder beside its output
//! (`.NAME.ksim-partial-PID`), writes the completion marker [`COMPLETE_MARKER`] last, and only
//! then swaps the folder into place. An interrupted run therefore leaves the previous output
//! untouched (and a hidden partial folder, removed by the next run into the same place), never
//! new files mixed with old ones; and every reader of a run ([`check_complete`], called by
//! `Summary::read`) refuses a folder without the marker.
//!
//! An existing output folder is replaced only when it is empty or looks like a ksim run
//! (it has the marker, or holds nothing but files ksim writes), so `--out` pointed at a folder
//! of the user's own is an error, not a deletion.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::ReportError;
use crate::outputs::OUTPUT_FILES;

/// The file written last into a complete run directory.
pub const COMPLETE_MARKER: &str = "ksim-complete.json";

/// Files besides [`OUTPUT_FILES`] that a run directory may hold (`run.json`: a sweep run's
/// configuration).
const OTHER_RUN_FILES: [&str; 10] = [
    "events.jsonl",
    "node_events.csv",
    "refused.csv",
    "cluster-dump.json",
    "run.json",
    "explain.jsonl",
    "scheduler-config.yaml",
    "scenario.yaml",
    "ksim-run.json",
    COMPLETE_MARKER,
];

/// A run directory being written.
#[derive(Debug)]
pub struct StagedDir {
    target: PathBuf,
    staging: PathBuf,
    committed: bool,
}

impl StagedDir {
    /// Prepares to write `target`: checks that an existing `target` may be replaced, and
    /// creates an empty staging folder beside it.
    pub fn begin(target: &Path) -> Result<StagedDir, ReportError> {
        check_replaceable(target)?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into());
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(|e| ReportError::io(&parent, e))?;
        remove_stale_partials(&parent, &name, target);
        let staging = parent.join(format!(".{name}.ksim-partial-{}", std::process::id()));
        if staging.exists() {
            fs::remove_dir_all(&staging).map_err(|e| ReportError::io(&staging, e))?;
        }
        fs::create_dir_all(&staging).map_err(|e| ReportError::io(&staging, e))?;
        Ok(StagedDir {
            target: target.to_path_buf(),
            staging,
            committed: false,
        })
    }

    /// Where the run's files go until [`StagedDir::commit`].
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// Moves the folder, which must hold the completion marker ([`write_marker`]), into
    /// place, replacing the previous output (moved aside first, removed after the swap).
    pub fn commit(mut self) -> Result<(), ReportError> {
        check_complete(&self.staging)?;
        let old = if self.target.exists() {
            let mut aside = self.staging.clone().into_os_string();
            aside.push(".old");
            let aside = PathBuf::from(aside);
            if aside.exists() {
                fs::remove_dir_all(&aside).map_err(|e| ReportError::io(&aside, e))?;
            }
            fs::rename(&self.target, &aside).map_err(|e| ReportError::io(&self.target, e))?;
            Some(aside)
        } else {
            None
        };
        fs::rename(&self.staging, &self.target).map_err(|e| ReportError::io(&self.target, e))?;
        self.committed = true;
        if let Some(old) = old {
            fs::remove_dir_all(&old).map_err(|e| ReportError::io(&old, e))?;
        }
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        // A run that failed with an error leaves nothing behind; one killed outright leaves the
        // hidden staging folder, which the next run into the same place removes.
        if !self.committed {
            let _ = fs::remove_dir_all(&self.staging);
        }
    }
}

/// Removes hidden partial folders of earlier runs into `parent/name` whose process is gone.
/// A previous output moved aside by a run killed in the middle of its swap is put back.
fn remove_stale_partials(parent: &Path, name: &str, target: &Path) {
    let prefix = format!(".{name}.ksim-partial-");
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = file_name.strip_prefix(&prefix) else {
            continue;
        };
        let (pid, moved_aside) = match pid.strip_suffix(".old") {
            Some(p) => (p, true),
            None => (pid, false),
        };
        let alive = pid
            .parse::<u32>()
            .is_ok_and(|p| p == std::process::id() || Path::new(&format!("/proc/{p}")).exists());
        if alive {
            continue;
        }
        if moved_aside && !target.exists() {
            let _ = fs::rename(entry.path(), target);
        } else {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether `target` may be replaced by a run: missing, empty, or a ksim run directory.
fn check_replaceable(target: &Path) -> Result<(), ReportError> {
    if !target.exists() {
        return Ok(());
    }
    if !target.is_dir() {
        return Err(ReportError::Invalid {
            path: target.to_path_buf(),
            message: "exists and is not a directory; choose another output folder".into(),
        });
    }
    if target.join(COMPLETE_MARKER).is_file() {
        return Ok(());
    }
    let entries = fs::read_dir(target).map_err(|e| ReportError::io(target, e))?;
    let mut foreign = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| ReportError::io(target, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = entry.file_type().is_ok_and(|t| t.is_file())
            && (OUTPUT_FILES.contains(&name.as_str()) || OTHER_RUN_FILES.contains(&name.as_str()));
        if !ours {
            foreign.push(name);
        }
    }
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    let shown: Vec<&str> = foreign.iter().take(3).map(String::as_str).collect();
    Err(ReportError::Invalid {
        path: target.to_path_buf(),
        message: format!(
            "exists and holds files ksim did not write ({}{}); a run replaces its whole output \
             folder, so choose an empty or new one",
            shown.join(", "),
            if foreign.len() > 3 { ", ..." } else { "" }
        ),
    })
}

/// Writes the completion marker into `dir`: the last file of a run directory.
pub fn write_marker(dir: &Path) -> Result<(), ReportError> {
    let marker = dir.join(COMPLETE_MARKER);
    let text = format!(
        "{{\n  \"complete\": true,\n  \"writer\": \"ksim {}\"\n}}\n",
        env!("CARGO_PKG_VERSION")
    );
    fs::write(&marker, text).map_err(|e| ReportError::io(&marker, e))
}

/// Refuses a run directory that has no completion marker (an interrupted run, or one
/// written by a ksim before outputs were atomic).
pub fn check_complete(dir: &Path) -> Result<(), ReportError> {
    if dir.join(COMPLETE_MARKER).is_file() {
        return Ok(());
    }
    Err(ReportError::Invalid {
        path: dir.to_path_buf(),
        message: format!(
            "not a complete ksim run: {COMPLETE_MARKER} is missing (the run was interrupted, or \
             written by an older ksim); run it again"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ksim-staging-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_committed_run_replaces_the_old_one_whole() {
        let root = tmp("commit");
        let out = root.join("run");
        fs::create_dir_all(&out).unwrap();
        fs::write(out.join("summary.json"), "old").unwrap();
        fs::write(out.join("report.html"), "old").unwrap();
        let s = StagedDir::begin(&out).unwrap();
        fs::write(s.path().join("summary.json"), "new").unwrap();
        write_marker(s.path()).unwrap();
        // Not visible before the commit.
        assert_eq!(fs::read_to_string(out.join("summary.json")).unwrap(), "old");
        s.commit().unwrap();
        assert_eq!(fs::read_to_string(out.join("summary.json")).unwrap(), "new");
        assert!(!out.join("report.html").exists(), "no old file left beside");
        check_complete(&out).unwrap();
        let left: Vec<_> = fs::read_dir(&root).unwrap().collect();
        assert_eq!(left.len(), 1, "no staging folder left");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_abandoned_run_leaves_the_old_output_untouched() {
        let root = tmp("abandon");
        let out = root.join("run");
        fs::create_dir_all(&out).unwrap();
        fs::write(out.join("summary.json"), "old").unwrap();
        {
            let s = StagedDir::begin(&out).unwrap();
            fs::write(s.path().join("pods.csv"), "partial").unwrap();
        }
        assert_eq!(fs::read_to_string(out.join("summary.json")).unwrap(), "old");
        assert!(!out.join("pods.csv").exists());
        assert_eq!(fs::read_dir(&root).unwrap().count(), 1);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_folder_of_the_users_own_is_never_replaced() {
        let root = tmp("foreign");
        fs::write(root.join("thesis.tex"), "precious").unwrap();
        let e = StagedDir::begin(&root).unwrap_err().to_string();
        assert!(
            e.contains("holds files ksim did not write (thesis.tex)"),
            "{e}"
        );
        assert!(root.join("thesis.tex").exists());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_folder_without_the_marker_is_refused() {
        let root = tmp("marker");
        fs::write(root.join("summary.json"), "{}").unwrap();
        let e = check_complete(&root).unwrap_err().to_string();
        assert!(e.contains("not a complete ksim run"), "{e}");
        fs::remove_dir_all(&root).unwrap();
    }
}
