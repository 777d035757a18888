//! NetworkManager profiles → NMState. Every setting is either mapped,
//! recognised as a value nmstate writes by itself (so `gc` → `import` →
//! `gc` is the identity), or reported as a located warning. Values
//! NetworkManager itself ignores or reads in an old form are read as it
//! reads them, with a warning where it warns.

use std::collections::HashMap;
use std::net::IpAddr;

use ipnet::IpNet;
use serde_json::{json, Map, Value as J};

use nodenet_model::{Code, Diagnostic, Span};

use crate::keyfile::{Entry, Group, Keyfile};
use crate::profile::{self, nmstate_type, vlan_name, Profile, Read};
use crate::values::{list_key, read_ip_item, read_mac};

/// Warnings and errors go here, attached to the file they came from.
struct Findings<'d> {
    out: &'d mut Vec<Diagnostic>,
    strict: bool,
}

impl Findings<'_> {
    /// Something in the input is not imported, or not as written: a
    /// warning (an error with --strict).
    fn warn(&mut self, code: Code, span: Span, msg: impl Into<String>) {
        let d = if self.strict {
            Diagnostic::error(code, msg)
        } else {
            Diagnostic::warning(code, msg)
        };
        self.out.push(d.at(span));
    }

    fn unmapped(&mut self, e: &Entry, group: &str, why: &str) {
        self.warn(
            Code::KeyfileUnmapped,
            e.span,
            format!("`{}={}` in [{group}] is not imported: {why}", e.key, e.raw),
        );
    }

    /// A value NetworkManager ignores (or reads differently than written).
    fn ignored(&mut self, e: &Entry, group: &str, why: &str) {
        self.warn(
            Code::KeyfileInvalid,
            e.span,
            format!("`{}={}` in [{group}]: {why}", e.key, e.raw),
        );
    }

    /// Input NetworkManager rejects.
    fn invalid(&mut self, span: Span, msg: impl Into<String>) {
        self.out
            .push(Diagnostic::error(Code::KeyfileInvalid, msg).at(span));
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
            | (_, "may-fail", "true")
            | ("proxy", "method", "none")
            | ("bond-port", "queue-id" | "prio", "0")
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

/// Types whose profile gets `ipv4.method=auto` and `ipv6.method=auto`
/// from NetworkManager when it has no [ipv4]/[ipv6] group.
const IP_AUTO_BY_DEFAULT: &[&str] = &[
    "ethernet",
    "bond",
    "bridge",
    "vlan",
    "infiniband",
    "macvlan",
    "vxlan",
    "veth",
    "ovs-interface",
];

/// Converts profiles into one NMState document.
pub fn convert(keyfiles: &[&Keyfile], strict: bool, out: &mut Vec<Diagnostic>) -> J {
    let mut f = Findings { out, strict };
    let mut conns: Vec<Profile> = Vec::new();
    for &kf in keyfiles {
        match profile::read(kf) {
            Read::Profile(p) => conns.push(*p),
            Read::Skipped(d) => f.warn(d.code, d.span.unwrap_or_else(|| kf.header()), d.message),
            Read::Rejected(d) => f.out.push(d),
        }
    }
    name_vlans(&mut conns, &mut f);
    let mut conns = without_duplicates(conns, &mut f);
    // Stable order whatever the file order: by interface name, then type.
    conns.sort_by(|a, b| (&a.name, &a.kind).cmp(&(&b.name, &b.kind)));
    warn_duplicate_uuids(&conns, &mut f);

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
            .get(r.to_ascii_lowercase().as_str())
            .or_else(|| by_iface.get(&(r, want)))
            .or_else(|| by_id.get(&(r, want)))
            .copied()
    };
    let mut children_of: Vec<Vec<usize>> = vec![Vec::new(); conns.len()];
    // Ports whose controller is not among the profiles: imported on their
    // own.
    let mut orphan = vec![false; conns.len()];
    for (i, c) in conns.iter().enumerate() {
        let Some(e) = c.controller else { continue };
        // The port type names the controller's type (`bond`, `bridge`,
        // `ovs-port`, `ovs-bridge`).
        let want = c.port_type.as_deref().unwrap_or("");
        match resolve(&e.value(), want) {
            Some(j) => children_of[j].push(i),
            None => {
                orphan[i] = true;
                f.warn(
                    Code::KeyfileUnmapped,
                    e.span,
                    format!(
                        "controller `{}` is no profile among the imported ones: `{}` is imported without it",
                        e.value(),
                        c.name
                    ),
                );
            }
        }
    }
    let children = |j: usize| -> Vec<usize> { children_of[j].clone() };

    let mut interfaces = Vec::new();
    let mut routes = Vec::new();
    let mut dns_servers: Vec<String> = Vec::new();
    let mut dns_search: Vec<String> = Vec::new();
    for (i, c) in conns.iter().enumerate() {
        let mut used = c.used.clone();
        if c.kind == "ovs-port" {
            used.push(("ovs-port", "bond-mode"));
            check_leftovers(c.kf, &["connection", "ovs-port"], &mut f, &used);
            continue;
        }
        let mut iface = Map::new();
        iface.insert("name".into(), json!(c.name));
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
        if let Some(mac) = &c.mac_match {
            iface.insert("identifier".into(), json!("mac-address"));
            iface.insert("mac-address".into(), json!(mac));
            if !c.nmstate_named {
                iface.insert("profile-name".into(), json!(c.id));
            }
        } else if c.iface.is_none() && c.id != c.name {
            // A VLAN named by NetworkManager keeps its profile's name.
            iface.insert("profile-name".into(), json!(c.id));
        }
        if c.port_type.as_deref() == Some("bridge") && !orphan[i] {
            // Read by the bridge (bridge_port) when it lists its ports.
            used.push(("bridge-port", "*"));
        }
        ethernet(c, &mut iface, &mut used, &mut f);
        match c.kind.as_str() {
            "bond" => {
                let mut la = Map::new();
                let mut options = Map::new();
                if let Some(g) = c.kf.group("bond") {
                    for e in g.entries.iter().filter(|e| e.key != "interface-name") {
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
                let ports: Vec<String> =
                    children(i).iter().map(|&k| conns[k].name.clone()).collect();
                la.insert("port".into(), json!(ports));
                iface.insert("link-aggregation".into(), J::Object(la));
                used.push(("bond", "*"));
            }
            "vlan" => {
                let mut vlan = Map::new();
                if let Some(base) = vlan_parent(c, &conns) {
                    vlan.insert("base-iface".into(), json!(base));
                }
                vlan.insert("id".into(), json!(vlan_id(c, &mut f)));
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
                    for e in g.entries.iter().filter(|e| e.key != "interface-name") {
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
                        ports.push(json!({"name": port.name}));
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
                                    .map(|&m| json!({"name": conns[m].name}))
                                    .collect(),
                            ),
                        );
                        ports.push(json!({"name": port.name, "link-aggregation": la}));
                    } else if let Some(&m) = members.first() {
                        ports.push(json!({"name": conns[m].name}));
                    }
                }
                bridge.insert("port".into(), J::Array(ports));
                iface.insert("bridge".into(), J::Object(bridge));
                used.push(("ovs-bridge", "stp-enable"));
            }
            "infiniband" => {
                infiniband(c, &mut iface, &mut used, &mut f);
            }
            _ => {}
        }
        // nmstate writes both families disabled, and no addr-gen-mode, for
        // an interface whose state has no ip settings at all: keep it so.
        let unset = |fam: &str| c.kf.value(fam, "method").as_deref() == Some("disabled");
        let no_ip = unset("ipv4") && unset("ipv6") && c.kf.get("ipv6", "addr-gen-mode").is_none();
        // NetworkManager drops the IP settings of a port (VRF ports and
        // OVS interfaces keep them).
        let port =
            c.is_port() && c.port_type.as_deref() != Some("vrf") && c.kind != "ovs-interface";
        for fam in ["ipv4", "ipv6"] {
            used.push((fam, "*"));
            if no_ip {
                continue;
            }
            let group = c.kf.group(fam);
            if port {
                if let Some(g) = group.filter(|g| g.entries.iter().any(|e| !e.raw.is_empty())) {
                    f.warn(
                        Code::KeyfileInvalid,
                        g.span,
                        format!("[{fam}] of a port: NetworkManager ignores it"),
                    );
                }
                continue;
            }
            let small_mtu = iface.get("mtu").and_then(J::as_u64).filter(|m| *m < 1280);
            let v6_wanted = group.map_or(IP_AUTO_BY_DEFAULT.contains(&c.kind.as_str()), |g| {
                !matches!(
                    g.get("method").map(Entry::value).as_deref(),
                    Some("disabled" | "ignore")
                )
            });
            if let (true, Some(m), true) = (fam == "ipv6", small_mtu, v6_wanted) {
                let at = ["ethernet", "infiniband"]
                    .iter()
                    .find_map(|g| c.kf.get(g, "mtu"))
                    .map_or_else(|| c.kf.header(), |e| e.span);
                let msg = format!(
                    "an MTU of {m} leaves no IPv6 (the kernel turns it off below 1280, \
                     nmstate refuses it): [ipv6] is imported as disabled"
                );
                f.warn(Code::KeyfileUnmapped, at, msg);
                iface.insert(fam.into(), json!({"enabled": false}));
                continue;
            }
            match group {
                Some(g) => {
                    let mut sink = Sink {
                        routes: &mut routes,
                        dns: &mut dns_servers,
                        search: &mut dns_search,
                    };
                    if let Some(ip) = ip_block(fam, g, &c.route_ref(), &mut sink, &mut f) {
                        iface.insert(fam.into(), ip);
                    }
                }
                None if IP_AUTO_BY_DEFAULT.contains(&c.kind.as_str()) => {
                    let mut ip = json!({"enabled": true, "dhcp": true});
                    if fam == "ipv6" {
                        ip["autoconf"] = json!(true);
                    }
                    iface.insert(fam.into(), ip);
                }
                None => {}
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
                "infiniband",
                "ipv4",
                "ipv6",
                "bridge-port",
                "bond-port",
                "proxy",
                ".nmmeta",
            ],
            &mut f,
            &used,
        );
        interfaces.push(J::Object(iface));
    }
    let mut doc = Map::new();
    // nmstate takes the IPv4 servers and the IPv6 servers as two runs;
    // each server and search domain once.
    dedup(&mut dns_servers);
    dedup(&mut dns_search);
    dns_servers.sort_by_key(|s| s.contains(':'));
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

