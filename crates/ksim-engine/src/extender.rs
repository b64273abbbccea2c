//! Scheduler extenders over HTTP: the engine's implementation of
//! [`ksim_scheduler::extender::Extender`] (filter, prioritize, bind and preempt verbs). Each call
//! is a blocking `POST` of JSON to `urlPrefix/verb` (HTTP/1.1, `Connection: close`; over TLS for
//! an `https://` prefix) bounded by `httpTimeout`; it takes no virtual time.
//!
//! TLS is set up as upstream's `makeTransport` and client-go's `TLSConfigFor` do: `enableHTTPS`
//! without a CA means `insecure`; a CA (`caData`, else `caFile`) replaces the system's roots;
//! `insecure` with a CA is refused; a client certificate is sent when both a certificate and a
//! key are given; `serverName` overrides the URL's host for SNI and verification; TLS 1.2 at
//! least. A setup error stops the run before it starts, as it stops kube-scheduler.
//!
//! The bodies are upstream's `extenderv1` types, which carry no json tags: Go writes the field
//! names as they are (`Pod`, `Nodes`, `NodeNames`) and reads them case-insensitively, as done
//! here. What an extender answers (and whether it answers the same way twice) is its author's
//! business: ksim's determinism covers only its own decisions.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ksim_api::config::Extender as ExtenderConfig;
use ksim_api::core::Node;
use ksim_scheduler::extender::{
    pod_uses_managed_resources, Extender, FilterResult, MetaVictims, Victims,
};
use ksim_scheduler::pod_info::PodInfo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
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
    /// Client TLS settings, for an `https://` prefix.
    tls: Option<Tls>,
    /// Where the run's one warning about this extender goes, and whether it went.
    warnings: Arc<ExtenderWarnings>,
    warned: AtomicBool,
}

/// Warnings about extenders during one run: one per extender that could not be reached (its
/// URL and the error), taken by whoever runs the simulation
/// ([`crate::Simulation::extender_warnings`]) to print. The engine itself prints nothing.
#[derive(Debug, Default)]
pub struct ExtenderWarnings {
    any: AtomicBool,
    list: Mutex<Vec<String>>,
}

impl ExtenderWarnings {
    /// The warnings not taken yet (cheap when there are none: one atomic load).
    pub fn take(&self) -> Vec<String> {
        if !self.any.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        match self.list.lock() {
            Ok(mut l) => std::mem::take(&mut *l),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        }
    }

    fn push(&self, w: String) {
        match self.list.lock() {
            Ok(mut l) => l.push(w),
            Err(p) => p.into_inner().push(w),
        }
        self.any.store(true, Ordering::Release);
    }
}

/// How an `https://` extender is reached.
struct Tls {
    config: Arc<ClientConfig>,
    /// `tlsConfig.serverName`, else the URL's host.
    server_name: Option<String>,
}

impl HttpExtender {
    /// The extender for one configuration entry; an error when its TLS settings cannot be
    /// loaded (as upstream's `NewHTTPExtender`).
    pub fn new(
        c: &ExtenderConfig,
        warnings: Arc<ExtenderWarnings>,
    ) -> Result<HttpExtender, String> {
        let tls = if c.url_prefix.starts_with("https://") {
            Some(make_tls(c)?)
        } else {
            None
        };
        Ok(HttpExtender {
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
            tls,
            warnings,
            warned: AtomicBool::new(false),
        })
    }

    /// The configured extenders, boxed for the scheduler; the first setup error names its entry.
    pub fn all(
        cfgs: &[ExtenderConfig],
        warnings: &Arc<ExtenderWarnings>,
    ) -> Result<Vec<Box<dyn Extender>>, String> {
        cfgs.iter()
            .enumerate()
            .map(|(i, c)| {
                HttpExtender::new(c, warnings.clone())
                    .map(|e| Box::new(e) as Box<dyn Extender>)
                    .map_err(|e| format!("extenders[{i}] ({}): {e}", c.url_prefix))
            })
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
        let (code, resp) = post(&url, &body, self.timeout, self.tls.as_ref()).map_err(|e| {
            self.warn_unreachable(&e);
            format!("Post {url:?}: {e}")
        })?;
        if code != 200 {
            return Err(format!(
                "failed {verb} with extender at URL {url}, code {code}"
            ));
        }
        serde_json::from_slice(&resp).map_err(|e| format!("extender at URL {url}: {e}"))
    }
}

