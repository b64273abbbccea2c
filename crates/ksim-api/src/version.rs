//! The Kubernetes version a run behaves as, and its feature gates.
//!
//! [`KubernetesVersion`] is a supported minor (`1.35`, `1.36`; the default is the newest
//! recorded, 1.36). [`FeatureGates`] is upstream's `featuregate.FeatureGate` for that version:
//! the table of every gate ksim reads (scheduler, DRA, controllers), each with its default,
//! stage and lock, taken from upstream `pkg/features/kube_features.go`
//! (`defaultVersionedKubernetesFeatureGates`) at that version; and the overrides a user sets
//! with `--feature-gates A=true,B=false` or a scenario's `featureGates:` map, refused as
//! upstream's `featureGate.SetFromMap` refuses them (component-base/featuregate): an unknown
//! gate (`unrecognized feature gate: X`) and a locked gate set away from its default
//! (`cannot set feature gate X to false, feature is locked to true`).
//!
//! Everything that differs per version is data here (one [`GATES`] row per gate with one
//! column per version) and in the scheduler's default-profile table; adding a version means
//! one more column and its recorded cases.

use std::collections::BTreeMap;
use std::fmt;

/// A Kubernetes minor ksim can behave as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum KubernetesVersion {
    /// v1.35 (recorded: kube-scheduler v1.35.4).
    V1_35,
    /// v1.36 (recorded: kube-scheduler v1.36.2). The default: the newest recorded.
    #[default]
    V1_36,
}

/// Why a version or a feature-gate setting was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("unsupported Kubernetes version {given:?}: supported versions are {supported}")]
    Unsupported { given: String, supported: String },
    /// upstream `featureGate.SetFromMap`: `unrecognized feature gate: %s`.
    #[error("unrecognized feature gate: {gate} (Kubernetes {version})")]
    UnknownGate { gate: String, version: String },
    /// upstream `featureGate.SetFromMap`: `cannot set feature gate %v to %v, feature is locked to %v`.
    #[error("cannot set feature gate {gate} to {value}, feature is locked to {locked}")]
    Locked {
        gate: String,
        value: bool,
        locked: bool,
    },
    /// upstream `featureGate.Set`: `missing bool value for %s` / `invalid value of %s=%s`.
    #[error("{0}")]
    Syntax(String),
}

impl KubernetesVersion {
    /// Every supported version, oldest first.
    pub const ALL: [KubernetesVersion; 2] = [KubernetesVersion::V1_35, KubernetesVersion::V1_36];

    /// `"1.35"`.
    pub fn as_str(self) -> &'static str {
        match self {
            KubernetesVersion::V1_35 => "1.35",
            KubernetesVersion::V1_36 => "1.36",
        }
    }

    /// The kube-scheduler release whose recorded cases this version's behaviour is checked
    /// against (`tests/conformance`).
    pub fn recorded_release(self) -> &'static str {
        match self {
            KubernetesVersion::V1_35 => "v1.35.4",
            KubernetesVersion::V1_36 => "v1.36.2",
        }
    }

    /// The column of this version in the per-version tables.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The supported versions, as they are named in errors and `--help`: `1.35, 1.36`.
    pub fn supported_list() -> String {
        KubernetesVersion::ALL
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Parses `1.36`, `v1.36`, `1.36.2` or `v1.36.2` (the patch is ignored: behaviour is per
    /// minor). Anything else is refused, naming the supported versions.
    pub fn parse(s: &str) -> Result<KubernetesVersion, VersionError> {
        let t = s.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        let mut parts = t.split('.');
        let (major, minor, patch) = (parts.next(), parts.next(), parts.next());
        let extra = parts.next();
        let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        let ok = extra.is_none()
            && major.is_some_and(digits)
            && minor.is_some_and(digits)
            && patch.is_none_or(digits);
        let found = if ok {
            KubernetesVersion::ALL.iter().copied().find(|v| {
                let mut vp = v.as_str().split('.');
                vp.next() == major && vp.next() == minor
            })
        } else {
            None
        };
        found.ok_or_else(|| VersionError::Unsupported {
            given: s.to_string(),
            supported: KubernetesVersion::supported_list(),
        })
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for KubernetesVersion {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KubernetesVersion::parse(s)
    }
}

impl serde::Serialize for KubernetesVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for KubernetesVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A YAML `1.36` arrives as a number: accept it as its text.
        let v = serde_json::Value::deserialize(d)?;
        let text = match &v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            other => {
                return Err(serde::de::Error::custom(format!(
                    "expected a Kubernetes version such as \"1.36\", got {other}"
                )))
            }
        };
        KubernetesVersion::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A feature's maturity (upstream `featuregate.prerelease`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Alpha,
    Beta,
    Ga,
    Deprecated,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Alpha => "ALPHA",
            Stage::Beta => "BETA",
            Stage::Ga => "GA",
            Stage::Deprecated => "DEPRECATED",
        }
    }
}

