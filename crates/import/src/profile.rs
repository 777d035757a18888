//! What a keyfile says about its place among the profiles, completed as
//! NetworkManager completes it: the type from its settings when `type=`
//! is absent, the id from the file name, the port type from its port
//! setting, the interface name from the type's group (an old location) or,
//! for a VLAN, from its parent and id. A profile that names no interface
//! and matches its device by MAC is imported with `identifier:
//! mac-address`; one that matches any device cannot be expressed.

use nodenet_model::{Code, Diagnostic, Span};

use crate::keyfile::{canonical_type, Entry, Group, Keyfile};
use crate::values::{bool_value, read_mac};

/// Connection types NetworkManager knows, by their `type=` value
/// (`802-3-ethernet` and `802-11-wireless` read as `ethernet`, `wifi`).
const NM_TYPES: &[&str] = &[
    "6lowpan",
    "802-11-olpc-mesh",
    "adsl",
    "bluetooth",
    "bond",
    "bridge",
    "cdma",
    "dummy",
    "ethernet",
    "generic",
    "geneve",
    "gsm",
    "hsr",
    "infiniband",
    "ip-tunnel",
    "ipvlan",
    "loopback",
    "macsec",
    "macvlan",
    "ovs-bridge",
    "ovs-interface",
    "ovs-port",
    "pppoe",
    "team",
    "tun",
    "veth",
    "vlan",
    "vpn",
    "vrf",
    "vxlan",
    "wifi",
    "wifi-p2p",
    "wimax",
    "wireguard",
    "wpan",
];

/// Settings that make a connection type ("base types"): without `type=`,
/// NetworkManager takes the one present (more than one: rejected).
/// Bluetooth is a base type only when no other is present.
const BASE_SETTINGS: &[&str] = &[
    "6lowpan",
    "802-11-olpc-mesh",
    "wifi",
    "ethernet",
    "adsl",
    "bond",
    "bridge",
    "cdma",
    "dummy",
    "generic",
    "geneve",
    "gsm",
    "hsr",
    "infiniband",
    "ip-tunnel",
    "ipvlan",
    "loopback",
    "macsec",
    "macvlan",
    "ovs-bridge",
    "ovs-interface",
    "ovs-port",
    "team",
    "tun",
    "veth",
    "vlan",
    "vpn",
    "vrf",
    "vxlan",
    "wifi-p2p",
    "wimax",
    "wireguard",
    "wpan",
];

/// Types NetworkManager refuses without `interface-name`.
const NEEDS_INTERFACE_NAME: &[&str] = &[
    "bond",
    "bridge",
    "dummy",
    "ovs-bridge",
    "ovs-interface",
    "ovs-port",
    "team",
    "veth",
    "vrf",
];

/// Connection types NMState has interfaces for but nodenet does not
/// import, and why: nmstate 2.2 writes their settings into no keyfile
/// group, so a keyfile cannot say what the interface is.
const NOT_IMPORTED: &[(&str, &str)] = &[
    ("hsr", "nmstate writes no [hsr] settings into keyfiles"),
    (
        "ipvlan",
        "nmstate writes no [ipvlan] settings into keyfiles",
    ),
    (
        "ip-tunnel",
        "nmstate writes no [ip-tunnel] settings into keyfiles",
    ),
];

/// libreswan's VPN plugin, the one VPN NMState expresses (`type: ipsec`).
pub const LIBRESWAN: &str = "org.freedesktop.NetworkManager.libreswan";

/// The NMState interface type of a profile: that of its connection type
/// ([`nmstate_type`]), except a MAC-VLAN with `tap=true` (a MacVTap) and
/// a libreswan VPN (IPsec).
pub fn nmstate_kind(kf: &Keyfile, kind: &str) -> Option<&'static str> {
    match kind {
        "macvlan"
            if kf
                .value("macvlan", "tap")
                .and_then(|v| bool_value(&v))
                .unwrap_or(false) =>
        {
            Some("mac-vtap")
        }
        "vpn" if kf.value("vpn", "service-type").as_deref() == Some(LIBRESWAN) => Some("ipsec"),
        k => nmstate_type(k),
    }
}

