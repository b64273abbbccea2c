//! JSON as the API server reads it: a key given twice in one object is an error, not "the last
//! one wins" (serde_json's default, which would let `{"at":"1s","at":"999h"}` pass silently).
//! Every JSON input of ksim goes through [`parse_value`]; a UTF-8 byte-order mark at the start
//! is skipped ([`strip_bom`]), as editors on Windows write one.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A [`Value`] whose objects had no duplicate key (works with any serde format).
#[derive(Debug, Clone, PartialEq)]
pub struct UniqueKeys(pub Value);

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeysVisitor).map(UniqueKeys)
    }
}

struct UniqueKeysVisitor;

impl<'de> Visitor<'de> for UniqueKeysVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // As serde_json's own Value: a non-finite float becomes null.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        UniqueKeys::deserialize(d).map(|u| u.0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(UniqueKeys(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "duplicate key {key:?} in one object"
                )));
            }
            let UniqueKeys(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Skips a leading UTF-8 byte-order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// The first line of a YAML parser's error: the parser goes on with a snippet of the input
/// around the error, and an error must never echo a file's content (the file may be one the
/// user did not mean to show, such as a credentials file passed by mistake).
pub fn yaml_error_message(e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // The parser's advice is for programmers using it, not for users of ksim.
    first
        .trim_end_matches(", set DuplicateKeyPolicy in Options if acceptable")
        .to_string()
}

/// Parses one JSON document, refusing duplicate keys; a leading BOM is skipped.
pub fn parse_value(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<UniqueKeys>(strip_bom(text)).map(|u| u.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        let e = parse_value(r#"{"at":"1s","at":"999h"}"#).unwrap_err();
        assert!(
            e.to_string().contains("duplicate key \"at\" in one object"),
            "{e}"
        );
        assert!(e.to_string().contains("line 1"), "{e}");
        let e = parse_value(r#"{"pod":{"metadata":{"name":"a","name":"b"}}}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate key \"name\""), "{e}");
        let e = parse_value(r#"[{"a":1},{"b":1,"b":2}]"#).unwrap_err();
        assert!(e.to_string().contains("duplicate key \"b\""), "{e}");
    }

    #[test]
    fn same_value_as_serde_json_otherwise() {
        for text in [
            r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":18446744073709551615}"#,
            "[]",
            "\"s\"",
            "1e3",
        ] {
            let want: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse_value(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn yaml_errors_keep_the_position_and_drop_the_snippet() {
        let e = serde_saphyr::from_str::<Value>("name: secret-a\nname: secret-b\n").unwrap_err();
        let m = yaml_error_message(&e);
        assert!(m.contains("line 2 column 1"), "{m}");
        assert!(!m.contains("secret"), "{m}");
        assert!(m.ends_with("duplicate mapping key: name"), "{m}");
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        assert_eq!(
            parse_value("\u{feff}{\"a\":1}").unwrap(),
            serde_json::json!({"a": 1})
        );
    }
}

/// What a JSON value is, in words, for errors that must not echo an input's content: a text file
/// given where a YAML document belongs parses as one string holding its first lines.
pub fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Refuses a document that is not a mapping, naming what it is instead (never its content).
pub fn expect_mapping(v: &Value, what: &str) -> Result<(), String> {
    if v.is_object() {
        Ok(())
    } else {
        Err(format!(
            "expected {what} (a mapping), got {}",
            value_kind(v)
        ))
    }
}

#[cfg(test)]
mod echo_tests {
    use super::*;

    #[test]
    fn a_text_file_read_as_a_document_is_named_not_quoted() {
        let v = Value::String("root:x:0:0:secret:/root:/bin/bash".into());
        let e = expect_mapping(&v, "a scenario").unwrap_err();
        assert_eq!(e, "expected a scenario (a mapping), got a string");
        assert!(expect_mapping(&serde_json::json!({}), "a scenario").is_ok());
    }
}

/// A header or key name shown in an error only when it looks like one (at most 32 letters,
/// digits, `_`, `-`, `.`); anything else is named by position instead, so that a file given
/// by mistake is never echoed.
pub fn plausible_name(s: &str) -> Option<&str> {
    let ok = !s.is_empty()
        && s.len() <= 32
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    ok.then_some(s)
}
