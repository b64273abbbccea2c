//! The `devices.config` of an allocation result (upstream `Allocator.Allocate` in
//! `structured/internal/incubating`, "Populate configs"): each class's `config` once, with
//! `source: FromClass`, listing the requests (or chosen subrequests, `request/subrequest`) of
//! that class in request order; then each claim `config` with `source: FromClaim`, once per
//! request it names or whose chosen subrequest it names, and once when it names none.

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::resource::{DeviceClass, ResourceClaim};
use serde_json::Value;

/// What the search chose for one request of a claim.
pub struct Chosen {
    /// The request name as the result writes it (`request` or `request/subrequest`).
    pub name: String,
    /// The class of the request, or of the chosen subrequest.
    pub class: Arc<DeviceClass>,
    /// The chosen subrequest's index, for a `firstAvailable` request.
    pub sub: Option<usize>,
}

/// The allocation's config for `claim`; `chosen` has one entry per request (`None`: the
/// search has no data for it, which does not happen for an allocated claim).
pub fn allocation_config(claim: &ResourceClaim, chosen: &[Option<Chosen>]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut class_ranges: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for c in chosen.iter().flatten() {
        let class = c.class.metadata.name.as_str();
        if let Some(&(start, end)) = class_ranges.get(class) {
            for v in &mut out[start..end] {
                if let Some(Value::Array(rs)) = v.get_mut("requests") {
                    rs.push(Value::String(c.name.clone()));
                }
            }
            continue;
        }
        let start = out.len();
        for cfg in &c.class.spec.config {
            let mut v = cfg.clone();
            if let Value::Object(m) = &mut v {
                m.insert("source".into(), Value::from("FromClass"));
                m.insert("requests".into(), Value::from(vec![c.name.clone()]));
            }
            out.push(v);
        }
        class_ranges.insert(class, (start, out.len()));
    }
    for cfg in &claim.spec.devices.config {
        let names: Vec<&str> = cfg
            .get("requests")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut entry = cfg.clone();
        if let Value::Object(m) = &mut entry {
            m.insert("source".into(), Value::from("FromClaim"));
        }
        if names.is_empty() {
            out.push(entry);
            continue;
        }
        for (ri, r) in claim.spec.devices.requests.iter().enumerate() {
            if names.contains(&r.name.as_str()) {
                out.push(entry.clone());
                continue;
            }
            let sub = chosen
                .get(ri)
                .and_then(|c| c.as_ref())
                .and_then(|c| c.sub)
                .and_then(|si| r.first_available.get(si));
            if let Some(sub) = sub {
                if names.contains(&format!("{}/{}", r.name, sub.name).as_str()) {
                    out.push(entry.clone());
                }
            }
        }
    }
    out
}