/// The NMState interface type of a NetworkManager connection type; none:
/// a type a server's NMState does not express (wifi, modems, VPNs, ...).
pub fn nmstate_type(kind: &str) -> Option<&'static str> {
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
        "macsec" => "macsec",
        _ => return None,
    })
}

/// One profile NetworkManager would load, and how NMState will know it.
pub struct Profile<'a> {
    pub kf: &'a Keyfile,
    pub id: String,
    pub uuid: Option<String>,
    pub kind: String,
    /// The NMState interface type ([`nmstate_kind`]).
    pub nm_type: &'static str,
    /// `interface-name` (from [connection] or the type's group).
    pub iface: Option<String>,
    /// The MAC the profile matches its device by (no interface name).
    pub mac_match: Option<String>,
    /// The NMState interface name (empty for a VLAN without
    /// `interface-name` until its parent is known).
    pub name: String,
    pub controller: Option<&'a Entry>,
    pub port_type: Option<String>,
    /// Keys read here, as (group, key).
    pub used: Vec<(&'static str, &'static str)>,
    /// Whether the NMState state nmstate generated it from named the
    /// interface after the profile (`identifier: mac-address` without
    /// `profile-name`): nmstate's UUID for that name is the profile's.
    pub nmstate_named: bool,
}

impl Profile<'_> {
    /// What references to this interface use: routes name a MAC-matched
    /// interface by its profile name (nmstate resolves it), everything
    /// else by interface name.
    pub fn route_ref(&self) -> String {
        if self.mac_match.is_some() {
            self.id.clone()
        } else {
            self.name.clone()
        }
    }

    pub fn is_port(&self) -> bool {
        self.controller.is_some()
    }
}

/// The outcome of reading one keyfile as a profile.
pub enum Read<'a> {
    Profile(Box<Profile<'a>>),
    /// Accepted by NetworkManager but not expressible (one warning).
    Skipped(Diagnostic),
    /// Rejected by NetworkManager (an error).
    Rejected(Diagnostic),
}

impl Read<'_> {
    fn rejected(at: Span, msg: impl Into<String>) -> Self {
        Read::Rejected(Diagnostic::error(Code::KeyfileInvalid, msg).at(at))
    }

    fn skipped(at: Span, msg: impl Into<String>) -> Self {
        Read::Skipped(Diagnostic::warning(Code::KeyfileUnmapped, msg).at(at))
    }
}

/// NetworkManager's interface name rule for a kernel interface
/// (`nm_utils_ifname_valid_kernel`).
fn valid_kernel_ifname(n: &str) -> bool {
    !n.is_empty()
        && n.len() < 16
        && n != "."
        && n != ".."
        && !n.chars().any(|c| c == '/' || c == ':' || c.is_whitespace())
}

/// NetworkManager's rule for a name that exists only in Open vSwitch's
/// database: printable ASCII without `/` and `\\`, of any length.
fn valid_ovs_ifname(n: &str) -> bool {
    !n.is_empty()
        && n.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b'\\')
}

/// The interface name rule NetworkManager applies to a profile: OVS
/// bridges, ports and patch interfaces are names in OVS only; other OVS
/// interfaces are kernel interfaces in OVS; the rest are kernel ones.
fn valid_ifname(kf: &Keyfile, kind: &str, n: &str) -> bool {
    match kind {
        "ovs-bridge" | "ovs-port" => valid_ovs_ifname(n),
        "ovs-interface" if kf.value("ovs-interface", "type").as_deref() == Some("patch") => {
            valid_ovs_ifname(n)
        }
        "ovs-interface" => valid_ovs_ifname(n) && valid_kernel_ifname(n),
        _ => valid_kernel_ifname(n),
    }
}

/// Port types NetworkManager knows, and the setting each implies.
const PORT_SETTINGS: &[(&str, &str)] = &[
    ("bridge-port", "bridge"),
    ("bond-port", "bond"),
    ("team-port", "team"),
    ("ovs-port", "ovs-bridge"),
    ("ovs-interface", "ovs-port"),
];

