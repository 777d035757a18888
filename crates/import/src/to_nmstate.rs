//! NetworkManager profiles → NMState. Every setting is either mapped,
//! recognised as a value nmstate writes by itself (so `gc` → `import` →
//! `gc` is the identity), or reported as a located warning. Values
//! NetworkManager itself ignores or reads in an old form are read as it
//! reads them, with a warning where it warns.
//!
//! This module ties profiles together (controllers and ports, duplicates)
//! and builds each interface; the settings are mapped by concern:
//! [`link`] (the device: ethernet, ethtool, SR-IOV, 802.1X, profile-wide
//! connection settings), [`controller`] (bonds, Linux and OVS bridges and
//! their ports), [`stacked`] (interfaces on a parent: VLAN, VXLAN,
//! MAC-VLAN, veth, VRF, MACsec, IPsec) and [`ip`] (addresses, routes,
//! routing rules, DNS).

mod controller;
mod ip;
mod link;
mod stacked;

use std::collections::HashMap;

use serde_json::{json, Map, Value as J};

use nodenet_model::{Code, Diagnostic, Span};

use crate::keyfile::{self, Entry, Keyfile};
use crate::profile::{self, is_name_based, nmstate_profile_uuid, Profile, Read};
use crate::values::bool_value;

/// The (group, key) pairs a mapper consumed; `*` for a whole group whose
/// mapper reports the keys it does not map itself.
type Used = Vec<(&'static str, &'static str)>;

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
        let shown = shown(group, e);
        self.warn(
            Code::KeyfileUnmapped,
            e.span,
            format!("`{shown}` in [{group}] is not imported: {why}"),
        );
    }

    /// A value NetworkManager ignores (or reads differently than written).
    fn ignored(&mut self, e: &Entry, group: &str, why: &str) {
        let shown = shown(group, e);
        self.warn(
            Code::KeyfileInvalid,
            e.span,
            format!("`{shown}` in [{group}]: {why}"),
        );
    }

    /// Input NetworkManager rejects.
    fn invalid(&mut self, span: Span, msg: impl Into<String>) {
        self.out
            .push(Diagnostic::error(Code::KeyfileInvalid, msg).at(span));
    }

    /// A number as NetworkManager reads it; a value that is none is
    /// ignored by NetworkManager, with a warning here.
    fn num<T: std::str::FromStr>(&mut self, e: &Entry, group: &str) -> Option<T> {
        let v = e.value().trim().parse::<T>().ok();
        if v.is_none() {
            self.ignored(e, group, "not a valid number: NetworkManager ignores it");
        }
        v
    }

    /// A GLib boolean; anything else is ignored, with a warning.
    fn flag(&mut self, e: &Entry, group: &str) -> Option<bool> {
        let v = bool_value(&e.value());
        if v.is_none() {
            self.ignored(e, group, "not a boolean: NetworkManager ignores it");
        }
        v
    }
}

