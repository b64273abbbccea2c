//! In-tree → CSI translation, as `k8s.io/csi-translation-lib` does it for the parts scheduling
//! reads: which in-tree plugin a volume belongs to, the CSI driver it migrates to, the CSI
//! volume handle, and the rewritten PV node affinity (`translateTopologyFromInTreeToCSI`).
//!
//! Deliberate difference: ksim models only the GCE PD and AWS EBS volume sources (PV and
//! inline); the other migratable plugins (Azure Disk/File, Cinder, vSphere, Portworx) are known
//! by name only, which is all a StorageClass provisioner needs.

use ksim_api::storage::{CsiNode, PersistentVolume};
use ksim_api::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Volume};

pub const GCE_PD_PLUGIN: &str = "kubernetes.io/gce-pd";
pub const AWS_EBS_PLUGIN: &str = "kubernetes.io/aws-ebs";
pub const AZURE_DISK_PLUGIN: &str = "kubernetes.io/azure-disk";
pub const AZURE_FILE_PLUGIN: &str = "kubernetes.io/azure-file";
pub const CINDER_PLUGIN: &str = "kubernetes.io/cinder";
pub const VSPHERE_PLUGIN: &str = "kubernetes.io/vsphere-volume";
pub const PORTWORX_PLUGIN: &str = "kubernetes.io/portworx-volume";

pub const GCE_PD_DRIVER: &str = "pd.csi.storage.gke.io";
pub const AWS_EBS_DRIVER: &str = "ebs.csi.aws.com";

/// The CSI topology keys the GCE PD and EBS drivers use.
const GCE_PD_TOPOLOGY_KEY: &str = "topology.gke.io/zone";
const AWS_EBS_TOPOLOGY_KEY: &str = "topology.ebs.csi.aws.com/zone";

const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
const LABEL_REGION: &str = "topology.kubernetes.io/region";
const LABEL_BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const LABEL_BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const MULTI_ZONE_DELIMITER: &str = "__";
const UNSPECIFIED: &str = "UNSPECIFIED";

/// In-tree plugin name → CSI driver name (`GetCSINameFromInTreeName`) for every plugin the
/// translation library knows (`IsMigratableIntreePluginByName`).
pub fn csi_driver_for_plugin(plugin: &str) -> Option<&'static str> {
    Some(match plugin {
        GCE_PD_PLUGIN => GCE_PD_DRIVER,
        AWS_EBS_PLUGIN => AWS_EBS_DRIVER,
        AZURE_DISK_PLUGIN => "disk.csi.azure.com",
        AZURE_FILE_PLUGIN => "file.csi.azure.com",
        CINDER_PLUGIN => "cinder.csi.openstack.org",
        VSPHERE_PLUGIN => "csi.vsphere.vmware.com",
        PORTWORX_PLUGIN => "pxd.portworx.com",
        _ => return None,
    })
}

/// The in-tree plugin of a PV's source, when it is migratable (`IsPVMigratable` +
/// `GetInTreePluginNameFromSpec`).
pub fn pv_plugin(pv: &PersistentVolume) -> Option<&'static str> {
    if pv.spec.gce_persistent_disk.is_some() {
        Some(GCE_PD_PLUGIN)
    } else if pv.spec.aws_elastic_block_store.is_some() {
        Some(AWS_EBS_PLUGIN)
    } else {
        None
    }
}

/// The in-tree plugin of an inline pod volume, when it is migratable (`IsInlineMigratable`).
pub fn inline_plugin(vol: &Volume) -> Option<&'static str> {
    if vol.gce_persistent_disk.is_some() {
        Some(GCE_PD_PLUGIN)
    } else if vol.aws_elastic_block_store.is_some() {
        Some(AWS_EBS_PLUGIN)
    } else {
        None
    }
}

fn migrated_on_node(csi_node: &CsiNode, plugin: &str) -> bool {
    csi_node.migrated_plugins().any(|p| p == plugin)
}

/// NodeVolumeLimits' `isCSIMigrationOn`: a node with a CSINode counts GCE PD, EBS, Azure Disk
/// and Cinder volumes as CSI without consulting the migrated-plugins annotation; Portworx
/// needs the annotation; the others are never counted.
pub fn limits_migration_on(csi_node: Option<&CsiNode>, plugin: &str) -> bool {
    let Some(n) = csi_node else {
        return false;
    };
    match plugin {
        GCE_PD_PLUGIN | AWS_EBS_PLUGIN | AZURE_DISK_PLUGIN | CINDER_PLUGIN => true,
        PORTWORX_PLUGIN => migrated_on_node(n, plugin),
        _ => false,
    }
}

