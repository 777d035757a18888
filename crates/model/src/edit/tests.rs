use super::*;

const INV: &str = "nodenet: v1   # lab
hosts:
- name: m0
  nics: {eno1: '52:54:00:00:00:01', eno2: ''}   # second NIC unknown
- name: m1
  nics:
    eno1: '52:54:00:00:01:01'
    eno2:        # to find
- name: m2
  nics:
  - {name: eno1, mac: '52:54:00:00:02:01'}
  - {name: eno2}
- name: m3
  nics:
  - name: eno2
    switch: leaf-1
";

/// Only line `n` (1-based) differs, and it reads `want`; or one line,
/// `want`, was inserted after it.
fn only_changed(after: &str, n: usize, want: &str) {
    let (a, b): (Vec<&str>, Vec<&str>) = (INV.lines().collect(), after.lines().collect());
    if a.len() == b.len() {
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            if i + 1 == n {
                assert_eq!(*y, want);
            } else {
                assert_eq!(x, y, "line {}", i + 1);
            }
        }
    } else {
        assert_eq!(b.len(), a.len() + 1);
        assert_eq!(a[..n], b[..n]);
        assert_eq!(b[n], want);
        assert_eq!(a[n..], b[n + 1..]);
    }
}

fn mac_of(text: &str, host: usize, nic: &str) -> serde_json::Value {
    let root = crate::yaml::parse(text, 0).unwrap().to_json();
    let nics = &root["hosts"][host]["nics"];
    match nics.as_array() {
        Some(list) => list.iter().find(|n| n["name"] == nic).unwrap()["mac"].clone(),
        None => nics[nic].clone(),
    }
}

#[test]
fn a_flow_map_value() {
    let out = set_nic_mac(INV, "m0", "eno2", "52:54:00:00:00:02").unwrap();
    only_changed(
        &out,
        4,
        "  nics: {eno1: '52:54:00:00:00:01', eno2: \"52:54:00:00:00:02\"}   # second NIC unknown",
    );
    assert_eq!(mac_of(&out, 0, "eno2"), "52:54:00:00:00:02");
}

#[test]
fn a_block_map_value_keeps_its_comment() {
    let out = set_nic_mac(INV, "m1", "eno2", "52:54:00:00:01:02").unwrap();
    only_changed(&out, 8, "    eno2: \"52:54:00:00:01:02\" # to find");
    assert_eq!(mac_of(&out, 1, "eno2"), "52:54:00:00:01:02");
}

#[test]
fn list_entries_flow_and_block() {
    let out = set_nic_mac(INV, "m2", "eno2", "52:54:00:00:02:02").unwrap();
    only_changed(&out, 12, "  - {name: eno2, mac: \"52:54:00:00:02:02\"}");
    let out = set_nic_mac(INV, "m3", "eno2", "52:54:00:00:03:02").unwrap();
    only_changed(&out, 15, "    mac: \"52:54:00:00:03:02\"");
    assert_eq!(mac_of(&out, 3, "eno2"), "52:54:00:00:03:02");
}

#[test]
fn what_is_not_edited_says_why() {
    assert!(set_nic_mac(INV, "m0", "eno1", "52:54:00:00:00:09")
        .unwrap_err()
        .contains("has a MAC already"));
    assert!(set_nic_mac(INV, "m9", "eno1", "52:54:00:00:00:09")
        .unwrap_err()
        .contains("not written out"));
}
