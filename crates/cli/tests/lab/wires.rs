//! Wire verification in the lab (`cargo test --release -p nodenet --test lab wires::`):
//! a switch VM that is a real L2 switch (a Linux bridge with
//! `vlan_filtering`, per-port VLAN membership and MTU set by the test,
//! lldpd announcing each port) and two bare node VMs (NICs down, no
//! NetworkManager: a machine booted before any configuration), cabled
//! NIC-to-NIC over UDP on 127.0.0.1.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cache;
use crate::common::*;
use nodenet_lab::{Nic, Vm, VmSpec};

/// The switch as `nodenet lab up` builds it (`nodenet_lab::topology` and
/// `switch::script`) from [`inventory`] with active-backup bonds: ports
/// swp1..swp5 (its eth0..eth4) in a VLAN-aware bridge, VLANs 110, 120,
/// 130 and 140 tagged on each (1 untagged), MTU 9000, no switch-side
/// bond, lldpd as `lab-switch` with each port's name; what lldpd does not
/// read from a VLAN-aware bridge (the port VLAN id, the VLANs and the
/// maximum frame size of each port) `swp-lldp` announces as custom TLVs,
/// from the bridge and the port's MTU; the test reruns it after changing
/// either.
fn switch_script() -> String {
    let loaded = nodenet_model::load_texts(vec![(
        "wires.yaml".into(),
        inventory(["active-backup", "active-backup"]),
    )]);
    let hosts: Vec<&nodenet_model::Host> = loaded.inventory.hosts.iter().collect();
    let t = nodenet_lab::topology::plan(&loaded.inventory, &hosts).expect("the lab's topology");
    let ports: Vec<&str> = t.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(ports, ["swp1", "swp2", "swp3", "swp4", "swp5"]);
    nodenet_lab::switch::script(&t)
}

/// Three hosts, VLANs 110-140 on each: node-a and node-b on a bond of two
/// NICs (bond modes `modes`), node-c on its one NIC; MTU 9000 everywhere; each NIC's
/// switch port and native VLAN as cabled.
fn inventory(modes: [&str; 2]) -> String {
    let bonded = |name: &str, mode: &str, ip: u8, macs: [&str; 2], ports: [&str; 2]| {
        format!(
            r#"- name: {name}
  nics:
  - {{name: eth0, mac: "{}", switch: lab-switch, port: {}, native: 1}}
  - {{name: eth1, mac: "{}", switch: lab-switch, port: {}, native: 1}}
  network:
    interfaces:
    - name: bond0
      type: bond
      mtu: 9000
      link-aggregation: {{mode: {mode}, port: [eth0, eth1]}}
      ipv4: {{enabled: true, dhcp: false, address: [{{ip: 192.168.10.{ip}, prefix-length: 24}}]}}
{}"#,
            macs[0],
            ports[0],
            macs[1],
            ports[1],
            vlans("bond0")
        )
    };
    let node_c = format!(
        r#"- name: node-c
  nics:
  - {{name: eth0, mac: "52:54:00:cc:00:01", switch: lab-switch, port: swp5, native: 1}}
  network:
    interfaces:
    - name: eth0
      type: ethernet
      mtu: 9000
      ipv4: {{enabled: true, dhcp: false, address: [{{ip: 192.168.10.12, prefix-length: 24}}]}}
{}"#,
        vlans("eth0")
    );
    format!(
        "nodenet: v1\nhosts:\n{}{}{node_c}",
        bonded(
            "node-a",
            modes[0],
            10,
            ["52:54:00:aa:00:01", "52:54:00:aa:00:02"],
            ["swp1", "swp2"]
        ),
        bonded(
            "node-b",
            modes[1],
            11,
            ["52:54:00:bb:00:01", "52:54:00:bb:00:02"],
            ["swp3", "swp4"]
        ),
    )
}

fn vlans(base: &str) -> String {
    [110, 120, 130, 140]
        .iter()
        .map(|v| format!("    - {{name: {base}.{v}, type: vlan, mtu: 9000, vlan: {{base-iface: {base}, id: {v}}}}}\n"))
        .collect()
}

