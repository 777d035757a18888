//! IPv6 and dual-stack: what a cluster with a machine network per family
//! needs of its hosts, beyond what a single-stack IPv4 cluster forgives.
//!
//! Per host: an address's prefix against its family's machine network, a
//! default route per family, DHCPv6 leases that survive the install
//! (DUID), one source of IPv6 addresses. Per cluster: the rendezvous IP's
//! family and host. The VIPs' families and order are in `fleet.rs` with
//! the other VIP rules.

use std::net::IpAddr;

use ipnet::IpNet;
use nodenet_model::{Code, Diagnostic, Host, Inventory, Node, Role, Scope};

use crate::network::{has_default_route, Address, Family, Network};

/// An interface's own IPv6 settings that decide where its addresses come
/// from and whether a DHCPv6 lease is stable.
pub fn check_host(net: &Network, push: &mut dyn FnMut(Diagnostic)) {
    for iface in net.ifaces.iter().filter(|i| !i.absent) {
        let Some(v6) = iface.get("ipv6") else {
            continue;
        };
        if !iface.family_enabled(Family::V6) {
            continue;
        }
        let flag = |k: &str| v6.get(k).and_then(Node::as_bool).unwrap_or(false);
        let dhcp = flag("dhcp");
        // nmstate writes `dhcp-duid=ll` when none is given; a type that
        // is not the MAC's gives a DUID that changes with the machine id
        // (the installer's ramdisk, the installed node, a reinstall).
        if let Some(duid) = v6.get("dhcp-duid").filter(|_| dhcp) {
            let value = duid.scalar_text().unwrap_or_default();
            if !matches!(value.to_ascii_lowercase().as_str(), "ll" | "llt") {
                push(
                    Diagnostic::warning(
                        Code::Dhcpv6Duid,
                        format!("DHCPv6 on `{}` with DUID `{value}`: not the NIC's MAC, so it is not the same in the installer's ramdisk and on the installed node, and a reservation made by MAC does not match it (the address changes across the install)", iface.name),
                    )
                    .at(duid.span)
                    .help("`dhcp-duid: ll` (DUID-LL, from the MAC; `llt` adds a time), and reserve the address by that DUID"),
                );
            }
        }
        let statics = v6
            .get("address")
            .and_then(Node::as_seq)
            .is_some_and(|a| !a.is_empty());
        // br-ex holds OVN-Kubernetes' masquerade address beside what
        // DHCPv6 and SLAAC give the node: by design, not a choice left open.
        if dhcp && flag("autoconf") && statics && iface.name != "br-ex" {
            push(
                Diagnostic::warning(
                    Code::Ipv6AddressSources,
                    format!("`{}` takes IPv6 addresses from SLAAC, DHCPv6 and its static address at once: the node IP is whichever the node picks, not the one the inventory gives", iface.name),
                )
                .at(v6.span)
                .help("keep the static address with `dhcp: false, autoconf: false`, or drop it and let DHCPv6 (reserved by DUID-LL) give it"),
            );
        }
    }
}

/// The machine networks of one family.
fn of_family(inv: &Inventory, fam: Family) -> Vec<IpNet> {
    machine_networks(inv)
        .into_iter()
        .filter(|m| Family::of(&m.addr()) == fam)
        .collect()
}

/// A host with its static addresses.
type HostAddresses<'a> = (&'a Host, &'a [Address]);

/// The whole hosts with their static addresses; `states` are the hosts'
/// states as the host checks read them (one each, in the same order).
pub fn check(
    inv: &Inventory,
    hosts: &[(&Host, &[Address])],
    states: &[Option<&Network>],
    out: &mut Vec<Diagnostic>,
) {
    let (whole, nets): (Vec<&HostAddresses>, Vec<Option<&Network>>) = hosts
        .iter()
        .zip(states)
        .filter(|((h, _), _)| h.scope() == Scope::FirstBoot)
        .map(|(h, n)| (h, *n))
        .unzip();
    prefixes(inv, &whole, out);
    default_routes(inv, &whole, &nets, out);
    in_every_family(inv, &whole, &nets, out);
    rendezvous(inv, &whole, &nets, out);
}

