use super::*;

/// Additive, or a modifying change said to carry no cluster traffic,
/// is a claim the lab can contradict; a disruptive one is not.
#[test]
fn which_claims_say_the_cluster_traffic_is_left_alone() {
    let no = vec!["changes mtu of `bond0.120`, which carries no cluster traffic".to_string()];
    let yes = vec!["adds `bond0.130` (vlan) on `bond0`, which carries `bond0.110`".to_string()];
    assert!(claims_no_cluster_traffic(Risk::Additive, &yes));
    assert!(claims_no_cluster_traffic(Risk::Modifying, &no));
    assert!(!claims_no_cluster_traffic(Risk::Modifying, &yes));
    assert!(!claims_no_cluster_traffic(Risk::Disruptive, &no));
}

#[test]
fn measured_reads_what_rehearse_writes() {
    let r = Rehearsal {
        old: "a".into(),
        new: "b".into(),
        switch_changes: vec![],
        hosts: vec![HostResult {
            host: "m0".into(),
            order: 1,
            risk: Risk::Modifying,
            outcome: "committed".into(),
            detail: String::new(),
            loss: vec![
                Loss {
                    address: "10.0.0.1".parse().unwrap(),
                    interface: "a".into(),
                    sent: 100,
                    lost: 2,
                    ms: 40,
                    in_a_row: 1,
                },
                Loss {
                    address: "10.0.1.1".parse().unwrap(),
                    interface: "b".into(),
                    sent: 100,
                    lost: 5,
                    ms: 100,
                    in_a_row: 5,
                },
            ],
            converged: true,
            carried: true,
            claims: vec![],
            contradicted: false,
        }],
        steps: vec![],
        notes: vec![],
        topology: None,
    };
    let m = read_measured(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(
        m,
        [Measured {
            host: "m0".into(),
            outcome: "committed".into(),
            lost_ms: 100,
            converged: true
        }]
    );
    assert!(read_measured("{}").is_err());
}

/// Each policy of a step advances its own `at_once` nodes per round,
/// side by side: a 1-at-a-time policy of two nodes takes two rounds
/// while a policy of three nodes two at a time takes two as well.
#[test]
fn a_steps_policies_go_out_side_by_side_each_at_its_pace() {
    let masters = vec![vec!["m0"], vec!["m1"]];
    let workers = vec![vec!["w0", "w1"], vec!["w2"]];
    let single = vec![vec!["x"]];
    assert_eq!(
        rounds(&[masters, workers, single]),
        [
            vec![(0, "m0"), (1, "w0"), (1, "w1"), (2, "x")],
            vec![(0, "m1"), (1, "w2")]
        ]
    );
    assert!(rounds::<&str>(&[]).is_empty());
}

/// A policy selects the lab nodes whose labels it names: its role, a
/// hostname, the inventory's own labels.
#[test]
fn a_policy_selects_by_the_nodes_labels() {
    let inv = nodenet_model::load_texts(vec![(
            "inv.yaml".into(),
            "nodenet: v1\ncluster: {name: c, baseDomain: example.com}\nhosts:\n- {name: m0, role: master}\n- {name: m1, role: master}\n- {name: w0, role: worker, labels: {rack: r1}}\n".into(),
        )])
        .inventory;
    let lab: Vec<_> = inv
        .hosts
        .iter()
        .map(|h| (h, h.node_labels(&inv.cluster)))
        .collect();
    let policy = |selector: &[(&str, &str)]| PlannedPolicy {
        wave: 1,
        risk: Risk::Modifying,
        file: "f".into(),
        name: "p".into(),
        selector: selector
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        max_unavailable: serde_json::json!(1),
        hosts: 0,
        state: serde_json::json!({}),
    };
    let names = |p: &PlannedPolicy| -> Vec<String> {
        selected(p, &lab)
            .iter()
            .map(|h| h.name.value.clone())
            .collect()
    };
    assert_eq!(
        names(&policy(&[("node-role.kubernetes.io/master", "")])),
        ["m0", "m1"]
    );
    assert_eq!(
        names(&policy(&[
            ("node-role.kubernetes.io/master", ""),
            ("kubernetes.io/hostname", "m1")
        ])),
        ["m1"]
    );
    assert_eq!(names(&policy(&[("rack", "r1")])), ["w0"]);
    assert!(names(&policy(&[("rack", "r2")])).is_empty());
}

#[test]
fn ping_summary_counts() {
    let s = "--- 192.168.110.131 ping statistics ---\n512 packets transmitted, 498 received, 2.7% packet loss, time 10230ms\nrtt min/avg/max/mdev = 0.3/0.9/4.1/0.2 ms\n";
    assert_eq!(ping_counts(s), Some((512, 498)));
    assert_eq!(
        ping_counts("12 packets transmitted, 0 received, +12 errors, 100% packet loss, time 240ms"),
        Some((12, 0))
    );
    assert_eq!(ping_counts("connect: Network is unreachable"), None);
}

fn outcome(sent: u64, lost: u64, in_a_row: u64) -> Option<PingOutcome> {
    Some(PingOutcome {
        sent,
        lost,
        in_a_row,
    })
}

/// The last ping, sent as ping is stopped, is not a loss; a reply
/// missing before the last is.
#[test]
fn the_ping_in_flight_when_stopped_is_not_lost() {
    let stopped =
        "735 packets transmitted, 734 received, 0.136% packet loss, time 14700ms\nlast-reply 734\nlongest-gap 0\n";
    assert_eq!(ping_outcome(stopped), outcome(735, 0, 0));
    let gap =
        "735 packets transmitted, 730 received, 0.68% packet loss, time 14700ms\nlast-reply 735\nlongest-gap 3\n";
    assert_eq!(ping_outcome(gap), outcome(735, 5, 3));
    let dead = "100 packets transmitted, 0 received, 100% packet loss, time 2000ms\nlast-reply 0\nlongest-gap 0\n";
    assert_eq!(ping_outcome(dead), outcome(100, 100, 100));
    // Replies stopping before the end: those after the last are a run.
    let cut = "100 packets transmitted, 60 received, 40% packet loss, time 2000ms\nlast-reply 60\nlongest-gap 0\n";
    assert_eq!(ping_outcome(cut), outcome(100, 39, 39));
}

/// The switch's own `ping` log through [`SEQ_SUMMARY`]: one echo lost
/// alone, then three in a row.
#[test]
fn the_longest_run_of_lost_pings_is_read_from_the_log() {
    let mut log = String::new();
    for seq in (1..=20).filter(|s| ![5, 11, 12, 13].contains(s)) {
        log.push_str(&format!(
            "64 bytes from 192.168.110.131: icmp_seq={seq} ttl=64 time=0.9 ms\n"
        ));
    }
    log.push_str("\n--- 192.168.110.131 ping statistics ---\n21 packets transmitted, 16 received, 23.8% packet loss, time 420ms\n");
    let mut awk = std::process::Command::new("sh")
        .arg("-c")
        .arg(SEQ_SUMMARY)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut awk.stdin.take().unwrap(), log.as_bytes()).unwrap();
    let summary = String::from_utf8(awk.wait_with_output().unwrap().stdout).unwrap();
    assert_eq!(ping_outcome(&summary), outcome(21, 4, 3), "{summary}");
}

