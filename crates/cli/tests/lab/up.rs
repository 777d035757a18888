//! `nodenet lab up | status | verify | down` as a user runs them
//! (`cargo test --release -p nodenet --test lab up::`): the lab built from an
//! inventory, its verdict read from report.json, and a broken inventory's
//! failure where the inventory breaks it. qemu TCG, the lab image of
//! `crates/lab` (cached in target/lab-cache like the other lab suites).

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::*;

fn lab(args: &[&str], dir: &Path) -> std::process::Output {
    run(nodenet()
        .arg("lab")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .env("NODENET_LAB_CACHE", crate::cache()))
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The lab's processes still running (VMs, BMC emulator, image server,
/// machine side), by their command lines.
fn processes_of(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(&*dir.to_string_lossy()) {
                out.push(c);
            }
        }
    }
    out
}

/// Stops the lab's VMs however the test ends (a failed assertion too),
/// and removes what it keeps outside its folder (consoles in memory)
/// after a `lab up` that failed and stopped them itself.
struct Teardown(PathBuf);

impl Drop for Teardown {
    fn drop(&mut self) {
        if self.0.exists() || !processes_of(&self.0).is_empty() {
            let _ = lab(&["down"], &self.0);
        }
    }
}

/// The checks of the report `lab verify` wrote; without a report, the
/// test fails with what verify said instead.
fn checks(dir: &Path, verify: &std::process::Output) -> Vec<serde_json::Value> {
    let report = fs::read_to_string(dir.join("report.json"))
        .unwrap_or_else(|e| panic!("lab verify wrote no report.json ({e}):\n{}", text(verify)));
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    v["checks"].as_array().unwrap().clone()
}