struct Lab {
    img: nodenet_lab::Image,
    switch: Vm,
    nodes: Vec<Vm>,
    dir: PathBuf,
    /// node-a's NICs, to boot it again with its cables crossed.
    a_nics: Vec<Nic>,
}

fn launch(
    img: &nodenet_lab::Image,
    dir: &Path,
    name: &str,
    role: &str,
    id: u8,
    nics: Vec<Nic>,
    files: &[(&str, &[u8])],
) -> Vm {
    let cfg = dir.join(format!("{name}-cfg"));
    let _ = fs::remove_dir_all(&cfg);
    fs::create_dir_all(&cfg).unwrap();
    for (n, data) in files {
        fs::write(cfg.join(n), data).unwrap();
    }
    if let Ok(meta) = fs::metadata(cfg.join("nodenet")) {
        let mut perm = meta.permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        fs::set_permissions(cfg.join("nodenet"), perm).unwrap();
    }
    let spec = VmSpec {
        name: name.into(),
        role: role.into(),
        machine_id: format!("5a1e000000000000000000000000a0{id:02x}"),
        nics,
        config: cfg,
        cdrom: None,
        config_drive: None,
    };
    Vm::launch(img, &spec, dir).unwrap()
}

fn node_files(plan: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("nodenet", fs::read(env!("CARGO_BIN_EXE_nodenet")).unwrap()),
        ("plan.json", plan.to_vec()),
    ]
}

fn boot(dir: &Path, plan: &[u8]) -> Lab {
    let img = nodenet_lab::image(&cache()).expect("lab image");
    let (a_nics, sw_a) = nodenet_lab::cables(
        &["52:54:00:aa:00:01", "52:54:00:aa:00:02"],
        &["52:54:00:5e:00:01", "52:54:00:5e:00:02"],
    );
    let (b_nics, sw_b) = nodenet_lab::cables(
        &["52:54:00:bb:00:01", "52:54:00:bb:00:02"],
        &["52:54:00:5e:00:03", "52:54:00:5e:00:04"],
    );
    let (c_nics, sw_c) = nodenet_lab::cables(&["52:54:00:cc:00:01"], &["52:54:00:5e:00:05"]);
    let files = node_files(plan);
    let files: Vec<(&str, &[u8])> = files.iter().map(|(n, d)| (*n, d.as_slice())).collect();
    let sw_nics: Vec<Nic> = sw_a.into_iter().chain(sw_b).chain(sw_c).collect();
    let mut switch = launch(
        &img,
        dir,
        "switch",
        "switch",
        1,
        sw_nics,
        &[("switch.sh", switch_script().as_bytes())],
    );
    let mut nodes = vec![
        launch(&img, dir, "node-a", "bare", 2, a_nics.clone(), &files),
        launch(&img, dir, "node-b", "bare", 3, b_nics, &files),
        launch(&img, dir, "node-c", "bare", 4, c_nics, &files),
    ];
    switch.wait_ready(Duration::from_secs(180)).unwrap();
    for vm in &mut nodes {
        vm.wait_ready(Duration::from_secs(180)).unwrap();
    }
    Lab {
        img,
        switch,
        nodes,
        dir: dir.to_path_buf(),
        a_nics,
    }
}

fn sh(vm: &mut Vm, cmd: &str) -> String {
    let (st, out) = vm.run(cmd, Duration::from_secs(120)).unwrap();
    assert_eq!(st, 0, "{}: `{cmd}` failed:\n{out}", vm.name);
    out
}

/// Runs `cmd` on every node at once (each in the background of its
/// shell), waits for all; each node's output file `out` as text.
fn on_all(nodes: &mut [Vm], cmd: &str, out: &str) -> Vec<String> {
    for vm in nodes.iter_mut() {
        sh(
            vm,
            &format!(
                "rm -f {out} /tmp/bg.rc; ( ({cmd}) > /tmp/bg.log 2>&1; echo $? > /tmp/bg.rc ) & :"
            ),
        );
    }
    nodes
        .iter_mut()
        .map(|vm| {
            let rc = sh(vm, "wait; cat /tmp/bg.rc");
            let log = sh(vm, "cat /tmp/bg.log");
            assert_eq!(rc.trim(), "0", "{}: `{cmd}`:\n{log}", vm.name);
            sh(vm, &format!("cat {out}"))
        })
        .collect()
}