/// Only an outage of the machine network contradicts a claim: a lone
/// echo lost does not, three in a row do.
#[test]
fn an_outage_is_three_pings_lost_in_a_row() {
    let inv = nodenet_model::load_texts(vec![(
        "inv.yaml".into(),
        "nodenet: v1\ncluster: {name: c, baseDomain: example.com, machineNetworks: [192.168.110.0/24]}\nhosts: []\n".into(),
    )])
    .inventory;
    let enactment = |address: &str, lost: u64, in_a_row: u64| Enactment {
        host: "m0".into(),
        round: 1,
        outcome: "committed".into(),
        detail: String::new(),
        loss: vec![Loss {
            address: address.parse().unwrap(),
            interface: "bond0.110".into(),
            sent: 500,
            lost,
            ms: lost * PING_INTERVAL_MS,
            in_a_row,
        }],
        claims: vec![],
        contradicted: false,
        evidence: vec![],
    };
    assert!(!machine_lost(&inv, &enactment("192.168.110.131", 1, 1)));
    assert!(!machine_lost(&inv, &enactment("192.168.110.131", 4, 2)));
    assert!(machine_lost(&inv, &enactment("192.168.110.131", 3, 3)));
    assert!(!machine_lost(&inv, &enactment("192.168.120.10", 50, 50)));
}

#[test]
fn a_bond_ports_mux_states_are_named_as_the_kernel_numbers_them() {
    // As bond_3ad.c writes them (seen in the lab: the switch's ports of a
    // node stopped for 5 s came back from ATTACHED).
    let line =
        "[   52.049939] bond2: (slave swp4): Mux Machine: Port=1, Last State=3, Curr State=6";
    assert_eq!(
        mux_named(line),
        format!("{line} (ATTACHED -> COLLECTING_DISTRIBUTING)")
    );
    let down = "[ 9.1] bond2: (slave swp5): Mux Machine: Port=2, Last State=6, Curr State=1";
    assert!(mux_named(down).ends_with("(COLLECTING_DISTRIBUTING -> DETACHED)"));
    // Other lines, and numbers the kernel does not have, as they are.
    let other = "[ 9.2] bond0: (slave eno1): Releasing backup interface";
    assert_eq!(mux_named(other), other);
    let odd = "[ 9.3] bond2: (slave swp5): Mux Machine: Port=2, Last State=6, Curr State=9";
    assert_eq!(mux_named(odd), odd);
}
