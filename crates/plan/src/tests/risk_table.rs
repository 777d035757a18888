//! The risk classes over a table of changes, each from the same host;
//! and (`plan_sees_render`) the plan against what render writes.

use crate::{plan, rollout::rollout, HostChangeKind, Risk};

/// One host: two NICs in an 802.3ad bond carrying VLAN 110 with the
/// machine-network address and the default route; eno3 with a storage
/// address; eno4 unused. `edit` rewrites the network text.
fn inventory(role: &str, network: &str) -> String {
    let indented: String = network.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "nodenet: v1\ncluster: {{name: c, baseDomain: example.com, machineNetworks: [192.168.111.0/24]}}\nhosts:\n- name: node-0\n  role: {role}\n  nics: {{eno1: '52:54:00:00:00:01', eno2: '52:54:00:00:00:02', eno3: '52:54:00:00:00:03', eno4: '52:54:00:00:00:04'}}\n  network:\n{indented}"
    )
}

const BASE: &str = r#"interfaces:
- {name: eno1, type: ethernet, state: up}
- {name: eno2, type: ethernet, state: up}
- {name: eno3, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 10.9.0.20, prefix-length: 24}]}}
- {name: eno4, type: ethernet, state: up, mtu: 1500}
- name: bond0
  type: bond
  state: up
  mtu: 1500
  link-aggregation: {mode: 802.3ad, port: [eno1, eno2]}
- name: bond0.110
  type: vlan
  state: up
  vlan: {base-iface: bond0, id: 110}
  ipv4: {enabled: true, address: [{ip: 192.168.111.20, prefix-length: 24}]}
dns-resolver:
  config: {server: [192.168.111.1]}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 192.168.111.1, next-hop-interface: bond0.110}
"#;

fn load(text: String) -> nodenet_model::Loaded {
    let l = nodenet_model::load_texts(vec![("inv.yaml".into(), text)]);
    let errors: Vec<_> = l.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    l
}

/// The risk of going from BASE to `new` (and from `role` master to
/// `new_role`), with its reasons.
fn risk_of(new: &str, new_role: &str) -> (Risk, Vec<String>) {
    let old = load(inventory("master", BASE));
    let new = load(inventory(new_role, new));
    let p = plan(&old.inventory, &new.inventory).unwrap();
    assert_eq!(p.changes.len(), 1, "{p:?}");
    let c = &p.changes[0];
    assert_eq!(c.change, HostChangeKind::Modified);
    (c.risk, c.reasons.iter().map(|r| r.what.clone()).collect())
}

fn with(extra: &str) -> String {
    BASE.replace("dns-resolver:", &format!("{extra}dns-resolver:"))
}

