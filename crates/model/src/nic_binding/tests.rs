use super::*;
use crate::inventory::Located;

fn nic(name: &str, mac: &str) -> Nic {
    Nic::new(
        Located::new(name.into(), Span::default()),
        Some(Located::new(mac.into(), Span::default())),
    )
}

#[test]
fn pinned_nics_get_a_link_file_each_matched_by_permanent_and_current_mac() {
    let nics = [
        nic("eno1", "52:54:00:AA:00:01"),
        Nic::new(Located::new("eno9".into(), Span::default()), None),
    ];
    let files = link_files("master-0", &nics);
    assert_eq!(files.len(), 1, "a NIC without a MAC cannot be pinned");
    assert_eq!(files[0].file_name, "10-nodenet-eno1-525400aa0001.link");
    let lines: Vec<&str> = files[0]
        .text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect();
    assert_eq!(
        lines,
        [
            "[Match]",
            "PermanentMACAddress=52:54:00:aa:00:01",
            "MACAddress=52:54:00:aa:00:01",
            "",
            "[Link]",
            "Name=eno1"
        ]
    );
}

#[test]
fn ethernet_and_port_only_nics_are_bound_by_their_macs() {
    let state = crate::yaml::parse(
            "interfaces:\n- {name: eno1, type: ethernet, state: up}\n- {name: eno3, type: ethernet, state: up, mac-address: \"02:00:00:00:00:09\"}\n- name: bond0\n  type: bond\n  link-aggregation: {mode: active-backup, port: [eno1, eno2]}\n- {name: bond0.10, type: vlan, vlan: {base-iface: bond0, id: 10}}\n",
            0,
        )
        .unwrap();
    let nics = [
        nic("eno1", "52:54:00:00:00:01"),
        nic("eno2", "52:54:00:00:00:02"),
        nic("eno3", "52:54:00:00:00:03"),
    ];
    let bound = bind_by_mac(&state, &nics).to_json();
    let ifaces = bound["interfaces"].as_array().unwrap();
    assert_eq!(ifaces[0]["identifier"], "mac-address");
    assert_eq!(ifaces[0]["mac-address"], "52:54:00:00:00:01".to_uppercase());
    assert_eq!(ifaces[0]["profile-name"], "eno1");
    // eno3 clones another MAC: bound by name as written.
    assert!(ifaces[1].get("identifier").is_none(), "{bound}");
    assert!(ifaces[2].get("identifier").is_none(), "{bound}");
    // eno2, only a port of bond0, gets an entry of its own.
    assert_eq!(ifaces.len(), 5, "{bound}");
    assert_eq!(ifaces[4]["name"], "eno2");
    assert_eq!(ifaces[4]["identifier"], "mac-address");
    assert_eq!(ifaces[4]["mac-address"], "52:54:00:00:00:02".to_uppercase());
}
