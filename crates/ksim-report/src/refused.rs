//! Pod creations the API server's admission refused (`PodRefused` records: an unknown
//! PriorityClass, a LimitRange maximum, a ResourceQuota): `refused.csv` (one row per refused
//! creation) and the "Refused pod creations" section of `report.html` (the messages grouped,
//! with their counts). Both appear only in runs that have refusals, so other runs' outputs are
//! unchanged; summary.json counts them (`refused_creations`, `refused_reasons`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use ksim_engine::time::SimTime;

use crate::error::ReportError;
use crate::html::escape;

/// Header of `refused.csv`, one row per refused creation in time order. `owner` is
/// `Kind/name` of the controller that tried to create the pod (empty for a trace's pod);
/// `name` is the pod's name, or its `generateName` when it had no name yet; `message` is
/// upstream's (`pods "web-" is forbidden: no PriorityClass with name gold was found`).
pub const REFUSED_HEADER: [&str; 5] = ["time_s", "namespace", "name", "owner", "message"];

/// One `PodRefused` record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RefusedRow {
    pub at: SimTime,
    pub namespace: String,
    pub name: String,
    pub owner: String,
    pub message: String,
}

impl RefusedRow {
    /// The reason alone: the message after `is forbidden: `.
    pub fn reason(&self) -> &str {
        self.message
            .split_once(" is forbidden: ")
            .map_or(self.message.as_str(), |(_, r)| r)
    }
}

pub(crate) fn write_csv(rows: &[RefusedRow], path: &Path) -> Result<(), ReportError> {
    let file = File::create(path).map_err(|e| ReportError::io(path, e))?;
    let mut w = csv::Writer::from_writer(BufWriter::new(file));
    let err = |e| ReportError::csv(path, e);
    w.write_record(REFUSED_HEADER).map_err(err)?;
    for r in rows {
        w.write_record([
            r.at.secs_string().as_str(),
            &r.namespace,
            &r.name,
            &r.owner,
            &r.message,
        ])
        .map_err(err)?;
    }
    w.flush().map_err(|e| ReportError::io(path, e))
}

/// The "Refused pod creations" section: per (owner, reason) the count, first and last time.
pub(crate) fn html_section(h: &mut String, rows: &[RefusedRow]) {
    if rows.is_empty() {
        return;
    }
    // (owner, reason) → (count, first, last), in order of first refusal.
    let mut groups: BTreeMap<(&str, &str), (u64, SimTime, SimTime)> = BTreeMap::new();
    for r in rows {
        let g = groups
            .entry((r.owner.as_str(), r.reason()))
            .or_insert((0, r.at, r.at));
        g.0 += 1;
        g.2 = r.at;
    }
    let mut groups: Vec<_> = groups.into_iter().collect();
    groups.sort_by_key(|(k, v)| (v.1, *k));
    h.push_str("<section id=\"refused\"><h2>Refused pod creations</h2>");
    let _ = write!(
        h,
        "<p class=\"note\">{} pod creation(s) refused by the API server's admission; every one is in refused.csv.</p>",
        rows.len()
    );
    h.push_str("<table><tr><th>owner</th><th>refusals</th><th>first (s)</th><th>last (s)</th><th>reason</th></tr>");
    for ((owner, reason), (n, first, last)) in &groups {
        let owner = if owner.is_empty() { "(trace)" } else { owner };
        let _ = write!(
            h,
            "<tr><td class=\"pod\">{}</td><td class=\"n\">{n}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(owner),
            first.secs_string(),
            last.secs_string(),
            escape(reason),
        );
    }
    h.push_str("</table></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(at: i64, owner: &str, msg: &str) -> RefusedRow {
        RefusedRow {
            at: SimTime::from_secs(at),
            namespace: "default".into(),
            name: "web-".into(),
            owner: owner.into(),
            message: msg.into(),
        }
    }

    #[test]
    fn groups_by_owner_and_reason_with_counts_and_times() {
        let m = "pods \"web-\" is forbidden: no PriorityClass with name gold was found";
        let rows = vec![
            row(1, "ReplicaSet/web-1", m),
            row(3, "ReplicaSet/web-1", m),
            row(2, "", "pods \"p\" is forbidden: exceeded quota: q"),
        ];
        assert_eq!(
            rows[0].reason(),
            "no PriorityClass with name gold was found"
        );
        let mut h = String::new();
        html_section(&mut h, &rows);
        assert!(h.contains("3 pod creation(s) refused"), "{h}");
        let web = h.find("ReplicaSet/web-1").expect(&h);
        let trace = h.find("(trace)").expect(&h);
        assert!(web < trace, "first refusal first: {h}");
        assert!(
            h.contains("<td class=\"n\">2</td><td class=\"n\">1</td><td class=\"n\">3</td>"),
            "{h}"
        );
        let mut none = String::new();
        html_section(&mut none, &[]);
        assert!(none.is_empty());
    }
}
