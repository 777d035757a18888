//! NetworkManager profiles → NMState. Every setting is either mapped,
//! recognised as a value nmstate writes by itself (so `gc` → `import` →
//! `gc` is the identity), or reported as a located warning.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use ipnet::IpNet;
use serde_json::{json, Map, Value as J};

use nodenet_model::{Code, Diagnostic};

use crate::keyfile::{canonical_type, Entry, Group, Keyfile};

/// One profile and what it says about its place in the stack.
struct Conn<'a> {
    kf: &'a Keyfile,
    id: String,
    uuid: Option<String>,
    kind: String,
    iface: Option<String>,
    controller: Option<&'a Entry>,
    port_type: Option<String>,
}

impl Conn<'_> {
    /// The interface name nmstate knows the profile by.
    fn name(&self) -> String {
        self.iface.clone().unwrap_or_else(|| self.id.clone())
    }
}

/// nmstate interface type for a NetworkManager connection type.
fn nmstate_type(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "ethernet" => "ethernet",
        "bond" => "bond",
        "vlan" => "vlan",
        "bridge" => "linux-bridge",
        "ovs-bridge" => "ovs-bridge",
        "ovs-interface" => "ovs-interface",
        "ovs-port" => "ovs-port",
        "dummy" => "dummy",
        "loopback" => "loopback",
        "vrf" => "vrf",
        "vxlan" => "vxlan",
        "macvlan" => "mac-vlan",
        "veth" => "veth",
        "infiniband" => "infiniband",
        _ => return None,
    })
}

/// Warnings and errors go here, attached to the file they came from.
struct Findings<'d> {
    out: &'d mut Vec<Diagnostic>,
    strict: bool,
}

impl Findings<'_> {
    fn unmapped(&mut self, e: &Entry, group: &str, why: &str) {
        let msg = format!("`{}={}` in [{group}] is not imported: {why}", e.key, e.raw);
        let d = if self.strict {
            Diagnostic::error(Code::KeyfileUnmapped, msg)
        } else {
            Diagnostic::warning(Code::KeyfileUnmapped, msg)
        };
        self.out.push(d.at(e.span));
    }

    fn invalid(&mut self, e: &Entry, msg: impl Into<String>) {
        self.out
            .push(Diagnostic::error(Code::KeyfileInvalid, msg).at(e.span));
    }
}

/// Keys NetworkManager writes that carry no intent nmstate expresses
/// differently, with the values that mean "nmstate's default".
fn is_default(group: &str, key: &str, value: &str) -> bool {
    matches!(
        (group, key, value),
        (_, "dhcp-timeout", "2147483647")
            | (_, "ra-timeout", "2147483647")
            | ("ipv6", "addr-gen-mode", "0" | "eui64")
            | (_, "dns-priority", "40" | "50")
            | ("ipv4", "dhcp-client-id", "mac")
            | (_, "dhcp-send-hostname", "true")
            | ("ipv6", "dhcp-duid", "ll")
            | ("ipv6", "dhcp-iaid", "mac")
            | (_, "ignore-auto-dns", "false")
            | (_, "ignore-auto-routes", "false")
            | (_, "never-default", "false")
            | ("connection", "autoconnect", "true")
            | ("connection", "autoconnect-ports", "-1" | "1" | "true")
            | ("vlan", "flags", "1")
            | ("ovs-interface", "type", "internal")
            | ("bridge", "vlan-filtering", _)
            | ("ovs-port", "lacp", "off")
            | (
                "connection",
                "multi-connect",
                "1" | "single" | "0" | "default"
            )
    )
}

/// [connection] keys every profile's mapping consumes.
const CONNECTION_KEYS: &[(&str, &str)] = &[
    ("connection", "id"),
    ("connection", "uuid"),
    ("connection", "type"),
    ("connection", "interface-name"),
    ("connection", "controller"),
    ("connection", "port-type"),
    ("connection", "autoconnect"),
    // NetworkManager's record of the last activation (it writes it into
    // the keyfile), not configuration.
    ("connection", "timestamp"),
];

