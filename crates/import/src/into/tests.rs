use super::*;

const COMMENTED: &str = "# The lab cluster.
nodenet: v1
cluster: {name: lab, machineNetworks: [10.0.0.0/24]}   # flow map, kept
hosts:
# masters first
- name: m0
  role: master
  nics: {eno1: '52:54:00:00:00:01'}
  network:
    interfaces:
    - {name: eno1, type: ethernet, state: up}   # old
  # a comment after m0's network
- name: w0    # no network yet
  role: worker
- {name: w1, role: worker}
# the end
";

fn state() -> serde_json::Value {
    serde_json::json!({"interfaces": [{"name": "eno2", "type": "ethernet", "state": "up"}]})
}

fn edit(host: &str) -> String {
    let root = yaml::parse(COMMENTED, 0).unwrap();
    edit_in_place(COMMENTED, &root, host, &state()).expect("edited in place")
}

fn network_of(text: &str, host: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_yaml::from_str(text).unwrap();
    doc["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == host)
        .unwrap()["network"]
        .clone()
}

/// The lines of `a` that are not in `b`, and of `b` not in `a`, by
/// position after the common head and tail.
fn changed(a: &str, b: &str) -> (Vec<String>, Vec<String>) {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (
        a[head..a.len() - tail]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        b[head..b.len() - tail]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    )
}

#[test]
fn a_hosts_network_is_replaced_and_nothing_else() {
    let out = edit("m0");
    assert_eq!(network_of(&out, "m0"), state());
    let (removed, added) = changed(COMMENTED, &out);
    assert_eq!(
        removed,
        ["    - {name: eno1, type: ethernet, state: up}   # old"]
    );
    assert_eq!(
        added,
        [
            "    - name: eno2",
            "      type: ethernet",
            "      state: up"
        ]
    );
}

#[test]
fn a_network_is_added_to_a_host_without_one() {
    let out = edit("w0");
    assert_eq!(network_of(&out, "w0"), state());
    let (removed, added) = changed(COMMENTED, &out);
    assert!(removed.is_empty(), "{removed:?}");
    assert_eq!(added[0], "  network:");
}

#[test]
fn a_new_host_goes_after_the_last_entry() {
    let out = edit("w2");
    assert_eq!(network_of(&out, "w2"), state());
    let (removed, added) = changed(COMMENTED, &out);
    assert!(removed.is_empty(), "{removed:?}");
    assert_eq!(added[..2], ["- name: w2", "  network:"]);
    // Every other host as it was.
    assert_eq!(network_of(&out, "m0"), network_of(COMMENTED, "m0"));
}

#[test]
fn a_host_written_as_a_flow_map_is_left_to_a_rewrite() {
    let root = yaml::parse(COMMENTED, 0).unwrap();
    assert_eq!(edit_in_place(COMMENTED, &root, "w1", &state()), None);
    let whole = rewrite(COMMENTED, "w1", &state()).unwrap();
    assert_eq!(network_of(&whole, "w1"), state());
}
