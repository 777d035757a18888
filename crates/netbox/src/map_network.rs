//! A device's interfaces → its NMState intent: physical ports as
//! ethernet, LAGs as 802.3ad bonds of their members, virtual
//! subinterfaces as VLANs (by parent and access VLAN, or by a name like
//! `bond0.110` on a parent tagged for it), bridges with their ports, and
//! the IP addresses assigned to each.

use nodenet_model::Severity;
use serde_json::Value as J;

use crate::emit::Y;
use crate::map::{page, physical, Findings, Index};
use crate::objects::{Device, Interface};

fn src(i: &Interface) -> Option<String> {
    Some(page(&i.url, i.display_url.as_ref()))
}

fn key(k: &str, v: Y) -> (String, Y) {
    (k.to_string(), v)
}

/// The device's `network:` and the notes for what could not be read.
pub(crate) fn network(
    d: &Device,
    host: &str,
    interfaces: &[&Interface],
    index: &Index,
    findings: &mut Findings,
) -> (Y, Vec<(String, Y)>) {
    let mut notes = Vec::new();
    let mut note = |findings: &mut Findings, i: &Interface, severity, why: String, help: &str| {
        notes.push((
            format!("interface-{}", i.id),
            findings.note(
                severity,
                Some(host),
                format!(
                    "{host} interface {} ({}): {why}",
                    i.name,
                    page(&i.url, i.display_url.as_ref())
                ),
                help,
            ),
        ));
    };
    let mine: std::collections::HashMap<u64, &Interface> =
        interfaces.iter().map(|i| (i.id, *i)).collect();
    let mut sorted: Vec<&Interface> = interfaces.to_vec();
    sorted.sort_by_key(|i| (order(&i.kind.value), i.name.clone()));
    let mut out = Vec::new();
    let mut gateways = Vec::new();
    for i in sorted {
        if i.mgmt_only {
            continue;
        }
        if let Some(lag) = &i.lag {
            let name = lag.name.as_deref().unwrap_or("?");
            match mine.get(&lag.id) {
                None => note(
                    findings,
                    i,
                    Severity::Error,
                    format!("a member of LAG {name} of another device"),
                    "a LAG's members are the same device's interfaces",
                ),
                // NetBox's API takes a `lag` that is no LAG.
                Some(l) if l.kind.value != "lag" => note(
                    findings,
                    i,
                    Severity::Error,
                    format!("a member of {name}, which is no LAG (type `{}`)", l.kind.value),
                    "set the parent's type to `lag` (Link Aggregation Group), or clear the member's LAG",
                ),
                Some(_) => {}
            }
        }
        let mut entries = vec![key("name", Y::scalar(i.name.clone(), src(i)))];
        let kind = i.kind.value.as_str();
        let port_of_something = i.lag.is_some() || i.bridge.is_some();
        match kind {
            "lag" => {
                entries.push(key("type", Y::scalar("bond", src(i))));
                let members = members_of(interfaces, i, |m| m.lag.as_ref());
                entries.push(key(
                    "link-aggregation",
                    Y::Map(
                        vec![
                            key(
                                "mode",
                                Y::scalar("802.3ad", Some("a NetBox LAG: LACP (a config context's `network:` sets another mode)".into())),
                            ),
                            key(
                                "port",
                                Y::Seq(members.iter().map(|m| Y::scalar(*m, None)).collect()),
                            ),
                        ],
                        None,
                    ),
                ));
            }
            "bridge" => {
                entries.push(key("type", Y::scalar("linux-bridge", src(i))));
                let ports = members_of(interfaces, i, |m| m.bridge.as_ref());
                let port = Y::Seq(
                    ports
                        .iter()
                        .map(|p| Y::Map(vec![key("name", Y::scalar(*p, None))], None))
                        .collect(),
                );
                entries.push(key("bridge", Y::Map(vec![key("port", port)], None)));
            }
            "virtual" => match vlan(d, i, &mine, index) {
                Ok(v) => {
                    entries.push(key("type", Y::scalar("vlan", src(i))));
                    entries.push(key("vlan", v));
                }
                Err((severity, why, help)) => {
                    note(findings, i, severity, why, help);
                    continue;
                }
            },
            k if physical(k) => entries.push(key("type", Y::scalar("ethernet", src(i)))),
            other => {
                note(
                    findings,
                    i,
                    Severity::Warning,
                    format!("type `{other}` is no interface nodenet configures"),
                    "set the interface's type in NetBox (a physical port's speed and form, `lag`, `virtual`, `bridge`), or mark it management-only",
                );
                continue;
            }
        }
        entries.push(key(
            "state",
            Y::scalar(if i.enabled { "up" } else { "down" }, src(i)),
        ));
        if let Some(mtu) = i.mtu {
            entries.push(key("mtu", Y::scalar(mtu, src(i))));
        }
        // A LAG member's or bridge port's own address is carried too, not
        // dropped: nmstate refuses IP on a port, said at that address's line.
        let has_addresses = index.by_interface.get(&i.id).is_some_and(|a| !a.is_empty());
        if !port_of_something || has_addresses {
            entries.extend(addresses(i, index));
            gateways.extend(gateways_of(i, index));
        }
        out.push(Y::Map(entries, None));
    }
    let mut network = vec![key("interfaces", Y::Seq(out))];
    if let Some(routes) = default_routes(&gateways) {
        network.push(key("routes", routes));
    }
    (Y::Map(network, None), notes)
}

