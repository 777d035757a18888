//! `check --observed`: what LLDP showed on each node against what the
//! inventory expects of each NIC's switch port (`nodenet_check::wiring`),
//! every finding located at the inventory line that states the
//! expectation.

use std::collections::HashMap;

use nodenet_check::wiring::{self, Expected};
use nodenet_model::{Code, Diagnostic, Host, Inventory, Scope, Span};

use crate::lldp::Lldpdu;
use crate::observation::{NicObservation, Observation};

/// Ethernet header and FCS: an 802.3 maximum frame size minus this is
/// the largest MTU the port passes untagged.
const FRAME_OVERHEAD: u32 = 18;

/// One observation file as read, with where to point at it.
pub struct Observed {
    pub obs: Observation,
    /// The file's `host` value (or its start).
    pub span: Span,
}

/// The inventory host an observation is of: by name (the short name
/// too), else by the most NIC MACs in common.
fn host_of<'i>(inv: &'i Inventory, obs: &Observation) -> Option<&'i Host> {
    let first_boot = || inv.hosts.iter().filter(|h| h.scope() == Scope::FirstBoot);
    if let Some(h) =
        first_boot().find(|h| crate::short_name(&h.name.value) == crate::short_name(&obs.host))
    {
        return Some(h);
    }
    let macs: Vec<String> = obs.nics.iter().filter_map(|n| n.mac.clone()).collect();
    first_boot()
        .map(|h| {
            let common = h
                .nics
                .iter()
                .filter_map(|n| n.mac.as_ref())
                .filter(|m| macs.iter().any(|x| x.eq_ignore_ascii_case(&m.value)))
                .count();
            (common, h)
        })
        .filter(|(c, _)| *c > 0)
        .max_by_key(|(c, _)| *c)
        .map(|(_, h)| h)
}

/// The observed NIC for an expectation: by MAC, else by name.
fn nic_of<'o>(obs: &'o Observation, e: &Expected) -> Option<&'o NicObservation> {
    if let Some(mac) = &e.mac {
        if let Some(n) = obs.nics.iter().find(|n| {
            n.mac
                .as_deref()
                .is_some_and(|m| m.eq_ignore_ascii_case(mac))
        }) {
            return Some(n);
        }
    }
    obs.nics.iter().find(|n| n.name == e.nic)
}

fn same_switch(expected: &str, n: &Lldpdu) -> bool {
    let e = expected.to_ascii_lowercase();
    n.system_name.as_deref().is_some_and(|s| {
        let s = s.to_ascii_lowercase();
        s == e || crate::short_name(&s) == e
    }) || n.chassis_id.value.eq_ignore_ascii_case(expected)
}

fn same_port(expected: &str, n: &Lldpdu) -> bool {
    n.port_id.value.eq_ignore_ascii_case(expected)
        || n.port_description
            .as_deref()
            .is_some_and(|d| d.eq_ignore_ascii_case(expected))
}

/// An expectation of a host's NIC and the NIC observed for it.
type Seen<'a> = (&'a Host, Expected, Option<&'a NicObservation>);

/// Every observation compared with the inventory. Observations of hosts
/// the inventory does not have, or of NICs it does not name, are
/// warnings at the observation.
pub fn compare(inv: &Inventory, observed: &[Observed]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // (host, NIC) -> expectation and observation, for the swap hint.
    let mut seen: Vec<Seen> = Vec::new();
    for o in observed {
        let Some(host) = host_of(inv, &o.obs) else {
            out.push(
                Diagnostic::warning(
                    Code::ObservedUnmatched,
                    format!(
                        "observation of `{}`: no host of the inventory has that name or any of its MACs",
                        o.obs.host
                    ),
                )
                .at(o.span),
            );
            continue;
        };
        let expected = wiring::expected(host);
        unnamed_cabled_nics(host, &expected, o, &mut out);
        for e in expected {
            let nic = nic_of(&o.obs, &e);
            seen.push((host, e, nic));
        }
    }
    // NICs on another port than expected: what that port does says
    // nothing about the expected one.
    let misplaced: Vec<bool> = (0..seen.len())
        .map(|i| judge_nic(&seen, i, &mut out))
        .collect();
    aggregation(&seen, &misplaced, &mut out);
    out
}

/// Cabled NICs of the observation that the inventory does not name.
fn unnamed_cabled_nics(
    host: &Host,
    expected: &[Expected],
    o: &Observed,
    out: &mut Vec<Diagnostic>,
) {
    for n in &o.obs.nics {
        let known = expected.iter().any(|e| {
            e.nic == n.name
                || e.mac
                    .as_deref()
                    .zip(n.mac.as_deref())
                    .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
        });
        if !known && n.neighbor.is_some() {
            out.push(
                Diagnostic::warning(
                    Code::ObservedUnmatched,
                    format!(
                        "{}: NIC {} ({}) is cabled (to {}) but the inventory does not name it",
                        host.name.value,
                        n.name,
                        n.mac.as_deref().unwrap_or("no MAC"),
                        n.neighbor.as_ref().map(|d| d.switch_name()).unwrap_or("")
                    ),
                )
                .at(o.span)
                .host(&host.name.value),
            );
        }
    }
}

