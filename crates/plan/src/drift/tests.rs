use super::*;

fn old() -> Inventory {
    let text = "nodenet: v1
cluster: {name: c, baseDomain: example.com, machineNetworks: [10.0.0.0/24], brEx: none}
hosts:
- name: w0
  role: worker
  network:
    interfaces:
    - {name: eno1, type: ethernet, state: up, mtu: 9000, ipv4: {enabled: true, address: [{ip: 10.0.0.10, prefix-length: 24}]}}
    dns-resolver: {config: {server: [10.0.0.1]}}
- name: w1
  role: worker
";
    nodenet_model::load_texts(vec![("c.yaml".into(), text.into())]).inventory
}

fn nns(name: &str, mtu: u32) -> String {
    format!(
            "- apiVersion: nmstate.io/v1beta1
  kind: NodeNetworkState
  metadata: {{name: {name}}}
  status:
    currentState:
      dns-resolver: {{config: {{search: [], server: [10.0.0.1]}}, running: {{server: [10.0.0.1]}}}}
      routes: {{config: [], running: [{{destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: eno1}}]}}
      interfaces:
      - {{name: lo, type: loopback, state: up, mtu: 65536}}
      - name: eno1
        type: ethernet
        state: up
        mtu: {mtu}
        mac-address: 52:54:00:00:00:01
        ipv4: {{enabled: true, dhcp: false, auto-dns: true, address: [{{ip: 10.0.0.10, prefix-length: 24}}]}}
        ipv6: {{enabled: true, autoconf: true, dhcp: true, address: [{{ip: 'fe80::5054:ff:fe00:1', prefix-length: 64}}]}}
"
        )
}

fn running(items: &[String]) -> Vec<RunningNode> {
    let text = format!("apiVersion: v1\nkind: List\nitems:\n{}", items.concat());
    let l = nodenet_model::load_texts(vec![("nns.yaml".into(), text)]);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    l.running
}

/// What the node has beyond what OLD says (its loopback, IPv6 it was
/// left to, routes learned) is its own; an MTU set by hand is drift.
#[test]
fn a_node_changed_by_hand_drifts_and_the_rest_is_its_own() {
    let d = drift(&old(), &running(&[nns("w0", 9000)])).unwrap();
    assert!(d.is_empty(), "{}", render_text(&d));
    assert_eq!(
        (d.as_described, d.unreported.clone()),
        (1, vec!["w1".to_string()])
    );
    let d = drift(&old(), &running(&[nns("w0", 1500)])).unwrap();
    let text = render_text(&d);
    assert!(text.contains("! w0 (node w0)"), "{text}");
    assert!(text.contains("mtu: 1500 -> 9000"), "{text}");
}

#[test]
fn a_node_the_inventory_lacks_is_an_error_at_its_name() {
    let errors = drift(&old(), &running(&[nns("w9", 9000)])).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, Code::NodeUnknown);
    assert_eq!(errors[0].span.map(|s| s.line), Some(6));
}
