//! `controlPlane.nodeLifecycle`: the node lifecycle controller, the taint-eviction controller
//! and the kubelet heartbeat they read; each behaviour lives in its engine room
//! (`sim/nodelifecycle`, `sim/tainteviction`).

use serde::{Deserialize, Serialize};

use crate::time::SimDuration;

/// `controlPlane.nodeLifecycle`: kube-controller-manager's node lifecycle controller
/// (`pkg/controller/nodelifecycle`), the taint-eviction controller
/// (`pkg/controller/tainteviction`) and the kubelet's heartbeat they read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct NodeLifecycleConfig {
    /// Both controllers run (upstream: enabled in `--controllers` by default). Off, node
    /// conditions and NoExecute taints change nothing but the scheduler's view, as before.
    pub enabled: bool,
    /// `--node-monitor-period` (5 s): how often `monitorNodeHealth` runs.
    pub node_monitor_period: SimDuration,
    /// `--node-monitor-grace-period` (50 s since v1.32): how long a node's heartbeat may be
    /// stale before its Ready condition becomes Unknown.
    pub node_monitor_grace_period: SimDuration,
    /// `--node-eviction-rate` (0.1 nodes/s): NoExecute taints per second per zone while the
    /// zone is Normal (or FullDisruption while another zone is not).
    pub node_eviction_rate: f64,
    /// `--secondary-node-eviction-rate` (0.01 nodes/s): the rate in a PartialDisruption zone
    /// larger than `largeClusterSizeThreshold` (smaller zones stop tainting).
    pub secondary_node_eviction_rate: f64,
    /// `--large-cluster-size-threshold` (50 nodes).
    pub large_cluster_size_threshold: i32,
    /// `--unhealthy-zone-threshold` (0.55): the share of not-Ready nodes (at least 3) that
    /// puts a zone in PartialDisruption.
    pub unhealthy_zone_threshold: f64,
    /// The kubelet's lease renew interval (10 s: `nodeLeaseDurationSeconds` 40 × the node
    /// lease controller's renew fraction 0.25). A failed node's last renewal is the last
    /// multiple of it at or before the failure.
    pub lease_renew_interval: SimDuration,
}

impl Default for NodeLifecycleConfig {
    fn default() -> Self {
        NodeLifecycleConfig {
            enabled: true,
            node_monitor_period: SimDuration::from_secs(5),
            node_monitor_grace_period: SimDuration::from_secs(50),
            node_eviction_rate: 0.1,
            secondary_node_eviction_rate: 0.01,
            large_cluster_size_threshold: 50,
            unhealthy_zone_threshold: 0.55,
            lease_renew_interval: SimDuration::from_secs(10),
        }
    }
}

impl NodeLifecycleConfig {
    /// Checks the settings; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("nodeMonitorPeriod", self.node_monitor_period),
            ("nodeMonitorGracePeriod", self.node_monitor_grace_period),
            ("leaseRenewInterval", self.lease_renew_interval),
        ];
        for (name, d) in positive {
            if d.micros() <= 0 {
                return Err(format!(
                    "controlPlane.nodeLifecycle.{name}: must be positive, got {d}"
                ));
            }
        }
        for (name, r) in [
            ("nodeEvictionRate", self.node_eviction_rate),
            (
                "secondaryNodeEvictionRate",
                self.secondary_node_eviction_rate,
            ),
        ] {
            if !r.is_finite() || r < 0.0 {
                return Err(format!(
                    "controlPlane.nodeLifecycle.{name}: must be a rate >= 0, got {r}"
                ));
            }
        }
        if !(self.unhealthy_zone_threshold.is_finite()
            && (0.0..=1.0).contains(&self.unhealthy_zone_threshold))
        {
            return Err(format!(
                "controlPlane.nodeLifecycle.unhealthyZoneThreshold: must be in [0, 1], got {}",
                self.unhealthy_zone_threshold
            ));
        }
        if self.large_cluster_size_threshold < 0 {
            return Err(format!(
                "controlPlane.nodeLifecycle.largeClusterSizeThreshold: must be >= 0, got {}",
                self.large_cluster_size_threshold
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control_plane::ControlPlane;

    #[test]
    fn defaults_are_upstream_and_fields_are_checked() {
        let d = NodeLifecycleConfig::default();
        assert_eq!(d.node_monitor_period, SimDuration::from_secs(5));
        assert_eq!(d.node_monitor_grace_period, SimDuration::from_secs(50));
        assert_eq!(
            (d.node_eviction_rate, d.secondary_node_eviction_rate),
            (0.1, 0.01)
        );
        assert_eq!(d.large_cluster_size_threshold, 50);
        assert_eq!(d.unhealthy_zone_threshold, 0.55);
        assert!(d.validate().is_ok());
        let cp: ControlPlane =
            serde_json::from_str(r#"{"nodeLifecycle": {"nodeMonitorGracePeriod": "20s"}}"#)
                .unwrap();
        assert_eq!(
            cp.node_lifecycle.node_monitor_grace_period,
            SimDuration::from_secs(20)
        );
        assert!(
            serde_json::from_str::<ControlPlane>(r#"{"nodeLifecycle": {"grace": 1}}"#)
                .unwrap_err()
                .to_string()
                .contains("unknown field `grace`")
        );
        let bad = NodeLifecycleConfig {
            node_eviction_rate: -1.0,
            ..d
        };
        assert!(bad.validate().unwrap_err().contains("nodeEvictionRate"));
    }
}