/// One gate at one version: its default, stage, and whether it is locked to its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateSpec {
    pub default: bool,
    pub stage: Stage,
    pub locked: bool,
}

const fn alpha() -> Option<GateSpec> {
    Some(GateSpec {
        default: false,
        stage: Stage::Alpha,
        locked: false,
    })
}
const fn beta(default: bool) -> Option<GateSpec> {
    Some(GateSpec {
        default,
        stage: Stage::Beta,
        locked: false,
    })
}
const fn ga() -> Option<GateSpec> {
    Some(GateSpec {
        default: true,
        stage: Stage::Ga,
        locked: false,
    })
}
const fn ga_locked() -> Option<GateSpec> {
    Some(GateSpec {
        default: true,
        stage: Stage::Ga,
        locked: true,
    })
}
const ABSENT: Option<GateSpec> = None;

/// One row per gate: its name and its spec at each version of [`KubernetesVersion::ALL`]
/// (None: the gate does not exist at that version, and setting it is refused as unknown).
/// From upstream `pkg/features/kube_features.go` (and the recorded v1.36.2 cases' README for
/// the gates whose default changed in v1.36). Sorted by name.
pub const GATES: &[(&str, [Option<GateSpec>; 2])] = &[
    // Control plane: the informer FIFO that StaleControllerConsistency* depend on (v1.36).
    ("AtomicFIFO", [ABSENT, beta(true)]),
    (
        "ClearingNominatedNodeNameAfterBinding",
        [beta(true), beta(true)],
    ),
    ("DRAAdminAccess", [beta(true), beta(true)]),
    ("DRAConsumableCapacity", [alpha(), beta(true)]),
    ("DRADeviceBindingConditions", [alpha(), beta(true)]),
    ("DRADeviceTaints", [alpha(), beta(true)]),
    ("DRAExtendedResource", [alpha(), beta(true)]),
    ("DRAListTypeAttributes", [ABSENT, alpha()]),
    ("DRANodeAllocatableResources", [ABSENT, alpha()]),
    ("DRAPartitionableDevices", [alpha(), beta(true)]),
    ("DRAPrioritizedList", [beta(true), beta(true)]),
    ("DRAResourceClaimDeviceStatus", [beta(true), beta(true)]),
    ("DRASchedulerFilterTimeout", [beta(true), beta(true)]),
    ("DRAWorkloadResourceClaims", [ABSENT, alpha()]),
    // KEP-3973: `.status.terminatingReplicas` of Deployments and ReplicaSets; beta in v1.35.
    (
        "DeploymentReplicaSetTerminatingReplicas",
        [beta(true), beta(true)],
    ),
    ("DynamicResourceAllocation", [ga_locked(), ga_locked()]),
    ("GangScheduling", [alpha(), alpha()]),
    ("GenericWorkload", [alpha(), alpha()]),
    (
        "InPlacePodLevelResourcesVerticalScaling",
        [alpha(), beta(true)],
    ),
    ("InPlacePodVerticalScaling", [ga(), ga()]),
    ("JobManagedBy", [ga_locked(), ga_locked()]),
    ("JobPodReplacementPolicy", [ga_locked(), ga_locked()]),
    ("MatchLabelKeysInPodAffinity", [ga_locked(), ga_locked()]),
    (
        "MatchLabelKeysInPodTopologySpread",
        [beta(true), beta(true)],
    ),
    (
        "MatchLabelKeysInPodTopologySpreadSelectorMerge",
        [beta(true), beta(true)],
    ),
    ("NodeDeclaredFeatures", [alpha(), beta(true)]),
    (
        "NodeInclusionPolicyInPodTopologySpread",
        [ga_locked(), ga_locked()],
    ),
    ("NominatedNodeNameForExpectation", [beta(true), beta(true)]),
    ("OpportunisticBatching", [beta(true), beta(true)]),
    ("PodLevelResources", [beta(true), beta(true)]),
    ("SchedulerAsyncAPICalls", [beta(false), beta(false)]),
    ("SchedulerAsyncPreemption", [beta(true), beta(true)]),
    ("SchedulerPopFromBackoffQ", [beta(true), beta(true)]),
    ("SchedulerQueueingHints", [ga_locked(), ga_locked()]),
    ("SidecarContainers", [ga_locked(), ga_locked()]),
    // KEP-5647: controllers wait to observe their own writes before reconciling (v1.36 beta).
    ("StaleControllerConsistencyDaemonSet", [ABSENT, beta(true)]),
    ("StaleControllerConsistencyJob", [ABSENT, beta(true)]),
    ("StaleControllerConsistencyReplicaSet", [ABSENT, beta(true)]),
    (
        "StaleControllerConsistencyStatefulSet",
        [ABSENT, beta(true)],
    ),
    ("StorageCapacityScoring", [alpha(), alpha()]),
    ("TopologyAwareWorkloadScheduling", [ABSENT, alpha()]),
    ("VolumeAttributesClass", [ga_locked(), ga_locked()]),
    ("WorkloadAwarePreemption", [ABSENT, alpha()]),
];

