//! Which NIC is which: the host's NIC table (inventory `nics`, the MAC
//! maps of agent-config, NMStateConfig and ZTP files), the names its state
//! binds to, the NIC it boots from, and the names the kernel accepts.
//!
//! A profile bound to a name that the node does not have matches nothing,
//! and the node boots without its uplink: a name is only safe when the
//! NIC table gives its MAC, the state binds by MAC (`identifier:
//! mac-address`), or it is a systemd predictable name (the agent
//! installer's and assisted-service's rule, `^en[PsvxXbucaipod]`).

use std::collections::HashMap;

use nodenet_model::{Code, Diagnostic, Host, InputKind, Scope};

use crate::network::Network;

/// The kernel's limit on interface names (IFNAMSIZ 16, with the NUL).
pub const MAX_IFNAME: usize = 15;

/// Inputs whose MAC map assisted-service applies at install time (it
/// refuses a state naming an interface it cannot map).
fn assisted(kind: InputKind) -> bool {
    matches!(
        kind,
        InputKind::AgentConfig
            | InputKind::NmStateConfig
            | InputKind::ClusterInstance
            | InputKind::SiteConfig
    )
}

pub fn check_host(host: &Host, net: &Network, push: &mut dyn FnMut(Diagnostic)) {
    nic_table(host, push);
    mac_bindings(host, net, push);
    if host.nics_known() {
        unbound(host, net, push);
    }
    if host.scope() == Scope::FirstBoot {
        boot_nic(host, net, push);
    }
    name_lengths(host, net, push);
    by_name(net, push);
}

/// What names a NIC where only a name will do: a VLAN's (or MAC-VLAN's,
/// VXLAN's) parent, which NetworkManager looks up by interface name, and a
/// bond's `primary`, which the kernel takes as a name. Pointing at a NIC
/// bound by MAC, they fail where the NIC is called otherwise, the very
/// case MAC binding is for.
fn by_name(net: &Network, push: &mut dyn FnMut(Diagnostic)) {
    let bound: Vec<&str> = net
        .ifaces
        .iter()
        .filter(|i| !i.absent && bound_by_mac(i))
        .map(|i| i.name.as_str())
        .collect();
    if bound.is_empty() {
        return;
    }
    for iface in net.ifaces.iter().filter(|i| !i.absent) {
        let kind = iface.kind.as_deref().unwrap_or("");
        let reference = match kind {
            "vlan" | "mac-vlan" | "vxlan" => iface
                .get(kind)
                .and_then(|v| v.get("base-iface"))
                .map(|n| (n, "its parent", "VLAN")),
            "bond" => iface
                .get("link-aggregation")
                .and_then(|l| l.get("options"))
                .and_then(|o| o.get("primary"))
                .map(|n| (n, "its primary port", "bond")),
            _ => None,
        };
        let Some((node, role, what)) = reference else {
            continue;
        };
        let Some(target) = node.scalar_text() else {
            continue;
        };
        if !bound.contains(&target.as_str()) {
            continue;
        }
        let consequence = if what == "VLAN" {
            format!("NetworkManager finds a {kind}'s parent by name, so where the NIC is called otherwise `{}` does not come up", iface.name)
        } else {
            format!("the kernel takes a bond's primary by name, so where the NIC is called otherwise `{}` ignores it", iface.name)
        };
        push(
            Diagnostic::warning(
                Code::MacBoundByName,
                format!("{kind} `{}` names {role} `{target}`, which the state binds by MAC: {consequence}", iface.name),
            )
            .at(node.span)
            .help(if what == "VLAN" {
                "put the VLAN on a bond (its profile is found by name and its ports by MAC), or keep the names and pin them: `nicBinding: pin`"
            } else {
                "pin the names instead of binding by MAC (`nicBinding: pin`), or leave `primary` out"
            }),
        );
    }
}

