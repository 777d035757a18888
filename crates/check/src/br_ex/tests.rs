use super::*;
use nodenet_model::{InputKind, Located};

fn host(state: &str) -> Host {
    let node = nodenet_model::yaml::parse(state, 0).unwrap();
    let mut h = Host::new(
        Located::new("m0.example.com".into(), Span::default()),
        InputKind::Inventory,
    );
    h.network = Some(node);
    h
}

fn cluster(mode: Option<BrExSource>) -> Cluster {
    Cluster {
        machine_networks: vec![Located::new(
            "192.168.110.0/24".parse().unwrap(),
            Span::default(),
        )],
        br_ex: mode.map(|m| Located::new(m, Span::default())),
        ..Cluster::default()
    }
}

/// The seed topology: a VLAN on an LACP bond, DHCP.
const SEED: &str = r#"
interfaces:
- {name: eno2, type: ethernet, state: up}
- {name: eno3, type: ethernet, state: up}
- {name: bond0, type: bond, state: up, ipv4: {enabled: false}, ipv6: {enabled: false},
   link-aggregation: {mode: 802.3ad, port: [eno2, eno3]}}
- {name: bond0.110, type: vlan, state: up, mtu: 9000, vlan: {base-iface: bond0, id: 110},
   ipv4: {enabled: true, dhcp: true}, ipv6: {enabled: false}}
- {name: bond0.120, type: vlan, state: up, vlan: {base-iface: bond0, id: 120},
   ipv4: {enabled: true, address: [{ip: 10.1.0.5, prefix-length: 24}]}}
"#;

#[test]
fn configure_ovs_takes_the_dhcp_vlan_and_day2_leaves_it_alone() {
    let h = host(SEED);
    let c = cluster(None);
    let p = plan(&h, &c).unwrap();
    // bond0.120 has a static address outside the machine network, so
    // the DHCP interface is the node's.
    assert_eq!(
        p,
        BrExPlan::ConfigureOvs {
            uplinks: vec!["bond0.110".into()]
        }
    );
    assert!(!p.writes_openshift_dir());
    let day2 = day2_state(&h, &c, &p).unwrap();
    let names: Vec<&str> = day2["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["eno2", "eno3", "bond0", "bond0.120"]);
}

#[test]
fn derived_br_ex_takes_the_uplinks_addresses_mtu_and_mac() {
    let h = host(SEED);
    let c = cluster(Some(BrExSource::Derive));
    let p = plan(&h, &c).unwrap();
    assert_eq!(
        p,
        BrExPlan::Derived {
            uplink: "bond0.110".into()
        }
    );
    let s = openshift_state(&h, &p).unwrap();
    let ifaces = s["interfaces"].as_array().unwrap();
    let by = |n: &str, t: &str| {
        ifaces
            .iter()
            .find(|i| i["name"] == n && i["type"] == t)
            .unwrap_or_else(|| panic!("{n} {t} in {s}"))
    };
    assert_eq!(by("bond0.110", "vlan")["ipv4"], json!({"enabled": false}));
    assert_eq!(
        by("br-ex", "ovs-bridge")["bridge"]["port"],
        json!([{"name": "bond0.110"}, {"name": "br-ex"}])
    );
    let internal = by("br-ex", "ovs-interface");
    assert_eq!(internal["copy-mac-from"], "bond0.110");
    assert_eq!(internal["mtu"], 9000);
    assert_eq!(
        internal["ipv4"],
        json!({"enabled": true, "dhcp": true, "auto-route-metric": 48})
    );
    // The derived state passes the contract.
    let node = nodenet_model::yaml::parse(&serde_yaml::to_string(&s).unwrap(), 0).unwrap();
    let mut d = Vec::new();
    check_contract(&node, "x.yml", &c, node.span, &mut d);
    assert!(d.is_empty(), "{d:?}");
    // Day 2 keeps OVN-Kubernetes' masquerade address on br-ex.
    let day2 = day2_state(&h, &c, &p).unwrap();
    let internal = day2["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "ovs-interface")
        .unwrap();
    assert_eq!(
        internal["ipv4"]["address"],
        json!([{"ip": "169.254.0.2", "prefix-length": 17}])
    );
    // IPv6 is disabled on br-ex: no masquerade address for it.
    assert!(internal["ipv6"].get("address").is_none(), "{internal}");
}

#[test]
fn routes_follow_the_uplink_onto_br_ex() {
    let h = host(
        r#"
interfaces:
- {name: enp2s0, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.168.110.10, prefix-length: 24}]}}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 192.168.110.1, next-hop-interface: enp2s0}
"#,
    );
    let c = cluster(Some(BrExSource::Derive));
    let p = plan(&h, &c).unwrap();
    let s = openshift_state(&h, &p).unwrap();
    assert_eq!(s["routes"]["config"][0]["next-hop-interface"], "br-ex");
    // Static: no route metric is invented.
    let internal = s["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "ovs-interface")
        .unwrap();
    assert!(internal["ipv4"].get("auto-route-metric").is_none());
    assert_eq!(internal["ipv4"]["address"][0]["ip"], "192.168.110.10");
}

#[test]
fn a_state_without_br_ex_for_the_openshift_dir_is_refused() {
    let node = nodenet_model::yaml::parse(SEED, 0).unwrap();
    let mut d = Vec::new();
    check_contract(
        &node,
        "/etc/nmstate/openshift/m0.yml",
        &cluster(None),
        node.span,
        &mut d,
    );
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, Code::BrExMissing);
    assert!(d[0].message.contains("Skipping configure-ovs"));
}

#[test]
fn a_br_ex_without_uplink_or_address_or_mac_is_reported() {
    let node = nodenet_model::yaml::parse(
            r#"
interfaces:
- {name: enp2s0, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.168.110.10, prefix-length: 24}]}}
- {name: br-ex, type: ovs-bridge, state: up, bridge: {port: [{name: br-ex}]}}
- {name: br-ex, type: ovs-interface, state: up, ipv4: {enabled: false}}
"#,
            0,
        )
        .unwrap();
    let mut d = Vec::new();
    check_contract(&node, "m0.yml", &cluster(None), node.span, &mut d);
    let msgs: Vec<(Code, bool, &str)> = d
        .iter()
        .map(|d| (d.code, d.is_error(), d.message.as_str()))
        .collect();
    assert!(
        msgs.iter()
            .any(|(_, e, m)| *e && m.contains("no uplink port")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|(_, e, m)| *e && m.contains("neither IPv4 nor IPv6")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|(_, e, m)| *e && m.contains("is on `enp2s0`, not on br-ex")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|(_, e, m)| !*e && m.contains("copy-mac-from")),
        "{msgs:?}"
    );
}

#[test]
fn derive_asks_for_the_uplink_when_the_intent_cannot_tell() {
    let h = host(
            "interfaces:\n- {name: eth0, type: ethernet, ipv4: {enabled: true, dhcp: true}}\n- {name: eth1, type: ethernet, ipv4: {enabled: true, dhcp: true}}\n",
        );
    let e = plan(&h, &cluster(Some(BrExSource::Derive))).unwrap_err();
    assert_eq!(e.code, Code::BrExInvalid);
    assert!(e.message.contains("eth0 and eth1"), "{}", e.message);
    assert!(e.help.unwrap().contains("brExUplink"));
    // Under configure-ovs, nodenet's day-2 state leaves both out.
    let p = plan(&h, &cluster(None)).unwrap();
    assert_eq!(
        p,
        BrExPlan::ConfigureOvs {
            uplinks: vec!["eth0".into(), "eth1".into()]
        }
    );
}