/// On a dual-stack cluster a host must be in every machine network
/// (assisted-service@063b2579 internal/host/validator.go L726-759,
/// `belongs-to-machine-cidr` through `IsHostInAllMachineNetworksCidr`):
/// one with a static address in one family's and nothing of the other
/// (static, DHCP or autoconf) never passes host validation.
fn in_every_family(
    inv: &Inventory,
    hosts: &[&(&Host, &[Address])],
    states: &[Option<&Network>],
    out: &mut Vec<Diagnostic>,
) {
    let (v4, v6) = (of_family(inv, Family::V4), of_family(inv, Family::V6));
    if v4.is_empty() || v6.is_empty() {
        return;
    }
    for ((host, addrs), net) in hosts.iter().zip(states) {
        let Some(net) = net else {
            continue;
        };
        let inside = |nets: &[IpNet]| {
            addrs
                .iter()
                .find(|a| nets.iter().any(|n| n.contains(&a.ip)))
        };
        for (have, lack, lack_nets, fam) in [
            (inside(&v4), inside(&v6), &v6, Family::V6),
            (inside(&v6), inside(&v4), &v4, Family::V4),
        ] {
            let (Some(a), None) = (have, lack) else {
                continue;
            };
            if net.dynamic(fam) {
                continue;
            }
            let nets: Vec<String> = lack_nets.iter().map(|n| n.to_string()).collect();
            out.push(
                Diagnostic::error(
                    Code::DualStackHostFamily,
                    format!(
                        "`{}` has a static address in the {} machine network ({} on `{}`) but no {} address in {} (static, DHCP or autoconf): on a dual-stack cluster assisted-service requires each host in every machine network",
                        host.name.value,
                        if fam == Family::V6 { "IPv4" } else { "IPv6" },
                        a.ip,
                        a.iface,
                        fam.name(),
                        nets.join(", ")
                    ),
                )
                .at(a.span)
                .host(host.name.value.clone())
                .help(format!("add a static {} address in {} on `{}`, or enable DHCP/autoconf for it", fam.name(), nets.join(", "), a.iface)),
            );
        }
    }
}

/// The cluster's machine networks, in order (the first is the primary).
fn machine_networks(inv: &Inventory) -> Vec<IpNet> {
    inv.cluster
        .machine_networks
        .iter()
        .map(|m| m.value)
        .collect()
}

/// An address inside a machine network has that network's prefix. A
/// shorter one makes the node take addresses outside the cluster for
/// on-link (an error). A longer one is a warning where at least half the
/// hosts' addresses in that network use its prefix: the odd host reaches
/// the others outside its subnet through a router, or not at all
/// (assisted-service's "No connectivity to the majority of hosts"); where
/// none does, the network is a routed supernet of per-rack subnets, by
/// design.
fn prefixes(inv: &Inventory, hosts: &[&(&Host, &[Address])], out: &mut Vec<Diagnostic>) {
    let nets = machine_networks(inv);
    // Per machine network: addresses in it, and those with its prefix.
    let mut counts = vec![(0usize, 0usize); nets.len()];
    for (_, addrs) in hosts {
        for a in addrs.iter() {
            if let Some(i) = nets.iter().position(|m| m.contains(&a.ip)) {
                counts[i].0 += 1;
                if a.prefix == Some(nets[i].prefix_len()) {
                    counts[i].1 += 1;
                }
            }
        }
    }
    for (host, addrs) in hosts {
        let name = &host.name.value;
        for a in addrs.iter() {
            let Some(i) = nets.iter().position(|m| m.contains(&a.ip)) else {
                continue;
            };
            let (m, (total, full)) = (nets[i], counts[i]);
            let Some(prefix) = a.prefix else { continue };
            if prefix < m.prefix_len() {
                out.push(
                    Diagnostic::error(
                        Code::AddressPrefixMismatch,
                        format!("{}/{prefix} on `{}` is wider than its machine network {m}: the node takes every address of the /{prefix} for on-link, outside the cluster too", a.ip, a.iface),
                    )
                    .at(a.span)
                    .host(name.clone())
                    .help(format!("give the address the machine network's prefix: prefix-length: {}", m.prefix_len())),
                );
            } else if prefix > m.prefix_len() && full > 0 && full * 2 >= total {
                let subnet = a.network().map(|n| n.to_string()).unwrap_or_default();
                out.push(
                    Diagnostic::warning(
                        Code::AddressPrefixMismatch,
                        format!(
                            "{}/{prefix} on `{}` is narrower than its machine network {m}, whose prefix {full} of the {total} host addresses in it use: the hosts outside {subnet} are reached through a router, or not at all",
                            a.ip, a.iface
                        ),
                    )
                    .at(a.span)
                    .host(name.clone())
                    .help(format!("give the address the machine network's prefix (prefix-length: {}), or split the machine network per subnet", m.prefix_len())),
                );
            }
        }
    }
}

