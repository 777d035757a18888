//! Checks of one host's network intent: what nmstate accepts silently or
//! reports without a location.

use std::collections::HashMap;
use std::net::IpAddr;

use nodenet_model::{Code, Diagnostic, Host, Node, Scope, Span};

use crate::network::{Family, Iface, Network, INTERFACE_TYPES};

mod links;
mod routes;

use links::*;
use routes::*;

const BOND_MODES_WITH_HASH: &[&str] = &["802.3ad", "balance-xor", "balance-tlb", "balance-alb"];

/// The hosts a partial state is applied to, when the inputs describe them
/// (an NNCP or MachineConfig file for `master-0` beside master-0's
/// agent-config entry): the names it leaves to the node are looked up in
/// their networks.
pub type Targets<'a> = [(&'a Host, Network<'a>)];

pub fn check_host(
    host: &Host,
    targets: &Targets,
    network: &Node,
    net: &Network,
    out: &mut Vec<Diagnostic>,
) {
    let mut push = |d: Diagnostic| out.push(d.host(host.name.value.clone()));
    if let Some(ifaces) = network.get("interfaces") {
        if ifaces.as_seq().is_none() && !ifaces.is_null() {
            push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`interfaces` must be a list, found {}", ifaces.kind_name()),
                )
                .at(ifaces.span),
            );
        }
    }
    // name+type pairs seen, to find duplicates nmstate would merge silently.
    let mut seen: HashMap<(&str, &str), Span> = HashMap::new();
    // port name -> (controller, span) for "port of two controllers".
    let mut port_owner: HashMap<&str, (&str, Span)> = HashMap::new();

    for iface in &net.ifaces {
        if iface.name_node.is_none() {
            push(
                Diagnostic::error(Code::MissingField, "interface has no `name`")
                    .at(iface.node.span),
            );
            continue;
        }
        if let Some(kind) = iface.get("type") {
            let k = kind.scalar_text().unwrap_or_default();
            if !INTERFACE_TYPES.contains(&k.as_str()) {
                let mut d = Diagnostic::error(
                    Code::UnknownInterfaceType,
                    format!("unknown interface type `{k}` (nmstate would silently make `{}` an ethernet)", iface.name),
                )
                .at(kind.span);
                if let Some(s) = nodenet_model::fields::suggest(&k, INTERFACE_TYPES) {
                    d = d.help(format!("did you mean `{s}`?"));
                }
                push(d);
            }
        }
        let kind = iface.kind.as_deref().unwrap_or("");
        // OVS bridges and their internal interface share a name on purpose.
        let family = if kind.starts_with("ovs-") { kind } else { "" };
        if let Some(first) = seen.insert((iface.name.as_str(), family), iface.name_span()) {
            push(
                Diagnostic::error(
                    Code::InterfaceDuplicate,
                    format!(
                        "interface `{}` is defined twice; nmstate keeps only the last",
                        iface.name
                    ),
                )
                .at(iface.name_span())
                .related(first, "first defined here"),
            );
        }
        if iface.absent {
            continue;
        }
        if iface.is("vlan") {
            check_vlan(host, targets, iface, net, &mut push);
        }
        if iface.is("bond") {
            check_bond(host, targets, iface, &mut push);
        }
        for port in &iface.ports {
            if !net.has(&port.name) {
                if let Some(d) = undefined_name(
                    host,
                    targets,
                    &port.name,
                    Code::PortUndefined,
                    &format!("port `{}` of `{}`", port.name, iface.name),
                    &format!(
                        "the node's `{}` becomes a port of `{}`",
                        port.name, iface.name
                    ),
                ) {
                    push(d.at(port.node.span));
                }
            }
            if let Some((owner, span)) = port_owner.get(port.name.as_str()) {
                if *owner != iface.name {
                    push(
                        Diagnostic::error(
                            Code::PortMultipleControllers,
                            format!(
                                "`{}` is a port of both `{owner}` and `{}`",
                                port.name, iface.name
                            ),
                        )
                        .at(port.node.span)
                        .related(*span, "first used here"),
                    );
                }
            } else {
                port_owner.insert(&port.name, (&iface.name, port.node.span));
            }
            // The controller sits on its ports: it cannot have a larger MTU.
            if let (Some((up, up_span)), Some(lower)) = (iface.mtu(), net.iface(&port.name)) {
                if let Some((low, _)) = lower.mtu() {
                    if up > low {
                        push(mtu_diag(&iface.name, up, up_span, &port.name, low));
                    }
                }
            }
        }
        if let Some(src) = iface.get("copy-mac-from") {
            let target = src.scalar_text().unwrap_or_default();
            // A bond or bridge the state creates has the MAC the node
            // gives it when it comes up: nmstate reads it then.
            let known = host.mac_of(&target).is_some()
                || net
                    .iface(&target)
                    .is_some_and(|i| i.get("mac-address").is_some() || !i.ports.is_empty());
            if !known && host.scope() == Scope::Partial {
                push(
                    Diagnostic::warning(
                        Code::CopyMacFromUnknown,
                        format!("`copy-mac-from: {target}`: applied on a node, nmstate reads the MAC of the node's `{target}` (it must exist)"),
                    )
                    .at(src.span),
                );
            } else if !known {
                push(
                    Diagnostic::error(
                        Code::CopyMacFromUnknown,
                        format!("`copy-mac-from: {target}`: `{target}` is no interface of this host with a known MAC"),
                    )
                    .at(src.span)
                    .help("list the NIC and its MAC under the host's `nics`, or give the interface a `mac-address`"),
                );
            }
        }
        check_addresses(iface, &mut push);
    }
    check_duplicate_ips(net, &mut push);
    check_routes(network, net, host.scope(), &mut push);
    crate::dual_stack::check_host(net, &mut push);
}