/// Converts profiles into one NMState document.
pub fn convert(keyfiles: &[Keyfile], strict: bool, out: &mut Vec<Diagnostic>) -> J {
    let mut f = Findings { out, strict };
    let mut conns = Vec::new();
    for kf in keyfiles {
        let Some(c) = kf.group("connection") else {
            let span = kf.groups.first().map(|g| g.span);
            let mut d = Diagnostic::error(
                Code::KeyfileInvalid,
                format!("{}: no [connection] group", kf.name),
            );
            if let Some(s) = span {
                d = d.at(s);
            }
            f.out.push(d);
            continue;
        };
        let Some(kind) = c.get("type") else {
            f.out.push(
                Diagnostic::error(Code::KeyfileInvalid, "[connection] has no `type`").at(c.span),
            );
            continue;
        };
        let kind_s = canonical_type(&kind.value()).to_string();
        if nmstate_type(&kind_s).is_none() {
            f.invalid(
                kind,
                format!("connection type `{kind_s}` cannot be expressed in NMState"),
            );
            continue;
        }
        conns.push(Conn {
            kf,
            id: c
                .get("id")
                .map(Entry::value)
                .unwrap_or_else(|| kf.name.trim_end_matches(".nmconnection").to_string()),
            uuid: c.get("uuid").map(Entry::value),
            kind: kind_s,
            iface: c.get("interface-name").map(Entry::value),
            controller: c.get("controller"),
            port_type: c.get("port-type").map(Entry::value),
        });
    }
    // Stable order whatever the file order: by interface name, then type.
    conns.sort_by_key(|c| (c.name(), c.kind.clone()));

    // Controller of each connection (index), resolved by UUID, interface
    // name (of the right type) or id; indexed, for 10,000-file imports.
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    let mut by_iface: HashMap<(&str, &str), usize> = HashMap::new();
    let mut by_id: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, c) in conns.iter().enumerate() {
        if let Some(u) = &c.uuid {
            by_uuid.entry(u).or_insert(i);
        }
        if let Some(n) = &c.iface {
            by_iface.entry((n, &c.kind)).or_insert(i);
            by_iface.entry((n, "")).or_insert(i);
        }
        by_id.entry((&c.id, &c.kind)).or_insert(i);
        by_id.entry((&c.id, "")).or_insert(i);
    }
    let resolve = |r: &str, want: &str| -> Option<usize> {
        by_uuid
            .get(r)
            .or_else(|| by_iface.get(&(r, want)))
            .or_else(|| by_id.get(&(r, want)))
            .copied()
    };
    let mut children_of: Vec<Vec<usize>> = vec![Vec::new(); conns.len()];
    for (i, c) in conns.iter().enumerate() {
        let Some(e) = c.controller else { continue };
        // The port type names the controller's type (`bond`, `bridge`,
        // `ovs-port`, `ovs-bridge`); without one, any type.
        let want = c.port_type.as_deref().unwrap_or("");
        match resolve(&e.value(), want) {
            Some(j) => {
                children_of[j].push(i);
            }
            None => f.invalid(
                e,
                format!(
                    "controller `{}` is no profile among the imported ones",
                    e.value()
                ),
            ),
        }
    }
    let children = |j: usize| -> Vec<usize> { children_of[j].clone() };

    let mut interfaces = Vec::new();
    let mut routes = Vec::new();
    let mut dns_servers: Vec<String> = Vec::new();
    let mut dns_search: Vec<String> = Vec::new();
    for (i, c) in conns.iter().enumerate() {
        if c.kind == "ovs-port" {
            let mut used = CONNECTION_KEYS.to_vec();
            used.push(("ovs-port", "bond-mode"));
            check_leftovers(c.kf, &["connection", "ovs-port"], &mut f, &used);
            continue;
        }
        let mut iface = Map::new();
        let name = c.name();
        iface.insert("name".into(), json!(name));
        iface.insert(
            "type".into(),
            json!(nmstate_type(&c.kind).unwrap_or("ethernet")),
        );
        let autoconnect = c.kf.value("connection", "autoconnect");
        iface.insert(
            "state".into(),
            json!(if autoconnect.as_deref() == Some("false") {
                "down"
            } else {
                "up"
            }),
        );
        let mut used: Vec<(&str, &str)> = CONNECTION_KEYS.to_vec();
        if c.port_type.as_deref() == Some("bridge") {
            // Read by the bridge (bridge_port) when it lists its ports.
            used.push(("bridge-port", "vlans"));
        }
        // Ethernet-level settings.
        if let Some(mtu) = c.kf.get("ethernet", "mtu") {
            match mtu.value().parse::<u64>() {
                Ok(m) => {
                    iface.insert("mtu".into(), json!(m));
                }
                Err(_) => f.invalid(mtu, format!("mtu `{}` is not a number", mtu.value())),
            }
            used.push(("ethernet", "mtu"));
        }
        if let Some(mac) = c.kf.get("ethernet", "cloned-mac-address") {
            iface.insert("mac-address".into(), json!(mac.value()));
            used.push(("ethernet", "cloned-mac-address"));
        }
        if let Some(mac) = c.kf.get("ethernet", "mac-address") {
            if c.iface.is_none() {
                iface.insert("identifier".into(), json!("mac-address"));
                iface.insert("mac-address".into(), json!(mac.value()));
                used.push(("ethernet", "mac-address"));
            }
        }
        match c.kind.as_str() {
            "bond" => {
                let mut la = Map::new();
                let mut options = Map::new();
                if let Some(g) = c.kf.group("bond") {
                    for e in &g.entries {
                        if e.key == "mode" {
                            la.insert("mode".into(), json!(e.value()));
                        } else {
                            options.insert(e.key.clone(), option_value(&e.value()));
                        }
                    }
                }
                if !options.is_empty() {
                    la.insert("options".into(), J::Object(options));
                }
                let ports: Vec<String> = children(i).iter().map(|&k| conns[k].name()).collect();
                la.insert("port".into(), json!(ports));
                iface.insert("link-aggregation".into(), J::Object(la));
                used.push(("bond", "*"));
            }
            "vlan" => {
                let mut vlan = Map::new();
                // A missing setting is reported at the [vlan] header.
                let vlan_at =
                    c.kf.group("vlan")
                        .map(|g| g.span)
                        .unwrap_or(c.kf.groups[0].span);
                let missing = |f: &mut Findings, msg: String| {
                    f.out
                        .push(Diagnostic::error(Code::KeyfileInvalid, msg).at(vlan_at))
                };
                match c.kf.get("vlan", "parent") {
                    Some(p) => {
                        let parent = p.value();
                        let base = conns
                            .iter()
                            .find(|o| o.uuid.as_deref() == Some(parent.as_str()))
                            .map(|o| o.name())
                            .unwrap_or(parent);
                        vlan.insert("base-iface".into(), json!(base));
                    }
                    None => missing(&mut f, format!("VLAN `{name}` has no `parent=`")),
                }
                match c.kf.get("vlan", "id") {
                    Some(id) => match id.value().parse::<u16>() {
                        Ok(n) => {
                            vlan.insert("id".into(), json!(n));
                        }
                        Err(_) => {
                            f.invalid(id, format!("VLAN id `{}` is not a number", id.value()))
                        }
                    },
                    None => missing(&mut f, format!("VLAN `{name}` has no `id=`")),
                }
                if let Some(p) = c.kf.value("vlan", "protocol") {
                    vlan.insert("protocol".into(), json!(p));
                }
                iface.insert("vlan".into(), J::Object(vlan));
                used.extend([
                    ("vlan", "parent"),
                    ("vlan", "id"),
                    ("vlan", "protocol"),
                    ("vlan", "flags"),
                ]);
            }
            "bridge" => {
                let mut options = Map::new();
                let mut stp = Map::new();
                if let Some(g) = c.kf.group("bridge") {
                    for e in &g.entries {
                        let v = e.value();
                        match e.key.as_str() {
                            "stp" => {
                                stp.insert("enabled".into(), json!(v == "true"));
                            }
                            "forward-delay" | "hello-time" | "max-age" | "priority" => {
                                stp.insert(e.key.clone(), option_value(&v));
                            }
                            "vlan-filtering" => {}
                            "mac-ageing-time" | "ageing-time" => {
                                options.insert("mac-ageing-time".into(), option_value(&v));
                            }
                            "multicast-snooping" => {
                                options.insert("multicast-snooping".into(), json!(v == "true"));
                            }
                            _ => {
                                f.unmapped(e, "bridge", "no NMState equivalent handled by nodenet")
                            }
                        }
                    }
                }
                // NetworkManager's default is STP on.
                if !stp.contains_key("enabled") {
                    stp.insert("enabled".into(), json!(true));
                }
                options.insert("stp".into(), J::Object(stp));
                let ports: Vec<J> = children(i)
                    .iter()
                    .map(|&k| bridge_port(&conns[k], &mut f))
                    .collect();
                iface.insert("bridge".into(), json!({"options": options, "port": ports}));
                used.push(("bridge", "*"));
            }
            "ovs-bridge" => {
                let mut bridge = Map::new();
                if let Some(stp) = c.kf.value("ovs-bridge", "stp-enable") {
                    bridge.insert("options".into(), json!({"stp": stp == "true"}));
                }
                let mut ports = Vec::new();
                for &p in &children(i) {
                    let port = &conns[p];
                    let members = children(p);
                    if port.kind != "ovs-port" {
                        ports.push(json!({"name": port.name()}));
                    } else if members.len() > 1 {
                        let mut la = Map::new();
                        if let Some(mode) = port.kf.value("ovs-port", "bond-mode") {
                            la.insert("mode".into(), json!(mode));
                        }
                        la.insert(
                            "port".into(),
                            J::Array(
                                members
                                    .iter()
                                    .map(|&m| json!({"name": conns[m].name()}))
                                    .collect(),
                            ),
                        );
                        ports.push(json!({"name": port.name(), "link-aggregation": la}));
                    } else if let Some(&m) = members.first() {
                        ports.push(json!({"name": conns[m].name()}));
                    }
                }
                bridge.insert("port".into(), J::Array(ports));
                iface.insert("bridge".into(), J::Object(bridge));
                used.push(("ovs-bridge", "stp-enable"));
            }
            _ => {}
        }
        // nmstate writes both families disabled, and no addr-gen-mode, for
        // an interface whose state has no ip settings at all: keep it so.
        let unset = |fam: &str| c.kf.value(fam, "method").as_deref() == Some("disabled");
        let no_ip = unset("ipv4") && unset("ipv6") && c.kf.get("ipv6", "addr-gen-mode").is_none();
        for fam in ["ipv4", "ipv6"] {
            if no_ip {
                used.push((fam, "*"));
                continue;
            }
            if let Some(g) = c.kf.group(fam) {
                let ip = ip_block(
                    fam,
                    g,
                    &name,
                    &mut routes,
                    &mut dns_servers,
                    &mut dns_search,
                    &mut f,
                );
                iface.insert(fam.into(), ip);
                used.push((fam, "*"));
            }
        }
        check_leftovers(
            c.kf,
            &[
                "connection",
                "ethernet",
                "bond",
                "vlan",
                "bridge",
                "ovs-bridge",
                "ovs-interface",
                "ipv4",
                "ipv6",
                "bridge-port",
            ],
            &mut f,
            &used,
        );
        interfaces.push(J::Object(iface));
    }
    let mut doc = Map::new();
    if !dns_servers.is_empty() || !dns_search.is_empty() {
        let mut config = Map::new();
        if !dns_search.is_empty() {
            config.insert("search".into(), json!(dns_search));
        }
        if !dns_servers.is_empty() {
            config.insert("server".into(), json!(dns_servers));
        }
        doc.insert("dns-resolver".into(), json!({ "config": config }));
    }
    if !routes.is_empty() {
        doc.insert("routes".into(), json!({ "config": routes }));
    }
    doc.insert("interfaces".into(), J::Array(interfaces));
    J::Object(doc)
}

