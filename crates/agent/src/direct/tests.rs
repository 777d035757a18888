use super::*;

fn state(yaml: &str) -> NetworkState {
    serde_yaml::from_str(yaml).unwrap()
}

const CURRENT: &str = "interfaces:
- {name: eth0, type: ethernet, state: up}
- {name: bond0, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth0]}}
";

#[test]
fn a_new_vlan_on_an_existing_bond_is_added_directly() {
    let change = state(
            "interfaces:
- {name: bond0.130, type: vlan, state: up, vlan: {base-iface: bond0, id: 130}, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}}
",
        );
    let files = new_interfaces_only(&change, &state(CURRENT)).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, "bond0.130.nmconnection");
    assert!(files[0].1.contains("[vlan]") && files[0].1.contains("id=130"));
    assert!(uuid_of(&files[0].1).is_some());
}

#[test]
fn routes_and_name_servers_already_in_place_are_no_change() {
    let current = state(&format!(
            "{CURRENT}routes: {{config: [{{destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: bond0, metric: 425, table-id: 254}}]}}
dns-resolver: {{config: {{server: [192.0.2.53], search: []}}}}
"
        ));
    let relisted = "routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: bond0}]}
dns-resolver: {config: {server: [192.0.2.53]}}
";
    // Only what is already there: no change at all.
    assert!(without_what_is_there(&state(relisted), &current)
        .unwrap()
        .is_none());
    // With a new dummy: the dummy alone, which the direct way adds.
    let change = without_what_is_there(
        &state(&format!(
            "interfaces:\n- {{name: d0, type: dummy}}\n{relisted}"
        )),
        &current,
    )
    .unwrap()
    .unwrap();
    let json = serde_json::to_value(&change).unwrap();
    assert!(
        is_empty(&json["routes"]) && is_empty(&json["dns-resolver"]),
        "{json}"
    );
    assert!(new_interfaces_only(&change, &current).is_ok());
    // Another gateway or another name server stays in the change.
    for (other, section) in [
            ("routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: bond0}]}\n", "routes"),
            ("dns-resolver: {config: {server: [192.0.2.54]}}\n", "dns-resolver"),
        ] {
            let change = without_what_is_there(&state(other), &current).unwrap().unwrap();
            let json = serde_json::to_value(&change).unwrap();
            assert!(!is_empty(&json[section]), "{other}: {json}");
        }
}

fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap()
}

/// As the profiles on disk say (nodenet's importer writes this shape).
const PROFILES: &str = "interfaces:
- {name: eth0, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}}
- {name: bond0, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth0], options: {miimon: 100}}, ipv4: {enabled: false}, ipv6: {enabled: false}}
- {name: bond0.110, type: vlan, state: up, vlan: {base-iface: bond0, id: 110}, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.10, prefix-length: 24}]}, ipv6: {enabled: false}}
routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: bond0.110}]}
";

/// As nodenet's nispor view of the kernel says (`live::from_nispor`).
const KERNEL: &str = "interfaces:
- {name: eth0, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}}
- {name: bond0, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth0]}, ipv4: {enabled: false}, ipv6: {enabled: false}}
- {name: bond0.110, type: vlan, state: up, vlan: {base-iface: bond0, id: 110}, ipv4: {enabled: true, address: [{ip: 192.0.2.10, prefix-length: 24}]}, ipv6: {enabled: false}}
routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: bond0.110}]}
";

fn desired(extra: &str) -> Value {
    let mut d = yaml(PROFILES);
    let new: Value = yaml(
            "{name: bond0.120, type: vlan, state: up, vlan: {base-iface: bond0, id: 120}, ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.10, prefix-length: 24}]}, ipv6: {enabled: false}}",
        );
    d["interfaces"].as_array_mut().unwrap().push(new);
    for (k, v) in yaml(extra).as_object().into_iter().flatten() {
        d[k] = v.clone();
    }
    d
}

