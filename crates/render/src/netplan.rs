//! netplan YAML (`network: {version: 2, ...}`), what Ubuntu servers (MAAS,
//! Ubuntu-based Kubernetes distributions) are configured with, built from
//! the host's NMState intent: NICs matched by MAC with `set-name`, bonds
//! with nmstate's options under netplan's parameter names, VLANs, Linux
//! bridges, addresses, DHCP, routes (`to: default`, never the deprecated
//! `gateway4`/`gateway6`) and the DNS servers on the interfaces that
//! route by default.

use serde_json::{json, Map, Value as J};

use nodenet_model::{Diagnostic, Host, Node};

use crate::intent::{text, Intent, Route};

const FORMAT: &str = "netplan";

/// nmstate's bond option → netplan's parameter.
const BOND_PARAMETERS: &[(&str, &str)] = &[
    ("miimon", "mii-monitor-interval"),
    ("lacp_rate", "lacp-rate"),
    ("xmit_hash_policy", "transmit-hash-policy"),
    ("updelay", "up-delay"),
    ("downdelay", "down-delay"),
    ("primary", "primary"),
    ("ad_select", "ad-select"),
    ("arp_interval", "arp-interval"),
    ("arp_ip_target", "arp-ip-targets"),
    ("arp_validate", "arp-validate"),
    ("arp_all_targets", "arp-all-targets"),
    ("fail_over_mac", "fail-over-mac-policy"),
    ("primary_reselect", "primary-reselect-policy"),
    ("num_grat_arp", "gratuitous-arp"),
    ("min_links", "min-links"),
    ("resend_igmp", "resend-igmp"),
    ("lp_interval", "learn-packet-interval"),
];

fn unsupported(host: &Host, at: &Node, what: String) -> Diagnostic {
    crate::intent::unsupported(host, at, FORMAT, what)
}

/// A bond option's value as netplan takes it.
fn parameter(option: &str, value: &str) -> J {
    match option {
        // nmstate and the kernel take 0/1 as well.
        "lacp_rate" => json!(match value {
            "1" => "fast",
            "0" => "slow",
            v => v,
        }),
        "arp_ip_target" => json!(value
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()),
        _ => value
            .parse::<u64>()
            .map(J::from)
            .unwrap_or_else(|_| json!(value)),
    }
}

/// netplan's device sections, in the order it writes them.
#[derive(Clone, Copy)]
enum Section {
    Ethernets,
    Bonds,
    Vlans,
    Bridges,
}

const SECTION_KEYS: [&str; 4] = ["ethernets", "bonds", "vlans", "bridges"];

