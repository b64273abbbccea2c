//! Property tests of the parsers a user touches (issue 16): junk built from each format's own
//! vocabulary never panics, and valid documents round-trip.

use ksim_api::{Node, Quantity};
use proptest::prelude::*;

/// Fragments of YAML built from a format's keys and values, glued in random order and depth.
fn yamlish(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
    let key = prop::sample::select(keys);
    let value = prop_oneof![
        Just("".to_string()),
        Just("null".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("4294967296".to_string()),
        Just("1e400".to_string()),
        Just("'500m'".to_string()),
        Just("1Gi".to_string()),
        Just("1h".to_string()),
        Just("[{name: a, weight: 0}]".to_string()),
        Just("{poisson: {rate: 1}}".to_string()),
        "[a-z]{1,6}".prop_map(|s| s),
        any::<String>(),
    ];
    let line = (0usize..4, key, value)
        .prop_map(|(indent, k, v)| format!("{}{k}: {v}", "  ".repeat(indent)));
    prop::collection::vec(line, 0..14).prop_map(|l| l.join("\n"))
}

const SCENARIO_KEYS: &[&str] = &[
    "name",
    "seed",
    "horizon",
    "cluster",
    "pools",
    "- name",
    "count",
    "template",
    "status",
    "allocatable",
    "cpu",
    "memory",
    "workload",
    "generators",
    "arrival",
    "shapes",
    "requests",
    "traces",
    "nodesFiles",
    "scheduler",
    "config",
    "profiles",
    "queue",
    "limits",
    "maxNodes",
    "autoscaler",
    "costs",
    "runTime",
    "priorities",
    "interval",
];

const CONFIG_KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "profiles",
    "- schedulerName",
    "plugins",
    "score",
    "enabled",
    "disabled",
    "- name",
    "weight",
    "pluginConfig",
    "args",
    "scoringStrategy",
    "type",
    "resources",
    "shape",
    "utilization",
    "percentageOfNodesToScore",
    "parallelism",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "extenders",
    "defaultConstraints",
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "hardPodAffinityWeight",
];

const SWEEP_KEYS: &[&str] = &[
    "name",
    "scenario",
    "axes",
    "- name",
    "configs",
    "file",
    "pools",
    "poolCount",
    "pool",
    "counts",
    "seeds",
    "scale",
    "values",
    "metrics",
    "horizon",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn scenario_junk_never_panics(text in yamlish(SCENARIO_KEYS)) {
        ksim_fuzz::scenario(text.as_bytes());
    }

    #[test]
    fn config_junk_never_panics(text in yamlish(CONFIG_KEYS)) {
        ksim_fuzz::config(text.as_bytes());
    }

    #[test]
    fn sweep_junk_never_panics(text in yamlish(SWEEP_KEYS)) {
        ksim_fuzz::sweep(format!("scenario: s.yaml\n{text}").as_bytes());
    }

    #[test]
    fn importer_junk_never_panics(
        format in 0u8..11,
        rows in prop::collection::vec("[-a-zA-Z0-9_.,:{}\"\\[\\] ]{0,60}", 0..10),
    ) {
        let mut data = vec![format];
        data.extend_from_slice(rows.join("\n").as_bytes());
        ksim_fuzz::import(&data);
    }

    #[test]
    fn quantities_round_trip(milli in 0i64..1_000_000_000_000) {
        let q = Quantity::parse(&format!("{milli}m")).unwrap();
        prop_assert_eq!(q.milli_value(), milli);
        let again = Quantity::parse(q.as_str()).unwrap();
        prop_assert_eq!(again.milli_value(), milli);
    }

    #[test]
    fn nodes_round_trip_through_the_nodes_file(
        specs in prop::collection::vec((1u32..512, 1u32..1024, prop::option::of("[a-z]{1,5}")), 1..6),
    ) {
        let mut nodes: Vec<Node> = Vec::new();
        for (i, (cpu, mem, zone)) in specs.iter().enumerate() {
            let mut labels = serde_json::Map::new();
            if let Some(z) = zone {
                labels.insert("topology.kubernetes.io/zone".into(), z.clone().into());
            }
            let v = serde_json::json!({
                "kind": "Node",
                "metadata": {"name": format!("n{i}"), "labels": labels},
                "status": {"capacity": {"cpu": cpu.to_string(), "memory": format!("{mem}Gi"), "pods": "110"}},
            });
            nodes.push(ksim_trace::native::decode_node(&v, "").unwrap());
        }
        let yaml = ksim_trace::nodes::nodes_to_yaml(&nodes).unwrap();
        let back = ksim_trace::nodes::parse_nodes("n.yaml", &yaml).unwrap();
        prop_assert_eq!(back, nodes);
    }
}
