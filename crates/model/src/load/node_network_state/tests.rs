use super::*;

fn read(text: &str) -> (Vec<RunningNode>, Vec<Diagnostic>) {
    let l = crate::load_texts(vec![("nns.yaml".into(), text.into())]);
    (l.running, l.diagnostics)
}

/// `oc get nns -o yaml`: a List whose items keep their configured
/// routes and name servers, not what runs beside them.
#[test]
fn a_list_of_node_network_states_is_read_per_node() {
    let (nodes, diags) = read(
        "apiVersion: v1
kind: List
items:
- apiVersion: nmstate.io/v1beta1
  kind: NodeNetworkState
  metadata: {name: master-0}
  status:
    currentState:
      dns-resolver:
        config: {search: [], server: [192.168.111.1]}
        running: {search: [example.com], server: [192.168.111.1]}
      interfaces:
      - {name: eno1, type: ethernet, state: up, mtu: 1500}
      routes:
        config: []
        running:
        - {destination: 0.0.0.0/0, next-hop-address: 192.168.111.1, next-hop-interface: br-ex}
- apiVersion: nmstate.io/v1beta1
  kind: NodeNetworkState
  metadata: {name: master-1}
  status: {currentState: {interfaces: []}}
",
    );
    assert!(diags.is_empty(), "{diags:?}");
    let names: Vec<&str> = nodes.iter().map(|n| n.name.value.as_str()).collect();
    assert_eq!(names, ["master-0", "master-1"]);
    assert_eq!(
        nodes[0].state["dns-resolver"],
        serde_json::json!({"config": {"search": [], "server": ["192.168.111.1"]}})
    );
    assert_eq!(nodes[0].state["routes"], serde_json::json!({"config": []}));
}

/// An export cut short (no `status`): located at the object, nothing
/// read for that node.
#[test]
fn a_state_without_its_current_state_is_a_located_error() {
    let (nodes, diags) = read(
        "apiVersion: nmstate.io/v1beta1\nkind: NodeNetworkState\nmetadata:\n  name: worker-3\n",
    );
    assert!(nodes.is_empty());
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code, Code::MissingField);
    assert_eq!(diags[0].span.map(|s| s.line), Some(4));
}
