//! Checks of one host's network intent: what nmstate accepts silently or
//! reports without a location.

use std::collections::HashMap;
use std::net::IpAddr;

use nodenet_model::{Code, Diagnostic, Host, Node, Scope, Span};

use crate::network::{Family, Iface, Network, INTERFACE_TYPES};

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

/// "`a`", "`a` and `b`", "`a`, `b` and 3 more hosts".
fn hosts_phrase(names: &[&str]) -> String {
    match names {
        [a] => format!("`{a}`"),
        [a, b] => format!("`{a}` and `{b}`"),
        [a, b, rest @ ..] => format!("`{a}`, `{b}` and {} more hosts", rest.len()),
        [] => String::new(),
    }
}

fn mtu_diag(upper: &str, up: i64, span: Span, lower: &str, low: i64) -> Diagnostic {
    Diagnostic::error(
        Code::MtuExceedsParent,
        format!("MTU {up} of `{upper}` is larger than MTU {low} of `{lower}` beneath it"),
    )
    .at(span)
    .help(format!("raise the MTU of `{lower}` to at least {up}"))
}

/// A change's VLAN above the MTU its base has on a node it targets, as
/// the inventory describes that node (an unset MTU: the kernel's 1500).
fn node_mtu_below(targets: &Targets, vlan: &str, up: i64, base: &str) -> Option<Diagnostic> {
    targets.iter().find_map(|(t, tnet)| {
        let low = tnet.iface(base)?.mtu().map(|m| m.0).unwrap_or(1500);
        (up > low).then(|| {
            Diagnostic::error(
                Code::MtuExceedsParent,
                format!(
                    "MTU {up} of `{vlan}` is larger than MTU {low} of `{base}` on `{}` (as the inventory has it): the kernel refuses the VLAN",
                    t.name.value
                ),
            )
            .help(format!(
                "raise the MTU of `{base}` to at least {up} first (in this change, or in one applied before it)"
            ))
        })
    })
}

fn check_vlan(
    host: &Host,
    targets: &Targets,
    iface: &Iface,
    net: &Network,
    push: &mut dyn FnMut(Diagnostic),
) {
    let Some(vlan) = iface.get("vlan") else {
        // In a change, a VLAN named without its settings is the node's
        // own, changed: nmstate merges the rest from it (its MTU or
        // addresses changed by a policy, say).
        if host.scope() == Scope::Partial {
            let lacking: Vec<&str> = targets
                .iter()
                .filter(|(_, net)| !net.has(&iface.name))
                .map(|(t, _)| t.name.value.as_str())
                .collect();
            let why = match (targets.is_empty(), lacking.is_empty()) {
                (true, _) => format!(
                    "VLAN `{}` has no `vlan:` settings: applied on a node, nmstate keeps those of the node's `{}` (it must exist there)",
                    iface.name, iface.name
                ),
                (false, false) => format!(
                    "VLAN `{}` has no `vlan:` settings and is not in the network the inputs give {}: it must exist on the node when the change is applied",
                    iface.name,
                    hosts_phrase(&lacking)
                ),
                (false, true) => return,
            };
            push(Diagnostic::warning(Code::VlanBaseMissing, why).at(iface.name_span()));
            return;
        }
        push(
            Diagnostic::error(
                Code::VlanBaseMissing,
                format!(
                    "VLAN `{}` has no `vlan:` settings (base-iface, id)",
                    iface.name
                ),
            )
            .at(iface.name_span()),
        );
        return;
    };
    // The `vlan:` key: its settings are what is incomplete.
    let vlan_key = iface
        .node
        .entry("vlan")
        .map(|(k, _)| k.span)
        .unwrap_or(vlan.span);
    match vlan.get("base-iface") {
        None => push(
            Diagnostic::error(
                Code::VlanBaseMissing,
                format!("VLAN `{}` has no `base-iface`", iface.name),
            )
            .at(vlan_key),
        ),
        Some(base) => {
            let b = base.scalar_text().unwrap_or_default();
            if !net.has(&b) {
                if let Some(d) = undefined_name(
                    host,
                    targets,
                    &b,
                    Code::VlanBaseMissing,
                    &format!("base-iface `{b}` of VLAN `{}`", iface.name),
                    &format!(
                        "NetworkManager creates `{}` on the node's `{b}`",
                        iface.name
                    ),
                ) {
                    push(d.at(base.span));
                }
            }
            if let Some((up, span)) = iface.mtu() {
                match net.iface(&b).and_then(|p| p.mtu()) {
                    Some((low, _)) if up > low => push(mtu_diag(&iface.name, up, span, &b, low)),
                    Some(_) => {}
                    // A change leaves the base's MTU to the node: the
                    // inventory's state for it says what that is.
                    None if host.scope() == Scope::Partial => {
                        if let Some(d) = node_mtu_below(targets, &iface.name, up, &b) {
                            push(d.at(span));
                        }
                    }
                    // An unset MTU is the kernel's default 1500.
                    None if net.has(&b) && up > 1500 => {
                        push(mtu_diag(&iface.name, up, span, &b, 1500))
                    }
                    None => {}
                }
            }
        }
    }
    match vlan.get("id") {
        // Absent is not out of range: the field is missing.
        None => push(
            Diagnostic::error(
                Code::MissingField,
                format!("VLAN `{}` has no `id`", iface.name),
            )
            .at(vlan_key)
            .help("give the VLAN its tag: `id: N` (1-4094) under `vlan:`"),
        ),
        Some(id) => {
            let ok = id.as_i64().is_some_and(|v| (1..=4094).contains(&v));
            if !ok {
                push(
                    Diagnostic::error(
                        Code::VlanIdRange,
                        format!("VLAN id `{id}` is outside 1-4094"),
                    )
                    .at(id.span)
                    .help("NetworkManager would load an out-of-range id as VLAN 0"),
                );
            }
        }
    }
}

