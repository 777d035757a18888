//! One L2 segment, one MTU, one VLAN id, one subnet, across the fleet.
//!
//! Hosts that share a subnet (static addresses in one network) or a VLAN
//! id share a broadcast domain: a host whose interface there has another
//! MTU drops or fragments what its neighbours send (OVN-Kubernetes'
//! Geneve overlay and etcd's peers stall on the larger frames), and a
//! subnet reached over two VLAN ids, or one VLAN id carrying two subnets,
//! is a host on the wrong VLAN. Each finding is at the odd host out (the
//! MTU, VLAN id or address that differs from what most hosts say), with
//! what the others have.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use nodenet_model::{Code, Diagnostic, Inventory, Node, Scope, Span};

use crate::network::{Family, Iface, Network};

/// What makes hosts share a segment.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Segment {
    Subnet(IpNet),
    Vlan(i64),
}

impl Segment {
    fn text(&self) -> String {
        match self {
            Segment::Subnet(n) => format!("the subnet {n}"),
            Segment::Vlan(id) => format!("VLAN {id}"),
        }
    }
}

/// One host's interface on a segment.
struct Member<'a> {
    host: &'a str,
    iface: String,
    /// The MTU it runs (written, its VLAN base's, or the kernel's 1500)
    /// and where that is said.
    mtu: i64,
    mtu_span: Span,
    /// Its VLAN id, or the subnet of its address (the other key).
    vlan: Option<(i64, Span)>,
    subnet: Option<(IpNet, Span)>,
    /// It holds the machine network (a static address in it, or DHCP
    /// where no host has a static one).
    machine: bool,
}

/// The MTU an interface runs: its own, else its VLAN base's (the kernel
/// gives a new VLAN its parent's), else the kernel's default 1500; with
/// the span that says it (the interface's name when nothing does).
fn effective_mtu(net: &Network, iface: &Iface) -> (i64, Span) {
    let mut at = iface;
    for _ in 0..8 {
        if let Some(m) = at.mtu() {
            return m;
        }
        let base = at
            .get("vlan")
            .and_then(|v| v.get("base-iface"))
            .and_then(Node::scalar_text)
            .and_then(|b| net.ifaces.iter().find(|i| i.name == b && !i.absent));
        match base {
            Some(b) => at = b,
            None => break,
        }
    }
    (1500, iface.name_span())
}

fn vlan_id(iface: &Iface) -> Option<(i64, Span)> {
    let id = iface.get("vlan")?.get("id")?;
    Some((id.as_i64()?, id.span))
}

/// Every whole host's members of every segment.
fn members<'a>(
    inv: &'a Inventory,
    states: &[Option<&Network>],
) -> BTreeMap<Segment, Vec<Member<'a>>> {
    let machine: Vec<IpNet> = inv
        .cluster
        .machine_networks
        .iter()
        .map(|m| m.value)
        .collect();
    let in_machine = |ip: &IpAddr| machine.iter().any(|m| m.contains(ip));
    let nets: Vec<(&str, &Network)> = inv
        .hosts
        .iter()
        .zip(states)
        .filter(|(h, _)| h.scope() == Scope::FirstBoot)
        .filter_map(|(h, n)| Some((h.name.value.as_str(), (*n)?)))
        .collect();
    let static_machine = nets
        .iter()
        .any(|(_, net)| net.addresses.iter().any(|a| in_machine(&a.ip)));
    let mut out: BTreeMap<Segment, Vec<Member>> = BTreeMap::new();
    for (host, net) in &nets {
        for iface in net.ifaces.iter().filter(|i| !i.absent) {
            let subnet = net
                .addresses
                .iter()
                .filter(|a| a.iface == iface.name)
                .find_map(|a| Some((a.network()?, a.span)));
            let vlan = vlan_id(iface);
            if subnet.is_none() && vlan.is_none() {
                continue;
            }
            let dynamic = iface.family_dynamic(Family::V4) || iface.family_dynamic(Family::V6);
            let machine = subnet.is_some_and(|(n, _)| in_machine(&n.addr()))
                || (!static_machine && !machine.is_empty() && dynamic);
            let (mtu, mtu_span) = effective_mtu(net, iface);
            let member = || Member {
                host,
                iface: iface.name.clone(),
                mtu,
                mtu_span,
                vlan,
                subnet,
                machine,
            };
            if let Some((n, _)) = subnet {
                out.entry(Segment::Subnet(n)).or_default().push(member());
            }
            if let Some((id, _)) = vlan {
                out.entry(Segment::Vlan(id)).or_default().push(member());
            }
        }
    }
    out
}