/// `key=value` for a message, the value hidden when it is a secret.
fn shown(group: &str, e: &Entry) -> String {
    if keyfile::is_secret(group, &e.key) {
        format!("{}=…", e.key)
    } else {
        format!("{}={}", e.key, e.raw)
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

/// The groups some mapper reads; others are reported whole.
const KNOWN_GROUPS: &[&str] = &[
    "connection",
    "ethernet",
    "ethtool",
    "sriov",
    "802-1x",
    "user",
    "bond",
    "bond-port",
    "bridge",
    "bridge-port",
    "ovs-bridge",
    "ovs-port",
    "ovs-interface",
    "ovs-patch",
    "ovs-dpdk",
    "ovs-external-ids",
    "ovs-other-config",
    "vlan",
    "vxlan",
    "macvlan",
    "veth",
    "vrf",
    "macsec",
    "vpn",
    "vpn-secrets",
    "infiniband",
    "ipv4",
    "ipv6",
    "proxy",
    ".nmmeta",
];

/// The profiles being imported and how they hang together.
struct Net<'a, 'k> {
    conns: &'a [Profile<'k>],
    /// The ports of each profile, by index.
    children: Vec<Vec<usize>>,
    /// Ports whose controller is not among the profiles.
    orphan: Vec<bool>,
}

impl<'k> Net<'_, 'k> {
    fn ports(&self, i: usize) -> impl Iterator<Item = (usize, &Profile<'k>)> + '_ {
        self.children[i].iter().map(|&k| (k, &self.conns[k]))
    }

    /// Whether profile `i` is a port of an imported controller of port
    /// type `port_type`.
    fn is_port_of(&self, i: usize, port_type: &str) -> bool {
        self.conns[i].port_type.as_deref() == Some(port_type) && !self.orphan[i]
    }
}

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
    stacked::name_vlans(&mut conns, &mut f);
    let mut conns = without_duplicates(conns, &mut f);
    // Stable order whatever the file order: by interface name, then type.
    conns.sort_by(|a, b| (&a.name, &a.kind).cmp(&(&b.name, &b.kind)));
    warn_duplicate_uuids(&conns, &mut f);
    let net = link_ports(&conns, &mut f);

    let mut interfaces = Vec::new();
    let mut doc = ip::Doc::default();
    for (i, c) in conns.iter().enumerate() {
        let mut used = c.used.clone();
        if c.kind == "ovs-port" {
            // Read by its bridge, as a port of it.
            if !net.orphan[i] {
                used.push(("ovs-port", "*"));
                used.push(("ovs-external-ids", "*"));
                used.push(("ovs-other-config", "*"));
                // nmstate names a port of one interface after it.
                let mut members = net.ports(i).map(|(_, m)| m.name.as_str());
                let name = match (members.next(), members.next()) {
                    (Some(one), None) => one,
                    _ => c.name.as_str(),
                };
                warn_lost_uuid(c, name, "ovs-port", &mut f);
            }
            check_leftovers(c.kf, &mut f, &used);
            continue;
        }
        let mut iface = Map::new();
        iface.insert("name".into(), json!(c.name));
        iface.insert("type".into(), json!(c.nm_type));
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
        warn_lost_uuid(c, &c.name, c.nm_type, &mut f);
        if net.is_port_of(i, "bridge") {
            // Read by the bridge when it lists its ports.
            used.push(("bridge-port", "*"));
        }
        if net.is_port_of(i, "bond") {
            used.push(("bond-port", "*"));
        }
        link::connection(c, &mut iface, &mut used, &mut f);
        link::ethernet(c, &mut iface, &mut used, &mut f);
        link::ethtool(c, &mut iface, &mut used, &mut f);
        link::ieee8021x(c, &mut iface, &mut used, &mut f);
        controller::ovs_db(c, &net, i, &mut iface, &mut used, &mut f);
        match c.kind.as_str() {
            "bond" => controller::bond(c, &net, i, &mut iface, &mut used, &mut f),
            "bridge" => controller::linux_bridge(c, &net, i, &mut iface, &mut used, &mut f),
            "ovs-bridge" => controller::ovs_bridge(c, &net, i, &mut iface, &mut used, &mut f),
            "ovs-interface" => controller::ovs_interface(c, &mut iface, &mut used, &mut f),
            "vlan" => stacked::vlan(c, &conns, &mut iface, &mut used, &mut f),
            "vxlan" => stacked::vxlan(c, &conns, &mut iface, &mut used, &mut f),
            "macvlan" => stacked::macvlan(c, &conns, &mut iface, &mut used, &mut f),
            "veth" => stacked::veth(c, &mut iface, &mut used),
            "vrf" => stacked::vrf(c, &net, i, &mut iface, &mut used, &mut f),
            "macsec" => stacked::macsec(c, &conns, &mut iface, &mut used, &mut f),
            "vpn" => stacked::libreswan(c, &mut iface, &mut used, &mut f),
            "infiniband" => link::infiniband(c, &mut iface, &mut used, &mut f),
            _ => {}
        }
        if c.kind == "ethernet" {
            link::sriov(c, &mut iface, &mut used, &mut f);
        }
        ip::families(c, &mut iface, &mut doc, &mut used, &mut f);
        check_leftovers(c.kf, &mut f, &used);
        interfaces.push(J::Object(iface));
    }
    let mut out = doc.into_state();
    out.insert("interfaces".into(), J::Array(interfaces));
    J::Object(out)
}

/// Finds each port's controller, by UUID, interface name (of the right
/// type) or id; indexed, for 10,000-file imports. A port whose
/// controller is not among the profiles is imported on its own.
fn link_ports<'a, 'k>(conns: &'a [Profile<'k>], f: &mut Findings) -> Net<'a, 'k> {
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
    let mut children = vec![Vec::new(); conns.len()];
    let mut orphan = vec![false; conns.len()];
    for (i, c) in conns.iter().enumerate() {
        let Some(e) = c.controller else { continue };
        // The port type names the controller's type (`bond`, `bridge`,
        // `ovs-port`, `ovs-bridge`, `vrf`).
        let want = c.port_type.as_deref().unwrap_or("");
        match resolve(&e.value(), want) {
            Some(j) => children[j].push(i),
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
    Net {
        conns,
        children,
        orphan,
    }
}

/// nmstate derives a profile's UUID from its interface's name and type
/// (UUID v5). One it derived from a name or type the profile does not
/// keep (an interface matched by MAC whose name nmstate did not write)
/// cannot be given back: the UUID is warned about.
fn warn_lost_uuid(c: &Profile, name: &str, nm_type: &str, f: &mut Findings) {
    let (Some(uuid), Some(e)) = (c.uuid.as_deref(), c.kf.get("connection", "uuid")) else {
        return;
    };
    if is_name_based(uuid) && uuid != nmstate_profile_uuid(name, nm_type) {
        f.unmapped(
            e,
            "connection",
            &format!(
                "nmstate derives a profile's UUID from its interface's name and type, and \
                 this one is not derived from `{name}` ({nm_type}): nmstate writes another"
            ),
        );
    }
}

/// Keeps the first of equal items.
fn dedup(items: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    items.retain(|i| seen.insert(i.clone()));
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

/// Reports every key this importer did not consume and that is not a
/// default nmstate writes itself (nor empty: unset); groups no mapper
/// reads are reported once, at their header.
fn check_leftovers(kf: &Keyfile, f: &mut Findings, used: &[(&str, &str)]) {
    for g in &kf.groups {
        // nmcli writes empty [ethernet], [proxy], [bond-port] groups.
        if g.entries.iter().all(|e| e.raw.is_empty()) {
            continue;
        }
        if !KNOWN_GROUPS.contains(&g.name.as_str()) {
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

#[cfg(test)]
mod tests;
