//! The explanation is the conformance data: on every decision case, the `--explain` record of
//! the case's scheduling attempt — built by `ksim_engine::explain::attempt_json`, the function
//! the simulation calls for `ksim run --explain`, from the cycle's own kept statuses and score
//! table — holds per-node filter results and per-plugin scores equal to the case's expected
//! values. Nothing here recomputes a verdict: it reads the record and the case.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ksim_engine::explain::{attempt_json, expand_record, AttemptContext};
use ksim_engine::SimTime;
use ksim_scheduler::framework::CycleState;
use ksim_scheduler::schedule::Algorithm;
use rand::SeedableRng;
use serde_json::Value;

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/cases")
}

/// The record's status of a node: its explicit entry, else the shared PreFilter one.
fn recorded_status<'a>(rec: &'a Value, node: &str) -> Option<&'a Value> {
    rec["filter"]["nodes"].get(node).or_else(|| {
        rec["filter"]["others"]
            .as_object()
            .map(|_| &rec["filter"]["others"])
    })
}

fn reasons(v: &Value) -> Vec<String> {
    v["reasons"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Differences between one case's explain record and its expectations.
fn compare(name: &str, case: &Value) -> (Vec<String>, usize, usize, bool) {
    let exp = &case["expected"];
    let setup = ksim_conformance::decision::setup(case).expect("case builds");
    let mut alg = Algorithm::new(rand_chacha::ChaCha8Rng::seed_from_u64(1), 0);
    let mut state = CycleState::new();
    let start = alg.next_start_node_index;
    let res = alg.schedule_pod(
        &setup.fwk,
        &mut state,
        &setup.pod,
        &setup.snapshot,
        &*setup.nominations,
    );
    let cx = AttemptContext {
        fwk: &setup.fwk,
        alg: &alg,
        snapshot: &setup.snapshot,
        nominated: &*setup.nominations,
        state: &state,
        pod: &setup.pod,
        attempt: 1,
        start,
        now: SimTime(0),
    };
    let mut rec = attempt_json(&cx, &res);
    expand_record(&mut rec);
    let mut diffs = Vec::new();
    let mut filters_checked = 0;
    let mut scores_checked = 0;

    // Filter: every node the attempt evaluated. An attempt may stop before the last node —
    // a pod already nominated to a node that passes is placed there without the others being
    // filtered, and without score plugins one feasible node is enough (both upstream) — then
    // the record holds the nodes it evaluated, and its best set is among the case's.
    let fast_path = rec["evaluated"].as_u64() < rec["nodes"].as_u64();
    if let Some(filter) = exp["filter"].as_object() {
        for (node, e) in filter {
            let Some(got) = recorded_status(&rec, node) else {
                if !fast_path {
                    diffs.push(format!(
                        "{name}: node {node}: no filter result in the record"
                    ));
                }
                continue;
            };
            filters_checked += 1;
            let code = got["code"].as_str().unwrap_or("");
            if code != e["code"].as_str().unwrap_or("")
                || got["plugin"].as_str().unwrap_or("") != e["plugin"].as_str().unwrap_or("")
                || reasons(got) != reasons(e)
            {
                diffs.push(format!("{name}: node {node}: record {got}, expected {e}"));
            }
        }
    }

    // Scores: per plugin and node, raw, normalized and weighted; totals; the best set.
    if let Some(rows) = rec["scores"].as_array() {
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for row in rows {
            let node = row["node"].as_str().unwrap_or("");
            let plugins = row["plugins"].as_object().cloned().unwrap_or_default();
            for (p, v) in &plugins {
                *seen.entry(p.clone()).or_default() += 1;
                for (field, stage) in [
                    ("weighted", "scores"),
                    ("raw", "rawScores"),
                    ("normalized", "normalizedScores"),
                ] {
                    let want = &exp[stage][p][node];
                    if stage != "scores" && exp[stage].is_null() {
                        continue;
                    }
                    scores_checked += 1;
                    if &v[field] != want {
                        diffs.push(format!(
                            "{name}: {stage} {p} node {node}: record {}, expected {want}",
                            v[field]
                        ));
                    }
                }
            }
            let want_total = &exp["totalScores"][node];
            if !(want_total.is_null() && plugins.is_empty()) && &row["total"] != want_total {
                diffs.push(format!(
                    "{name}: total node {node}: record {}, expected {want_total}",
                    row["total"]
                ));
            }
        }
        if let Some(ep) = exp["scores"].as_object() {
            for p in ep.keys() {
                if !seen.contains_key(p) {
                    diffs.push(format!("{name}: plugin {p} expected scores, none recorded"));
                }
            }
        }
    } else if exp["scores"].as_object().is_some_and(|m| !m.is_empty())
        && exp["feasibleNodes"].as_array().is_some_and(|a| a.len() > 1)
        && !fast_path
    {
        diffs.push(format!("{name}: expected scores, the record has none"));
    }
    let sorted = |v: &Value| {
        let mut x: Vec<String> = v
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        x.sort();
        x
    };
    if rec["result"] == "Scheduled" {
        let (got, want) = (sorted(&rec["best"]), sorted(&exp["bestNodes"]));
        let ok = if fast_path {
            !got.is_empty() && got.iter().all(|g| want.contains(g))
        } else {
            got == want
        };
        if !ok {
            diffs.push(format!(
                "{name}: best {} , expected {}",
                rec["best"], exp["bestNodes"]
            ));
        }
    } else if rec["result"] == "Unschedulable" {
        if !exp["bestNodes"].as_array().is_none_or(|a| a.is_empty()) {
            diffs.push(format!(
                "{name}: record unschedulable, expected {}",
                exp["bestNodes"]
            ));
        }
        if let Some(m) = exp["fitErrorFilterOnly"].as_str() {
            if rec["message"].as_str() != Some(m) {
                diffs.push(format!(
                    "{name}: message {}, expected {m:?}",
                    rec["message"]
                ));
            }
        }
        if let Some(u) = exp["unschedulablePlugins"].as_array() {
            if rec["unschedulablePlugins"] != Value::Array(u.clone()) {
                diffs.push(format!(
                    "{name}: unschedulablePlugins {}, expected {}",
                    rec["unschedulablePlugins"], exp["unschedulablePlugins"]
                ));
            }
        }
    }
    (diffs, filters_checked, scores_checked, fast_path)
}

#[test]
fn explain_records_equal_every_decision_cases_expectations() {
    let files = ksim_conformance::case_files(&cases_dir()).expect("cases");
    let mut cases = 0;
    let mut filters = 0;
    let mut scores = 0;
    let mut unschedulable = 0;
    let mut partial_cases = 0;
    let mut all = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read case");
        let case: Value = serde_json::from_str(&text).expect("case JSON");
        if ksim_conformance::kind_of(&case) != Some(ksim_conformance::CaseKind::Decision) {
            continue;
        }
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        // The runner itself must pass the case, or the comparison proves nothing.
        let runner = ksim_conformance::run_case(&case).expect("runs");
        assert!(
            runner.is_empty(),
            "{name} fails the conformance runner: {runner:?}"
        );
        cases += 1;
        if case["expected"]["fitErrorFilterOnly"].is_string() {
            unschedulable += 1;
        }
        let (d, nf, ns, partial) = compare(&name, &case);
        partial_cases += usize::from(partial);
        filters += nf;
        scores += ns;
        all.extend(d);
    }
    assert!(
        all.is_empty(),
        "{} differences:\n{}",
        all.len(),
        all.join("\n")
    );
    eprintln!(
        "{cases} decision cases ({unschedulable} unschedulable, {partial_cases} stopped before the last node): {filters} node filter results, {scores} plugin scores equal"
    );
    assert!(
        partial_cases * 10 < cases,
        "{partial_cases} partial attempts of {cases}"
    );
    // The cases are the acceptance suite: several hundred decisions, most of them scored.
    assert!(cases > 300, "only {cases} decision cases found");
    assert!(
        filters > 1000 && scores > 1000,
        "{filters} filters, {scores} scores"
    );
}