/// VolumeBinding's `isCSIMigrationOnForPlugin` && `isPluginMigratedToCSIOnNode`: the plugin is
/// migratable and the node's CSINode lists it in the migrated-plugins annotation.
pub fn binding_migration_on(csi_node: Option<&CsiNode>, plugin: &str) -> bool {
    let on_for_plugin = matches!(
        plugin,
        GCE_PD_PLUGIN | AWS_EBS_PLUGIN | AZURE_DISK_PLUGIN | CINDER_PLUGIN | PORTWORX_PLUGIN
    );
    on_for_plugin && csi_node.is_some_and(|n| migrated_on_node(n, plugin))
}

/// A translation failed (upstream returns an error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    #[error(
        "failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume ({0})"
    )]
    EbsVolumeId(String),
    #[error("failed to get region from zones: {0}")]
    Region(String),
}

/// The CSI (driver, volume handle) of a migratable PV (`TranslateInTreePVToCSI`).
pub fn pv_csi_handle(
    pv: &PersistentVolume,
) -> Option<Result<(&'static str, String), TranslateError>> {
    if let Some(gce) = &pv.spec.gce_persistent_disk {
        return Some(gce_pv_handle(pv, &gce.pd_name).map(|h| (GCE_PD_DRIVER, h)));
    }
    if let Some(ebs) = &pv.spec.aws_elastic_block_store {
        return Some(ebs_volume_id(&ebs.volume_id).map(|h| (AWS_EBS_DRIVER, h)));
    }
    None
}

/// The CSI (driver, volume handle) of a migratable inline volume
/// (`TranslateInTreeInlineVolumeToCSI`): an inline GCE PD has no zone, so its handle names the
/// zone `UNSPECIFIED`.
pub fn inline_csi_handle(vol: &Volume) -> Option<Result<(&'static str, String), TranslateError>> {
    if let Some(gce) = &vol.gce_persistent_disk {
        return Some(Ok((
            GCE_PD_DRIVER,
            format!(
                "projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{}",
                gce.pd_name
            ),
        )));
    }
    if let Some(ebs) = &vol.aws_elastic_block_store {
        return Some(ebs_volume_id(&ebs.volume_id).map(|h| (AWS_EBS_DRIVER, h)));
    }
    None
}

fn gce_pv_handle(pv: &PersistentVolume, pd_name: &str) -> Result<String, TranslateError> {
    let labels = &pv.metadata.labels;
    let zones_label = match labels.get(LABEL_BETA_ZONE).map(String::as_str) {
        Some(z) if !z.is_empty() => z,
        _ => labels.get(LABEL_ZONE).map(String::as_str).unwrap_or(""),
    };
    let zones: Vec<&str> = zones_label.split(MULTI_ZONE_DELIMITER).collect();
    if zones.len() == 1 && !zones[0].is_empty() {
        Ok(format!(
            "projects/{UNSPECIFIED}/zones/{}/disks/{pd_name}",
            zones[0]
        ))
    } else if zones.len() > 1 {
        let region = gce_region_from_zones(&zones)?;
        Ok(format!(
            "projects/{UNSPECIFIED}/regions/{region}/disks/{pd_name}"
        ))
    } else {
        Ok(format!(
            "projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{pd_name}"
        ))
    }
}

fn gce_region_from_zones(zones: &[&str]) -> Result<String, TranslateError> {
    let mut region: Option<String> = None;
    for z in zones {
        let parts: Vec<&str> = z.split('-').collect();
        if parts.len() != 3 {
            return Err(TranslateError::Region(format!(
                "zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {z}"
            )));
        }
        let r = format!("{}-{}", parts[0], parts[1]);
        match &region {
            None => region = Some(r),
            Some(prev) if *prev == r => {}
            Some(_) => {
                return Err(TranslateError::Region(
                    "multiple or no regions gotten from zones".into(),
                ))
            }
        }
    }
    region.ok_or_else(|| TranslateError::Region("no zones specified".into()))
}

