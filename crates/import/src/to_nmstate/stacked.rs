//! Interfaces stacked on another, or paired with one: VLAN ([vlan]),
//! VXLAN ([vxlan]), MAC-VLAN and MacVTap ([macvlan]), veth ([veth]),
//! VRF ([vrf]), MACsec ([macsec]), and libreswan IPsec ([vpn]).

use serde_json::{json, Map, Value as J};

use nodenet_model::Code;

use crate::profile::{vlan_name, Profile};

use super::{Findings, Net, Used};

/// NetworkManager's VLAN flags: reorder headers (its default), GVRP,
/// loose binding, MVRP.
const VLAN_REORDER_HEADERS: u32 = 0x1;
const VLAN_GVRP: u32 = 0x2;
const VLAN_LOOSE_BINDING: u32 = 0x4;
const VLAN_MVRP: u32 = 0x8;

/// `[vlan]` → `vlan`: parent, id, protocol, flags and priority maps.
pub(super) fn vlan(
    c: &Profile,
    conns: &[Profile],
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    let mut vlan = Map::new();
    if let Some(base) = parent(c, conns, "vlan") {
        vlan.insert("base-iface".into(), json!(base));
    }
    vlan.insert("id".into(), json!(vlan_id(c, f)));
    if let Some(e) = c.kf.get("vlan", "protocol").filter(|e| !e.raw.is_empty()) {
        match e.value().as_str() {
            "802.1Q" | "802.1q" => {
                vlan.insert("protocol".into(), json!("802.1q"));
            }
            "802.1ad" => {
                vlan.insert("protocol".into(), json!("802.1ad"));
            }
            _ => f.ignored(
                e,
                "vlan",
                "not 802.1Q or 802.1ad: NetworkManager ignores it",
            ),
        }
    }
    if let Some(e) = c.kf.get("vlan", "flags").filter(|e| !e.raw.is_empty()) {
        if let Some(n) = f.num::<u32>(e, "vlan") {
            if n & VLAN_REORDER_HEADERS == 0 {
                vlan.insert("reorder-headers".into(), json!(false));
            }
            if n & VLAN_LOOSE_BINDING != 0 {
                vlan.insert("loose-binding".into(), json!(true));
            }
            match (n & VLAN_GVRP != 0, n & VLAN_MVRP != 0) {
                (true, false) => {
                    vlan.insert("registration-protocol".into(), json!("gvrp"));
                }
                (false, true) => {
                    vlan.insert("registration-protocol".into(), json!("mvrp"));
                }
                (true, true) => f.unmapped(e, "vlan", "NMState sets GVRP or MVRP, not both"),
                (false, false) => {}
            }
            if n > 0xf {
                f.ignored(e, "vlan", "flags beyond 0xf: NetworkManager rejects them");
            }
        }
    }
    for (key, name) in [
        ("ingress-priority-map", "ingress-qos-map"),
        ("egress-priority-map", "egress-qos-map"),
    ] {
        let Some(e) = c.kf.get("vlan", key).filter(|e| !e.raw.is_empty()) else {
            continue;
        };
        let maps: Option<Vec<J>> = e
            .list()
            .iter()
            .map(|m| {
                let (from, to) = m.split_once(':')?;
                Some(json!({"from": from.trim().parse::<u32>().ok()?, "to": to.trim().parse::<u32>().ok()?}))
            })
            .collect();
        match maps {
            Some(maps) => {
                vlan.insert(name.into(), J::Array(maps));
            }
            None => f.ignored(e, "vlan", "not FROM:TO pairs: NetworkManager ignores it"),
        }
    }
    iface.insert("vlan".into(), J::Object(vlan));
    used.extend([
        ("vlan", "parent"),
        ("vlan", "id"),
        ("vlan", "protocol"),
        ("vlan", "flags"),
        ("vlan", "ingress-priority-map"),
        ("vlan", "egress-priority-map"),
    ]);
}

