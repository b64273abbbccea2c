//! Scheduler extenders over HTTP: the engine's implementation of
//! [`ksim_scheduler::extender::Extender`] (filter, prioritize, bind and preempt verbs). Each call is a blocking `POST` of JSON to
//! `urlPrefix/verb` (plain HTTP/1.1, `Connection: close`) bounded by `httpTimeout`; it takes
//! no virtual time.
//!
//! The bodies are upstream's `extenderv1` types, which carry no json tags: Go writes the field
//! names as they are (`Pod`, `Nodes`, `NodeNames`) and reads them case-insensitively, as done
//! here. What an extender answers (and whether it answers the same way twice) is its author's
//! business: ksim's determinism covers only its own decisions.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use ksim_api::config::Extender as ExtenderConfig;
use ksim_api::core::Node;
use ksim_scheduler::extender::{
    pod_uses_managed_resources, Extender, FilterResult, MetaVictims, Victims,
};
use ksim_scheduler::pod_info::PodInfo;
use serde_json::{json, Map, Value};

/// An extender reached over HTTP.
pub struct HttpExtender {
    url_prefix: String,
    filter_verb: String,
    prioritize_verb: String,
    bind_verb: String,
    preempt_verb: String,
    weight: i64,
    timeout: Duration,
    node_cache_capable: bool,
    managed: Vec<String>,
    ignorable: bool,
}

impl HttpExtender {
    pub fn new(c: &ExtenderConfig) -> HttpExtender {
        HttpExtender {
            url_prefix: c.url_prefix.clone(),
            filter_verb: c.filter_verb.clone(),
            prioritize_verb: c.prioritize_verb.clone(),
            bind_verb: c.bind_verb.clone(),
            preempt_verb: c.preempt_verb.clone(),
            weight: c.weight,
            timeout: c.timeout(),
            node_cache_capable: c.node_cache_capable,
            managed: c.managed_resources.iter().map(|r| r.name.clone()).collect(),
            ignorable: c.ignorable,
        }
    }

    /// The configured extenders, boxed for the scheduler.
    pub fn all(cfgs: &[ExtenderConfig]) -> Vec<Box<dyn Extender>> {
        cfgs.iter()
            .map(|c| Box::new(HttpExtender::new(c)) as Box<dyn Extender>)
            .collect()
    }

    /// `ExtenderArgs`: the pod and the candidate nodes, whole or by name.
    fn args(&self, pod: &PodInfo, nodes: &[&Node]) -> Value {
        if self.node_cache_capable {
            let names: Vec<&str> = nodes.iter().map(|n| n.metadata.name.as_str()).collect();
            json!({"Pod": &pod.pod, "Nodes": null, "NodeNames": names})
        } else {
            json!({"Pod": &pod.pod, "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": null})
        }
    }

    fn send(&self, verb: &str, body: &Value) -> Result<Value, String> {
        let url = format!("{}/{}", self.url_prefix.trim_end_matches('/'), verb);
        let body = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        let (code, resp) =
            post(&url, &body, self.timeout).map_err(|e| format!("Post {url:?}: {e}"))?;
        if code != 200 {
            return Err(format!(
                "failed {verb} with extender at URL {url}, code {code}"
            ));
        }
        serde_json::from_slice(&resp).map_err(|e| format!("extender at URL {url}: {e}"))
    }
}

impl Extender for HttpExtender {
    fn name(&self) -> &str {
        &self.url_prefix
    }
    fn is_filter(&self) -> bool {
        !self.filter_verb.is_empty()
    }
    fn is_prioritizer(&self) -> bool {
        !self.prioritize_verb.is_empty()
    }
    fn is_ignorable(&self) -> bool {
        self.ignorable
    }
    fn is_interested(&self, pod: &PodInfo) -> bool {
        pod_uses_managed_resources(pod, &self.managed)
    }