/// `KubernetesVolumeIDToEBSVolumeID`: `aws://<zone>/<vol-id>`, `aws:///<vol-id>` or a bare id.
fn ebs_volume_id(id: &str) -> Result<String, TranslateError> {
    let Some(rest) = id.strip_prefix("aws://") else {
        return Ok(id.to_string());
    };
    // The URL's path: everything after the host part.
    let path = match rest.find('/') {
        Some(i) => &rest[i..],
        None => "",
    };
    let vol = path.trim_matches('/');
    if vol.starts_with("vol-") && !vol.contains('/') {
        Ok(vol.to_string())
    } else {
        Err(TranslateError::EbsVolumeId(id.to_string()))
    }
}

/// The PV's required node affinity after `TranslateInTreePVToCSI` (what VolumeBinding checks
/// on a node where the plugin is migrated): the zone key becomes the driver's topology key and
/// a beta region key becomes the GA one. A PV without a migratable source is returned as is.
pub fn translated_pv_affinity(
    pv: &PersistentVolume,
) -> Result<Option<NodeSelector>, TranslateError> {
    let key = match pv_plugin(pv) {
        Some(GCE_PD_PLUGIN) => GCE_PD_TOPOLOGY_KEY,
        Some(AWS_EBS_PLUGIN) => AWS_EBS_TOPOLOGY_KEY,
        _ => return Ok(required(pv).cloned()),
    };
    // The handle translation can fail; upstream then fails the whole translation.
    if let Some(Err(e)) = pv_csi_handle(pv) {
        return Err(e);
    }
    let mut ns = required(pv).cloned();
    let (zone_label, region_label) = topology_labels(pv);
    if has_topology_values(zone_label, ns.as_ref()) {
        replace_key(ns.as_mut(), zone_label, key);
    } else if let Some(label) = pv.metadata.labels.get(zone_label) {
        let mut zones: Vec<String> = label
            .split(MULTI_ZONE_DELIMITER)
            .map(|z| z.trim().to_string())
            .filter(|z| !z.is_empty())
            .collect();
        zones.sort();
        zones.dedup();
        // No valid zone: upstream's addTopology errors and the error is ignored.
        if !zones.is_empty() {
            let ns = ns.get_or_insert_with(NodeSelector::default);
            if ns.node_selector_terms.is_empty() {
                ns.node_selector_terms.push(NodeSelectorTerm::default());
            }
            for t in &mut ns.node_selector_terms {
                t.match_expressions.push(NodeSelectorRequirement {
                    key: key.to_string(),
                    operator: "In".into(),
                    values: zones.clone(),
                });
            }
        }
    }
    if region_label == LABEL_BETA_REGION && has_topology_values(region_label, ns.as_ref()) {
        replace_key(ns.as_mut(), region_label, LABEL_REGION);
    }
    Ok(ns)
}

fn required(pv: &PersistentVolume) -> Option<&NodeSelector> {
    pv.spec
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
}

/// `getTopologyLabel`: GA or beta labels, judged from the node affinity first, then the PV
/// labels; GA by default.
fn topology_labels(pv: &PersistentVolume) -> (&'static str, &'static str) {
    let ns = required(pv);
    if topology_key_exists(LABEL_ZONE, ns) {
        return (LABEL_ZONE, LABEL_REGION);
    }
    if topology_key_exists(LABEL_BETA_ZONE, ns) {
        return (LABEL_BETA_ZONE, LABEL_BETA_REGION);
    }
    if pv.metadata.labels.contains_key(LABEL_ZONE) {
        return (LABEL_ZONE, LABEL_REGION);
    }
    if pv.metadata.labels.contains_key(LABEL_BETA_ZONE) {
        return (LABEL_BETA_ZONE, LABEL_BETA_REGION);
    }
    (LABEL_ZONE, LABEL_REGION)
}

fn topology_key_exists(key: &str, ns: Option<&NodeSelector>) -> bool {
    ns.is_some_and(|ns| {
        ns.node_selector_terms
            .iter()
            .any(|t| t.match_expressions.iter().any(|r| r.key == key))
    })
}

/// `len(getTopologyValues(pv, key)) > 0`: the key appears in the affinity with some value.
fn has_topology_values(key: &str, ns: Option<&NodeSelector>) -> bool {
    ns.is_some_and(|ns| {
        ns.node_selector_terms.iter().any(|t| {
            t.match_expressions
                .iter()
                .any(|r| r.key == key && !r.values.is_empty())
        })
    })
}

