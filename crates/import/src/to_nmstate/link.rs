//! The device itself: profile-wide connection settings (LLDP, MPTCP,
//! the description nmstate keeps in [user]), [ethernet], [ethtool],
//! [sriov], [802-1x] and [infiniband].

use serde_json::{json, Map, Value as J};

use crate::keyfile::Entry;
use crate::profile::Profile;
use crate::values::{bool_value, cert_path, parse_int, read_mac};

use super::{Findings, Used};

/// Where nmstate keeps an interface's `description` in [user].
const DESCRIPTION: &str = "nmstate.interface.description";

/// NetworkManager's MPTCP flags nmstate writes (`mptcp-flags`): 0x1
/// disabled, 0x8 also-without-default-route (set with any other), and
/// the address flags NMState names.
const MPTCP_DISABLED: u32 = 0x1;
const MPTCP_ALSO_WITHOUT_DEFAULT_ROUTE: u32 = 0x8;
const MPTCP_ADDRESS_FLAGS: &[(u32, &str)] = &[
    (0x10, "signal"),
    (0x20, "subflow"),
    (0x40, "backup"),
    (0x80, "fullmesh"),
];

/// [connection] settings of the interface rather than of the profile:
/// `lldp`, `mptcp-flags`; and [user]'s description.
pub(super) fn connection(
    c: &Profile,
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    if let Some(e) = c.kf.get("connection", "lldp") {
        used.push(("connection", "lldp"));
        // -1: NetworkManager's global default; 0 disable; 1 enable-rx.
        match e.value().trim() {
            "-1" | "default" | "" => {}
            "0" | "disable" => {
                iface.insert("lldp".into(), json!({"enabled": false}));
            }
            "1" | "enable-rx" => {
                iface.insert("lldp".into(), json!({"enabled": true}));
            }
            _ => f.ignored(
                e,
                "connection",
                "not an LLDP mode: NetworkManager ignores it",
            ),
        }
    }
    if let Some(e) = c.kf.get("connection", "mptcp-flags") {
        used.push(("connection", "mptcp-flags"));
        match parse_int(&e.value()).and_then(|n| u32::try_from(n).ok()) {
            None => f.ignored(e, "connection", "not a number: NetworkManager ignores it"),
            Some(0) => {}
            Some(MPTCP_DISABLED) => {
                iface.insert("mptcp".into(), json!({"address-flags": []}));
            }
            Some(n) => {
                let names: Vec<&str> = MPTCP_ADDRESS_FLAGS
                    .iter()
                    .filter(|(bit, _)| n & bit != 0)
                    .map(|(_, name)| *name)
                    .collect();
                let known = MPTCP_ADDRESS_FLAGS
                    .iter()
                    .fold(MPTCP_ALSO_WITHOUT_DEFAULT_ROUTE, |a, (b, _)| a | b);
                if n & !known == 0 && n & MPTCP_ALSO_WITHOUT_DEFAULT_ROUTE != 0 && !names.is_empty()
                {
                    iface.insert("mptcp".into(), json!({ "address-flags": names }));
                } else {
                    f.unmapped(
                        e,
                        "connection",
                        "NMState sets MPTCP address flags (signal, subflow, backup, fullmesh), \
                         always with also-without-default-route (0x8), or disables MPTCP (0x1)",
                    );
                }
            }
        }
    }
    if let Some(g) = c.kf.group("user") {
        used.push(("user", DESCRIPTION));
        match g.get(DESCRIPTION) {
            Some(e) => {
                iface.insert("description".into(), json!(e.value()));
            }
            // nmstate writes an empty [user] for an empty description.
            None if g.entries.is_empty() => {
                iface.insert("description".into(), json!(""));
            }
            None => {}
        }
    }
}