/// Keeps the first of equal items.
fn dedup(items: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    items.retain(|i| seen.insert(i.clone()));
}

/// A VLAN without `interface-name` gets the name NetworkManager gives
/// it (`PARENT.ID`); one whose parent is known only by MAC (no
/// `parent=`, or a parent profile matched by MAC) cannot be named.
fn name_vlans(conns: &mut Vec<Profile>, f: &mut Findings) {
    let mut names = Vec::with_capacity(conns.len());
    for c in conns.iter() {
        if !c.name.is_empty() {
            names.push(Some(c.name.clone()));
            continue;
        }
        let parent = vlan_parent(c, conns).filter(|p| {
            // A parent matched by MAC has no interface name to build on.
            !conns
                .iter()
                .any(|o| o.mac_match.is_some() && !o.nmstate_named && o.name == *p)
        });
        let id =
            c.kf.value("vlan", "id")
                .and_then(|v| v.trim().parse::<u16>().ok())
                .filter(|v| *v < 4095)
                .unwrap_or(0);
        match parent {
            Some(p) => names.push(Some(vlan_name(&p, id))),
            None => {
                f.warn(
                    Code::KeyfileUnmapped,
                    c.kf.group("vlan").map(|g| g.span).unwrap_or_else(|| c.kf.header()),
                    format!(
                        "VLAN `{}` is not imported: it names neither its interface nor a parent interface (NetworkManager finds the parent by MAC), and NMState needs both",
                        c.id
                    ),
                );
                names.push(None);
            }
        }
    }
    let mut k = 0;
    conns.retain_mut(|c| {
        let n = names[k].take();
        k += 1;
        match n {
            Some(n) => {
                c.name = n;
                true
            }
            None => false,
        }
    });
}