/// A bridge port with its VLAN filtering (`vlans=101 pvid untagged` is an
/// access port, `vlans=101,200-299` a trunk).
fn bridge_port(port: &Conn, f: &mut Findings) -> J {
    let mut p = Map::new();
    p.insert("name".into(), json!(port.name()));
    if let Some(v) = port.kf.get("bridge-port", "vlans") {
        let items: Vec<String> = v
            .value()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let access = items.len() == 1 && items[0].contains("pvid") && items[0].contains("untagged");
        if access {
            let tag = items[0].split_whitespace().next().unwrap_or("");
            p.insert(
                "vlan".into(),
                json!({"mode": "access", "tag": option_value(tag)}),
            );
        } else {
            let mut tags = Vec::new();
            let mut native = None;
            for item in &items {
                let mut words = item.split_whitespace();
                let range = words.next().unwrap_or("");
                let flags: Vec<&str> = words.collect();
                if flags.contains(&"pvid") {
                    native = Some(range.to_string());
                    continue;
                }
                match range.split_once('-') {
                    Some((a, b)) => tags.push(
                        json!({"id-range": {"min": option_value(a), "max": option_value(b)}}),
                    ),
                    None => tags.push(json!({"id": option_value(range)})),
                }
            }
            let mut vlan = Map::new();
            vlan.insert("mode".into(), json!("trunk"));
            if let Some(n) = native {
                vlan.insert("enable-native".into(), json!(true));
                vlan.insert("tag".into(), option_value(&n));
            }
            vlan.insert("trunk-tags".into(), J::Array(tags));
            p.insert("vlan".into(), J::Object(vlan));
        }
    }
    if let Some(g) = port.kf.group("bridge-port") {
        for e in g.entries.iter().filter(|e| e.key != "vlans") {
            f.unmapped(e, "bridge-port", "per-port bridge options are not imported");
        }
    }
    J::Object(p)
}

