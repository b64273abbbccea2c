//! `Extender` (kubescheduler.config.k8s.io/v1): a scheduler extender reached over HTTP, and its
//! validation. ksim calls all four verbs (filter, prioritize, preempt, bind), over HTTP or HTTPS.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::nulls::or_default;
use crate::validation::{quote, FieldError, FieldErrors};

/// upstream's `DefaultExtenderTimeout`.
pub const DEFAULT_EXTENDER_TIMEOUT: Duration = Duration::from_secs(5);

/// One entry of `extenders`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Extender {
    #[serde(deserialize_with = "or_default")]
    pub url_prefix: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "or_default"
    )]
    pub filter_verb: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "or_default"
    )]
    pub preempt_verb: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "or_default"
    )]
    pub prioritize_verb: String,
    /// Multiplies the extender's scores; must be positive when `prioritizeVerb` is set (upstream
    /// does not default it).
    #[serde(deserialize_with = "or_default")]
    pub weight: i64,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "or_default"
    )]
    pub bind_verb: String,
    #[serde(rename = "enableHTTPS", deserialize_with = "or_default")]
    pub enable_https: bool,
    /// Client TLS settings for an `https://` `urlPrefix` (upstream's restclient TLS config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<ExtenderTlsConfig>,
    /// A Go duration (`"5s"`, `"200ms"`); 0 or absent means 5s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_timeout: Option<String>,
    #[serde(deserialize_with = "or_default")]
    pub node_cache_capable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "or_default")]
    pub managed_resources: Vec<ExtenderManagedResource>,
    #[serde(deserialize_with = "or_default")]
    pub ignorable: bool,
}

/// `ExtenderTLSConfig`: as client-go's `TLSClientConfig`. The `*Data` fields are Go `[]byte`, so
/// JSON and YAML carry them base64-encoded; each takes precedence over its `*File`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExtenderTlsConfig {
    /// Skip verifying the server's certificate (not allowed together with a CA).
    #[serde(deserialize_with = "or_default")]
    pub insecure: bool,
    /// The name the server's certificate must carry (and the SNI sent); default: the URL's host.
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "or_default"
    )]
    pub server_name: String,
    /// Client certificate (PEM) file.
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "or_default"
    )]
    pub cert_file: String,
    /// Client key (PEM) file.
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "or_default"
    )]
    pub key_file: String,
    /// Trusted root certificates (PEM) file.
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "or_default"
    )]
    pub ca_file: String,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "base64_bytes",
        serialize_with = "to_base64"
    )]
    pub cert_data: Vec<u8>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "base64_bytes",
        serialize_with = "to_base64"
    )]
    pub key_data: Vec<u8>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "base64_bytes",
        serialize_with = "to_base64"
    )]
    pub ca_data: Vec<u8>,
}

/// A Go `[]byte` as encoding/json reads it: a base64 (standard alphabet, padded) string, or null.
fn base64_bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    use base64::Engine;
    let Some(s) = Option::<String>::deserialize(d)? else {
        return Ok(Vec::new());
    };
    // Go's decoder skips line breaks inside the string.
    let clean: String = s.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    base64::engine::general_purpose::STANDARD
        .decode(clean.as_bytes())
        .map_err(|e| serde::de::Error::custom(format!("illegal base64 data: {e}")))
}

fn to_base64<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
    use base64::Engine;
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b))
}

/// `ExtenderManagedResource`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExtenderManagedResource {
    #[serde(deserialize_with = "or_default")]
    pub name: String,
    #[serde(deserialize_with = "or_default")]
    pub ignored_by_scheduler: bool,
}

impl Extender {
    /// `httpTimeout`, defaulted to 5s (as upstream's `NewHTTPExtender`). An unparsable value is
    /// refused by validation, so this falls back to the default only for unvalidated configs.
    pub fn timeout(&self) -> Duration {
        match self.http_timeout.as_deref().map(parse_go_duration) {
            Some(Some(d)) if !d.is_zero() => d,
            _ => DEFAULT_EXTENDER_TIMEOUT,
        }
    }
}

/// Parses a Go `time.Duration` string (`"1m30s"`, `"200ms"`, `"0"`); negative values and
/// anything else are `None`.
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += n * nanos_per;
    }
    Some(Duration::from_nanos(total.round() as u64))
}

/// upstream's `validateExtenders`, plus a required `http://` or `https://` `urlPrefix` (the
/// schemes upstream's HTTP client speaks).
pub(crate) fn validate_extenders(errs: &mut FieldErrors, extenders: &[Extender]) {
    let mut binders = 0;
    let mut managed: Vec<&str> = Vec::new();
    for (i, e) in extenders.iter().enumerate() {
        let path = format!("extenders[{i}]");
        if !e.prioritize_verb.is_empty() && e.weight <= 0 {
            errs.push(FieldError::invalid(
                format!("{path}.weight"),
                e.weight,
                "must have a positive weight applied to it",
            ));
        }
        if !e.bind_verb.is_empty() {
            binders += 1;
        }
        for (j, r) in e.managed_resources.iter().enumerate() {
            let rpath = format!("{path}.managedResources[{j}].name");
            let msgs = crate::validation::is_qualified_name(&r.name);
            for m in &msgs {
                errs.push(FieldError::invalid(rpath.clone(), quote(&r.name), m));
            }
            if msgs.is_empty() && !is_extended_resource_name(&r.name) {
                errs.push(FieldError::invalid(
                    rpath.clone(),
                    quote(&r.name),
                    "is an invalid extended resource name",
                ));
            }
            if managed.contains(&r.name.as_str()) {
                errs.push(FieldError::invalid(
                    rpath,
                    quote(&r.name),
                    "duplicate extender managed resource name",
                ));
            }
            managed.push(&r.name);
        }
        if let Some(t) = &e.http_timeout {
            if parse_go_duration(t).is_none() {
                errs.push(FieldError::invalid(
                    format!("{path}.httpTimeout"),
                    quote(t),
                    "not a duration (e.g. \"5s\", \"200ms\")",
                ));
            }
        }
        if e.url_prefix.is_empty() {
            errs.push(FieldError::required(format!("{path}.urlPrefix"), ""));
        } else if !(e.url_prefix.starts_with("http://") || e.url_prefix.starts_with("https://")) {
            errs.push(FieldError::invalid(
                format!("{path}.urlPrefix"),
                quote(&e.url_prefix),
                "ksim reaches extenders over http:// or https:// only",
            ));
        }
    }
    if binders > 1 {
        errs.push(FieldError::invalid(
            "extenders",
            quote(&format!("found {binders} extenders implementing bind")),
            "only one extender can implement bind",
        ));
    }
}

/// `v1helper.IsExtendedResourceName`: not native (a name with a `/` outside `kubernetes.io/`)
/// and not prefixed `requests.`.
fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native && !name.starts_with("requests.")
}
