//! A host's VLANs and bonds: bases and ports that exist, MTUs that fit
//! under each other (on this node and on the nodes a state reaches), and
//! bond options of the mode.

use super::*;

/// "`a`", "`a` and `b`", "`a`, `b` and 3 more hosts".
pub(super) fn hosts_phrase(names: &[&str]) -> String {
    match names {
        [a] => format!("`{a}`"),
        [a, b] => format!("`{a}` and `{b}`"),
        [a, b, rest @ ..] => format!(
            "`{a}`, `{b}` and {} more {}",
            rest.len(),
            nodenet_model::names::plural(rest.len(), "host")
        ),
        [] => String::new(),
    }
}

pub(super) fn mtu_diag(upper: &str, up: i64, span: Span, lower: &str, low: i64) -> Diagnostic {
    Diagnostic::error(
        Code::MtuExceedsParent,
        format!("MTU {up} of `{upper}` is larger than MTU {low} of `{lower}` beneath it"),
    )
    .at(span)
    .help(format!("raise the MTU of `{lower}` to at least {up}"))
}

/// A change's VLAN above the MTU its base has on a node it targets, as
/// the inventory describes that node (an unset MTU: the kernel's 1500).
pub(super) fn node_mtu_below(
    targets: &Targets,
    vlan: &str,
    up: i64,
    base: &str,
) -> Option<Diagnostic> {
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

pub(super) fn check_vlan(
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

pub(super) fn check_bond(
    host: &Host,
    targets: &Targets,
    iface: &Iface,
    push: &mut dyn FnMut(Diagnostic),
) {
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
