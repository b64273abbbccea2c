//! [`Recorder::write_outputs`]: every file of a run directory.

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::Path;

use ksim_engine::record::Record;
use ksim_engine::time::SimTime;

use crate::error::ReportError;
use crate::recorder::{secs, Recorder};
use crate::summary::{self, Summary};
use crate::utilization::{sweep, UTILIZATION_HEADER};
use crate::{html, plots};

/// Header of `pods.csv`. One row per `PodCreated`, in creation order (a pod re-created under the
/// same name is a new row). Times are seconds with up to 6 decimals, empty when it never
/// happened: `first_attempt_s` the first scheduling attempt, `scheduled_s` the last `Scheduled`
/// attempt, `bound_s` the end of binding, `finished_s` when the pod left the cluster (succeeded,
/// deleted, preempted, failed). `node` is the bound node, or the node of a `Scheduled` attempt
/// whose binding had not finished. `outcome` is the `PodEnded` outcome, else running when bound
/// and pending when not. `last_reason` is the message of the pod's last failed attempt (FitError
/// text, or the error of an `Error` attempt), kept after a later success; for a pod DRA keeps
/// out of the queue and never attempted, why it waits (`Record::PodWaiting`). `owner_kind`,
/// `owner_name` are the pod's controller `ownerReference` (a Deployment's pods: their
/// ReplicaSet), empty when it has none.
pub const PODS_HEADER: [&str; 15] = [
    "namespace",
    "name",
    "priority",
    "created_s",
    "first_attempt_s",
    "scheduled_s",
    "bound_s",
    "finished_s",
    "attempts",
    "node",
    "outcome",
    "preempted_by",
    "last_reason",
    "owner_kind",
    "owner_name",
];

/// The column appended to [`PODS_HEADER`] in runs where the taint-eviction controller evicted
/// a pod: why each pod was evicted (`taint`, `preemption`, `node-lost`), empty when it was
/// not. Runs without such an eviction keep the 15 columns, byte for byte.
pub const EVICTION_CAUSE_COLUMN: &str = "eviction_cause";

/// The column appended to [`PODS_HEADER`] (after `eviction_cause` when present) in runs with
/// DRA (a ResourceSlice, an allocated ResourceClaim or a pod with `spec.resourceClaims`
/// that bound): the pod's claims as it bound, `claim=driver/pool/device,...` separated by
/// `;` (a claim without an allocation: its name alone). Runs without DRA keep their columns,
/// byte for byte.
pub const CLAIMS_COLUMN: &str = "claims";

/// Header of `controllers.csv`: one row per workload controller, as it stands at the end of the
/// run. `desired` is replicas (a DaemonSet: its eligible nodes; a Job: its completions);
/// `created` the pods it created, `live` those it has now, `running` those bound and started;
/// `time_to_all_running_s` from its last create or spec change to the first instant all desired
/// pods ran (empty if never; Jobs: empty); `max_unavailable` the most desired pods not running
/// at once after that; `replaced` its pods that ended other than by its own hand (deleted,
/// preempted, failed with their node); Jobs: `succeeded`, `failed`, `completed_s`, and once the
/// Job's terminal condition is set, `condition` (`Complete` or `Failed`), its `reason`
/// (`CompletionsReached`, `SuccessPolicy`, `BackoffLimitExceeded`, `DeadlineExceeded`,
/// `PodFailurePolicy`, `MaxFailedIndexesExceeded`, `FailedIndexes`) and, for `Failed`,
/// `failed_s`, when it was set.
pub const CONTROLLERS_HEADER: [&str; 16] = [
    "kind",
    "namespace",
    "name",
    "desired",
    "created",
    "live",
    "running",
    "time_to_all_running_s",
    "max_unavailable",
    "replaced",
    "succeeded",
    "failed",
    "completed_s",
    "condition",
    "reason",
    "failed_s",
];

/// The files [`Recorder::write_outputs`] writes, in the order it writes them; the completion
/// marker ([`crate::staging::COMPLETE_MARKER`]) comes after them.
pub const OUTPUT_FILES: [&str; 18] = [
    "placements.csv",
    "pods.csv",
    "controllers.csv",
    "utilization.csv",
    "summary.json",
    "utilization.svg",
    "utilization.png",
    "pool_utilization.svg",
    "pool_utilization.png",
    "pending.svg",
    "pending.png",
    "running.svg",
    "running.png",
    "nodes_in_use.svg",
    "nodes_in_use.png",
    "latency_cdf.svg",
    "latency_cdf.png",
    "report.html",
];