/// The value most members have (the first seen among equals), with how
/// many have it.
fn most<T: PartialEq + Clone>(values: impl Iterator<Item = T>) -> Option<(T, usize)> {
    let mut counts: Vec<(T, usize)> = Vec::new();
    for v in values {
        match counts.iter_mut().find(|(x, _)| *x == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == best)
}

/// `states` are the hosts' states as the host checks read them (one per
/// host of `inv`, in order).
pub fn check(inv: &Inventory, states: &[Option<&Network>], out: &mut Vec<Diagnostic>) {
    // An interface's subnet and VLAN are often one segment: its MTU is
    // said once.
    let mut said = std::collections::HashSet::new();
    for (segment, members) in members(inv, states) {
        let hosts = {
            let mut h: Vec<&str> = members.iter().map(|m| m.host).collect();
            h.dedup();
            h.len()
        };
        if hosts < 2 {
            continue;
        }
        let machine = members.iter().any(|m| m.machine);
        mtu_mismatch(&segment, &members, machine, &mut said, out);
        match segment {
            Segment::Subnet(_) => other_key(
                &segment,
                &members,
                |m| m.vlan,
                |id| format!("VLAN {id}"),
                out,
            ),
            Segment::Vlan(_) => other_key(
                &segment,
                &members,
                |m| m.subnet,
                |n| format!("the subnet {n}"),
                out,
            ),
        }
    }
}

/// Members whose MTU is not the one most run: an error on the machine
/// network's segment, a warning elsewhere.
fn mtu_mismatch<'a>(
    segment: &Segment,
    members: &[Member<'a>],
    machine: bool,
    said: &mut std::collections::HashSet<(&'a str, String)>,
    out: &mut Vec<Diagnostic>,
) {
    let Some((usual, count)) = most(members.iter().map(|m| m.mtu)) else {
        return;
    };
    for m in members.iter().filter(|m| m.mtu != usual) {
        if !said.insert((m.host, m.iface.clone())) {
            continue;
        }
        let message = format!(
            "`{}` runs MTU {} on {}{}, where {count} interface(s) of other hosts run {usual}: one L2 segment needs one MTU (frames larger than a neighbour's MTU are dropped: OVN-Kubernetes' overlay and etcd stall)",
            m.iface,
            m.mtu,
            segment.text(),
            if machine { ", the machine network's" } else { "" },
        );
        let d = if machine {
            Diagnostic::error(Code::SegmentMtuMismatch, message)
        } else {
            Diagnostic::warning(Code::SegmentMtuMismatch, message)
        };
        out.push(
            d.at(m.mtu_span)
                .host(m.host)
                .help(format!("give `{}` the MTU of the rest of the segment ({usual}), or change the whole segment at once", m.iface)),
        );
    }
}

/// Members of one segment that disagree on the other key: a subnet over
/// several VLAN ids, or a VLAN id with several subnets (a warning each,
/// at the odd host out).
fn other_key<T: PartialEq + Clone + std::fmt::Display>(
    segment: &Segment,
    members: &[Member],
    key: impl Fn(&Member) -> Option<(T, Span)>,
    text: impl Fn(&T) -> String,
    out: &mut Vec<Diagnostic>,
) {
    let keyed: Vec<(&Member, T, Span)> = members
        .iter()
        .filter_map(|m| key(m).map(|(k, s)| (m, k, s)))
        .collect();
    let Some((usual, count)) = most(keyed.iter().map(|(_, k, _)| k.clone())) else {
        return;
    };
    for (m, k, span) in keyed.iter().filter(|(_, k, _)| *k != usual) {
        out.push(
            Diagnostic::warning(
                Code::SegmentVlanMismatch,
                format!(
                    "`{}` has {} with {}, where {count} interface(s) of other hosts have it with {}: a host on the wrong VLAN (or an address on the wrong one) reaches none of them",
                    m.iface,
                    segment.text(),
                    text(k),
                    text(&usual)
                ),
            )
            .at(*span)
            .host(m.host),
        );
    }
}

#[cfg(test)]
mod tests;