/// A VLAN's `base-iface`: its `parent=` as an interface name (a parent
/// given by UUID is the interface of that profile).
fn vlan_parent(c: &Profile, conns: &[Profile]) -> Option<String> {
    let parent = c.kf.value("vlan", "parent").filter(|p| !p.is_empty())?;
    let lower = parent.to_ascii_lowercase();
    Some(
        conns
            .iter()
            .find(|o| o.uuid.as_deref() == Some(lower.as_str()))
            .map(|o| o.name.clone())
            .unwrap_or(parent),
    )
}

/// `[vlan] id=`, as NetworkManager reads it: 0 when absent or not a
/// number in 0-4094 (with a warning then).
fn vlan_id(c: &Profile, f: &mut Findings) -> u16 {
    let Some(e) = c.kf.get("vlan", "id") else {
        return 0;
    };
    match e.value().trim().parse::<u16>() {
        Ok(n) if n < 4095 => n,
        _ => {
            f.ignored(
                e,
                "vlan",
                "not a VLAN id (0-4094): NetworkManager ignores it and uses 0",
            );
            0
        }
    }
}

/// NMState has one interface per name: of several profiles for one
/// interface, the one NetworkManager would activate (autoconnect first,
/// then higher `autoconnect-priority`, then the most recent `timestamp`,
/// then the first file) is imported, the others are warned about.
fn without_duplicates<'a>(conns: Vec<Profile<'a>>, f: &mut Findings) -> Vec<Profile<'a>> {
    let rank = |c: &Profile| {
        let num = |k: &str| {
            c.kf.value("connection", k)
                .and_then(|v| v.trim().parse::<i64>().ok())
                .unwrap_or(0)
        };
        (
            c.kf.value("connection", "autoconnect").as_deref() != Some("false"),
            num("autoconnect-priority"),
            num("timestamp"),
        )
    };
    let mut best: HashMap<(String, String), usize> = HashMap::new();
    for (i, c) in conns.iter().enumerate() {
        let key = (c.name.clone(), c.kind.clone());
        match best.get(&key) {
            Some(&j) if rank(&conns[j]) >= rank(c) => {}
            _ => {
                best.insert(key, i);
            }
        }
    }
    let mut kept = Vec::new();
    for (i, c) in conns.into_iter().enumerate() {
        let j = best[&(c.name.clone(), c.kind.clone())];
        if i == j {
            kept.push(Some(c));
        } else {
            f.warn(
                Code::KeyfileUnmapped,
                c.kf.header(),
                format!(
                    "profile `{}` is not imported: another profile for interface `{}` is (NMState has one per interface)",
                    c.id, c.name
                ),
            );
            kept.push(None);
        }
    }
    kept.into_iter().flatten().collect()
}

