//! OpenStack `network_data.json` (Ironic's config drive, the
//! baremetal-operator's `networkData`, Cluster API Metal3): one host, its
//! NICs (`phy` links and their MACs) and the NMState its links, networks,
//! routes and DNS services say, the inverse of `render --with
//! network-data`.

use std::net::IpAddr;

use serde_json::{json, Map, Value as J};

use crate::diag::{Code, Diagnostic};
use crate::inventory::*;
use crate::yaml::{JsonSpans, Node};

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
    host.network = Some(state(root, &mut host, diags));
    host.projected_network = true;
    Inventory {
        hosts: vec![host],
        ..Inventory::default()
    }
}

/// Bond modes by the numbers the kernel also takes (cloud-init's own
/// fixtures write `bond_mode: "4"`; netplan refuses numbers).
const BOND_MODES: [&str; 7] = [
    "balance-rr",
    "active-backup",
    "balance-xor",
    "broadcast",
    "802.3ad",
    "balance-tlb",
    "balance-alb",
];

/// A prefix length from what producers write as a netmask: dotted or
/// IPv6 mask form (`255.255.255.0`, `ffff:ffff::`, nova and CAPM3), a
/// bare length (`64`, cloud-init reads it), CIDR (`::/0`, hand-written).
fn prefix_from(mask: &str) -> Option<u8> {
    let mask = mask.trim();
    if let Some((_, p)) = mask.split_once('/') {
        return p.parse().ok();
    }
    mask.parse::<u8>().ok().or_else(|| prefix_of(mask))
}

/// The NMState a network_data.json says, each part located at the link,
/// network, route or service it came from; the links that are NICs
/// (`phy`, and the virtual kinds nova gives a NIC) go into the host's NIC
/// table. What cloud-init reads is read the way it reads it: a link's
/// `name` names the interface (references go by `id`), numeric bond
/// modes, netmasks in every form, DNS at the top, per network and per
/// route.
pub(crate) fn state(root: &Node, host: &mut Host, diags: &mut Vec<Diagnostic>) -> Node {
    read_state(root, host, diags, true)
}

/// As [`state`]; `vlan_macs`: a VLAN link must carry `vlan_mac_address`
/// (false where the MAC is one inspection gives at run time).
pub(crate) fn read_state(
    root: &Node,
    host: &mut Host,
    diags: &mut Vec<Diagnostic>,
    vlan_macs: bool,
) -> Node {
    let mut spans = JsonSpans::default();
    let mut ifaces: Vec<Map<String, J>> = Vec::new();
    let links = root.get("links").and_then(Node::as_seq).unwrap_or_default();
    // Links are referred to by `id`; the interface is the link's `name`
    // when it has one.
    let names: Names = links
        .iter()
        .filter_map(|l| Some((s(l, "id")?, s(l, "name").or_else(|| s(l, "id"))?)))
        .collect();
    for l in links {
        let index = ifaces.len();
        if let Some(i) = link_interface(l, index, &names, vlan_macs, host, &mut spans, diags) {
            ifaces.push(i);
        }
    }
    host.nics_listed |= !host.nics.is_empty();
    let mut routes = Vec::new();
    let mut dns: Vec<String> = Vec::new();
    for (a, at) in dns_services(root.get("services")) {
        add_dns(&mut dns, &mut spans, a, &at);
    }
    for n in root
        .get("networks")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        let Some(link) = s(n, "link") else {
            diags.push(Diagnostic::error(Code::MissingField, "a network has no `link`").at(n.span));
            continue;
        };
        let link = name_of(&names, &link);
        let Some(index) = ifaces.iter().position(|i| i["name"] == link.as_str()) else {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("network on `{link}`, which no link defines: cloud-init drops the network without a word and the node comes up without it"),
                )
                .at(n.get("link").map_or(n.span, |l| l.span)),
            );
            continue;
        };
        let i = &mut ifaces[index];
        let kind = s(n, "type").unwrap_or_default();
        let v6 = kind.starts_with("ipv6") || kind == "static6";
        let fam = if v6 { "ipv6" } else { "ipv4" };
        let family_at = format!("/interfaces/{index}/{fam}");
        if !i.contains_key(fam) {
            spans.at(family_at.clone(), n.span);
        }
        let ip = i
            .entry(fam)
            .or_insert_with(|| json!({"enabled": true, "dhcp": false}));
        match kind.as_str() {
            "ipv4_dhcp" => ip["dhcp"] = json!(true),
            // cloud-init accepts router advertisements with DHCPv6.
            "ipv6_dhcp" | "ipv6_dhcpv6-stateful" | "ipv6_dhcpv6-stateless" => {
                ip["dhcp"] = json!(true);
                ip["autoconf"] = json!(true);
            }
            // nova writes the address SLAAC will give; it is not static.
            "ipv6_slaac" => ip["autoconf"] = json!(true),
            "ipv4" | "ipv6" | "static" | "static6" => {
                let Some((ip_text, prefix)) = static_address(n, v6, diags) else {
                    continue;
                };
                let list = ip
                    .as_object_mut()
                    .expect("an object")
                    .entry("address")
                    .or_insert_with(|| json!([]));
                let list = list.as_array_mut().expect("a list");
                let at = n.get("ip_address").map_or(n.span, |a| a.span);
                spans.at(format!("{family_at}/address/{}", list.len()), at);
                list.push(json!({"ip": ip_text, "prefix-length": prefix}));
            }
            other => {
                diags.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("network type `{other}` is none of ipv4, ipv6, ipv4_dhcp, ipv6_dhcp, ipv6_slaac"),
                    )
                    .at(n.get("type").map_or(n.span, |t| t.span)),
                );
                continue;
            }
        }
        if v6 && ip.get("autoconf").is_none() {
            ip["autoconf"] = json!(false);
        }
        for (a, at) in dns_services(n.get("services")) {
            add_dns(&mut dns, &mut spans, a, &at);
        }
        for a in n
            .get("dns_nameservers")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            if let Some(address) = a.scalar_text() {
                add_dns(&mut dns, &mut spans, address, a);
            }
        }
        network_routes(n, &link, &mut routes, &mut dns, &mut spans, diags);
    }
    for i in &mut ifaces {
        for fam in ["ipv4", "ipv6"] {
            i.entry(fam).or_insert_with(|| json!({"enabled": false}));
        }
    }
    let mut state = json!({"interfaces": ifaces});
    if !routes.is_empty() {
        state["routes"] = json!({"config": routes});
    }
    if !dns.is_empty() {
        state["dns-resolver"] = json!({"config": {"server": dns}});
    }
    spans.node(&state, root.span)
}

