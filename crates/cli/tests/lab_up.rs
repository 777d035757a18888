//! `nodenet lab up | status | verify | down` as a user runs them
//! (`cargo test --release --test lab_up`): the lab built from an
//! inventory, its verdict read from report.json, and a broken inventory's
//! failure where the inventory breaks it. qemu TCG, the lab image of
//! `crates/lab` (cached in target/lab-cache like the other lab suites).

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;

fn lab(args: &[&str], dir: &Path) -> std::process::Output {
    run(nodenet().arg("lab").args(args).arg("--dir").arg(dir).env(
        "NODENET_LAB_CACHE",
        std::env::var_os("NODENET_LAB_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target/lab-cache")),
    ))
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The lab's qemu processes still running, by their command lines.
fn qemus_of(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains("qemu-system") && c.contains(&*dir.to_string_lossy()) {
                out.push(c);
            }
        }
    }
    out
}

/// Stops the lab's VMs however the test ends (a failed assertion too).
struct Teardown(PathBuf);

impl Drop for Teardown {
    fn drop(&mut self) {
        if !qemus_of(&self.0).is_empty() {
            let _ = lab(&["down"], &self.0);
        }
    }
}

fn checks(dir: &Path) -> Vec<serde_json::Value> {
    let v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    v["checks"].as_array().unwrap().clone()
}