/// NetworkManager loads one profile per UUID.
fn warn_duplicate_uuids(conns: &[Profile], f: &mut Findings) {
    let mut seen: HashMap<&str, &Profile> = HashMap::new();
    for c in conns {
        let Some(u) = c.uuid.as_deref() else { continue };
        if let Some(first) = seen.get(u) {
            if let Some(e) = c.kf.get("connection", "uuid") {
                f.ignored(
                    e,
                    "connection",
                    &format!(
                        "profile `{}` has the same UUID; NetworkManager loads only one of the two (the newer file)",
                        first.id
                    ),
                );
            }
        } else {
            seen.insert(u, c);
        }
    }
}

/// `[ethernet]` (and the MTU of other types): MTU, cloned MAC, link
/// negotiation.
fn ethernet(
    c: &Profile,
    iface: &mut Map<String, J>,
    used: &mut Vec<(&'static str, &'static str)>,
    f: &mut Findings,
) {
    if let Some(mtu) = c.kf.get("ethernet", "mtu").filter(|e| !e.raw.is_empty()) {
        match mtu.value().trim().parse::<u32>() {
            Ok(0) => {}
            Ok(m) => {
                iface.insert("mtu".into(), json!(m));
            }
            Err(_) => f.ignored(mtu, "ethernet", "not a number: NetworkManager ignores it"),
        }
        used.push(("ethernet", "mtu"));
    }
    if let Some(e) =
        c.kf.get("ethernet", "cloned-mac-address")
            .filter(|e| !e.raw.is_empty())
    {
        used.push(("ethernet", "cloned-mac-address"));
        match read_mac(e, 6) {
            _ if c.mac_match.is_some() => f.unmapped(
                e,
                "ethernet",
                "NMState's `mac-address` of an interface matched by MAC is the MAC it is matched by",
            ),
            Some(mac) => {
                iface.insert("mac-address".into(), json!(mac));
            }
            None if ["preserve", "permanent", "random", "stable"].contains(&e.value().as_str()) => {
                f.unmapped(e, "ethernet", "NMState sets a MAC address, not a MAC policy")
            }
            None => f.ignored(e, "ethernet", "not a MAC address: NetworkManager ignores it"),
        }
    }
    if c.kind != "ethernet" {
        return;
    }
    if let Some(e) =
        c.kf.get("ethernet", "mac-address")
            .filter(|_| c.mac_match.is_none())
    {
        if c.iface.is_some() {
            used.push(("ethernet", "mac-address"));
            f.unmapped(
                e,
                "ethernet",
                "the profile names its interface; NMState cannot also restrict it to a MAC",
            );
        }
    }
    let mut eth = Map::new();
    if let Some(e) = c.kf.get("ethernet", "auto-negotiate") {
        used.push(("ethernet", "auto-negotiate"));
        match bool_value(&e.value()) {
            Some(b) => {
                eth.insert("auto-negotiation".into(), json!(b));
            }
            None => f.ignored(e, "ethernet", "not a boolean: NetworkManager ignores it"),
        }
    }
    let speed = c.kf.get("ethernet", "speed");
    let duplex = c.kf.get("ethernet", "duplex").filter(|e| !e.raw.is_empty());
    let speed_value = speed.and_then(|e| {
        used.push(("ethernet", "speed"));
        match e.value().trim().parse::<u32>() {
            Ok(v) => Some(v).filter(|v| *v > 0),
            Err(_) => {
                f.ignored(e, "ethernet", "not a number: NetworkManager ignores it");
                None
            }
        }
    });
    if let Some(d) = duplex {
        used.push(("ethernet", "duplex"));
        if !matches!(d.value().as_str(), "half" | "full") {
            f.invalid(
                d.span,
                format!("duplex `{}` is neither `half` nor `full`", d.value()),
            );
        }
    }
    let autoneg = eth.get("auto-negotiation") == Some(&json!(true));
    match (speed_value, duplex) {
        // NetworkManager then advertises only this mode; NMState's speed
        // and duplex are for a fixed link.
        (Some(_), Some(d)) if autoneg => {
            for e in [speed.expect("a speed was read"), d] {
                f.unmapped(
                    e,
                    "ethernet",
                    "NMState sets speed and duplex only without auto-negotiation",
                );
            }
        }
        (Some(s), Some(d)) => {
            eth.insert("speed".into(), json!(s));
            eth.insert("duplex".into(), json!(d.value()));
        }
        (Some(_), None) => f.ignored(
            speed.expect("a speed was read"),
            "ethernet",
            "speed without duplex: NetworkManager ignores both",
        ),
        (None, Some(d)) => f.ignored(
            d,
            "ethernet",
            "duplex without speed: NetworkManager ignores both",
        ),
        (None, None) => {}
    }
    if !eth.is_empty() {
        iface.insert("ethernet".into(), J::Object(eth));
    }
}

