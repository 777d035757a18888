use crate::inventory::*;

fn load(text: &str) -> super::super::Loaded {
    super::super::load_texts(vec![("site.yaml".into(), text.to_string())])
}

const SITE_CONFIG: &str = r#"apiVersion: ran.openshift.io/v1
kind: SiteConfig
metadata: {name: edge, namespace: edge}
spec:
  baseDomain: example.com
  pullSecretRef: {name: ps}
  clusterImageSetNameRef: img
  clusters:
  - clusterName: a
    apiVIP: 192.0.2.5
    ingressVIP: 192.0.2.6
    machineNetwork: [{cidr: 192.0.2.0/24}]
    serviceNetwork: [172.30.0.0/16]
    nodes:
    - {hostName: a0, role: master, bootMACAddress: "02:00:00:00:00:01"}
    - {hostName: a1, role: master, bootMACAddress: "02:00:00:00:00:02"}
    - {hostName: a2, role: master, bootMACAddress: "02:00:00:00:00:03"}
  - clusterName: b
    baseDomain: other.example.com
    nodes:
    - hostName: b0
      bmcAddress: redfish-virtualmedia://198.51.100.1/redfish/v1/Systems/1
      bmcCredentialsName: {name: b0-bmc}
      nodeLabels: {rack: r1}
      nodeNetwork:
        interfaces: [{name: nic0, macAddress: "02:00:00:00:01:01"}]
        config: {interfaces: [{name: nic0, type: ethernet, state: up}]}
"#;

/// Each cluster of a SiteConfig is its own cluster, with the site's
/// defaults where it gives none; singular VIPs read as lists. A
/// cluster's `baseDomain` is the CRD's, not the generator's: it reads
/// the site's, and says so.
#[test]
fn a_siteconfig_is_a_cluster_per_entry_with_the_site_defaults() {
    let loaded = load(SITE_CONFIG);
    let said: Vec<(crate::Severity, crate::Code, u32)> = loaded
        .diagnostics
        .iter()
        .map(|d| (d.severity, d.code, d.span.unwrap().line))
        .collect();
    assert_eq!(
        said,
        vec![(crate::Severity::Warning, crate::Code::UnknownField, 19)]
    );
    let clusters = loaded.clusters();
    assert_eq!(clusters.len(), 2);
    let (a, b) = (clusters[0], clusters[1]);
    assert_eq!(a.kind, Some(InputKind::SiteConfig));
    assert_eq!(a.cluster.name.as_ref().unwrap().value, "a");
    assert_eq!(a.cluster.base_domain.as_ref().unwrap().value, "example.com");
    assert_eq!(b.cluster.base_domain.as_ref().unwrap().value, "example.com");
    assert_eq!(a.cluster.api_vips[0].value.to_string(), "192.0.2.5");
    assert_eq!(a.cluster.ingress_vips[0].value.to_string(), "192.0.2.6");
    assert_eq!(
        a.cluster.machine_networks[0].value.to_string(),
        "192.0.2.0/24"
    );
    assert_eq!(a.hosts.len(), 3);
    assert_eq!(a.cluster.control_plane_replicas, Some(3));
    // The one node of `b` has no role: a single node is the control plane.
    let b0 = &b.hosts[0];
    assert_eq!(b0.role.value, Role::Master);
    assert_eq!(
        b0.bmc.as_ref().unwrap().credentials.as_ref().unwrap().value,
        "b0-bmc"
    );
    assert_eq!(b0.labels["rack"], "r1");
    assert_eq!(b0.nics[0].name.value, "nic0");
    assert!(b0.nics_listed && b0.network.is_some());
    // Kept as given (less nodes) for render.
    let z = a.cluster.ztp.as_ref().unwrap();
    assert!(z.entry.get("nodes").is_none() && z.entry.get("serviceNetwork").is_some());
    assert!(z.site.as_ref().unwrap().get("clusters").is_none());
}

/// A field neither CRD has is an unknown field at its key; a node
/// without `hostName` and a site without clusters are missing fields.
#[test]
fn unknown_and_missing_fields_are_located() {
    let text = "apiVersion: siteconfig.open-cluster-management.io/v1alpha1\nkind: ClusterInstance\nmetadata: {name: s}\nspec:\n  clusterName: s\n  apiVIP: 192.0.2.5\n  nodes:\n  - {role: master, bootMacAddress: x}\n";
    let loaded = load(text);
    let found: Vec<(&str, u32)> = loaded
        .diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.span.map(|s| s.line).unwrap_or(0)))
        .collect();
    assert!(found.contains(&("unknown-field", 6)), "{found:?}");
    assert!(found.contains(&("unknown-field", 8)), "{found:?}");
    assert!(found.contains(&("missing-field", 8)), "{found:?}");
    let empty = "apiVersion: ran.openshift.io/v2\nkind: SiteConfig\nmetadata: {name: s}\nspec: {baseDomain: x}\n";
    let loaded = load(empty);
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.code.as_str() == "missing-field"),
        "{:?}",
        loaded.diagnostics
    );
}

/// One site alone is the inputs' cluster (every single-cluster command
/// takes it); beside another cluster's files, sites stay apart.
#[test]
fn one_site_is_the_cluster_and_sites_beside_others_stay_apart() {
    let one = "apiVersion: siteconfig.open-cluster-management.io/v1alpha1\nkind: ClusterInstance\nmetadata: {name: s}\nspec:\n  clusterName: s\n  nodes: [{hostName: s0}]\n";
    let loaded = load(one);
    assert!(loaded.fleet.is_empty());
    assert_eq!(loaded.inventory.kind, Some(InputKind::ClusterInstance));
    let mixed = super::super::load_texts(vec![
        ("s.yaml".into(), one.to_string()),
        (
            "state.yml".into(),
            "interfaces: [{name: eth0, type: ethernet, state: up}]\n".into(),
        ),
    ]);
    assert_eq!(mixed.fleet.len(), 1);
    assert_eq!(mixed.clusters().len(), 2);
}