fn replace_key(ns: Option<&mut NodeSelector>, old: &str, new: &str) {
    if let Some(ns) = ns {
        for t in &mut ns.node_selector_terms {
            for r in &mut t.match_expressions {
                if r.key == old {
                    r.key = new.to_string();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv(json: &str) -> PersistentVolume {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn gce_handles() {
        let zonal = pv(
            r#"{"metadata":{"name":"p","labels":{"topology.kubernetes.io/zone":"us-central1-a"}},
            "spec":{"gcePersistentDisk":{"pdName":"d1"}}}"#,
        );
        assert_eq!(
            pv_csi_handle(&zonal).unwrap().unwrap(),
            (
                GCE_PD_DRIVER,
                "projects/UNSPECIFIED/zones/us-central1-a/disks/d1".to_string()
            )
        );
        let regional = pv(
            r#"{"metadata":{"name":"p","labels":{"topology.kubernetes.io/zone":"us-central1-a__us-central1-b"}},
            "spec":{"gcePersistentDisk":{"pdName":"d1"}}}"#,
        );
        assert_eq!(
            pv_csi_handle(&regional).unwrap().unwrap().1,
            "projects/UNSPECIFIED/regions/us-central1/disks/d1"
        );
        let bare = pv(r#"{"metadata":{"name":"p"},"spec":{"gcePersistentDisk":{"pdName":"d1"}}}"#);
        assert_eq!(
            pv_csi_handle(&bare).unwrap().unwrap().1,
            "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d1"
        );
        let local = pv(r#"{"metadata":{"name":"p"},"spec":{"local":{"path":"/x"}}}"#);
        assert!(pv_csi_handle(&local).is_none());
    }

    #[test]
    fn ebs_ids() {
        assert_eq!(ebs_volume_id("vol-1").unwrap(), "vol-1");
        assert_eq!(ebs_volume_id("aws://us-east-1a/vol-2").unwrap(), "vol-2");
        assert_eq!(ebs_volume_id("aws:///vol-3").unwrap(), "vol-3");
        assert!(ebs_volume_id("aws://zone/bad").is_err());
    }

    #[test]
    fn gce_affinity_zone_key_rewritten() {
        let p = pv(
            r#"{"metadata":{"name":"p"},"spec":{"gcePersistentDisk":{"pdName":"d"},
            "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":
            [{"key":"topology.kubernetes.io/zone","operator":"In","values":["a"]}]}]}}}}"#,
        );
        let ns = translated_pv_affinity(&p).unwrap().unwrap();
        assert_eq!(
            ns.node_selector_terms[0].match_expressions[0].key,
            "topology.gke.io/zone"
        );
        // From labels when the affinity has no zone.
        let p = pv(
            r#"{"metadata":{"name":"p","labels":{"failure-domain.beta.kubernetes.io/zone":"us-c1-b__us-c1-a"}},
            "spec":{"gcePersistentDisk":{"pdName":"d"}}}"#,
        );
        let ns = translated_pv_affinity(&p).unwrap().unwrap();
        let r = &ns.node_selector_terms[0].match_expressions[0];
        assert_eq!(r.key, "topology.gke.io/zone");
        assert_eq!(r.values, vec!["us-c1-a".to_string(), "us-c1-b".to_string()]);
        // Zones that name no region: the translation fails, as upstream's.
        let p = pv(
            r#"{"metadata":{"name":"p","labels":{"topology.kubernetes.io/zone":"b__a"}},
            "spec":{"gcePersistentDisk":{"pdName":"d"}}}"#,
        );
        assert!(translated_pv_affinity(&p).is_err());
    }

    #[test]
    fn migration_rules() {
        let with_ann: CsiNode = serde_json::from_str(
            r#"{"metadata":{"name":"n","annotations":{"storage.alpha.kubernetes.io/migrated-plugins":"kubernetes.io/gce-pd"}}}"#,
        )
        .unwrap();
        let without: CsiNode = serde_json::from_str(r#"{"metadata":{"name":"n"}}"#).unwrap();
        assert!(limits_migration_on(Some(&without), AWS_EBS_PLUGIN));
        assert!(!limits_migration_on(None, AWS_EBS_PLUGIN));
        assert!(!limits_migration_on(Some(&with_ann), VSPHERE_PLUGIN));
        assert!(binding_migration_on(Some(&with_ann), GCE_PD_PLUGIN));
        assert!(!binding_migration_on(Some(&without), GCE_PD_PLUGIN));
        assert!(!binding_migration_on(Some(&with_ann), AWS_EBS_PLUGIN));
    }
}