/// Reads a keyfile's profile-level facts (see the module doc).
pub fn read(kf: &Keyfile) -> Read<'_> {
    match read_profile(kf) {
        Ok(p) => Read::Profile(Box::new(p)),
        Err(r) => *r,
    }
}

/// Why reading a profile stopped (boxed: a finding is large).
type Stop = Box<Read<'static>>;

fn reject(at: Span, msg: impl Into<String>) -> Stop {
    Box::new(Read::rejected(at, msg))
}

fn skip(at: Span, msg: impl Into<String>) -> Stop {
    Box::new(Read::skipped(at, msg))
}

/// The profile, or the finding that stops reading it (an error where
/// NetworkManager refuses the file, a warning where NMState cannot say it).
fn read_profile(kf: &Keyfile) -> Result<Profile<'_>, Stop> {
    let con = kf.group("connection");
    let header = kf.header();
    let mut used: Vec<(&'static str, &'static str)> = vec![
        ("connection", "id"),
        ("connection", "uuid"),
        ("connection", "type"),
        ("connection", "interface-name"),
        ("connection", "controller"),
        ("connection", "port-type"),
        ("connection", "autoconnect"),
        ("connection", "autoconnect-priority"),
        // NetworkManager's record of the last activation (it writes it
        // into the keyfile), not configuration.
        ("connection", "timestamp"),
    ];
    let (kind, type_span) = connection_type(kf, con)?;
    let nm_type = imported_as(kf, &kind, type_span)?;
    let id = profile_id(kf);
    let uuid = uuid_of(con)?;
    let iface = interface_name(kf, con, &kind)?;
    let (controller, port_type) = port_type_of(kf, con)?;
    if iface.is_none() && NEEDS_INTERFACE_NAME.contains(&kind.as_str()) {
        return Err(reject(
            header,
            format!("a `{kind}` profile needs `interface-name=`"),
        ));
    }
    if kind == "vlan" && kf.value("vlan", "parent").is_none_or(|p| p.is_empty()) {
        return Err(vlan_without_parent(kf, &id));
    }
    let mut mac_match = None;
    if iface.is_none() && kind == "ethernet" {
        if let Some(m) = kf.get("ethernet", "mac-address") {
            mac_match = read_mac(m, 6);
            if mac_match.is_some() {
                used.push(("ethernet", "mac-address"));
            }
        }
    }
    let nmstate_named =
        mac_match.is_some() && uuid.as_deref() == Some(nmstate_uuid(&id, nm_type).as_str());
    let name = if nmstate_named {
        id.clone()
    } else {
        profile_name(&kind, &id, &iface, &mac_match, header)?
    };
    if kf.get(&kind, "interface-name").is_some() {
        if let Some(k) = NM_TYPES.iter().find(|t| **t == kind) {
            used.push((k, "interface-name"));
        }
    }
    Ok(Profile {
        kf,
        id,
        uuid,
        kind,
        nm_type,
        iface,
        mac_match,
        name,
        controller,
        port_type,
        used,
        nmstate_named,
    })
}

/// The connection type (`type=`, else the one base setting present) and
/// where it is said.
fn connection_type(kf: &Keyfile, con: Option<&Group>) -> Result<(String, Span), Stop> {
    let header = kf.header();
    let type_entry = con
        .and_then(|c| c.get("type"))
        .filter(|e| !e.raw.is_empty());
    if let Some(t) = type_entry {
        let v = t.value();
        let k = canonical_type(&v).to_string();
        if !NM_TYPES.contains(&k.as_str()) {
            return Err(reject(
                t.span,
                format!("`{v}` is not a NetworkManager connection type"),
            ));
        }
        return Ok((k, t.span));
    }
    let present: Vec<&str> = kf
        .groups
        .iter()
        .map(|g| g.name.as_str())
        .filter(|n| BASE_SETTINGS.contains(n))
        .collect();
    match present.as_slice() {
        [one] => Ok((one.to_string(), header)),
        [] if kf.group("bluetooth").is_some() => Ok(("bluetooth".into(), header)),
        [] => Err(reject(
            header,
            "no `type=` in [connection] and no setting to tell the type by (like [ethernet])",
        )),
        _ => Err(reject(
            header,
            format!(
                "no `type=` in [connection] and several settings it could be ({})",
                present.join(", ")
            ),
        )),
    }
}