/// A gateway for one of the interface's static addresses: the interface,
/// the gateway, where it was read.
type Gateway = (String, std::net::IpAddr, String);

fn gateways_of(i: &Interface, index: &Index) -> Vec<Gateway> {
    index
        .by_interface
        .get(&i.id)
        .into_iter()
        .flatten()
        .filter(|a| {
            !a.status
                .as_ref()
                .is_some_and(|s| s.value == "dhcp" || s.value == "slaac")
        })
        .filter_map(|a| {
            let (gw, page) = index.gateway_of(a)?;
            Some((i.name.clone(), gw, page.to_string()))
        })
        .collect()
}

/// `routes:` with a default route per family, via the first interface
/// (in the order interfaces are written) whose address's prefix names a
/// gateway. A config context's `routes` replaces them.
fn default_routes(gateways: &[Gateway]) -> Option<Y> {
    let mut config = Vec::new();
    for v6 in [false, true] {
        let Some((iface, gw, page)) = gateways.iter().find(|(_, gw, _)| gw.is_ipv6() == v6) else {
            continue;
        };
        config.push(Y::Map(
            vec![
                key(
                    "destination",
                    Y::scalar(if v6 { "::/0" } else { "0.0.0.0/0" }, None),
                ),
                key(
                    "next-hop-address",
                    Y::scalar(gw.to_string(), Some(page.clone())),
                ),
                key("next-hop-interface", Y::scalar(iface.clone(), None)),
            ],
            None,
        ));
    }
    (!config.is_empty()).then(|| Y::Map(vec![key("config", Y::Seq(config))], None))
}

/// The names of the interfaces whose `parent_of` (their LAG, their
/// bridge) is `of`, sorted.
fn members_of<'a>(
    interfaces: &[&'a Interface],
    of: &Interface,
    parent_of: impl Fn(&Interface) -> Option<&crate::objects::Ref>,
) -> Vec<&'a str> {
    let mut names: Vec<&str> = interfaces
        .iter()
        .filter(|m| parent_of(m).is_some_and(|p| p.id == of.id))
        .map(|m| m.name.as_str())
        .collect();
    names.sort_unstable();
    names
}

/// Ports first, then what is built on them (bonds, bridges, VLANs).
fn order(kind: &str) -> u8 {
    match kind {
        "lag" => 1,
        "bridge" => 2,
        "virtual" => 3,
        _ => 0,
    }
}

