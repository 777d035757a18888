use super::*;

fn state(text: &str) -> Node {
    nodenet_model::yaml::parse(text, 0).expect("yaml")
}

fn first_error(network: &Node) -> String {
    serde_json::from_value::<NetworkState>(network.to_json())
        .expect_err("nmstate refuses it")
        .to_string()
}

#[test]
fn every_refused_key_is_found_at_its_own_line() {
    let n = state(
            "interfaces:\n- name: bond0\n  type: bond\n  ipv6:\n    enabled: false\n    link-aggregation:\n      mode: active-backup\n      port: [eth0, eth1]\n  ipv4:\n    enabled: true\n    prefix-length: 24\n    address:\n    - ip: 10.0.0.1\n      prefix-length: 24\n- name: bond1\n  type: bond\n  link-aggregation:\n    mode: active-backup\n    slaves: [eth2, eth3]\n",
        );
    let found = unknown_fields(&n, &first_error(&n));
    let got: Vec<(String, u32, String)> = found
        .iter()
        .map(|(m, _)| (m.key.clone(), m.span.line, m.within.clone()))
        .collect();
    let mut got_sorted = got.clone();
    got_sorted.sort_by_key(|g| g.1);
    assert_eq!(
        got_sorted,
        vec![
            ("link-aggregation".into(), 6, "ipv6".into()),
            ("prefix-length".into(), 11, "ipv4".into()),
            ("slaves".into(), 19, "link-aggregation".into()),
        ]
    );
    let hints: Vec<Option<String>> = found
        .iter()
        .map(|(m, _)| belongs(m, Some("bond")))
        .collect();
    assert!(hints.iter().all(Option::is_some), "{hints:?}");
}

#[test]
fn keys_are_found_when_nmstate_first_misses_what_they_belong_to() {
    // The address entry lacks the prefix length written beside it:
    // nmstate says `missing field`, not the keys nested wrong.
    let n = state(
            "interfaces:\n- name: bond99\n  type: bond\n  state: up\n  ipv6:\n    address:\n    - ip: 2001:db8::4\n    prefix-length: 32\n    enabled: true\n    link-aggregation:\n      mode: balance-rr\n      slaves: [eth0, eth1]\n",
        );
    let first = first_error(&n);
    assert!(first.starts_with("missing field"), "{first}");
    let mut got: Vec<(String, u32)> = unknown_fields(&n, &first)
        .into_iter()
        .map(|(m, _)| (m.key, m.span.line))
        .collect();
    got.sort_by_key(|g| g.1);
    assert_eq!(
        got,
        vec![
            ("prefix-length".into(), 8),
            ("link-aggregation".into(), 10),
            ("slaves".into(), 12),
        ]
    );
}

#[test]
fn a_key_legal_elsewhere_is_found_where_nmstate_refuses_it() {
    // `mtu` is the interface's, refused under `vlan`; the interface's
    // own `mtu` above it is fine.
    let n = state(
            "interfaces:\n- name: eth1.5\n  type: vlan\n  mtu: 1500\n  vlan:\n    base-iface: eth1\n    id: 5\n    mtu: 9000\n",
        );
    let found = unknown_fields(&n, &first_error(&n));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0.span.line, 8);
    assert_eq!(found[0].0.within, "vlan");
}