/// Every host with a static address in a machine network of a family has
/// a default route of that family, or something dynamic that gives one.
fn default_routes(
    inv: &Inventory,
    hosts: &[&(&Host, &[Address])],
    states: &[Option<&Network>],
    out: &mut Vec<Diagnostic>,
) {
    let dual = [Family::V4, Family::V6]
        .iter()
        .all(|f| !of_family(inv, *f).is_empty());
    for fam in [Family::V4, Family::V6] {
        let nets = of_family(inv, fam);
        if nets.is_empty()
            || inv
                .cluster
                .no_default_route
                .iter()
                .any(|f| f.value == fam.key())
        {
            continue;
        }
        for ((host, addrs), net) in hosts.iter().zip(states) {
            let (Some(state), Some(net)) = (host.network.as_ref(), net) else {
                continue;
            };
            let Some(addr) = addrs
                .iter()
                .find(|a| nets.iter().any(|n| n.contains(&a.ip)))
            else {
                continue;
            };
            if net.dynamic(fam) || has_default_route(state, fam) {
                continue;
            }
            let v = fam.name();
            let why = if dual {
                "on a dual-stack cluster OVN-Kubernetes needs a default gateway per family, and the node's traffic of that family has no way out"
            } else {
                "OVN-Kubernetes takes the node's gateway from its default route, and the node's traffic has no way out"
            };
            let span = state.get("routes").map(|r| r.span).unwrap_or(addr.span);
            out.push(
                Diagnostic::error(
                    Code::DefaultRouteMissing,
                    format!(
                        "`{}` has a static {v} address ({} on `{}`) but no {v} default route: {why}",
                        host.name.value, addr.ip, addr.iface
                    ),
                )
                .at(span)
                .host(host.name.value.clone())
                .help(format!(
                    "add `- {{destination: {}, next-hop-address: <the {v} gateway>, next-hop-interface: {}}}` to routes.config, or list `{}` in `cluster.noDefaultRoute` if the cluster needs none",
                    fam.default_destination(),
                    addr.iface,
                    fam.key()
                )),
            );
        }
    }
}

/// agent-config's rendezvousIP: of the primary family (the first machine
/// network's), inside a machine network, and, where every master has a
/// static address, one of theirs (no host would otherwise hold it, and the
/// install waits for a rendezvous host that never comes).
fn rendezvous(
    inv: &Inventory,
    hosts: &[&(&Host, &[Address])],
    states: &[Option<&Network>],
    out: &mut Vec<Diagnostic>,
) {
    let Some(rv) = &inv.rendezvous_ip else { return };
    let nets = machine_networks(inv);
    if let Some(primary) = nets.first() {
        if rv.value.is_ipv4() != primary.addr().is_ipv4() {
            out.push(
                Diagnostic::error(
                    Code::RendezvousIpInvalid,
                    format!("rendezvousIP {} is not of the cluster's primary family (the first machine network, {primary}): the other hosts' agents reach the rendezvous host's assisted-service over the primary family", rv.value),
                )
                .at(rv.span)
                .help("give the rendezvous host's address in the first machine network"),
            );
            return;
        }
        if !nets.iter().any(|n| n.contains(&rv.value)) {
            out.push(
                Diagnostic::error(
                    Code::RendezvousIpInvalid,
                    format!(
                        "rendezvousIP {} is inside no machine network ({})",
                        rv.value,
                        nets.iter()
                            .map(|n| n.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .at(rv.span),
            );
            return;
        }
    }
    // The masters (and hosts whose role the installer gives), by index.
    let masters: Vec<usize> = (0..hosts.len())
        .filter(|&i| matches!(hosts[i].0.role.value, Role::Master | Role::Unset))
        .collect();
    let all_static = !masters.is_empty()
        && masters.iter().all(|&i| {
            !hosts[i].1.is_empty()
                && states[i]
                    .as_ref()
                    .is_some_and(|n| !n.dynamic(Family::V4) && !n.dynamic(Family::V6))
        });
    let held = hosts
        .iter()
        .any(|(_, addrs)| addrs.iter().any(|a| a.ip == rv.value));
    // Only when every master is listed (an unlisted one, on DHCP or named
    // later, may hold it): as many as install-config's replicas, or all
    // of a nodenet inventory's, which is the whole cluster.
    let listed_all = match inv.cluster.control_plane_replicas {
        Some(r) => masters.len() as u64 >= r,
        None => inv.kind == Some(nodenet_model::InputKind::Inventory),
    };
    if all_static && listed_all && !held {
        let ips: Vec<IpAddr> = masters
            .iter()
            .flat_map(|&i| hosts[i].1.iter().map(|a| a.ip))
            .filter(|ip| ip.is_ipv4() == rv.value.is_ipv4())
            .take(3)
            .collect();
        out.push(
            Diagnostic::error(
                Code::RendezvousIpInvalid,
                format!("rendezvousIP {} is no host's address, and every master's addresses are static: no host becomes the rendezvous host and the install waits for it", rv.value),
            )
            .at(rv.span)
            .help(format!(
                "give a master's static address{}",
                if ips.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({})",
                        ips.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
                    )
                }
            )),
        );
    }
}