/// The links as a run may change them (UP or not, MTU), per node.
fn links(nodes: &mut [Vm]) -> Vec<String> {
    nodes
        .iter_mut()
        .map(|vm| {
            sh(
                vm,
                "ip -o link | sed 's/NO-CARRIER,//; s/ qdisc [a-z_]*//; s/ state [A-Z]*//'",
            )
        })
        .collect()
}

/// LLDP on every node, written as observation files; `check --observed`
/// over them: its wire findings (code, message, line).
fn lldp_check(
    lab: &mut Lab,
    inv: &Path,
    tag: &str,
) -> (Vec<serde_json::Value>, Vec<(String, String, u64)>) {
    let outs = on_all(
        &mut lab.nodes,
        "nodenet lldp --timeout 20 --format json -o /tmp/lldp.json",
        "/tmp/lldp.json",
    );
    let dir = lab.dir.join(format!("lldp-{tag}"));
    fs::create_dir_all(&dir).unwrap();
    let mut observations = Vec::new();
    for (vm, text) in lab.nodes.iter().zip(&outs) {
        let v: serde_json::Value =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", vm.name));
        fs::write(dir.join(format!("{}.json", vm.name)), text).unwrap();
        observations.push(v);
    }
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(inv)
        .arg("--observed")
        .arg(&dir));
    let findings = json(&o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            let c = d["code"].as_str().unwrap();
            c.starts_with("lldp-") || c.starts_with("observed-")
        })
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                format!(
                    "{} {}",
                    d["message"].as_str().unwrap(),
                    d["help"].as_str().unwrap_or_default()
                ),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    (observations, findings)
}

