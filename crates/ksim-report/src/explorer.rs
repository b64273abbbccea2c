//! The pod explorer of `report.html`: every pod in a searchable, sortable, paged table
//! (pending and slowest first), and a pod's attempt history — with, when the run recorded
//! `explain.jsonl` (`ksim run --explain`), each attempt's per-node filter verdicts and per-plugin
//! score table — on a click.
//!
//! The data is embedded in the page as one compact JSON document inside
//! `<script type="application/json" id="ksim-pods">` (`</` escaped, so no text of a pod can end
//! the script), read by a small inline script: no network, no library, one file that works
//! offline. Rows are rendered a page at a time, so 10⁵ pods stay quick. The attempts come from
//! the run's own `placements.csv` (read back once it is written) and the detail from its
//! `explain.jsonl`; past [`MAX_ATTEMPTS`] attempts or [`MAX_EXPLAIN_BYTES`] of detail the rest
//! is left out and the page says so (the files have everything).
//!
//! JSON layout (`f` = pod fields, in order): `{"f": [...], "reasons": [text...], "pods":
//! [[pod, priority, created, first_attempt, scheduled, bound, finished, attempts, node,
//! outcome, reason index or -1, latency or null, waited-at-end or null]...], "att": {row: [[time,
//! result, node, nominated, feasible, evaluated, reason index]...]}, "ex": {row: [explain
//! object...]}, "attTruncated": bool, "exTruncated": bool, "horizon": seconds}`. Times are
//! seconds.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Value};

use crate::error::ReportError;
use crate::recorder::Recorder;

/// Attempts embedded at most (placements.csv has them all).
pub const MAX_ATTEMPTS: usize = 500_000;
/// Bytes of explain.jsonl embedded at most.
pub const MAX_EXPLAIN_BYTES: usize = 32 << 20;

fn secs(us: i64) -> f64 {
    us as f64 / 1e6
}

