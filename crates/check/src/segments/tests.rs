use super::*;

fn inventory(text: &str) -> Inventory {
    nodenet_model::load_texts(vec![("c.yaml".into(), text.into())]).inventory
}

fn host(name: &str, ip: &str, vlan: u16, mtu: Option<u16>) -> String {
    let mtu = mtu.map(|m| format!("      mtu: {m}\n")).unwrap_or_default();
    format!(
        "- name: {name}
  role: worker
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up}}
    - name: eno1.{vlan}
      type: vlan
      state: up
{mtu}      vlan: {{base-iface: eno1, id: {vlan}}}
      ipv4: {{enabled: true, address: [{{ip: {ip}, prefix-length: 24}}]}}
"
    )
}

fn findings(hosts: &[String]) -> Vec<(Code, bool, String, usize)> {
    let text = format!(
            "nodenet: v1\ncluster: {{name: c, baseDomain: example.com, machineNetworks: [10.0.0.0/24]}}\nhosts:\n{}",
            hosts.concat()
        );
    let inv = inventory(&text);
    let nets: Vec<Option<Network>> = inv
        .hosts
        .iter()
        .map(|h| h.network.as_ref().map(Network::read))
        .collect();
    let states: Vec<Option<&Network>> = nets.iter().map(Option::as_ref).collect();
    let mut out = Vec::new();
    check(&inv, &states, &mut out);
    out.iter()
        .map(|d| {
            let line = d.span.unwrap().line as usize;
            (
                d.code,
                d.is_error(),
                d.host.clone().unwrap_or_default(),
                line,
            )
        })
        .collect()
}

#[test]
fn one_host_with_another_mtu_on_the_machine_network_is_an_error_at_its_mtu() {
    let d = findings(&[
        host("a", "10.0.0.1", 110, Some(9000)),
        host("b", "10.0.0.2", 110, None),
        host("c", "10.0.0.3", 110, None),
    ]);
    // Once (its subnet and its VLAN are one segment), at a's `mtu:`.
    assert_eq!(d, vec![(Code::SegmentMtuMismatch, true, "a".into(), 12)]);
}

#[test]
fn one_mtu_everywhere_is_clean_and_another_network_only_warns() {
    assert_eq!(
        findings(&[
            host("a", "10.0.0.1", 110, Some(9000)),
            host("b", "10.0.0.2", 110, Some(9000))
        ]),
        vec![]
    );
    let d = findings(&[
        host("a", "10.9.0.1", 120, None),
        host("b", "10.9.0.2", 120, Some(9000)),
        host("c", "10.9.0.3", 120, None),
    ]);
    assert!(
        d.iter()
            .all(|(c, error, h, _)| *c == Code::SegmentMtuMismatch && !error && h == "b"),
        "{d:?}"
    );
}

#[test]
fn a_subnet_over_two_vlans_and_a_vlan_with_two_subnets_warn_at_the_odd_host() {
    let d = findings(&[
        host("a", "10.0.0.1", 110, None),
        host("b", "10.0.0.2", 110, None),
        host("c", "10.0.0.3", 111, None),
        host("d", "10.0.1.4", 110, None),
    ]);
    let vlan: Vec<&(Code, bool, String, usize)> = d
        .iter()
        .filter(|f| f.0 == Code::SegmentVlanMismatch)
        .collect();
    let hosts: Vec<&str> = vlan.iter().map(|f| f.2.as_str()).collect();
    assert_eq!(hosts, ["c", "d"], "{d:?}");
    assert!(vlan.iter().all(|f| !f.1));
}
