use super::*;
use crate::nmstate_bridge::judge;
use serde_json::{json, Value as J};

/// A state as loaded from its JSON text (JSON is YAML).
fn loaded(state: &J) -> Node {
    nodenet_model::yaml::parse(&state.to_string(), 0).expect("JSON is YAML")
}

/// A dual-stack bond with a VLAN: addresses, routes through both
/// families (two default routes told apart by metric) and DNS.
fn dual_stack(v4: [&str; 3], v6: [&str; 2], dns: [&str; 2], mac: &str) -> J {
    json!({
        "interfaces": [
            {"name": "eno1", "type": "ethernet", "state": "up", "mac-address": mac},
            {"name": "eno2", "type": "ethernet", "state": "up"},
            {"name": "bond0", "type": "bond", "state": "up",
             "link-aggregation": {"mode": "active-backup", "port": ["eno1", "eno2"]},
             "ipv4": {"enabled": true, "dhcp": false,
                      "address": [{"ip": v4[0], "prefix-length": 24}, {"ip": v4[1], "prefix-length": 24}]},
             "ipv6": {"enabled": true, "dhcp": false, "autoconf": false,
                      "address": [{"ip": v6[0], "prefix-length": 64}]}},
            {"name": "bond0.110", "type": "vlan", "state": "up",
             "vlan": {"base-iface": "bond0", "id": 110},
             "ipv4": {"enabled": false}, "ipv6": {"enabled": false}}
        ],
        "routes": {"config": [
            {"destination": "0.0.0.0/0", "next-hop-address": v4[2], "next-hop-interface": "bond0", "metric": 100},
            {"destination": "0.0.0.0/0", "next-hop-address": v4[1], "next-hop-interface": "bond0", "metric": 200},
            {"destination": "::/0", "next-hop-address": v6[1], "next-hop-interface": "bond0"}
        ]},
        "dns-resolver": {"config": {"server": dns}}
    })
}

/// Every host's verdict through shapes equals nmstate's own verdict on
/// that host: addresses whose text and numeric order differ (…9,
/// …10, …100), repeats, IPv6 forms, and hosts the rules must send to
/// nmstate (link-local, non-canonical, reordered next hops).
#[test]
fn verdicts_through_shapes_are_nmstates_own() {
    let mut owned: Vec<J> = Vec::new();
    for i in 0..150u32 {
        let a = format!("192.168.{}.{}", i / 200, 2 + i % 200);
        let b = format!("192.168.{}.{}", i / 200, 100 + i % 50);
        let gw = format!("192.168.{}.1", i / 200);
        let v6 = format!("2001:db8:{:x}::{:x}", i % 3, i + 9);
        let v6gw = format!("2001:db8:{:x}::1", i % 3);
        let dns = [format!("10.0.{}.53", i % 7), "fd00::53".to_string()];
        let (a, gw) = match i {
            // Same address twice (the first host had none).
            40 => (b.clone(), gw),
            // Next hops in the other order.
            41 => (a, "192.168.0.250".to_string()),
            // Not ordinary / not canonical: nmstate judges these.
            42 => ("169.254.0.7".to_string(), gw),
            43 => (a, "192.168.000.1".to_string()),
            _ => (a, gw),
        };
        // MACs pinned per host: upper case on some, mixed case (left
        // to nmstate) on one.
        let mac = match i {
            44 => "52:54:00:Ab:00:2c".to_string(),
            i if i % 5 == 0 => format!("52:54:00:AB:{:02X}:{:02X}", i / 256, i % 256),
            i => format!("52:54:00:ab:{:02x}:{:02x}", i / 256, i % 256),
        };
        owned.push(dual_stack(
            [&a, &b, &gw],
            [&v6, &v6gw],
            [&dns[0], &dns[1]],
            &mac,
        ));
    }
    // A second shape of another template, and a host without network.
    for i in 0..70u32 {
        owned.push(json!({"interfaces": [{"name": "eth0", "type": "ethernet", "state": "up",
                "ipv4": {"enabled": true, "dhcp": false, "address": [{"ip": format!("10.9.{}.{}", i / 10, i % 10 + 1), "prefix-length": 16}]}}]}));
    }
    let mut states: Vec<Option<&J>> = owned.iter().map(Some).collect();
    states.insert(3, None);
    let nodes: Vec<Option<Node>> = states.iter().map(|s| s.map(loaded)).collect();
    let (fleet, from_shape) =
        judge_fleet_counted(nodes.len(), &|i| nodes[i].as_ref().map(Cow::Borrowed));
    let fleet = fleet.judged;
    assert_eq!(fleet.len(), states.len());
    for (i, (state, got)) in states.iter().zip(&fleet).enumerate() {
        let Some(state) = state else {
            assert!(got.is_none());
            continue;
        };
        let want = judge(state);
        let got = got.as_ref().expect("a verdict for every state");
        assert_eq!(got.result, want.result, "host {i}");
        assert_eq!(got.logs, want.logs, "host {i}");
        assert_eq!(got.parsed, want.parsed, "host {i}");
    }
    // Both shapes were used: the second gives 66 (70 less its first,
    // second, 65th and last, which nmstate judges), so at least 34
    // came from the dual-stack one, whose hosts with their addresses
    // in another order and hosts 40-44 went to nmstate.
    assert!(from_shape >= 100, "{from_shape} verdicts from shapes");
}

