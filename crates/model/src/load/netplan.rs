//! netplan YAML (`network: {version: 2, ethernets, bonds, vlans,
//! bridges}`, also cloud-init's network-config v2 without the `network:`
//! key): one host named after its file, the inverse of `render --with
//! netplan`. Read the way netplan reads it: any value may be quoted,
//! booleans are `true/yes/on/y` (any case), NICs are found by
//! `match.macaddress` and named by `set-name`, bonds and VLANs refer to
//! netplan ids, bond time parameters are milliseconds unless they carry a
//! unit, a bridge runs STP unless told not to, and `gateway4`/`gateway6`
//! are default routes (deprecated: said as a warning).

use std::collections::HashMap;
use std::net::IpAddr;

use serde_json::{json, Map, Value as J};

use crate::diag::{Code, Diagnostic};
use crate::inventory::*;
use crate::yaml::{JsonSpans, Node};

/// The device sections nodenet reads, with the NMState type of each.
const SECTIONS: &[(&str, &str)] = &[
    ("ethernets", "ethernet"),
    ("bonds", "bond"),
    ("vlans", "vlan"),
    ("bridges", "linux-bridge"),
];

/// netplan's bond parameter → nmstate's option.
const BOND_OPTIONS: &[(&str, &str)] = &[
    ("mii-monitor-interval", "miimon"),
    ("lacp-rate", "lacp_rate"),
    ("transmit-hash-policy", "xmit_hash_policy"),
    ("up-delay", "updelay"),
    ("down-delay", "downdelay"),
    ("primary", "primary"),
    ("ad-select", "ad_select"),
    ("arp-interval", "arp_interval"),
    ("arp-ip-targets", "arp_ip_target"),
    ("arp-validate", "arp_validate"),
    ("arp-all-targets", "arp_all_targets"),
    ("fail-over-mac-policy", "fail_over_mac"),
    ("primary-reselect-policy", "primary_reselect"),
    ("gratuitous-arp", "num_grat_arp"),
    // netplan's own examples spell it so, and netplan accepts it.
    ("gratuitious-arp", "num_grat_arp"),
    ("min-links", "min_links"),
    ("resend-igmp", "resend_igmp"),
    ("learn-packet-interval", "lp_interval"),
    ("all-members-active", "all_slaves_active"),
    ("all-slaves-active", "all_slaves_active"),
    ("packets-per-member", "packets_per_slave"),
    ("packets-per-slave", "packets_per_slave"),
];

/// The netplan document's `network` mapping: under `network:`, or the
/// document itself (cloud-init's network-config) when it has `version: 2`
/// and a device section.
fn network(root: &Node) -> Option<&Node> {
    if root.get("kind").is_some() || root.get("apiVersion").is_some() {
        return None;
    }
    let has_devices = |n: &Node| SECTIONS.iter().any(|(k, _)| n.get(k).is_some());
    match root.get("network") {
        Some(n) if n.as_map().is_some() && (n.get("version").is_some() || has_devices(n)) => {
            Some(n)
        }
        Some(_) => None,
        None => (root.get("version").and_then(Node::scalar_text).as_deref() == Some("2")
            && has_devices(root))
        .then_some(root),
    }
}

pub(crate) fn looks_like(root: &Node) -> bool {
    network(root).is_some()
}

fn text(n: Option<&Node>) -> Option<String> {
    n.and_then(Node::scalar_text)
}

/// netplan's booleans (libyaml hands it every scalar as text).
fn boolean(n: &Node, diags: &mut Vec<Diagnostic>) -> Option<bool> {
    let t = n.scalar_text()?.to_ascii_lowercase();
    match t.as_str() {
        "true" | "on" | "yes" | "y" => Some(true),
        "false" | "off" | "no" | "n" => Some(false),
        _ => {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`{t}` is no boolean netplan reads (true/false, yes/no, on/off)"),
                )
                .at(n.span),
            );
            None
        }
    }
}

/// A bond time in the unit the kernel option takes (milliseconds; the
/// learn-packet interval in seconds): netplan passes bare numbers on in
/// that unit and systemd time spans (`100ms`, `1s`) as they are.
fn time_value(v: &str, seconds: bool) -> Option<String> {
    let v = v.trim();
    if v.chars().all(|c| c.is_ascii_digit()) {
        return Some(v.to_string());
    }
    let (num, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit() && c != '.')?);
    let n: f64 = num.parse().ok()?;
    let ms = match unit.trim() {
        "ms" | "msec" => n,
        "s" | "sec" => n * 1000.0,
        "min" | "m" => n * 60_000.0,
        _ => return None,
    };
    Some(format!(
        "{}",
        if seconds { ms / 1000.0 } else { ms }.round() as u64
    ))
}