/// `[vxlan]` → `vxlan`: VNI, parent, local and remote address, port and
/// learning.
pub(super) fn vxlan(
    c: &Profile,
    conns: &[Profile],
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    used.push(("vxlan", "*"));
    let mut vxlan = Map::new();
    vxlan.insert("id".into(), json!(0));
    if let Some(g) = c.kf.group("vxlan") {
        for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
            match e.key.as_str() {
                "id" => {
                    if let Some(n) = f.num::<u32>(e, "vxlan") {
                        vxlan.insert("id".into(), json!(n));
                    }
                }
                "parent" => {
                    vxlan.insert("base-iface".into(), json!(parent(c, conns, "vxlan")));
                }
                k @ ("local" | "remote") => match e.value().trim().parse::<std::net::IpAddr>() {
                    Ok(a) => {
                        vxlan.insert(k.into(), json!(a.to_string()));
                    }
                    Err(_) => f.ignored(e, "vxlan", "not an IP address: NetworkManager rejects it"),
                },
                "destination-port" => {
                    if let Some(n) = f.num::<u16>(e, "vxlan") {
                        vxlan.insert("destination-port".into(), json!(n));
                    }
                }
                "learning" => {
                    if let Some(b) = f.flag(e, "vxlan") {
                        vxlan.insert("learning".into(), json!(b));
                    }
                }
                "interface-name" => {}
                _ => f.unmapped(e, "vxlan", "no NMState equivalent handled by nodenet"),
            }
        }
    }
    iface.insert("vxlan".into(), J::Object(vxlan));
}

/// NetworkManager's MAC-VLAN modes, by number.
const MACVLAN_MODES: &[(&str, &str)] = &[
    ("1", "vepa"),
    ("2", "bridge"),
    ("3", "private"),
    ("4", "passthru"),
    ("5", "source"),
];

/// `[macvlan]` → `mac-vlan` (or `mac-vtap` with `tap=true`): parent,
/// mode and promiscuity.
pub(super) fn macvlan(
    c: &Profile,
    conns: &[Profile],
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    used.push(("macvlan", "*"));
    let mut conf = Map::new();
    if let Some(g) = c.kf.group("macvlan") {
        for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
            match e.key.as_str() {
                "parent" => {
                    conf.insert("base-iface".into(), json!(parent(c, conns, "macvlan")));
                }
                "mode" => match MACVLAN_MODES.iter().find(|(n, _)| *n == e.value().trim()) {
                    Some((_, mode)) => {
                        conf.insert("mode".into(), json!(mode));
                    }
                    None => f.unmapped(e, "macvlan", "NMState's modes are 1 to 5 (vepa to source)"),
                },
                "promiscuous" => {
                    if let Some(b) = f.flag(e, "macvlan") {
                        conf.insert("promiscuous".into(), json!(b));
                    }
                }
                // The type: mac-vtap for true (see the profile's type).
                "tap" => {}
                "interface-name" => {}
                _ => f.unmapped(e, "macvlan", "no NMState equivalent handled by nodenet"),
            }
        }
    }
    let key = if c.nm_type == "mac-vtap" {
        "mac-vtap"
    } else {
        "mac-vlan"
    };
    iface.insert(key.into(), J::Object(conf));
}

/// `[veth]` → `veth`: the peer's name.
pub(super) fn veth(c: &Profile, iface: &mut Map<String, J>, used: &mut Used) {
    used.push(("veth", "peer"));
    if let Some(peer) = c.kf.value("veth", "peer").filter(|p| !p.is_empty()) {
        iface.insert("veth".into(), json!({ "peer": peer }));
    }
}

