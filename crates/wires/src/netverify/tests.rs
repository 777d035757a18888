use super::*;

const INV: &str = r#"nodenet: v1
hosts:
- name: a
  nics:
  - {name: eth0, mac: "52:54:00:00:00:01", switch: sw1, port: swp1}
  - {name: eth1, mac: "52:54:00:00:00:02", switch: sw1, port: swp2, native: 10}
  network:
    interfaces:
    - {name: bond0, type: bond, mtu: 9000, link-aggregation: {mode: active-backup, port: [eth0]}, ipv4: {enabled: true, dhcp: true}}
    - {name: bond0.110, type: vlan, vlan: {base-iface: bond0, id: 110}}
    - {name: eth1.120, type: vlan, vlan: {base-iface: eth1, id: 120}}
- name: b
  nics:
  - {name: eth0, mac: "52:54:00:00:00:11"}
  network:
    interfaces:
    - {name: eth0.130, type: vlan, vlan: {base-iface: eth0, id: 130}}
"#;

fn inv() -> Inventory {
    crate::test_inventory(INV)
}

#[test]
fn vlans_come_from_the_intent_and_all_vlans_puts_every_one_everywhere() {
    let p = plan(&inv(), &PlanOptions::default()).unwrap();
    let a = p.host("a").unwrap();
    assert_eq!(a.nics[0].vlans, [110]);
    assert_eq!(a.nics[1].vlans, [120]);
    assert_eq!(a.nics[1].native, Some(10));
    assert!(
        a.nics[0].untagged,
        "bond0 carries untagged traffic over eth0"
    );
    assert!(a.nics[1].untagged, "a native VLAN is untagged");
    assert!(
        !p.host("b").unwrap().nics[0].untagged,
        "only a VLAN on eth0"
    );
    assert_eq!(a.nics[0].mtu, None);
    let all = plan(
        &inv(),
        &PlanOptions {
            all_vlans: true,
            mtu: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(all.host("b").unwrap().nics[0].vlans, [110, 120, 130]);
    assert_eq!(all.host("a").unwrap().nics[0].mtu, Some(9000));
    assert_ne!(all.run, p.run);
    let text = serde_json::to_string(&p).unwrap();
    assert_eq!(Plan::from_json(&text).unwrap(), p);
    assert!(
        Plan::from_json(&text.replace("\"rate\":20", "\"rate\":5000"))
            .unwrap_err()
            .contains("rate")
    );
    assert!(plan(
        &inv(),
        &PlanOptions {
            rate: 0,
            ..Default::default()
        }
    )
    .is_err());
}
