//! OpenStack `network_data.json`: what Ironic puts on a config drive and
//! the baremetal-operator's `networkData` Secret carries for Cluster API
//! Metal3 and plain Ironic nodes, read by cloud-init (or glean) on Ubuntu,
//! CentOS or Flatcar images. Built from the host's NMState intent:
//!
//! - `links`: each NIC as a `phy` link by its MAC, each bond with its mode,
//!   ports and options (`bond_<option>`, as cloud-init reads them), each
//!   VLAN with its parent and the MAC it inherits (the schema wants one);
//! - `networks`: per interface and family, DHCP (`ipv4_dhcp`, `ipv6_dhcp`,
//!   SLAAC `ipv6_slaac`) or one network per static address, the routes
//!   through that interface on its first network of the family;
//! - `services`: the DNS servers.
//!
//! What the format cannot carry (bridges, Open vSwitch, a NIC without a
//! MAC, a route through an interface without an address of its family) is
//! an error for this target, located at the intent.

use serde_json::{json, Map, Value as J};

use nodenet_model::{Diagnostic, Host, Node};

use crate::intent::{text, Intent};

/// nmstate bond options cloud-init passes on (as `bond_<option>`).
pub(crate) const BOND_OPTIONS: &[&str] = &[
    "miimon",
    "xmit_hash_policy",
    "lacp_rate",
    "updelay",
    "downdelay",
    "primary",
    "ad_select",
    "arp_interval",
    "arp_ip_target",
    "fail_over_mac",
    "primary_reselect",
    "num_grat_arp",
];

const FORMAT: &str = "network_data.json";

fn unsupported(host: &Host, at: &Node, what: String) -> Diagnostic {
    crate::intent::unsupported(host, at, FORMAT, what)
}

