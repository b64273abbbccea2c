//! `--kubernetes-version` and `--feature-gates`, shared by `run`, `sweep`, `plan`, `bench` and
//! `conformance`: the version a run behaves as and kube-scheduler's `--feature-gates` syntax
//! (`A=true,B=false`), over the scenario's `kubernetesVersion` and `featureGates`.

use anyhow::Context;
use clap::Args;
use ksim_api::version::{parse_gate_list, FeatureGates, KubernetesVersion};

fn parse_version(s: &str) -> Result<KubernetesVersion, String> {
    KubernetesVersion::parse(s).map_err(|e| e.to_string())
}

#[derive(Args, Clone, Debug, Default)]
pub struct VersionArgs {
    /// The Kubernetes version to behave as: 1.35 or 1.36 (default: the scenario's
    /// `kubernetesVersion`, else 1.36). Its default profile, plugin behaviour and feature-gate
    /// defaults apply (docs/versions.md).
    #[arg(long, value_name = "VERSION", value_parser = parse_version)]
    pub kubernetes_version: Option<KubernetesVersion>,
    /// Feature gates as kube-scheduler takes them, `A=true,B=false`, over the scenario's
    /// `featureGates`. Unknown gates and locked GA gates are refused, per version.
    #[arg(long, value_name = "GATES")]
    pub feature_gates: Option<String>,
}

impl VersionArgs {
    /// `gates` (a scenario's) with the flags applied: the flag's version replaces the
    /// scenario's, and the scenario's gates are checked again against it, then the flag's.
    pub fn apply(&self, gates: &FeatureGates) -> anyhow::Result<FeatureGates> {
        let version = self.kubernetes_version.unwrap_or(gates.version());
        let mut out = FeatureGates::new(version);
        out.set_from_map(gates.overrides())
            .with_context(|| format!("featureGates of the scenario (Kubernetes {version})"))?;
        if let Some(s) = &self.feature_gates {
            out.set_from_str(s).context("--feature-gates")?;
        }
        Ok(out)
    }

    /// Applies the flags to a scenario before it is planned.
    pub fn apply_to_scenario(
        &self,
        scenario: &mut ksim_trace::Scenario,
        source: &str,
    ) -> anyhow::Result<()> {
        if let Some(v) = self.kubernetes_version {
            scenario.kubernetes_version = Some(v);
        }
        if let Some(s) = &self.feature_gates {
            let m = parse_gate_list(s).context("--feature-gates")?;
            scenario.feature_gates.extend(m);
        }
        // Refused here, before anything runs, as upstream refuses them at start.
        scenario
            .gates(source)
            .map_err(anyhow::Error::from)
            .context("--kubernetes-version / --feature-gates")?;
        Ok(())
    }

    /// The gates of the flags alone (commands without a scenario: `bench`, `conformance`).
    pub fn gates(&self) -> anyhow::Result<FeatureGates> {
        self.apply(&FeatureGates::default())
    }
}
