use super::*;

fn load(text: &str) -> Inventory {
    nodenet_model::load_texts(vec![("cluster.yaml".into(), text.into())]).inventory
}

const SEED: &str = r#"nodenet: v1
cluster:
  name: lab
  baseDomain: example.com
  machineNetworks: [192.168.110.0/24]
  apiVIPs: [192.168.110.5]
  ingressVIPs: [192.168.110.4]
hosts:
- name: node-a
  nics:
  - {name: eno1, mac: "52:54:00:aa:00:01", switch: tor-1, port: Ethernet1/1}
  - {name: eno2, mac: "52:54:00:aa:00:02", switch: tor-1, port: Ethernet1/2}
  network:
    interfaces:
    - {name: bond0, type: bond, link-aggregation: {mode: 802.3ad, port: [eno1, eno2]}}
    - {name: bond0.110, type: vlan, vlan: {base-iface: bond0, id: 110}, ipv4: {enabled: true, dhcp: true}}
    - name: bond0.120
      type: vlan
      mtu: 9000
      vlan: {base-iface: bond0, id: 120}
      ipv4: {enabled: true, address: [{ip: 10.0.120.11, prefix-length: 24}]}
- name: node-b
  nics: {eth0: "52:54:00:bb:00:01"}
  network:
    interfaces:
    - {name: eth0, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.168.110.1, prefix-length: 24}]}}
    routes:
      config: [{destination: 0.0.0.0/0, next-hop-address: 192.168.110.254, next-hop-interface: eth0}]
"#;

#[test]
fn ports_follow_the_nics_with_their_vlans_lacp_and_lldp_names() {
    let inv = load(SEED);
    let hosts: Vec<&Host> = inv.hosts.iter().collect();
    let t = plan(&inv, &hosts).unwrap();
    assert_eq!(t.switch, "tor-1");
    let p: Vec<String> = t
        .ports
        .iter()
        .map(|p| {
            format!(
                "{} {} {:?} {:?} native {} {:?}",
                p.name, p.nic, p.label, p.vlans, p.native, p.lacp
            )
        })
        .collect();
    assert_eq!(
        p,
        [
            r#"swp1 eno1 Some("Ethernet1/1") [110, 120] native 1 Some("bond1")"#,
            r#"swp2 eno2 Some("Ethernet1/2") [110, 120] native 1 Some("bond1")"#,
            "swp3 eth0 None [] native 1 None",
        ]
    );
    assert_eq!(t.ports[0].mtu, 9000);
    assert_eq!(t.nodes[1].nics[0].mac, "52:54:00:bb:00:01");
}

#[test]
fn networks_get_the_intents_gateway_else_a_free_address_and_dhcp_clear_of_vips() {
    let inv = load(SEED);
    let hosts: Vec<&Host> = inv.hosts.iter().collect();
    let t = plan(&inv, &hosts).unwrap();
    let seg: Vec<String> = t
        .segments
        .iter()
        .map(|s| {
            format!(
                "{} {} gw {} dhcp {:?}",
                s.vlan, s.network, s.gateway, s.dhcp
            )
        })
        .collect();
    assert_eq!(
        seg,
        [
            // node-a's static VLAN 120: no route given, first free address.
            "120 10.0.120.0/24 gw 10.0.120.1 dhcp None",
            // DHCP on VLAN 110 for the machine network, clear of
            // node-b's .1 and the VIPs; node-b's untagged eth0 (native
            // VLAN 1) would be the same network: noted.
            "110 192.168.110.0/24 gw 192.168.110.2 dhcp Some((192.168.110.128, 192.168.110.227))",
        ]
    );
    assert!(
        t.notes.iter().any(|n| n.contains("more than one VLAN")),
        "{:?}",
        t.notes
    );
    assert!(t.dns.contains(&(
        "api.lab.example.com".into(),
        "192.168.110.5".parse().unwrap()
    )));
}

#[test]
fn per_shape_takes_the_first_hosts_of_each_shape() {
    let inv = load(&format!(
            "{SEED}- name: node-c\n  nics: {{eth0: \"52:54:00:cc:00:01\"}}\n  network:\n    interfaces:\n    - {{name: eth0, type: ethernet, ipv4: {{enabled: true, address: [{{ip: 192.168.110.3, prefix-length: 24}}]}}}}\n"
        ));
    let names: Vec<String> = choose(&inv, &[], Some(1))
        .unwrap()
        .iter()
        .map(|h| h.name.value.clone())
        .collect();
    assert_eq!(names, ["node-a", "node-b"]);
    let e = choose(&inv, &["node-x".into()], None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no host `node-x`"), "{e}");
}

#[test]
fn too_many_nics_is_refused_with_the_limit() {
    let nics: String = (0..9)
        .map(|i| format!("eth{i}: \"52:54:00:00:00:{i:02x}\", "))
        .collect();
    let inv = load(&format!(
        "nodenet: v1\nhosts:\n- name: big\n  nics: {{{nics}}}\n"
    ));
    let hosts: Vec<&Host> = inv.hosts.iter().collect();
    let e = plan(&inv, &hosts).unwrap_err().to_string();
    assert!(
        e.contains("big has 9 NICs") && e.contains("at most 8"),
        "{e}"
    );
}
