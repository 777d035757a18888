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
        d[0].message
            .contains("bond bond0 has mode active-backup, yet sw1 aggregates its port eth0 (swp1)"),
        "{}",
        d[0].message
    );
}