/// A bond's `link-aggregation`: its ports, its mode (the kernel's
/// default when none), and the parameters nmstate names otherwise.
fn link_aggregation(
    v: &Node,
    name_of: &dyn Fn(&str) -> String,
    at: &str,
    spans: &mut JsonSpans,
    diags: &mut Vec<Diagnostic>,
) -> J {
    let ports: Vec<String> = v
        .get("interfaces")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(Node::scalar_text)
        .map(|p| name_of(&p))
        .collect();
    let params = v.get("parameters");
    let mut options = Map::new();
    for (pk, pv) in params.and_then(Node::as_map).unwrap_or_default() {
        let key = pk.scalar_text().unwrap_or_default();
        if key == "mode" {
            continue;
        }
        let Some((_, opt)) = BOND_OPTIONS.iter().find(|(p, _)| *p == key) else {
            diags.push(
                Diagnostic::warning(
                    Code::UnknownField,
                    format!("bond parameter `{key}` is none netplan knows"),
                )
                .at(pk.span),
            );
            continue;
        };
        let value = match key.as_str() {
            "arp-ip-targets" => pv
                .as_seq()
                .unwrap_or_default()
                .iter()
                .filter_map(Node::scalar_text)
                .collect::<Vec<_>>()
                .join(","),
            "primary" => name_of(&pv.scalar_text().unwrap_or_default()),
            "all-members-active" | "all-slaves-active" => match boolean(pv, diags) {
                Some(b) => u8::from(b).to_string(),
                None => continue,
            },
            "mii-monitor-interval"
            | "arp-interval"
            | "up-delay"
            | "down-delay"
            | "learn-packet-interval" => {
                let raw = pv.scalar_text().unwrap_or_default();
                match time_value(&raw, key == "learn-packet-interval") {
                    Some(t) => t,
                    None => {
                        diags.push(
                            Diagnostic::error(
                                Code::InvalidValue,
                                format!("`{raw}` is no time netplan reads for `{key}` (a number of milliseconds, or with a unit: `100ms`, `1s`)"),
                            )
                            .at(pv.span),
                        );
                        continue;
                    }
                }
            }
            _ => pv.scalar_text().unwrap_or_default(),
        };
        spans.at(format!("{at}/link-aggregation/options/{opt}"), pv.span);
        options.insert((*opt).into(), json!(value));
    }
    let mut la = Map::new();
    // The kernel's default mode.
    let mode = params.and_then(|p| p.get("mode"));
    la.insert(
        "mode".into(),
        json!(text(mode).unwrap_or_else(|| "balance-rr".into())),
    );
    if let Some(m) = mode {
        spans.at(format!("{at}/link-aggregation/mode"), m.span);
    }
    if !options.is_empty() {
        la.insert("options".into(), J::Object(options));
    }
    la.insert("port".into(), json!(ports));
    if let Some(p) = v.get("interfaces") {
        spans.at(format!("{at}/link-aggregation/port"), p.span);
    }
    J::Object(la)
}

/// A bridge's ports and spanning tree (netplan's default: on; times in
/// seconds unless they carry a unit).
fn bridge(v: &Node, name_of: &dyn Fn(&str) -> String, diags: &mut Vec<Diagnostic>) -> J {
    let ports: Vec<J> = v
        .get("interfaces")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(Node::scalar_text)
        .map(|p| json!({"name": name_of(&p)}))
        .collect();
    let params = v.get("parameters");
    let stp = match params.and_then(|p| p.get("stp")) {
        Some(s) => boolean(s, diags).unwrap_or(true),
        None => true, // netplan's default
    };
    let mut stp_opts = Map::new();
    stp_opts.insert("enabled".into(), json!(stp));
    for (key, opt) in [
        ("forward-delay", "forward-delay"),
        ("hello-time", "hello-time"),
        ("max-age", "max-age"),
        ("priority", "priority"),
    ] {
        // Bridge times are seconds unless they carry a unit.
        if let Some(n) = text(params.and_then(|p| p.get(key)))
            .and_then(|t| time_value(&t, true))
            .and_then(|t| t.parse::<u64>().ok())
        {
            stp_opts.insert(opt.into(), json!(n));
        }
    }
    json!({"options": {"stp": stp_opts}, "port": ports})
}