/// netverify on every node at once; the report's findings and matrix.
fn netverify(
    lab: &mut Lab,
    inv: &Path,
    tag: &str,
) -> (Vec<serde_json::Value>, Vec<(String, String)>, String, f64) {
    let before = links(&mut lab.nodes);
    let started = Instant::now();
    let outs = on_all(
        &mut lab.nodes,
        "nodenet netverify run /run/cfg/plan.json -o /tmp/result.json",
        "/tmp/result.json",
    );
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(links(&mut lab.nodes), before, "links as before the run");
    let dir = lab.dir.join(format!("netverify-{tag}"));
    fs::create_dir_all(&dir).unwrap();
    let mut results = Vec::new();
    for (vm, text) in lab.nodes.iter().zip(&outs) {
        fs::write(dir.join(format!("{}.json", vm.name)), text).unwrap();
        results.push(
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", vm.name)),
        );
    }
    let o = run(nodenet()
        .args(["netverify", "report", "--format", "json"])
        .arg(&dir)
        .arg(inv));
    let findings = json(&o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let human = run(nodenet().args(["netverify", "report"]).arg(&dir).arg(inv));
    (
        results,
        findings,
        String::from_utf8_lossy(&human.stdout).into_owned(),
        wall,
    )
}

/// The issue's proof, on three bare nodes and a VLAN-aware switch:
/// LLDP names every NIC's port; VLAN 120 removed from one switch port and
/// an MTU of 1500 under 9000 are reported for exactly those NICs, by
/// LLDP and by probe frames; cables swapped in qemu are reported as
/// swapped; LACP configured on one switch port only is found; links and
/// MTUs are as before after every run.
#[test]
fn lldp_and_netverify_find_what_the_switch_and_the_cables_do() {
    if skip_without(&["debootstrap", "qemu-system-x86_64"]) {
        return;
    }
    let _slot = crate::lab_slot();
    let tmp = tempfile::tempdir().unwrap();
    let inv = tmp.path().join("inventory.yaml");
    fs::write(&inv, inventory(["active-backup", "active-backup"])).unwrap();
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&inv));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let plan = tmp.path().join("plan.json");
    let o = run(nodenet()
        .args(["netverify", "plan", "--mtu", "--window", "6"])
        .arg(&inv)
        .arg("-o")
        .arg(&plan));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut lab = boot(tmp.path(), &fs::read(&plan).unwrap());

    // 1. Cabled and configured as the inventory says: LLDP names each
    //    NIC's port, nothing is found.
    let (obs, findings) = lldp_check(&mut lab, &inv, "right");
    assert_eq!(findings, [], "{obs:#?}");
    let port = |o: &serde_json::Value, i: usize| {
        o["nics"][i]["neighbor"]["port_id"]["value"]
            .as_str()
            .unwrap_or("-")
            .to_string()
    };
    assert_eq!(
        [
            port(&obs[0], 0),
            port(&obs[0], 1),
            port(&obs[1], 0),
            port(&obs[1], 1),
            port(&obs[2], 0)
        ],
        ["swp1", "swp2", "swp3", "swp4", "swp5"]
    );
    for o in &obs {
        eprintln!("LLDP picture of {}: {} ms", o["host"], o["listened_ms"]);
        assert_eq!(o["nics"][0]["neighbor"]["max_frame_size"], 9018);
    }

    // 2. netverify: the matrix is full for every planned segment, small
    //    and full-size (9000) frames.
    let (results, findings, matrix, wall) = netverify(&mut lab, &inv, "right");
    assert_eq!(findings, [], "{matrix}");
    for seg in [
        "VLAN 110",
        "VLAN 120",
        "VLAN 130",
        "VLAN 140",
        "untagged (native VLAN 1)",
    ] {
        assert!(
            matrix.contains(&format!("{seg}: 20/20 directions pass")),
            "{seg}:\n{matrix}"
        );
    }
    for r in &results {
        for n in r["nics"].as_array().unwrap() {
            let sent: u64 = n["sent"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            let rate = sent as f64 / (r["window_ms"].as_f64().unwrap() / 1000.0);
            eprintln!("{} {}: {sent} frames, {rate:.1}/s", r["host"], n["name"]);
            assert!(rate <= 21.0, "{rate} frames/s over the plan's 20");
        }
    }
    eprintln!("netverify wall time, 3 nodes x 4 VLANs: {wall:.1} s (window 6 s)");

    // 3. The switch changes: VLAN 120 off swp4 (node-b eth1), swp2
    //    (node-a eth1) at MTU 1500.
    sh(
        &mut lab.switch,
        "bridge vlan del dev swp4 vid 120 && ip link set swp2 mtu 1500 && swp-lldp",
    );
    let (_, findings) = lldp_check(&mut lab, &inv, "changed");
    let codes: Vec<&str> = findings.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(codes, ["lldp-mtu", "lldp-vlan-missing"], "{findings:#?}");
    assert!(
        findings[0].1.contains("node-a: NIC eth1 runs MTU 9000"),
        "{findings:#?}"
    );
    assert!(
        findings[1]
            .1
            .contains("node-b: NIC eth1: lab-switch port swp4 does not carry VLAN 120"),
        "{findings:#?}"
    );
    let (_, findings, matrix, _) = netverify(&mut lab, &inv, "changed");
    let not_carried: Vec<&String> = findings
        .iter()
        .filter(|f| f.0 == "netverify-vlan-not-carried")
        .map(|f| &f.1)
        .collect();
    let mut expected = vec![
        "VLAN 120 does not pass between node-a eth0 and node-b eth1 (in either direction)",
        "VLAN 120 does not pass between node-a eth1 and node-b eth1 (in either direction)",
        "VLAN 120 does not pass between node-b eth0 and node-b eth1 (in either direction)",
        "VLAN 120 does not pass between node-b eth1 and node-c eth0 (in either direction)",
    ];
    expected.sort();
    let mut got: Vec<&str> = not_carried.iter().map(|s| s.as_str()).collect();
    got.sort();
    assert_eq!(got, expected, "{matrix}");
    let mtu: Vec<&String> = findings
        .iter()
        .filter(|f| f.0 == "netverify-mtu")
        .map(|f| &f.1)
        .collect();
    assert!(
        !mtu.is_empty() && mtu.iter().all(|m| m.contains("node-a eth1")),
        "{findings:#?}"
    );
    let others: Vec<&(String, String)> = findings
        .iter()
        .filter(|f| f.0 != "netverify-mtu" && f.0 != "netverify-vlan-not-carried")
        .collect();
    assert_eq!(others, Vec::<&(String, String)>::new());
    sh(
        &mut lab.switch,
        "bridge vlan add dev swp4 vid 120 && ip link set swp2 mtu 9000 && swp-lldp",
    );

    // 4. node-a's two cables swapped in qemu (its NIC 0 on swp2's wire).
    let mut a = lab.nodes.remove(0);
    drop(a.run("poweroff -f", Duration::from_secs(5)));
    a = {
        let mut crossed = lab.a_nics.clone();
        crossed.swap(0, 1);
        for (n, mac) in crossed
            .iter_mut()
            .zip(["52:54:00:aa:00:01", "52:54:00:aa:00:02"])
        {
            n.mac = mac.into();
        }
        let files = node_files(&fs::read(&plan).unwrap());
        let files: Vec<(&str, &[u8])> = files.iter().map(|(n, d)| (*n, d.as_slice())).collect();
        drop(a);
        launch(&lab.img, &lab.dir, "node-a", "bare", 2, crossed, &files)
    };
    a.wait_ready(Duration::from_secs(180)).unwrap();
    lab.nodes.insert(0, a);
    let (_, findings) = lldp_check(&mut lab, &inv, "crossed");
    let codes: Vec<&str> = findings.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        codes,
        ["lldp-wrong-port", "lldp-wrong-port"],
        "{findings:#?}"
    );
    assert!(findings[0].1.contains("node-a: NIC eth0 is cabled to lab-switch port swp2, not to port swp1 looks swapped with NIC eth1"), "{findings:#?}");
    assert!(
        findings[1].1.contains("looks swapped with NIC eth0"),
        "{findings:#?}"
    );

    // 5. LACP: node-b's bond is 802.3ad; the switch aggregates swp3 only.
    let lacp = tmp.path().join("lacp.yaml");
    fs::write(&lacp, inventory(["active-backup", "802.3ad"])).unwrap();
    sh(
        &mut lab.switch,
        "ip link add bond1 type bond mode 802.3ad miimon 100 lacp_rate fast && ip link set bond1 mtu 9000 \
         && for p in swp3; do ip link set $p nomaster; ip link set $p down; ip link set $p master bond1; done \
         && ip link set bond1 master br0 && ip link set bond1 up && ip link set swp3 up \
         && for v in 110 120 130 140; do bridge vlan add dev bond1 vid $v; done && swp-lldp",
    );
    let (_, findings) = lldp_check(&mut lab, &lacp, "lacp-one-port");
    let agg: Vec<&(String, String, u64)> = findings
        .iter()
        .filter(|f| f.0 == "lldp-aggregation")
        .collect();
    assert_eq!(agg.len(), 1, "{findings:#?}");
    assert!(agg[0].1.contains("node-b: bond0 is an 802.3ad bond but lab-switch port swp4 (eth1) is not in a link aggregation"), "{findings:#?}");
    sh(&mut lab.switch, "ip link set swp4 nomaster; ip link set swp4 down; ip link set swp4 master bond1; ip link set swp4 up; swp-lldp");
    let (obs, findings) = lldp_check(&mut lab, &lacp, "lacp-both");
    assert!(
        findings
            .iter()
            .all(|f| f.0 != "lldp-aggregation" && !f.1.contains("node-b")),
        "{findings:#?}"
    );
    let agg_id = |i: usize| obs[1]["nics"][i]["neighbor"]["aggregation"].clone();
    assert_eq!(agg_id(0)["enabled"], true);
    assert_eq!(agg_id(0), agg_id(1));
}
