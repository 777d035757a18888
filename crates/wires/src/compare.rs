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

/// Every observation compared with the inventory. Observations of hosts
/// the inventory does not have, or of NICs it does not name, are
/// warnings at the observation.
pub fn compare(inv: &Inventory, observed: &[Observed]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // (host, NIC) -> expectation and observation, for the swap hint.
    let mut seen: Vec<(&Host, Expected, Option<&NicObservation>)> = Vec::new();
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
        for e in expected {
            let nic = nic_of(&o.obs, &e);
            seen.push((host, e, nic));
        }
    }
    // NICs on another port than expected: what that port does says
    // nothing about the expected one.
    let mut misplaced = vec![false; seen.len()];
    for (i, (host, e, nic)) in seen.iter().enumerate() {
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
            continue;
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
            continue;
        };
        let heard = format!("{} port {}", n.switch_name(), n.port_id.value);
        // Whose port this NIC landed on, for "swapped with".
        let landed_on = |seen: &[(&Host, Expected, Option<&NicObservation>)]| -> Option<usize> {
            seen.iter().enumerate().find_map(|(j, (_, other, _))| {
                let (Some(s), Some(p)) = (&other.switch, &other.port) else {
                    return None;
                };
                (j != i && same_switch(&s.value, n) && same_port(&p.value, n)).then_some(j)
            })
        };
        let mut wrong_place = false;
        if let Some(s) = &e.switch {
            if !same_switch(&s.value, n) {
                wrong_place = true;
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
                    .help(swap_hint(&seen, i, landed_on(&seen), e)),
                );
            }
        }
        if let Some(p) = &e.port {
            let switch_ok = e.switch.as_ref().is_none_or(|s| same_switch(&s.value, n));
            if switch_ok && !same_port(&p.value, n) {
                wrong_place = true;
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
                    .help(swap_hint(&seen, i, landed_on(&seen), e)),
                );
            }
        }
        // On the wrong port, what that port carries says nothing about
        // the right one: the place is the finding.
        if wrong_place {
            misplaced[i] = true;
            continue;
        }
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
    aggregation(&seen, &misplaced, &mut out);
    out
}

