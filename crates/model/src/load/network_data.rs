//! OpenStack `network_data.json` (Ironic's config drive, the
//! baremetal-operator's `networkData`, Cluster API Metal3): one host, its
//! NICs (`phy` links and their MACs) and the NMState its links, networks,
//! routes and DNS services say, the inverse of `render --with
//! network-data`.

use std::net::IpAddr;

use serde_json::{json, Map, Value as J};

use crate::diag::{Code, Diagnostic};
use crate::inventory::*;
use crate::yaml::Node;

/// A document with `links` and `networks` lists (nova's required keys).
pub(crate) fn looks_like(root: &Node) -> bool {
    root.get("links").and_then(Node::as_seq).is_some()
        && root.get("networks").and_then(Node::as_seq).is_some()
        && root.get("interfaces").is_none()
}

fn s(n: &Node, key: &str) -> Option<String> {
    n.get(key).and_then(Node::scalar_text)
}

/// A prefix length from a netmask (`255.255.255.0`, `ffff:ffff::`).
fn prefix_of(mask: &str) -> Option<u8> {
    let ip: IpAddr = mask.parse().ok()?;
    let bits = match ip {
        IpAddr::V4(v) => u32::from(v).leading_ones(),
        IpAddr::V6(v) => u128::from(v).leading_ones(),
    };
    Some(bits as u8)
}