/// `[vrf]` → `vrf`: its route table and ports.
pub(super) fn vrf(
    c: &Profile,
    net: &Net,
    i: usize,
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    used.push(("vrf", "table"));
    let mut vrf = Map::new();
    let ports: Vec<&str> = net.ports(i).map(|(_, p)| p.name.as_str()).collect();
    vrf.insert("port".into(), json!(ports));
    if let Some(e) = c.kf.get("vrf", "table").filter(|e| !e.raw.is_empty()) {
        if let Some(n) = f.num::<u32>(e, "vrf") {
            vrf.insert("route-table-id".into(), json!(n));
        }
    }
    iface.insert("vrf".into(), J::Object(vrf));
}

/// NetworkManager's MACsec validation modes and offloads, by number.
const MACSEC_VALIDATION: &[(&str, &str)] = &[("0", "disabled"), ("1", "check"), ("2", "strict")];
const MACSEC_OFFLOAD: &[(&str, &str)] = &[("0", "off"), ("1", "phy"), ("2", "mac")];

/// `[macsec]` → `macsec`: parent, MKA keys, port, encryption, validation,
/// SCI and offload, with NetworkManager's defaults for what is unset
/// (NMState asks for all).
pub(super) fn macsec(
    c: &Profile,
    conns: &[Profile],
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    used.push(("macsec", "*"));
    let mut conf = Map::new();
    conf.insert("encrypt".into(), json!(true));
    conf.insert("base-iface".into(), json!(""));
    conf.insert("port".into(), json!(0));
    conf.insert("validation".into(), json!("strict"));
    conf.insert("send-sci".into(), json!(true));
    let group = "macsec";
    if let Some(g) = c.kf.group(group) {
        for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
            let k = e.key.as_str();
            match k {
                "parent" => {
                    conf.insert("base-iface".into(), json!(parent(c, conns, group)));
                }
                "mka-cak" | "mka-ckn" => {
                    conf.insert(k.into(), json!(e.value()));
                }
                "encrypt" | "send-sci" => {
                    if let Some(b) = f.flag(e, group) {
                        conf.insert(k.into(), json!(b));
                    }
                }
                // nmstate writes no port 0; NetworkManager's default is 1.
                "port" => match f.num::<u32>(e, group) {
                    Some(1) => {}
                    Some(n) => {
                        conf.insert("port".into(), json!(n));
                    }
                    None => {}
                },
                "validation" | "offload" => {
                    let table = if k == "validation" {
                        MACSEC_VALIDATION
                    } else {
                        MACSEC_OFFLOAD
                    };
                    match table.iter().find(|(n, _)| *n == e.value().trim()) {
                        Some((_, v)) => {
                            conf.insert(k.into(), json!(v));
                        }
                        None => f.ignored(e, group, "not a valid value: NetworkManager ignores it"),
                    }
                }
                // Pre-shared key, nmstate's only mode.
                "mode" if e.value().trim() == "0" => {}
                "interface-name" => {}
                _ => f.unmapped(e, group, "no NMState equivalent handled by nodenet"),
            }
        }
    }
    iface.insert("macsec".into(), J::Object(conf));
}

/// The libreswan data keys NMState names alike (text unless said).
const LIBRESWAN_TEXT: &[&str] = &[
    "right",
    "rightid",
    "rightrsasigkey",
    "rightcert",
    "left",
    "leftid",
    "leftrsasigkey",
    "leftcert",
    "ikev2",
    "ikelifetime",
    "salifetime",
    "ike",
    "esp",
    "dpdaction",
    "ipsec-interface",
    "authby",
    "rightsubnet",
    "rightsubnets",
    "leftsubnet",
    "leftsubnets",
    "leftsendcert",
    "rightca",
    "leftprotoport",
    "rightprotoport",
];
/// yes/no keys, numbers, and choices.
const LIBRESWAN_YES_NO: &[&str] = &["leftmodecfgclient", "require-id-on-certificate"];
const LIBRESWAN_NUMBERS: &[&str] = &["dpddelay", "dpdtimeout"];
const LIBRESWAN_CHOICES: &[(&str, &[&str])] = &[
    ("type", &["tunnel", "transport"]),
    ("hostaddrfamily", &["ipv4", "ipv6"]),
    ("clientaddrfamily", &["ipv4", "ipv6"]),
];