/// The explorer's JSON document for the run in `dir` (placements.csv written; explain.jsonl
/// optional).
pub(crate) fn data(rec: &Recorder, dir: &Path) -> Result<String, ReportError> {
    let horizon = rec.horizon();
    let mut reasons: Vec<String> = Vec::new();
    let mut reason_ix: HashMap<String, usize> = HashMap::new();
    let mut intern = |r: &str, reasons: &mut Vec<String>| -> i64 {
        if r.is_empty() {
            return -1;
        }
        if let Some(&i) = reason_ix.get(r) {
            return i as i64;
        }
        reasons.push(r.to_string());
        reason_ix.insert(r.to_string(), reasons.len() - 1);
        (reasons.len() - 1) as i64
    };
    // Rows of each pod name, in creation order (a re-created pod is a new row).
    let mut rows_of: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    let t = |v: Option<ksim_engine::time::SimTime>| v.map(|t| secs(t.micros()));
    let mut pods = Vec::with_capacity(rec.pods.len());
    for (i, p) in rec.pods.iter().enumerate() {
        rows_of
            .entry((p.namespace.as_str(), p.name.as_str()))
            .or_default()
            .push(i);
        let node = p
            .node
            .and_then(|n| rec.nodes.get(n as usize))
            .map(|n| n.name.as_str())
            .unwrap_or("");
        let outcome = p.outcome();
        let latency = p.scheduled.map(|s| secs(s.micros() - p.created.micros()));
        let waited = outcome
            .is_waiting()
            .then(|| secs(crate::summary::waited(p.created, horizon).micros()));
        let reason = intern(p.last_reason.as_deref().unwrap_or(""), &mut reasons);
        pods.push(json!([
            format!("{}/{}", p.namespace, p.name),
            p.priority,
            secs(p.created.micros()),
            t(p.first_attempt),
            t(p.scheduled),
            t(p.bound),
            t(p.finished),
            p.attempts,
            node,
            outcome.as_str(),
            reason,
            latency,
            waited
        ]));
    }
    let row_at = |ns: &str, name: &str, at_us: i64| -> Option<usize> {
        let rows = rows_of.get(&(ns, name))?;
        rows.iter()
            .rev()
            .find(|&&r| rec.pods[r].created.micros() <= at_us)
            .or(rows.first())
            .copied()
    };

    // Attempts, from placements.csv.
    let mut att: serde_json::Map<String, Value> = serde_json::Map::new();
    let mut att_n = 0usize;
    let mut att_truncated = false;
    let path = dir.join("placements.csv");
    if path.is_file() {
        let mut r = csv::Reader::from_path(&path).map_err(|e| ReportError::csv(&path, e))?;
        for rec_row in r.records() {
            let row = rec_row.map_err(|e| ReportError::csv(&path, e))?;
            if att_n >= MAX_ATTEMPTS {
                att_truncated = true;
                break;
            }
            let f = |i: usize| row.get(i).unwrap_or("");
            let at: f64 = f(0).parse().unwrap_or(0.0);
            let Some(pod_row) = row_at(f(1), f(2), (at * 1e6).round() as i64) else {
                continue;
            };
            let reason = intern(f(9), &mut reasons);
            let num = |s: &str| s.parse::<u64>().unwrap_or(0);
            let entry = att
                .entry(pod_row.to_string())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(v) = entry {
                v.push(json!([at, f(4), f(5), f(6), num(f(7)), num(f(8)), reason]));
            }
            att_n += 1;
        }
    }

    // Scheduling detail, from explain.jsonl (when the run recorded it).
    let mut ex: serde_json::Map<String, Value> = serde_json::Map::new();
    let mut ex_truncated = false;
    let path = dir.join("explain.jsonl");
    if path.is_file() {
        let text = std::fs::read_to_string(&path).map_err(|e| ReportError::io(&path, e))?;
        let mut bytes = 0usize;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if bytes + line.len() > MAX_EXPLAIN_BYTES {
                ex_truncated = true;
                break;
            }
            let v: Value = serde_json::from_str(line).map_err(|e| ReportError::Invalid {
                path: path.clone(),
                message: format!("line {}: {e}", i + 1),
            })?;
            let pod = v.get("pod").and_then(Value::as_str).unwrap_or("");
            let at = v.get("atMicros").and_then(Value::as_i64).unwrap_or(0);
            let (ns, name) = pod.split_once('/').unwrap_or(("default", pod));
            let Some(pod_row) = row_at(ns, name, at) else {
                continue;
            };
            bytes += line.len();
            let entry = ex
                .entry(pod_row.to_string())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(a) = entry {
                a.push(v);
            }
        }
    }
    let doc = json!({
        "f": ["pod", "priority", "created", "first_attempt", "scheduled", "bound", "finished",
              "attempts", "node", "outcome", "reason", "latency", "waited"],
        "reasons": reasons,
        "pods": pods,
        "att": att,
        "ex": ex,
        "attTruncated": att_truncated,
        "exTruncated": ex_truncated,
        "horizon": secs(horizon.micros()),
    });
    let text = serde_json::to_string(&doc).unwrap_or_else(|_| "{}".into());
    // Inside <script>: "</" could close it and "<!--" open a comment; both have JSON escapes.
    Ok(text.replace("</", "<\\/").replace("<!--", "<\\u0021--"))
}

/// The explorer's HTML: the section, the embedded data and the script.
pub(crate) fn section(h: &mut String, data: &str) {
    h.push_str(
        "<section id=\"explorer\"><h2>Pod explorer</h2>\
         <p class=\"note\">Every pod, pending and slowest first. Type to filter (name, node, outcome, reason); click a column to sort; click a pod for its attempts and, with <code>ksim run --explain</code>, each attempt's per-node filter verdicts and per-plugin scores.</p>\
         <div class=\"bar\"><input id=\"px-q\" type=\"search\" placeholder=\"filter pods…\" size=\"40\"> <span id=\"px-count\"></span> \
         <button id=\"px-prev\">‹ prev</button> <span id=\"px-page\"></span> <button id=\"px-next\">next ›</button></div>\
         <table id=\"px-table\"><thead><tr id=\"px-head\"></tr></thead><tbody id=\"px-body\"></tbody></table>\
         <div id=\"px-detail\" class=\"detail\" hidden></div></section>\n",
    );
    h.push_str("<script type=\"application/json\" id=\"ksim-pods\">");
    h.push_str(data);
    h.push_str("</script>\n<script>");
    h.push_str(SCRIPT);
    h.push_str("</script>\n");
}