/// A device's addresses, IPv4 then IPv6, each with its place: "a/p"
/// strings, or single-key mappings with options (which netplan refuses
/// under NetworkManager).
type Placed = Vec<(J, crate::yaml::Span)>;
fn addresses(
    v: &Node,
    id: &str,
    renderer: Option<&str>,
    diags: &mut Vec<Diagnostic>,
) -> (Placed, Placed) {
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    for a in v
        .get("addresses")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        let t = a.scalar_text().or_else(|| {
            a.as_map()
                .and_then(|m| m.first())
                .and_then(|(k, _)| k.scalar_text())
        });
        if a.as_map().is_some() && renderer == Some("NetworkManager") {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`{id}` is rendered by NetworkManager, which takes no address options (`lifetime`, `label`): netplan refuses the file"),
                )
                .at(a.span)
                .help("write the address as a plain \"address/prefix\" string, or render the device with networkd"),
            );
        }
        let parsed = t.as_deref().and_then(|t| {
            let (ip, p) = t.split_once('/')?;
            Some((ip.parse::<IpAddr>().ok()?, p.parse::<u8>().ok()?))
        });
        match parsed {
            Some((ip, p)) => {
                let list = if ip.is_ipv6() { &mut v6 } else { &mut v4 };
                list.push((json!({"ip": ip.to_string(), "prefix-length": p}), a.span));
            }
            None => diags.push(
                Diagnostic::error(
                    Code::IpInvalid,
                    format!(
                        "`{}` is no address with a prefix length (netplan requires `/prefix`)",
                        t.unwrap_or_default()
                    ),
                )
                .at(a.span),
            ),
        }
    }
    (v4, v6)
}

/// What devices add to the state beside themselves: routes (and the
/// deprecated `gateway4`/`gateway6`), name servers and search domains.
#[derive(Default)]
struct Resolver {
    routes: Vec<J>,
    dns: Vec<String>,
    search: Vec<String>,
}

impl Resolver {
    fn add(&mut self, v: &Node, name: &str, spans: &mut JsonSpans, diags: &mut Vec<Diagnostic>) {
        for (key, default) in [("gateway4", "0.0.0.0/0"), ("gateway6", "::/0")] {
            if let Some(g) = v.get(key) {
                diags.push(
                    Diagnostic::warning(
                        Code::InvalidValue,
                        format!("`{key}` is deprecated: netplan warns about it; write a route `to: default` with `via`"),
                    )
                    .at(g.span),
                );
                spans.at(format!("/routes/config/{}", self.routes.len()), g.span);
                self.routes.push(json!({
                    "destination": default,
                    "next-hop-address": g.scalar_text(),
                    "next-hop-interface": name,
                }));
            }
        }
        for r in v.get("routes").and_then(Node::as_seq).unwrap_or_default() {
            let via = text(r.get("via"));
            let v6 = via.as_deref().is_some_and(|v| v.contains(':'));
            let to = text(r.get("to")).unwrap_or_default();
            let destination = match to.as_str() {
                "default" => (if v6 { "::/0" } else { "0.0.0.0/0" }).to_string(),
                t if t.contains('/') => t.to_string(),
                t if t.contains(':') => format!("{t}/128"),
                t => format!("{t}/32"),
            };
            let mut route = Map::new();
            route.insert("destination".into(), json!(destination));
            if let Some(via) = via {
                route.insert("next-hop-address".into(), json!(via));
            }
            route.insert("next-hop-interface".into(), json!(name));
            for (key, field) in [("metric", "metric"), ("table", "table-id")] {
                if let Some(n) = text(r.get(key)).and_then(|t| t.parse::<u64>().ok()) {
                    route.insert(field.into(), json!(n));
                }
            }
            spans.at(format!("/routes/config/{}", self.routes.len()), r.span);
            self.routes.push(J::Object(route));
        }
        let ns = v.get("nameservers");
        for a in ns
            .and_then(|n| n.get("addresses"))
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            if let Some(t) = a.scalar_text().filter(|t| !self.dns.contains(t)) {
                spans.at(
                    format!("/dns-resolver/config/server/{}", self.dns.len()),
                    a.span,
                );
                self.dns.push(t);
            }
        }
        for s in ns
            .and_then(|n| n.get("search"))
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            if let Some(t) = s.scalar_text().filter(|t| !self.search.contains(t)) {
                self.search.push(t);
            }
        }
    }
}