/// The host's netplan document, or why it cannot be written.
pub fn netplan(host: &Host) -> Result<J, Vec<Diagnostic>> {
    let Some(state) = &host.network else {
        return Ok(json!({"network": {"version": 2}}));
    };
    let intent = Intent::read(host, state);
    let mut errors = Vec::new();
    let mut entries: Vec<(String, &Node, Map<String, J>, Section)> = Vec::new();
    for i in &intent.ifaces {
        let Some((section, mut e)) = device(host, &intent, i, &mut errors) else {
            continue;
        };
        if let Some(m) = Intent::mtu(i) {
            e.insert("mtu".into(), json!(m));
        }
        entries.push((Intent::name(i), i, e, section));
    }
    let mut sections: [Map<String, J>; 4] = Default::default();
    for (p, at) in intent.port_only() {
        if let Some(e) = nic(host, &intent, &p, at, &mut errors) {
            sections[Section::Ethernets as usize].insert(p, J::Object(e));
        }
    }
    let dns_dev = dns_device(&intent);
    for (name, i, mut e, section) in entries {
        addressing(&mut e, i);
        let routes: Vec<J> = intent
            .routes
            .iter()
            .filter(|r| r.dev.as_deref() == Some(name.as_str()))
            .map(route)
            .collect();
        if !routes.is_empty() {
            e.insert("routes".into(), J::Array(routes));
        }
        if dns_dev.as_deref() == Some(name.as_str()) && !intent.dns.is_empty() {
            e.insert("nameservers".into(), json!({"addresses": intent.dns}));
        }
        sections[section as usize].insert(name, J::Object(e));
    }
    for r in &intent.routes {
        let dev = r.dev.as_deref().unwrap_or("");
        if !intent.ifaces.iter().any(|i| Intent::name(i) == dev) {
            errors.push(unsupported(
                host,
                r.node,
                "a route without an interface the state configures (netplan puts routes on an interface)".into(),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut network = Map::new();
    network.insert("version".into(), json!(2));
    for (key, section) in SECTION_KEYS.into_iter().zip(sections) {
        if !section.is_empty() {
            network.insert(key.into(), J::Object(section));
        }
    }
    Ok(json!({"network": network}))
}

/// DNS goes where the default routes go, else on the first interface
/// with an address.
fn dns_device(intent: &Intent) -> Option<String> {
    let default_dev = intent
        .routes
        .iter()
        .filter(|r| r.destination.prefix_len() == 0)
        .find_map(|r| r.dev.clone());
    default_dev.or_else(|| {
        intent
            .ifaces
            .iter()
            .find(|i| {
                ["ipv4", "ipv6"].iter().any(|f| {
                    let (on, dhcp, slaac) = Intent::family(i, f);
                    on && (dhcp || slaac || !Intent::addresses(i, f).is_empty())
                })
            })
            .map(|i| Intent::name(i))
    })
}

/// An ethernet entry: NICs are matched by MAC and named with `set-name`.
fn nic(
    host: &Host,
    intent: &Intent,
    name: &str,
    at: &Node,
    errors: &mut Vec<Diagnostic>,
) -> Option<Map<String, J>> {
    let Some(mac) = intent.nic_mac(name) else {
        errors.push(unsupported(
            host,
            at,
            format!("NIC `{name}` without a MAC (NICs are matched by MAC): give it one in the host's `nics`"),
        ));
        return None;
    };
    let mut e = Map::new();
    e.insert("match".into(), json!({"macaddress": mac}));
    e.insert("set-name".into(), json!(name));
    Some(e)
}

/// An interface's section and entry, without its addressing; `None`
/// (with the reason in `errors`) for what netplan cannot say.
fn device(
    host: &Host,
    intent: &Intent,
    i: &Node,
    errors: &mut Vec<Diagnostic>,
) -> Option<(Section, Map<String, J>)> {
    let name = Intent::name(i);
    match Intent::kind(i).as_str() {
        "ethernet" => nic(host, intent, &name, i, errors).map(|e| (Section::Ethernets, e)),
        "bond" => Some((Section::Bonds, bond(host, i, &name, errors))),
        "vlan" => {
            let Some((base, id)) = Intent::vlan(i) else {
                errors.push(unsupported(
                    host,
                    i,
                    format!("VLAN `{name}` without a base and id"),
                ));
                return None;
            };
            let mut e = Map::new();
            e.insert("id".into(), json!(id));
            e.insert("link".into(), json!(base));
            Some((Section::Vlans, e))
        }
        "linux-bridge" => {
            let mut e = Map::new();
            e.insert("interfaces".into(), json!(Intent::ports(i)));
            let stp = i
                .get("bridge")
                .and_then(|b| b.get("options"))
                .and_then(|o| o.get("stp"))
                .and_then(|s| s.get("enabled"))
                .and_then(Node::scalar_text);
            e.insert(
                "parameters".into(),
                json!({"stp": stp.as_deref() == Some("true")}),
            );
            Some((Section::Bridges, e))
        }
        other => {
            errors.push(unsupported(
                host,
                i.get("type").unwrap_or(i),
                format!("`{name}`, an interface of type {other}"),
            ));
            None
        }
    }
}

/// A bond's ports and nmstate's options under netplan's parameter names.
fn bond(host: &Host, i: &Node, name: &str, errors: &mut Vec<Diagnostic>) -> Map<String, J> {
    let la = i.get("link-aggregation");
    let mut params = Map::new();
    if let Some(mode) = text(la.and_then(|l| l.get("mode"))) {
        params.insert("mode".into(), json!(mode));
    }
    for (k, v) in la
        .and_then(|l| l.get("options"))
        .and_then(Node::as_map)
        .unwrap_or_default()
    {
        let Some(k) = k.as_str() else { continue };
        match BOND_PARAMETERS.iter().find(|(o, _)| *o == k) {
            Some((_, p)) => {
                params.insert(
                    (*p).into(),
                    parameter(k, &v.scalar_text().unwrap_or_default()),
                );
            }
            None => errors.push(unsupported(
                host,
                v,
                format!("the bond option `{k}` of `{name}` (netplan has no parameter for it)"),
            )),
        }
    }
    let mut e = Map::new();
    e.insert("interfaces".into(), json!(Intent::ports(i)));
    if !params.is_empty() {
        e.insert("parameters".into(), J::Object(params));
    }
    e
}

/// Addresses, DHCP and router advertisements of each family.
fn addressing(e: &mut Map<String, J>, i: &Node) {
    let (v4, dhcp4, _) = Intent::family(i, "ipv4");
    let (v6, dhcp6, slaac) = Intent::family(i, "ipv6");
    let mut addresses: Vec<String> = Vec::new();
    if v4 {
        addresses.extend(Intent::addresses(i, "ipv4").iter().map(|a| a.to_string()));
        if dhcp4 {
            e.insert("dhcp4".into(), json!(true));
        }
    }
    if v6 {
        addresses.extend(Intent::addresses(i, "ipv6").iter().map(|a| a.to_string()));
        if dhcp6 {
            e.insert("dhcp6".into(), json!(true));
        }
        e.insert("accept-ra".into(), json!(slaac));
    } else {
        // No IPv6 at all, not even link-local.
        e.insert(
            "link-local".into(),
            json!(if v4 { vec!["ipv4"] } else { vec![] }),
        );
    }
    if !addresses.is_empty() {
        e.insert("addresses".into(), json!(addresses));
    }
}

fn route(r: &Route) -> J {
    let to = if r.destination.prefix_len() == 0 {
        "default".to_string()
    } else {
        r.destination.to_string()
    };
    let mut route = Map::new();
    route.insert("to".into(), json!(to));
    if let Some(via) = r.via {
        route.insert("via".into(), json!(via.to_string()));
    }
    if let Some(m) = text(r.node.get("metric")).and_then(|m| m.parse::<u64>().ok()) {
        route.insert("metric".into(), json!(m));
    }
    if let Some(t) = text(r.node.get("table-id")).and_then(|t| t.parse::<u64>().ok()) {
        route.insert("table".into(), json!(t));
    }
    J::Object(route)
}