/// A link's `id` to its interface name.
type Names = std::collections::HashMap<String, String>;

fn name_of(names: &Names, id: &str) -> String {
    names.get(id).cloned().unwrap_or_else(|| id.to_string())
}

/// A DNS server, once, located where it was first given.
fn add_dns(dns: &mut Vec<String>, spans: &mut JsonSpans, address: String, at: &Node) {
    if !dns.contains(&address) {
        spans.at(
            format!("/dns-resolver/config/server/{}", dns.len()),
            at.span,
        );
        dns.push(address);
    }
}

/// The `dns` entries of a `services` list, with where each is.
fn dns_services(list: Option<&Node>) -> Vec<(String, Node)> {
    list.and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter(|svc| s(svc, "type").as_deref() == Some("dns"))
        .filter_map(|svc| Some((s(svc, "address")?, svc.clone())))
        .collect()
}

/// One link as the `index`th NMState interface (its NIC into `host` when
/// it is one); None for a link without an `id`.
fn link_interface(
    l: &Node,
    index: usize,
    names: &Names,
    vlan_macs: bool,
    host: &mut Host,
    spans: &mut JsonSpans,
    diags: &mut Vec<Diagnostic>,
) -> Option<Map<String, J>> {
    let Some(id) = s(l, "id") else {
        diags.push(Diagnostic::error(Code::MissingField, "a link has no `id`").at(l.span));
        return None;
    };
    let id = id.as_str();
    spans.at(format!("/interfaces/{index}"), l.span);
    let mut i = Map::new();
    i.insert("name".into(), json!(name_of(names, id)));
    i.insert("state".into(), json!("up"));
    match s(l, "type").as_deref() {
        Some("bond") => {
            let ports: Vec<String> = l
                .get("bond_links")
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .filter_map(Node::scalar_text)
                .map(|p| name_of(names, &p))
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
            if let Some(at) = l.get("bond_links") {
                spans.at(
                    format!("/interfaces/{index}/link-aggregation/port"),
                    at.span,
                );
            }
            let mode = match s(l, "bond_mode") {
                None => "balance-rr".to_string(),
                Some(m) => match m.parse::<usize>().ok().and_then(|n| BOND_MODES.get(n)) {
                    Some(name) => name.to_string(),
                    None => m,
                },
            };
            if let Some(at) = l.get("bond_mode") {
                spans.at(
                    format!("/interfaces/{index}/link-aggregation/mode"),
                    at.span,
                );
            }
            let mut la = Map::new();
            la.insert("mode".into(), json!(mode));
            if !options.is_empty() {
                la.insert("options".into(), J::Object(options));
            }
            la.insert("port".into(), json!(ports));
            i.insert("type".into(), json!("bond"));
            i.insert("link-aggregation".into(), J::Object(la));
        }
        Some("vlan") => {
            i.insert("type".into(), json!("vlan"));
            let vlan_id: Option<u64> = s(l, "vlan_id").and_then(|v| v.parse().ok());
            let base = s(l, "vlan_link").map(|b| name_of(names, &b));
            i.insert("vlan".into(), json!({"base-iface": base, "id": vlan_id}));
            if vlan_macs && s(l, "vlan_mac_address").is_none() {
                diags.push(
                        Diagnostic::error(
                            Code::MissingField,
                            format!("VLAN link `{id}` has no `vlan_mac_address` (nova's schema requires it, and cloud-init stops at a VLAN without one)"),
                        )
                        .at(l.get("vlan_mac_address").map_or(l.span, |n| n.span))
                        .help("give the MAC the VLAN inherits from its parent"),
                    );
            }
        }
        // phy, and the virtual kinds nova gives a NIC (ovs, tap, vif,
        // a missing type): cloud-init takes them all for NICs.
        _ => {
            i.insert("type".into(), json!("ethernet"));
            let mac = l.get("ethernet_mac_address").and_then(|m| {
                m.scalar_text()
                    .map(|t| Located::new(t.replace('-', ":"), m.span))
            });
            if mac.is_none() && s(l, "name").is_none() {
                diags.push(
                        Diagnostic::error(
                            Code::MissingField,
                            format!("link `{id}` has neither `ethernet_mac_address` nor `name`: cloud-init finds a NIC by one of them"),
                        )
                        .at(l.span),
                    );
            }
            let named_at = l.get("name").or(l.get("id")).map_or(l.span, |n| n.span);
            host.nics
                .push(Nic::new(Located::new(name_of(names, id), named_at), mac));
        }
    }
    if let Some(mtu) = s(l, "mtu").and_then(|m| m.parse::<u64>().ok()) {
        i.insert("mtu".into(), json!(mtu));
    }
    Some(i)
}