/// Shapes as people see them: hosts that differ only in addresses and
/// MACs share one, even where keyfiles could not be refilled (a
/// non-canonical or link-local address, a mixed-case MAC, no address
/// at all); any other difference is another shape.
#[test]
fn seen_shapes_blank_addresses_and_macs_only() {
    let host = |ip: &str, mac: &str, mtu: u32| {
        json!({"interfaces": [{"name": "eth0", "type": "ethernet", "mtu": mtu, "mac-address": mac,
                "ipv4": {"enabled": true, "address": [{"ip": ip, "prefix-length": 24}]}}],
                "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1"}]}})
    };
    let dhcp = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "ipv4": {"enabled": true, "dhcp": true}}]});
    let states = [
        Some(host("10.0.0.5", "52:54:00:00:00:01", 1500)),
        Some(host("10.0.0.6", "52:54:00:00:00:02", 1500)),
        None,
        Some(host("010.0.0.7", "52:54:00:Ab:00:03", 1500)),
        Some(host("169.254.0.8", "52:54:00:00:00:04", 1500)),
        Some(host("10.0.0.9", "52:54:00:00:00:05", 9000)),
        Some(host("2001:db8::9", "52:54:00:00:00:05", 1500)),
        Some(dhcp.clone()),
        Some(dhcp),
    ];
    let nodes: Vec<Option<Node>> = states.iter().map(|s| s.as_ref().map(loaded)).collect();
    let (fleet, _) = judge_fleet_counted(nodes.len(), &|i| nodes[i].as_ref().map(Cow::Borrowed));
    assert_eq!(
        fleet.shapes,
        [
            Some(0),
            Some(0),
            None,
            Some(0),
            Some(0),
            Some(1),
            Some(2),
            Some(3),
            Some(3)
        ]
    );
}

#[test]
fn only_whole_tokens_are_addresses() {
    let addresses = vec![(
        Slot::Ip("10.1.0.1".parse().unwrap()),
        "10.1.0.1".to_string(),
    )];
    let mut seen = vec![false];
    let template = KeyfileTemplate {
        name: "x".into(),
        template: Template::cut(
            "address0=10.1.0.10/8\nroute0=10.1.0.1/32,10.1.0.1\n",
            &addresses,
            &mut seen,
        ),
    };
    let other = Shape {
        hash: (0, 0),
        addresses: vec![(
            Slot::Ip("10.2.0.2".parse().unwrap()),
            "10.2.0.2".to_string(),
        )],
    };
    assert!(seen[0]);
    assert_eq!(
        fill(&[template], &other)[0].1,
        "address0=10.1.0.10/8\nroute0=10.2.0.2/32,10.2.0.2\n"
    );
}

#[test]
fn special_and_non_canonical_addresses_are_not_ordinary() {
    for s in [
        "0.0.0.0",
        "127.0.0.1",
        "224.0.0.1",
        "255.255.255.255",
        "169.254.1.1",
        "::",
        "::1",
        "::10.1.0.1",
        "::ffff:10.1.0.1",
        "fe80::1",
        "ff02::1",
        "2001:DB8::1",
        "2001:db8:0::1",
        "010.1.0.1",
    ] {
        assert!(ordinary(s).is_none(), "{s}");
    }
    for s in ["10.1.0.1", "192.0.2.7", "2001:db8::1", "fd00::53"] {
        assert!(ordinary(s).is_some(), "{s}");
    }
}