/// `[infiniband]`: transport mode, P_Key, parent (MTU is generic).
fn infiniband(
    c: &Profile,
    iface: &mut Map<String, J>,
    used: &mut Vec<(&'static str, &'static str)>,
    f: &mut Findings,
) {
    let mut ib = Map::new();
    ib.insert(
        "mode".into(),
        json!(c
            .kf
            .value("infiniband", "transport-mode")
            .unwrap_or_else(|| "datagram".into())),
    );
    // NetworkManager's -1 (no P_Key) is the default partition.
    ib.insert("pkey".into(), json!("0xffff"));
    if let Some(p) = c.kf.get("infiniband", "p-key") {
        match parse_int(&p.value()) {
            Some(-1) => {}
            Some(n) if (0..=0xffff).contains(&n) => {
                ib.insert("pkey".into(), json!(format!("0x{n:04x}")));
            }
            _ => f.ignored(p, "infiniband", "not a P_Key: NetworkManager ignores it"),
        }
    }
    if let Some(p) = c.kf.value("infiniband", "parent") {
        ib.insert("base-iface".into(), json!(p));
    }
    if let Some(mtu) = c.kf.get("infiniband", "mtu") {
        if let Ok(m) = mtu.value().trim().parse::<u32>() {
            if m > 0 {
                iface.insert("mtu".into(), json!(m));
            }
        }
    }
    iface.insert("infiniband".into(), J::Object(ib));
    used.extend([
        ("infiniband", "transport-mode"),
        ("infiniband", "p-key"),
        ("infiniband", "parent"),
        ("infiniband", "mtu"),
    ]);
}

