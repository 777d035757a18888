use super::*;
use crate::topology::{Segment, SwitchPort, Topology};

fn port(n: u8, nic: &str, lacp: Option<&str>, native: u16) -> SwitchPort {
    SwitchPort {
        name: format!("swp{n}"),
        host: "node-a".into(),
        nic: nic.into(),
        label: Some(format!("Ethernet1/{n}")),
        vlans: vec![110, 120],
        native,
        mtu: 9000,
        lacp: lacp.map(String::from),
    }
}

#[test]
fn lacp_ports_share_one_bond_in_the_bridge_with_their_vlans() {
    let t = Topology {
        switch: "tor-1".into(),
        nodes: vec![],
        ports: vec![
            port(1, "eno1", Some("bond1"), 1),
            port(2, "eno2", Some("bond1"), 1),
            port(3, "eno3", None, 100),
        ],
        segments: vec![Segment {
            vlan: 110,
            network: "192.168.110.0/24".parse().unwrap(),
            gateway: "192.168.110.1".parse().unwrap(),
            dhcp: Some((
                "192.168.110.128".parse().unwrap(),
                "192.168.110.227".parse().unwrap(),
            )),
            why: "test".into(),
        }],
        dns: vec![(
            "api.lab.example.com".into(),
            "192.168.110.5".parse().unwrap(),
        )],
        notes: vec![],
        kernel_nic_names: false,
    };
    let s = script(&t);
    assert_eq!(s.matches("type bond mode 802.3ad").count(), 1, "{s}");
    assert!(
        s.contains("ip link set swp2 down; ip link set swp2 master bond1"),
        "{s}"
    );
    assert!(s.contains("ip link set bond1 master br0"), "{s}");
    assert!(!s.contains("ip link set swp1 master br0"), "{s}");
    assert!(
        s.contains(
            "bridge vlan del dev swp3 vid 1\nbridge vlan add dev swp3 vid 100 pvid untagged"
        ),
        "{s}"
    );
    assert!(s.contains("bridge vlan add dev bond1 vid 120"), "{s}");
    assert!(s.contains("ip addr add 192.168.110.1/24 dev gw110"), "{s}");
    assert!(
        s.contains("dhcp-range=set:n0,192.168.110.128,192.168.110.227,255.255.255.0,1h"),
        "{s}"
    );
    assert!(
        s.contains("host-record=api.lab.example.com,192.168.110.5"),
        "{s}"
    );
    assert!(s.contains("configure system hostname tor-1"), "{s}");
    assert!(
        s.contains("configure ports swp3 lldp portidsubtype local 'Ethernet1/3'"),
        "{s}"
    );
}