impl HttpExtender {
    /// The first failure to reach this extender in a run: one warning naming its URL and the
    /// error, and what upstream does about it (the call fails after at most `httpTimeout`; an
    /// `ignorable` extender is then skipped, another fails the attempt). Later failures are
    /// not reported again.
    fn warn_unreachable(&self, e: &str) {
        if self.warned.swap(true, Ordering::AcqRel) {
            return;
        }
        let then = if self.ignorable {
            "it is ignorable, so the scheduler goes on without it"
        } else {
            "it is not ignorable, so each attempt that calls it fails"
        };
        self.warnings.push(format!(
            "extender {} cannot be reached: {e}; every call waits up to its httpTimeout \
             ({:?}) and {then}, as in kube-scheduler (this is reported once per run)",
            self.url_prefix, self.timeout
        ));
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

/// One connection to an extender: plain TCP or TLS over it.
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<ClientConnection, TcpStream>>),
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => s.get_ref(),
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

/// A blocking HTTP/1.1 POST of JSON, all of it (connect, TLS handshake, send, read) within
/// `timeout`.
fn post(
    url: &str,
    body: &[u8],
    timeout: Duration,
    tls: Option<&Tls>,
) -> Result<(u16, Vec<u8>), String> {
    let deadline = Instant::now() + timeout;
    let timed_out = || format!("Client.Timeout exceeded ({timeout:?})");
    let (rest, default_port) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(r), _) => (r, 80),
        (_, Some(r)) => (r, 443),
        _ => return Err("only http:// and https:// URLs are supported".into()),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, hostport) = split_host_port(authority, default_port);
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
    let tcp = stream.ok_or(last)?;
    let mut s = match (url.starts_with("https://"), tls) {
        (false, _) => Conn::Plain(tcp),
        (true, Some(t)) => {
            let name = t.server_name.as_deref().unwrap_or(host);
            let sn = ServerName::try_from(name.to_string())
                .map_err(|e| format!("tls: invalid server name {name:?}: {e}"))?;
            let conn =
                ClientConnection::new(t.config.clone(), sn).map_err(|e| format!("tls: {e}"))?;
            Conn::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
        }
        (true, None) => return Err("no TLS settings for an https:// URL".into()),
    };
    let io = |e: std::io::Error| {
        if matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ) {
            timed_out()
        } else if e
            .get_ref()
            .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
        {
            // The handshake or record layer failed (e.g. an untrusted certificate).
            format!("tls: {e}")
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
    s.tcp()
        .set_write_timeout(Some(left(deadline).ok_or_else(timed_out)?))
        .map_err(io)?;
    // The handshake reads too.
    s.tcp()
        .set_read_timeout(Some(left(deadline).ok_or_else(timed_out)?))
        .map_err(io)?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut req = head.into_bytes();
    req.extend_from_slice(body);
    s.write_all(&req).map_err(io)?;
    s.flush().map_err(io)?;
    let mut resp = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        s.tcp()
            .set_read_timeout(Some(left(deadline).ok_or_else(timed_out)?))
            .map_err(io)?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => resp.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // A TLS server that closes without close_notify: the response is judged by what
            // arrived (its Content-Length), as Go's client does.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !resp.is_empty() => break,
            Err(e) => return Err(io(e)),
        }
    }
    parse_response(&resp)
}

/// The host (brackets stripped) and `host:port` of a URL authority.
fn split_host_port(authority: &str, default_port: u16) -> (&str, String) {
    if let Some(rest) = authority.strip_prefix('[') {
        // [v6] or [v6]:port
        let end = rest.find(']').unwrap_or(rest.len());
        let host = &rest[..end];
        let after = &rest[(end + 1).min(rest.len())..];
        return match after.strip_prefix(':') {
            Some(_) => (host, authority.to_string()),
            None => (host, format!("[{host}]:{default_port}")),
        };
    }
    match authority.rsplit_once(':') {
        Some((h, _)) => (h, authority.to_string()),
        None => (authority, format!("{authority}:{default_port}")),
    }
}

/// Upstream's `makeTransport` + client-go's `TLSConfigFor`, on rustls with ring.
fn make_tls(c: &ExtenderConfig) -> Result<Tls, String> {
    let t = c.tls_config.clone().unwrap_or_default();
    let has_ca = !t.ca_file.is_empty() || !t.ca_data.is_empty();
    // makeTransport: HTTPS without a CA skips verification.
    let insecure = t.insecure || (c.enable_https && !has_ca);
    let has_cert_auth = (!t.cert_data.is_empty() || !t.cert_file.is_empty())
        && (!t.key_data.is_empty() || !t.key_file.is_empty());
    if has_ca && insecure {
        return Err(
            "specifying a root certificates file with the insecure flag is not allowed".into(),
        );
    }
    let ca = data_or_file(&t.ca_data, &t.ca_file)?;
    let cert = data_or_file(&t.cert_data, &t.cert_file)?;
    let key = data_or_file(&t.key_data, &t.key_file)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| format!("tls: {e}"))?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipVerify(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        if has_ca {
            let mut any = false;
            for der in CertificateDer::pem_slice_iter(&ca) {
                let der = der.map_err(|e| {
                    format!(
                        "unable to load root certificates: unable to parse bytes as PEM block: {e}"
                    )
                })?;
                roots.add(der).map_err(|e| {
                    format!("unable to load root certificates: failed to parse certificate: {e}")
                })?;
                any = true;
            }
            if !any {
                return Err(
                    "unable to load root certificates: no valid certificate authority data seen"
                        .into(),
                );
            }
        } else {
            // No CA: the system's roots, as Go's crypto/tls with RootCAs nil.
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
        builder.with_root_certificates(roots)
    };
    let config = if has_cert_auth {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("tls: failed to parse certificate PEM data: {e}"))?;
        if chain.is_empty() {
            return Err("tls: failed to find any PEM data in certificate input".into());
        }
        let key = PrivateKeyDer::from_pem_slice(&key)
            .map_err(|e| format!("tls: failed to find any PEM data in key input: {e}"))?;
        builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| format!("tls: {e}"))?
    } else {
        builder.with_no_client_auth()
    };
    Ok(Tls {
        config: Arc::new(config),
        server_name: (!t.server_name.is_empty()).then(|| t.server_name.clone()),
    })
}

/// client-go's `dataFromSliceOrFile`: the data if any, else the file's contents (a relative
/// path is from the working directory), else nothing.
fn data_or_file(data: &[u8], file: &str) -> Result<Vec<u8>, String> {
    if !data.is_empty() {
        return Ok(data.to_vec());
    }
    if file.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::read(file).map_err(|e| format!("open {file}: {e}"))
}

/// `insecure`: any server certificate is accepted (Go's `InsecureSkipVerify`); the handshake's
/// signatures are still checked against the certificate presented.
#[derive(Debug)]
struct SkipVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
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