/// A text's values are its whole tokens that are ordinary addresses or
/// MACs, in order; texts that differ only there hash alike, others not.
#[test]
fn values_of_a_text_are_its_addresses_and_macs() {
    let keys = (RandomState::new(), RandomState::new());
    let of = |t: &str| {
        let mut h = Both::new(&keys);
        let v = text::values_of(t, &mut h);
        (h.pair(), v)
    };
    let a = "ip: 10.1.0.9\nmac: 52:54:00:AB:00:01\nnet: 10.0.0.0/8\nlo: 127.0.0.1\nv6: fd00::9\nport: 8080\n";
    let b = "ip: 10.1.0.10\nmac: 52:54:00:AB:00:02\nnet: 10.0.0.0/8\nlo: 127.0.0.1\nv6: fd00::10\nport: 8080\n";
    let (ha, va) = of(a);
    let (hb, vb) = of(b);
    let texts: Vec<&str> = va.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        texts,
        ["10.1.0.9", "52:54:00:AB:00:01", "10.0.0.0", "fd00::9"]
    );
    assert_eq!(ha, hb);
    assert_eq!(vb[0].1, "10.1.0.10");
    // Another port, or an IPv6 address where an IPv4 one stood: another shape.
    assert_ne!(ha, of(&a.replace("8080", "8081")).0);
    assert_ne!(ha, of(&a.replace("10.1.0.9", "fd00::1")).0);
    // 10.1.0.9 and 10.1.0.10 sort apart as text and as numbers against
    // 10.0.0.0 alike, but not against 10.1.0.2.
    assert!(alike(&va, &vb));
    let with = |t: &str| of(&format!("{t}gw: 10.1.0.2\n")).1;
    assert!(!alike(&with(a), &with(b)));
}

/// Clusters judged together get their own hosts' verdicts, and shapes
/// numbered as if each were judged alone (from 0, in the order of each
/// shape's first host).
#[test]
fn a_fleet_judged_together_splits_into_its_clusters() {
    let fleet = Fleet {
        judged: (0..5)
            .map(|i| {
                Some(Judged {
                    result: Ok(vec![(format!("h{i}"), String::new())]),
                    parsed: true,
                    logs: Vec::new(),
                })
            })
            .collect(),
        shapes: vec![Some(3), Some(1), None, Some(1), Some(3)],
    };
    let parts = fleet.split([2, 3].into_iter());
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0].shapes, [Some(0), Some(1)]);
    assert_eq!(parts[1].shapes, [None, Some(0), Some(1)]);
    let names = |f: &Fleet| -> Vec<String> {
        f.judged
            .iter()
            .map(|j| j.as_ref().unwrap().result.as_ref().unwrap()[0].0.clone())
            .collect()
    };
    assert_eq!(names(&parts[0]), ["h0", "h1"]);
    assert_eq!(names(&parts[1]), ["h2", "h3", "h4"]);
}

/// A state as loaded: the values at address and MAC positions, in order;
/// states that differ only there hash alike, others (another MTU, an
/// address where the text is no address) not; a value that is not
/// canonical and ordinary gives none.
#[test]
fn node_values_are_a_loaded_states_addresses_and_macs() {
    let keys = (RandomState::new(), RandomState::new());
    let of = |ip: &str, mac: &str, mtu: &str| {
        let text = format!(
            "interfaces:\n- name: eth0\n  mtu: {mtu}\n  mac-address: '{mac}'\n  ipv4: {{address: [{{ip: {ip}, prefix-length: 24}}]}}\ndns-resolver: {{config: {{server: [10.0.0.53]}}}}\nroutes: {{config: [{{destination: 10.9.0.0/16, next-hop-address: 10.0.0.1}}]}}\n"
        );
        let node = nodenet_model::yaml::parse(&text, 0).unwrap();
        let mut h = Both::new(&keys);
        node_values(&node, &mut h).map(|v| (h.pair(), v))
    };
    let (a, values) = of("10.0.0.5", "52:54:00:00:00:01", "1500").unwrap();
    let texts: Vec<&str> = values.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        texts,
        ["52:54:00:00:00:01", "10.0.0.5", "10.0.0.53", "10.0.0.1"]
    );
    assert_eq!(of("10.0.0.6", "52:54:00:00:00:02", "1500").unwrap().0, a);
    assert_ne!(of("10.0.0.5", "52:54:00:00:00:01", "9000").unwrap().0, a);
    assert_ne!(of("2001:db8::5", "52:54:00:00:00:01", "1500").unwrap().0, a);
    assert!(of("010.0.0.5", "52:54:00:00:00:01", "1500").is_none());
    assert!(of("10.0.0.5", "52:54:00:Ab:00:01", "1500").is_none());
}

#[test]
fn a_text_holds_a_value_where_a_whole_token_is_an_address_or_mac() {
    for t in [
        r#"{"ip":"10.1.0.1"}"#,
        "route 0.0.0.0/0",
        "fe80::1%eth0",
        "2001:DB8:0:0::1",
        "mac 52:54:00:AB:cd:01",
    ] {
        assert!(text::holds_value(t), "{t}");
    }
    for t in [
        r#"{"path":"mtu","actual":9000,"desired":8000}"#,
        "bond0.110 ens1f0 eno1",
        "10.1.0",
        "52:54:00:00:01",
    ] {
        assert!(!text::holds_value(t), "{t}");
    }
}