fn check_bond(host: &Host, targets: &Targets, iface: &Iface, push: &mut dyn FnMut(Diagnostic)) {
    let la = iface.get("link-aggregation");
    // A change that leaves the port list out keeps the bond's ports.
    let ports_given = !iface.ports.is_empty()
        || la.is_some_and(|l| {
            ["port", "ports", "slaves", "ports-config"]
                .iter()
                .any(|k| l.get(k).is_some())
        });
    if iface.ports.len() < 2 && (ports_given || host.scope() == Scope::FirstBoot) {
        push(
            Diagnostic::error(
                Code::BondTooFewPorts,
                format!(
                    "bond `{}` has {} port(s); a bond needs at least 2",
                    iface.name,
                    iface.ports.len()
                ),
            )
            // At the port list when there is one, else the bond's name.
            .at(la
                .and_then(|l| ["port", "ports", "slaves"].iter().find_map(|k| l.entry(k)))
                .map(|(k, _)| k.span)
                .unwrap_or(iface.name_span())),
        );
    }
    let mode = match iface.bond_mode() {
        Some(m) => m,
        // In a change, a mode left out is the node's bond's (nmstate
        // merges the options into it): the hosts the change targets say
        // which, else there is nothing to judge the options against.
        None if host.scope() == Scope::Partial => {
            let modes: Vec<String> = targets
                .iter()
                .filter_map(|(_, net)| net.iface(&iface.name).and_then(|i| i.bond_mode()))
                .collect();
            match modes.first() {
                Some(m) if modes.len() == targets.len() && modes.iter().all(|x| x == m) => {
                    m.clone()
                }
                _ => return,
            }
        }
        None => "balance-rr".into(),
    };
    let Some(options) = la.and_then(|l| l.get("options")).and_then(Node::as_map) else {
        return;
    };
    for (key, _) in options {
        let k = key.scalar_text().unwrap_or_default();
        let bad = match k.as_str() {
            "lacp_rate" | "ad_select" | "ad_actor_sys_prio" | "ad_actor_system"
            | "ad_user_port_key" => (mode != "802.3ad").then_some("802.3ad"),
            "xmit_hash_policy" => (!BOND_MODES_WITH_HASH.contains(&mode.as_str()))
                .then_some("802.3ad, balance-xor, balance-tlb or balance-alb"),
            _ => None,
        };
        if let Some(valid) = bad {
            push(
                Diagnostic::error(
                    Code::BondOptionMode,
                    format!(
                        "bond option `{k}` does nothing in mode `{mode}` of `{}`",
                        iface.name
                    ),
                )
                .at(key.span)
                .help(format!("`{k}` is only valid for {valid}")),
            );
        }
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

fn check_routes(network: &Node, net: &Network, scope: Scope, push: &mut dyn FnMut(Diagnostic)) {
    let Some(routes) = network
        .get("routes")
        .and_then(|r| r.get("config"))
        .and_then(Node::as_seq)
    else {
        return;
    };
    for route in routes {
        check_route(route, net, scope, push);
    }
}

/// One route of a state: its ends readable, of one family, leaving by an
/// interface of the host with that family on, its next hop on a subnet
/// of that interface.
fn check_route(route: &Node, net: &Network, scope: Scope, push: &mut dyn FnMut(Diagnostic)) {
    if route.get("state").and_then(Node::as_str) == Some("absent")
        || route.get("route-type").is_some()
    {
        return;
    }
    let (dest_net, hop_node, hop) = route_ends(route, push);
    let fam = dest_net
        .map(|n| Family::of(&n.addr()))
        .or(hop.as_ref().map(Family::of))
        .unwrap_or(Family::V4);
    // The kernel takes no IPv6 gateway for an IPv4 route (nor the
    // reverse): NetworkManager refuses the profile.
    if let (Some(net), Some(h), Some(hop_node)) = (dest_net, hop, hop_node) {
        if Family::of(&net.addr()) != Family::of(&h) && !h.is_unspecified() {
            push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "route to {net} ({}) has an {} next hop {h}",
                        Family::of(&net.addr()).key(),
                        Family::of(&h).key()
                    ),
                )
                .at(hop_node.span)
                .help("give the route a next hop of its own family (an IPv6 default route is `destination: ::/0`)"),
            );
            return;
        }
    }
    let Some(if_node) = route.get("next-hop-interface") else {
        push(
            Diagnostic::error(
                Code::RouteInterfaceMissing,
                "route has no `next-hop-interface`",
            )
            .at(route.span)
            .help("nmstate needs the interface a route leaves by"),
        );
        return;
    };
    let if_name = if_node.scalar_text().unwrap_or_default();
    let Some(iface) = net.iface(&if_name).filter(|i| !i.absent) else {
        if scope == Scope::Partial && net.iface(&if_name).is_none() {
            push(
                Diagnostic::warning(
                    Code::RouteInterfaceMissing,
                    format!("next-hop-interface `{if_name}` is not in this state: applied on a node, the route goes on the node's `{if_name}` (which must exist and have {} enabled)", fam.key()),
                )
                .at(if_node.span),
            );
            return;
        }
        push(
            Diagnostic::error(
                Code::RouteInterfaceMissing,
                format!("next-hop-interface `{if_name}` is not an interface of this host"),
            )
            .at(if_node.span),
        );
        return;
    };
    // In a change, a family left out is left as the node has it.
    // In a change, a family left out, or its `enabled` left out, is
    // left as the node has it.
    let left_as_is = scope == Scope::Partial
        && iface
            .get(fam.key())
            .and_then(|b| b.get("enabled"))
            .is_none();
    if !left_as_is && !iface.family_enabled(fam) {
        push(
            Diagnostic::error(
                Code::RouteInterfaceIpDisabled,
                format!(
                    "route via `{if_name}` but {} is not enabled on `{if_name}`",
                    fam.key()
                ),
            )
            .at(if_node.span)
            .help(format!(
                "set `{}: {{enabled: true, ...}}` on `{if_name}`",
                fam.key()
            )),
        );
        return;
    }
    next_hop_on_link(
        hop_node.map(|n| n.span).unwrap_or(route.span),
        hop,
        iface,
        &if_name,
        fam,
        net,
        push,
    );
}