/// The NIC table maps each name to one MAC and each MAC to one name.
fn nic_table(host: &Host, push: &mut dyn FnMut(Diagnostic)) {
    let mut names: HashMap<&str, &nodenet_model::Nic> = HashMap::new();
    let mut macs: HashMap<String, &nodenet_model::Nic> = HashMap::new();
    for nic in &host.nics {
        if let Some(first) = names.insert(&nic.name.value, nic) {
            push(
                Diagnostic::error(
                    Code::InterfaceDuplicate,
                    format!(
                        "`{}` is in the host's NIC table (MAC map) twice: a name maps to one NIC",
                        nic.name.value
                    ),
                )
                .at(nic.name.span)
                .related(first.name.span, "first here"),
            );
        }
        let Some(mac) = &nic.mac else { continue };
        if let Some(first) = macs.insert(mac.value.to_ascii_lowercase(), nic) {
            if first.name.value != nic.name.value {
                push(
                    Diagnostic::error(
                        Code::DuplicateMac,
                        format!(
                            "MAC {} is mapped to `{}` and to `{}`: a MAC maps to one name",
                            mac.value, first.name.value, nic.name.value
                        ),
                    )
                    .at(mac.span)
                    .related(first.name.span, "first mapped here"),
                );
            }
        }
    }
}

/// `identifier: mac-address` needs the MAC it matches.
fn mac_bindings(host: &Host, net: &Network, push: &mut dyn FnMut(Diagnostic)) {
    for iface in net.ifaces.iter().filter(|i| !i.absent) {
        if bound_by_mac(iface) && iface.get("mac-address").is_none() {
            push(
                Diagnostic::error(
                    Code::InterfaceWithoutMac,
                    format!("`{}` has `identifier: mac-address` but no `mac-address`: nmstate refuses it when it applies the state (\"has `identifier: mac-address` but not MAC address defined\")", iface.name),
                )
                .at(iface.get("identifier").map(|n| n.span).unwrap_or(iface.name_span()))
                .help(match host.nics.iter().find(|n| n.name.value == iface.name).and_then(|n| n.mac.as_ref()) {
                    Some(mac) => format!("add `mac-address: {}` (the NIC table's MAC of `{}`)", mac.value, iface.name),
                    None => "add the NIC's `mac-address`".into(),
                }),
            );
        }
    }
}

/// Whether the state binds this interface by MAC (`identifier:
/// mac-address`; a `mac-address` alone is the MAC nmstate *sets* on the
/// interface, `cloned-mac-address`, not one it matches).
pub fn bound_by_mac(iface: &crate::network::Iface) -> bool {
    iface
        .get("identifier")
        .and_then(|v| v.as_str())
        .is_some_and(|v| v == "mac-address")
}

/// Every ethernet interface the state configures is in the NIC table,
/// bound by MAC, or has a predictable name; for assisted-service's inputs
/// the ports of its bonds too (it maps them before nmstate runs).
fn unbound(host: &Host, net: &Network, push: &mut dyn FnMut(Diagnostic)) {
    let in_table = |name: &str| host.nics.iter().any(|n| n.name.value == name);
    let identified = |name: &str, by_mac: bool| by_mac || in_table(name) || predictable(name);
    let why = if assisted(host.kind) {
        "assisted-service refuses the state"
    } else {
        "the profile binds to a name the node may not have (the node then boots without it)"
    };
    for iface in net.ifaces.iter().filter(|i| !i.absent) {
        if iface.is("ethernet") && !identified(&iface.name, bound_by_mac(iface)) {
            push(unmapped(&iface.name, "ethernet", why).at(iface.name_span()));
        }
        if iface.is("bond") && assisted(host.kind) {
            for port in &iface.ports {
                let defined = net.iface(&port.name).is_some();
                if !defined && !identified(&port.name, false) {
                    push(unmapped(&port.name, "bond port", why).at(port.node.span));
                }
            }
        }
    }
}

fn unmapped(name: &str, what: &str, why: &str) -> Diagnostic {
    Diagnostic::error(
        Code::InterfaceWithoutMac,
        format!("{what} `{name}` is not in the host's NIC table (MAC map), has no `identifier: mac-address` and no predictable name: {why}"),
    )
    .help(format!(
        "add `{name}` with its MAC to the host's NICs (`nics`, or `- name: {name}\n  macAddress: ...` in its interfaces), or bind it by MAC (`identifier: mac-address` with `mac-address:`)"
    ))
}

