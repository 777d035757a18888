use super::*;

/// A host's state after a policy's `delta` is applied to `state`, as
/// nmstate merges a desired state into the current one: interfaces by
/// name (fields merged, `state: absent` removes), routes by value
/// (`state: absent` removes), name servers replaced.
fn apply_delta(state: &J, delta: &J) -> J {
    let mut out = state.clone();
    let Some(root) = out.as_object_mut() else {
        return out;
    };
    if let Some(changes) = delta.get("interfaces").and_then(J::as_array) {
        let ifaces = root
            .entry("interfaces")
            .or_insert_with(|| json!([]))
            .as_array_mut();
        if let Some(ifaces) = ifaces {
            for change in changes {
                let name = change.get("name");
                let pos = ifaces.iter().position(|i| i.get("name") == name);
                let absent = change.get("state").and_then(J::as_str) == Some("absent");
                match (pos, absent) {
                    (Some(p), true) => {
                        ifaces.remove(p);
                    }
                    (Some(p), false) => merge(&mut ifaces[p], change),
                    (None, true) => {}
                    (None, false) => ifaces.push(change.clone()),
                }
            }
        }
    }
    if let Some(changes) = delta.pointer("/routes/config").and_then(J::as_array) {
        let config = root
            .entry("routes")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|r| r.entry("config").or_insert_with(|| json!([])));
        if let Some(J::Array(routes)) = config {
            for r in changes {
                let mut plain = r.clone();
                let absent = plain
                    .as_object_mut()
                    .and_then(|o| o.shift_remove("state"))
                    .is_some_and(|s| s == "absent");
                if absent {
                    routes.retain(|x| x != &plain);
                } else if !routes.contains(&plain) {
                    routes.push(plain);
                }
            }
        }
    }
    if let Some(dns) = delta.get("dns-resolver") {
        root.insert("dns-resolver".into(), dns.clone());
    }
    out
}

/// `b` merged into `a`: mappings key by key, anything else replaced.
fn merge(a: &mut J, b: &J) {
    match (a, b) {
        (J::Object(a), J::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (a, b) => *a = b.clone(),
    }
}

/// One worker: a bond of two NICs, VLAN 110 on it with the machine
/// address and the default route; `bond` and `extra` go into the
/// bond's entry and after it.
fn inventory(bond: &str, extra: &str) -> Inventory {
    let text = format!(
        "nodenet: v1
cluster:
  name: c
  baseDomain: example.com
  machineNetworks: [10.0.0.0/24]
  brEx: none
hosts:
- name: w0
  role: worker
  nics: {{eno1: '52:54:00:00:00:01', eno2: '52:54:00:00:00:02'}}
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up}}
    - {{name: eno2, type: ethernet, state: up}}
    - name: bond0
      type: bond
      state: up
{bond}      ipv4: {{enabled: false}}
      ipv6: {{enabled: false}}
      link-aggregation: {{mode: 802.3ad, port: [eno1, eno2]}}
    - name: bond0.110
      type: vlan
      state: up
      vlan: {{base-iface: bond0, id: 110}}
      ipv4: {{enabled: true, address: [{{ip: 10.0.0.10, prefix-length: 24}}]}}
      ipv6: {{enabled: false}}
{extra}    routes:
      config:
      - {{destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: bond0.110}}
"
    );
    crate::load_clean(text)
}

const VLAN_120: &str = "    - name: bond0.120
      type: vlan
      state: up
      mtu: 9000
      vlan: {base-iface: bond0, id: 120}
      ipv4: {enabled: false}
      ipv6: {enabled: false}
";

/// `inv` with w0's state replaced.
fn with_state(inv: &Inventory, state: &J) -> Inventory {
    let mut inv = inv.clone();
    inv.hosts[0].network = Some(Node::from_json(state, Default::default()));
    inv
}

fn errors(inv: &Inventory) -> Vec<String> {
    nodenet_check::check(inv, Vec::new())
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{}: {}", d.code.as_str(), d.message))
        .collect()
}

/// Each wave's policies applied in turn to the old state: the state
/// after every wave checks clean, and the last is the new one.
fn cumulative_states_check_clean(old: &Inventory, new: &Inventory, waves: usize) {
    let plan = crate::plan(old, new).unwrap();
    let rollout = rollout(&plan, new);
    assert_eq!(
        rollout.policies.iter().map(|p| p.wave).max(),
        Some(waves),
        "{:?}",
        rollout.policies
    );
    let mut state = old.hosts[0].network.as_ref().unwrap().to_json();
    for wave in 1..=waves {
        for p in rollout.policies.iter().filter(|p| p.wave == wave) {
            state = apply_delta(&state, &p.state);
        }
        let errors = errors(&with_state(old, &state));
        assert!(errors.is_empty(), "after wave {wave}: {errors:?}");
    }
    let d = nodenet_import::diff::diff(&new.hosts[0].network.as_ref().unwrap().to_json(), &state)
        .unwrap();
    assert!(d.equal, "{d:?}");
}