/// A libreswan `[vpn]` (and its pre-shared key in [vpn-secrets]) →
/// `type: ipsec` with `libreswan`.
pub(super) fn libreswan(
    c: &Profile,
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    used.push(("vpn", "*"));
    used.push(("vpn-secrets", "*"));
    if let Some(e) =
        c.kf.get("connection", "interface-name")
            .filter(|e| !e.raw.is_empty())
    {
        f.unmapped(
            e,
            "connection",
            "nmstate names an IPsec connection after its profile and binds it to no interface",
        );
    }
    let mut conf = Map::new();
    if let Some(g) = c.kf.group("vpn") {
        for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
            let k = e.key.as_str();
            let v = e.value();
            match k {
                "service-type" => {}
                "nm-auto-defaults" => match v.as_str() {
                    "no" => {
                        conf.insert(k.into(), json!(false));
                    }
                    "yes" => {}
                    _ => f.ignored(e, "vpn", "not yes or no: libreswan's plugin ignores it"),
                },
                k if LIBRESWAN_TEXT.contains(&k) => {
                    conf.insert(k.into(), json!(v));
                }
                k if LIBRESWAN_YES_NO.contains(&k) => match v.as_str() {
                    "yes" | "no" => {
                        conf.insert(k.into(), json!(v == "yes"));
                    }
                    _ => f.ignored(e, "vpn", "not yes or no: libreswan's plugin ignores it"),
                },
                k if LIBRESWAN_NUMBERS.contains(&k) => {
                    if let Some(n) = f.num::<u64>(e, "vpn") {
                        conf.insert(k.into(), json!(n));
                    }
                }
                k => match LIBRESWAN_CHOICES.iter().find(|(n, _)| *n == k) {
                    Some((_, values)) if values.contains(&v.as_str()) => {
                        conf.insert(k.into(), json!(v));
                    }
                    Some(_) => f.ignored(e, "vpn", "not a value libreswan's plugin knows"),
                    None => f.unmapped(e, "vpn", "no NMState equivalent handled by nodenet"),
                },
            }
        }
    }
    if let Some(g) = c.kf.group("vpn-secrets") {
        for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
            if e.key == "pskvalue" {
                conf.insert("psk".into(), json!(e.value()));
            } else {
                f.unmapped(e, "vpn-secrets", "no NMState equivalent handled by nodenet");
            }
        }
    }
    if !conf.contains_key("right") {
        let at = c.kf.group("vpn").map_or_else(|| c.kf.header(), |g| g.span);
        f.warn(
            Code::KeyfileUnmapped,
            at,
            "a libreswan connection without `right=`: NMState needs the remote end",
        );
        conf.insert("right".into(), json!(""));
    }
    iface.insert("libreswan".into(), J::Object(conf));
}

/// A VLAN without `interface-name` gets the name NetworkManager gives
/// it (`PARENT.ID`); one whose parent is known only by MAC (no
/// `parent=`, or a parent profile matched by MAC) cannot be named.
pub(super) fn name_vlans(conns: &mut Vec<Profile>, f: &mut Findings) {
    let mut names = Vec::with_capacity(conns.len());
    for c in conns.iter() {
        if !c.name.is_empty() {
            names.push(Some(c.name.clone()));
            continue;
        }
        let parent = parent(c, conns, "vlan").filter(|p| {
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

/// The parent interface of a profile stacked on one (`parent=` of its
/// type's group): a parent given by UUID is the interface of that
/// profile.
fn parent(c: &Profile, conns: &[Profile], group: &str) -> Option<String> {
    let parent = c.kf.value(group, "parent").filter(|p| !p.is_empty())?;
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
