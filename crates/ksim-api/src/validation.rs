//! Field errors in the form upstream's `k8s.io/apimachinery/pkg/util/validation/field` prints
//! them (`path: Invalid value: 0: detail`), their aggregate (`[a, b]`), and the name checks
//! (`IsQualifiedName`, `IsValidLabelValue`, `IsDNS1123Subdomain`) with upstream's messages.

use std::fmt;

/// One problem at one field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// `profiles[0].pluginConfig[1].args.scoringStrategy.type`; empty for the whole document.
    pub field: String,
    /// What is wrong, as upstream's `ErrorBody` prints it (`Invalid value: 0: must be ...`).
    pub body: String,
    /// A field that belongs to this feature gate: valid in itself, it is admitted or refused
    /// only once the run's gates are known (`resource::check_gates`).
    pub gate: Option<&'static str>,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.body)
        } else {
            write!(f, "{}: {}", self.field, self.body)
        }
    }
}

impl FieldError {
    pub fn new(field: impl Into<String>, body: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            body: body.into(),
            gate: None,
        }
    }

    /// `field.Invalid`; `value` is already rendered (see [`quote`]).
    pub fn invalid(field: impl Into<String>, value: impl fmt::Display, detail: &str) -> FieldError {
        let mut body = format!("Invalid value: {value}");
        if !detail.is_empty() {
            body.push_str(": ");
            body.push_str(detail);
        }
        FieldError::new(field, body)
    }

    /// `field.Required`.
    pub fn required(field: impl Into<String>, detail: &str) -> FieldError {
        if detail.is_empty() {
            FieldError::new(field, "Required value")
        } else {
            FieldError::new(field, format!("Required value: {detail}"))
        }
    }

    /// `field.NotSupported` with a string value.
    pub fn not_supported(field: impl Into<String>, value: &str, valid: &[&str]) -> FieldError {
        let list: Vec<String> = valid.iter().map(|v| quote(v)).collect();
        FieldError::new(
            field,
            format!(
                "Unsupported value: {}: supported values: {}",
                quote(value),
                list.join(", ")
            ),
        )
    }

    /// `field.Duplicate` with a string value.
    pub fn duplicate(field: impl Into<String>, value: &str) -> FieldError {
        FieldError::new(field, format!("Duplicate value: {}", quote(value)))
    }

    /// `field.Forbidden`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> FieldError {
        FieldError::new(field, format!("Forbidden: {detail}"))
    }

    /// The same error under a longer path (`prefix.field`).
    pub fn prefixed(mut self, prefix: &str) -> FieldError {
        self.field = join_path(prefix, &self.field);
        self
    }
}

/// `prefix.field`, `prefix[0]`, or either alone when the other is empty.
pub fn join_path(prefix: &str, field: &str) -> String {
    match (prefix.is_empty(), field.is_empty()) {
        (true, _) => field.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) if field.starts_with('[') => format!("{prefix}{field}"),
        _ => format!("{prefix}.{field}"),
    }
}

/// A string value as Go's `%q` prints it (for the ASCII names found in configurations).
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// Several field errors, printed as upstream's `utilerrors.Aggregate`: one alone, more as
/// `[a, b]` (duplicates once).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldErrors(pub Vec<FieldError>);

impl fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut seen: Vec<String> = Vec::new();
        for e in &self.0 {
            let s = e.to_string();
            if !seen.contains(&s) {
                seen.push(s);
            }
        }
        if seen.len() == 1 {
            f.write_str(&seen[0])
        } else {
            write!(f, "[{}]", seen.join(", "))
        }
    }
}

impl std::error::Error for FieldErrors {}

impl FieldErrors {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }
    /// `Ok(())` when empty.
    pub fn into_result(self) -> Result<(), FieldErrors> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self)
        }
    }
    /// Every path under `prefix`.
    pub fn prefixed(self, prefix: &str) -> FieldErrors {
        FieldErrors(self.0.into_iter().map(|e| e.prefixed(prefix)).collect())
    }
}

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// upstream `RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut s = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push_str(&format!("'{e}', "));
    }
    s.push_str(&format!("regex used for validation is '{fmt}')"));
    s
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_qualified_part(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain_re(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            match (b.first(), b.last()) {
                (Some(f), Some(l)) => {
                    (f.is_ascii_lowercase() || f.is_ascii_digit())
                        && (l.is_ascii_lowercase() || l.is_ascii_digit())
                        && b.iter()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                }
                _ => false,
            }
        })
}

/// upstream `IsDNS1123Subdomain`: the messages, none when valid.
pub fn is_dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !is_dns1123_subdomain_re(s) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// upstream `IsQualifiedName`: the messages, none when valid.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// upstream `IsValidLabelValue`: the messages, none when valid.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !(value.is_empty() || is_qualified_part(value)) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// upstream `metav1validation.ValidateLabelName`: one `Invalid` per message.
pub fn validate_label_name(name: &str, field: &str) -> Vec<FieldError> {
    is_qualified_name(name)
        .into_iter()
        .map(|m| FieldError::invalid(field, quote(name), &m))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        assert!(is_qualified_name("topology.kubernetes.io/zone").is_empty());
        assert!(is_qualified_name("cpu").is_empty());
        assert_eq!(
            is_qualified_name("a/b/c")[0],
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        assert_eq!(
            is_qualified_name("Bad_/x")[0].split(' ').next(),
            Some("prefix")
        );
        assert_eq!(is_qualified_name("-x").len(), 1);
    }

    #[test]
    fn aggregate_prints_like_upstream() {
        let one = FieldErrors(vec![FieldError::invalid("a", 0, "bad")]);
        assert_eq!(one.to_string(), "a: Invalid value: 0: bad");
        let two = FieldErrors(vec![
            FieldError::required("b", ""),
            FieldError::duplicate("c", "x"),
        ]);
        assert_eq!(
            two.to_string(),
            "[b: Required value, c: Duplicate value: \"x\"]"
        );
    }
}