/// A decimal or `0x` hexadecimal integer.
fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// GLib's booleans as NetworkManager reads them.
fn bool_value(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// A bridge port with its STP settings and VLAN filtering (`vlans=101
/// pvid untagged` is an access port, `vlans=101,200-299` a trunk).
fn bridge_port(port: &Profile, f: &mut Findings) -> J {
    let mut p = Map::new();
    p.insert("name".into(), json!(port.name));
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
        } else if !items.is_empty() {
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
            let v = e.value();
            let (key, value) = match e.key.as_str() {
                "priority" => (
                    "stp-priority",
                    v.trim().parse::<u16>().ok().map(|n| json!(n)),
                ),
                "path-cost" => (
                    "stp-path-cost",
                    v.trim().parse::<u32>().ok().map(|n| json!(n)),
                ),
                "hairpin-mode" => ("stp-hairpin-mode", bool_value(&v).map(|b| json!(b))),
                _ => {
                    f.unmapped(e, "bridge-port", "no NMState equivalent handled by nodenet");
                    continue;
                }
            };
            match value {
                Some(value) => {
                    p.insert(key.into(), value);
                }
                None => f.ignored(
                    e,
                    "bridge-port",
                    "not a valid value: NetworkManager ignores it",
                ),
            }
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

/// Where an ip block's document-wide parts go.
struct Sink<'s> {
    routes: &'s mut Vec<J>,
    dns: &'s mut Vec<String>,
    search: &'s mut Vec<String>,
}

fn default_route(v6: bool, gw: &str, iface: &str) -> J {
    json!({"destination": if v6 { "::/0" } else { "0.0.0.0/0" }, "next-hop-address": gw, "next-hop-interface": iface})
}

/// `[ipv4]`/`[ipv6]` → NMState ip block; routes and DNS go to the
/// document-wide lists. None: NetworkManager rejects the block (the
/// error is reported).
fn ip_block(fam: &str, g: &Group, iface: &str, sink: &mut Sink, f: &mut Findings) -> Option<J> {
    let v6 = fam == "ipv6";
    let mut ip = Map::new();
    let Some(method_entry) = g.get("method").filter(|e| !e.raw.is_empty()) else {
        f.invalid(
            g.span,
            format!("[{fam}] has no `method=`: NetworkManager rejects the profile"),
        );
        return None;
    };
    let method = method_entry.value();
    let known: &[&str] = if v6 {
        &[
            "auto",
            "dhcp",
            "manual",
            "link-local",
            "shared",
            "ignore",
            "disabled",
        ]
    } else {
        &["auto", "manual", "link-local", "shared", "disabled"]
    };
    if !known.contains(&method.as_str()) {
        f.invalid(
            method_entry.span,
            format!(
                "`method={method}` is not an {fam} method (one of {})",
                known.join(", ")
            ),
        );
        return None;
    }
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
        "dhcp" => {
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
            f.unmapped(
                method_entry,
                fam,
                "this method has no NMState equivalent; the family is imported as disabled",
            );
            ip.insert("enabled".into(), json!(false));
        }
    }
    let dynamic = matches!(method.as_str(), "auto" | "dhcp");

    // Addresses, in NetworkManager's order; the first gateway written
    // with one is the profile's gateway unless `gateway=` is set.
    let mut addr_keys: Vec<((i64, u8), &Entry)> = g
        .entries
        .iter()
        .filter_map(|e| list_key(&e.key, "address").map(|k| (k, e)))
        .collect();
    addr_keys.sort_by(|a, b| (a.0, &a.1.key).cmp(&(b.0, &b.1.key)));
    let mut addresses: Vec<J> = Vec::new();
    let mut addr_gateway: Option<(String, &Entry)> = None;
    for (_, e) in &addr_keys {
        match read_ip_item(&e.value(), v6, false) {
            Ok(item) => {
                for note in &item.notes {
                    f.ignored(e, fam, note);
                }
                addresses.push(json!({"ip": item.addr.to_string(), "prefix-length": item.prefix}));
                if let (None, Some(gw)) = (&addr_gateway, item.gateway) {
                    addr_gateway = Some((gw, e));
                }
            }
            Err(why) => f.ignored(
                e,
                fam,
                &format!("{why}: NetworkManager ignores this address"),
            ),
        }
    }
    if method == "manual" && addresses.is_empty() {
        f.invalid(
            method_entry.span,
            "`method=manual` without a usable address: NetworkManager rejects the profile",
        );
        return None;
    }
    if !addresses.is_empty() && matches!(method.as_str(), "disabled" | "link-local" | "ignore") {
        f.invalid(
            addr_keys[0].1.span,
            format!("addresses with `method={method}`: NetworkManager rejects the profile"),
        );
        return None;
    }
    let never_default = g
        .get("never-default")
        .is_some_and(|e| bool_value(&e.value()) == Some(true));
    let gateway_entry = g.get("gateway").filter(|e| !e.raw.is_empty());
    let gateway = match (gateway_entry, &addr_gateway) {
        (Some(e), Some((old, _))) => {
            if e.value() != *old {
                f.ignored(
                    e,
                    fam,
                    &format!("NetworkManager uses it and ignores the gateway `{old}` of the address keys"),
                );
            }
            Some((e.value(), e))
        }
        (Some(e), None) => Some((e.value(), e)),
        (None, Some((gw, e))) => Some((gw.clone(), *e)),
        (None, None) => None,
    };
    if let Some((gw, e)) = &gateway {
        match gw.parse::<IpAddr>().ok().filter(|a| a.is_ipv6() == v6) {
            None => {
                f.invalid(
                    e.span,
                    format!("gateway `{gw}` is not an {fam} address: NetworkManager rejects the profile"),
                );
                return None;
            }
            Some(_) if addresses.is_empty() => {
                f.invalid(
                    e.span,
                    format!(
                        "gateway `{gw}` without an address: NetworkManager rejects the profile"
                    ),
                );
                return None;
            }
            // NetworkManager drops the gateway of a never-default profile.
            Some(_) if never_default => {}
            Some(a) => sink.routes.push(default_route(v6, &a.to_string(), iface)),
        }
    }

    // Routes, and `routeN_options`.
    let mut route_keys: Vec<((i64, u8), &Entry)> = g
        .entries
        .iter()
        .filter_map(|e| list_key(&e.key, "route").map(|k| (k, e)))
        .collect();
    route_keys.sort_by(|a, b| (a.0, &a.1.key).cmp(&(b.0, &b.1.key)));
    let option_keys: Vec<String> = route_keys
        .iter()
        .map(|(_, e)| format!("{}_options", e.key))
        .collect();
    for (_, e) in &route_keys {
        let item = match read_ip_item(&e.value(), v6, true) {
            Ok(item) => item,
            Err(why) => {
                f.ignored(e, fam, &format!("{why}: NetworkManager ignores this route"));
                continue;
            }
        };
        for note in &item.notes {
            f.ignored(e, fam, note);
        }
        let net = IpNet::new(item.addr, item.prefix)
            .map(|n| n.trunc().to_string())
            .unwrap_or_default();
        let mut r = Map::new();
        r.insert("destination".into(), json!(net));
        if let Some(hop) = &item.gateway {
            r.insert("next-hop-address".into(), json!(hop));
        }
        r.insert("next-hop-interface".into(), json!(iface));
        if let Some(m) = item.metric.filter(|m| *m != 0) {
            r.insert("metric".into(), json!(m));
        }
        if let Some(o) = g.get(&format!("{}_options", e.key)) {
            if !route_options(o, fam, &mut r, f) {
                continue;
            }
        }
        sink.routes.push(J::Object(r));
    }

    for e in &g.entries {
        let k = e.key.as_str();
        let v = e.value();
        if list_key(k, "address").is_some()
            || list_key(k, "route").is_some()
            || option_keys.iter().any(|o| o == k)
        {
            continue;
        }
        match (k, v.as_str()) {
            ("method" | "gateway", _) => {}
            (_, "") => {}
            ("dns", _) => {
                for s in e.list() {
                    match s.parse::<IpAddr>().ok().filter(|a| a.is_ipv6() == v6) {
                        Some(_) => sink.dns.push(s),
                        None => f.ignored(
                            e,
                            fam,
                            &format!("`{s}` is not an {fam} DNS server: NetworkManager ignores it"),
                        ),
                    }
                }
            }
            ("dns-search", _) => {
                let items = e.list();
                if let [one] = items.as_slice() {
                    if one.contains([',', ' ']) {
                        let why = "search domains separated by `,` or ` `: NetworkManager \
                                   splits them (only `;` separates)";
                        f.ignored(e, fam, why);
                        sink.search.extend(
                            one.split([',', ' '])
                                .filter(|s| !s.is_empty())
                                .map(str::to_string),
                        );
                        continue;
                    }
                }
                sink.search.extend(items);
            }
            ("ignore-auto-dns", "true") if dynamic => {
                ip.insert("auto-dns".into(), json!(false));
            }
            ("ignore-auto-routes", "true") if dynamic => {
                ip.insert("auto-routes".into(), json!(false));
            }
            ("never-default", "true") if dynamic => {
                ip.insert("auto-gateway".into(), json!(false));
            }
            ("never-default", "true") => {}
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
    if !addresses.is_empty() {
        ip.insert("address".into(), J::Array(addresses));
    }
    Some(J::Object(ip))
}

/// `routeN_options=` onto an NMState route. False: the route has a type
/// NMState does not express and is not imported. As NetworkManager, an
/// option with an invalid value voids them all, an unknown one is
/// skipped.
fn route_options(o: &Entry, fam: &str, r: &mut Map<String, J>, f: &mut Findings) -> bool {
    let text = o.value();
    let pairs: Vec<(&str, &str)> = {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
            .collect()
    };
    let numeric = |k: &str| {
        matches!(
            k,
            "table"
                | "tos"
                | "scope"
                | "window"
                | "cwnd"
                | "initcwnd"
                | "initrwnd"
                | "mtu"
                | "advmss"
                | "rto_min"
                | "weight"
        )
    };
    let boolean = |k: &str| k == "onlink" || k == "quickack" || k.starts_with("lock-");
    if let Some((k, v)) = pairs.iter().find(|(k, v)| {
        numeric(k) && v.parse::<u32>().is_err() || boolean(k) && bool_value(v).is_none()
    }) {
        f.ignored(
            o,
            fam,
            &format!("`{k}={v}` is not valid: NetworkManager ignores all these options"),
        );
        return true;
    }
    for (k, v) in pairs {
        let num = || v.parse::<u32>().ok().map(|n| json!(n));
        let flag = || bool_value(v).map(|b| json!(b));
        let (key, value) = match k {
            "table" if v == "254" => continue,
            "table" => ("table-id", num()),
            "src" => ("source", Some(json!(v))),
            "weight" => ("weight", num()),
            "cwnd" => ("cwnd", num()),
            "initcwnd" => ("initcwnd", num()),
            "initrwnd" => ("initrwnd", num()),
            "mtu" => ("mtu", num()),
            "advmss" => ("advmss", num()),
            "quickack" => ("quickack", flag()),
            "lock-mtu" => ("lock-mtu", flag()),
            // nmstate locks the window whenever it sets one.
            "lock-cwnd" if bool_value(v) == Some(true) => continue,
            "type" if v == "unicast" => continue,
            "type" if matches!(v, "blackhole" | "unreachable" | "prohibit") => {
                // nmstate keeps such routes on no interface.
                r.remove("next-hop-interface");
                r.remove("next-hop-address");
                ("route-type", Some(json!(v)))
            }
            "type" => {
                f.unmapped(
                    o,
                    fam,
                    &format!("NMState has no `{v}` routes; the route is not imported"),
                );
                return false;
            }
            _ => {
                f.unmapped(o, fam, &format!("route option `{k}={v}` is not imported"));
                continue;
            }
        };
        if let Some(value) = value {
            r.insert(key.into(), value);
        }
    }
    true
}

/// Reports every key of `groups` this importer did not consume and that
/// is not a default nmstate writes itself (nor empty: unset); groups it
/// does not know at all are reported once, at their header.
fn check_leftovers(kf: &Keyfile, groups: &[&str], f: &mut Findings, used: &[(&str, &str)]) {
    for g in &kf.groups {
        // nmcli writes empty [ethernet], [proxy], [bond-port] groups.
        if g.entries.iter().all(|e| e.raw.is_empty()) {
            continue;
        }
        if !groups.contains(&g.name.as_str()) {
            f.warn(
                Code::KeyfileUnmapped,
                g.span,
                format!("[{}] is not imported", g.raw_name),
            );
            continue;
        }
        if g.name == ".nmmeta" {
            continue;
        }
        for e in &g.entries {
            let consumed = used
                .iter()
                .any(|(ug, uk)| *ug == g.name && (*uk == "*" || *uk == e.key));
            if !consumed && !e.raw.is_empty() && !is_default(&g.name, &e.key, &e.value()) {
                f.unmapped(e, &g.raw_name, "no NMState equivalent handled by nodenet");
            }
        }
    }
}