/// A name the state uses but does not define (a port, a VLAN's base).
/// NMState is partial: in a change applied to a node it is the node's
/// interface of that name (looked up in the hosts the change targets when
/// the inputs describe them), and on a first boot nmstate writes a profile
/// for it; only a host whose NICs are listed can tell that it does not
/// exist. `what` names the use, `then` says what the node does with it.
fn undefined_name(
    host: &Host,
    targets: &Targets,
    name: &str,
    code: Code,
    what: &str,
    then: &str,
) -> Option<Diagnostic> {
    let has =
        |h: &Host, net: &Network| net.has(name) || h.nics.iter().any(|n| n.name.value == name);
    if host.nics_known() {
        if has(host, &Network::default()) {
            return None;
        }
        let nics: Vec<&str> = host.nics.iter().map(|n| n.name.value.as_str()).collect();
        let mut d = Diagnostic::error(
            code,
            format!(
                "{what} is neither an interface of this state nor a NIC of the host ({}): on first boot it does not exist",
                nics.join(", ")
            ),
        );
        if let Some(s) = nodenet_model::fields::suggest(name, &nics) {
            d = d.help(format!("did you mean `{s}`?"));
        }
        return Some(d);
    }
    match host.scope() {
        Scope::Partial if !targets.is_empty() => {
            let lacking: Vec<&str> = targets
                .iter()
                .filter(|(t, net)| !has(t, net))
                .map(|(t, _)| t.name.value.as_str())
                .collect();
            (!lacking.is_empty()).then(|| {
                Diagnostic::warning(
                    code,
                    format!(
                        "{what} is neither in this change nor in the network the inputs give {}: it must exist on the node when the change is applied",
                        hosts_phrase(&lacking)
                    ),
                )
            })
        }
        Scope::Partial => Some(Diagnostic::warning(
            code,
            format!("{what} is not in this state: applied on a node, {then} (it must exist there)"),
        )),
        Scope::FirstBoot => Some(
            Diagnostic::warning(
                code,
                format!("{what} is not in this state and the host's NICs are not listed: the host must have a NIC named `{name}`"),
            )
            .help(format!("list the host's NICs (with MACs) to have this checked, or add `- name: {name}\n  type: ethernet` to interfaces")),
        ),
    }
}

fn check_addresses(iface: &Iface, push: &mut dyn FnMut(Diagnostic)) {
    for fam in [Family::V4, Family::V6] {
        let Some(addrs) = iface
            .get(fam.key())
            .and_then(|b| b.get("address"))
            .and_then(Node::as_seq)
        else {
            continue;
        };
        let max = if fam == Family::V4 { 32 } else { 128 };
        for a in addrs {
            if let Some(ip_node) = a.get("ip") {
                let text = ip_node.scalar_text().unwrap_or_default();
                match text.parse::<IpAddr>() {
                    Ok(ip) if Family::of(&ip) == fam => {}
                    Ok(_) => push(
                        Diagnostic::error(
                            Code::IpInvalid,
                            format!("`{text}` is not an {} address", fam.key()),
                        )
                        .at(ip_node.span),
                    ),
                    Err(_) => {
                        let help = if text.contains('/') {
                            "write the prefix separately: `ip: ADDRESS` and `prefix-length: N`"
                        } else {
                            "an address looks like 192.168.111.10 or fd00::10"
                        };
                        push(
                            Diagnostic::error(
                                Code::IpInvalid,
                                format!("`{text}` is not a valid IP address"),
                            )
                            .at(ip_node.span)
                            .help(help),
                        )
                    }
                }
            }
            if let Some(p) = a.get("prefix-length") {
                if !p.as_i64().is_some_and(|v| (0..=max).contains(&v)) {
                    push(
                        Diagnostic::error(
                            Code::IpPrefixRange,
                            format!("prefix-length `{p}` is outside 0-{max} for {}", fam.key()),
                        )
                        .at(p.span),
                    );
                }
            }
        }
    }
}

/// Whether a static address of `iface` in family `fam` is not an address
/// (a finding of its own).
fn has_unreadable_address(iface: &Iface, fam: Family) -> bool {
    iface
        .get(fam.key())
        .and_then(|b| b.get("address"))
        .and_then(Node::as_seq)
        .is_some_and(|addrs| {
            addrs.iter().any(|a| {
                a.get("ip")
                    .and_then(Node::scalar_text)
                    .is_some_and(|t| t.parse::<IpAddr>().is_err())
            })
        })
}

fn check_duplicate_ips(net: &Network, push: &mut dyn FnMut(Diagnostic)) {
    let mut seen: HashMap<IpAddr, &crate::network::Address> = HashMap::new();
    for a in &net.addresses {
        if let Some(first) = seen.get(&a.ip) {
            push(
                Diagnostic::error(
                    Code::IpDuplicateOnHost,
                    format!(
                        "{} is configured twice (on `{}` and `{}`)",
                        a.ip, first.iface, a.iface
                    ),
                )
                .at(a.span)
                .related(first.span, "first configured here"),
            );
        } else {
            seen.insert(a.ip, a);
        }
    }
}