fn swap_hint(
    seen: &[(&Host, Expected, Option<&NicObservation>)],
    i: usize,
    landed: Option<usize>,
    e: &Expected,
) -> String {
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
fn aggregation(
    seen: &[(&Host, Expected, Option<&NicObservation>)],
    misplaced: &[bool],
    out: &mut Vec<Diagnostic>,
) {
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
mod tests {
    use super::*;
    use crate::lldp::{Aggregation, Id, Vlan};

    const INV: &str = r#"nodenet: v1
hosts:
- name: node-a
  nics:
  - {name: eth0, mac: "52:54:00:aa:00:01", switch: sw1, port: swp1, native: 1}
  - {name: eth1, mac: "52:54:00:aa:00:02", switch: sw1, port: swp2}
  network:
    interfaces:
    - name: bond0
      type: bond
      link-aggregation: {mode: 802.3ad, port: [eth0, eth1]}
      ipv4: {enabled: true, dhcp: true}
    - {name: bond0.110, type: vlan, vlan: {base-iface: bond0, id: 110}}
"#;

    fn inv() -> Inventory {
        crate::test_inventory(INV)
    }

    fn neighbour(port: &str, agg: u32) -> Lldpdu {
        Lldpdu {
            chassis_id: Id {
                subtype: "mac".into(),
                value: "52:54:00:99:00:00".into(),
            },
            port_id: Id {
                subtype: "ifname".into(),
                value: port.into(),
            },
            ttl: 120,
            port_description: None,
            system_name: Some("sw1".into()),
            system_description: None,
            management_addresses: Vec::new(),
            port_vlan_id: Some(1),
            vlans: vec![Vlan {
                id: 110,
                name: "v110".into(),
            }],
            max_frame_size: Some(1522),
            aggregation: Some(Aggregation {
                capable: true,
                enabled: agg != 0,
                port_id: agg,
            }),
        }
    }

    fn observed(host: &str, nics: Vec<(&str, &str, Option<Lldpdu>)>) -> Observed {
        let mut obs = Observation::new(host, "listen");
        for (name, mac, n) in nics {
            let mut o = NicObservation::new(name);
            o.mac = Some(mac.into());
            if let Some(n) = n {
                o.heard(n, 1);
            }
            obs.nics.push(o);
        }
        Observed {
            obs,
            span: Span::default(),
        }
    }

    fn codes(d: &[Diagnostic]) -> Vec<(Code, String)> {
        d.iter().map(|d| (d.code, d.message.clone())).collect()
    }

    #[test]
    fn a_right_cabling_is_clean_and_matched_by_mac_when_the_name_differs() {
        let o = observed(
            "localhost",
            vec![
                ("ens3", "52:54:00:aa:00:01", Some(neighbour("swp1", 7))),
                ("ens4", "52:54:00:AA:00:02", Some(neighbour("swp2", 7))),
            ],
        );
        let d = compare(&inv(), &[o]);
        assert!(d.is_empty(), "{:?}", codes(&d));
    }

    #[test]
    fn aggregation_off_or_split_on_the_switch_is_found_for_an_lacp_bond() {
        let o = observed(
            "node-a",
            vec![
                ("eth0", "52:54:00:aa:00:01", Some(neighbour("swp1", 7))),
                ("eth1", "52:54:00:aa:00:02", Some(neighbour("swp2", 0))),
            ],
        );
        let d = compare(&inv(), &[o]);
        assert_eq!(d.len(), 1, "{:?}", codes(&d));
        assert_eq!(d[0].code, Code::LldpAggregation);
        assert!(
            d[0].message
                .contains("sw1 port swp2 (eth1) is not in a link aggregation"),
            "{}",
            d[0].message
        );
        assert_eq!(d[0].span.unwrap().line, 11, "at the bond's mode");
        let o = observed(
            "node-a",
            vec![
                ("eth0", "52:54:00:aa:00:01", Some(neighbour("swp1", 7))),
                ("eth1", "52:54:00:aa:00:02", Some(neighbour("swp2", 8))),
            ],
        );
        let d = compare(&inv(), &[o]);
        assert_eq!(codes(&d), [(Code::LldpAggregation, "node-a: the ports of 802.3ad bond bond0 are in different aggregations on sw1: eth0 in 7, eth1 in 8".to_string())]);
    }

    #[test]
    fn wrong_switch_native_vlan_no_neighbour_and_strangers() {
        let mut other_switch = neighbour("swp1", 7);
        other_switch.system_name = Some("sw2".into());
        let mut pvid = neighbour("swp2", 7);
        pvid.port_vlan_id = Some(20);
        let o = observed(
            "node-a",
            vec![
                ("eth0", "52:54:00:aa:00:01", Some(other_switch)),
                ("eth1", "52:54:00:aa:00:02", None),
                ("eth9", "52:54:00:aa:00:09", Some(pvid)),
            ],
        );
        let stranger = observed("node-z", vec![("eth0", "52:54:00:ff:00:01", None)]);
        let d = compare(&inv(), &[o, stranger]);
        let c: Vec<Code> = d.iter().map(|d| d.code).collect();
        assert_eq!(
            c,
            [
                Code::ObservedUnmatched,
                Code::ObservedUnmatched,
                Code::LldpWrongSwitch,
                Code::LldpNoNeighbor
            ],
            "{:?}",
            codes(&d)
        );
        assert!(
            d[0].message
                .contains("NIC eth9 (52:54:00:aa:00:09) is cabled (to sw1)"),
            "{}",
            d[0].message
        );
        assert!(
            d[1].message.contains("observation of `node-z`"),
            "{}",
            d[1].message
        );
        assert!(
            d[2].message
                .contains("eth0 is cabled to sw2 port swp1, not to switch sw1"),
            "{}",
            d[2].message
        );
        assert!(!d[3].is_error(), "no neighbour is a warning");

        // The native VLAN: eth0 expects 1, its port says 20.
        let mut pvid = neighbour("swp1", 7);
        pvid.port_vlan_id = Some(20);
        let o = observed(
            "node-a",
            vec![
                ("eth0", "52:54:00:aa:00:01", Some(pvid)),
                ("eth1", "52:54:00:aa:00:02", Some(neighbour("swp2", 7))),
            ],
        );
        let d = compare(&inv(), &[o]);
        assert_eq!(
            codes(&d),
            [(
                Code::LldpNativeVlan,
                "node-a: NIC eth0: sw1 port swp1 has native VLAN 20, not 1".to_string()
            )]
        );
    }

    #[test]
    fn a_bond_of_another_mode_on_an_aggregated_port_is_a_warning() {
        let text = INV.replace("mode: 802.3ad", "mode: active-backup");
        let inv = crate::test_inventory(&text);
        let o = observed(
            "node-a",
            vec![
                ("eth0", "52:54:00:aa:00:01", Some(neighbour("swp1", 7))),
                ("eth1", "52:54:00:aa:00:02", Some(neighbour("swp2", 7))),
            ],
        );
        let d = compare(&inv, &[o]);
        assert_eq!(d.len(), 1, "{:?}", codes(&d));
        assert_eq!(d[0].code, Code::LldpAggregation);
        assert!(!d[0].is_error());
        assert!(
            d[0].message.contains(
                "bond bond0 has mode active-backup, yet sw1 aggregates its port eth0 (swp1)"
            ),
            "{}",
            d[0].message
        );
    }
}