/// The findings of expectation `i`; true when its NIC is on another
/// switch or port than expected.
fn judge_nic(seen: &[Seen], i: usize, out: &mut Vec<Diagnostic>) -> bool {
    let (host, e, nic) = &seen[i];
    let h = host.name.value.as_str();
    let Some(nic) = nic else {
        if !e.is_empty() {
            out.push(
                Diagnostic::warning(
                    Code::ObservedUnmatched,
                    format!(
                        "{h}: NIC {} is not in the node's observation (not on the node?)",
                        e.nic
                    ),
                )
                .at(e.span)
                .host(h),
            );
        }
        return false;
    };
    let Some(n) = &nic.neighbor else {
        if e.switch.is_some() || e.port.is_some() {
            let why = if nic.carrier == Some(false) {
                "no carrier"
            } else {
                "no LLDP frame heard"
            };
            out.push(
                Diagnostic::warning(
                    Code::LldpNoNeighbor,
                    format!("{h}: NIC {} has no LLDP neighbour ({why})", e.nic),
                )
                .at(e
                    .port
                    .as_ref()
                    .or(e.switch.as_ref())
                    .map(|l| l.span)
                    .unwrap_or(e.span))
                .host(h),
            );
        }
        return false;
    };
    // On the wrong port, what that port carries says nothing about
    // the right one: the place is the finding.
    if wrong_place(seen, i, n, out) {
        return true;
    }
    port_findings(h, e, n, out);
    false
}

/// Findings of a NIC cabled to another switch or port than expected.
fn wrong_place(seen: &[Seen], i: usize, n: &Lldpdu, out: &mut Vec<Diagnostic>) -> bool {
    let (host, e, _) = &seen[i];
    let h = host.name.value.as_str();
    let heard = format!("{} port {}", n.switch_name(), n.port_id.value);
    // Whose port this NIC landed on, for "swapped with".
    let landed_on = || -> Option<usize> {
        seen.iter().enumerate().find_map(|(j, (_, other, _))| {
            let (Some(s), Some(p)) = (&other.switch, &other.port) else {
                return None;
            };
            (j != i && same_switch(&s.value, n) && same_port(&p.value, n)).then_some(j)
        })
    };
    let mut wrong = false;
    if let Some(s) = &e.switch {
        if !same_switch(&s.value, n) {
            wrong = true;
            out.push(
                Diagnostic::error(
                    Code::LldpWrongSwitch,
                    format!(
                        "{h}: NIC {} is cabled to {heard}, not to switch {}",
                        e.nic, s.value
                    ),
                )
                .at(s.span)
                .host(h)
                .help(swap_hint(seen, i, landed_on(), e)),
            );
        }
    }
    if let Some(p) = &e.port {
        let switch_ok = e.switch.as_ref().is_none_or(|s| same_switch(&s.value, n));
        if switch_ok && !same_port(&p.value, n) {
            wrong = true;
            out.push(
                Diagnostic::error(
                    Code::LldpWrongPort,
                    format!(
                        "{h}: NIC {} is cabled to {heard}, not to port {}",
                        e.nic, p.value
                    ),
                )
                .at(p.span)
                .host(h)
                .help(swap_hint(seen, i, landed_on(), e)),
            );
        }
    }
    wrong
}

/// What the right port announces against what the NIC needs: its VLANs,
/// native VLAN and frame size.
fn port_findings(h: &str, e: &Expected, n: &Lldpdu, out: &mut Vec<Diagnostic>) {
    let heard = format!("{} port {}", n.switch_name(), n.port_id.value);
    if !n.vlans.is_empty() {
        for v in &e.vlans {
            if !n.vlans.iter().any(|x| x.id == v.id) {
                let carried: Vec<String> = n.vlans.iter().map(|x| x.id.to_string()).collect();
                out.push(
                    Diagnostic::error(
                        Code::LldpVlanMissing,
                        format!(
                            "{h}: NIC {}: {heard} does not carry VLAN {} ({}); it announces {}",
                            e.nic,
                            v.id,
                            v.why,
                            carried.join(", ")
                        ),
                    )
                    .at(v.span)
                    .host(h),
                );
            }
        }
    }
    if let (Some(native), Some(pvid)) = (&e.native, n.port_vlan_id) {
        if native.value != pvid {
            out.push(
                Diagnostic::error(
                    Code::LldpNativeVlan,
                    format!(
                        "{h}: NIC {}: {heard} has native VLAN {pvid}, not {}",
                        e.nic, native.value
                    ),
                )
                .at(native.span)
                .host(h),
            );
        }
    }
    if let (Some(mtu), Some(mfs)) = (&e.mtu, n.max_frame_size) {
        let port_mtu = u32::from(mfs).saturating_sub(FRAME_OVERHEAD);
        if port_mtu < mtu.mtu {
            out.push(
                Diagnostic::error(
                    Code::LldpMtu,
                    format!(
                        "{h}: NIC {} runs MTU {} ({}) but {heard} takes frames of at most {mfs} bytes (MTU {port_mtu})",
                        e.nic, mtu.mtu, mtu.why
                    ),
                )
                .at(mtu.span)
                .host(h),
            );
        }
    }
}