    fn filter(&self, pod: &PodInfo, nodes: &[&Node]) -> Result<FilterResult, String> {
        if self.filter_verb.is_empty() {
            return Ok(FilterResult {
                passed: nodes.iter().map(|n| n.metadata.name.clone()).collect(),
                ..Default::default()
            });
        }
        let v = self.send(&self.filter_verb, &self.args(pod, nodes))?;
        let err = field(&v, "Error").and_then(Value::as_str).unwrap_or("");
        if !err.is_empty() {
            return Err(err.to_string());
        }
        let names = field(&v, "NodeNames").filter(|x| !x.is_null());
        let list = field(&v, "Nodes").filter(|x| !x.is_null());
        let passed: Vec<String> = match (self.node_cache_capable, names, list) {
            (true, Some(names), _) => names
                .as_array()
                .ok_or("NodeNames: not a list")?
                .iter()
                .map(|n| n.as_str().unwrap_or("").to_string())
                .collect(),
            (_, _, Some(list)) => field(list, "items")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|n| {
                            field(n, "metadata")
                                .and_then(|m| field(m, "name"))
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string()
                        })
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Ok(FilterResult {
            passed,
            failed: failed_map(field(&v, "FailedNodes")),
            failed_unresolvable: failed_map(field(&v, "FailedAndUnresolvableNodes")),
        })
    }

    fn prioritize(
        &self,
        pod: &PodInfo,
        nodes: &[&Node],
    ) -> Result<(Vec<(String, i64)>, i64), String> {
        if self.prioritize_verb.is_empty() {
            let zero = nodes.iter().map(|n| (n.metadata.name.clone(), 0)).collect();
            return Ok((zero, 0));
        }
        let v = self.send(&self.prioritize_verb, &self.args(pod, nodes))?;
        let mut out = Vec::new();
        if let Some(list) = v.as_array() {
            for hp in list {
                let host = field(hp, "Host").and_then(Value::as_str).unwrap_or("");
                let score = field(hp, "Score").and_then(Value::as_i64).unwrap_or(0);
                out.push((host.to_string(), score));
            }
        } else if !v.is_null() {
            return Err("HostPriorityList: not a list".into());
        }
        Ok((out, self.weight))
    }

    fn is_binder(&self) -> bool {
        !self.bind_verb.is_empty()
    }

    fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), String> {
        if self.bind_verb.is_empty() {
            return Err("unexpected empty bindVerb in extender".into());
        }
        // `ExtenderBindingArgs` (PodUID is a types.UID: a plain string in JSON).
        let args = json!({
            "PodName": pod.name(),
            "PodNamespace": pod.namespace(),
            "PodUID": pod.uid(),
            "Node": node,
        });
        let v = self.send(&self.bind_verb, &args)?;
        match field(&v, "Error").and_then(Value::as_str) {
            Some(e) if !e.is_empty() => Err(e.to_string()),
            _ => Ok(()),
        }
    }

    fn supports_preemption(&self) -> bool {
        !self.preempt_verb.is_empty()
    }

    fn process_preemption(
        &self,
        pod: &PodInfo,
        victims: &[(&str, Victims<'_>)],
    ) -> Result<Vec<(String, MetaVictims)>, String> {
        if self.preempt_verb.is_empty() {
            return Err(format!(
                "preempt verb is not defined for extender {} but run into ProcessPreemption",
                self.url_prefix
            ));
        }
        // `ExtenderPreemptionArgs`: whole victim pods, or only their UIDs when the extender
        // caches the cluster (`NodeNameToMetaVictims`); the other map is null, as Go writes a
        // nil map. Go writes map keys sorted: the caller passes the nodes in name order.
        let mut map = Map::new();
        for (node, v) in victims {
            let pods: Vec<Value> = if self.node_cache_capable {
                v.pods.iter().map(|p| json!({"UID": p.uid()})).collect()
            } else {
                v.pods
                    .iter()
                    .map(|p| serde_json::to_value(&p.pod).unwrap_or(Value::Null))
                    .collect()
            };
            map.insert(
                node.to_string(),
                json!({"Pods": pods, "NumPDBViolations": v.num_pdb_violations}),
            );
        }
        let args = if self.node_cache_capable {
            json!({"Pod": &pod.pod, "NodeNameToVictims": null, "NodeNameToMetaVictims": map})
        } else {
            json!({"Pod": &pod.pod, "NodeNameToVictims": map, "NodeNameToMetaVictims": null})
        };
        let v = self.send(&self.preempt_verb, &args)?;
        // `ExtenderPreemptionResult`: the extender always answers with meta victims.
        let Some(result) = field(&v, "NodeNameToMetaVictims").filter(|x| !x.is_null()) else {
            return Ok(Vec::new());
        };
        let result = result
            .as_object()
            .ok_or("NodeNameToMetaVictims: not an object")?;
        let mut out = Vec::with_capacity(result.len());
        for (node, mv) in result {
            let mut meta = MetaVictims::default();
            if !mv.is_null() {
                meta.num_pdb_violations = field(mv, "NumPDBViolations")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                if let Some(pods) = field(mv, "Pods").and_then(Value::as_array) {
                    for p in pods {
                        let uid = field(p, "UID").and_then(Value::as_str).unwrap_or("");
                        meta.pods.push(uid.to_string());
                    }
                }
            }
            out.push((node.clone(), meta));
        }
        Ok(out)
    }
}

/// A field read as Go's json decoder does: exact name first, else case-insensitively.
fn field<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    let m: &Map<String, Value> = v.as_object()?;
    m.get(name).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, x)| x)
    })
}

