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
    if let Some(pxe) = crate::fleet::pxe_interface(cluster, host) {
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
mod tests;
