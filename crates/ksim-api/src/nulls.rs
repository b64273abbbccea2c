//! `null` read as Kubernetes reads it: an explicit `null` (`labels: null`, `tolerations: null`,
//! a `spec:` with only a comment under it) is the field's zero value, as if it were absent.
//! Every non-`Option` field of the object model deserializes through [`or_default`].

use serde::{Deserialize, Deserializer};

/// Deserializes `T`, reading `null` as `T::default()`.
pub fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A copy of `v` without the object members whose value is `null` (at any depth): how Go's
/// decoding reads them, as absent — a nil pointer that defaulting then fills.
pub fn without_nulls(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| (k.clone(), without_nulls(x)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}
