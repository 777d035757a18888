use super::*;
use nodenet_model::{Located, Span};

fn host(state: &str, boot_mac: Option<&str>, nics: &[(&str, &str)]) -> (Host, Node) {
    let node = nodenet_model::yaml::parse(state, 0).unwrap();
    let span = Span::default();
    let mut h = Host::new(
        Located::new("h".into(), span),
        nodenet_model::InputKind::Inventory,
    );
    h.boot_mac = boot_mac.map(|m| Located::new(m.to_string(), span));
    h.nics = nics
        .iter()
        .map(|(n, m)| {
            nodenet_model::Nic::new(
                Located::new(n.to_string(), span),
                Some(Located::new(m.to_string(), span)),
            )
        })
        .collect();
    (h, node)
}

const BOND_VLANS: &str = r#"
interfaces:
- {name: eno1, type: ethernet}
- {name: eno2, type: ethernet}
- {name: eno3, type: ethernet}
- {name: eno4, type: ethernet}
- {name: bond0, type: bond, link-aggregation: {mode: 802.3ad, port: [eno1, eno2]}}
- name: bond0.110
  type: vlan
  vlan: {base-iface: bond0, id: 110}
  ipv4: {enabled: true, address: [{ip: 192.168.111.20, prefix-length: 24}]}
- name: bond0.120
  type: vlan
  vlan: {base-iface: bond0, id: 120}
  ipv4: {enabled: true, address: [{ip: 192.168.120.20, prefix-length: 24}]}
- name: storage
  type: ethernet
  ipv4: {enabled: true, address: [{ip: 10.9.0.20, prefix-length: 24}]}
"#;

#[test]
fn the_machine_network_and_everything_beneath_it() {
    let (h, state) = host(
        BOND_VLANS,
        Some("52:54:00:00:00:03"),
        &[("eno3", "52:54:00:00:00:03")],
    );
    let cluster = Cluster {
        machine_networks: vec![Located::new(
            "192.168.111.0/24".parse().unwrap(),
            Span::default(),
        )],
        ..Cluster::default()
    };
    let c = cluster_traffic(&h, &cluster, &state);
    let names: Vec<&str> = c.keys().map(String::as_str).collect();
    // Not bond0.120 nor storage (other networks) nor eno4 (unused).
    assert_eq!(names, ["bond0", "bond0.110", "eno1", "eno2", "eno3"]);
    assert!(c["eno1"].contains("beneath `bond0`"), "{}", c["eno1"]);
    assert!(c["bond0.110"].contains("machine network 192.168.111.0/24"));
    assert!(c["eno3"].contains("PXE"));
}

#[test]
fn the_default_route_and_br_ex_with_its_bridge() {
    let (h, state) = host(
        r#"
interfaces:
- {name: enp2s0, type: ethernet}
- {name: br-ex, type: ovs-bridge, bridge: {port: [{name: enp2s0}, {name: br-ex}]}}
- {name: br-ex, type: ovs-interface, ipv4: {enabled: true, dhcp: true}}
- {name: eth9, type: ethernet, ipv4: {enabled: true, address: [{ip: 10.0.0.2, prefix-length: 24}]}}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: eth9}
"#,
        None,
        &[],
    );
    let c = cluster_traffic(&h, &Cluster::default(), &state);
    let names: Vec<&str> = c.keys().map(String::as_str).collect();
    assert_eq!(names, ["br-ex", "enp2s0", "eth9"]);
    assert!(c["eth9"].contains("default route"));
}

#[test]
fn without_networks_or_routes_dhcp_stands_for_the_node_address() {
    let (h, state) = host(
            "interfaces:\n- {name: eth0, type: ethernet, ipv4: {enabled: true, dhcp: true}}\n- {name: eth1, type: ethernet}\n",
            None,
            &[],
        );
    let c = cluster_traffic(&h, &Cluster::default(), &state);
    assert_eq!(c.keys().collect::<Vec<_>>(), ["eth0"]);
}

/// The built-in example's shape: the PXE NIC apart, the machine
/// network by DHCP on a VLAN of the bond. The PXE NIC is no reason to
/// forget the DHCP VLAN and everything beneath it.
#[test]
fn a_dhcp_machine_network_beside_a_pxe_nic_carries_the_bond_beneath_it() {
    let (h, state) = host(
        r#"
interfaces:
- {name: eno1, type: ethernet, ipv4: {enabled: false}}
- {name: eno2, type: ethernet}
- {name: eno3, type: ethernet}
- {name: eno4, type: ethernet}
- {name: bond0, type: bond, link-aggregation: {mode: 802.3ad, port: [eno2, eno3]}}
- {name: bond0.110, type: vlan, vlan: {base-iface: bond0, id: 110}, ipv4: {enabled: true, dhcp: true}}
"#,
        Some("52:54:00:00:00:01"),
        &[("eno1", "52:54:00:00:00:01")],
    );
    let cluster = Cluster {
        machine_networks: vec![Located::new(
            "192.168.110.0/24".parse().unwrap(),
            Span::default(),
        )],
        ..Cluster::default()
    };
    let c = cluster_traffic(&h, &cluster, &state);
    let names: Vec<&str> = c.keys().map(String::as_str).collect();
    assert_eq!(names, ["bond0", "bond0.110", "eno1", "eno2", "eno3"]);
    assert!(c["bond0"].contains("beneath `bond0.110`"), "{}", c["bond0"]);
}
