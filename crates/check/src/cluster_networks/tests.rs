use super::*;

fn codes(text: &str) -> Vec<(Code, u32)> {
    let loaded = nodenet_model::load_texts(vec![("c.yaml".into(), text.into())]);
    let mut out = Vec::new();
    check(&loaded.inventory, &mut out);
    out.iter()
        .map(|d| (d.code, d.span.map_or(0, |s| s.line)))
        .collect()
}

const IC: &str = "apiVersion: v1\nbaseDomain: example.com\nmetadata: {name: c}\nnetworking:\n  machineNetwork:\n  - cidr: MACHINE\n  clusterNetwork:\n  - cidr: CLUSTER\n    hostPrefix: HOSTPREFIX\n  serviceNetwork:\n  - SERVICE\ncontrolPlane: {name: master, replicas: 3}\ncompute: [{name: worker, replicas: 2}]\nplatform: {none: {}}\n";

fn ic(machine: &str, cluster: &str, host_prefix: &str, service: &str) -> String {
    IC.replace("MACHINE", machine)
        .replace("CLUSTER", cluster)
        .replace("HOSTPREFIX", host_prefix)
        .replace("SERVICE", service)
}

#[test]
fn the_default_networks_pass() {
    assert_eq!(
        codes(&ic(
            "192.168.111.0/24",
            "10.128.0.0/14",
            "23",
            "172.30.0.0/16"
        )),
        vec![]
    );
}

#[test]
fn overlapping_networks_are_found_at_the_second() {
    assert_eq!(
        codes(&ic("10.128.0.0/24", "10.128.0.0/14", "23", "172.30.0.0/16")),
        vec![(Code::NetworkOverlap, 8)]
    );
    assert_eq!(
        codes(&ic(
            "192.168.111.0/24",
            "10.128.0.0/14",
            "23",
            "10.130.0.0/16"
        )),
        vec![(Code::NetworkOverlap, 11)]
    );
}

#[test]
fn a_cluster_network_too_small_for_its_hosts() {
    // /24 with hostPrefix 23: one node subnet, five hosts need five.
    assert_eq!(
        codes(&ic(
            "192.168.111.0/24",
            "10.128.0.0/22",
            "23",
            "172.30.0.0/16"
        )),
        vec![(Code::ClusterNetworkTooSmall, 9)]
    );
    // Four node subnets, five hosts.
    assert_eq!(
        codes(&ic(
            "192.168.111.0/24",
            "10.128.0.0/21",
            "23",
            "172.30.0.0/16"
        )),
        vec![(Code::ClusterNetworkTooSmall, 9)]
    );
    assert_eq!(
        codes(&ic(
            "192.168.111.0/24",
            "10.128.0.0/20",
            "23",
            "172.30.0.0/16"
        )),
        vec![]
    );
    // /26 leaves 64 pod addresses per node.
    assert_eq!(
        codes(&ic(
            "192.168.111.0/24",
            "10.128.0.0/14",
            "26",
            "172.30.0.0/16"
        )),
        vec![(Code::ClusterNetworkTooSmall, 9)]
    );
}
