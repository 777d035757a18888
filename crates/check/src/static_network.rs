//! assisted-service's static network rules (openshift/assisted-service
//! `pkg/staticnetworkconfig`), which decide at install time for the agent
//! installer, NMStateConfig and GitOps ZTP nodes: the host's MAC map
//! (logical name → MAC, matched to the NICs at boot) is the only way the
//! state's names reach real NICs.

use std::collections::HashMap;

use nodenet_model::{Code, Diagnostic, Host, InputKind};

use crate::network::Network;

/// The state's ethernet interfaces and bond ports that a MAC map entry,
/// `identifier: mac-address` or a systemd predictable name identifies;
/// and the map itself: MACs and names each once.
pub fn check_host(host: &Host, net: &Network, push: &mut dyn FnMut(Diagnostic)) {
    if !matches!(
        host.kind,
        InputKind::AgentConfig
            | InputKind::NmStateConfig
            | InputKind::ClusterInstance
            | InputKind::SiteConfig
    ) {
        return;
    }
    let mut names: HashMap<&str, &nodenet_model::Nic> = HashMap::new();
    let mut macs: HashMap<String, &nodenet_model::Nic> = HashMap::new();
    for nic in &host.nics {
        if let Some(first) = names.insert(&nic.name.value, nic) {
            push(
                Diagnostic::error(
                    Code::InterfaceDuplicate,
                    format!(
                        "`{}` is in the MAC map twice: a name maps to one NIC",
                        nic.name.value
                    ),
                )
                .at(nic.name.span)
                .related(first.name.span, "first here"),
            );
        }
        let Some(mac) = &nic.mac else { continue };
        if let Some(first) = macs.insert(mac.value.to_ascii_lowercase(), nic) {
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
    let identified =
        |name: &str, by_mac: bool| by_mac || names.contains_key(name) || predictable(name);
    for iface in net.ifaces.iter().filter(|i| !i.absent) {
        let by_mac = iface
            .get("identifier")
            .and_then(|v| v.as_str())
            .is_some_and(|v| v == "mac-address")
            || iface.get("mac-address").is_some();
        if iface.is("ethernet") && !identified(&iface.name, by_mac) {
            push(unmapped(&iface.name, "ethernet").at(iface.name_span()));
        }
        if iface.is("bond") {
            for port in &iface.ports {
                let defined = net.iface(&port.name).is_some();
                if !defined && !identified(&port.name, false) {
                    push(unmapped(&port.name, "bond port").at(port.node.span));
                }
            }
        }
    }
}

fn unmapped(name: &str, what: &str) -> Diagnostic {
    Diagnostic::error(
        Code::InterfaceWithoutMac,
        format!("{what} `{name}` is not in the host's MAC map, has no `identifier: mac-address` and no predictable name: assisted-service refuses the state"),
    )
    .help(format!(
        "add `- name: {name}\n  macAddress: ...` to the host's interfaces (the MAC map)"
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