/// The NMState interface type a NetworkManager type is imported as, or
/// why it is not.
fn imported_as(kf: &Keyfile, kind: &str, type_span: Span) -> Result<&'static str, Stop> {
    if let Some((_, why)) = NOT_IMPORTED.iter().find(|(k, _)| *k == kind) {
        return Err(skip(
            type_span,
            format!(
                "`{kind}` profile `{}` is not imported: {why}",
                profile_id(kf)
            ),
        ));
    }
    nmstate_kind(kf, kind).ok_or_else(|| {
        let what = if kind == "vpn" {
            "vpn interfaces other than libreswan IPsec".to_string()
        } else {
            format!("{kind} interfaces")
        };
        skip(
            type_span,
            format!(
                "`{kind}` profile `{}` is not imported: NMState has no {what}",
                profile_id(kf)
            ),
        )
    })
}

fn uuid_of(con: Option<&Group>) -> Result<Option<String>, Stop> {
    let Some(u) = con
        .and_then(|c| c.get("uuid"))
        .filter(|e| !e.raw.is_empty())
    else {
        return Ok(None);
    };
    let v = u.value();
    if !is_uuid(&v) {
        return Err(reject(u.span, format!("`{v}` is not a UUID")));
    }
    Ok(Some(v.to_ascii_lowercase()))
}

/// `interface-name` in [connection], else (an old location) in the
/// type's own group.
fn interface_name(kf: &Keyfile, con: Option<&Group>, kind: &str) -> Result<Option<String>, Stop> {
    let Some(e) = con
        .and_then(|c| c.get("interface-name"))
        .or_else(|| kf.get(kind, "interface-name"))
        .filter(|e| !e.raw.is_empty())
    else {
        return Ok(None);
    };
    if !valid_ifname(kf, kind, &e.value()) {
        return Err(reject(
            e.span,
            format!("`{}` is not a valid interface name", e.value()),
        ));
    }
    Ok(Some(e.value()))
}

/// `controller=` and the port type: `port-type=`, else the one port
/// setting present.
fn port_type_of<'a>(
    kf: &Keyfile,
    con: Option<&'a Group>,
) -> Result<(Option<&'a Entry>, Option<String>), Stop> {
    let controller = con
        .and_then(|c| c.get("controller"))
        .filter(|e| !e.raw.is_empty());
    let Some(c) = controller else {
        return Ok((None, None));
    };
    if let Some(p) = con
        .and_then(|c| c.get("port-type"))
        .filter(|p| !p.raw.is_empty())
    {
        return Ok((controller, Some(p.value())));
    }
    let found: Vec<&str> = PORT_SETTINGS
        .iter()
        .filter(|(g, _)| kf.group(g).is_some())
        .map(|(_, t)| *t)
        .collect();
    match found.as_slice() {
        [one] => Ok((controller, Some(one.to_string()))),
        _ => Err(reject(
            c.span,
            format!(
                "`controller={}` without `port-type=` and without one port \
                 setting (like [bridge-port]) to tell it by",
                c.value()
            ),
        )),
    }
}

/// A VLAN without `parent=`: NetworkManager finds the parent by MAC
/// (NMState cannot say that), or refuses the profile.
fn vlan_without_parent(kf: &Keyfile, id: &str) -> Stop {
    let at_vlan = kf.group("vlan").map(|g| g.span).unwrap_or(kf.header());
    let by_mac = kf
        .get("ethernet", "mac-address")
        .is_some_and(|m| read_mac(m, 6).is_some());
    if by_mac {
        let msg = format!(
            "VLAN `{id}` is not imported: it has no `parent=` (NetworkManager finds \
             the parent by [ethernet] `mac-address=`), and NMState needs a base interface"
        );
        skip(at_vlan, msg)
    } else {
        let msg = format!(
            "VLAN `{id}` has neither `parent=` nor an [ethernet] `mac-address=` \
             to find its parent by"
        );
        reject(at_vlan, msg)
    }
}

