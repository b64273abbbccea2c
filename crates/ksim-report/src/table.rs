//! The summary table the CLI prints at the end of a run (comfy-table, no width-dependent
//! wrapping so the text is the same in any terminal).

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::fmt::{count, opt_pct, opt_secs, pct_pair};
use crate::summary::Summary;

/// The headline figures as a two-column table.
pub fn summary_table(s: &Summary) -> String {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec!["figure", "value"]);
    let p = &s.pods;
    let o = &p.by_outcome;
    let rows: Vec<(String, String)> = vec![
        (
            "horizon".into(),
            format!("{} s", crate::fmt::secs(s.horizon_s)),
        ),
        ("pods created".into(), count(p.created)),
        (
            "scheduled".into(),
            if s.already_bound > 0 {
                // Pods that arrived bound were never scheduled by the run: count them apart.
                format!(
                    "{} already running, {} of {} scheduled ({})",
                    count(s.already_bound),
                    count(s.scheduled_of_needed),
                    count(s.needed_scheduling),
                    opt_pct(
                        (s.needed_scheduling > 0)
                            .then(|| s.scheduled_of_needed as f64 / s.needed_scheduling as f64)
                    )
                )
            } else {
                format!("{} ({})", count(p.scheduled), opt_pct(s.scheduled_share))
            },
        ),
        ("bound".into(), count(p.bound)),
        ("pending at end".into(), count(p.pending_at_end)),
        (
            "outcomes".into(),
            format!(
                "running {} · succeeded {} · deleted {} · pending {} · preempted {} · failed {}{}",
                o.running,
                o.succeeded,
                o.deleted,
                o.pending,
                o.preempted,
                o.failed,
                if o.stalled > 0 {
                    format!(" · stalled {}", o.stalled)
                } else {
                    String::new()
                } + &if o.unserved > 0 {
                    format!(" · unserved {}", o.unserved)
                } else {
                    String::new()
                } + &if s.refused_creations > 0 {
                    format!(" · refused creations {}", s.refused_creations)
                } else {
                    String::new()
                }
            ),
        ),
        (
            "latency p50 / p90 / p99 / max".into(),
            format!(
                "{} / {} / {} / {}",
                opt_secs(s.latency_s.p50),
                opt_secs(s.latency_s.p90),
                opt_secs(s.latency_s.p99),
                opt_secs(s.latency_s.max)
            ),
        ),
        (
            "latency all pods p50 / p90 / p99 / max".into(),
            match &s.latency_all_s {
                Some(l) => {
                    let f = |v: Option<f64>, c: bool| {
                        if c {
                            format!("> {}", opt_secs(v))
                        } else {
                            opt_secs(v)
                        }
                    };
                    format!(
                        "{} / {} / {} / {} (\"> N\": a lower bound; {} pending at the end count with their own wait)",
                        f(l.p50, l.p50_censored),
                        f(l.p90, l.p90_censored),
                        f(l.p99, l.p99_censored),
                        f(l.max, l.max_censored),
                        count(l.censored)
                    )
                }
                None => "–".into(),
            },
        ),
        (
            "attempts total / mean / max".into(),
            format!(
                "{} / {} / {}",
                count(s.attempts.total),
                s.attempts
                    .mean_per_pod
                    .map(|m| format!("{m:.2}"))
                    .unwrap_or_else(|| "–".into()),
                s.attempts.max_per_pod
            ),
        ),
        (
            "preempted pods / nominations".into(),
            format!(
                "{} / {}",
                s.preemptions.preempted_pods, s.preemptions.nominations
            ),
        ),
    ];
    for (k, v) in rows {
        t.add_row(vec![k, v]);
    }
    for (name, u) in &s.utilization {
        t.add_row(vec![
            format!("{name} utilization mean / peak"),
            pct_pair(u.mean, u.peak),
        ]);
    }
    t.add_row(vec![
        "pending pods mean / peak".to_string(),
        format!(
            "{} / {}",
            s.pending_pods
                .mean
                .map(|m| format!("{m:.1}"))
                .unwrap_or_else(|| "–".into()),
            s.pending_pods.peak
        ),
    ]);
    t.add_row(vec![
        "fragmentation (free cpu stranded)".to_string(),
        match &s.fragmentation {
            Some(f) => opt_pct(f.share),
            None => "– (nothing pending)".to_string(),
        },
    ]);
    if let Some(r) = s.unschedulable_reason_parts.first() {
        t.add_row(vec![
            "top unschedulable reason".to_string(),
            format!("{} ({} pods)", r.reason, r.pods),
        ]);
    }
    if s.unmatched_records > 0 {
        t.add_row(vec![
            "unmatched records".to_string(),
            s.unmatched_records.to_string(),
        ]);
    }
    if let Some(col) = t.column_mut(1) {
        col.set_cell_alignment(CellAlignment::Left);
    }
    t.to_string()
}
