//! `report.html`: one self-contained page (inline CSS, plots inlined as SVG, an inline script,
//! no external assets): headline figures, plots, unschedulable reasons, the longest-pending
//! pods, and the pod explorer (see [`crate::explorer`]).

use std::fmt::Write as _;

use crate::fmt::{count, human, opt_pct, opt_secs, secs};
use crate::plots::PlotSet;
use crate::recorder::Recorder;
use crate::summary::{waited, ReasonCount, Summary};

/// Rows of the pending-pods and reasons tables.
pub const TOP_ROWS: usize = 25;

pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif;
       margin: 0 auto; max-width: 1040px; padding: 24px; color: #222; background: #fafafa; }
h1 { margin: 0 0 4px 0; font-size: 26px; }
h2 { margin: 32px 0 10px 0; font-size: 19px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #666; margin-bottom: 18px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 10px; }
.card { background: #fff; border: 1px solid #e2e2e2; border-radius: 6px; padding: 10px 12px; }
.card .v { font-size: 22px; font-weight: 600; }
.card .k { color: #666; font-size: 13px; }
.card .d { color: #888; font-size: 12px; margin-top: 2px; }
figure { margin: 14px 0; background: #fff; border: 1px solid #e2e2e2; border-radius: 6px; padding: 6px; }
figure svg { width: 100%; height: auto; display: block; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 13px; }
th, td { border: 1px solid #e2e2e2; padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.pod { white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.note { color: #777; font-size: 12px; }
figcaption.note { margin: 4px 8px 2px 8px; }
.slo { border-radius: 6px; padding: 4px 14px 6px 14px; margin: 8px 0 4px 0; border: 2px solid; }
.slo.ok { background: #eef8f0; border-color: #1a7f37; }
.slo.bad { background: #fdeeee; border-color: #b42318; }
.slo h2 { border: 0; margin: 8px 0 4px 0; }
.slo.ok h2 { color: #1a7f37; } .slo.bad h2 { color: #b42318; }
.slo ul { margin: 4px 0; padding-left: 20px; }
.slo li.ok b { color: #1a7f37; } .slo li.bad b { color: #b42318; }
td.rsn { max-width: 44em; }
td.rsn div { max-height: 2.6em; line-height: 1.3em; overflow: hidden; display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical; }
"#;

fn card(html: &mut String, key: &str, value: &str, detail: &str) {
    let _ = write!(
        html,
        r#"<div class="card"><div class="k">{}</div><div class="v">{}</div><div class="d">{}</div></div>"#,
        escape(key),
        escape(value),
        escape(detail)
    );
}

fn reasons_table(html: &mut String, rows: &[ReasonCount], what: &str) {
    if rows.is_empty() {
        html.push_str("<p class=\"note\">No pod had a failed scheduling attempt.</p>");
        return;
    }
    let _ = write!(
        html,
        "<table><tr><th>{}</th><th>pods</th></tr>",
        escape(what)
    );
    for r in rows.iter().take(TOP_ROWS) {
        let _ = write!(
            html,
            "<tr><td>{}</td><td class=\"n\">{}</td></tr>",
            escape(&r.reason),
            r.pods
        );
    }
    html.push_str("</table>");
    if rows.len() > TOP_ROWS {
        let _ = write!(
            html,
            "<p class=\"note\">{} more rows in summary.json.</p>",
            rows.len() - TOP_ROWS
        );
    }
}

pub(crate) fn render(
    s: &Summary,
    rec: &Recorder,
    plots: &PlotSet,
    explorer: &str,
    slo: Option<&crate::SloFile>,
) -> String {
    let mut h = String::with_capacity(64 * 1024 + plots.utilization.len() * 3);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    h.push_str("<title>ksim run report</title><style>");
    h.push_str(STYLE);
    h.push_str(crate::explorer::STYLE);
    h.push_str("</style></head><body>\n");
    h.push_str("<h1>ksim run report</h1>");
    let _ = write!(
        h,
        "<div class=\"sub\">{}Horizon {} s{} · {} nodes at end ({} added, {} removed) · {} pods created · {} scheduling attempts</div>",
        match &s.kubernetes_version {
            Some(v) => format!("Kubernetes {} · ", escape(v)),
            None => String::new(),
        },
        secs(s.horizon_s),
        match human(s.horizon_s) {
            h if h.is_empty() => h,
            h => format!(" ({h})"),
        },
        s.nodes.at_end,
        s.nodes.added,
        s.nodes.removed,
        count(s.pods.created),
        count(s.attempts.total)
    );

    if let Some(f) = slo {
        slo_section(&mut h, f, &crate::summary::latency_dist(rec));
    }
    // Headline figures.
    h.push_str("<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">");
    let p = &s.pods;
    if s.already_bound > 0 {
        // Pods that arrived bound (a cluster dump's running pods) were never scheduled by the
        // run: the share is over the pods that needed scheduling, as in summary.json.
        card(
            &mut h,
            "Scheduled",
            &opt_pct(
                (s.needed_scheduling > 0)
                    .then(|| s.scheduled_of_needed as f64 / s.needed_scheduling as f64),
            ),
            &format!(
                "{} already running, {} of {} scheduled",
                count(s.already_bound),
                count(s.scheduled_of_needed),
                count(s.needed_scheduling)
            ),
        );
    } else {
        card(
            &mut h,
            "Scheduled",
            &opt_pct(s.scheduled_share),
            &format!("{} of {} pods", count(p.scheduled), count(p.created)),
        );
    }
    card(
        &mut h,
        "Pending at end",
        &count(p.pending_at_end),
        &format!(
            "peak {} at {} s",
            s.pending_pods.peak,
            secs(s.pending_pods.peak_at_s)
        ),
    );
    if let Some(l) = &s.latency_all_s {
        // Every pod that needed scheduling, pending ones at their own wait: "> N s" is a
        // lower bound.
        let f = |v: Option<f64>, c: bool| {
            if c {
                format!("> {}", opt_secs(v))
            } else {
                opt_secs(v)
            }
        };
        card(
            &mut h,
            "Latency p99, all pods",
            &f(l.p99, l.p99_censored),
            &format!(
                "p50 {} · max {}{}",
                f(l.p50, l.p50_censored),
                f(l.max, l.max_censored),
                if l.censored > 0 {
                    format!(
                        " · {} pending at the end count at their own wait (\"> N\": a lower bound)",
                        count(l.censored)
                    )
                } else {
                    String::new()
                }
            ),
        );
    }
    card(
        &mut h,
        "Latency p50",
        &opt_secs(s.latency_s.p50),
        "scheduled pods: scheduled − created",
    );
    card(
        &mut h,
        "Latency p99",
        &opt_secs(s.latency_s.p99),
        &format!(
            "p90 {} · max {}",
            opt_secs(s.latency_s.p90),
            opt_secs(s.latency_s.max)
        ),
    );
    card(
        &mut h,
        "Attempts per pod",
        &s.attempts
            .mean_per_pod
            .map(|m| format!("{m:.2}"))
            .unwrap_or_else(|| "–".into()),
        &format!(
            "{} in all · max {}",
            count(s.attempts.total),
            s.attempts.max_per_pod
        ),
    );
    card(
        &mut h,
        "Preempted pods",
        &count(s.preemptions.preempted_pods),
        &format!("{} nominations", s.preemptions.nominations),
    );
    for (name, u) in &s.utilization {
        card(
            &mut h,
            &format!("{name} utilization"),
            &opt_pct(u.mean),
            &format!("time-weighted mean · peak {}", opt_pct(u.peak)),
        );
    }
    match &s.fragmentation {
        Some(f) => card(
            &mut h,
            "Fragmentation",
            &opt_pct(f.share),
            &format!(
                "free cpu where the median pending pod ({}) does not fit",
                f.median_pending_pod
            ),
        ),
        None => card(&mut h, "Fragmentation", "–", "nothing pending at the end"),
    }
    h.push_str("</div>");
    if let Some(pk) = &s.packing {
        packing_section(&mut h, pk);
    }
    let o = &p.by_outcome;
    let _ = write!(
        h,
        "<h2>Outcomes</h2><table><tr><th>running</th><th>succeeded</th><th>deleted</th><th>pending</th><th>preempted</th><th>failed</th></tr>\
         <tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr></table>",
        o.running, o.succeeded, o.deleted, o.pending, o.preempted, o.failed
    );
    h.push_str("</section>\n");

    // Plots.
    h.push_str("<section id=\"plots\"><h2>Over time</h2>");
    let pending_caption = format!(
        "Samples every {} s; the light line shows the highest pending count reached between samples.",
        secs(s.grid_step_s)
    );
    let latency_caption = "Pods pending at the end never arrive, so the curve ends at the share \
        scheduled; a dashed percentile is a lower bound (each pending pod counted at its own wait).";
    for (id, svg, caption) in [
        ("plot-pool-utilization", &plots.pool_utilization, ""),
        ("plot-utilization", &plots.utilization, ""),
        ("plot-nodes-in-use", &plots.nodes_in_use, ""),
        ("plot-pending", &plots.pending, pending_caption.as_str()),
        ("plot-running", &plots.running, ""),
        ("plot-latency", &plots.latency_cdf, latency_caption),
    ] {
        figure(&mut h, id, svg, caption);
    }
    if let Some(svg) = &plots.devices {
        figure(
            &mut h,
            "plot-devices",
            svg,
            "Devices held by allocated ResourceClaims, as a share of the devices each pool's \
             ResourceSlices publish (devices.csv has the counts per driver and pool).",
        );
    }
    h.push_str("</section>\n");

    // Unschedulable reasons.
    h.push_str("<section id=\"reasons\"><h2>Unschedulable reasons</h2>");
    h.push_str(
        "<p class=\"note\">Each pod counted once per reason in its last failure message.</p>",
    );
    reasons_table(&mut h, &s.unschedulable_reason_parts, "reason");
    // Messages that differ only in their node counts are one group.
    h.push_str("<h2>Last failure messages, grouped by their reasons</h2>");
    h.push_str("<p class=\"note\">Messages with the same set of reasons are one row, node counts left out.</p>");
    reasons_table(
        &mut h,
        &group_by_reason_set(&s.unschedulable_reasons),
        "reasons",
    );
    h.push_str("</section>\n");

    // Longest-pending pods.
    let horizon = rec.horizon();
    let mut pending: Vec<(usize, &crate::recorder::PodRow)> = rec
        .pods
        .iter()
        .enumerate()
        .filter(|(_, p)| p.outcome().is_waiting())
        .collect();
    pending.sort_by_key(|(i, p)| (p.created, *i));
    h.push_str("<section id=\"pending\"><h2>Pods pending at the end</h2>");
    if pending.is_empty() {
        h.push_str("<p class=\"note\">None.</p>");
    } else {
        h.push_str("<table><tr><th>pod</th><th>priority</th><th>created (s)</th><th>waited (s)</th><th>attempts</th><th>last reason</th></tr>");
        for (_, p) in pending.iter().take(TOP_ROWS) {
            let _ = write!(
                h,
                "<tr><td class=\"pod\">{}/{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"rsn\" title=\"{reason}\"><div>{reason}</div></td></tr>",
                escape(&p.namespace),
                escape(&p.name),
                p.priority,
                p.created.secs_string(),
                waited(p.created, horizon).secs_string(),
                p.attempts,
                reason = escape(p.last_reason.as_deref().unwrap_or(""))
            );
        }
        h.push_str("</table>");
        if pending.len() > TOP_ROWS {
            let _ = write!(
                h,
                "<p class=\"note\">{} pods pending in all; the longest-waiting {} are shown (pods.csv has them all).</p>",
                pending.len(),
                TOP_ROWS
            );
        }
    }
    h.push_str("</section>\n");
    controllers_section(&mut h, &rec.controllers);
    crate::node_health::html_section(
        &mut h,
        &rec.node_health,
        rec.run_ended.unwrap_or(rec.last_at),
    );
    crate::refused::html_section(&mut h, &rec.refused);
    crate::explorer::section(&mut h, explorer);
    h.push_str("<p class=\"note\">Latency percentiles use the nearest-rank method. Utilization is requested ÷ allocatable over bound pods, time-weighted. Files: pods.csv, placements.csv, utilization.csv, summary.json.</p>");
    h.push_str("</body></html>\n");
    h
}

/// Whether a `Controller` record never reached its goal: a Job that did not complete, any
/// other controller whose desired pods were never all running at once.
fn never_fully_available(r: &ksim_engine::Record) -> bool {
    match r {
        ksim_engine::Record::Controller {
            kind,
            time_to_all_running,
            completed_at,
            ..
        } => {
            if kind == "Job" {
                completed_at.is_none()
            } else {
                time_to_all_running.is_none()
            }
        }
        _ => false,
    }
}

/// The workload controllers at the end of the run (the rows of `controllers.csv`), those that
/// never became fully available first: the ones an incident or a plan is usually about.
fn controllers_section(h: &mut String, records: &[ksim_engine::Record]) {
    let mut rows: Vec<(usize, &ksim_engine::Record)> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, ksim_engine::Record::Controller { .. }))
        .collect();
    if rows.is_empty() {
        return;
    }
    // Stable: within each group, the order of controllers.csv.
    rows.sort_by_key(|(i, r)| (!never_fully_available(r), *i));
    let short = rows
        .iter()
        .filter(|(_, r)| never_fully_available(r))
        .count();
    h.push_str("<section id=\"controllers\"><h2>Controllers</h2>");
    let _ = write!(
        h,
        "<p class=\"note\">{} of {} never became fully available (listed first): desired pods never all running at once, or a Job not completed.</p>",
        short,
        rows.len()
    );
    h.push_str("<table><tr><th>controller</th><th>desired</th><th>created</th><th>running at end</th><th>time to all running (s)</th><th>max unavailable</th><th>replaced</th><th>state</th></tr>");
    for (_, r) in &rows {
        if let ksim_engine::Record::Controller {
            kind,
            namespace,
            name,
            desired,
            created,
            running,
            time_to_all_running,
            max_unavailable,
            replaced,
            succeeded,
            completed_at,
            condition,
            ..
        } = r
        {
            let state = if kind == "Job" {
                match (completed_at, condition) {
                    (Some(t), _) => format!("completed at {} s", t.secs_string()),
                    (None, Some(c)) => format!(
                        "{} ({}) at {} s, {succeeded} of {desired} succeeded",
                        c.type_.to_lowercase(),
                        c.reason,
                        c.at.secs_string()
                    ),
                    (None, None) => format!("not completed ({succeeded} of {desired} succeeded)"),
                }
            } else if time_to_all_running.is_some() {
                "fully available".to_string()
            } else {
                format!("never fully available ({running} of {desired} running)")
            };
            let _ = write!(
                h,
                "<tr><td class=\"pod\">{} {}/{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                escape(kind),
                escape(namespace),
                escape(name),
                desired,
                created,
                running,
                time_to_all_running
                    .map(|d| format!("{:.3}", d.as_secs_f64()))
                    .unwrap_or_else(|| "—".into()),
                max_unavailable,
                replaced,
                escape(&state)
            );
        }
    }
    h.push_str("</table></section>\n");
}

/// Failure messages grouped by their set of reasons with the node counts taken out, so
/// "0/300 nodes are available: 12 Insufficient cpu." and "…: 13 Insufficient cpu." are one row.
fn group_by_reason_set(rows: &[ReasonCount]) -> Vec<ReasonCount> {
    let mut groups: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for r in rows {
        let mut parts = crate::summary::reason_parts(&r.reason);
        parts.sort();
        parts.dedup();
        *groups.entry(parts.join(" · ")).or_default() += r.pods;
    }
    let mut v: Vec<ReasonCount> = groups
        .into_iter()
        .map(|(reason, pods)| ReasonCount { reason, pods })
        .collect();
    v.sort_by(|a, b| b.pods.cmp(&a.pods).then_with(|| a.reason.cmp(&b.reason)));
    v
}

/// The SLO of `--slo` first on the page: one verdict for the whole SLO and one line per
/// condition, with the run's figure. Conditions the latency CDF cannot draw (`pending_end<=N`,
/// utilization) are listed as checked by the command that ran (its terminal output).
fn slo_section(h: &mut String, f: &crate::SloFile, dist: &crate::LatencyDist) {
    let verdicts = crate::slo::mark_verdicts(&f.marks, dist);
    let others: Vec<&String> = f
        .conditions
        .iter()
        .filter(|c| !f.marks.iter().any(|m| &m.condition == *c))
        .collect();
    let all_met = verdicts.iter().all(|(_, met)| *met);
    let (class, word) = match (all_met, others.is_empty()) {
        (false, _) => ("bad", "NOT met"),
        (true, true) => ("ok", "met"),
        (true, false) => ("ok", "met for the latency conditions"),
    };
    let _ = write!(
        h,
        "<section id=\"slo\" class=\"slo {class}\"><h2>SLO {}: {word}</h2><ul>",
        escape(&f.conditions.join(", "))
    );
    let total = dist.len();
    for (m, met) in verdicts {
        let figure = match m.within_s {
            Some(d) => dist.within_share(d).map_or("–".to_string(), |w| {
                format!("{:.2}% within {} s", w * 100.0, secs(d))
            }),
            None => {
                if total == 0 {
                    "–".to_string()
                } else {
                    format!(
                        "{:.2}% scheduled",
                        (total - dist.censored()) as f64 / total as f64 * 100.0
                    )
                }
            }
        };
        let _ = write!(
            h,
            "<li class=\"{}\"><b>{}</b>: {} ({})</li>",
            if met { "ok" } else { "bad" },
            escape(&m.condition),
            if met { "met" } else { "NOT met" },
            escape(&figure)
        );
    }
    for c in others {
        let _ = write!(
            h,
            "<li><b>{}</b>: checked by the command that ran (its terminal output)</li>",
            escape(c)
        );
    }
    h.push_str(
        "</ul><p class=\"note\">Pods pending at the end count as not within any bound.</p></section>",
    );
}

/// Nodes in use and per-pool fill (the `packing` block of summary.json).
fn packing_section(h: &mut String, pk: &crate::packing::Packing) {
    h.push_str("<h2>Packing</h2><div class=\"cards\">");
    card(
        h,
        "Nodes in use at end",
        &count(pk.nodes_in_use.at_end),
        &format!(
            "hosting a pod · mean {} · peak {} · ever used {}",
            pk.nodes_in_use
                .mean
                .map(|m| format!("{m:.1}"))
                .unwrap_or_else(|| "–".into()),
            pk.nodes_in_use.peak,
            pk.nodes_ever_used
        ),
    );
    let stranded = |v: Option<i64>, unit: f64, name: &str| {
        v.map(|v| format!("{:.1} {name}", v as f64 / unit))
            .unwrap_or_else(|| "–".into())
    };
    card(
        h,
        "Stranded capacity",
        &stranded(pk.stranded.cpu_millis, 1000.0, "cpu"),
        &format!(
            "free cpu on nodes with no room for memory · {} free memory on nodes with no room for cpu",
            stranded(pk.stranded.memory_bytes, 1024.0 * 1024.0 * 1024.0, "GiB")
        ),
    );
    h.push_str("</div>");
    h.push_str("<table><tr><th>pool</th><th>nodes</th><th>in use</th><th>resource</th><th>requested / allocatable at end</th><th>utilization mean</th><th>peak</th><th>failures naming the pool</th></tr>");
    for (pool, pp) in &pk.pools {
        let rows = pp.utilization.len().max(1);
        for (k, (res, u)) in pp.utilization.iter().enumerate() {
            // The pool's failure share is one figure per pool: one cell spanning its rows.
            let failures = if k == 0 {
                format!(
                    "<td class=\"n\" rowspan=\"{rows}\">{} ({})</td>",
                    opt_pct(pp.failure_share),
                    count(pp.failures_naming)
                )
            } else {
                String::new()
            };
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{} / {}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>{failures}</tr>",
                escape(if pool.is_empty() { "(no pool)" } else { pool }),
                pp.nodes_at_end,
                pp.nodes_in_use_at_end,
                escape(res),
                amount(res, pp.requested.get(res).copied().unwrap_or(0)),
                amount(res, pp.allocatable.get(res).copied().unwrap_or(0)),
                opt_pct(u.mean),
                opt_pct(u.peak)
            );
        }
    }
    h.push_str("</table><p class=\"note\">Failures naming the pool: share (count) of the unschedulable attempts that lacked room the pool's nodes could have given (a node of the pool big enough for the pod when empty, but too full at that instant); see summary.json's packing.</p>");
}

/// A resource amount the way people size nodes: cpu in cores, memory in GiB.
fn amount(res: &str, v: i64) -> String {
    match res {
        "cpu" => format!("{:.1}", v as f64 / 1000.0),
        "memory" => format!("{:.0} GiB", v as f64 / (1024.0 * 1024.0 * 1024.0)),
        _ => v.to_string(),
    }
}

/// A plot's `<figure>`, with its caption under it when there is one.
fn figure(h: &mut String, id: &str, svg: &str, caption: &str) {
    if caption.is_empty() {
        let _ = write!(h, "<figure id=\"{id}\">{svg}</figure>");
    } else {
        let _ = write!(
            h,
            "<figure id=\"{id}\">{svg}<figcaption class=\"note\">{}</figcaption></figure>",
            escape(caption)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controller(
        kind: &str,
        name: &str,
        all_running: Option<i64>,
        completed: Option<i64>,
    ) -> ksim_engine::Record {
        ksim_engine::Record::Controller {
            at: ksim_engine::SimTime::from_secs(100),
            kind: kind.into(),
            namespace: "default".into(),
            name: name.into(),
            desired: 4,
            created: 4,
            live: 4,
            running: if all_running.is_some() { 4 } else { 2 },
            time_to_all_running: all_running.map(ksim_engine::SimDuration::from_secs),
            max_unavailable: 0,
            replaced: 0,
            succeeded: if completed.is_some() { 4 } else { 1 },
            failed: 0,
            completed_at: completed.map(ksim_engine::SimTime::from_secs),
            condition: None,
        }
    }

    #[test]
    fn controllers_that_never_became_fully_available_come_first() {
        let records = vec![
            controller("Deployment", "web", Some(12), None),
            controller("Job", "batch", None, Some(50)),
            controller("StatefulSet", "db", None, None),
            controller("Job", "stuck", None, None),
        ];
        let mut h = String::new();
        controllers_section(&mut h, &records);
        let pos = |needle: &str| {
            h.find(needle)
                .unwrap_or_else(|| panic!("{needle} missing in {h}"))
        };
        assert!(h.contains("2 of 4 never became fully available"), "{h}");
        assert!(pos("StatefulSet default/db") < pos("Job default/stuck"));
        assert!(pos("Job default/stuck") < pos("Deployment default/web"));
        assert!(pos("Deployment default/web") < pos("Job default/batch"));
        assert!(h.contains("never fully available (2 of 4 running)"));
        assert!(h.contains("not completed (1 of 4 succeeded)"));
        assert!(h.contains("completed at 50"));

        let mut none = String::new();
        controllers_section(&mut none, &[]);
        assert!(none.is_empty(), "no controllers, no section");
    }

    #[test]
    fn failure_messages_differing_only_in_counts_are_one_group() {
        let r = |reason: &str, pods| ReasonCount {
            reason: reason.into(),
            pods,
        };
        let rows = [
            r(
                "0/300 nodes are available: 12 Insufficient cpu, 288 Insufficient memory.",
                3,
            ),
            r(
                "0/300 nodes are available: 13 Insufficient cpu, 287 Insufficient memory.",
                2,
            ),
            r("0/300 nodes are available: 300 Insufficient cpu.", 4),
        ];
        let g = group_by_reason_set(&rows);
        assert_eq!(
            g,
            vec![
                r("Insufficient cpu · Insufficient memory", 5),
                r("Insufficient cpu", 4),
            ]
        );
    }
}