#[test]
fn lab_up_verify_down_and_a_vlan_missing_from_one_node() {
    if skip_without(&["debootstrap", "qemu-system-x86_64"]) {
        return;
    }
    let _slot = crate::lab_slot();
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
    let c = checks(&dir, &o);
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

    // Day 2, rolled out as the plan writes it (rehearsal-day2.yaml says
    // what changes): ROLLOUT.md's steps in order, each policy on the nodes
    // it selects, at most maxUnavailable at once. master-1's move to a
    // static address behind a dead gateway fails its gateway probe and is
    // rolled back: its policy is Degraded, exit 1.
    let day2 = repo().join("crates/cli/tests/lab-data/rehearsal-day2.yaml");
    let started = std::time::Instant::now();
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
    let steps = r["steps"].as_array().unwrap();
    // What each step measured, for the log (README quotes it).
    eprintln!("lab rehearse took {:.1} s", started.elapsed().as_secs_f64());
    for s in steps {
        for p in s["policies"].as_array().unwrap() {
            for e in p["enactments"].as_array().unwrap() {
                let lost: Vec<String> = e["loss"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| {
                        format!(
                            "{} {}/{} ({} in a row)",
                            l["interface"], l["lost"], l["sent"], l["in_a_row"]
                        )
                    })
                    .collect();
                eprintln!(
                    "step {} {} round {} {} {}: lost {}",
                    s["step"],
                    p["name"].as_str().unwrap(),
                    e["round"],
                    e["host"].as_str().unwrap(),
                    e["outcome"].as_str().unwrap(),
                    lost.join(", ")
                );
                // What the node and the switch logged, for a claim the
                // lab contradicts (the rollback's own is in the report).
                if e["contradicted"] == true {
                    for l in e["evidence"].as_array().into_iter().flatten() {
                        eprintln!("  contradicted; logged: {}", l.as_str().unwrap());
                    }
                }
            }
        }
    }
    let policy = |step: usize| &steps[step - 1]["policies"][0];
    let enacted = |step: usize| -> Vec<(String, u64, String)> {
        policy(step)["enactments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["host"].as_str().unwrap().to_string(),
                    e["round"].as_u64().unwrap(),
                    e["outcome"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let names: Vec<&str> = steps
        .iter()
        .map(|s| s["policies"][0]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "nodenet-plan-additive-master",
            "nodenet-plan-modifying-master-0",
            "nodenet-plan-modifying-master-1",
            "nodenet-plan-disruptive-master-0",
            "nodenet-plan-disruptive-master-1"
        ],
        "{r:#}"
    );
    // The route both masters get is one policy: kubernetes-nmstate's
    // maxUnavailable 1 changes one master, then the other.
    assert_eq!(policy(1)["at_once"], 1, "{r:#}");
    assert_eq!(
        enacted(1),
        [
            ("master-0".to_string(), 1, "committed".to_string()),
            ("master-1".to_string(), 2, "committed".to_string())
        ],
        "{r:#}"
    );
    for step in 1..=4 {
        assert_eq!(policy(step)["status"], "Available", "step {step}: {r:#}");
    }
    // The plan says VLAN 120's MTU and address carry no cluster traffic;
    // the lab holds it to that: the machine network on bond0.110 lost no
    // ping meanwhile (else `contradicted`).
    let e = &policy(2)["enactments"][0];
    assert!(
        e["claims"].as_array().unwrap().iter().any(|c| c
            .as_str()
            .unwrap()
            .contains("`bond0.120`, which carries no cluster traffic")),
        "{r:#}"
    );
    assert_eq!(e["contradicted"], false, "{r:#}");
    assert!(
        e["loss"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["interface"] == "bond0.110" && l["sent"].as_u64().unwrap() > 20),
        "{r:#}"
    );
    // VLAN 120 removed from master-1 (`state: absent`), the bond option
    // changed on master-0: committed.
    assert_eq!(
        enacted(3),
        [("master-1".to_string(), 1, "committed".to_string())],
        "{r:#}"
    );
    assert_eq!(
        enacted(4),
        [("master-0".to_string(), 1, "committed".to_string())],
        "{r:#}"
    );
    // The route master-0 loses is disruptive, as the plan says: nmstate
    // took bond0.110 down and up to remove it (NetworkManager 1.42 cannot
    // by reapply; its log has the profile activated again, which a
    // reapply never logs), and the machine network had an outage
    // meanwhile.
    let e = &policy(4)["enactments"][0];
    assert!(
        e["claims"].as_array().unwrap().iter().any(|c| c
            .as_str()
            .unwrap()
            .starts_with("removes the route 203.0.113.0/24 via 192.168.110.1 dev bond0.110: nmstate takes `bond0.110` down and up")),
        "{r:#}"
    );
    assert!(
        e["loss"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["interface"] == "bond0.110" && l["lost"].as_u64().unwrap() > 0),
        "{r:#}"
    );
    assert!(
        e["evidence"].as_array().unwrap().iter().any(|l| {
            let l = l.as_str().unwrap();
            l.contains("device (bond0.110): Activation: starting connection 'bond0.110'")
        }),
        "{r:#}"
    );
    // The failing change: rolled back by its gateway probe, Degraded.
    assert_eq!(policy(5)["status"], "Degraded", "{r:#}");
    assert_eq!(enacted(5)[0].2, "rolled-back", "{r:#}");
    // Its lost pings come with what master-1's NetworkManager logged
    // meanwhile (bond0.110 taken to the static address and back).
    let evidence = policy(5)["enactments"][0]["evidence"].as_array().cloned();
    assert!(
        evidence
            .into_iter()
            .flatten()
            .any(|l| l.as_str().unwrap().starts_with("master-1 NetworkManager: ")),
        "{r:#}"
    );
    assert!(
        policy(5)["enactments"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("gateway"),
        "{r:#}"
    );
    // No change the plan said leaves the cluster's traffic alone cost the
    // machine network an outage (`OUTAGE_PINGS` in a row).
    let contradicted: Vec<&serde_json::Value> = steps
        .iter()
        .flat_map(|s| s["policies"].as_array().unwrap())
        .flat_map(|p| p["enactments"].as_array().unwrap())
        .filter(|e| e["contradicted"] != false)
        .collect();
    assert!(
        contradicted.is_empty(),
        "contradicted: {:#}\nthe whole rehearsal: {r:#}",
        serde_json::Value::Array(contradicted.into_iter().cloned().collect())
    );
    // Never two masters losing the machine network at once.
    assert!(
        steps
            .iter()
            .all(|s| s["control_plane_lost_at_once"].as_u64().unwrap() < 2),
        "{r:#}"
    );
    // The policies add up to the new inventory: master-0's whole new
    // state is what its kernel runs.
    let hosts = r["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2, "{r:#}");
    assert_eq!(hosts[0]["host"], "master-0", "{r:#}");
    assert_eq!(hosts[0]["outcome"], "committed", "{r:#}");
    assert_eq!(hosts[0]["converged"], true, "{r:#}");
    assert_eq!(hosts[1]["host"], "master-1", "{r:#}");
    assert_eq!(hosts[1]["outcome"], "rolled-back", "{r:#}");
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
    assert!(processes_of(&dir).is_empty(), "{:?}", processes_of(&dir));
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
    let c = checks(&dir, &o);
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
    assert!(processes_of(&dir).is_empty());
}

/// Day 1 the way the real cluster gets it, in the lab: `lab up` gives
/// each host a Redfish BMC (sushy-tools) standing in for the inventory's
/// and an image server; `nodenet provision --lab` builds the host's ISO
/// (its keyfiles embedded in a CoreOS-like live ISO) and drives the BMC
/// (power off, virtual media, boot override, power on); the machine side
/// boots the VM from that CD; `lab verify` finds the network up with the
/// keyfiles from the CD. Powering off through the BMC stops the VM.
#[test]
fn provision_lab_boots_each_host_from_its_iso_through_its_bmc() {
    if skip_without(&["curl", "debootstrap", "qemu-system-x86_64"]) {
        return;
    }
    let _slot = crate::lab_slot();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    let _teardown = Teardown(dir.clone());
    // The seed topology, with a BMC the lab stands in for.
    let inv = tmp.path().join("cluster.yaml");
    fs::write(
        &inv,
        fs::read_to_string(repo().join("crates/cli/tests/lab-data/lab.yaml"))
            .unwrap()
            .replace(
                "hosts:\n",
                "credentials:\n  bmc: {username: root, passwordEnv: NODENET_TEST_BMC_PW}\nhosts:\n",
            )
            .replace(
                "  role: worker\n",
                "  role: worker\n  bmc: {address: \"redfish-virtualmedia+https://10.0.0.5/redfish/v1/Systems/1\", credentials: bmc}\n",
            ),
    )
    .unwrap();
    let o = lab(&["up", inv.to_str().unwrap()], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let bmc_line = out
        .lines()
        .find(|l| l.starts_with("bmc node http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no lab BMC for node:\n{out}"));
    assert!(
        bmc_line.ends_with(
            "(stands in for redfish-virtualmedia+https://10.0.0.5/redfish/v1/Systems/1)"
        ),
        "{out}"
    );
    let system = bmc_line.split_whitespace().nth(2).unwrap().to_string();
    let password = fs::read_to_string(dir.join("bmc/password")).unwrap();
    assert!(
        !text(&o).contains(password.trim()),
        "the BMC password printed"
    );

    let started = std::time::Instant::now();
    let o = run(nodenet()
        .arg("provision")
        .arg(&inv)
        .args(["--all", "--lab", "--lab-dir"])
        .arg(&dir)
        .env("NODENET_TEST_BMC_PW", "not-the-lab-password"));
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("/node.iso"), "{}", text(&o));
    assert!(
        !text(&o).contains(password.trim()),
        "the BMC password printed"
    );

    let o = lab(&["verify", "--format", "json"], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let c = checks(&dir, &o);
    let passed = |kind: &str, subject: &str| {
        c.iter().any(|x| {
            x["node"] == "node"
                && x["check"] == kind
                && x["subject"].as_str().unwrap().starts_with(subject)
                && x["ok"] == true
        })
    };
    assert!(passed("boot", "provisioned"), "{c:#?}");
    assert!(passed("state", "diff --live"), "{c:#?}");
    assert!(passed("bond", "bond0"), "{c:#?}");
    assert!(passed("ping", "192.168.110.1 (gateway"), "{c:#?}");
    eprintln!(
        "provision --lab until verified: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // The machine side saw what the BMC was told.
    let log = fs::read_to_string(dir.join("machines.log")).unwrap();
    assert!(log.contains("node: powered off: VM stopped"), "{log}");
    assert!(
        log.contains("node: powered on: booting its CD http://127.0.0.1:"),
        "{log}"
    );
    // The keyfiles NetworkManager runs with are byte for byte the rendered
    // ones, from the CD (the config disk of a CD boot has none).
    let render = tmp.path().join("render");
    let o = run(nodenet()
        .arg("render")
        .arg(&inv)
        .arg("-o")
        .arg(&render)
        .env("NODENET_TEST_BMC_PW", "x"));
    assert!(o.status.success(), "{}", text(&o));
    let mut node = nodenet_lab::Vm::attach("node", &dir).unwrap();
    for f in files_under(&render.join("hosts/node/system-connections")) {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let (st, on_node) = node.shell(
            &format!("cat /etc/NetworkManager/system-connections/{name}"),
            std::time::Duration::from_secs(30),
        );
        assert_eq!(st, 0, "{name}: {on_node}");
        assert_eq!(
            on_node.trim(),
            fs::read_to_string(&f).unwrap().trim(),
            "{name} differs on the node"
        );
    }
    drop(node);

    // Power off through the BMC (plain curl, not nodenet's client): the VM stops.
    let (base, id) = system.split_once("/redfish/v1/Systems/").unwrap();
    let o = run(std::process::Command::new("curl")
        .args(["-fsS", "-u", &format!("admin:{}", password.trim())])
        .args(["-H", "Content-Type: application/json", "-X", "POST"])
        .args(["--data", r#"{"ResetType": "ForceOff"}"#])
        .arg(format!(
            "{base}/redfish/v1/Systems/{id}/Actions/ComputerSystem.Reset"
        )));
    assert!(o.status.success(), "{}", text(&o));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let o = lab(&["status"], &dir);
        let t = text(&o);
        if t.lines()
            .any(|l| l.starts_with("node ") && l.contains(" stopped"))
        {
            assert_eq!(o.status.code(), Some(1), "{t}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node still running: {t}"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let o = lab(&["down"], &dir);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(processes_of(&dir), Vec::<String>::new());
    assert!(!dir.exists(), "lab down leaves nothing");
}

/// What `lab` refuses before starting anything: no lab in the directory
/// (usage, 2), a host with more NICs than a lab node has (the input, 1).
#[test]
fn refusals_start_nothing() {
    if skip_without(&["debootstrap", "qemu-system-x86_64"]) {
        return;
    }
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

/// `lab image` builds (or finds) the image in the cache it is given and
/// names its files: a kernel of this machine's, a newc initramfs and an
/// ext4 root filesystem, the last two in that cache.
#[test]
fn lab_image_names_a_kernel_an_initramfs_and_an_ext4_root_in_the_cache() {
    if skip_without(&["debootstrap", "mkfs.ext4"]) {
        return;
    }
    let o = run(nodenet()
        .args(["lab", "image", "--image-cache"])
        .arg(crate::cache()));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stdout);
    let file = |what: &str| -> PathBuf {
        let line = said
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{what} ")))
            .unwrap_or_else(|| panic!("no {what} in:\n{said}"));
        PathBuf::from(line)
    };
    let kernel = file("kernel");
    assert!(kernel.starts_with("/boot") && kernel.is_file(), "{said}");
    let initrd = fs::read(file("initramfs")).unwrap();
    assert!(initrd.starts_with(b"070701"), "not a newc cpio: {said}");
    let rootfs = file("root filesystem");
    assert!(rootfs.starts_with(crate::cache()), "{said}");
    let mut superblock = [0u8; 2];
    use std::io::{Read, Seek};
    let mut f = fs::File::open(&rootfs).unwrap();
    f.seek(std::io::SeekFrom::Start(1024 + 56)).unwrap();
    f.read_exact(&mut superblock).unwrap();
    assert_eq!(u16::from_le_bytes(superblock), 0xEF53, "not ext4: {said}");
}

/// A VM that is not ready in time is started once more, its first
/// console kept; not ready again, `lab up` stops everything and names
/// both consoles. (A timeout too short for any boot stands in for a
/// guest that hangs.)
#[test]
fn a_vm_not_ready_in_time_is_started_again_once() {
    if skip_without(&["debootstrap", "qemu-system-x86_64"]) {
        return;
    }
    let _slot = crate::lab_slot();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    let _teardown = Teardown(dir.clone());
    let inv = repo().join("examples/lab/three-nodes.yaml");
    let o = lab(&["up", inv.to_str().unwrap(), "--timeout", "3"], &dir);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("switch was not ready within 3s")
            && said.contains("switch had been started again")
            && said.contains("switch-console.prev.log"),
        "{said}"
    );
    assert!(dir.join("switch-console.prev.log").is_file(), "{said}");
    assert!(dir.join("switch-console.log").is_file(), "{said}");
    assert!(processes_of(&dir).is_empty(), "{:?}", processes_of(&dir));
}

/// NIC identity, shown live: two nodes whose inventory calls their NICs
/// eno1 and eno2 boot with the names the kernel gives them (eth0, eth1:
/// another boot medium, as far as names go). node-n binds its profiles by
/// name and comes up without its bond's ports, so its gateway does not
/// answer; node-m (`nicBinding: mac`) finds both NICs by MAC: its bond
/// has both ports and its gateway answers; node-p (`nicBinding: pin`)
/// gets its inventory names back from its .link files, so its profiles
/// bound by name find them. For both, `diff --live` against the state
/// is empty.
#[test]
fn nics_bound_by_mac_come_up_under_other_names_and_by_name_do_not() {
    if skip_without(&["debootstrap", "qemu-system-x86_64"]) {
        return;
    }
    let _slot = crate::lab_slot();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    let _teardown = Teardown(dir.clone());
    let host = |name: &str, n: u8, binding: &str| {
        format!(
            r#"- name: {name}
  role: worker{binding}
  nics: {{eno1: "52:54:00:1d:{n:02x}:01", eno2: "52:54:00:1d:{n:02x}:02"}}
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up}}
    - {{name: eno2, type: ethernet, state: up}}
    - name: bond0
      type: bond
      state: up
      ipv4: {{enabled: false}}
      ipv6: {{enabled: false}}
      link-aggregation: {{mode: active-backup, options: {{miimon: "100"}}, port: [eno1, eno2]}}
    - name: bond0.110
      type: vlan
      state: up
      vlan: {{base-iface: bond0, id: 110}}
      ipv4: {{enabled: true, dhcp: false, address: [{{ip: 192.168.110.{n}, prefix-length: 24}}]}}
      ipv6: {{enabled: false}}
    routes:
      config:
      - {{destination: 0.0.0.0/0, next-hop-address: 192.168.110.1, next-hop-interface: bond0.110}}
"#
        )
    };
    let inv = tmp.path().join("names.yaml");
    fs::write(
        &inv,
        format!(
            "nodenet: v1\ncluster:\n  name: names\n  machineNetworks: [192.168.110.0/24]\n  provisioning: {{network: Disabled}}\n  brEx: none\nhosts:\n{}{}",
            host("node-n", 21, ""),
            host("node-m", 22, "\n  nicBinding: mac"),
        ) + &host("node-p", 23, "\n  nicBinding: pin"),
    )
    .unwrap();
    let o = lab(
        &["up", inv.to_str().unwrap(), "--nic-names", "kernel"],
        &dir,
    );
    assert!(o.status.success(), "{}", text(&o));
    let sh =
        |vm: &mut nodenet_lab::Vm, cmd: &str| vm.shell(cmd, std::time::Duration::from_secs(90));
    // node-m: both ports found by MAC under the kernel's names; the
    // gateway answers (NetworkManager may take a moment to activate).
    let mut m = nodenet_lab::Vm::attach("node-m", &dir).unwrap();
    let (st, links) = sh(&mut m, "ip -br link");
    assert_eq!(st, 0);
    assert!(links.contains("eth0") && !links.contains("eno1"), "{links}");
    let (st, out) = sh(
        &mut m,
        "for i in $(seq 60); do ping -c 1 -W 1 192.168.110.1 >/dev/null && break; sleep 1; done; ping -c 2 -W 2 192.168.110.1 && grep 'Slave Interface' /proc/net/bonding/bond0",
    );
    assert_eq!(
        st, 0,
        "node-m (bound by MAC) cannot reach its gateway: {out}"
    );
    assert!(
        out.contains("Slave Interface: eth0") && out.contains("Slave Interface: eth1"),
        "{out}"
    );
    let (_, keyfile) = sh(
        &mut m,
        "cat /etc/NetworkManager/system-connections/eno1.nmconnection",
    );
    assert!(
        keyfile.contains("mac-address=52:54:00:1D:16:01")
            || keyfile.contains("mac-address=52:54:00:1d:16:01"),
        "{keyfile}"
    );
    assert!(!keyfile.contains("interface-name="), "{keyfile}");
    // The live state is the state: bond0's ports found by their
    // permanent MACs (both now show bond0's MAC) under other names.
    let (st, out) = sh(&mut m, "nodenet diff /run/cfg/nmstate.yml --live 2>&1");
    assert_eq!(st, 0, "node-m: {out}");
    drop(m);
    // node-p: udev named the NICs by the .link files, so everything
    // bound by name is there.
    let mut p = nodenet_lab::Vm::attach("node-p", &dir).unwrap();
    let (_, links) = sh(&mut p, "ip -br link; ls /etc/systemd/network");
    assert!(
        links.contains("eno1") && links.contains("eno2") && !links.contains("eth0"),
        "{links}"
    );
    let (st, out) = sh(
        &mut p,
        "for i in $(seq 60); do ping -c 1 -W 1 192.168.110.1 >/dev/null && break; sleep 1; done; ping -c 2 -W 2 192.168.110.1 && grep 'Slave Interface' /proc/net/bonding/bond0 && nodenet diff /run/cfg/nmstate.yml --live 2>&1",
    );
    assert_eq!(st, 0, "node-p (names pinned) is not its state: {out}");
    assert!(
        out.contains("Slave Interface: eno1") && out.contains("Slave Interface: eno2"),
        "{out}"
    );
    drop(p);
    // node-n: the same state bound by name finds no eno1/eno2: the bond
    // has no port, the gateway is unreachable — the failure MAC binding
    // prevents. (Given the same time node-m needed, and more.)
    let mut n = nodenet_lab::Vm::attach("node-n", &dir).unwrap();
    let (st, out) = sh(
        &mut n,
        "sleep 10; ping -c 3 -W 2 192.168.110.1; echo \"ping exit $?\"; cat /proc/net/bonding/bond0 2>&1; true",
    );
    assert_eq!(st, 0, "{out}");
    assert!(
        !out.contains("ping exit 0") && out.contains("ping exit "),
        "node-n (bound by name) reached its gateway: {out}"
    );
    assert!(!out.contains("Slave Interface"), "{out}");
    drop(n);
    let o = lab(&["down"], &dir);
    assert!(o.status.success(), "{}", text(&o));
}

/// The dual-stack and IPv6-only examples as users run them, two hosts of
/// each: every lab verify check passes, among them `diff --live` empty,
/// a default route of each family the cluster has, pings of both
/// families, and the IPv6-only worker's DHCPv6 lease.
#[test]
fn dual_stack_and_ipv6_only_examples_come_up_with_every_family() {
    if skip_without(&["debootstrap", "qemu-system-x86_64"]) {
        return;
    }
    let _slot = crate::lab_slot();
    let tmp = tempfile::tempdir().unwrap();
    for (example, hosts, families, leases) in [
        (
            "examples/dual-stack.yaml",
            "master-0,master-1",
            &["ipv4", "ipv6"][..],
            &[][..],
        ),
        (
            "examples/ipv6-only.yaml",
            "master-0,worker-0",
            &["ipv6"][..],
            &["worker-0 eno1 ipv6"][..],
        ),
    ] {
        let dir = tmp.path().join(example.trim_start_matches("examples/"));
        let _teardown = Teardown(dir.clone());
        let inv = repo().join(example);
        let o = lab(&["up", inv.to_str().unwrap(), "--hosts", hosts], &dir);
        assert!(o.status.success(), "{example}: {}", text(&o));
        let o = lab(&["verify"], &dir);
        let all = checks(&dir, &o);
        let failed: Vec<&serde_json::Value> = all.iter().filter(|c| c["ok"] != true).collect();
        assert!(failed.is_empty(), "{example}: {failed:#?}\n{}", text(&o));
        assert!(o.status.success(), "{example}: {}", text(&o));
        let seen = |node: &str, kind: &str, subject: &str| {
            all.iter().any(|c| {
                c["node"] == node
                    && c["check"] == kind
                    && c["subject"] == subject
                    && c["ok"] == true
            })
        };
        for node in hosts.split(',') {
            assert!(
                seen(node, "state", "diff --live"),
                "{example} {node}: {all:#?}"
            );
            for fam in families {
                assert!(
                    seen(node, "route", &format!("default {fam}")),
                    "{example} {node} {fam}: {all:#?}"
                );
            }
        }
        for lease in leases {
            let (node, subject) = lease.split_once(' ').unwrap();
            assert!(seen(node, "dhcp", subject), "{example}: {all:#?}");
        }
        // Pings of every family the example has, between the two nodes.
        for fam in families {
            let v6 = *fam == "ipv6";
            assert!(
                all.iter().any(|c| c["check"] == "ping"
                    && c["ok"] == true
                    && c["subject"].as_str().unwrap_or("").contains(':') == v6
                    && !c["detail"].as_str().unwrap_or("").is_empty()),
                "{example} {fam}: {all:#?}"
            );
        }
        let o = lab(&["down"], &dir);
        assert!(o.status.success(), "{}", text(&o));
    }
}
