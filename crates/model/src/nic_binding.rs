//! NICs bound by MAC rather than by name (`nicBinding: mac`, per host or
//! for the cluster).
//!
//! A profile bound to a name matches nothing once the NIC is called
//! something else (another boot medium, a driver update, `net.ifnames=0`);
//! one bound to the NIC's permanent MAC still finds it. In NMState that is
//! `identifier: mac-address` with the `mac-address` (nmstate 2.2.10 and
//! later; `profile-name` keeps the profile's name), which nmstate turns
//! into a keyfile with `[ethernet] mac-address=` and no `interface-name`.
//! A `mac-address` alone would be the MAC nmstate *sets* on the NIC
//! (`cloned-mac-address`), not one it matches.
//!
//! `nicBinding: pin` keeps the profiles bound by name and makes the names
//! hold instead: a systemd `.link` file per NIC names the NIC with that
//! permanent MAC, in the live ramdisk (embedded in the ISO or PXE initrd)
//! and on the installed system (a MachineConfig). Unlike MAC binding it
//! also keeps what only names can say: a VLAN's parent, a bond's
//! `primary`, and any nmstate version.

use crate::inventory::Nic;
use crate::yaml::{Node, Span, Value};

/// How a host's state names its NICs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NicBinding {
    /// By interface name (`interface-name=`), as written.
    #[default]
    Name,
    /// By the NIC table's MAC (`identifier: mac-address`).
    Mac,
    /// By name, with each name pinned to its MAC by a systemd `.link` file.
    Pin,
}

impl NicBinding {
    pub fn parse(s: &str) -> Option<NicBinding> {
        match s {
            "name" => Some(NicBinding::Name),
            "mac" => Some(NicBinding::Mac),
            "pin" => Some(NicBinding::Pin),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NicBinding::Name => "name",
            NicBinding::Mac => "mac",
            NicBinding::Pin => "pin",
        }
    }
}

/// Where systemd-udevd reads `.link` files from that the administrator
/// (Ignition, a MachineConfig, an initrd overlay) puts there.
pub const LINK_DIR: &str = "etc/systemd/network";

/// A `.link` file that gives one NIC its name.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkFile {
    /// `10-nodenet-<name>-<mac hex>.link`: unique across hosts, so that a
    /// pool's MachineConfig can carry every host's (each matches one MAC).
    pub file_name: String,
    pub text: String,
}

/// The `.link` files pinning each NIC of `nics` that has a MAC to its name.
///
/// The match is `PermanentMACAddress=` and `MACAddress=` together.
/// systemd 251 and later (RHEL 9.2, OpenShift 4.13; Debian 12) match both,
/// so a bond port that has taken its bond's MAC, and the bond or VLAN that
/// inherits the MAC, are not matched. Older systemd ignores the unknown key
/// and matches on `MACAddress=` alone, never on nothing (a `[Match]`
/// section that systemd could not read at all would match every link).
pub fn link_files(host: &str, nics: &[Nic]) -> Vec<LinkFile> {
    nics.iter()
        .filter_map(|n| {
            let mac = n.mac.as_ref()?.value.to_ascii_lowercase();
            let name = &n.name.value;
            Some(LinkFile {
                file_name: format!("10-nodenet-{name}-{}.link", mac.replace(':', "")),
                text: format!(
                    "# nodenet (nicBinding: pin): the NIC with MAC {mac} on {host} is {name},\n\
                     # in the live ramdisk, on the installed system and across upgrades.\n\
                     [Match]\nPermanentMACAddress={mac}\nMACAddress={mac}\n\n[Link]\nName={name}\n"
                ),
            })
        })
        .collect()
}

fn text(s: &str, span: Span) -> Node {
    Node::new(Value::Str(s.to_string()), span)
}

fn set(entries: &mut Vec<(Node, Node)>, key: &str, value: Node) {
    match entries.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
        Some((_, v)) => *v = value,
        None => entries.push((text(key, value.span), value)),
    }
}

/// The names a bond or bridge takes as ports (bond
/// `link-aggregation.port`, linux-bridge `bridge.port[].name`).
fn ports(iface: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let list = iface
        .get("link-aggregation")
        .and_then(|l| l.get("port").or(l.get("ports")))
        .or_else(|| iface.get("bridge").and_then(|b| b.get("port")));
    for p in list.and_then(Node::as_seq).unwrap_or_default() {
        if let Some(name) = p.get("name").unwrap_or(p).scalar_text() {
            out.push(name);
        }
    }
    out
}

/// `network` with every NIC of `nics` that has a MAC bound by it: each
/// ethernet interface of that name gets `identifier: mac-address`, its
/// `mac-address` and `profile-name`; a NIC the state uses only as a port
/// gets an ethernet entry of its own, so that its port profile is bound
/// too. An ethernet interface that sets another MAC (cloning one) keeps its
/// name binding.
pub fn bind_by_mac(network: &Node, nics: &[Nic]) -> Node {
    let mut out = network.clone();
    let Value::Map(root) = &mut out.value else {
        return out;
    };
    let Some((_, ifaces)) = root
        .iter_mut()
        .find(|(k, _)| k.as_str() == Some("interfaces"))
    else {
        return out;
    };
    let Value::Seq(list) = &mut ifaces.value else {
        return out;
    };
    let mac_of = |name: &str| {
        nics.iter()
            .find(|n| n.name.value == name)
            .and_then(|n| n.mac.as_ref())
            .map(|m| m.value.to_ascii_uppercase())
    };
    let defined: Vec<String> = list
        .iter()
        .filter_map(|i| i.get("name").and_then(Node::scalar_text))
        .collect();
    let mut port_only: Vec<(String, Span)> = Vec::new();
    for iface in list.iter() {
        for p in ports(iface) {
            if !defined.contains(&p) && !port_only.iter().any(|(n, _)| *n == p) {
                port_only.push((p, iface.span));
            }
        }
    }
    for iface in list.iter_mut() {
        let ethernet = iface
            .get("type")
            .and_then(Node::as_str)
            .is_none_or(|t| t == "ethernet");
        let absent = iface.get("state").and_then(Node::as_str) == Some("absent");
        let Some(name) = iface.get("name").and_then(Node::scalar_text) else {
            continue;
        };
        let (Some(mac), true, false) = (mac_of(&name), ethernet, absent) else {
            continue;
        };
        if let Some(own) = iface.get("mac-address").and_then(Node::scalar_text) {
            if !own.eq_ignore_ascii_case(&mac) {
                continue;
            }
        }
        let span = iface.span;
        if let Value::Map(entries) = &mut iface.value {
            set(entries, "identifier", text("mac-address", span));
            set(entries, "mac-address", text(&mac, span));
            if !entries
                .iter()
                .any(|(k, _)| k.as_str() == Some("profile-name"))
            {
                set(entries, "profile-name", text(&name, span));
            }
            if !entries.iter().any(|(k, _)| k.as_str() == Some("type")) {
                set(entries, "type", text("ethernet", span));
            }
        }
    }
    for (port, span) in port_only {
        let Some(mac) = mac_of(&port) else { continue };
        list.push(Node::new(
            Value::Map(vec![
                (text("name", span), text(&port, span)),
                (text("type", span), text("ethernet", span)),
                (text("state", span), text("up", span)),
                (text("identifier", span), text("mac-address", span)),
                (text("mac-address", span), text(&mac, span)),
                (text("profile-name", span), text(&port, span)),
            ]),
            span,
        ));
    }
    out
}

#[cfg(test)]
mod tests;
