use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::artifacts::nncps;
use crate::openshift::node_states;

fn load(yaml: &str) -> Inventory {
    let loaded = nodenet_model::load_texts(vec![("fleet.yaml".into(), yaml.into())]);
    assert!(
        !loaded.diagnostics.iter().any(|d| d.is_error()),
        "{:?}",
        loaded.diagnostics
    );
    loaded.inventory
}

/// `n` hosts given one by one (no template): host i's address is
/// `address(i)`, its gateway `gateway(i)`; a default route only when
/// `route`. The cluster derives br-ex and runs the node agent.
fn fleet(n: usize, address: &dyn Fn(usize) -> String, route: bool) -> String {
    let mut y = String::from(
        "nodenet: v1\ncluster:\n  name: c\n  baseDomain: example.com\n  machineNetworks: [10.0.0.0/16, fd00::/64]\n  apiVIPs: [10.0.0.5]\n  ingressVIPs: [10.0.0.4]\n  provisioning: {network: Disabled}\n  brEx: derive\n  nodeAgent: {image: quay.io/x/nodenet:1}\nhosts:\n",
    );
    for i in 0..n {
        let role = if i < 3 { "master" } else { "worker" };
        let routes = if route {
            "    routes:\n      config: [{destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: bond0}]\n"
        } else {
            ""
        };
        y.push_str(&format!(
            "- name: h{i:04}\n  role: {role}\n  nics: {{eno1: '52:54:00:00:{:02x}:{:02x}', eno2: '52:54:00:01:{:02x}:{:02x}'}}\n  network:\n    interfaces:\n    - {{name: eno1, type: ethernet, state: up}}\n    - {{name: eno2, type: ethernet, state: up}}\n    - name: bond0\n      type: bond\n      state: up\n      link-aggregation: {{mode: active-backup, port: [eno1, eno2]}}\n      ipv4: {{enabled: true, dhcp: false, address: [{{ip: '{}', prefix-length: 16}}]}}\n      ipv6: {{enabled: false}}\n    dns-resolver:\n      config: {{server: [10.0.0.2]}}\n{routes}",
            i / 256,
            i % 256,
            i / 256,
            i % 256,
            address(i),
        ));
    }
    y
}

fn states(inv: &Inventory, shapes: &HostShapes) -> Vec<(Option<String>, Option<String>)> {
    node_states(inv, shapes)
        .into_iter()
        .map(|s| (s.openshift, s.nodenet))
        .collect()
}

fn policies(inv: &Inventory, shapes: &HostShapes) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    nncps(inv, shapes, &mut out);
    out.into_iter().map(|f| (f.path, f.content)).collect()
}

/// What shapes give is what making every host alone gives, for the
/// MachineConfigs' node states and the policies, and the shapes were
/// used (`min_shaped` hosts or more in a shape).
fn same_as_alone(inv: &Inventory, min_shaped: usize) {
    let shapes = HostShapes::of_inventory(inv);
    let shaped: usize = shapes.shapes.iter().map(Vec::len).sum();
    assert!(shaped >= min_shaped, "{shaped} hosts in shapes");
    let alone = HostShapes::alone(inv.hosts.len());
    let (a, b) = (states(inv, &shapes), states(inv, &alone));
    for (i, (a, b)) in a.iter().zip(&b).enumerate() {
        assert_eq!(a, b, "host {i}");
    }
    assert!(a.iter().any(|s| s.0.is_some() && s.1.is_some()));
    assert_eq!(policies(inv, &shapes), policies(inv, &alone));
}

/// Addresses in another order than the first host's (…9, …10, …100 sort
/// apart as text and as numbers) and repeats of the name server's
/// address: shapes of their own, each host's documents its own.
#[test]
fn shaped_documents_are_each_hosts_own() {
    let inv = load(&fleet(
        300,
        &|i| format!("10.0.{}.{}", i / 200, 2 + i % 200),
        true,
    ));
    same_as_alone(&inv, 250);
}

/// A host whose address is outside every machine network, where no
/// default route names br-ex's uplink (the interface with a
/// machine-network address is it): its documents differ in more than its
/// values, so it is no host of the others' shape, even where no sampled
/// host would show it (host 100 of 300 is not sampled).
#[test]
fn an_address_in_other_networks_is_another_shape() {
    let address = |i: usize| match i {
        100 => "192.168.0.100".to_string(),
        _ => format!("10.0.{}.{}", 1 + i / 200, 10 + i % 200),
    };
    let inv = load(&fleet(300, &address, false));
    same_as_alone(&inv, 290);
    let alone = HostShapes::alone(inv.hosts.len());
    let direct = states(&inv, &alone);
    assert!(direct[100].0.is_none(), "no br-ex derived for host 100");
    assert!(direct[101].0.is_some());
}

/// A shape's first host and its sample are made, the others filled in:
/// for 300 hosts of one shape, 7 hosts made (the first, the second,
/// every 64th, the last).
#[test]
fn a_shape_is_made_once_and_sampled() {
    // Above the gateway and name server as text and as numbers: one order.
    let inv = load(&fleet(
        300,
        &|i| format!("10.0.{}.{}", 1 + i / 200, 10 + i % 200),
        true,
    ));
    let shapes = HostShapes::of_inventory(&inv);
    let masters: Vec<usize> = (0..3).collect();
    assert!(
        !shapes.shapes.contains(&masters),
        "3 masters are too few for a shape"
    );
    let made = AtomicUsize::new(0);
    let out = shapes.make(inv.hosts.len(), &|i| {
        made.fetch_add(1, Ordering::Relaxed);
        let ip = inv.hosts[i].network.as_ref().unwrap().to_json()["interfaces"][2]["ipv4"]
            ["address"][0]["ip"]
            .clone();
        [Some(format!("address: {}\n", ip.as_str().unwrap()))]
    });
    // Masters (3, below the smallest shape) made alone, the 297 workers
    // as one shape: first + 1 + 4 multiples of 64 + last.
    assert_eq!(made.load(Ordering::Relaxed), 3 + 7);
    assert_eq!(out[150][0].as_deref(), Some("address: 10.0.1.160\n"));
    assert_eq!(out[299][0].as_deref(), Some("address: 10.0.2.109\n"));
}

/// A document that depends on more than a host's values (here its place
/// in the inventory) disagrees with its sample: every host is made.
#[test]
fn a_sample_that_disagrees_makes_every_host() {
    let inv = load(&fleet(100, &|i| format!("10.0.0.{}", 2 + i), true));
    let shapes = HostShapes::of_inventory(&inv);
    let out = shapes.make(inv.hosts.len(), &|i| [Some(format!("host {i}\n"))]);
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o[0].as_deref(), Some(format!("host {i}\n").as_str()));
    }
}
