use crate::rollout::rollout_counted;
use crate::{load_clean, plan_with, HostChangeKind, SharedCounts};

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
    fleet_with(n, mtu, "10.1.0.0/16", |i| {
        let k = number(i);
        (format!("10.1.{}.{}", k / 200, k % 200 + 1), "eno1")
    })
}

/// [`fleet`] in `machine_network`, host `i` with the address and boot
/// NIC `host(i)` gives.
fn fleet_with(
    n: usize,
    mtu: u32,
    machine_network: &str,
    host: impl Fn(usize) -> (String, &'static str),
) -> nodenet_model::Inventory {
    fleet_with_storage(n, mtu, machine_network, host, None)
}

/// [`fleet_with`], each host with a storage NIC (eth9, its address
/// 10.2.0.`storage(i)`) or without.
fn fleet_with_storage(
    n: usize,
    mtu: u32,
    machine_network: &str,
    host: impl Fn(usize) -> (String, &'static str),
    storage: Option<&dyn Fn(usize) -> usize>,
) -> nodenet_model::Inventory {
    let hosts: String = (0..n)
        .map(|i| {
            let (ip, boot) = host(i);
            let storage = match storage {
                Some(octet) => format!(
                    "\n    - {{name: eth9, type: ethernet, state: up, ipv4: {{enabled: true, dhcp: false, address: [{{ip: 10.2.0.{}, prefix-length: 16}}]}}}}",
                    octet(i)
                ),
                None => String::new(),
            };
            let mac = format!("52:54:00:00:{:02x}:{:02x}", i / 256, i % 256);
            let mac2 = format!("52:54:00:01:{:02x}:{:02x}", i / 256, i % 256);
            let boot_mac = if boot == "eno1" { &mac } else { &mac2 };
            format!(
                "- name: node-{i:03}
  role: worker
  bootMACAddress: '{boot_mac}'
  nics: {{eno1: '{mac}', eno2: '{mac2}'}}
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up, mac-address: '{mac}', mtu: {mtu}}}
    - {{name: eno2, type: ethernet, state: up, mtu: {mtu}}}
    - name: bond0
      type: bond
      state: up
      mtu: {mtu}
      link-aggregation: {{mode: 802.3ad, port: [eno1, eno2]}}
      ipv4: {{enabled: true, dhcp: false, address: [{{ip: {ip}, prefix-length: 16}}]}}{storage}
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
        "nodenet: v1\ncluster: {{name: c, baseDomain: example.com, machineNetworks: [{machine_network}]}}\nhosts:\n{hosts}"
    ))
}

/// The plan compared once per pair of shapes, and host by host: the same
/// plan, every field of every change, every risk and reason; and how many
/// hosts took their group's diff and their subgroup's risk.
fn both_ways(old: &nodenet_model::Inventory, new: &nodenet_model::Inventory) -> SharedCounts {
    let (by_shape, shared) = plan_with(old, new, true).unwrap();
    let (alone, none) = plan_with(old, new, false).unwrap();
    assert_eq!(none, SharedCounts::default());
    // Every field but `alike` (the last), which only the first has.
    let unnumbered = |p: &crate::Plan| -> Vec<String> {
        p.changes
            .iter()
            .map(|c| {
                let text = format!("{c:?}");
                text[..text.rfind(", alike: ").expect("the last field")].to_string()
            })
            .collect()
    };
    assert_eq!(unnumbered(&by_shape), unnumbered(&alone));
    assert_eq!(
        format!("{:?}", by_shape.cluster),
        format!("{:?}", alone.cluster)
    );
    // The rollout too, every policy and its state.
    let (rollout, _) = rollout_counted(&by_shape, new);
    let (rollout_alone, none) = rollout_counted(&alone, new);
    assert_eq!(none, 0);
    assert_eq!(format!("{rollout:#?}"), format!("{rollout_alone:#?}"));
    shared
}

/// How many hosts' rollout deltas were lent them by a host alike.
fn lent(old: &nodenet_model::Inventory, new: &nodenet_model::Inventory) -> usize {
    let (plan, _) = plan_with(old, new, true).unwrap();
    rollout_counted(&plan, new).1
}

#[test]
fn a_fleet_changed_alike_takes_its_first_hosts_diff() {
    let (old, new) = (fleet(70, 9000, &[]), fleet(70, 8000, &[]));
    // 70 hosts: the first, the second, the 64th and the last are compared
    // themselves.
    let shared = both_ways(&old, &new);
    assert_eq!(shared.diffs, 66);
    // One subgroup: the same four hosts are classified themselves, and
    // work their rollout out themselves.
    assert_eq!(shared.risks, 66);
    assert_eq!(lent(&old, &new), 66);
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
    assert_eq!(both_ways(&old, &new).diffs, 65);
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
    assert_eq!(both_ways(&old, &new), SharedCounts::default());
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
    assert_eq!(both_ways(&old, &new), SharedCounts::default());
}

#[test]
fn small_fleets_and_unchanged_hosts_are_compared_host_by_host() {
    let none = SharedCounts::default();
    assert_eq!(both_ways(&fleet(3, 9000, &[]), &fleet(3, 8000, &[])), none);
    assert_eq!(
        both_ways(&fleet(70, 9000, &[]), &fleet(70, 9000, &[])),
        none
    );
}

/// One diff, risks that differ: hosts whose address is outside the
/// machine network (their bond carries only the default route), and hosts
/// that boot from the other NIC (the PXE NIC is the one whose MTU change
/// is disruptive of itself). Each kind is its own subgroup, and every host
/// gets the risk and reasons it gets alone.
#[test]
fn hosts_of_one_diff_whose_traffic_differs_take_their_own_kinds_risk() {
    // The machine network is 10.1.0.0/17: every third host is numbered
    // past it (below the name server and the gateway all the same, so
    // that its values compare as the others' do).
    let host = |i: usize| {
        let ip = match i % 3 {
            0 => format!("10.1.200.{}", i + 1),
            _ => format!("10.1.0.{}", i + 1),
        };
        (ip, if i.is_multiple_of(2) { "eno1" } else { "eno2" })
    };
    let net = "10.1.0.0/17";
    let (old, new) = (
        fleet_with(140, 9000, net, host),
        fleet_with(140, 8000, net, host),
    );
    let shared = both_ways(&old, &new);
    // The group's first, second, 64th, 128th and last are compared.
    assert_eq!(shared.diffs, 135);
    // Four subgroups (in the machine network or past it, booting from
    // eno1 or eno2) of 23 to 47 hosts, each with its first, second and
    // last classified itself.
    assert_eq!(shared.risks, 140 - 4 * 3);
    assert_eq!(lent(&old, &new), 140 - 4 * 3);
    let (plan, _) = plan_with(&old, &new, true).unwrap();
    let reasons = |i: usize| format!("{:?}", plan.changes[i].reasons);
    assert!(
        reasons(3).contains("carries the default route"),
        "{}",
        reasons(3)
    );
    assert!(reasons(1).contains("machine network"), "{}", reasons(1));
    assert!(
        reasons(1).contains("`eno2`, which is the PXE"),
        "{}",
        reasons(1)
    );
    assert!(
        reasons(2).contains("`eno1`, which is the PXE"),
        "{}",
        reasons(2)
    );
}

/// 70 hosts with a storage NIC and without: each its own storage
/// address, but for the hosts a group works out itself (the first,
/// second, 64th and last), which share one.
fn with_and_without_storage() -> (nodenet_model::Inventory, nodenet_model::Inventory) {
    let host = |i: usize| (format!("10.1.0.{}", i + 1), "eno1");
    let net = "10.1.0.0/16";
    let octet = |i: usize| {
        if [0, 1, 64, 69].contains(&i) {
            200
        } else {
            i + 1
        }
    };
    (
        fleet_with_storage(70, 9000, net, host, Some(&octet)),
        fleet_with_storage(70, 9000, net, host, None),
    )
}

/// Removing a NIC in use says what uses it: the host's own address. Such
/// an outcome is no other host's, even where the hosts classified
/// themselves share that address.
#[test]
fn a_risk_that_names_a_hosts_own_address_is_no_other_hosts() {
    let (old, new) = with_and_without_storage();
    let shared = both_ways(&old, &new);
    assert_eq!(shared.diffs, 66);
    assert_eq!(shared.risks, 0);
    let (plan, _) = plan_with(&old, &new, true).unwrap();
    let reasons = format!("{:?}", plan.changes[42].reasons);
    assert!(reasons.contains("has the address 10.2.0.43"), "{reasons}");
}

/// A NIC added: the diff and the risk name no address, but the policy
/// carries the NIC whole, its own address in it. Its deltas are no other
/// host's, even where the hosts worked out themselves share that address.
#[test]
fn rollout_deltas_that_carry_a_hosts_own_address_are_its_own() {
    let (new, old) = with_and_without_storage();
    let shared = both_ways(&old, &new);
    assert_eq!((shared.diffs, shared.risks), (66, 66));
    assert_eq!(lent(&old, &new), 0);
}