/// `[ethernet]` (and the MTU of other types): MTU, cloned MAC, link
/// negotiation.
pub(super) fn ethernet(c: &Profile, iface: &mut Map<String, J>, used: &mut Used, f: &mut Findings) {
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
    if let Some(e) = c.kf.get("ethernet", "accept-all-mac-addresses") {
        used.push(("ethernet", "accept-all-mac-addresses"));
        // A ternary: -1 default, 0 off, 1 on.
        match e.value().trim() {
            "-1" | "default" | "" => {}
            "0" | "false" => {
                iface.insert("accept-all-mac-addresses".into(), json!(false));
            }
            "1" | "true" => {
                iface.insert("accept-all-mac-addresses".into(), json!(true));
            }
            _ => f.ignored(e, "ethernet", "not -1, 0 or 1: NetworkManager ignores it"),
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
        if let Some(b) = f.flag(e, "ethernet") {
            eth.insert("auto-negotiation".into(), json!(b));
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
pub(super) fn infiniband(
    c: &Profile,
    iface: &mut Map<String, J>,
    used: &mut Used,
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

/// NetworkManager's offload features ([ethtool] `feature-NAME`).
const ETHTOOL_FEATURES: &[&str] = &[
    "esp-hw-offload",
    "esp-tx-csum-hw-offload",
    "fcoe-mtu",
    "gro",
    "gso",
    "highdma",
    "hw-tc-offload",
    "l2-fwd-offload",
    "loopback",
    "lro",
    "macsec-hw-offload",
    "ntuple",
    "rx",
    "rx-all",
    "rx-fcs",
    "rx-gro-hw",
    "rx-gro-list",
    "rx-udp-gro-forwarding",
    "rx-udp_tunnel-port-offload",
    "rx-vlan-filter",
    "rx-vlan-stag-filter",
    "rx-vlan-stag-hw-parse",
    "rxhash",
    "rxvlan",
    "sg",
    "tls-hw-record",
    "tls-hw-rx-offload",
    "tls-hw-tx-offload",
    "tso",
    "tx",
    "tx-checksum-fcoe-crc",
    "tx-checksum-ip-generic",
    "tx-checksum-ipv4",
    "tx-checksum-ipv6",
    "tx-checksum-sctp",
    "tx-esp-segmentation",
    "tx-fcoe-segmentation",
    "tx-gre-csum-segmentation",
    "tx-gre-segmentation",
    "tx-gso-list",
    "tx-gso-partial",
    "tx-gso-robust",
    "tx-ipxip4-segmentation",
    "tx-ipxip6-segmentation",
    "tx-nocache-copy",
    "tx-scatter-gather",
    "tx-scatter-gather-fraglist",
    "tx-sctp-segmentation",
    "tx-tcp-ecn-segmentation",
    "tx-tcp-mangleid-segmentation",
    "tx-tcp-segmentation",
    "tx-tcp6-segmentation",
    "tx-tunnel-remcsum-segmentation",
    "tx-udp-segmentation",
    "tx-udp_tnl-csum-segmentation",
    "tx-udp_tnl-segmentation",
    "tx-vlan-stag-hw-insert",
    "txvlan",
];

/// NetworkManager's short feature names and the kernel's (ethtool's)
/// names NMState uses for them; other features are named alike.
const ETHTOOL_SHORT_NAMES: &[(&str, &str)] = &[
    ("rx", "rx-checksum"),
    ("sg", "tx-scatter-gather"),
    ("tso", "tx-tcp-segmentation"),
    ("gro", "rx-gro"),
    ("gso", "tx-generic-segmentation"),
    ("rxhash", "rx-hashing"),
    ("lro", "rx-lro"),
    ("ntuple", "rx-ntuple-filter"),
    ("rxvlan", "rx-vlan-hw-parse"),
    ("txvlan", "tx-vlan-hw-insert"),
];

/// NetworkManager's ring and coalesce options (`ring-NAME`,
/// `coalesce-NAME`), named alike in NMState.
const ETHTOOL_RING: &[&str] = &["rx", "rx-jumbo", "rx-mini", "tx"];
const ETHTOOL_COALESCE: &[&str] = &[
    "adaptive-rx",
    "adaptive-tx",
    "pkt-rate-high",
    "pkt-rate-low",
    "rx-frames",
    "rx-frames-high",
    "rx-frames-irq",
    "rx-frames-low",
    "rx-usecs",
    "rx-usecs-high",
    "rx-usecs-irq",
    "rx-usecs-low",
    "sample-interval",
    "stats-block-usecs",
    "tx-frames",
    "tx-frames-high",
    "tx-frames-irq",
    "tx-frames-low",
    "tx-usecs",
    "tx-usecs-high",
    "tx-usecs-irq",
    "tx-usecs-low",
];

/// `fec-mode` bits and NMState's FEC setting for each.
const FEC_MODES: &[(u32, &str, &str)] = &[
    (1 << 1, "auto", ""),
    (1 << 2, "mode", "off"),
    (1 << 3, "mode", "rs"),
    (1 << 4, "mode", "baser"),
    (1 << 5, "mode", "llrs"),
];

/// `[ethtool]` → NMState `ethtool`: offload features, ring sizes,
/// interrupt coalescing, pause frames and FEC.
pub(super) fn ethtool(c: &Profile, iface: &mut Map<String, J>, used: &mut Used, f: &mut Findings) {
    let Some(g) = c.kf.group("ethtool") else {
        return;
    };
    used.push(("ethtool", "*"));
    let group = "ethtool";
    let (mut feature, mut ring, mut coalesce, mut pause, mut fec) =
        (Map::new(), Map::new(), Map::new(), Map::new(), Map::new());
    for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
        let k = e.key.as_str();
        if let Some(name) = k.strip_prefix("feature-") {
            if !ETHTOOL_FEATURES.contains(&name) {
                f.ignored(
                    e,
                    group,
                    "not an offload feature: NetworkManager ignores it",
                );
            } else if let Some(b) = f.flag(e, group) {
                let kernel = ETHTOOL_SHORT_NAMES
                    .iter()
                    .find(|(nm, _)| *nm == name)
                    .map_or(name, |(_, kernel)| *kernel);
                feature.insert(kernel.into(), json!(b));
            }
        } else if let Some(name) = k.strip_prefix("ring-").filter(|n| ETHTOOL_RING.contains(n)) {
            if let Some(n) = f.num::<u32>(e, group) {
                ring.insert(name.into(), json!(n));
            }
        } else if let Some(name) = k
            .strip_prefix("coalesce-")
            .filter(|n| ETHTOOL_COALESCE.contains(n))
        {
            let value = if name.starts_with("adaptive-") {
                f.flag(e, group).map(|b| json!(b))
            } else {
                f.num::<u32>(e, group).map(|n| json!(n))
            };
            if let Some(v) = value {
                coalesce.insert(name.into(), v);
            }
        } else if let Some(name) = k
            .strip_prefix("pause-")
            .filter(|n| ["autoneg", "rx", "tx"].contains(n))
        {
            if let Some(b) = f.flag(e, group) {
                pause.insert(name.into(), json!(b));
            }
        } else if k == "fec-mode" {
            match f
                .num::<u32>(e, group)
                .map(|n| FEC_MODES.iter().find(|(bit, _, _)| *bit == n))
            {
                Some(Some((_, "auto", _))) => {
                    fec.insert("auto".into(), json!(true));
                }
                Some(Some((_, key, mode))) => {
                    fec.insert((*key).into(), json!(mode));
                }
                Some(None) => f.unmapped(e, group, "NMState sets one FEC mode, or auto"),
                None => {}
            }
        } else {
            f.unmapped(e, group, "no NMState equivalent handled by nodenet");
        }
    }
    // nmstate writes pause rx/tx only with pause autonegotiation off.
    if pause.get("autoneg") != Some(&json!(false)) {
        for k in ["rx", "tx"] {
            if pause.remove(k).is_some() {
                let e = g.get(&format!("pause-{k}")).expect("read above");
                f.unmapped(
                    e,
                    group,
                    "NMState sets pause rx/tx only with `pause-autoneg=false`",
                );
            }
        }
    }
    let mut ethtool = Map::new();
    for (name, part) in [
        ("feature", feature),
        ("ring", ring),
        ("coalesce", coalesce),
        ("pause", pause),
        ("fec", fec),
    ] {
        if !part.is_empty() {
            ethtool.insert(name.into(), J::Object(part));
        }
    }
    if !ethtool.is_empty() {
        iface.insert("ethtool".into(), J::Object(ethtool));
    }
}

/// `[sriov]` → `ethernet.sr-iov`: the number of VFs, driver autoprobe and
/// each VF (`vf.N=mac=… spoof-check=… trust=… min-tx-rate=…
/// max-tx-rate=… vlans=ID.QOS.PROTO`).
pub(super) fn sriov(c: &Profile, iface: &mut Map<String, J>, used: &mut Used, f: &mut Findings) {
    let Some(g) = c.kf.group("sriov") else {
        return;
    };
    used.push(("sriov", "*"));
    let mut sriov = Map::new();
    let mut vfs: Vec<(u32, J)> = Vec::new();
    for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
        match e.key.as_str() {
            "total-vfs" => {
                if let Some(n) = f.num::<u32>(e, "sriov") {
                    sriov.insert("total-vfs".into(), json!(n));
                }
            }
            "autoprobe-drivers" => match e.value().trim() {
                "-1" | "default" => {}
                "0" | "false" => {
                    sriov.insert("drivers-autoprobe".into(), json!(false));
                }
                "1" | "true" => {
                    sriov.insert("drivers-autoprobe".into(), json!(true));
                }
                _ => f.ignored(e, "sriov", "not -1, 0 or 1: NetworkManager ignores it"),
            },
            k => match k.strip_prefix("vf.").map(|n| n.parse::<u32>()) {
                Some(Ok(id)) => {
                    if let Some(vf) = sriov_vf(id, e, f) {
                        vfs.push((id, vf));
                    }
                }
                _ => f.unmapped(e, "sriov", "no NMState equivalent handled by nodenet"),
            },
        }
    }
    // nmstate writes no [sriov] for `total-vfs: 0`.
    if sriov.get("total-vfs") == Some(&json!(0)) {
        let e = g.get("total-vfs").expect("read above");
        f.unmapped(
            e,
            "sriov",
            "nmstate takes `total-vfs: 0` as no SR-IOV setting at all",
        );
        return;
    }
    if !vfs.is_empty() {
        vfs.sort_by_key(|(id, _)| *id);
        sriov.insert(
            "vfs".into(),
            J::Array(vfs.into_iter().map(|(_, v)| v).collect()),
        );
    }
    if sriov.is_empty() {
        return;
    }
    let eth = iface
        .entry("ethernet")
        .or_insert_with(|| J::Object(Map::new()));
    if let Some(eth) = eth.as_object_mut() {
        eth.insert("sr-iov".into(), J::Object(sriov));
    }
}

/// One `vf.N=` value: space-separated `attribute=value` pairs. None:
/// NetworkManager ignores the VF (an invalid pair; warned).
fn sriov_vf(id: u32, e: &Entry, f: &mut Findings) -> Option<J> {
    let mut vf = Map::new();
    vf.insert("id".into(), json!(id));
    for pair in e.value().split_whitespace() {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let valid = match k {
            "mac" => {
                let mac = Entry {
                    key: k.into(),
                    raw: v.into(),
                    span: e.span,
                };
                read_mac(&mac, 6).map(|m| vf.insert("mac-address".into(), json!(m)))
            }
            "spoof-check" | "trust" => bool_value(v).map(|b| vf.insert(k.into(), json!(b))),
            "min-tx-rate" | "max-tx-rate" => {
                v.parse::<u32>().ok().map(|n| vf.insert(k.into(), json!(n)))
            }
            "vlans" => match v.split(';').filter(|s| !s.is_empty()).collect::<Vec<_>>()[..] {
                [one] => sriov_vlan(one).map(|(vid, qos, proto)| {
                    if qos != 0 {
                        vf.insert("qos".into(), json!(qos));
                    }
                    if let Some(p) = proto {
                        vf.insert("vlan-proto".into(), json!(p));
                    }
                    vf.insert("vlan-id".into(), json!(vid))
                }),
                _ => {
                    f.unmapped(e, "sriov", "NMState sets one VLAN per VF");
                    Some(None)
                }
            },
            _ => {
                f.unmapped(e, "sriov", &format!("NMState has no VF attribute `{k}`"));
                Some(None)
            }
        };
        if valid.is_none() {
            let why = format!("`{pair}` is not valid: NetworkManager ignores the VF");
            f.ignored(e, "sriov", &why);
            return None;
        }
    }
    Some(J::Object(vf))
}

/// A VF VLAN `ID[.QOS[.PROTO]]` (PROTO `q` or `ad`): id, QoS and the
/// protocol NMState names when it is not the default 802.1Q.
fn sriov_vlan(s: &str) -> Option<(u32, u32, Option<&'static str>)> {
    let mut parts = s.split('.');
    let id = parts.next()?.parse::<u32>().ok()?;
    let qos = match parts.next() {
        Some(q) => q.parse::<u32>().ok()?,
        None => 0,
    };
    let proto = match parts.next() {
        None | Some("q") => None,
        Some("ad") => Some("802.1ad"),
        Some(_) => return None,
    };
    parts.next().is_none().then_some((id, qos, proto))
}

/// `[802-1x]` → NMState `802.1x`: identity, EAP methods, certificate and
/// key paths, passwords and the inner (phase 2) authentication.
pub(super) fn ieee8021x(
    c: &Profile,
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    let Some(g) = c.kf.group("802-1x") else {
        return;
    };
    used.push(("802-1x", "*"));
    let group = g.raw_name.as_str();
    let mut conf = Map::new();
    for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
        match e.key.as_str() {
            "identity" | "private-key-password" | "password" | "phase2-auth" => {
                conf.insert(e.key.clone(), json!(e.value()));
            }
            "eap" => {
                conf.insert("eap-methods".into(), json!(e.list()));
            }
            "private-key" | "client-cert" | "ca-cert" => match cert_path(&e.value()) {
                Some(p) => {
                    conf.insert(e.key.clone(), json!(p));
                }
                None => f.unmapped(
                    e,
                    group,
                    "NMState names certificates and keys by absolute path, not embedded or relative",
                ),
            },
            _ => f.unmapped(e, group, "no NMState equivalent handled by nodenet"),
        }
    }
    if !conf.is_empty() {
        iface.insert("802.1x".into(), J::Object(conf));
    }
}
