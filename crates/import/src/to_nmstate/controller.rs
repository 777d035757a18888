//! Controllers and their ports: bonds ([bond], the ports' [bond-port]),
//! Linux bridges ([bridge], [bridge-port]) and OVS bridges with their
//! ports and interfaces ([ovs-bridge], [ovs-port], [ovs-interface],
//! [ovs-patch], [ovs-dpdk], [ovs-external-ids], [ovs-other-config]).

use serde_json::{json, Map, Value as J};

use crate::keyfile::{Entry, Keyfile};
use crate::profile::Profile;
use crate::values::{bool_value, read_mac};

use super::{option_value, Findings, Net, Used};

/// `[bond]` → `link-aggregation`: mode, options, ports, and the ports'
/// [bond-port] priority and queue id as `ports-config`.
pub(super) fn bond(
    c: &Profile,
    net: &Net,
    i: usize,
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
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
    let ports: Vec<String> = net.ports(i).map(|(_, p)| p.name.clone()).collect();
    la.insert("port".into(), json!(ports));
    // nmstate writes [bond-port] only for a non-zero priority or queue id.
    let configs: Vec<Map<String, J>> = net.ports(i).map(|(_, p)| bond_port(p, f)).collect();
    if configs.iter().any(|p| p.len() > 1) {
        la.insert(
            "ports-config".into(),
            J::Array(configs.into_iter().map(J::Object).collect()),
        );
    }
    iface.insert("link-aggregation".into(), J::Object(la));
    used.push(("bond", "*"));
}

/// A bond port's `ports-config` entry: its name, `prio` and `queue-id`
/// (0 is the default).
fn bond_port(port: &Profile, f: &mut Findings) -> Map<String, J> {
    let mut p = Map::new();
    p.insert("name".into(), json!(port.name));
    let Some(g) = port.kf.group("bond-port") else {
        return p;
    };
    let mut values = Map::new();
    for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
        match e.key.as_str() {
            "prio" => {
                if let Some(n) = f.num::<i32>(e, "bond-port") {
                    values.insert("priority".into(), json!(n));
                }
            }
            "queue-id" => {
                if let Some(n) = f.num::<u16>(e, "bond-port") {
                    values.insert("queue-id".into(), json!(n));
                }
            }
            _ => f.unmapped(e, "bond-port", "no NMState equivalent handled by nodenet"),
        }
    }
    if values.values().any(|v| v != &json!(0)) {
        p.extend(values);
    }
    p
}

/// `[bridge]` keys NMState names alike (numbers unless said).
const BRIDGE_OPTIONS: &[&str] = &[
    "group-forward-mask",
    "multicast-last-member-count",
    "multicast-last-member-interval",
    "multicast-membership-interval",
    "multicast-querier-interval",
    "multicast-query-interval",
    "multicast-query-response-interval",
    "multicast-startup-query-count",
    "multicast-startup-query-interval",
    "vlan-default-pvid",
];
const BRIDGE_FLAGS: &[&str] = &[
    "multicast-querier",
    "multicast-query-use-ifaddr",
    "multicast-snooping",
];