fn failed_map(v: Option<&Value>) -> std::collections::BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, x)| (k.clone(), x.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// A blocking HTTP/1.1 POST of JSON, all of it (connect, send, read) within `timeout`.
fn post(url: &str, body: &[u8], timeout: Duration) -> Result<(u16, Vec<u8>), String> {
    let deadline = Instant::now() + timeout;
    let timed_out = || format!("Client.Timeout exceeded ({timeout:?})");
    let rest = url
        .strip_prefix("http://")
        .ok_or("only http:// URLs are supported")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let hostport = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addrs = hostport.to_socket_addrs().map_err(|e| e.to_string())?;
    let mut stream = None;
    let mut last = String::from("no address");
    for a in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        match TcpStream::connect_timeout(&a, left) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Err(timed_out()),
            Err(e) => last = format!("dial tcp {a}: {e}"),
        }
    }
    let mut s = stream.ok_or(last)?;
    let io = |e: std::io::Error| {
        if matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ) {
            timed_out()
        } else {
            e.to_string()
        }
    };
    let left = |d: Instant| {
        let l = d.saturating_duration_since(Instant::now());
        if l.is_zero() {
            None
        } else {
            Some(l)
        }
    };
    s.set_write_timeout(Some(left(deadline).ok_or_else(timed_out)?))
        .map_err(io)?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).map_err(io)?;
    s.write_all(body).map_err(io)?;
    let mut resp = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        s.set_read_timeout(Some(left(deadline).ok_or_else(timed_out)?))
            .map_err(io)?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => resp.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    parse_response(&resp)
}

/// Status code and body of a complete HTTP/1.x response (identity or chunked body).
fn parse_response(r: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let end = r
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("malformed HTTP response")?;
    let head = std::str::from_utf8(&r[..end]).map_err(|_| "malformed HTTP response")?;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("");
    let code: u16 = status
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("malformed HTTP status line {status:?}"))?;
    let mut chunked = false;
    let mut length: Option<usize> = None;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            let v = v.trim();
            if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            } else if k.eq_ignore_ascii_case("content-length") {
                length = v.parse().ok();
            }
        }
    }
    let body = &r[end + 4..];
    if !chunked {
        let n = length.unwrap_or(body.len()).min(body.len());
        return Ok((code, body[..n].to_vec()));
    }
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        let nl = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("malformed chunked body")?;
        let size_str = std::str::from_utf8(&rest[..nl]).map_err(|_| "malformed chunked body")?;
        let size = usize::from_str_radix(size_str.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "malformed chunked body")?;
        rest = &rest[nl + 2..];
        if size == 0 {
            break;
        }
        if rest.len() < size {
            return Err("truncated chunked body".into());
        }
        out.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or(&[]);
    }
    Ok((code, out))
}
