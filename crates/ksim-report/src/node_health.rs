//! Node health as the node lifecycle controller saw it: `node_events.csv` (every `NodeEvent`
//! record: kubelet stopped/started, Ready changes, condition taints, zone states) and the
//! "Node health" section of `report.html` (each node's NotReady periods). Both appear only in
//! runs that have such events, so other runs' outputs are unchanged.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use ksim_engine::time::SimTime;

use crate::error::ReportError;
use crate::html::escape;

/// Header of `node_events.csv`, one row per event in time order. `zone` is the node's zone
/// (`region:zone` of its topology labels); `event` is `KubeletStopped` (`FailNode`),
/// `KubeletStarted` (`RecoverNode`), `NodeNotReady` / `NodeReady` (`detail`: the Ready
/// status, `False` or `Unknown` when not ready), `TaintAdded` / `TaintRemoved` (`detail`:
/// `key:effect`), `ZoneState` (`node` empty, `detail`: Normal, PartialDisruption or
/// FullDisruption).
pub const NODE_EVENTS_HEADER: [&str; 5] = ["time_s", "node", "zone", "event", "detail"];

/// One `NodeEvent` record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeHealthRow {
    pub at: SimTime,
    pub node: String,
    pub zone: String,
    pub event: String,
    pub detail: String,
}

/// A node's period with its Ready condition not True: from, until (None: still at the end),
/// and the status it had (the last one of the period).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NotReadyPeriod {
    pub node: String,
    pub zone: String,
    pub from: SimTime,
    pub until: Option<SimTime>,
    pub status: String,
}

pub(crate) fn write_csv(rows: &[NodeHealthRow], path: &Path) -> Result<(), ReportError> {
    let file = File::create(path).map_err(|e| ReportError::io(path, e))?;
    let mut w = csv::Writer::from_writer(BufWriter::new(file));
    let err = |e| ReportError::csv(path, e);
    w.write_record(NODE_EVENTS_HEADER).map_err(err)?;
    for r in rows {
        w.write_record([
            r.at.secs_string().as_str(),
            &r.node,
            &r.zone,
            &r.event,
            &r.detail,
        ])
        .map_err(err)?;
    }
    w.flush().map_err(|e| ReportError::io(path, e))
}

/// The NotReady periods, by node name then start.
pub(crate) fn not_ready_periods(rows: &[NodeHealthRow]) -> Vec<NotReadyPeriod> {
    let mut open: BTreeMap<&str, NotReadyPeriod> = BTreeMap::new();
    let mut out = Vec::new();
    for r in rows {
        match r.event.as_str() {
            "NodeNotReady" => {
                let p = open.entry(&r.node).or_insert_with(|| NotReadyPeriod {
                    node: r.node.clone(),
                    zone: r.zone.clone(),
                    from: r.at,
                    until: None,
                    status: String::new(),
                });
                p.status.clone_from(&r.detail);
            }
            "NodeReady" => {
                if let Some(mut p) = open.remove(r.node.as_str()) {
                    p.until = Some(r.at);
                    out.push(p);
                }
            }
            _ => {}
        }
    }
    out.extend(open.into_values());
    out.sort_by(|a, b| (&a.node, a.from).cmp(&(&b.node, b.from)));
    out
}

/// The "Node health" section: NotReady periods with their length (to `end` when still open).
pub(crate) fn html_section(h: &mut String, rows: &[NodeHealthRow], end: SimTime) {
    if rows.is_empty() {
        return;
    }
    let periods = not_ready_periods(rows);
    h.push_str("<section id=\"node-health\"><h2>Node health</h2>");
    let _ = write!(
        h,
        "<p class=\"note\">{} NotReady period(s) seen by the node lifecycle controller; every event is in node_events.csv.</p>",
        periods.len()
    );
    if periods.is_empty() {
        h.push_str("</section>\n");
        return;
    }
    h.push_str("<table><tr><th>node</th><th>zone</th><th>NotReady from (s)</th><th>until (s)</th><th>for (s)</th><th>Ready status</th></tr>");
    for p in &periods {
        let until = p.until.unwrap_or(end);
        let _ = write!(
            h,
            "<tr><td class=\"pod\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(&p.node),
            escape(&p.zone),
            p.from.secs_string(),
            p.until
                .map(|t| t.secs_string())
                .unwrap_or_else(|| "end of run".into()),
            SimTime(until.micros() - p.from.micros()).secs_string(),
            escape(&p.status),
        );
    }
    h.push_str("</table></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: i64, node: &str, event: &str, detail: &str) -> NodeHealthRow {
        NodeHealthRow {
            at: SimTime::from_secs(t),
            node: node.into(),
            zone: "a".into(),
            event: event.into(),
            detail: detail.into(),
        }
    }

    #[test]
    fn not_ready_periods_close_on_ready_and_stay_open_at_the_end() {
        let rows = vec![
            row(60, "n1", "KubeletStopped", ""),
            row(115, "n1", "NodeNotReady", "Unknown"),
            row(120, "n0", "NodeNotReady", "False"),
            row(202, "n1", "NodeReady", "True"),
        ];
        let p = not_ready_periods(&rows);
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].node.as_str(), p[0].until), ("n0", None));
        assert_eq!(
            (
                p[1].node.as_str(),
                p[1].from,
                p[1].until,
                p[1].status.as_str()
            ),
            (
                "n1",
                SimTime::from_secs(115),
                Some(SimTime::from_secs(202)),
                "Unknown"
            )
        );
        let mut h = String::new();
        html_section(&mut h, &rows, SimTime::from_secs(300));
        assert!(h.contains("<td class=\"n\">87</td>"), "{h}");
        assert!(h.contains("end of run"));
        let mut none = String::new();
        html_section(&mut none, &[], SimTime::ZERO);
        assert!(none.is_empty());
    }
}