/// Numbers stay numbers, `true`/`false` booleans, the rest text.
fn option_value(v: &str) -> J {
    if let Ok(n) = v.parse::<u64>() {
        json!(n)
    } else if v == "true" || v == "false" {
        json!(v == "true")
    } else {
        json!(v)
    }
}

/// `[ipv4]`/`[ipv6]` → NMState ip block; routes and DNS go to the
/// document-wide lists.
fn ip_block(
    fam: &str,
    g: &Group,
    iface: &str,
    routes: &mut Vec<J>,
    dns: &mut Vec<String>,
    search: &mut Vec<String>,
    f: &mut Findings,
) -> J {
    let v6 = fam == "ipv6";
    let mut ip = Map::new();
    let method = g
        .get("method")
        .map(Entry::value)
        .unwrap_or_else(|| "auto".into());
    match method.as_str() {
        "disabled" => {
            ip.insert("enabled".into(), json!(false));
        }
        "auto" => {
            ip.insert("enabled".into(), json!(true));
            ip.insert("dhcp".into(), json!(true));
            if v6 {
                ip.insert("autoconf".into(), json!(true));
            }
        }
        "dhcp" if v6 => {
            ip.insert("enabled".into(), json!(true));
            ip.insert("dhcp".into(), json!(true));
            ip.insert("autoconf".into(), json!(false));
        }
        "manual" | "link-local" if method == "manual" || v6 => {
            ip.insert("enabled".into(), json!(true));
            ip.insert("dhcp".into(), json!(false));
            if v6 {
                ip.insert("autoconf".into(), json!(false));
            }
        }
        _ => {
            let e = g
                .get("method")
                .expect("a method that is not the default was written");
            f.unmapped(
                e,
                fam,
                "this method has no NMState equivalent; the family is imported as disabled",
            );
            ip.insert("enabled".into(), json!(false));
        }
    }
    let dynamic = matches!(method.as_str(), "auto" | "dhcp");
    let mut addresses = Vec::new();
    let mut route_entries: BTreeMap<u32, (Option<&Entry>, Option<&Entry>)> = BTreeMap::new();
    for e in &g.entries {
        let k = e.key.as_str();
        let v = e.value();
        if let Some(n) = k
            .strip_prefix("address")
            .map(|n| n.trim_start_matches('e').trim_start_matches('s'))
        {
            if n.chars().all(|c| c.is_ascii_digit()) {
                let mut parts = v.split(',');
                let cidr = parts.next().unwrap_or("").trim();
                match parse_cidr(cidr, v6) {
                    Some((addr, prefix)) => {
                        addresses.push(json!({"ip": addr.to_string(), "prefix-length": prefix}))
                    }
                    None => f.invalid(
                        e,
                        format!(
                            "`{cidr}` is not an {fam} address with a prefix (like {})",
                            if v6 { "fd00::5/64" } else { "192.168.1.5/24" }
                        ),
                    ),
                }
                if let Some(gw) = parts.next().map(str::trim).filter(|s| !s.is_empty()) {
                    match gw.parse::<IpAddr>() {
                        Ok(gw) => routes.push(json!({"destination": if v6 { "::/0" } else { "0.0.0.0/0" }, "next-hop-address": gw.to_string(), "next-hop-interface": iface})),
                        Err(_) => f.invalid(e, format!("gateway `{gw}` is not an address")),
                    }
                }
                continue;
            }
        }
        if let Some(rest) = k.strip_prefix("route") {
            if let Some(n) = rest
                .strip_suffix("_options")
                .and_then(|n| n.parse::<u32>().ok())
            {
                route_entries.entry(n).or_default().1 = Some(e);
                continue;
            }
            if let Ok(n) = rest.parse::<u32>() {
                route_entries.entry(n).or_default().0 = Some(e);
                continue;
            }
        }
        match (k, v.as_str()) {
            ("method", _) => {}
            ("gateway", gw) => match gw.parse::<IpAddr>() {
                Ok(gw) => routes.push(json!({"destination": if v6 { "::/0" } else { "0.0.0.0/0" }, "next-hop-address": gw.to_string(), "next-hop-interface": iface})),
                Err(_) => f.invalid(e, format!("gateway `{gw}` is not an address")),
            },
            ("dns", _) => {
                for s in e.list() {
                    match s.parse::<IpAddr>() {
                        Ok(_) => dns.push(s),
                        Err(_) => f.invalid(e, format!("DNS server `{s}` is not an address")),
                    }
                }
            }
            ("dns-search", _) => search.extend(e.list()),
            ("ignore-auto-dns", "true") if dynamic => {
                ip.insert("auto-dns".into(), json!(false));
            }
            ("ignore-auto-routes", "true") if dynamic => {
                ip.insert("auto-routes".into(), json!(false));
            }
            ("never-default", "true") if dynamic => {
                ip.insert("auto-gateway".into(), json!(false));
            }
            ("route-table", n) if dynamic => {
                ip.insert("auto-route-table-id".into(), option_value(n));
            }
            ("route-metric", n) if dynamic => {
                ip.insert("auto-route-metric".into(), option_value(n));
            }
            // `default` is NetworkManager's global default, stable-privacy.
            ("addr-gen-mode", "1" | "stable-privacy" | "default" | "default-or-eui64") if v6 => {
                ip.insert("addr-gen-mode".into(), json!("stable-privacy"));
            }
            (k, v) if is_default(fam, k, v) => {}
            _ => f.unmapped(e, fam, "no NMState equivalent handled by nodenet"),
        }
    }
    for (_, (route, options)) in route_entries {
        let Some(route) = route else { continue };
        let v = route.value();
        let parts: Vec<&str> = v.split(',').map(str::trim).collect();
        let Some((dest, prefix)) = parse_cidr(parts[0], v6).or_else(|| {
            // A bare address is a host route.
            parts[0]
                .parse::<IpAddr>()
                .ok()
                .map(|a| (a, if a.is_ipv4() { 32 } else { 128 }))
        }) else {
            f.invalid(
                route,
                format!("route destination `{}` is not a network", parts[0]),
            );
            continue;
        };
        let net = IpNet::new(dest, prefix)
            .map(|n| n.trunc().to_string())
            .unwrap_or_default();
        let mut r = Map::new();
        r.insert("destination".into(), json!(net));
        if let Some(hop) = parts.get(1).filter(|h| !h.is_empty()) {
            match hop.parse::<IpAddr>() {
                Ok(h) => {
                    r.insert("next-hop-address".into(), json!(h.to_string()));
                }
                Err(_) => f.invalid(route, format!("next hop `{hop}` is not an address")),
            }
        }
        r.insert("next-hop-interface".into(), json!(iface));
        if let Some(m) = parts
            .get(2)
            .and_then(|m| m.parse::<u32>().ok())
            .filter(|m| *m != 0)
        {
            r.insert("metric".into(), json!(m));
        }
        if let Some(o) = options {
            for kv in o.value().split(',') {
                match kv.trim().split_once('=') {
                    Some(("table", "254")) => {}
                    Some(("table", t)) => {
                        r.insert("table-id".into(), option_value(t));
                    }
                    _ => f.unmapped(o, fam, &format!("route option `{kv}` is not imported")),
                }
            }
        }
        routes.push(J::Object(r));
    }
    if !addresses.is_empty() {
        ip.insert("address".into(), J::Array(addresses));
    }
    J::Object(ip)
}