fn swap_hint(seen: &[Seen], i: usize, landed: Option<usize>, e: &Expected) -> String {
    let Some(j) = landed else {
        return "check the cable, or the inventory's `switch`/`port`".into();
    };
    let (other_host, other, other_nic) = &seen[j];
    let crossed = other_nic
        .and_then(|o| o.neighbor.as_ref())
        .zip(e.switch.as_ref().zip(e.port.as_ref()))
        .is_some_and(|(n, (s, p))| same_switch(&s.value, n) && same_port(&p.value, n));
    let who = if other_host.name.value == seen[i].0.name.value {
        other.nic.clone()
    } else {
        format!("{} {}", other_host.name.value, other.nic)
    };
    if crossed {
        format!("looks swapped with NIC {who}: each is on the other's port")
    } else {
        format!("that port is where the inventory expects {who}")
    }
}

/// The ports of each 802.3ad bond: in one aggregation on the switch side.
/// A bond of another mode whose ports the switch aggregates is a warning
/// (the switch hashes frames over ports the bond treats as separate).
fn aggregation(seen: &[Seen], misplaced: &[bool], out: &mut Vec<Diagnostic>) {
    let mut bonds: HashMap<(String, String), Vec<usize>> = HashMap::new();
    for (i, (h, e, _)) in seen.iter().enumerate() {
        if let Some(b) = &e.bond {
            bonds
                .entry((h.name.value.clone(), b.name.clone()))
                .or_default()
                .push(i);
        }
    }
    let mut keys: Vec<_> = bonds.keys().cloned().collect();
    keys.sort();
    for key in keys {
        let members = &bonds[&key];
        let (host, bond_name) = (&key.0, &key.1);
        let first = &seen[members[0]].1;
        let bond = first.bond.as_ref().expect("grouped by bond");
        let lacp = bond.mode.as_deref() == Some("802.3ad");
        // (NIC, neighbour's switch, aggregation) for ports that announce it.
        let agg: Vec<(&str, &Lldpdu)> = members
            .iter()
            .filter(|&&i| !misplaced[i])
            .filter_map(|&i| {
                let n = seen[i].2?.neighbor.as_ref()?;
                n.aggregation
                    .is_some()
                    .then_some((seen[i].1.nic.as_str(), n))
            })
            .collect();
        if lacp {
            for (nic, n) in &agg {
                let a = n.aggregation.expect("filtered");
                if !a.enabled {
                    out.push(
                        Diagnostic::error(
                            Code::LldpAggregation,
                            format!(
                                "{host}: {bond_name} is an 802.3ad bond but {} port {} ({nic}) is not in a link aggregation",
                                n.switch_name(),
                                n.port_id.value
                            ),
                        )
                        .at(bond.span)
                        .host(host),
                    );
                }
            }
            let enabled: Vec<&(&str, &Lldpdu)> = agg
                .iter()
                .filter(|(_, n)| n.aggregation.is_some_and(|a| a.enabled))
                .collect();
            for pair in enabled.windows(2) {
                let (na, a) = pair[0];
                let (nb, b) = pair[1];
                let same_chassis = a.chassis_id == b.chassis_id;
                let (ia, ib) = (
                    a.aggregation.expect("f").port_id,
                    b.aggregation.expect("f").port_id,
                );
                if same_chassis && ia != ib {
                    out.push(
                        Diagnostic::error(
                            Code::LldpAggregation,
                            format!(
                                "{host}: the ports of 802.3ad bond {bond_name} are in different aggregations on {}: {na} in {ia}, {nb} in {ib}",
                                a.switch_name()
                            ),
                        )
                        .at(bond.span)
                        .host(host),
                    );
                }
            }
        } else if let Some((nic, n)) = agg
            .iter()
            .find(|(_, n)| n.aggregation.is_some_and(|a| a.enabled))
        {
            out.push(
                Diagnostic::warning(
                    Code::LldpAggregation,
                    format!(
                        "{host}: bond {bond_name} has mode {}, yet {} aggregates its port {nic} ({})",
                        bond.mode.as_deref().unwrap_or("(none)"),
                        n.switch_name(),
                        n.port_id.value
                    ),
                )
                .at(bond.span)
                .host(host)
                .help("use mode 802.3ad, or remove the port from the switch's aggregation"),
            );
        }
    }
}

#[cfg(test)]
mod tests;