/// Sections nodenet does not read (wifis, tunnels, ...) are said once
/// each, with where they are.
fn warn_unread_sections(net: &Node, diags: &mut Vec<Diagnostic>) {
    for (k, v) in net.as_map().unwrap_or_default() {
        let key = k.scalar_text().unwrap_or_default();
        if !["version", "renderer"].contains(&key.as_str())
            && !SECTIONS.iter().any(|(s, _)| *s == key)
        {
            diags.push(
                Diagnostic::warning(
                    Code::UnknownField,
                    format!("netplan `{key}` are not read: nodenet checks ethernets, bonds, VLANs and bridges"),
                )
                .at(k.span)
                .help(format!("the {} at {}:{} are left out of the checks", key, v.span.line, v.span.column)),
            );
        }
    }
}

/// A device: its section's type, its id, its definition, its renderer.
type Device<'n> = (&'static str, &'n Node, &'n Node, Option<String>);

/// Every device by id, with its renderer (its own, else its section's, else
/// the file's).
fn devices(net: &Node) -> Vec<Device<'_>> {
    let mut devices: Vec<Device> = Vec::new();
    let global = text(net.get("renderer"));
    for (section, kind) in SECTIONS {
        let section = net.get(section);
        // `renderer` may sit among the ids.
        let in_section = text(section.and_then(|s| s.get("renderer")));
        for (k, v) in section.and_then(Node::as_map).unwrap_or_default() {
            if k.as_str() == Some("renderer") {
                continue;
            }
            let renderer = text(v.get("renderer"))
                .or_else(|| in_section.clone())
                .or_else(|| global.clone());
            devices.push((kind, k, v, renderer));
        }
    }
    devices
}

/// The interface name of each id: an ethernet's `set-name`, or the
/// `match.name` that is no glob, else the id.
fn interface_names(devices: &[Device]) -> HashMap<String, String> {
    devices
        .iter()
        .map(|(kind, k, v, _)| {
            let id = k.scalar_text().unwrap_or_default();
            let named = (*kind == "ethernet")
                .then(|| {
                    text(v.get("set-name")).or_else(|| {
                        text(v.get("match").and_then(|m| m.get("name")))
                            .filter(|n| !n.contains(['*', '?', '[']))
                    })
                })
                .flatten();
            (id.clone(), named.unwrap_or(id))
        })
        .collect()
}