/// The interface the profile becomes in NMState.
fn profile_name(
    kind: &str,
    id: &str,
    iface: &Option<String>,
    mac_match: &Option<String>,
    header: Span,
) -> Result<String, Stop> {
    Ok(match (iface, mac_match) {
        // nmstate names an IPsec connection after its profile (and binds
        // it to no interface: an `interface-name` is warned about).
        _ if kind == "vpn" => id.to_string(),
        (Some(i), _) => i.clone(),
        (None, Some(mac)) => format!("enx{}", mac.replace(':', "").to_ascii_lowercase()),
        (None, None) if kind == "loopback" => "lo".into(),
        // A VLAN's name comes from its parent, once profiles are known.
        (None, None) if kind == "vlan" => String::new(),
        (None, None) => {
            let mac = if kind == "ethernet" {
                ", no [ethernet] `mac-address=`"
            } else {
                ""
            };
            let msg = format!(
                "profile `{id}` is not imported: it names no interface (no \
                 `interface-name=`{mac}), so it applies to any {kind} device, and NMState \
                 needs one"
            );
            return Err(skip(header, msg));
        }
    })
}

/// `id=`, else the file name without `.nmconnection` (NetworkManager's
/// keyfile plugin does the same).
fn profile_id(kf: &Keyfile) -> String {
    kf.value("connection", "id")
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| {
            kf.name
                .strip_suffix(".nmconnection")
                .filter(|s| !s.is_empty())
                .unwrap_or(&kf.name)
                .to_string()
        })
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The UUID nmstate gives a profile it generates for interface `name`
/// of NMState type `kind` (UUID v5 of `kind://name` in the URL
/// namespace).
pub fn nmstate_uuid(name: &str, kind: &str) -> String {
    uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_URL,
        format!("{kind}://{name}").as_bytes(),
    )
    .hyphenated()
    .to_string()
}

/// The UUID nmstate gives the profile of interface `name` of NMState type
/// `nm_type`: as [`nmstate_uuid`], a veth named as the ethernet
/// interface it is to nmstate.
pub fn nmstate_profile_uuid(name: &str, nm_type: &str) -> String {
    nmstate_uuid(
        name,
        if nm_type == "veth" {
            "ethernet"
        } else {
            nm_type
        },
    )
}

/// Whether a UUID is a name-based one of version 5, as nmstate derives
/// them (NetworkManager makes random, version 4 ones).
pub fn is_name_based(uuid: &str) -> bool {
    uuid.as_bytes().get(14) == Some(&b'5')
}

/// The name NetworkManager gives a VLAN without `interface-name`: its
/// parent's, cut to fit, then `.ID` (`nmp_utils_new_vlan_name`).
pub fn vlan_name(parent: &str, id: u16) -> String {
    let suffix = format!(".{id}");
    let keep = parent.len().min(15 - suffix.len());
    let mut cut = keep;
    while !parent.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &parent[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vlan_names_fit_in_fifteen_bytes() {
        assert_eq!(vlan_name("em1", 444), "em1.444");
        assert_eq!(vlan_name("enp175s0f0np0", 4000), "enp175s0f0.4000");
        assert_eq!(vlan_name("enp175s0f0np0", 7), "enp175s0f0np0.7");
        assert_eq!(vlan_name("enp175s0f0np0x", 7), "enp175s0f0np0.7");
    }

    #[test]
    fn nmstate_uuids() {
        // What nmstatectl 2.2 gc writes for these interfaces.
        assert_eq!(
            nmstate_uuid("enx001122334455", "ethernet"),
            "dadd63d1-826c-5531-b25f-4ed228eff54c"
        );
        assert_eq!(
            nmstate_uuid("br0", "linux-bridge"),
            "21dd2f8f-7814-535b-8225-a001da95c87e"
        );
    }
}
