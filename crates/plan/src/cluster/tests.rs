use super::*;

fn load(text: &str) -> Inventory {
    crate::load_clean(text.into())
}

const BASE: &str = "nodenet: v1
cluster:
  name: c
  baseDomain: example.com
  machineNetworks: [10.0.0.0/24]
  apiVIPs: [10.0.0.5]
  ingressVIPs: [10.0.0.4]
  provisioning: {network: Disabled}
  installConfig:
    fips: false
    networking:
      clusterNetwork: [{cidr: 10.128.0.0/14, hostPrefix: 23}]
hosts:
- name: m0
  role: master
  network:
    interfaces:
    - name: eno1
      type: ethernet
      state: up
      ipv4: {enabled: true, address: [{ip: 10.0.0.10, prefix-length: 24}]}
";

fn fields(changes: &[ClusterChange]) -> Vec<(&str, Risk)> {
    changes.iter().map(|c| (c.field.as_str(), c.risk)).collect()
}

#[test]
fn the_same_cluster_has_no_change() {
    assert_eq!(cluster_changes(&load(BASE), &load(BASE)), vec![]);
}

#[test]
fn vips_networks_and_provisioning_are_disruptive() {
    let new = BASE
        .replace("apiVIPs: [10.0.0.5]", "apiVIPs: [10.0.0.6]")
        .replace("[10.0.0.0/24]", "[10.0.2.0/23]")
        .replace("network: Disabled", "network: Managed");
    let c = cluster_changes(&load(BASE), &load(&new));
    assert_eq!(
        fields(&c),
        vec![
            ("machineNetworks", Risk::Disruptive),
            ("apiVIPs", Risk::Disruptive),
            ("provisioning.network", Risk::Disruptive),
            // m0's address, render's rendezvous host, is outside the
            // new primary machine network: agent-config loses it.
            ("rendezvousIP", Risk::Modifying),
        ]
    );
    // The new /23 holds neither m0's address nor the VIPs: said.
    assert!(
        c[0].what.contains("1 host(s) have no address in it (m0)"),
        "{}",
        c[0].what
    );
    assert!(
        c[0].what.contains("VIPs outside it: 10.0.0.6, 10.0.0.4"),
        "{}",
        c[0].what
    );
    assert!(c[1].what.contains("api.c.example.com"), "{}", c[1].what);
}

#[test]
fn carried_install_config_fields_are_compared_leaf_by_leaf() {
    let new = BASE
        .replace("fips: false", "fips: true")
        .replace("hostPrefix: 23", "hostPrefix: 24");
    let c = cluster_changes(&load(BASE), &load(&new));
    assert_eq!(
        fields(&c),
        vec![
            ("install-config fips", Risk::Disruptive),
            ("install-config networking.clusterNetwork", Risk::Disruptive),
        ]
    );
    assert_eq!((c[0].old.as_str(), c[0].new.as_str()), ("false", "true"));
    assert!(c[0].what.contains("cannot be changed"), "{}", c[0].what);
}