#[test]
fn lab_up_verify_down_and_a_vlan_missing_from_one_node() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    let _teardown = Teardown(dir.clone());
    let good = repo().join("crates/cli/tests/lab-data/rehearsal.yaml");

    let o = lab(&["up", good.to_str().unwrap()], &dir);
    assert!(o.status.success(), "{}", text(&o));
    // The switch as the inventory says: each NIC on its named port, in
    // one LACP bond per host, VLANs 110 and 120 tagged, jumbo MTU.
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("master-1 eno2 52:54:00:10:01:02 -> tor-1 Ethernet1/4 native 1 tagged [110, 120] mtu 9000 lacp bond2"),
        "{out}"
    );
    let o = lab(&["status"], &dir);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).matches(" ready").count(),
        3,
        "{}",
        text(&o)
    );
    // Starting a second lab in the same place is refused.
    let o = lab(&["up", good.to_str().unwrap()], &dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("a lab is running"), "{}", text(&o));

    let o = lab(&["verify"], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let c = checks(&dir);
    let passed = |node: &str, kind: &str, subject: &str| {
        c.iter().any(|x| {
            x["node"] == node
                && x["check"] == kind
                && x["subject"].as_str().unwrap().starts_with(subject)
                && x["ok"] == true
        })
    };
    for node in ["master-0", "master-1"] {
        assert!(passed(node, "state", "diff --live"), "{c:#?}");
        assert!(passed(node, "bond", "bond0"), "{c:#?}");
        assert!(passed(node, "dhcp", "bond0.110 ipv4"), "{c:#?}");
        assert!(passed(node, "ping", "192.168.110.1 (gateway"), "{c:#?}");
        assert!(passed(node, "mtu", "9000 to 192.168.110."), "{c:#?}");
        assert!(passed(node, "vlans", "VLAN 120"), "{c:#?}");
        // eno3, the PXE NIC, gets a lease on the provisioning network.
        assert!(passed(node, "pxe", "eno3"), "{c:#?}");
    }
    // LLDP names the inventory's ports, heard by the nodes.
    assert!(
        c.iter().any(|x| x["node"] == "master-1"
            && x["subject"] == "eno2"
            && x["detail"] == "tor-1 port Ethernet1/4"),
        "{c:#?}"
    );
    let html = fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("lab verify: ") && html.contains("0 failed"),
        "{html}"
    );

    // Day 2: VLAN 130 everywhere (committed, the switch carries it first);
    // master-1's move to a static address behind a dead gateway fails its
    // gateway probe and is rolled back. Exit 1: not every change committed.
    let day2 = repo().join("crates/cli/tests/lab-data/rehearsal-day2.yaml");
    let o = lab(
        &[
            "rehearse",
            good.to_str().unwrap(),
            day2.to_str().unwrap(),
            "--format",
            "json",
        ],
        &dir,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r = json(&o);
    let hosts = r["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2, "{r:#}");
    // The plan's order of risk: master-0 (modifying) before master-1 (disruptive).
    assert_eq!(hosts[0]["host"], "master-0", "{r:#}");
    assert_eq!(hosts[0]["outcome"], "committed", "{r:#}");
    assert_eq!(hosts[0]["converged"], true, "{r:#}");
    let loss = hosts[0]["loss"].as_array().unwrap();
    assert!(
        loss.iter()
            .any(|l| l["interface"] == "bond0.110" && l["sent"].as_u64().unwrap() > 20),
        "{r:#}"
    );
    assert_eq!(hosts[1]["host"], "master-1", "{r:#}");
    assert_eq!(hosts[1]["outcome"], "rolled-back", "{r:#}");
    assert!(
        hosts[1]["detail"].as_str().unwrap().contains("gateway"),
        "{r:#}"
    );
    let switch: Vec<&str> = r["switch_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        switch.iter().filter(|c| c.ends_with("+130")).count(),
        4,
        "{switch:?}"
    );
    assert!(dir.join("rehearse.json").is_file());

    let o = lab(&["down"], &dir);
    assert!(o.status.success(), "{}", text(&o));
    assert!(qemus_of(&dir).is_empty(), "{:?}", qemus_of(&dir));
    assert!(!dir.exists(), "lab files left behind");

    // The broken inventory: VLAN 120 missing from master-1's intent (its
    // switch ports do not carry it either: the lab is built from the
    // intent), and PXE on eno1, a port of the LACP bond, with no LACP
    // fallback (check's pxe-nic-in-lacp-bond; built with --allow-errors).
    let template = fs::read_to_string(&good).unwrap();
    let start = template.find("  node:\n").unwrap();
    let end = template.find("hosts:\n").unwrap();
    let without: String = template[start..end]
        .replace("  node:\n", "  node-without-120:\n")
        .replace(
            "      - name: bond0.120\n        type: vlan\n        state: up\n        vlan: {base-iface: bond0, id: 120}\n        ipv4: {enabled: false}\n        ipv6: {enabled: false}\n",
            "",
        );
    assert!(!without.contains("id: 120"), "{without}");
    let bad_text = template
        .replace(
            "  template: node\n  role: master\n  nics:\n  - {name: eno1, mac: \"52:54:00:10:01:01\"",
            "  template: node-without-120\n  role: master\n  nics:\n  - {name: eno1, mac: \"52:54:00:10:01:01\"",
        )
        .replace("hosts:\n", &format!("{without}hosts:\n"))
        .replace("interface: eno3}", "interface: eno1}");
    let bad = tmp.path().join("bad.yaml");
    fs::write(&bad, bad_text).unwrap();
    let o = lab(&["up", bad.to_str().unwrap()], &dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("pxe-nic-in-lacp-bond"), "{}", text(&o));
    let o = lab(&["up", bad.to_str().unwrap(), "--allow-errors"], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let o = lab(&["verify", "--format", "json"], &dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let c = checks(&dir);
    let mut failed: Vec<String> = c
        .iter()
        .filter(|x| x["ok"] == false)
        .map(|x| {
            format!(
                "{} {} {}",
                x["node"].as_str().unwrap(),
                x["check"].as_str().unwrap(),
                x["subject"].as_str().unwrap()
            )
        })
        .collect();
    failed.sort();
    assert_eq!(
        failed,
        [
            "master-0 pxe eno1",
            "master-0 vlans VLAN 120",
            "master-1 pxe eno1",
            "master-1 vlans VLAN 120"
        ],
        "{c:#?}"
    );
    // The PXE failure says why: a port of an LACP bond without fallback.
    assert!(
        c.iter().any(|x| x["check"] == "pxe"
            && x["detail"].as_str().unwrap().contains("no DHCP lease")
            && x["detail"].as_str().unwrap().contains("LACP fallback")),
        "{c:#?}"
    );
    let html = fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("class=\"node fail\" id=\"node-master-1\""),
        "{html}"
    );
    let o = lab(&["down"], &dir);
    assert!(o.status.success(), "{}", text(&o));
    assert!(qemus_of(&dir).is_empty());
}

/// What `lab` refuses before starting anything: no lab in the directory
/// (usage, 2), a host with more NICs than a lab node has (the input, 1).
#[test]
fn refusals_start_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nolab");
    for args in [
        &["status"][..],
        &["verify"],
        &["down"],
        &["console", "master-0"],
    ] {
        let o = lab(args, &dir);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains("no lab in"), "{}", text(&o));
    }
    let nics: String = (0..9)
        .map(|i| format!("eth{i}: \"52:54:00:00:00:{i:02x}\", "))
        .collect();
    let inv = tmp.path().join("big.yaml");
    fs::write(
        &inv,
        format!("nodenet: v1\nhosts:\n- name: big\n  nics: {{{nics}}}\n"),
    )
    .unwrap();
    let o = lab(&["up", inv.to_str().unwrap()], &dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("big has 9 NICs; a lab node has at most 8"),
        "{}",
        text(&o)
    );
    assert!(!dir.exists(), "nothing made for a refused lab");
}