/// `[bridge]` → a Linux bridge's options (STP and the rest) and its ports.
pub(super) fn linux_bridge(
    c: &Profile,
    net: &Net,
    i: usize,
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    let mut options = Map::new();
    let mut stp = Map::new();
    if let Some(g) = c.kf.group("bridge") {
        for e in g
            .entries
            .iter()
            .filter(|e| e.key != "interface-name" && !e.raw.is_empty())
        {
            let v = e.value();
            let k = e.key.as_str();
            match k {
                "stp" => {
                    if let Some(b) = f.flag(e, "bridge") {
                        stp.insert("enabled".into(), json!(b));
                    }
                }
                "forward-delay" | "hello-time" | "max-age" | "priority" => {
                    if let Some(n) = f.num::<u64>(e, "bridge") {
                        stp.insert(k.into(), json!(n));
                    }
                }
                // nmstate turns VLAN filtering on for a bridge with port VLANs.
                "vlan-filtering" => {}
                "ageing-time" => {
                    if let Some(n) = f.num::<u64>(e, "bridge") {
                        options.insert("mac-ageing-time".into(), json!(n));
                    }
                }
                "multicast-hash-max" => {
                    if let Some(n) = f.num::<u64>(e, "bridge") {
                        options.insert("hash-max".into(), json!(n));
                    }
                }
                "group-address" => match read_mac(e, 6) {
                    Some(mac) => {
                        options.insert("group-addr".into(), json!(mac));
                    }
                    None => f.ignored(e, "bridge", "not a MAC address: NetworkManager ignores it"),
                },
                "multicast-router" => match v.as_str() {
                    "auto" | "disabled" | "enabled" => {
                        options.insert(k.into(), json!(v));
                    }
                    _ => f.ignored(
                        e,
                        "bridge",
                        "not auto, disabled or enabled: NetworkManager ignores it",
                    ),
                },
                "vlan-protocol" => match v.as_str() {
                    "802.1Q" | "802.1q" => {
                        options.insert(k.into(), json!("802.1q"));
                    }
                    "802.1ad" => {
                        options.insert(k.into(), json!("802.1ad"));
                    }
                    _ => f.ignored(
                        e,
                        "bridge",
                        "not 802.1Q or 802.1ad: NetworkManager ignores it",
                    ),
                },
                k if BRIDGE_FLAGS.contains(&k) => {
                    if let Some(b) = f.flag(e, "bridge") {
                        options.insert(k.into(), json!(b));
                    }
                }
                k if BRIDGE_OPTIONS.contains(&k) => {
                    if let Some(n) = f.num::<u64>(e, "bridge") {
                        options.insert(k.into(), json!(n));
                    }
                }
                _ => f.unmapped(e, "bridge", "no NMState equivalent handled by nodenet"),
            }
        }
    }
    // NetworkManager's default is STP on.
    if !stp.contains_key("enabled") {
        stp.insert("enabled".into(), json!(true));
    }
    options.insert("stp".into(), J::Object(stp));
    let ports: Vec<J> = net.ports(i).map(|(_, p)| bridge_port(p, f)).collect();
    iface.insert("bridge".into(), json!({"options": options, "port": ports}));
    used.push(("bridge", "*"));
}

/// A VLAN id or `MIN-MAX` range as an NMState trunk tag.
fn trunk_tag(range: &str) -> J {
    match range.split_once('-') {
        Some((a, b)) => {
            json!({"id-range": {"min": option_value(a.trim()), "max": option_value(b.trim())}})
        }
        None => json!({"id": option_value(range.trim())}),
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
                tags.push(trunk_tag(range));
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

/// `[ovs-bridge]` → an OVS bridge's options and its ports: each
/// [ovs-port] is a port of one interface, or a bond of several, with its
/// VLAN mode.
pub(super) fn ovs_bridge(
    c: &Profile,
    net: &Net,
    i: usize,
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    let mut bridge = Map::new();
    let mut options = Map::new();
    if let Some(g) = c.kf.group("ovs-bridge") {
        for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
            let key = match e.key.as_str() {
                "stp-enable" => "stp",
                "rstp-enable" => "rstp",
                "mcast-snooping-enable" => "mcast-snooping-enable",
                "fail-mode" => "fail-mode",
                "datapath-type" => "datapath",
                "interface-name" => continue,
                _ => {
                    f.unmapped(e, "ovs-bridge", "no NMState equivalent handled by nodenet");
                    continue;
                }
            };
            if key == "fail-mode" || key == "datapath" {
                options.insert(key.into(), json!(e.value()));
            } else if let Some(b) = f.flag(e, "ovs-bridge") {
                options.insert(key.into(), json!(b));
            }
        }
    }
    if !options.is_empty() {
        bridge.insert("options".into(), J::Object(options));
    }
    let mut ports = Vec::new();
    for (p, port) in net.ports(i) {
        if port.kind != "ovs-port" {
            ports.push(json!({"name": port.name}));
            continue;
        }
        if let Some(g) = port.kf.group("ovs-port") {
            for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
                if !OVS_PORT_KEYS.contains(&e.key.as_str()) {
                    f.unmapped(e, "ovs-port", "no NMState equivalent handled by nodenet");
                }
            }
        }
        let members: Vec<&Profile> = net.ports(p).map(|(_, m)| m).collect();
        let mut entry = Map::new();
        match members.as_slice() {
            [] => {
                f.warn(
                    nodenet_model::Code::KeyfileUnmapped,
                    port.kf.header(),
                    format!(
                        "OVS port `{}` is not imported: no interface among the profiles is in it",
                        port.name
                    ),
                );
                continue;
            }
            [one] => {
                entry.insert("name".into(), json!(one.name));
                ovs_port_bond_only(port.kf, f);
            }
            several => {
                entry.insert("name".into(), json!(port.name));
                let mut la = ovs_bond(port.kf, f);
                la.insert(
                    "port".into(),
                    J::Array(several.iter().map(|m| json!({"name": m.name})).collect()),
                );
                if let Some(db) = ovs_db_of(port.kf, f) {
                    la.insert("ovs-db".into(), db);
                }
                entry.insert("link-aggregation".into(), J::Object(la));
            }
        }
        if let Some(vlan) = ovs_port_vlan(port.kf, f) {
            entry.insert("vlan".into(), vlan);
        }
        ports.push(J::Object(entry));
    }
    bridge.insert("port".into(), J::Array(ports));
    iface.insert("bridge".into(), J::Object(bridge));
    used.push(("ovs-bridge", "*"));
}