#[test]
fn a_vlan_above_its_bonds_raised_mtu_goes_in_the_wave_after_it() {
    let old = inventory("", "");
    let new = inventory("      mtu: 9000\n", VLAN_120);
    let plan = crate::plan(&old, &new).unwrap();
    let c = &plan.changes[0];
    // The VLAN shares bond0's ports with VLAN 110 and the machine
    // network: not additive.
    let vlan = c
        .reasons
        .iter()
        .find(|r| r.what.contains("adds `bond0.120`"))
        .unwrap();
    assert_eq!(vlan.risk, Risk::Modifying, "{}", vlan.what);
    assert!(vlan.what.contains("on `bond0`"), "{}", vlan.what);
    let rollout = rollout(&plan, &new);
    let placed: Vec<(usize, Risk, &str)> = rollout
        .policies
        .iter()
        .map(|p| (p.wave, p.risk, p.file.as_str()))
        .collect();
    assert_eq!(
        placed,
        vec![
            (1, Risk::Disruptive, "nncp/wave-1/disruptive-worker.yaml"),
            (2, Risk::Modifying, "nncp/wave-2/modifying-worker.yaml"),
        ]
    );
    // ROLLOUT.md says the order: wave 1's file, then wave 2's.
    let steps = rollout.steps();
    let first = steps.find("nncp/wave-1/disruptive-worker.yaml").unwrap();
    let second = steps.find("nncp/wave-2/modifying-worker.yaml").unwrap();
    assert!(first < second, "{steps}");
    assert!(steps.contains("\n1. disruptive change, wave 1"), "{steps}");
    // Wave 2 alone on the old state is what the kernel refuses, and
    // check says so.
    let state = apply_delta(
        &old.hosts[0].network.as_ref().unwrap().to_json(),
        &rollout.policies[1].state,
    );
    let errors = errors(&with_state(&old, &state));
    assert!(
        errors.iter().any(|e| e.starts_with("mtu-exceeds-parent")),
        "{errors:?}"
    );
    cumulative_states_check_clean(&old, &new, 2);
}

#[test]
fn a_bonds_mtu_lowered_goes_after_its_vlans() {
    let old = inventory("      mtu: 9000\n", VLAN_120);
    let new = inventory(
        "      mtu: 1500\n",
        &VLAN_120.replace("mtu: 9000", "mtu: 1500"),
    );
    cumulative_states_check_clean(&old, &new, 2);
    let plan = crate::plan(&old, &new).unwrap();
    let rollout = rollout(&plan, &new);
    let bond_wave = rollout
        .policies
        .iter()
        .find(|p| p.state.to_string().contains("\"bond0\""))
        .unwrap()
        .wave;
    assert_eq!(bond_wave, 2);
}

#[test]
fn independent_changes_are_one_wave_in_the_plain_layout() {
    let old = inventory("", "");
    let new = inventory("      mtu: 9000\n", "");
    let plan = crate::plan(&old, &new).unwrap();
    let rollout = rollout(&plan, &new);
    assert_eq!(rollout.policies.len(), 1);
    assert_eq!(rollout.policies[0].file, "nncp/disruptive-worker.yaml");
    assert_eq!(rollout.policies[0].name, "nodenet-plan-disruptive-worker");
}

/// Three masters whose changes differ (each its own address): one
/// policy per master, each one node at a time and in a file (so a
/// step) of its own; a modifying change on the masters too.
#[test]
fn masters_change_one_at_a_time_each_in_a_step_of_its_own() {
    let masters = |third_octet: u8, extra: &str| {
        let hosts: String = (0..3)
            .map(|i| {
                format!(
                    "- name: m{i}
  role: master
  network:
    interfaces:
    - name: eno1
      type: ethernet
      state: up
      ipv4: {{enabled: true, address: [{{ip: 10.0.{third_octet}.1{i}, prefix-length: 16}}]}}
{extra}"
                )
            })
            .collect();
        crate::load_clean(format!(
                "nodenet: v1\ncluster: {{name: c, baseDomain: example.com, machineNetworks: [10.0.0.0/16], brEx: none}}\nhosts:\n{hosts}"
            ))
    };
    let storage = "    - {name: eno2, type: ethernet, state: up, mtu: 9000}\n";
    let old = masters(0, "");
    let new = masters(1, storage);
    let plan = crate::plan(&old, &new).unwrap();
    let rollout = rollout(&plan, &new);
    let disruptive: Vec<&PlannedPolicy> = rollout
        .policies
        .iter()
        .filter(|p| p.risk == Risk::Disruptive)
        .collect();
    assert_eq!(disruptive.len(), 3, "{:?}", rollout.policies);
    let files: BTreeSet<&str> = disruptive.iter().map(|p| p.file.as_str()).collect();
    assert_eq!(
        files,
        BTreeSet::from([
            "nncp/disruptive-master-m0.yaml",
            "nncp/disruptive-master-m1.yaml",
            "nncp/disruptive-master-m2.yaml"
        ])
    );
    // The same new NIC on every master: one policy, one at a time all
    // the same (kubernetes-nmstate's 50 % would be two of three).
    let shared: Vec<&PlannedPolicy> = rollout
        .policies
        .iter()
        .filter(|p| p.risk != Risk::Disruptive)
        .collect();
    assert_eq!(shared.len(), 1, "{:?}", rollout.policies);
    assert!(rollout
        .policies
        .iter()
        .all(|p| p.max_unavailable == json!(1)));
    let steps = rollout.steps();
    assert_eq!(steps.matches("oc apply -f nncp/").count(), 4, "{steps}");
}
