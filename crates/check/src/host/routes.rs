//! A host's routes: each destination and next hop read, the next hop on a
//! link the state has, the interface named.

use super::*;

pub(super) fn check_routes(
    network: &Node,
    net: &Network,
    scope: Scope,
    push: &mut dyn FnMut(Diagnostic),
) {
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
pub(super) fn check_route(
    route: &Node,
    net: &Network,
    scope: Scope,
    push: &mut dyn FnMut(Diagnostic),
) {
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
pub(super) fn route_ends<'a>(
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
pub(super) fn next_hop_on_link(
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
