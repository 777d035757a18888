//! The running kernel's network state (over netlink, via nispor) as
//! NMState: links, bonds, VLANs, bridges, MTUs, addresses and routes —
//! what a kernel exposes, not NetworkManager's profiles.

use serde_json::{json, Map, Value as J};

#[derive(Debug, thiserror::Error)]
#[error("cannot read the kernel's network state: {0}")]
pub struct LiveError(String);

/// Reads the current network namespace's state (feature `live`, on by
/// default: nispor and netlink, which the fuzz targets leave out).
#[cfg(feature = "live")]
pub fn current_state() -> Result<J, LiveError> {
    let state = nispor::NetState::retrieve().map_err(|e| LiveError(e.to_string()))?;
    let raw = serde_json::to_value(&state).map_err(|e| LiveError(e.to_string()))?;
    Ok(from_nispor(&raw))
}

fn nmstate_type(t: &str) -> Option<&'static str> {
    Some(match t {
        "ethernet" | "veth" => "ethernet",
        "bond" => "bond",
        "vlan" => "vlan",
        "linux-bridge" => "linux-bridge",
        "dummy" => "dummy",
        "mac-vlan" => "mac-vlan",
        "vrf" => "vrf",
        "vxlan" => "vxlan",
        // An Open vSwitch internal interface (nispor spells the type
        // both ways across versions); its bridge lives in ovsdb.
        "openv-switch" | "openvswitch" => "ovs-interface",
        _ => return None,
    })
}