/// A systemd predictable interface name (`enp1s0`, `eno1`, `ens3`,
/// `enP1p2s0`, `enx<mac>`, ...): what assisted-service takes as a real
/// NIC name without a MAC map entry (`^en[PsvxXbucaipod]`).
pub fn predictable(name: &str) -> bool {
    name.strip_prefix("en")
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| "PsvxXbucaipod".contains(c))
}

/// The NIC the host boots from (its boot MAC) must stay up: not `down` or
/// `absent`, nor a port of a controller that is.
fn boot_nic(host: &Host, net: &Network, push: &mut dyn FnMut(Diagnostic)) {
    let Some(mac) = &host.boot_mac else { return };
    let by_table = host.nic_with_mac(&mac.value).map(|n| n.name.value.clone());
    let by_state = net.ifaces.iter().find(|i| {
        i.get("mac-address")
            .and_then(|m| m.scalar_text())
            .is_some_and(|m| m.eq_ignore_ascii_case(&mac.value))
    });
    let Some(name) = by_table.or(by_state.map(|i| i.name.clone())) else {
        return;
    };
    let down = |i: &crate::network::Iface| {
        i.absent
            || i.get("state")
                .and_then(|s| s.as_str())
                .is_some_and(|s| s == "down")
    };
    let iface = net.iface(&name);
    let (what, span) = if let Some(iface) = iface.filter(|i| down(i)) {
        (
            format!("`{name}`, which the state takes down"),
            iface.name_span(),
        )
    } else if let Some((ctl, pos)) = net.controller_of(&name).filter(|(c, _)| down(c)) {
        (
            format!(
                "`{name}`, a port of `{}`, which the state takes down",
                ctl.name
            ),
            ctl.ports[pos].node.span,
        )
    } else {
        return;
    };
    push(
        Diagnostic::error(
            Code::BootNicDown,
            format!(
                "the boot MAC {} is that of {what}: the node is provisioned through it, then loses it",
                mac.value
            ),
        )
        .at(span)
        .related(mac.span, "boot MAC")
        .help("bring the boot NIC up (or its bond), or give the boot MAC of a NIC the state brings up"),
    );
}

/// Names the kernel refuses: over 15 characters.
fn name_lengths(host: &Host, net: &Network, push: &mut dyn FnMut(Diagnostic)) {
    for nic in &host.nics {
        if nic.name.value.len() > MAX_IFNAME {
            push(too_long(&nic.name.value, "NIC").at(nic.name.span));
        }
    }
    for iface in &net.ifaces {
        // An OVS bridge, and an OVS patch port, is no kernel interface.
        let patch = iface.is("ovs-interface") && iface.get("patch").is_some();
        if iface.is("ovs-bridge") || patch || iface.name.len() <= MAX_IFNAME {
            continue;
        }
        let mut d = too_long(&iface.name, iface.kind.as_deref().unwrap_or("interface"));
        if iface.is("vlan") {
            let id = iface
                .get("vlan")
                .and_then(|v| v.get("id"))
                .and_then(|v| v.scalar_text())
                .unwrap_or_else(|| "ID".into());
            d = d.help(format!(
                "name the VLAN within 15 characters (`vlan{id}`, or a shorter base): NetworkManager truncates the `base.id` names it makes, so the name differs from the one the state and the checks use"
            ));
        }
        push(d.at(iface.name_span()));
    }
}

fn too_long(name: &str, what: &str) -> Diagnostic {
    Diagnostic::error(
        Code::InterfaceNameTooLong,
        format!(
            "{what} name `{name}` has {} characters; the kernel allows {MAX_IFNAME}",
            name.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::predictable;

    #[test]
    fn predictable_names_are_systemds() {
        for n in [
            "eno1",
            "ens3",
            "enp65s0f0",
            "enP1p2s0",
            "enx525400000001",
            "enc0",
            "ena0",
            "end0",
            "enb0",
            "enu1",
            "enX0",
            "env0",
            "eni0",
        ] {
            assert!(predictable(n), "{n}");
        }
        for n in ["eth0", "en", "enq1", "em1", "bond0", "net0", "en0"] {
            assert!(!predictable(n), "{n}");
        }
    }
}