/// A route's destination network and next hop, each where readable (what
/// is not is reported).
fn route_ends<'a>(
    route: &'a Node,
    push: &mut dyn FnMut(Diagnostic),
) -> (Option<ipnet::IpNet>, Option<&'a Node>, Option<IpAddr>) {
    let dest = route.get("destination");
    let dest_net = dest.and_then(|d| {
        let text = d.scalar_text()?;
        match text
            .parse::<ipnet::IpNet>()
            .or_else(|_| text.parse::<IpAddr>().map(ipnet::IpNet::from))
        {
            Ok(n) => Some(n),
            Err(_) => {
                push(
                    Diagnostic::error(
                        Code::IpInvalid,
                        format!("route destination `{text}` is not a network like 0.0.0.0/0"),
                    )
                    .at(d.span),
                );
                None
            }
        }
    });
    let hop_node = route.get("next-hop-address");
    let hop = hop_node.and_then(|h| {
        let text = h.scalar_text()?;
        match text.parse::<IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => {
                push(
                    Diagnostic::error(
                        Code::IpInvalid,
                        format!("next-hop-address `{text}` is not an IP address"),
                    )
                    .at(h.span),
                );
                None
            }
        }
    });
    (dest_net, hop_node, hop)
}

/// The next hop inside a subnet of the interface the route leaves by,
/// where its static addresses say which subnets those are.
fn next_hop_on_link(
    at: Span,
    hop: Option<IpAddr>,
    iface: &Iface,
    if_name: &str,
    fam: Family,
    net: &Network,
    push: &mut dyn FnMut(Diagnostic),
) {
    // Only static addressing says which subnets the interface is on;
    // an address that is not one (reported as such) may be the one
    // the next hop is on.
    let Some(hop) = hop else { return };
    if hop.is_unspecified() || iface.family_dynamic(fam) || has_unreadable_address(iface, fam) {
        return;
    }
    if let IpAddr::V6(v6) = hop {
        if v6.is_unicast_link_local() {
            return;
        }
    }
    let on_link = net
        .addresses
        .iter()
        .filter(|a| a.iface == if_name)
        .any(|a| a.network().is_some_and(|n| n.contains(&hop)));
    if !on_link {
        let subnets: Vec<String> = net
            .addresses
            .iter()
            .filter(|a| a.iface == if_name)
            .filter_map(|a| a.network().map(|n| n.to_string()))
            .collect();
        push(
            Diagnostic::error(
                Code::RouteNextHopUnreachable,
                format!(
                    "next hop {hop} is inside no subnet of `{if_name}` ({})",
                    if subnets.is_empty() {
                        "it has no static address".to_string()
                    } else {
                        subnets.join(", ")
                    }
                ),
            )
            .at(at),
        );
    }
}