#[test]
fn risk_classes_over_a_table_of_changes() {
    use Risk::*;
    let table: Vec<(&str, String, &str, Risk, &str)> = vec![
        // bond0 carries VLAN 110 and the machine network: a VLAN beside
        // them shares its ports.
        ("new VLAN on the bond, no address", with("- {name: bond0.120, type: vlan, state: up, vlan: {base-iface: bond0, id: 120}}\n"), "master", Modifying, "adds `bond0.120` (vlan) on `bond0`, which is beneath `bond0.110`"),
        ("new VLAN on an unused NIC", with("- {name: eno4.30, type: vlan, state: up, vlan: {base-iface: eno4, id: 30}}\n"), "master", Additive, "nothing else uses"),
        ("new bond on an unused NIC", with("- {name: bond1, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eno4]}}\n"), "master", Additive, "adds `bond1`"),
        ("new bridge taking a port of the uplink bond", with("- {name: br1, type: linux-bridge, state: up, bridge: {port: [{name: eno2}]}}\n"), "master", Disruptive, "taking `eno2`"),
        ("new bridge taking the storage NIC", with("- {name: br1, type: linux-bridge, state: up, bridge: {port: [{name: eno3}]}}\n"), "master", Disruptive, "has the address 10.9.0.20"),
        ("MTU of an unused NIC", BASE.replace("mtu: 1500}", "mtu: 9000}"), "master", Modifying, "changes mtu of `eno4`, which carries no cluster traffic"),
        ("MTU of the uplink bond", BASE.replace("  mtu: 1500\n", "  mtu: 9000\n"), "master", Disruptive, "changes mtu of `bond0`, which is beneath `bond0.110`, which carries the machine network"),
        ("storage address", BASE.replace("10.9.0.20", "10.9.0.21"), "master", Modifying, "changes ipv4.address of `eno3`"),
        ("new route through the storage NIC", BASE.replace("  - {destination: 0.0.0.0/0", "  - {destination: 10.50.0.0/16, next-hop-address: 10.9.0.1, next-hop-interface: eno3}\n  - {destination: 0.0.0.0/0"), "master", Additive, "adds the route 10.50.0.0/16 via 10.9.0.1 dev eno3"),
        ("default route", BASE.replace("next-hop-address: 192.168.111.1,", "next-hop-address: 192.168.111.254,"), "master", Disruptive, "the default route"),
        ("unused NIC removed", BASE.replace("- {name: eno4, type: ethernet, state: up, mtu: 1500}\n", ""), "master", Modifying, "removes unused `eno4`"),
        ("storage NIC removed", BASE.replace("- {name: eno3, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 10.9.0.20, prefix-length: 24}]}}\n", ""), "master", Disruptive, "removes `eno3`, which is in use"),
        ("name servers", BASE.replace("server: [192.168.111.1]", "server: [192.168.111.2]"), "master", Modifying, "name servers"),
        ("bond mode", BASE.replace("mode: 802.3ad", "mode: active-backup"), "master", Disruptive, "link-aggregation.mode of `bond0`"),
        ("role", BASE.to_string(), "worker", Disruptive, "from the master pool to the worker pool"),
    ];
    let mut failures = Vec::new();
    for (what, new, role, want, because) in table {
        let (got, reasons) = risk_of(&new, role);
        if got != want || !reasons.iter().any(|r| r.contains(because)) {
            failures.push(format!(
                "{what}: {got:?} {reasons:?} (wanted {want:?}, `{because}`)"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Removing a route takes its interface down and up (nmstate deactivates
/// the profile first on NetworkManager before 1.52; the lab measured
/// 0.25-0.36 s of lost pings on 1.42): disruptive through the interface
/// with the machine network, modifying through the storage NIC. Adding
/// the same routes is a reapply, additive.
#[test]
fn a_route_removed_through_the_machine_network_is_disruptive() {
    use Risk::*;
    let routes = "  - {destination: 10.50.0.0/16, next-hop-address: 192.168.111.1, next-hop-interface: bond0.110}\n  - {destination: 10.60.0.0/16, next-hop-address: 10.9.0.1, next-hop-interface: eno3}\n";
    let more = BASE.replace(
        "routes:\n  config:\n",
        &format!("routes:\n  config:\n{routes}"),
    );
    let old = load(inventory("master", &more));
    let new = load(inventory("master", BASE));
    let p = plan(&old.inventory, &new.inventory).unwrap();
    let reasons: Vec<(Risk, &str)> = p.changes[0]
        .reasons
        .iter()
        .map(|r| (r.risk, r.what.as_str()))
        .collect();
    assert_eq!(p.changes[0].risk, Disruptive, "{reasons:?}");
    assert!(
        reasons.contains(&(
            Disruptive,
            "removes the route 10.50.0.0/16 via 192.168.111.1 dev bond0.110: nmstate takes `bond0.110` down and up to remove it (NetworkManager before 1.52 cannot by reapply), and `bond0.110` carries the machine network 192.168.111.0/24"
        )),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&(
            Modifying,
            "removes the route 10.60.0.0/16 via 10.9.0.1 dev eno3: nmstate takes `eno3` down and up to remove it (NetworkManager before 1.52 cannot by reapply)"
        )),
        "{reasons:?}"
    );
    let p = plan(&new.inventory, &old.inventory).unwrap();
    assert_eq!(p.changes[0].risk, Additive, "{:?}", p.changes[0].reasons);
}

#[test]
fn unchanged_added_and_removed_hosts() {
    let old = load(inventory("master", BASE));
    let same = load(inventory("master", BASE));
    assert!(plan(&old.inventory, &same.inventory).unwrap().is_empty());
    let renamed = load(inventory("master", BASE).replace("node-0", "node-1"));
    let p = plan(&old.inventory, &renamed.inventory).unwrap();
    let kinds: Vec<(HostChangeKind, &str)> = p
        .changes
        .iter()
        .map(|c| (c.change, c.host.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (HostChangeKind::Added, "node-1"),
            (HostChangeKind::Removed, "node-0")
        ]
    );
}

/// A state moved in its file is no change; the same state with its keys
/// in another order is written otherwise (render's files change), which
/// the plan still says though the two are the same JSON.
#[test]
fn a_state_moved_is_unchanged_and_one_reordered_is_respelled() {
    let old = load(inventory("master", BASE));
    let moved = load(format!(
        "# the same inventory, lower in its file\n\n{}",
        inventory("master", BASE)
    ));
    assert!(plan(&old.inventory, &moved.inventory).unwrap().is_empty());
    let reordered = BASE.replace(
        "- {name: eno4, type: ethernet, state: up, mtu: 1500}",
        "- {type: ethernet, name: eno4, state: up, mtu: 1500}",
    );
    assert_ne!(reordered, BASE);
    let new = load(inventory("master", &reordered));
    let p = plan(&old.inventory, &new.inventory).unwrap();
    assert_eq!(p.changes.len(), 1, "{p:?}");
    let c = &p.changes[0];
    assert!(c.network.is_none(), "{c:?}");
    assert_eq!(c.risk, Risk::Additive);
    assert!(
        c.reasons
            .iter()
            .any(|r| r.what.contains("written otherwise")),
        "{c:?}"
    );
}

/// The policies of each class: the change alone (not the whole state),
/// disruptive ones one node at a time, the others with the default.
#[test]
fn the_rollout_of_each_class() {
    let old = load(inventory("worker", BASE));
    let changed = BASE
        .replace("  mtu: 1500\n", "  mtu: 9000\n")
        .replace("mtu: 1500}", "mtu: 9000}")
        .replace("server: [192.168.111.1]", "server: [192.168.111.2]");
    let new = load(inventory("worker", &with_then(&changed)));
    let p = plan(&old.inventory, &new.inventory).unwrap();
    let r = rollout(&p, &new.inventory);
    let summary: Vec<(Risk, &str, String)> = r
        .policies
        .iter()
        .map(|p| (p.risk, p.file.as_str(), p.max_unavailable.to_string()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                Risk::Additive,
                "nncp/additive-worker.yaml",
                "\"50%\"".to_string()
            ),
            (
                Risk::Modifying,
                "nncp/modifying-worker.yaml",
                "\"50%\"".to_string()
            ),
            (
                Risk::Disruptive,
                "nncp/disruptive-worker.yaml",
                "1".to_string()
            ),
        ]
    );
    let state = |risk: Risk| {
        serde_json::to_string(&r.policies.iter().find(|p| p.risk == risk).unwrap().state).unwrap()
    };
    // Only what changes: bond0's MTU, not its ports or addresses.
    assert_eq!(
        state(Risk::Disruptive),
        r#"{"interfaces":[{"name":"bond0","type":"bond","mtu":9000}]}"#
    );
    assert!(
        state(Risk::Modifying).contains("\"eno4\"")
            && state(Risk::Modifying).contains("192.168.111.2")
    );
    assert!(state(Risk::Additive).contains("eno4.30"));
    // No node agent, br-ex by configure-ovs: no MachineConfig carries a
    // host file of this host.
    assert_eq!(r.machine_configs.get("worker"), None);
    let with_agent = |s: String| {
        s.replace(
            "machineNetworks: [192.168.111.0/24]}",
            "machineNetworks: [192.168.111.0/24], nodeAgent: {image: 'quay.io/x/nodenet:1', renderedImagePushSpec: 'quay.io/x/os:1', renderedImagePushSecret: push}}",
        )
    };
    let agent = load(with_agent(inventory("worker", &with_then(&changed))));
    let r = rollout(&p, &agent.inventory);
    assert_eq!(r.machine_configs.get("worker"), Some(&1));
    let files: Vec<String> = r
        .files(&agent.inventory)
        .into_iter()
        .map(|f| f.path)
        .collect();
    for want in [
        "openshift/10-nodenet-nmstate-worker.yaml",
        "openshift/10-nodenet-agent-worker.yaml",
        "openshift/machineconfiguration-cluster.yaml",
    ] {
        assert!(files.iter().any(|f| f == want), "{want} not in {files:?}");
    }
}

/// Under configure-ovs the interface it puts under br-ex (bond0.110, the
/// default route's) is in no policy: a change to it is said, not carried.
#[test]
fn what_configure_ovs_owns_is_not_carried() {
    let old = load(inventory("worker", BASE));
    let changed = BASE.replace(
        "vlan: {base-iface: bond0, id: 110}\n",
        "vlan: {base-iface: bond0, id: 110}\n  mtu: 1400\n",
    );
    let new = load(inventory("worker", &changed));
    let p = plan(&old.inventory, &new.inventory).unwrap();
    let r = rollout(&p, &new.inventory);
    assert!(r.policies.is_empty(), "{:?}", r.policies);
    let left: Vec<String> = r
        .left_to_configure_ovs
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert_eq!(left, ["node-0: bond0.110"]);
    assert_eq!(
        serde_json::to_value(&r.left_to_configure_ovs).unwrap(),
        serde_json::json!(["node-0: bond0.110"])
    );
    assert!(r.render_text().contains("not carried: node-0: bond0.110"));
    // With br-ex derived by nodenet, the same change is a policy.
    let derive = |s: String| {
        s.replace(
            "machineNetworks: [192.168.111.0/24]}",
            "machineNetworks: [192.168.111.0/24], brEx: derive}",
        )
    };
    let new = load(derive(inventory("worker", &changed)));
    let old = load(derive(inventory("worker", BASE)));
    let p = plan(&old.inventory, &new.inventory).unwrap();
    let r = rollout(&p, &new.inventory);
    assert!(r.left_to_configure_ovs.is_empty());
    assert_eq!(r.policies.len(), 1, "{:?}", r.policies);
}

/// The same interface left to configure-ovs.sh on many hosts is said once,
/// with the first host and how many more (a fleet-wide change was one
/// line per host: 10,000 lines), in the text and in ROLLOUT.md; and
/// ROLLOUT.md says it when no policy carries anything (it said nothing).
#[test]
fn what_configure_ovs_owns_on_many_hosts_is_said_once() {
    let fleet = |network: &str| {
        let one = inventory("worker", network);
        let (head, host) = one.split_at(one.find("- name: node-0").unwrap());
        let hosts: String = (0..3)
            .map(|i| {
                host.replace("node-0", &format!("node-{i}"))
                    .replace(":00:0", &format!(":0{i}:0"))
                    .replace(".20,", &format!(".{},", 20 + i))
                    .replace(".20}", &format!(".{}}}", 20 + i))
            })
            .collect();
        load(format!("{head}{hosts}"))
    };
    let changed = BASE.replace(
        "vlan: {base-iface: bond0, id: 110}\n",
        "vlan: {base-iface: bond0, id: 110}\n  mtu: 1400\n",
    );
    let (old, new) = (fleet(BASE), fleet(&changed));
    let p = plan(&old.inventory, &new.inventory).unwrap();
    let r = rollout(&p, &new.inventory);
    assert_eq!(
        r.left_to_configure_ovs.len(),
        3,
        "{:?}",
        r.left_to_configure_ovs
    );
    let text = r.render_text();
    let said: Vec<&str> = text.lines().filter(|l| l.contains("not carried")).collect();
    assert_eq!(said.len(), 1, "{text}");
    assert!(
        said[0].contains("not carried: node-0 and 2 more hosts: bond0.110 is"),
        "{text}"
    );
    let steps = r.steps();
    let said: Vec<&str> = steps
        .lines()
        .filter(|l| l.contains("Not carried"))
        .collect();
    assert_eq!(
        said,
        ["Not carried by any step: node-0 and 2 more hosts: bond0.110 (the interface configure-ovs.sh puts under br-ex)."],
        "{steps}"
    );
}

fn with_then(s: &str) -> String {
    s.replace(
        "dns-resolver:",
        "- {name: eno4.30, type: vlan, state: up, vlan: {base-iface: eno4, id: 30}}\ndns-resolver:",
    )
}

/// With failure-domain labels, a disruptive change shared by the role
/// goes one node per domain at a time; a removed interface is `absent`.
#[test]
fn failure_domains_and_removals() {
    let two = |network: &str, rack1: &str| {
        let indented: String = network.lines().map(|l| format!("      {l}\n")).collect();
        format!(
            "nodenet: v1\ncluster: {{name: c, baseDomain: example.com, machineNetworks: [192.168.111.0/24], failureDomain: topology.kubernetes.io/rack, brEx: derive}}\ntemplates:\n  w:\n    role: worker\n    network:\n{indented}hosts:\n- {{name: w-0, template: w, labels: {{topology.kubernetes.io/rack: r1}}}}\n- {{name: w-1, template: w, labels: {{topology.kubernetes.io/rack: {rack1}}}}}\n"
        )
    };
    let dhcp = "interfaces:\n- {name: eno1, type: ethernet, state: up, mtu: 1500, ipv4: {enabled: true, dhcp: true}}\n- {name: eno4, type: ethernet, state: up}\n";
    let changed = "interfaces:\n- {name: eno1, type: ethernet, state: up, mtu: 9000, ipv4: {enabled: true, dhcp: true}}\n";
    let old = load(two(dhcp, "r2"));
    let new = load(two(changed, "r2"));
    let p = plan(&old.inventory, &new.inventory).unwrap();
    let r = rollout(&p, &new.inventory);
    let policies: Vec<(String, String)> = r
        .policies
        .iter()
        .map(|p| (p.name.clone(), serde_json::to_string(&p.selector).unwrap()))
        .collect();
    assert!(
        policies.contains(&(
            "nodenet-plan-disruptive-worker-r1".into(),
            r#"{"node-role.kubernetes.io/worker":"","topology.kubernetes.io/rack":"r1"}"#.into()
        )),
        "{policies:?}"
    );
    assert!(policies
        .iter()
        .any(|(n, _)| n == "nodenet-plan-disruptive-worker-r2"));
    let removal = r
        .policies
        .iter()
        .find(|p| p.risk == Risk::Modifying)
        .unwrap();
    assert_eq!(
        serde_json::to_string(&removal.state).unwrap(),
        r#"{"interfaces":[{"name":"eno4","type":"ethernet","state":"absent"}]}"#
    );
}