/// The [ovs-port] keys an OVS bridge reads for its ports.
const OVS_PORT_KEYS: &[&str] = &[
    "interface-name",
    "bond-mode",
    "lacp",
    "bond-updelay",
    "bond-downdelay",
    "vlan-mode",
    "tag",
    "trunks",
];

/// An OVS bond's mode (from `bond-mode` and `lacp`, as nmstate writes
/// them) and up/down delays.
fn ovs_bond(kf: &Keyfile, f: &mut Findings) -> Map<String, J> {
    let mut la = Map::new();
    let mode = kf
        .get("ovs-port", "bond-mode")
        .filter(|e| !e.raw.is_empty());
    let lacp = kf.get("ovs-port", "lacp").filter(|e| !e.raw.is_empty());
    let lacp_value = lacp.map(Entry::value);
    match (mode.map(Entry::value).as_deref(), lacp_value.as_deref()) {
        (None, Some("active")) => {
            la.insert("mode".into(), json!("lacp"));
        }
        (Some("balance-tcp"), Some("active")) => {
            la.insert("mode".into(), json!("balance-tcp"));
        }
        (Some(m @ ("active-backup" | "balance-slb")), None | Some("off")) => {
            la.insert("mode".into(), json!(m));
        }
        (None, None | Some("off")) => {}
        _ => {
            let e = lacp.or(mode).expect("one is set");
            f.unmapped(
                e,
                "ovs-port",
                "NMState's OVS bond modes are lacp, balance-tcp (LACP active), active-backup and balance-slb (LACP off)",
            );
        }
    }
    for (key, name) in [
        ("bond-updelay", "bond-updelay"),
        ("bond-downdelay", "bond-downdelay"),
    ] {
        if let Some(e) = kf.get("ovs-port", key).filter(|e| !e.raw.is_empty()) {
            if let Some(n) = f.num::<u32>(e, "ovs-port") {
                la.insert(name.into(), json!(n));
            }
        }
    }
    la
}

/// The bond settings of an OVS port of one interface: nothing to bond.
fn ovs_port_bond_only(kf: &Keyfile, f: &mut Findings) {
    for key in ["bond-mode", "bond-updelay", "bond-downdelay"] {
        if let Some(e) = kf.get("ovs-port", key).filter(|e| !e.raw.is_empty()) {
            f.unmapped(e, "ovs-port", "a bond setting of a port of one interface");
        }
    }
    if let Some(e) = kf
        .get("ovs-port", "lacp")
        .filter(|e| !e.raw.is_empty() && e.value() != "off")
    {
        f.unmapped(e, "ovs-port", "a bond setting of a port of one interface");
    }
    for g in ["ovs-external-ids", "ovs-other-config"] {
        if let Some(g) = kf
            .group(g)
            .filter(|g| g.entries.iter().any(|e| !e.raw.is_empty()))
        {
            f.warn(
                nodenet_model::Code::KeyfileUnmapped,
                g.span,
                format!(
                    "[{}] of an OVS port of one interface is not imported: NMState keeps OVS \
                     database settings of an interface, a bridge or a bond",
                    g.raw_name
                ),
            );
        }
    }
}

/// An OVS port's VLAN: `vlan-mode` (access or trunk), `tag`, `trunks`.
fn ovs_port_vlan(kf: &Keyfile, f: &mut Findings) -> Option<J> {
    let mut vlan = Map::new();
    if let Some(e) = kf
        .get("ovs-port", "vlan-mode")
        .filter(|e| !e.raw.is_empty())
    {
        match e.value().as_str() {
            m @ ("access" | "trunk") => {
                vlan.insert("mode".into(), json!(m));
            }
            _ => f.unmapped(
                e,
                "ovs-port",
                "NMState's OVS VLAN modes are access and trunk",
            ),
        }
    }
    if let Some(e) = kf.get("ovs-port", "tag").filter(|e| !e.raw.is_empty()) {
        if let Some(n) = f.num::<u16>(e, "ovs-port") {
            vlan.insert("tag".into(), json!(n));
        }
    }
    if let Some(e) = kf.get("ovs-port", "trunks").filter(|e| !e.raw.is_empty()) {
        let tags: Vec<J> = e
            .value()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(trunk_tag)
            .collect();
        vlan.insert("trunk-tags".into(), J::Array(tags));
    }
    (!vlan.is_empty()).then_some(J::Object(vlan))
}

