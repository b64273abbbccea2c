//! Helpers shared by the importer tests.

/// One audit Event line (level RequestResponse, stage ResponseComplete, code 200) at `ts`, its
/// `responseObject` `obj` (none when empty).
pub fn audit_line(
    ts: &str,
    verb: &str,
    resource: &str,
    sub: &str,
    ns: &str,
    name: &str,
    obj: &str,
) -> String {
    let obj = if obj.is_empty() {
        String::new()
    } else {
        format!(", \"responseObject\": {obj}")
    };
    format!(
        r#"{{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "stage": "ResponseComplete", "verb": "{verb}", "objectRef": {{"resource": "{resource}", "subresource": "{sub}", "namespace": "{ns}", "name": "{name}"}}, "responseStatus": {{"code": 200}}, "requestReceivedTimestamp": "{ts}", "stageTimestamp": "{ts}"{obj}}}"#
    )
}