fn parse_cidr(s: &str, v6: bool) -> Option<(IpAddr, u8)> {
    let (a, p) = s
        .split_once('/')
        .unwrap_or((s, if v6 { "128" } else { "32" }));
    let addr: IpAddr = a.trim().parse().ok()?;
    let prefix: u8 = p.trim().parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    (addr.is_ipv6() == v6 && prefix <= max).then_some((addr, prefix))
}

/// Reports every key of `groups` this importer did not consume and that
/// is not a default nmstate writes itself; groups it does not know at all
/// are reported once, at their header.
fn check_leftovers(kf: &Keyfile, groups: &[&str], f: &mut Findings, used: &[(&str, &str)]) {
    for g in &kf.groups {
        // nmcli writes empty [ethernet], [proxy], [bond-port] groups.
        if g.entries.is_empty() {
            continue;
        }
        if !groups.contains(&g.name.as_str()) {
            f.out.push(
                if f.strict {
                    Diagnostic::error(
                        Code::KeyfileUnmapped,
                        format!("[{}] is not imported", g.name),
                    )
                } else {
                    Diagnostic::warning(
                        Code::KeyfileUnmapped,
                        format!("[{}] is not imported", g.name),
                    )
                }
                .at(g.span),
            );
            continue;
        }
        for e in &g.entries {
            let consumed = used
                .iter()
                .any(|(ug, uk)| *ug == g.name && (*uk == "*" || *uk == e.key));
            if !consumed && !is_default(&g.name, &e.key, &e.value()) {
                f.unmapped(e, &g.name, "no NMState equivalent handled by nodenet");
            }
        }
    }
}