fn addresses(info: Option<&J>) -> Vec<J> {
    info.and_then(|i| i.get("addresses"))
        .and_then(J::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|addr| {
                    let ip = addr.get("address")?.as_str()?;
                    // Kernel-made link-local addresses are not configuration.
                    if ip.starts_with("fe80:") {
                        return None;
                    }
                    Some(json!({"ip": ip, "prefix-length": addr.get("prefix-len")?}))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The kernel device every Open vSwitch port is attached to.
pub const OVS_DATAPATH: &str = "ovs-system";

/// nispor's JSON → NMState JSON.
pub fn from_nispor(raw: &J) -> J {
    let mut ifaces: Vec<(String, J)> = Vec::new();
    let empty = Map::new();
    for (name, i) in raw.get("ifaces").and_then(J::as_object).unwrap_or(&empty) {
        let Some(kind) = i.get("type").and_then(J::as_str).and_then(nmstate_type) else {
            continue;
        };
        // The datapath every OVS port hangs off, not configuration.
        if kind == "ovs-interface" && name == OVS_DATAPATH {
            continue;
        }
        let mut iface = Map::new();
        iface.insert("name".into(), json!(name));
        iface.insert("type".into(), json!(kind));
        // Administratively up (the carrier is not configuration).
        let up = i
            .get("flags")
            .and_then(J::as_array)
            .is_some_and(|f| f.iter().any(|x| x == "up"));
        iface.insert("state".into(), json!(if up { "up" } else { "down" }));
        if let Some(mtu) = i.get("mtu") {
            iface.insert("mtu".into(), mtu.clone());
        }
        if let Some(mac) = i
            .get("mac-address")
            .and_then(J::as_str)
            .filter(|m| !m.is_empty())
        {
            iface.insert("mac-address".into(), json!(mac.to_ascii_uppercase()));
        }
        // The NIC's own MAC, which a bond port no longer shows as its MAC:
        // what a profile bound by MAC matches.
        if let Some(mac) = i
            .get("permanent-mac-address")
            .and_then(J::as_str)
            .filter(|m| !m.is_empty())
        {
            iface.insert(
                "permanent-mac-address".into(),
                json!(mac.to_ascii_uppercase()),
            );
        }
        for (fam, key) in [("ipv4", "ipv4"), ("ipv6", "ipv6")] {
            let addrs = addresses(i.get(key));
            let enabled = !addrs.is_empty();
            let mut ip = Map::new();
            ip.insert("enabled".into(), json!(enabled));
            if enabled {
                ip.insert("address".into(), J::Array(addrs));
            }
            iface.insert(fam.into(), J::Object(ip));
        }
        // The kernel shows an OVS port only as a port of the datapath:
        // which bridge it is in is ovsdb's (see `diff`).
        if i.get("controller").and_then(J::as_str) == Some(OVS_DATAPATH) {
            iface.insert("controller".into(), json!(OVS_DATAPATH));
        }
        if let Some(bond) = i.get("bond") {
            let ports: Vec<J> = bond
                .get("ports")
                .and_then(J::as_array)
                .cloned()
                .unwrap_or_default();
            iface.insert(
                "link-aggregation".into(),
                json!({"mode": bond.get("mode").cloned().unwrap_or(J::Null), "port": ports}),
            );
        }
        if let Some(vlan) = i.get("vlan") {
            iface.insert(
                "vlan".into(),
                json!({"base-iface": vlan.get("base-iface"), "id": vlan.get("vlan-id")}),
            );
        }
        if let Some(bridge) = i.get("bridge") {
            let mut ports: Vec<&str> = bridge
                .get("ports")
                .and_then(J::as_array)
                .into_iter()
                .flatten()
                .filter_map(J::as_str)
                .collect();
            ports.sort();
            iface.insert(
                "bridge".into(),
                json!({"port": ports.iter().map(|p| json!({"name": p})).collect::<Vec<_>>()}),
            );
        }
        ifaces.push((name.clone(), J::Object(iface)));
    }
    ifaces.sort_by(|a, b| a.0.cmp(&b.0));
    let mut routes = Vec::new();
    for r in raw
        .get("routes")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
    {
        let table = r.get("table").and_then(J::as_u64).unwrap_or(254);
        // Configured routes only: the main table, static or boot protocol,
        // with a next hop (prefix routes come from the addresses).
        let proto = r.get("protocol").and_then(J::as_str).unwrap_or("");
        let via = r
            .get("via")
            .or_else(|| r.get("gateway"))
            .and_then(J::as_str);
        let Some(via) = via else { continue };
        if !(proto == "static" || proto == "boot") || table != 254 {
            continue;
        }
        let dst = r
            .get("dst")
            .and_then(J::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| {
                if via.contains(':') {
                    "::/0".into()
                } else {
                    "0.0.0.0/0".into()
                }
            });
        let mut route = Map::new();
        route.insert("destination".into(), json!(dst));
        route.insert("next-hop-address".into(), json!(via));
        if let Some(oif) = r.get("oif") {
            route.insert("next-hop-interface".into(), oif.clone());
        }
        if let Some(m) = r
            .get("metric")
            .and_then(J::as_u64)
            .filter(|m| *m != 0 && *m != 1024)
        {
            route.insert("metric".into(), json!(m));
        }
        routes.push(J::Object(route));
    }
    let mut doc = Map::new();
    if !routes.is_empty() {
        doc.insert("routes".into(), json!({"config": routes}));
    }
    doc.insert(
        "interfaces".into(),
        J::Array(ifaces.into_iter().map(|(_, v)| v).collect()),
    );
    J::Object(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// nispor's view of a node with br-ex: the datapath, the bridge's
    /// internal interface (the datapath's own device, no controller), and
    /// the uplink attached to the datapath.
    #[test]
    fn ovs_internal_interfaces_and_ports_show_as_such() {
        let raw = json!({"ifaces": {
            "ovs-system": {"name": "ovs-system", "type": "openv-switch", "flags": [], "mtu": 1500},
            "br-ex": {"name": "br-ex", "type": "openv-switch", "flags": ["up"], "mtu": 1500,
                      "ipv4": {"addresses": [{"address": "192.168.110.10", "prefix-len": 24}]}},
            "enp2s0": {"name": "enp2s0", "type": "ethernet", "flags": ["up"], "mtu": 1500,
                       "controller": "ovs-system", "controller-type": "openv-switch"},
            "enp3s0": {"name": "enp3s0", "type": "ethernet", "flags": ["up"], "mtu": 1500}
        }});
        let state = from_nispor(&raw);
        let ifaces = state["interfaces"].as_array().unwrap();
        let names: Vec<(&str, &str)> = ifaces
            .iter()
            .map(|i| (i["name"].as_str().unwrap(), i["type"].as_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("br-ex", "ovs-interface"),
                ("enp2s0", "ethernet"),
                ("enp3s0", "ethernet")
            ]
        );
        assert_eq!(ifaces[0]["ipv4"]["address"][0]["ip"], "192.168.110.10");
        assert_eq!(ifaces[1]["controller"], "ovs-system");
        assert!(ifaces[2].get("controller").is_none());
    }
}