/// The host's `network_data.json`, or why it cannot be written.
pub fn network_data(host: &Host) -> Result<J, Vec<Diagnostic>> {
    let Some(state) = &host.network else {
        return Ok(json!({"links": [], "networks": [], "services": []}));
    };
    let intent = Intent::read(host, state);
    let mut errors = Vec::new();
    let links = links_of(host, &intent, &mut errors);
    let networks = networks_of(host, &intent, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let services: Vec<J> = intent
        .dns
        .iter()
        .map(|s| json!({"type": "dns", "address": s}))
        .collect();
    Ok(json!({"links": links, "networks": networks, "services": services}))
}

/// The links: a `phy` per NIC (found by MAC), then the bonds and VLANs.
fn links_of(host: &Host, intent: &Intent, errors: &mut Vec<Diagnostic>) -> Vec<J> {
    let mut links = Vec::new();
    let mut phy = |name: &str, at: &Node, mtu: Option<u64>, errors: &mut Vec<Diagnostic>| {
        match intent.nic_mac(name) {
            Some(mac) => {
                let mut l = Map::new();
                l.insert("id".into(), json!(name));
                l.insert("type".into(), json!("phy"));
                l.insert("ethernet_mac_address".into(), json!(mac));
                if let Some(m) = mtu {
                    l.insert("mtu".into(), json!(m));
                }
                links.push(J::Object(l));
            }
            None => errors.push(unsupported(
                host,
                at,
                format!("NIC `{name}` without a MAC (links are found by MAC): give it one in the host's `nics`"),
            )),
        }
    };
    for i in &intent.ifaces {
        let name = Intent::name(i);
        match Intent::kind(i).as_str() {
            "ethernet" => phy(&name, i, Intent::mtu(i), errors),
            "bond" | "vlan" => {}
            other => errors.push(unsupported(
                host,
                i.get("type").unwrap_or(i),
                format!("`{name}`, an interface of type {other}"),
            )),
        }
    }
    for (p, at) in intent.port_only() {
        phy(&p, at, None, errors);
    }
    for i in &intent.ifaces {
        if let Some(l) = aggregate_link(host, intent, i, errors) {
            links.push(J::Object(l));
        }
    }
    links
}

/// A bond's or a VLAN's link (`None` for other interfaces, and for one
/// that cannot be written, with the reason in `errors`).
fn aggregate_link(
    host: &Host,
    intent: &Intent,
    i: &Node,
    errors: &mut Vec<Diagnostic>,
) -> Option<Map<String, J>> {
    let name = Intent::name(i);
    let mut l = Map::new();
    l.insert("id".into(), json!(name));
    match Intent::kind(i).as_str() {
        "bond" => {
            let la = i.get("link-aggregation");
            let mode = text(la.and_then(|l| l.get("mode"))).unwrap_or_else(|| "balance-rr".into());
            l.insert("type".into(), json!("bond"));
            l.insert("bond_mode".into(), json!(mode));
            l.insert("bond_links".into(), json!(Intent::ports(i)));
            for (k, v) in la
                .and_then(|l| l.get("options"))
                .and_then(Node::as_map)
                .unwrap_or_default()
            {
                let Some(k) = k.as_str().filter(|k| BOND_OPTIONS.contains(k)) else {
                    continue;
                };
                let v = v.scalar_text().unwrap_or_default();
                let v = v.parse::<u64>().map(J::from).unwrap_or(J::String(v));
                l.insert(format!("bond_{k}"), v);
            }
            let Some(mac) = intent.mac_of(&name) else {
                errors.push(unsupported(
                    host,
                    i,
                    format!("bond `{name}` without a port whose MAC is known"),
                ));
                return None;
            };
            l.insert("ethernet_mac_address".into(), json!(mac));
        }
        "vlan" => {
            let Some((base, id)) = Intent::vlan(i) else {
                errors.push(unsupported(
                    host,
                    i,
                    format!("VLAN `{name}` without a base and id"),
                ));
                return None;
            };
            let Some(mac) = intent.mac_of(&base) else {
                errors.push(unsupported(
                    host,
                    i,
                    format!("VLAN `{name}` whose parent's MAC is unknown"),
                ));
                return None;
            };
            l.insert("type".into(), json!("vlan"));
            l.insert("vlan_link".into(), json!(base));
            l.insert("vlan_id".into(), json!(id));
            l.insert("vlan_mac_address".into(), json!(mac));
        }
        _ => return None,
    }
    if let Some(m) = Intent::mtu(i) {
        l.insert("mtu".into(), json!(m));
    }
    Some(l)
}

/// The networks: per interface and family, DHCP or SLAAC and each static
/// address, the routes through it on the first; a route no network takes
/// is an error.
fn networks_of(host: &Host, intent: &Intent, errors: &mut Vec<Diagnostic>) -> Vec<J> {
    let mut networks: Vec<J> = Vec::new();
    let mut routed = vec![false; intent.routes.len()];
    for i in &intent.ifaces {
        let name = Intent::name(i);
        for (fam, v6) in [("ipv4", false), ("ipv6", true)] {
            let (enabled, dhcp, autoconf) = Intent::family(i, fam);
            if !enabled {
                continue;
            }
            let mut nets: Vec<Map<String, J>> = Vec::new();
            if dhcp || autoconf {
                let kind = match (v6, dhcp) {
                    (false, _) => "ipv4_dhcp",
                    (true, true) => "ipv6_dhcp",
                    (true, false) => "ipv6_slaac",
                };
                let mut n = Map::new();
                n.insert("type".into(), json!(kind));
                nets.push(n);
            }
            for net in Intent::addresses(i, fam) {
                let mut n = Map::new();
                n.insert("type".into(), json!(fam));
                n.insert("ip_address".into(), json!(net.addr().to_string()));
                n.insert("netmask".into(), json!(net.netmask().to_string()));
                nets.push(n);
            }
            let Some(first) = nets.first_mut() else {
                continue;
            };
            let mut rs = Vec::new();
            for (k, r) in intent.routes.iter().enumerate() {
                let Some(via) = r.via else { continue };
                if r.destination.addr().is_ipv6() != v6 || r.dev.as_deref() != Some(&name) {
                    continue;
                }
                routed[k] = true;
                rs.push(json!({
                    "network": r.destination.network().to_string(),
                    "netmask": r.destination.netmask().to_string(),
                    "gateway": via.to_string(),
                }));
            }
            if !rs.is_empty() {
                first.insert("routes".into(), J::Array(rs));
            }
            for mut n in nets {
                let id = format!("network{}", networks.len());
                n.insert("id".into(), json!(id));
                n.insert("link".into(), json!(name));
                n.insert("network_id".into(), json!(id));
                networks.push(J::Object(n));
            }
        }
    }
    for (k, r) in intent.routes.iter().enumerate() {
        if !routed[k] {
            errors.push(unsupported(
                host,
                r.node,
                "a route without a next-hop address through an interface with an address of its family (routes belong to a network there)".into(),
            ));
        }
    }
    networks
}