type Unread = (Severity, String, &'static str);

/// A virtual interface's `vlan:` (base and id), or why it is none.
fn vlan(
    d: &Device,
    i: &Interface,
    mine: &std::collections::HashMap<u64, &Interface>,
    index: &Index,
) -> Result<Y, Unread> {
    let by_name = i
        .name
        .rsplit_once('.')
        .and_then(|(base, id)| Some((base, id.parse::<u16>().ok()?)));
    let (base, vid, vlan_id) = match (&i.parent, &i.untagged_vlan) {
        (Some(p), Some(v)) => {
            let base = mine.get(&p.id).map(|b| b.name.as_str()).ok_or((
                Severity::Error,
                format!(
                    "its parent {} is another device's",
                    p.name.as_deref().unwrap_or("?")
                ),
                "a subinterface's parent is an interface of the same device",
            ))?;
            (base.to_string(), v.vid, Some(v.id))
        }
        (Some(p), None) => {
            let base = mine.get(&p.id).map(|b| b.name.as_str()).unwrap_or("?");
            let Some((_, vid)) = by_name else {
                return Err((
                    Severity::Warning,
                    format!("a subinterface of {base} with no VLAN (no untagged VLAN in access mode, no `.ID` in its name)"),
                    "set mode access and the untagged VLAN on the subinterface",
                ));
            };
            (base.to_string(), vid, None)
        }
        (None, _) => {
            let Some((base, vid)) = by_name else {
                return Err((
                    Severity::Warning,
                    "a virtual interface with no parent and no `BASE.ID` name: not a VLAN nodenet can tell".into(),
                    "give it a parent and an access VLAN, or name it like `bond0.110`",
                ));
            };
            let Some(parent) = mine.values().find(|p| p.name == base) else {
                return Err((
                    Severity::Error,
                    format!("named as a VLAN of {base}, which the device does not have"),
                    "add the parent interface, or rename the VLAN interface",
                ));
            };
            let mode = parent.mode.as_ref().map(|m| m.value.as_str());
            let tagged = parent.tagged_vlans.iter().find(|v| v.vid == vid);
            if mode != Some("tagged-all") && tagged.is_none() {
                return Err((
                    Severity::Error,
                    format!("VLAN {vid} by its name, but {base} does not carry it tagged in NetBox (mode {})", mode.unwrap_or("none")),
                    "set the parent's 802.1Q mode to tagged with this VLAN among its tagged VLANs",
                ));
            }
            (base.to_string(), vid, tagged.map(|v| v.id))
        }
    };
    if let (Some(id), Some(site)) = (vlan_id, &d.site) {
        if let Some(v) = index.vlans.get(&id) {
            if let Some(vsite) = v.site.as_ref().filter(|s| s.id != site.id) {
                return Err((
                    Severity::Error,
                    format!(
                        "VLAN {} ({}) is of site {}, the device is at {}",
                        v.vid,
                        page(&v.url, v.display_url.as_ref()),
                        vsite
                            .slug
                            .as_deref()
                            .or(vsite.name.as_deref())
                            .unwrap_or("?"),
                        site.slug.as_deref().or(site.name.as_deref()).unwrap_or("?")
                    ),
                    "use the device's site's VLAN (or a VLAN with no site)",
                ));
            }
        }
    }
    Ok(Y::Map(
        vec![
            key("base-iface", Y::scalar(base, None)),
            key("id", Y::scalar(vid, src(i))),
        ],
        None,
    ))
}

/// `ipv4:`/`ipv6:` from the addresses assigned to the interface: static,
/// or DHCP/SLAAC by the address's status; off when it has none.
fn addresses(i: &Interface, index: &Index) -> Vec<(String, Y)> {
    let assigned = index
        .by_interface
        .get(&i.id)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut out = Vec::new();
    for (family, v6) in [("ipv4", false), ("ipv6", true)] {
        let mine: Vec<_> = assigned
            .iter()
            .filter(|a| a.address.contains(':') == v6)
            .collect();
        let status = |s: &str| {
            mine.iter()
                .any(|a| a.status.as_ref().is_some_and(|x| x.value == s))
        };
        let dynamic = status("dhcp");
        let slaac = v6 && status("slaac");
        let statics: Vec<Y> = mine
            .iter()
            .filter(|a| {
                !a.status
                    .as_ref()
                    .is_some_and(|s| s.value == "dhcp" || s.value == "slaac")
            })
            .filter_map(|a| {
                let (ip, len) = a.address.split_once('/')?;
                let len: u8 = len.parse().ok()?;
                Some(Y::Map(
                    vec![
                        key(
                            "ip",
                            Y::scalar(ip, Some(page(&a.url, a.display_url.as_ref()))),
                        ),
                        key("prefix-length", Y::scalar(len, None)),
                    ],
                    None,
                ))
            })
            .collect();
        let enabled = dynamic || slaac || !statics.is_empty();
        let mut entries = vec![key("enabled", Y::scalar(enabled, None))];
        if enabled {
            entries.push(key("dhcp", Y::scalar(J::Bool(dynamic), None)));
            if v6 {
                entries.push(key("autoconf", Y::scalar(J::Bool(slaac), None)));
            }
            if !statics.is_empty() {
                entries.push(key("address", Y::Seq(statics)));
            }
        }
        out.push(key(family, Y::Map(entries, None)));
    }
    out
}
