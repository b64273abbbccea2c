//! Reading Kubernetes objects from JSON or YAML text: single objects, `kind: List`, multi-document
//! YAML, with errors that name the document and the field path.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A document could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    #[error("{source_name}: not valid JSON: {message}")]
    Json {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: not valid YAML: {message}")]
    Yaml {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: {path}: {message}")]
    Field {
        source_name: String,
        path: String,
        message: String,
    },
}

/// Parses JSON or YAML (chosen by the first non-blank character: `{` or `[` means JSON) into
/// generic values, one per document.
pub fn parse_documents(source_name: &str, text: &str) -> Result<Vec<Value>, LoadError> {
    let text = crate::json::strip_bom(text);
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: Value = crate::json::parse_value(text).map_err(|e| LoadError::Json {
            source_name: source_name.to_string(),
            message: e.to_string(),
        })?;
        return Ok(vec![v]);
    }
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| LoadError::Yaml {
        source_name: source_name.to_string(),
        message: crate::json::yaml_error_message(&e),
    })?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Flattens `kind: List` (and `*List`) documents and top-level arrays into their items.
pub fn flatten_items(docs: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    for d in docs {
        match d {
            Value::Array(items) => out.extend(flatten_items(items)),
            // `kind: List` as kubectl writes it, or a bare `items:` mapping (no kind, no
            // metadata) as people write by hand; either way the items are the objects.
            Value::Object(ref m)
                if m.get("items").is_some_and(Value::is_array)
                    && match m.get("kind").and_then(Value::as_str) {
                        Some(k) => k.ends_with("List"),
                        None => !m.contains_key("kind") && !m.contains_key("metadata"),
                    } =>
            {
                if let Some(Value::Array(items)) = m.get("items").cloned() {
                    out.extend(flatten_items(items));
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Decodes one value into a typed object, reporting the JSON path of a bad field.
pub fn decode<T: DeserializeOwned>(source_name: &str, value: &Value) -> Result<T, LoadError> {
    serde_path_to_error::deserialize(value).map_err(|e| LoadError::Field {
        source_name: source_name.to_string(),
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

/// The `kind` of a generic object, or "" when absent.
pub fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Node;

    #[test]
    fn reads_yaml_list_and_json() {
        let yaml = "apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n- kind: Node\n  metadata: {name: b}\n";
        let items = flatten_items(parse_documents("x.yaml", yaml).unwrap());
        assert_eq!(items.len(), 2);
        let n: Node = decode("x.yaml", &items[1]).unwrap();
        assert_eq!(n.metadata.name, "b");
        let json = r#"{"kind":"NodeList","items":[{"metadata":{"name":"c"}}]}"#;
        assert_eq!(
            flatten_items(parse_documents("x.json", json).unwrap()).len(),
            1
        );
    }

    #[test]
    fn bad_field_names_its_path() {
        let v: Value = serde_json::from_str(
            r#"{"metadata":{"name":"a"},"status":{"capacity":{"cpu":"lots"}}}"#,
        )
        .unwrap();
        let err = decode::<Node>("nodes.json", &v).unwrap_err().to_string();
        assert!(err.contains("status.capacity.cpu"), "{err}");
        assert!(err.contains("nodes.json"), "{err}");
    }

    #[test]
    fn multi_document_yaml() {
        let docs = parse_documents("m.yaml", "kind: Node\n---\nkind: Pod\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(kind_of(&docs[1]), "Pod");
    }
}
