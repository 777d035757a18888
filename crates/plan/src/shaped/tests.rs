use crate::{load_clean, plan_with, HostChangeKind};

/// `n` workers, each with its own address and MAC, their bond at `mtu`;
/// the hosts in `renumbered` have another address than in a fleet
/// where no host is.
fn fleet(n: usize, mtu: u32, renumbered: &[usize]) -> nodenet_model::Inventory {
    fleet_numbered(
        n,
        mtu,
        |i| {
            if renumbered.contains(&i) {
                5000 + i
            } else {
                i
            }
        },
    )
}

/// [`fleet`], host `i` with the `number(i)`-th address.
fn fleet_numbered(n: usize, mtu: u32, number: impl Fn(usize) -> usize) -> nodenet_model::Inventory {
    let hosts: String = (0..n)
        .map(|i| {
            let k = number(i);
            let ip = format!("10.1.{}.{}", k / 200, k % 200 + 1);
            let mac = format!("52:54:00:00:{:02x}:{:02x}", i / 256, i % 256);
            format!(
                "- name: node-{i:03}
  role: worker
  nics: {{eno1: '{mac}'}}
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up, mac-address: '{mac}', mtu: {mtu}}}
    - {{name: eno2, type: ethernet, state: up, mtu: {mtu}}}
    - name: bond0
      type: bond
      state: up
      mtu: {mtu}
      link-aggregation: {{mode: 802.3ad, port: [eno1, eno2]}}
      ipv4: {{enabled: true, dhcp: false, address: [{{ip: {ip}, prefix-length: 16}}]}}
    dns-resolver:
      config: {{server: [10.1.255.1]}}
    routes:
      config:
      - {{destination: 0.0.0.0/0, next-hop-address: 10.1.255.254, next-hop-interface: bond0}}
"
            )
        })
        .collect();
    load_clean(format!(
        "nodenet: v1\ncluster: {{name: c, baseDomain: example.com, machineNetworks: [10.1.0.0/16]}}\nhosts:\n{hosts}"
    ))
}

/// The plan compared once per pair of shapes, and host by host: the same
/// plan, every field of every change; and how many hosts took their
/// group's diff.
fn both_ways(old: &nodenet_model::Inventory, new: &nodenet_model::Inventory) -> usize {
    let (by_shape, shared) = plan_with(old, new, true).unwrap();
    let (alone, none) = plan_with(old, new, false).unwrap();
    assert_eq!(none, 0);
    assert_eq!(format!("{by_shape:#?}"), format!("{alone:#?}"));
    shared
}

#[test]
fn a_fleet_changed_alike_takes_its_first_hosts_diff() {
    let (old, new) = (fleet(70, 9000, &[]), fleet(70, 8000, &[]));
    // 70 hosts: the first, the second, the 64th and the last are compared
    // themselves.
    assert_eq!(both_ways(&old, &new), 66);
    let (plan, _) = plan_with(&old, &new, true).unwrap();
    assert_eq!(plan.changes.len(), 70);
    let diff = plan.changes[42].network.as_ref().unwrap();
    let mtu: Vec<_> = diff.interfaces.iter().map(|i| &i.fields[0]).collect();
    assert!(
        mtu.iter()
            .all(|f| f.path == "mtu" && f.actual == 9000 && f.desired == 8000),
        "{diff:#?}"
    );
}

#[test]
fn a_host_whose_values_compare_otherwise_is_compared_alone() {
    // node-030 is renumbered as well: its OLD and NEW addresses differ,
    // where every other host keeps its own.
    let (old, new) = (fleet(70, 9000, &[]), fleet(70, 8000, &[30]));
    assert_eq!(both_ways(&old, &new), 65);
    let (plan, _) = plan_with(&old, &new, true).unwrap();
    let text = serde_json::to_string(&plan.changes[30]).unwrap();
    assert!(text.contains("10.1.25.31"), "{text}");
    assert_eq!(plan.changes[30].change, HostChangeKind::Modified);
}

#[test]
fn diffs_that_hold_a_hosts_own_values_are_compared_host_by_host() {
    // Every host renumbered: each diff names the host's own addresses.
    let all: Vec<usize> = (0..70).collect();
    let (old, new) = (fleet(70, 9000, &[]), fleet(70, 9000, &all));
    assert_eq!(both_ways(&old, &new), 0);
}

/// Hosts whose diffs name their addresses, where the hosts compared
/// themselves (the first, second, 64th and last) happen to share theirs:
/// their diffs agree, and are still no other host's.
#[test]
fn a_diff_with_an_address_is_no_other_hosts_even_where_the_sample_agrees() {
    let sampled = [0, 1, 64, 69];
    let number = |shift: usize| {
        move |i: usize| {
            if sampled.contains(&i) {
                3 + shift
            } else {
                i + shift
            }
        }
    };
    let (old, new) = (
        fleet_numbered(70, 9000, number(0)),
        fleet_numbered(70, 9000, number(1000)),
    );
    assert_eq!(both_ways(&old, &new), 0);
}

#[test]
fn small_fleets_and_unchanged_hosts_are_compared_host_by_host() {
    assert_eq!(both_ways(&fleet(3, 9000, &[]), &fleet(3, 8000, &[])), 0);
    assert_eq!(both_ways(&fleet(70, 9000, &[]), &fleet(70, 9000, &[])), 0);
}
