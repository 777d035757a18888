use crate::{Code, Loaded};

const IC: &str = "apiVersion: v1\nbaseDomain: example.com\nmetadata: {name: c}\nplatform:\n  baremetal:\n    hosts:\n    - name: m0\n      role: master\n      bootMACAddress: '52:54:00:00:00:01'\n      networkConfig:\n        interfaces:\n        - {name: eno1, type: ethernet, mac-address: '52:54:00:00:00:01', ipv4: {enabled: true, address: [{ip: 10.0.0.21, prefix-length: 24}]}}\n";

fn agent(ip: &str, mac: &str) -> String {
    format!("apiVersion: v1beta1\nkind: AgentConfig\nmetadata: {{name: c}}\nhosts:\n- hostname: m0\n  role: master\n  interfaces: [{{name: eno1, macAddress: '{mac}'}}]\n  networkConfig:\n    interfaces:\n    - {{name: eno1, type: ethernet, ipv4: {{enabled: true, address: [{{ip: {ip}, prefix-length: 24}}]}}}}\n")
}

fn load(agent: String) -> Loaded {
    crate::load_texts(vec![
        ("ic.yaml".into(), IC.into()),
        ("ac.yaml".into(), agent),
    ])
}

fn conflicts(l: &Loaded) -> Vec<String> {
    l.diagnostics
        .iter()
        .filter(|d| d.code == Code::Conflict)
        .map(|d| d.message.clone())
        .collect()
}

#[test]
fn the_same_host_in_two_inputs_is_one_host() {
    let l = load(agent("10.0.0.21", "52:54:00:00:00:01"));
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    assert_eq!(l.inventory.hosts.len(), 1);
}

#[test]
fn different_addresses_are_a_conflict_at_the_later_input() {
    let l = load(agent("10.0.0.22", "52:54:00:00:00:01"));
    let c = conflicts(&l);
    assert_eq!(c.len(), 1, "{:?}", l.diagnostics);
    assert!(
        c[0].contains("addresses 10.0.0.22/24 here but addresses 10.0.0.21/24 in ic.yaml:12:"),
        "{}",
        c[0]
    );
    let d = l
        .diagnostics
        .iter()
        .find(|d| d.code == Code::Conflict)
        .unwrap();
    assert_eq!(l.sources.name(d.span.unwrap().file), "ac.yaml");
    assert_eq!(l.inventory.hosts.len(), 1);
}

#[test]
fn a_nic_with_another_mac_is_a_conflict() {
    let l = load(agent("10.0.0.21", "52:54:00:00:00:09"));
    let c = conflicts(&l);
    // The NIC eno1 (pinned in install-config's state) and the boot MAC
    // both disagree with agent-config's NIC table.
    assert!(c.iter().any(|m| m.contains("the MAC of `eno1`")), "{c:?}");
}