/// A network's `routes`: each into `routes`, its DNS services into `dns`.
fn network_routes(
    n: &Node,
    link: &str,
    routes: &mut Vec<J>,
    dns: &mut Vec<String>,
    spans: &mut JsonSpans,
    diags: &mut Vec<Diagnostic>,
) {
    for r in n.get("routes").and_then(Node::as_seq).unwrap_or_default() {
        for (a, at) in dns_services(r.get("services")) {
            add_dns(dns, spans, a, &at);
        }
        let gateway = s(r, "gateway").filter(|g| !g.is_empty());
        let (Some(net), Some(gw)) = (s(r, "network"), gateway) else {
            diags.push(
                Diagnostic::error(
                    Code::MissingField,
                    "a route needs `network`, `netmask` and a `gateway`",
                )
                .at(r.span),
            );
            continue;
        };
        // `::/0` in `network` carries its own length.
        let (net, own) = match net.split_once('/') {
            Some((a, p)) => (a.to_string(), p.parse::<u8>().ok()),
            None => (net, None),
        };
        let prefix = own.or_else(|| s(r, "netmask").as_deref().and_then(prefix_from));
        let (Ok(net), Some(prefix)) = (net.parse::<IpAddr>(), prefix) else {
            diags.push(
                Diagnostic::error(
                    Code::IpInvalid,
                    "the route's `network` and `netmask` give no destination nodenet can read",
                )
                .at(r.span),
            );
            continue;
        };
        spans.at(format!("/routes/config/{}", routes.len()), r.span);
        routes.push(json!({
            "destination": format!("{net}/{prefix}"),
            "next-hop-address": gw,
            "next-hop-interface": link,
        }));
    }
}

/// A static network's address and prefix length: `ip_address` with its
/// own `/prefix` (or mask), else `netmask`; with neither, cloud-init's
/// default (/24, /64), said as a warning.
fn static_address(n: &Node, v6: bool, diags: &mut Vec<Diagnostic>) -> Option<(String, u8)> {
    let addr = s(n, "ip_address").unwrap_or_default();
    // None: no netmask at all; Some(None): one nodenet cannot read.
    let (ip_text, prefix): (String, Option<Option<u8>>) = match addr.split_once('/') {
        Some((a, p)) => (a.to_string(), Some(prefix_from(p))),
        None => (
            addr.clone(),
            s(n, "netmask")
                .filter(|m| !m.trim().is_empty())
                .map(|m| prefix_from(&m)),
        ),
    };
    let id = s(n, "id").unwrap_or_default();
    let Ok(ip) = ip_text.parse::<IpAddr>() else {
        diags.push(
            Diagnostic::error(
                Code::IpInvalid,
                format!("network `{id}` has no `ip_address` nodenet can read"),
            )
            .at(n.get("ip_address").map_or(n.span, |a| a.span)),
        );
        return None;
    };
    let max = if ip.is_ipv6() { 128 } else { 32 };
    match prefix {
        // No netmask at all: what cloud-init assumes.
        None => {
            let assumed = if v6 { 64 } else { 24 };
            diags.push(
                Diagnostic::warning(
                    Code::MissingField,
                    format!("network `{id}` has no `netmask`: cloud-init assumes /{assumed}"),
                )
                .at(n.span)
                .help("write the netmask the network has"),
            );
            Some((ip.to_string(), assumed))
        }
        Some(Some(p)) if p <= max => Some((ip.to_string(), p)),
        _ => {
            diags.push(
                Diagnostic::error(
                    Code::IpInvalid,
                    format!("network `{id}` has a `netmask` that is no mask or prefix length"),
                )
                .at(n.get("netmask").map_or(n.span, |m| m.span)),
            );
            None
        }
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