pub(crate) fn load(root: &Node, name: String, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut host = Host::new(Located::new(name, root.span), InputKind::NetworkData);
    let mut ifaces: Vec<Map<String, J>> = Vec::new();
    for l in root.get("links").and_then(Node::as_seq).unwrap_or_default() {
        let Some(id) = s(l, "id") else {
            diags.push(Diagnostic::error(Code::MissingField, "a link has no `id`").at(l.span));
            continue;
        };
        let mut i = Map::new();
        i.insert("name".into(), json!(id));
        i.insert("state".into(), json!("up"));
        match s(l, "type").as_deref() {
            Some("bond") => {
                let ports: Vec<String> = l
                    .get("bond_links")
                    .and_then(Node::as_seq)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(Node::scalar_text)
                    .collect();
                let mut options = Map::new();
                for (k, v) in l.as_map().unwrap_or_default() {
                    let Some(opt) = k.as_str().and_then(|k| k.strip_prefix("bond_")) else {
                        continue;
                    };
                    if opt != "mode" && opt != "links" {
                        options.insert(opt.into(), json!(v.scalar_text().unwrap_or_default()));
                    }
                }
                let mut la = Map::new();
                la.insert(
                    "mode".into(),
                    json!(s(l, "bond_mode").unwrap_or_else(|| "balance-rr".into())),
                );
                if !options.is_empty() {
                    la.insert("options".into(), J::Object(options));
                }
                la.insert("port".into(), json!(ports));
                i.insert("type".into(), json!("bond"));
                i.insert("link-aggregation".into(), J::Object(la));
            }
            Some("vlan") => {
                i.insert("type".into(), json!("vlan"));
                let id: Option<u64> = s(l, "vlan_id").and_then(|v| v.parse().ok());
                i.insert(
                    "vlan".into(),
                    json!({"base-iface": s(l, "vlan_link"), "id": id}),
                );
            }
            // phy, and the virtual kinds Nova gives a NIC (ovs, tap, ...).
            _ => {
                i.insert("type".into(), json!("ethernet"));
                let mac = l.get("ethernet_mac_address");
                host.nics.push(Nic::new(
                    Located::new(id.clone(), l.get("id").map_or(l.span, |n| n.span)),
                    mac.and_then(|m| m.scalar_text().map(|t| Located::new(t, m.span))),
                ));
            }
        }
        if let Some(mtu) = s(l, "mtu").and_then(|m| m.parse::<u64>().ok()) {
            i.insert("mtu".into(), json!(mtu));
        }
        ifaces.push(i);
    }
    host.nics_listed = !host.nics.is_empty();
    let mut routes = Vec::new();
    for n in root
        .get("networks")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        let Some(link) = s(n, "link") else {
            diags.push(Diagnostic::error(Code::MissingField, "a network has no `link`").at(n.span));
            continue;
        };
        let Some(i) = ifaces.iter_mut().find(|i| i["name"] == link.as_str()) else {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("network on `{link}`, which no link defines"),
                )
                .at(n.get("link").map_or(n.span, |l| l.span)),
            );
            continue;
        };
        let kind = s(n, "type").unwrap_or_default();
        let fam = if kind.starts_with("ipv6") {
            "ipv6"
        } else {
            "ipv4"
        };
        let ip = i
            .entry(fam)
            .or_insert_with(|| json!({"enabled": true, "dhcp": false}));
        match kind.as_str() {
            "ipv4_dhcp" | "ipv6_dhcp" => ip["dhcp"] = json!(true),
            "ipv6_slaac" => ip["autoconf"] = json!(true),
            _ => {
                // `ip_address` (IPv6 may carry its prefix), `netmask`.
                let addr = s(n, "ip_address").unwrap_or_default();
                let (ip_text, prefix) = match addr.split_once('/') {
                    Some((a, p)) => (a.to_string(), p.parse::<u8>().ok()),
                    None => (addr.clone(), s(n, "netmask").as_deref().and_then(prefix_of)),
                };
                if ip_text.parse::<IpAddr>().is_err() || prefix.is_none() {
                    diags.push(
                        Diagnostic::error(
                            Code::IpInvalid,
                            format!("network `{}` has no address and prefix nodenet can read (`ip_address`, `netmask`)", s(n, "id").unwrap_or_default()),
                        )
                        .at(n.span),
                    );
                    continue;
                }
                let list = ip
                    .as_object_mut()
                    .expect("an object")
                    .entry("address")
                    .or_insert_with(|| json!([]));
                list.as_array_mut()
                    .expect("a list")
                    .push(json!({"ip": ip_text, "prefix-length": prefix}));
            }
        }
        if fam == "ipv6" && ip.get("autoconf").is_none() {
            ip["autoconf"] = json!(false);
        }
        for r in n.get("routes").and_then(Node::as_seq).unwrap_or_default() {
            let (Some(net), Some(mask), Some(gw)) =
                (s(r, "network"), s(r, "netmask"), s(r, "gateway"))
            else {
                diags.push(
                    Diagnostic::error(
                        Code::MissingField,
                        "a route needs `network`, `netmask` and `gateway`",
                    )
                    .at(r.span),
                );
                continue;
            };
            let Some(prefix) = prefix_of(&mask) else {
                diags.push(
                    Diagnostic::error(Code::IpInvalid, format!("`{mask}` is no netmask"))
                        .at(r.span),
                );
                continue;
            };
            routes.push(json!({
                "destination": format!("{net}/{prefix}"),
                "next-hop-address": gw,
                "next-hop-interface": link,
            }));
        }
    }
    for i in &mut ifaces {
        for fam in ["ipv4", "ipv6"] {
            i.entry(fam).or_insert_with(|| json!({"enabled": false}));
        }
    }
    let dns: Vec<String> = root
        .get("services")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter(|svc| s(svc, "type").as_deref() == Some("dns"))
        .filter_map(|svc| s(svc, "address"))
        .collect();
    let mut state = json!({"interfaces": ifaces});
    if !routes.is_empty() {
        state["routes"] = json!({"config": routes});
    }
    if !dns.is_empty() {
        state["dns-resolver"] = json!({"config": {"server": dns}});
    }
    host.network = Some(Node::from_json(&state, root.span));
    Inventory {
        hosts: vec![host],
        ..Inventory::default()
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_of;

    #[test]
    fn netmasks_give_their_prefix_lengths() {
        assert_eq!(prefix_of("255.255.255.0"), Some(24));
        assert_eq!(prefix_of("0.0.0.0"), Some(0));
        assert_eq!(prefix_of("ffff:ffff:ffff:ffff::"), Some(64));
        assert_eq!(prefix_of("::"), Some(0));
        assert_eq!(prefix_of("nonsense"), None);
    }
}