/// Styles of the explorer (added to the page's).
pub(crate) const STYLE: &str = r#"
.bar { margin: 6px 0; }
#px-table tbody tr { cursor: pointer; }
#px-table tbody tr:hover { background: #eef4ff; }
#px-table tbody tr.sel { background: #dde9ff; }
#px-head th { cursor: pointer; white-space: nowrap; user-select: none; }
.detail { background: #fff; border: 1px solid #c9d6ee; border-radius: 6px; padding: 10px 12px; margin-top: 10px; }
.detail h3 { margin: 4px 0 8px 0; font-size: 16px; }
.detail h4 { margin: 12px 0 6px 0; font-size: 14px; }
.ok { color: #1a7f37; } .bad { color: #b42318; } .pick { font-weight: 700; background: #e7f6ec; }
"#;

const SCRIPT: &str = r#"
(function () {
  var D = JSON.parse(document.getElementById('ksim-pods').textContent);
  var P = D.pods, R = D.reasons, PAGE = 50;
  var cols = [
    ['pod', 0], ['outcome', 9], ['latency (s)', 11], ['waited (s)', 12], ['attempts', 7],
    ['created (s)', 2], ['scheduled (s)', 4], ['node', 8], ['priority', 1], ['last reason', 10]
  ];
  var order = P.map(function (_, i) { return i; });
  // Default: pending first (longest wait first), then the slowest scheduled.
  function defaultKey(i) {
    var p = P[i];
    if (p[12] !== null) return [0, -p[12]];
    if (p[11] !== null) return [1, -p[11]];
    return [2, p[2]];
  }
  var sortCol = -1, sortDir = 1, page = 0, view = order.slice(), selected = -1;
  function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
  function val(i, c) {
    var v = P[i][c];
    if (c === 10) return v < 0 ? '' : R[v];
    return v;
  }
  function sortView() {
    if (sortCol < 0) {
      view.sort(function (a, b) {
        var ka = defaultKey(a), kb = defaultKey(b);
        return cmp(ka[0], kb[0]) || cmp(ka[1], kb[1]) || cmp(a, b);
      });
    } else {
      var c = cols[sortCol][1];
      view.sort(function (a, b) {
        var x = val(a, c), y = val(b, c);
        if (x === null && y === null) return cmp(a, b);
        if (x === null) return 1;
        if (y === null) return -1;
        return sortDir * cmp(x, y) || cmp(a, b);
      });
    }
  }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (ch) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[ch];
    });
  }
  function num(v) { return v === null || v === undefined ? '–' : (Math.round(v * 1e6) / 1e6).toString(); }
  function filter() {
    var q = document.getElementById('px-q').value.trim().toLowerCase();
    view = order.filter(function (i) {
      if (!q) return true;
      var p = P[i];
      return (p[0] + ' ' + p[8] + ' ' + p[9] + ' ' + (p[10] < 0 ? '' : R[p[10]])).toLowerCase().indexOf(q) >= 0;
    });
    sortView();
    page = 0;
    draw();
  }
  function head() {
    var tr = document.getElementById('px-head');
    tr.innerHTML = cols.map(function (c, k) {
      var mark = k === sortCol ? (sortDir > 0 ? ' ▲' : ' ▼') : '';
      return '<th data-k="' + k + '">' + esc(c[0]) + mark + '</th>';
    }).join('');
  }
  function draw() {
    head();
    var pages = Math.max(1, Math.ceil(view.length / PAGE));
    if (page >= pages) page = pages - 1;
    var rows = view.slice(page * PAGE, page * PAGE + PAGE).map(function (i) {
      var p = P[i];
      return '<tr data-i="' + i + '"' + (i === selected ? ' class="sel"' : '') + '>' +
        '<td class="pod">' + esc(p[0]) + '</td><td>' + esc(p[9]) + '</td>' +
        '<td class="n">' + num(p[11]) + '</td><td class="n">' + (p[12] === null ? '–' : '&gt; ' + num(p[12])) + '</td>' +
        '<td class="n">' + p[7] + '</td><td class="n">' + num(p[2]) + '</td><td class="n">' + num(p[4]) + '</td>' +
        '<td>' + esc(p[8]) + '</td><td class="n">' + p[1] + '</td>' + reasonCell(p[10] < 0 ? '' : R[p[10]]) + '</tr>';
    });
    document.getElementById('px-body').innerHTML = rows.join('');
    document.getElementById('px-count').textContent = view.length + ' of ' + P.length + ' pods';
    document.getElementById('px-page').textContent = 'page ' + (page + 1) + ' of ' + pages;
  }
  // A reason in at most two lines; the whole text on hover (title) and in the pod's attempts.
  function reasonCell(r) {
    return '<td class="rsn" title="' + esc(r) + '"><div>' + esc(r) + '</div></td>';
  }
  function table(headers, rows) {
    return '<table><tr>' + headers.map(function (h) { return '<th>' + esc(h) + '</th>'; }).join('') + '</tr>' +
      rows.join('') + '</table>';
  }
  // explain.jsonl groups filter verdicts (`rejected`: a status with its nodes, `passed`) and
  // writes scores column-wise (`plugins`, `weights`, per node `normalized`); back to one entry
  // per node, as ksim_engine::explain::expand_record does. Older records pass unchanged.
  function expand(e) {
    var f = e.filter;
    if (f && !f.nodes) {
      var nodes = {};
      (f.rejected || []).forEach(function (g) {
        (g.nodes || []).forEach(function (n) { nodes[n] = {code: g.code, plugin: g.plugin, reasons: g.reasons}; });
      });
      (f.passed || []).forEach(function (n) { nodes[n] = {code: 'Success'}; });
      e.filter = {nodes: nodes, others: f.others};
    }
    var s = e.scores;
    if (s && !Array.isArray(s)) {
      var ps = s.plugins || [], ws = s.weights || [];
      e.scores = (s.nodes || []).map(function (r) {
        var per = {};
        ps.forEach(function (p, j) {
          var n = (r.normalized || [])[j];
          if (n !== null && n !== undefined) per[p] = {raw: (r.raw || [])[j], normalized: n, weight: ws[j], weighted: n * ws[j]};
        });
        return {node: r.node, plugins: per, total: r.total};
      });
    }
    return e;
  }
  function explainHtml(e) {
    e = expand(e);
    var out = '<h4>Attempt ' + e.attempt + ' at ' + esc(e.at) + ': ' + esc(e.result) +
      ' — ' + e.evaluated + ' of ' + e.nodes + ' nodes evaluated, ' + e.feasible + ' feasible' +
      (e.pick ? ', picked <b>' + esc(e.pick) + '</b>' + (e.ties > 1 ? ' (' + e.ties + ' tied)' : '') : '') + '</h4>';
    if (e.message) out += '<p>' + esc(e.message) + '</p>';
    var f = (e.filter && e.filter.nodes) || {};
    var names = Object.keys(f).sort();
    if (names.length) {
      out += '<div class="px-filter">' + table(['node', 'filter verdict', 'plugin', 'reasons'], names.map(function (n) {
        var s = f[n], ok = s.code === 'Success';
        return '<tr><td>' + esc(n) + '</td><td class="' + (ok ? 'ok' : 'bad') + '">' + esc(s.code) + '</td><td>' +
          esc(s.plugin || '') + '</td><td>' + esc((s.reasons || []).join('; ')) + '</td></tr>';
      })) + '</div>';
    }
    if (e.filter && e.filter.others) {
      var o = e.filter.others;
      out += '<p>Every other node: ' + esc(o.code) + ' ' + esc(o.plugin || '') + ' ' + esc((o.reasons || []).join('; ')) + '</p>';
    }
    if (e.scores && e.scores.length) {
      var plugins = [];
      e.scores.forEach(function (s) { Object.keys(s.plugins || {}).forEach(function (p) { if (plugins.indexOf(p) < 0) plugins.push(p); }); });
      plugins.sort();
      var sc = e.scores.slice().sort(function (a, b) { return b.total - a.total || cmp(a.node, b.node); });
      out += '<div class="px-scores">' + table(['node'].concat(plugins).concat(['total']), sc.map(function (s) {
        var pick = s.node === e.pick;
        return '<tr' + (pick ? ' class="pick"' : '') + '><td>' + esc(s.node) + (pick ? ' ← pick' : '') + '</td>' +
          plugins.map(function (p) { var v = (s.plugins || {})[p]; return '<td class="n">' + (v ? v.weighted : '–') + '</td>'; }).join('') +
          '<td class="n">' + s.total + '</td></tr>';
      })) + '<p class="note">Weighted scores (normalized × weight) per plugin.</p></div>';
    }
    if (e.postFilter) {
      var pf = e.postFilter;
      var st = pf.status && typeof pf.status === 'object' ? (pf.status.code || '') + (pf.status.plugin ? ' (' + pf.status.plugin + ')' : '') : (pf.status || '');
      out += '<p>PostFilter: ' + esc(st) + ' — ' + esc(pf.message || '') +
        (pf.nominatedNode ? ' — nominated ' + esc(pf.nominatedNode) : '') +
        (pf.victims && pf.victims.length ? ', victims ' + esc(pf.victims.join(', ')) : '') + '</p>';
    }
    return out;
  }
  function detail(i) {
    selected = i;
    var p = P[i], d = document.getElementById('px-detail');
    var att = D.att[i] || [], ex = D.ex[i] || [];
    var h = '<h3 id="px-title">' + esc(p[0]) + '</h3><p>' + esc(p[9]) + (p[8] ? ' on ' + esc(p[8]) : '') +
      ' · created ' + num(p[2]) + ' s · ' + p[7] + ' attempts' +
      (p[11] !== null ? ' · latency ' + num(p[11]) + ' s' : '') + (p[12] !== null ? ' · still waiting after ' + num(p[12]) + ' s' : '') + '</p>';
    h += '<h4>Attempts</h4>' + (att.length ? '<div class="px-attempts">' + table(['time (s)', 'result', 'node', 'nominated', 'feasible', 'evaluated', 'message'], att.map(function (a) {
      return '<tr><td class="n">' + num(a[0]) + '</td><td class="' + (a[1] === 'Scheduled' ? 'ok' : 'bad') + '">' + esc(a[1]) +
        '</td><td>' + esc(a[2]) + '</td><td>' + esc(a[3]) + '</td><td class="n">' + a[4] + '</td><td class="n">' + a[5] +
        '</td><td>' + esc(a[6] < 0 ? '' : R[a[6]]) + '</td></tr>';
    })) + '</div>' : '<p class="note">No scheduling attempt' + (D.attTruncated ? ' embedded (placements.csv has every attempt).' : '.') + '</p>');
    if (ex.length) {
      h += '<h4>Scheduling detail (explain.jsonl)</h4>' + ex.map(explainHtml).join('');
    } else {
      h += '<p class="note">No per-node detail for this pod' + (D.exTruncated ? ' embedded (explain.jsonl has more).' : ': record it with <code>ksim run --explain ' + esc(p[0]) + '</code>.') + '</p>';
    }
    d.innerHTML = h;
    d.hidden = false;
    draw();
    d.scrollIntoView({block: 'nearest'});
  }
  document.getElementById('px-q').addEventListener('input', filter);
  document.getElementById('px-prev').addEventListener('click', function () { if (page > 0) { page--; draw(); } });
  document.getElementById('px-next').addEventListener('click', function () { if ((page + 1) * PAGE < view.length) { page++; draw(); } });
  document.getElementById('px-head').addEventListener('click', function (ev) {
    var th = ev.target.closest('th'); if (!th) return;
    var k = +th.getAttribute('data-k');
    if (sortCol === k) sortDir = -sortDir; else { sortCol = k; sortDir = 1; }
    sortView(); page = 0; draw();
  });
  document.getElementById('px-body').addEventListener('click', function (ev) {
    var tr = ev.target.closest('tr'); if (tr) detail(+tr.getAttribute('data-i'));
  });
  sortView();
  draw();
})();
"#;