pub(crate) fn load(root: &Node, name: String, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut host = Host::new(Located::new(name, root.span), InputKind::Netplan);
    let Some(net) = network(root) else {
        return Inventory::default();
    };
    if let Some(v) = net.get("version") {
        if v.scalar_text().as_deref() != Some("2") {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    "netplan reads `version: 2` only (version 1 is cloud-init's older format)",
                )
                .at(v.span),
            );
            return Inventory::default();
        }
    }
    warn_unread_sections(net, diags);
    let devices = devices(net);
    let names = interface_names(&devices);
    let name_of = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_string());
    let mut spans = JsonSpans::default();
    let mut ifaces: Vec<J> = Vec::new();
    let mut resolver = Resolver::default();
    for (kind, k, v, renderer) in &devices {
        let id = k.scalar_text().unwrap_or_default();
        let name = name_of(&id);
        let index = ifaces.len();
        let at = format!("/interfaces/{index}");
        spans.at(at.clone(), k.span);
        let mut i = Map::new();
        i.insert("name".into(), json!(name));
        i.insert("type".into(), json!(kind));
        i.insert("state".into(), json!("up"));
        match *kind {
            "ethernet" => {
                let mac = v
                    .get("match")
                    .and_then(|m| m.get("macaddress"))
                    .and_then(|m| m.scalar_text().map(|t| Located::new(t, m.span)));
                host.nics
                    .push(Nic::new(Located::new(name.clone(), k.span), mac));
            }
            "bond" => {
                let la = link_aggregation(v, &name_of, &at, &mut spans, diags);
                i.insert("link-aggregation".into(), la);
            }
            "vlan" => {
                let vid = text(v.get("id")).and_then(|t| t.parse::<u64>().ok());
                let link = text(v.get("link")).map(|l| name_of(&l));
                i.insert("vlan".into(), json!({"base-iface": link, "id": vid}));
            }
            _ => {
                i.insert("bridge".into(), bridge(v, &name_of, diags));
            }
        }
        if let Some(mtu) = text(v.get("mtu")).and_then(|m| m.parse::<u64>().ok()) {
            i.insert("mtu".into(), json!(mtu));
        }
        if *kind != "ethernet" {
            if let Some(mac) = text(v.get("macaddress")).filter(|m| crate::fields::is_mac(m)) {
                i.insert("mac-address".into(), json!(mac));
            }
        }
        let (v4, v6) = addresses(v, &id, renderer.as_deref(), diags);
        let flag =
            |key: &str, diags: &mut Vec<Diagnostic>| v.get(key).and_then(|n| boolean(n, diags));
        let dhcp4 = flag("dhcp4", diags).unwrap_or(false);
        let dhcp6 = flag("dhcp6", diags).unwrap_or(false);
        let accept_ra = flag("accept-ra", diags);
        for (fam, list, dhcp) in [("ipv4", &v4, dhcp4), ("ipv6", &v6, dhcp6)] {
            let enabled = dhcp || !list.is_empty() || fam == "ipv6" && accept_ra == Some(true);
            let mut ip = Map::new();
            ip.insert("enabled".into(), json!(enabled));
            if enabled {
                ip.insert("dhcp".into(), json!(dhcp));
                if fam == "ipv6" {
                    // NetworkManager takes router advertisements with DHCPv6.
                    ip.insert("autoconf".into(), json!(accept_ra.unwrap_or(dhcp6)));
                }
                if !list.is_empty() {
                    for (k, (_, sp)) in list.iter().enumerate() {
                        spans.at(format!("{at}/{fam}/address/{k}"), *sp);
                    }
                    ip.insert(
                        "address".into(),
                        J::Array(list.iter().map(|(a, _)| a.clone()).collect()),
                    );
                }
            }
            i.insert(fam.into(), J::Object(ip));
        }
        resolver.add(v, &name, &mut spans, diags);
        ifaces.push(J::Object(i));
    }
    host.nics_listed = !host.nics.is_empty();
    let Resolver {
        routes,
        dns,
        search,
    } = resolver;
    let mut state = json!({"interfaces": ifaces});
    if !routes.is_empty() {
        state["routes"] = json!({"config": routes});
    }
    if !dns.is_empty() || !search.is_empty() {
        let mut config = Map::new();
        if !dns.is_empty() {
            config.insert("server".into(), json!(dns));
        }
        if !search.is_empty() {
            config.insert("search".into(), json!(search));
        }
        state["dns-resolver"] = json!({"config": config});
    }
    host.network = Some(spans.node(&state, net.span));
    host.projected_network = true;
    Inventory {
        hosts: vec![host],
        ..Inventory::default()
    }
}

#[cfg(test)]
mod tests {
    use super::time_value;

    /// Addresses with options (networkd's `lifetime`, `label`) are
    /// addresses all the same; a renderer among the ids is no device.
    #[test]
    fn addresses_with_options_and_renderers_among_ids_are_read() {
        let text = "network:\n  version: 2\n  ethernets:\n    renderer: networkd\n    eth0:\n      addresses:\n      - 10.0.0.5/24\n      - \"10.0.1.5/24\":\n          lifetime: 0\n          label: eth0:1\n";
        let loaded = crate::load_texts(vec![("h.yaml".into(), text.into())]);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        let hosts = &loaded.inventory.hosts;
        assert_eq!(hosts.len(), 1);
        let state = hosts[0].network.as_ref().unwrap().to_json();
        let ifaces = state["interfaces"].as_array().unwrap();
        assert_eq!(ifaces.len(), 1, "{state}");
        assert_eq!(
            ifaces[0]["ipv4"]["address"],
            serde_json::json!([
                {"ip": "10.0.0.5", "prefix-length": 24},
                {"ip": "10.0.1.5", "prefix-length": 24}
            ])
        );
    }

    #[test]
    fn bond_times_are_milliseconds_unless_they_say_otherwise() {
        assert_eq!(time_value("100", false).as_deref(), Some("100"));
        assert_eq!(time_value("100ms", false).as_deref(), Some("100"));
        assert_eq!(time_value("1s", false).as_deref(), Some("1000"));
        assert_eq!(time_value("0.5s", false).as_deref(), Some("500"));
        assert_eq!(time_value("30s", true).as_deref(), Some("30"));
        assert_eq!(time_value("fast", false), None);
    }
}
