//! Which interfaces of a host carry the cluster's own traffic: a change to
//! them (or to anything beneath them) can cut the node off. Day-2 plans
//! rate changes by it, and rendered policies roll such changes out one
//! node at a time.

use std::collections::BTreeMap;

use nodenet_model::{Cluster, Host, Node};
use serde_json::Value as J;

use crate::network::Network;

/// Interface name → why it carries cluster traffic, for every interface
/// that does: those with an address in a machine network, the default
/// route's, `br-ex`, the PXE/provisioning NIC, and everything beneath
/// them (VLAN bases, bond and bridge ports, an OVS interface's bridge).
/// The uplink configure-ovs.sh takes is one; and unless a static address
/// is in a machine network, so is every interface that gets its address
/// by DHCP or autoconf: the machine network's comes that way.
pub fn cluster_traffic(host: &Host, cluster: &Cluster, state: &Node) -> BTreeMap<String, String> {
    let net = Network::read(state);
    let mut roots: Vec<(String, String)> = Vec::new();
    for a in &net.addresses {
        if let Some(m) = cluster
            .machine_networks
            .iter()
            .find(|m| m.value.contains(&a.ip))
        {
            roots.push((
                a.iface.clone(),
                format!("carries the machine network {}", m.value),
            ));
        }
    }
    for via in crate::network::default_route_interfaces(state) {
        roots.push((via, "carries the default route".to_string()));
    }
    if net.has("br-ex") {
        roots.push((
            "br-ex".into(),
            "is br-ex, OpenShift's external bridge".into(),
        ));
    }
    let pxe = host
        .pxe_interface
        .as_ref()
        .or(cluster.provisioning.interface.as_ref())
        .map(|l| l.value.clone())
        .or_else(|| {
            let mac = host.boot_mac.as_ref()?;
            Some(host.nic_with_mac(&mac.value)?.name.value.clone())
        });
    if let Some(pxe) = pxe {
        roots.push((pxe, "is the PXE/provisioning NIC".to_string()));
    }
    // configure-ovs.sh moves the uplink under br-ex: it carries the
    // node's address whether it holds it statically or by DHCP.
    if let Ok(crate::br_ex::BrExPlan::ConfigureOvs { uplinks }) = crate::br_ex::plan(host, cluster)
    {
        for uplink in uplinks {
            roots.push((
                uplink,
                "is the uplink configure-ovs.sh moves under br-ex".to_string(),
            ));
        }
    }
    // No static address in a machine network: the node's comes by DHCP
    // (or autoconf), whatever else carries the default route or PXE.
    if !roots
        .iter()
        .any(|(_, why)| why.starts_with("carries the machine network"))
    {
        for i in &net.ifaces {
            use crate::network::Family;
            if !i.absent && (i.family_dynamic(Family::V4) || i.family_dynamic(Family::V6)) {
                roots.push((
                    i.name.clone(),
                    "gets the node's address by DHCP".to_string(),
                ));
            }
        }
    }
    // Breadth first, in the order above: an interface keeps its first
    // (most telling) reason.
    let mut carriers: BTreeMap<String, String> = BTreeMap::new();
    let mut todo: std::collections::VecDeque<(String, String)> = roots.into();
    while let Some((name, why)) = todo.pop_front() {
        if carriers.contains_key(&name) {
            continue;
        }
        for lower in beneath(&net, &name) {
            if !carriers.contains_key(&lower) {
                todo.push_back((lower, format!("is beneath `{name}`, which {why}")));
            }
        }
        carriers.insert(name, why);
    }
    carriers
}

/// The interfaces directly beneath `name`: a VLAN's (or MAC-VLAN's,
/// IPVLAN's, VXLAN's) base, a bond's or bridge's ports, and for an OVS
/// interface the bridge it is a port of.
fn beneath(net: &Network, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for iface in net.ifaces.iter().filter(|i| i.name == name && !i.absent) {
        for section in [
            "vlan",
            "mac-vlan",
            "mac-vtap",
            "ipvlan",
            "vxlan",
            "infiniband",
        ] {
            if let Some(base) = iface
                .get(section)
                .and_then(|s| s.get("base-iface"))
                .and_then(Node::scalar_text)
            {
                out.push(base);
            }
        }
        out.extend(iface.ports.iter().map(|p| p.name.clone()));
        if iface.is("ovs-interface") {
            out.extend(
                net.ifaces
                    .iter()
                    .filter(|b| b.is("ovs-bridge") && b.ports.iter().any(|p| p.name == name))
                    .map(|b| b.name.clone()),
            );
        }
    }
    out.retain(|n| n != name);
    out
}

/// How many of the nodes a policy matches kubernetes-nmstate changes at
/// once: `maxUnavailable` as a count, or a percentage of the matching
/// nodes rounded up, and never fewer than one (kubernetes-nmstate
/// `pkg/node/nodes.go`, `ScaledMaxUnavailableNodeCount`:
/// `intstr.GetScaledValueFromIntOrPercent(&v, matchingNodes, true)`, then
/// at least 1). 50 % of three masters is two; `None` for a value it
/// cannot read.
pub fn nodes_at_once(max_unavailable: &J, matching: usize) -> Option<usize> {
    let n = match max_unavailable {
        J::Number(n) => usize::try_from(n.as_u64()?).ok()?,
        J::String(s) => match s.strip_suffix('%') {
            Some(p) => p
                .trim()
                .parse::<usize>()
                .ok()?
                .saturating_mul(matching)
                .div_ceil(100),
            None => s.trim().parse().ok()?,
        },
        _ => return None,
    };
    Some(n.max(1))
}

/// Whether a pool's nodes run etcd (masters, and an arbiter): more than
/// one of them out at once can cost the cluster its quorum.
pub fn is_control_plane(pool: &str) -> bool {
    matches!(pool, "master" | "arbiter")
}

#[cfg(test)]
mod tests {
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
}