/// The spec of `gate` at `version`, None when the gate does not exist there.
pub fn gate_spec(version: KubernetesVersion, gate: &str) -> Option<GateSpec> {
    GATES
        .iter()
        .find(|(n, _)| *n == gate)
        .and_then(|(_, specs)| specs[version.index()])
}

/// The feature gates of one run: its version's defaults plus the user's overrides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FeatureGates {
    version: KubernetesVersion,
    /// Only the gates set explicitly (validated against `version`'s table).
    overrides: BTreeMap<String, bool>,
}

impl FeatureGates {
    /// `version`'s defaults, nothing overridden.
    pub fn new(version: KubernetesVersion) -> FeatureGates {
        FeatureGates {
            version,
            overrides: BTreeMap::new(),
        }
    }

    pub fn version(&self) -> KubernetesVersion {
        self.version
    }

    /// The explicit overrides, by name.
    pub fn overrides(&self) -> &BTreeMap<String, bool> {
        &self.overrides
    }

    /// Whether `gate` is on. A gate unknown at this version is off (upstream's `Enabled` of
    /// an unknown gate panics; ksim's readers only ask about gates of the table).
    pub fn enabled(&self, gate: &str) -> bool {
        if let Some(v) = self.overrides.get(gate) {
            return *v;
        }
        gate_spec(self.version, gate).is_some_and(|s| s.default)
    }

    /// upstream `featureGate.SetFromMap`: every entry is checked before any is applied.
    pub fn set_from_map(&mut self, m: &BTreeMap<String, bool>) -> Result<(), VersionError> {
        for (gate, value) in m {
            let spec = gate_spec(self.version, gate).ok_or_else(|| VersionError::UnknownGate {
                gate: gate.clone(),
                version: self.version.to_string(),
            })?;
            if spec.locked && spec.default != *value {
                return Err(VersionError::Locked {
                    gate: gate.clone(),
                    value: *value,
                    locked: spec.default,
                });
            }
        }
        for (gate, value) in m {
            self.overrides.insert(gate.clone(), *value);
        }
        Ok(())
    }

    /// upstream `featureGate.Set`: `A=true,B=false` (spaces around entries allowed; an empty
    /// string sets nothing).
    pub fn set_from_str(&mut self, s: &str) -> Result<(), VersionError> {
        self.set_from_map(&parse_gate_list(s)?)
    }

