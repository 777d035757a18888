use super::*;

fn host(text: &str) -> Host {
    let loaded = nodenet_model::load_texts(vec![("c.yaml".into(), text.to_string())]);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    loaded.inventory.hosts.into_iter().next().unwrap()
}

const LACP: &str = r#"nodenet: v1
hosts:
- name: h
  nics:
  - {name: eth0, mac: "52:54:00:00:00:01", switch: sw1, port: swp1, native: 1, mtu: 9000}
  - {name: eth1, mac: "52:54:00:00:00:02", switch: sw1, port: swp2, vlans: [300]}
  network:
    interfaces:
    - {name: bond0, type: bond, mtu: 9000, link-aggregation: {mode: 802.3ad, port: [eth0, eth1]}}
    - {name: bond0.110, type: vlan, vlan: {base-iface: bond0, id: 110}}
    - {name: bond0.120, type: vlan, mtu: 1500, vlan: {base-iface: bond0, id: 120}}
    - {name: eth2, type: ethernet, mtu: 1500}
"#;

/// A bond's VLANs go on each port, after the listed ones; its MTU and
/// its mode too; a NIC only the intent names is there without MAC.
#[test]
fn the_intent_puts_vlans_mtu_and_aggregation_on_each_port() {
    let h = host(LACP);
    let e = expected(&h);
    let names: Vec<&str> = e.iter().map(|e| e.nic.as_str()).collect();
    assert_eq!(names, ["eth0", "eth1", "eth2"]);
    let ids = |e: &Expected| e.vlans.iter().map(|v| v.id).collect::<Vec<_>>();
    assert_eq!(ids(&e[0]), [110, 120]);
    assert_eq!(ids(&e[1]), [300, 110, 120]);
    assert_eq!(e[1].vlans[1].why, Why::Intent("bond0.110".into()));
    assert_eq!(e[0].mtu.as_ref().unwrap().mtu, 9000);
    assert_eq!(e[0].mtu.as_ref().unwrap().why, Why::Listed);
    assert_eq!(e[1].mtu.as_ref().unwrap().why, Why::Intent("bond0".into()));
    assert_eq!(e[0].bond.as_ref().unwrap().mode.as_deref(), Some("802.3ad"));
    assert_eq!(e[0].switch.as_ref().unwrap().value, "sw1");
    assert!(e[2].mac.is_none() && e[2].bond.is_none() && e[2].vlans.is_empty());
    let mut d = Vec::new();
    check_host(&h, h.network.as_ref().map(Network::read).as_ref(), &mut d);
    assert!(d.is_empty(), "{d:?}");
}

#[test]
fn a_native_vlan_carried_tagged_and_a_listed_mtu_too_small_are_found() {
    let text = LACP.replace("native: 1, mtu: 9000", "native: 120, mtu: 1500");
    let h = host(&text);
    let mut d = Vec::new();
    check_host(&h, h.network.as_ref().map(Network::read).as_ref(), &mut d);
    let codes: Vec<Code> = d.iter().map(|d| d.code).collect();
    assert_eq!(
        codes,
        [Code::WiringNativeTagged, Code::WiringMtuBelowIntent],
        "{d:?}"
    );
    assert_eq!(d[0].span.unwrap().line, 5);
    assert_eq!(d[1].span.unwrap().line, 5);
}
