use super::*;
use serde_json::json;

#[test]
fn spelling_differences_are_not_changes() {
    let a = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "mtu": "1500"}]});
    let b = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "mtu": 1500}]});
    assert!(diff(&a, &b).unwrap().equal);
}

/// The main table by number (254, or 0) is the main table unnamed;
/// another table is another route.
#[test]
fn a_route_in_the_main_table_is_one_route_however_it_is_named() {
    let route = |table: Option<u64>| {
        let mut r = json!({"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "eth0"});
        if let Some(t) = table {
            r["table-id"] = json!(t);
        }
        json!({"interfaces": [], "routes": {"config": [r]}})
    };
    for how in [Actual::Complete, Actual::Live] {
        assert!(
            diff_with(&route(Some(254)), &route(None), how)
                .unwrap()
                .equal
        );
        assert!(
            diff_with(&route(None), &route(Some(254)), how)
                .unwrap()
                .equal
        );
        assert!(
            diff_with(&route(Some(0)), &route(Some(254)), how)
                .unwrap()
                .equal
        );
        assert!(
            !diff_with(&route(Some(100)), &route(None), how)
                .unwrap()
                .equal
        );
    }
}

#[test]
fn live_comparison_checks_absent_routes_and_interfaces_and_not_dns() {
    let desired = json!({
        "interfaces": [{"name": "eth0.130", "type": "vlan", "state": "absent"}],
        "dns-resolver": {"config": {"server": ["10.0.0.1"]}},
        "routes": {"config": [
            {"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.254", "next-hop-interface": "eth0"},
            {"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "eth0", "state": "absent"}
        ]}
    });
    let new_route = json!({"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.254", "next-hop-interface": "eth0"});
    let old_route = json!({"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "eth0"});
    let live = |routes: Vec<J>| json!({"interfaces": [], "routes": {"config": routes}});
    let done = diff_with(&desired, &live(vec![new_route.clone()]), Actual::Live).unwrap();
    assert!(done.equal, "{}", render_text(&done));
    let stale = diff_with(
        &desired,
        &live(vec![new_route, old_route.clone()]),
        Actual::Live,
    )
    .unwrap();
    assert!(!stale.equal);
    assert_eq!(
        stale.routes.removed,
        vec![canonical(&live(vec![old_route]), "x").unwrap()["routes"]["config"][0].clone()]
    );
}

/// The kernel lists a bond's ports in its own order, and keeps the
/// link of a NIC NetworkManager deactivated up: neither is a change.
#[test]
fn live_port_order_and_a_deactivated_nic_are_not_changes() {
    let desired = json!({"interfaces": [
        {"name": "bond0", "type": "bond", "link-aggregation": {"mode": "802.3ad", "port": ["eth0", "dummy0"]}},
        {"name": "eth1", "type": "ethernet", "state": "down"}
    ]});
    let live = json!({"interfaces": [
        {"name": "bond0", "type": "bond", "state": "up", "link-aggregation": {"mode": "802.3ad", "port": ["dummy0", "eth0"]}},
        {"name": "eth1", "type": "ethernet", "state": "up"}
    ]});
    let d = diff_with(&desired, &live, Actual::Live).unwrap();
    assert!(d.equal, "{}", render_text(&d));
    // A missing port still is one; a complete comparison keeps order.
    let short = json!({"interfaces": [
        {"name": "bond0", "type": "bond", "state": "up", "link-aggregation": {"mode": "802.3ad", "port": ["eth0"]}},
        {"name": "eth1", "type": "ethernet", "state": "up"}
    ]});
    assert!(!diff_with(&desired, &short, Actual::Live).unwrap().equal);
}

/// NICs bound by MAC are found live by their permanent MAC, whatever
/// the kernel named them and whatever MAC their bond gave them; bound
/// by name, the same live state is a bond without its ports.
#[test]
fn live_nics_bound_by_mac_are_found_by_permanent_mac_under_any_name() {
    let bound = |identifier: bool| {
        let nic = |name: &str, mac: &str| {
            let mut n = json!({"name": name, "type": "ethernet", "state": "up"});
            if identifier {
                n["identifier"] = json!("mac-address");
                n["mac-address"] = json!(mac);
                n["profile-name"] = json!(name);
            }
            n
        };
        json!({"interfaces": [
                nic("eno1", "52:54:00:61:00:01"),
                nic("eno2", "52:54:00:61:00:02"),
                {"name": "bond0", "type": "bond", "state": "up", "link-aggregation": {"mode": "active-backup", "port": ["eno1", "eno2"]}},
                {"name": "bond0.110", "type": "vlan", "state": "up", "vlan": {"base-iface": "bond0", "id": 110}}
            ], "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "bond0.110"}]}})
    };
    // net.ifnames=0: eth1 came first; both ports carry bond0's MAC.
    let live = json!({"interfaces": [
            {"name": "eth0", "type": "ethernet", "state": "up", "mac-address": "06:BA:C1:48:97:FE", "permanent-mac-address": "52:54:00:61:00:02"},
            {"name": "eth1", "type": "ethernet", "state": "up", "mac-address": "06:BA:C1:48:97:FE", "permanent-mac-address": "52:54:00:61:00:01"},
            {"name": "bond0", "type": "bond", "state": "up", "mac-address": "06:BA:C1:48:97:FE", "link-aggregation": {"mode": "active-backup", "port": ["eth0", "eth1"]}},
            {"name": "bond0.110", "type": "vlan", "state": "up", "vlan": {"base-iface": "bond0", "id": 110}}
        ], "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "bond0.110"}]}});
    let d = diff_with(&bound(true), &live, Actual::Live).unwrap();
    assert!(d.equal, "{}", render_text(&d));
    let by_name = diff_with(&bound(false), &live, Actual::Live).unwrap();
    assert!(!by_name.equal);
    let missing: Vec<&str> = by_name
        .interfaces
        .iter()
        .filter(|i| i.change == Change::Added)
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(missing, ["eno1", "eno2"], "{}", render_text(&by_name));
    // A NIC whose MAC is nowhere live is missing, bound or not.
    let gone = live
        .to_string()
        .replace("52:54:00:61:00:02", "52:54:00:61:00:09");
    let d = diff_with(
        &bound(true),
        &serde_json::from_str(&gone).unwrap(),
        Actual::Live,
    )
    .unwrap();
    assert!(!d.equal);
}

/// An OVS bridge is ovsdb's: live, it is its ports attached to the
/// datapath, and its internal interface a kernel device.
#[test]
fn live_ovs_bridge_is_its_ports_on_the_datapath() {
    let desired = json!({"interfaces": [
        {"name": "br-ex", "type": "ovs-bridge", "bridge": {"port": [{"name": "enp2s0"}, {"name": "br-ex"}]}},
        {"name": "br-ex", "type": "ovs-interface", "ipv4": {"enabled": true, "address": [
            {"ip": "192.168.110.10", "prefix-length": 24}, {"ip": "169.254.0.2", "prefix-length": 17}]}}
    ]});
    let live = |enp2s0: J| {
        json!({"interfaces": [
            enp2s0,
            {"name": "br-ex", "type": "ovs-interface", "state": "up",
             "ipv4": {"enabled": true, "address": [{"ip": "169.254.0.2", "prefix-length": 17}, {"ip": "192.168.110.10", "prefix-length": 24}]}}
        ]})
    };
    // The kernel's address order is not the desired one: not a change.
    let attached = live(
        json!({"name": "enp2s0", "type": "ethernet", "state": "up", "controller": "ovs-system"}),
    );
    let d = diff_with(&desired, &attached, Actual::Live).unwrap();
    assert!(d.equal, "{}", render_text(&d));
    let loose = live(json!({"name": "enp2s0", "type": "ethernet", "state": "up"}));
    let d = diff_with(&desired, &loose, Actual::Live).unwrap();
    assert!(!d.equal);
    assert_eq!(
            render_text(&d),
            "~ br-ex (ovs-bridge)\n    bridge.port: [{\"name\":\"br-ex\"}] -> [{\"name\":\"enp2s0\"},{\"name\":\"br-ex\"}]\n"
        );
    // Without its internal interface, neither bridge nor address.
    let none = json!({"interfaces": [{"name": "enp2s0", "type": "ethernet", "state": "up", "controller": "ovs-system"}]});
    let d = diff_with(&desired, &none, Actual::Live).unwrap();
    let text = render_text(&d);
    assert!(
        text.contains("+ br-ex (ovs-interface)") && text.contains("~ br-ex (ovs-bridge)"),
        "{text}"
    );
    // A missing address still is one.
    let short = json!({"interfaces": [
        {"name": "enp2s0", "type": "ethernet", "state": "up", "controller": "ovs-system"},
        {"name": "br-ex", "type": "ovs-interface", "state": "up",
         "ipv4": {"enabled": true, "address": [{"ip": "192.168.110.10", "prefix-length": 24}]}}
    ]});
    assert!(!diff_with(&desired, &short, Actual::Live).unwrap().equal);
}

#[test]
fn added_removed_changed() {
    let desired = json!({"interfaces": [
        {"name": "eth0", "type": "ethernet", "mtu": 9000},
        {"name": "eth0.120", "type": "vlan", "vlan": {"base-iface": "eth0", "id": 120}}
    ]});
    let actual = json!({"interfaces": [
        {"name": "eth0", "type": "ethernet", "mtu": 1500},
        {"name": "eth1", "type": "ethernet"}
    ]});
    let d = diff(&desired, &actual).unwrap();
    assert!(!d.equal);
    let by_name = |n: &str| d.interfaces.iter().find(|i| i.name == n).unwrap();
    assert_eq!(by_name("eth0.120").change, Change::Added);
    assert_eq!(by_name("eth1").change, Change::Removed);
    let eth0 = by_name("eth0");
    assert_eq!(eth0.change, Change::Changed);
    assert_eq!(
        eth0.fields,
        vec![FieldChange {
            path: "mtu".into(),
            actual: json!(1500),
            desired: json!(9000),
            implied: false,
        }]
    );
    let text = render_text(&d);
    assert!(
        text.contains("~ eth0 (ethernet)\n    mtu: 1500 -> 9000"),
        "{text}"
    );
    assert!(text.contains("+ eth0.120 (vlan)"), "{text}");
    assert!(text.contains("- eth1 (ethernet)"), "{text}");
}

fn bond(options: J) -> J {
    json!({"interfaces": [{"name": "bond0", "type": "bond", "state": "up",
            "ipv4": {"enabled": false}, "ipv6": {"enabled": false},
            "link-aggregation": {"mode": "802.3ad", "port": ["eno1", "eno2"], "options": options}}]})
}

/// A bond option one side leaves out means its default there: a
/// removed `lacp_rate: fast` is a change to `slow`, a removed
/// `lacp_rate: slow` none.
#[test]
fn a_field_left_out_is_compared_as_the_value_a_new_profile_gets() {
    let old = bond(json!({"lacp_rate": "fast", "xmit_hash_policy": "layer3+4", "miimon": 100}));
    let new = bond(json!({"miimon": 100}));
    let d = diff(&new, &old).unwrap();
    assert!(!d.equal);
    let fields: Vec<(&str, &J, &J, bool)> = d.interfaces[0]
        .fields
        .iter()
        .map(|f| (f.path.as_str(), &f.actual, &f.desired, f.implied))
        .collect();
    assert_eq!(
        fields,
        vec![
            (
                "link-aggregation.options.lacp_rate",
                &json!("fast"),
                &json!("slow"),
                true
            ),
            (
                "link-aggregation.options.xmit_hash_policy",
                &json!("layer3+4"),
                &json!("layer2"),
                true
            ),
        ]
    );
    let text = render_text(&d);
    assert!(
        text.contains("link-aggregation.options.lacp_rate: fast -> (unset: slow)"),
        "{text}"
    );
    // Removed, the defaults themselves change nothing; added, neither.
    let defaults = bond(json!({"lacp_rate": "slow", "miimon": 100}));
    assert!(diff(&bond(json!({})), &defaults).unwrap().equal);
    assert!(diff(&defaults, &bond(json!({}))).unwrap().equal);
}

/// `[ipv4] method=disabled` imported beside a state that leaves ipv4
/// out: the same to nmstate; `state: up` likewise. An MTU left out
/// depends on the device: a change with no value to set.
#[test]
fn defaults_left_out_are_no_change_and_device_defaults_are_unknown() {
    let plain = json!({"interfaces": [{"name": "eth0", "type": "ethernet"}]});
    let spelled = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "state": "up",
            "ipv4": {"enabled": false}, "ipv6": {"enabled": false}}]});
    assert!(diff(&plain, &spelled).unwrap().equal);
    assert!(diff(&spelled, &plain).unwrap().equal);
    let mtu = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "mtu": 9000}]});
    let d = diff(&plain, &mtu).unwrap();
    let f = &d.interfaces[0].fields[0];
    assert_eq!(
        (f.path.as_str(), &f.desired, f.implied),
        ("mtu", &J::Null, false)
    );
    assert!(f.left_out());
    // Live, what desired leaves out is left as it is.
    assert!(diff_with(&plain, &mtu, Actual::Live).unwrap().equal);
}

/// A NodeNetworkState holds more than the node was given: a VIP beside
/// its address, a patch port on br-ex, DHCP's address, IPv6 it was
/// left to, its loopback and learned routes. None of that is drift; a
/// bond option set by hand is, where its default is known.
#[test]
fn a_running_node_is_held_to_what_desired_says_and_known_defaults() {
    let desired = json!({"interfaces": [
        {"name": "br-ex", "type": "ovs-bridge", "state": "up", "bridge": {"port": [{"name": "eno1"}, {"name": "br-ex"}]}},
        {"name": "br-ex", "type": "ovs-interface", "state": "up",
         "ipv4": {"enabled": true, "address": [{"ip": "10.0.0.10", "prefix-length": 24}]}},
        {"name": "bond0", "type": "bond", "state": "up", "link-aggregation": {"mode": "802.3ad", "port": ["eno2", "eno3"]}},
        {"name": "eno4", "type": "ethernet", "state": "up", "ipv4": {"enabled": true, "dhcp": true}}
    ]});
    let running = |lacp_rate: &str| {
        json!({"interfaces": [
            {"name": "lo", "type": "loopback", "state": "up"},
            {"name": "br-ex", "type": "ovs-bridge", "state": "up", "bridge": {"port": [
                {"name": "br-ex"}, {"name": "eno1"}, {"name": "patch-br-ex_node-to-br-int"}]}},
            {"name": "br-ex", "type": "ovs-interface", "state": "up", "mtu": 1500,
             "ipv4": {"enabled": true, "dhcp": false, "address": [
                {"ip": "10.0.0.10", "prefix-length": 24}, {"ip": "10.0.0.5", "prefix-length": 32}]},
             "ipv6": {"enabled": true, "autoconf": true, "dhcp": true}},
            {"name": "bond0", "type": "bond", "state": "up", "mtu": 1500, "link-aggregation": {
                "mode": "802.3ad", "port": ["eno3", "eno2"],
                "options": {"lacp_rate": lacp_rate, "miimon": 100, "ad_select": "stable"}}},
            {"name": "eno4", "type": "ethernet", "state": "up",
             "ipv4": {"enabled": true, "dhcp": true, "address": [{"ip": "10.9.0.7", "prefix-length": 24}]}}
        ], "routes": {"config": [{"destination": "10.8.0.0/16", "next-hop-address": "10.9.0.1", "next-hop-interface": "eno4"}]}})
    };
    let d = diff_with(&desired, &running("slow"), Actual::Running).unwrap();
    assert!(d.equal, "{}", render_text(&d));
    let d = diff_with(&desired, &running("fast"), Actual::Running).unwrap();
    assert_eq!(
        render_text(&d),
        "~ bond0 (bond)\n    link-aggregation.options.lacp_rate: fast -> (unset: slow)\n"
    );
    // An address the node lacks is drift.
    let moved = running("slow")
        .to_string()
        .replace("10.0.0.10", "10.0.0.11");
    let d = diff_with(
        &desired,
        &serde_json::from_str(&moved).unwrap(),
        Actual::Running,
    )
    .unwrap();
    assert!(!d.equal);
}