impl Recorder {
    /// Writes [`OUTPUT_FILES`] into `dir` (created if missing), then the completion marker,
    /// and returns the summary. For an atomic run directory write into a
    /// [`crate::staging::StagedDir`].
    ///
    /// Pods not ended by a `PodEnded` are reported as running when bound, pending otherwise.
    /// When the recorder was made with [`Recorder::to_dir`] for another directory, its
    /// `placements.csv` is copied here.
    pub fn write_outputs(&mut self, dir: &Path) -> Result<Summary, ReportError> {
        fs::create_dir_all(dir).map_err(|e| ReportError::io(dir, e))?;
        self.finish_placements(dir)?;
        self.write_pods_csv(&dir.join("pods.csv"))?;
        self.write_controllers_csv(&dir.join("controllers.csv"))?;
        if !self.node_health.is_empty() {
            crate::node_health::write_csv(&self.node_health, &dir.join("node_events.csv"))?;
        }
        let device_keys = crate::devices::keys(self);
        if !device_keys.is_empty() {
            crate::devices::write_csv(self, &device_keys, &dir.join("devices.csv"))?;
        }
        if !self.refused.is_empty() {
            crate::refused::write_csv(&self.refused, &dir.join("refused.csv"))?;
        }

        let path = dir.join("utilization.csv");
        let file = File::create(&path).map_err(|e| ReportError::io(&path, e))?;
        let mut w = csv::Writer::from_writer(BufWriter::new(file));
        w.write_record(UTILIZATION_HEADER)
            .map_err(|e| ReportError::csv(&path, e))?;
        let sweep = sweep(self, Some(&mut w)).map_err(|e| ReportError::csv(&path, e))?;
        w.flush().map_err(|e| ReportError::io(&path, e))?;

        let summary = summary::compute(self, &sweep);
        let path = dir.join("summary.json");
        fs::write(&path, summary.to_json()).map_err(|e| ReportError::io(&path, e))?;

        let slo = crate::SloFile::read_dir(dir)?;
        let plots = plots::render_all(self, &sweep, &device_keys, dir, slo.as_ref())?;
        let path = dir.join("report.html");
        let explorer = crate::explorer::data(self, dir)?;
        fs::write(
            &path,
            html::render(&summary, self, &plots, &explorer, slo.as_ref()),
        )
        .map_err(|e| ReportError::io(&path, e))?;
        // Last: the folder is complete (readers refuse one without it).
        crate::staging::write_marker(dir)?;
        Ok(summary)
    }

    /// The summary of what was recorded so far, without writing anything.
    pub fn summary(&self) -> Result<Summary, ReportError> {
        let sweep = sweep::<std::io::Sink>(self, None)
            .map_err(|e| ReportError::csv("utilization.csv", e))?;
        Ok(summary::compute(self, &sweep))
    }

    /// Every scheduling latency of the pods that needed scheduling (censored pods last), for
    /// SLOs at any percentile or `within(D)`; equal to [`crate::LatencyDist::from_pods_csv`]
    /// of the run's pods.csv.
    pub fn latency_dist(&self) -> crate::LatencyDist {
        summary::latency_dist(self)
    }

    fn write_pods_csv(&self, path: &Path) -> Result<(), ReportError> {
        let file = File::create(path).map_err(|e| ReportError::io(path, e))?;
        let mut w = csv::Writer::from_writer(BufWriter::new(file));
        let err = |e| ReportError::csv(path, e);
        let with_cause = self.evictions > 0;
        let with_claims = self.has_dra();
        let mut header = PODS_HEADER.to_vec();
        if with_cause {
            header.push(EVICTION_CAUSE_COLUMN);
        }
        if with_claims {
            header.push(CLAIMS_COLUMN);
        }
        w.write_record(header).map_err(err)?;
        for p in &self.pods {
            let node = p
                .node
                .and_then(|n| self.nodes.get(n as usize))
                .map(|n| n.name.as_str())
                .unwrap_or("");
            let (owner_kind, owner_name) = p
                .owner
                .and_then(|o| self.owners.names.get(o as usize))
                .and_then(|o| o.split_once('/'))
                .unwrap_or(("", ""));
            let (priority, created, attempts) = (
                p.priority.to_string(),
                p.created.secs_string(),
                p.attempts.to_string(),
            );
            let (first, scheduled, bound, finished) = (
                secs(p.first_attempt),
                secs(p.scheduled),
                secs(p.bound),
                secs(p.finished),
            );
            let mut row: Vec<&str> = vec![
                p.namespace.as_str(),
                p.name.as_str(),
                &priority,
                &created,
                &first,
                &scheduled,
                &bound,
                &finished,
                &attempts,
                node,
                p.outcome().as_str(),
                p.preempted_by.as_str(),
                p.last_reason.as_deref().unwrap_or(""),
                owner_kind,
                owner_name,
            ];
            if with_cause {
                row.push(p.eviction_cause());
            }
            if with_claims {
                row.push(p.claims.as_deref().unwrap_or(""));
            }
            w.write_record(row).map_err(err)?;
        }
        w.flush().map_err(|e| ReportError::io(path, e))
    }

    fn write_controllers_csv(&self, path: &Path) -> Result<(), ReportError> {
        let file = File::create(path).map_err(|e| ReportError::io(path, e))?;
        let mut w = csv::Writer::from_writer(BufWriter::new(file));
        let err = |e| ReportError::csv(path, e);
        w.write_record(CONTROLLERS_HEADER).map_err(err)?;
        for r in &self.controllers {
            let Record::Controller {
                kind,
                namespace,
                name,
                desired,
                created,
                live,
                running,
                time_to_all_running,
                max_unavailable,
                replaced,
                succeeded,
                failed,
                completed_at,
                condition,
                ..
            } = r
            else {
                continue;
            };
            let failed_at = condition
                .as_ref()
                .filter(|c| c.type_ == "Failed")
                .map(|c| c.at);
            let job = kind == "Job";
            let n = |v: &u64| if job { String::new() } else { v.to_string() };
            let jn = |v: &u64| if job { v.to_string() } else { String::new() };
            w.write_record([
                kind.as_str(),
                namespace.as_str(),
                name.as_str(),
                &desired.to_string(),
                &created.to_string(),
                &live.to_string(),
                &running.to_string(),
                &time_to_all_running
                    .map(|d| SimTime(d.micros()).secs_string())
                    .unwrap_or_default(),
                &n(max_unavailable),
                &replaced.to_string(),
                &jn(succeeded),
                &jn(failed),
                &secs(*completed_at),
                condition.as_ref().map_or("", |c| c.type_.as_str()),
                condition.as_ref().map_or("", |c| c.reason.as_str()),
                &secs(failed_at),
            ])
            .map_err(err)?;
        }
        w.flush().map_err(|e| ReportError::io(path, e))
    }
}