/// `[ovs-interface]`: an internal interface, or a patch (with its peer)
/// or DPDK port ([ovs-dpdk]).
pub(super) fn ovs_interface(
    c: &Profile,
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    used.push(("ovs-interface", "type"));
    let Some(t) =
        c.kf.get("ovs-interface", "type")
            .filter(|e| !e.raw.is_empty())
    else {
        return;
    };
    match t.value().as_str() {
        "internal" => {}
        "patch" => {
            used.push(("ovs-patch", "peer"));
            match c.kf.value("ovs-patch", "peer") {
                Some(peer) => {
                    iface.insert("patch".into(), json!({ "peer": peer }));
                }
                None => f.invalid(t.span, "an OVS patch interface without [ovs-patch] `peer=`"),
            }
        }
        "dpdk" => {
            used.push(("ovs-dpdk", "*"));
            let mut dpdk = Map::new();
            if let Some(g) = c.kf.group("ovs-dpdk") {
                for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
                    match e.key.as_str() {
                        "devargs" => {
                            dpdk.insert("devargs".into(), json!(e.value()));
                        }
                        k @ ("n-rxq" | "n-rxq-desc" | "n-txq-desc") => {
                            let name = match k {
                                "n-rxq" => "rx-queue",
                                "n-rxq-desc" => "n_rxq_desc",
                                _ => "n_txq_desc",
                            };
                            if let Some(n) = f.num::<u32>(e, "ovs-dpdk") {
                                dpdk.insert(name.into(), json!(n));
                            }
                        }
                        "lsc-interrupt" => match e.value().trim() {
                            "-1" => {}
                            "0" => {
                                dpdk.insert("lsc-interrupt".into(), json!(false));
                            }
                            "1" => {
                                dpdk.insert("lsc-interrupt".into(), json!(true));
                            }
                            _ => f.ignored(
                                e,
                                "ovs-dpdk",
                                "not -1, 0 or 1: NetworkManager ignores it",
                            ),
                        },
                        _ => f.unmapped(e, "ovs-dpdk", "no NMState equivalent handled by nodenet"),
                    }
                }
            }
            if dpdk.contains_key("devargs") {
                iface.insert("dpdk".into(), J::Object(dpdk));
            } else {
                f.unmapped(
                    t,
                    "ovs-interface",
                    "NMState's DPDK interface needs [ovs-dpdk] `devargs=`",
                );
            }
        }
        _ => f.unmapped(
            t,
            "ovs-interface",
            "NMState's OVS interfaces are internal, patch and dpdk",
        ),
    }
}

/// `[ovs-external-ids]` and `[ovs-other-config]` (`data.KEY=VALUE`) of an
/// OVS bridge, an OVS interface or a system interface in an OVS bridge →
/// its `ovs-db`.
pub(super) fn ovs_db(
    c: &Profile,
    net: &Net,
    i: usize,
    iface: &mut Map<String, J>,
    used: &mut Used,
    f: &mut Findings,
) {
    let in_ovs =
        matches!(c.kind.as_str(), "ovs-bridge" | "ovs-interface") || net.is_port_of(i, "ovs-port");
    if !in_ovs {
        return;
    }
    used.push(("ovs-external-ids", "*"));
    used.push(("ovs-other-config", "*"));
    // NetworkManager marks a kernel interface in an OVS port as `system`.
    if c.kind != "ovs-interface" && c.kf.value("ovs-interface", "type").as_deref() == Some("system")
    {
        used.push(("ovs-interface", "type"));
    }
    if let Some(db) = ovs_db_of(c.kf, f) {
        iface.insert("ovs-db".into(), db);
    }
}

/// A profile's OVS database settings as NMState's `ovs-db`.
fn ovs_db_of(kf: &Keyfile, f: &mut Findings) -> Option<J> {
    let mut db = Map::new();
    for (group, key) in [
        ("ovs-external-ids", "external_ids"),
        ("ovs-other-config", "other_config"),
    ] {
        let Some(g) = kf.group(group) else { continue };
        let mut data = Map::new();
        for e in g.entries.iter().filter(|e| !e.raw.is_empty()) {
            match e.key.strip_prefix("data.") {
                Some(k) if !k.is_empty() => {
                    data.insert(k.into(), json!(e.value()));
                }
                _ => f.unmapped(e, group, "no NMState equivalent handled by nodenet"),
            }
        }
        if !data.is_empty() {
            db.insert(key.into(), J::Object(data));
        }
    }
    (!db.is_empty()).then_some(J::Object(db))
}