fn no_dns() -> Result<dbus::GlobalDns, String> {
    panic!("the global DNS was read although the desired state names no name server")
}

#[test]
fn quick_look_adds_a_vlan_when_everything_else_is_in_place() {
    let look = decide(&desired("{}"), &yaml(PROFILES), &yaml(KERNEL), no_dns).unwrap();
    assert_eq!(look.keyfiles.len(), 1);
    assert_eq!(look.keyfiles[0].0, "bond0.120.nmconnection");
    assert!(look.up.contains(&"bond0.110".to_string()));
}

#[test]
fn quick_look_leaves_every_other_difference_to_the_full_read() {
    let (profiles, kernel) = (yaml(PROFILES), yaml(KERNEL));
    // A setting only the profile holds (bond option) changes too.
    let mut d = desired("{}");
    d["interfaces"][1]["link-aggregation"]["options"]["miimon"] = 200.into();
    let err = decide(&d, &profiles, &kernel, no_dns).err().unwrap();
    assert!(err.contains("the profiles differ in `interfaces`"), "{err}");
    // The kernel lacks an address the profile has.
    let mut k = kernel.clone();
    k["interfaces"][2]["ipv4"]["address"] = Value::Array(vec![]);
    let err = decide(&desired("{}"), &profiles, &k, no_dns).err().unwrap();
    assert!(err.contains("the kernel differs"), "{err}");
    // Another default gateway.
    let mut d = desired("{}");
    d["routes"]["config"][0]["next-hop-address"] = "192.0.2.254".into();
    let err = decide(&d, &profiles, &kernel, no_dns).err().unwrap();
    assert!(err.contains("differ"), "{err}");
    // A base that does not exist.
    let mut d = desired("{}");
    d["interfaces"][3]["vlan"]["base-iface"] = "bond9".into();
    let err = decide(&d, &profiles, &kernel, no_dns).err().unwrap();
    assert!(err.contains("base bond9 does not exist"), "{err}");
    // Nothing new at all.
    let err = decide(&profiles, &profiles, &kernel, no_dns).err().unwrap();
    assert!(err.contains("no new interface"), "{err}");
}

#[test]
fn quick_look_compares_name_servers_with_the_global_dns() {
    let (profiles, kernel) = (yaml(PROFILES), yaml(KERNEL));
    let global = |servers: &[&str]| {
        let mut dns = dbus::GlobalDns::default();
        dns.domains.insert(
            "*".into(),
            dbus::DomainDns {
                servers: servers.iter().map(|s| s.to_string()).collect(),
                options: vec![],
            },
        );
        move || Ok(dns)
    };
    let d = desired("{dns-resolver: {config: {server: [192.0.2.1]}}}");
    assert!(decide(&d, &profiles, &kernel, global(&["192.0.2.1"])).is_ok());
    let err = decide(&d, &profiles, &kernel, global(&["192.0.2.53"]))
        .err()
        .unwrap();
    assert!(err.contains("name servers differ"), "{err}");
}

#[test]
fn anything_else_goes_through_nmstate() {
    let current = state(CURRENT);
    for (change, why) in [
            ("interfaces:\n- {name: bond0.9, type: vlan, vlan: {base-iface: bond1, id: 9}}\n", "base bond1 does not exist"),
            ("interfaces:\n- {name: eth0, type: ethernet, mtu: 9000}\n", "eth0 is a ethernet"),
            ("interfaces:\n- {name: bond0, type: vlan, vlan: {base-iface: eth0, id: 9}}\n", "bond0 exists"),
            ("interfaces:\n- {name: d0, type: dummy, state: absent}\n", "d0 is not to be up"),
            ("interfaces:\n- {name: d0, type: dummy}\ndns-resolver: {config: {server: [192.0.2.53]}}\n", "the change has `dns-resolver`"),
            ("routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: bond0}]}\n", "the change has `routes`"),
        ] {
            let err = new_interfaces_only(&state(change), &current).unwrap_err();
            assert!(err.contains(why), "{change}: {err}");
        }
}