    /// Every gate of this version with its value, by name (for records and reports).
    pub fn all(&self) -> BTreeMap<&'static str, bool> {
        GATES
            .iter()
            .filter(|(_, specs)| specs[self.version.index()].is_some())
            .map(|(n, _)| (*n, self.enabled(n)))
            .collect()
    }

    /// The overrides as `--feature-gates` writes them: `A=true,B=false`, by name.
    pub fn overrides_string(&self) -> String {
        self.overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Parses `A=true,B=false` into a map, as upstream `featureGate.Set` splits it.
pub fn parse_gate_list(s: &str) -> Result<BTreeMap<String, bool>, VersionError> {
    let mut m = BTreeMap::new();
    for entry in s.split(',') {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let Some((k, v)) = entry.split_once('=') else {
            return Err(VersionError::Syntax(format!(
                "missing bool value for {entry}"
            )));
        };
        let (k, v) = (k.trim(), v.trim());
        let b = match v {
            "true" | "True" | "TRUE" | "t" | "T" | "1" => true,
            "false" | "False" | "FALSE" | "f" | "F" | "0" => false,
            _ => {
                return Err(VersionError::Syntax(format!(
                "invalid value of {k}={v}, err: strconv.ParseBool: parsing {v:?}: invalid syntax"
            )))
            }
        };
        m.insert(k.to_string(), b);
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_by_minor_and_refuse_the_rest() {
        for (s, v) in [
            ("1.36", KubernetesVersion::V1_36),
            ("v1.36", KubernetesVersion::V1_36),
            ("v1.36.2", KubernetesVersion::V1_36),
            ("1.35.4", KubernetesVersion::V1_35),
            (" 1.35 ", KubernetesVersion::V1_35),
        ] {
            assert_eq!(KubernetesVersion::parse(s), Ok(v), "{s}");
        }
        for s in [
            "1.20", "1.37", "2.36", "1", "", "v1.36.x", "1.36.2.1", "1.3", "latest",
        ] {
            let e = KubernetesVersion::parse(s).unwrap_err().to_string();
            assert!(e.contains("1.35, 1.36"), "{s}: {e}");
        }
        assert_eq!(KubernetesVersion::default(), KubernetesVersion::V1_36);
    }

    #[test]
    fn defaults_differ_where_v136_changed_them() {
        let (a, b) = (
            FeatureGates::new(KubernetesVersion::V1_35),
            FeatureGates::new(KubernetesVersion::V1_36),
        );
        for g in [
            "NodeDeclaredFeatures",
            "DRAExtendedResource",
            "DRAConsumableCapacity",
            "DRADeviceTaints",
            "DRAPartitionableDevices",
            "DRADeviceBindingConditions",
            "InPlacePodLevelResourcesVerticalScaling",
        ] {
            assert!(!a.enabled(g) && b.enabled(g), "{g}");
        }
        for g in [
            "SchedulerAsyncAPICalls",
            "GangScheduling",
            "GenericWorkload",
        ] {
            assert!(!a.enabled(g) && !b.enabled(g), "{g}");
        }
        for g in [
            "NominatedNodeNameForExpectation",
            "ClearingNominatedNodeNameAfterBinding",
            "OpportunisticBatching",
            "DeploymentReplicaSetTerminatingReplicas",
        ] {
            assert!(a.enabled(g) && b.enabled(g), "{g}");
        }
        assert!(b.enabled("StaleControllerConsistencyJob"));
        assert!(!a.enabled("StaleControllerConsistencyJob"));
    }

    #[test]
    fn setting_gates_as_upstream_refuses_them() {
        let mut g = FeatureGates::new(KubernetesVersion::V1_36);
        g.set_from_str("NodeDeclaredFeatures=false, DRADeviceTaints=true")
            .unwrap();
        assert!(!g.enabled("NodeDeclaredFeatures"));
        assert_eq!(
            g.overrides_string(),
            "DRADeviceTaints=true,NodeDeclaredFeatures=false"
        );
        // Unknown at this version.
        let mut g35 = FeatureGates::new(KubernetesVersion::V1_35);
        let e = g35
            .set_from_str("StaleControllerConsistencyJob=true")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "unrecognized feature gate: StaleControllerConsistencyJob (Kubernetes 1.35)"
        );
        let e = g.set_from_str("NoSuchGate=true").unwrap_err();
        assert!(matches!(e, VersionError::UnknownGate { .. }));
        // Locked GA gate: its default may be restated, not changed.
        g.set_from_str("DynamicResourceAllocation=true").unwrap();
        let e = g
            .set_from_str("DynamicResourceAllocation=false")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true"
        );
        // Nothing of a refused map is applied.
        let mut g2 = FeatureGates::new(KubernetesVersion::V1_36);
        assert!(g2
            .set_from_str("DRADeviceTaints=false,NoSuchGate=true")
            .is_err());
        assert!(g2.enabled("DRADeviceTaints"));
        for bad in ["NodeDeclaredFeatures", "NodeDeclaredFeatures=yes"] {
            assert!(matches!(g2.set_from_str(bad), Err(VersionError::Syntax(_))));
        }
    }

    #[test]
    fn the_table_is_sorted_and_has_a_column_per_version() {
        for w in GATES.windows(2) {
            assert!(w[0].0 < w[1].0, "{} before {}", w[0].0, w[1].0);
        }
        assert_eq!(GATES[0].1.len(), KubernetesVersion::ALL.len());
    }

    #[test]
    fn yaml_numbers_and_strings_deserialize() {
        let v: KubernetesVersion = serde_json::from_str("1.35").unwrap();
        assert_eq!(v, KubernetesVersion::V1_35);
        let v: KubernetesVersion = serde_json::from_str("\"v1.36.2\"").unwrap();
        assert_eq!(v, KubernetesVersion::V1_36);
        assert!(serde_json::from_str::<KubernetesVersion>("1.2").is_err());
    }
}
