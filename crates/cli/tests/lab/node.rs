//! One node of the lab (`cargo test --release -p nodenet --test lab node::`): qemu TCG VMs with
//! Debian's kernel and a real NetworkManager, linked NIC-to-NIC over UDP
//! on 127.0.0.1, against a "switch" VM running a kernel 802.3ad bond.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cache;
use crate::common::*;
use nodenet_lab::{Image, Vm, VmSpec};

/// The node (NICs 52:54:00:12:00:01/02, config disk from `node_cfg`)
/// cabled NIC-to-NIC to the switch (a kernel 802.3ad bond with VLANs
/// 110/120/130); machine ids `machine` + 1 and + 2.
fn node_and_switch(dir: &Path, node_cfg: PathBuf, machine: u8) -> (VmSpec, VmSpec) {
    let switch_cfg = dir.join("switch-cfg");
    fs::create_dir_all(&switch_cfg).unwrap();
    fs::write(switch_cfg.join("switch.sh"), nodenet_lab::SWITCH_LACP_VLANS).unwrap();
    let (node_nics, switch_nics) = nodenet_lab::cables(
        &["52:54:00:12:00:01", "52:54:00:12:00:02"],
        &["52:54:00:34:00:01", "52:54:00:34:00:02"],
    );
    let node = VmSpec {
        name: "node".into(),
        role: "node".into(),
        machine_id: format!("5a1e00000000000000000000000000{:02x}", machine + 1),
        nics: node_nics,
        config: node_cfg,
        cdrom: None,
        config_drive: None,
    };
    let switch = VmSpec {
        name: "switch".into(),
        role: "switch".into(),
        machine_id: format!("5a1e00000000000000000000000000{:02x}", machine + 2),
        nics: switch_nics,
        config: switch_cfg,
        cdrom: None,
        config_drive: None,
    };
    (node, switch)
}

/// Boots the node (keyfiles from `nodenet render`) and the switch.
fn boot_pair(img: &Image, dir: &Path) -> (Vm, Vm) {
    let out = dir.join("render");
    let o = run(nodenet()
        .arg("render")
        .arg(repo().join("crates/cli/tests/lab-data/lab.yaml"))
        .arg("-o")
        .arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let node_cfg = dir.join("node-cfg");
    fs::create_dir_all(node_cfg.join("keyfiles")).unwrap();
    for f in files_under(&out.join("hosts/node/system-connections")) {
        fs::copy(&f, node_cfg.join("keyfiles").join(f.file_name().unwrap())).unwrap();
    }
    fs::copy(env!("CARGO_BIN_EXE_nodenet"), node_cfg.join("nodenet")).unwrap();
    // Day 2: VLAN 120 added.
    let state: serde_yaml::Value =
        serde_yaml::from_str(&fs::read_to_string(out.join("hosts/node/nmstate.yml")).unwrap())
            .unwrap();
    let mut day2 = state.clone();
    let vlan120: serde_yaml::Value = serde_yaml::from_str(
        "{name: bond0.120, type: vlan, state: up, vlan: {base-iface: bond0, id: 120}, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.168.120.10, prefix-length: 24}]}, ipv6: {enabled: false}}",
    )
    .unwrap();
    day2["interfaces"].as_sequence_mut().unwrap().push(vlan120);
    fs::write(
        node_cfg.join("vlan120.yml"),
        serde_yaml::to_string(&day2).unwrap(),
    )
    .unwrap();
    // And a name server (NetworkManager-only: not in the kernel's view).
    day2["dns-resolver"] = serde_yaml::from_str("{config: {server: [192.168.110.1]}}").unwrap();
    fs::write(
        node_cfg.join("day2.yml"),
        serde_yaml::to_string(&day2).unwrap(),
    )
    .unwrap();
    // Another VLAN, for the agent killed mid-apply and for --ephemeral.
    let mut vlan130 = day2.clone();
    let v130: serde_yaml::Value = serde_yaml::from_str(
        "{name: bond0.130, type: vlan, state: up, vlan: {base-iface: bond0, id: 130}, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.168.130.10, prefix-length: 24}]}, ipv6: {enabled: false}}",
    )
    .unwrap();
    vlan130["interfaces"].as_sequence_mut().unwrap().push(v130);
    fs::write(
        node_cfg.join("vlan130.yml"),
        serde_yaml::to_string(&vlan130).unwrap(),
    )
    .unwrap();
    // And one more, for the service stopped mid-apply.
    let mut vlan140 = vlan130.clone();
    let v140: serde_yaml::Value = serde_yaml::from_str(
        "{name: bond0.140, type: vlan, state: up, vlan: {base-iface: bond0, id: 140}, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.168.140.10, prefix-length: 24}]}, ipv6: {enabled: false}}",
    )
    .unwrap();
    vlan140["interfaces"].as_sequence_mut().unwrap().push(v140);
    fs::write(
        node_cfg.join("vlan140.yml"),
        serde_yaml::to_string(&vlan140).unwrap(),
    )
    .unwrap();
    // bond0 changed (its miimon), from the VLAN 130 state: the bond is
    // brought up again and negotiates LACP with its partner anew.
    for miimon in ["101", "102"] {
        let mut bond = vlan130.clone();
        for i in bond["interfaces"].as_sequence_mut().unwrap() {
            if i["name"] == "bond0" {
                i["link-aggregation"]["options"]["miimon"] = miimon.into();
            }
        }
        fs::write(
            node_cfg.join(format!("bond-miimon-{miimon}.yml")),
            serde_yaml::to_string(&bond).unwrap(),
        )
        .unwrap();
    }
    // Broken: the default route moved to a gateway that does not exist,
    // which cuts the node off from everything beyond its subnets.
    let mut broken = day2.clone();
    broken["routes"]["config"][0]["next-hop-address"] = "192.168.110.254".into();
    let old_default: serde_yaml::Value = serde_yaml::from_str(
        "{destination: 0.0.0.0/0, next-hop-address: 192.168.110.1, next-hop-interface: bond0.110, state: absent}",
    )
    .unwrap();
    broken["routes"]["config"]
        .as_sequence_mut()
        .unwrap()
        .push(old_default);
    // ... and a name server changed: nmstate keeps name servers in
    // NetworkManager's global DNS, which NetworkManager 1.42's checkpoints
    // do not cover; the rollback must bring the old one back too.
    broken["dns-resolver"] = serde_yaml::from_str("{config: {server: [192.168.110.99]}}").unwrap();
    fs::write(
        node_cfg.join("broken.yml"),
        serde_yaml::to_string(&broken).unwrap(),
    )
    .unwrap();
    // A wrong port list: eth1 replaced by a dummy in the bond, and down.
    // The bond stays up on eth0 and the gateway answers; only LLDP tells
    // that a port of the bond has no switch behind it.
    let mut port_down = day2.clone();
    for i in port_down["interfaces"].as_sequence_mut().unwrap() {
        if i["name"] == "eth1" {
            i["state"] = "down".into();
        }
        if i["name"] == "bond0" {
            i["link-aggregation"]["port"] = serde_yaml::from_str("[eth0, dummy0]").unwrap();
        }
    }
    let dummy: serde_yaml::Value =
        serde_yaml::from_str("{name: dummy0, type: dummy, state: up}").unwrap();
    port_down["interfaces"]
        .as_sequence_mut()
        .unwrap()
        .push(dummy);
    fs::write(
        node_cfg.join("port-down.yml"),
        serde_yaml::to_string(&port_down).unwrap(),
    )
    .unwrap();
    // Day 2 through the Machine Config Operator: the worker MachineConfig
    // of the lab inventory with each state, and with a worker added.
    let worker9 = {
        let mut w = state.clone();
        for i in w["interfaces"].as_sequence_mut().unwrap() {
            if i["name"] == "bond0.110" {
                i["ipv4"]["address"][0]["ip"] = "192.168.110.11".into();
            }
        }
        w
    };
    for (name, node_state, with_worker) in [
        ("day2", &day2, false),
        ("day2-worker9", &day2, true),
        ("vlan130", &vlan130, true),
        ("broken", &broken, true),
        ("vlan140", &vlan140, true),
    ] {
        let extra = with_worker.then_some(&worker9);
        fs::write(
            node_cfg.join(format!("mc-{name}.sh")),
            machine_config_writes(dir, node_state, extra),
        )
        .unwrap();
    }
    let (node, switch) = node_and_switch(dir, node_cfg, 0x00);
    let mut n = Vm::launch(img, &node, dir).unwrap();
    let mut s = Vm::launch(img, &switch, dir).unwrap();
    n.wait_ready(Duration::from_secs(180)).unwrap();
    s.wait_ready(Duration::from_secs(180)).unwrap();
    (n, s)
}

/// What the Machine Config Operator does with the worker MachineConfig
/// `nodenet render` writes for the lab inventory with the node in `node`
/// (and a second worker in `worker9`), as a script for the node: each
/// Ignition file written at its path with its mode, its content decoded
/// from its `data:` URL (by the node's coreutils), atomically.
fn machine_config_writes(
    dir: &Path,
    node: &serde_yaml::Value,
    worker9: Option<&serde_yaml::Value>,
) -> String {
    let mut inv: serde_yaml::Value = serde_yaml::from_str(
        &fs::read_to_string(repo().join("crates/cli/tests/lab-data/lab.yaml")).unwrap(),
    )
    .unwrap();
    inv["hosts"][0]["network"] = node.clone();
    if let Some(w) = worker9 {
        let host: serde_yaml::Value = serde_yaml::from_str(
            "{name: worker-9, role: worker, nics: {eth0: '52:54:00:12:09:01', eth1: '52:54:00:12:09:02'}}",
        )
        .unwrap();
        inv["hosts"].as_sequence_mut().unwrap().push(host);
        inv["hosts"][1]["network"] = w.clone();
    }
    let tmp = tempfile::tempdir_in(dir).unwrap();
    let file = tmp.path().join("lab.yaml");
    fs::write(&file, serde_yaml::to_string(&inv).unwrap()).unwrap();
    let out = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&file).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mc: serde_json::Value = serde_yaml::from_str(
        &fs::read_to_string(out.join("openshift/10-nodenet-nmstate-worker.yaml")).unwrap(),
    )
    .unwrap();
    let mut script = String::from("set -e\n");
    for f in mc["spec"]["config"]["storage"]["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        let mode = f["mode"].as_u64().unwrap();
        let source = f["contents"]["source"].as_str().unwrap();
        let (head, data) = source.split_once(',').unwrap();
        assert!(
            head.starts_with("data:") && head.ends_with(";base64"),
            "{head}"
        );
        assert_eq!(f["contents"]["compression"], "gzip");
        script += &format!(
            "mkdir -p \"$(dirname {path})\"\necho '{data}' | base64 -d | gunzip > {path}.mco\nchmod {mode:o} {path}.mco\nmv {path}.mco {path}\n"
        );
    }
    script
}

/// Runs `cmd` on `vm`; it must exit 0 (else the test fails with `what`
/// and the output). Its output.
fn must(vm: &mut Vm, cmd: &str, what: &str) -> String {
    let (st, out) = vm.run(cmd, Duration::from_secs(120)).unwrap();
    assert_eq!(st, 0, "{what}:\n{out}");
    out
}

/// The seed topology is up: LACP collecting and distributing in one
/// aggregator on both ends, 192.168.110.10/24 on VLAN 110, ping across.
fn assert_day1_network(node: &mut Vm, switch: &mut Vm) {
    wait_for("LACP on the node", Duration::from_secs(150), || {
        node.bond_aggregated("bond0").is_some()
    });
    wait_for("LACP on the switch", Duration::from_secs(60), || {
        switch.bond_aggregated("bond0").is_some()
    });
    let out = must(
        node,
        "ping -c 3 -W 3 192.168.110.1 && ip -4 addr show bond0.110",
        "ping over VLAN 110 failed",
    );
    assert!(out.contains("192.168.110.10/24"), "{out}");
}

fn wait_for(what: &str, timeout: Duration, f: impl FnMut() -> bool) {
    nodenet_lab::wait_for(what, timeout, f).unwrap()
}

#[test]
fn day1_keyfiles_lacp_link_failure_day2_apply_show_and_rollback() {
    if skip_without(&["debootstrap", "genisoimage", "qemu-system-x86_64"]) {
        return;
    }
    let _slot = crate::lab_slot();
    let img = nodenet_lab::image(&cache()).expect("lab image");
    let tmp = tempfile::tempdir().unwrap();
    let (mut node, mut switch) = boot_pair(&img, tmp.path());

    // 1. LACP negotiated on both ends, ping over VLAN 110.
    assert_day1_network(&mut node, &mut switch);

    // 2. One link down: the bond stays up, ping still works; back up:
    //    both ports aggregate again.
    node.monitor("set_link n0 off").unwrap();
    std::thread::sleep(Duration::from_secs(3));
    must(
        &mut node,
        "ping -c 3 -W 3 192.168.110.1",
        "ping with eth0 down failed",
    );
    let (_, bond) = node
        .run("cat /proc/net/bonding/bond0", Duration::from_secs(30))
        .unwrap();
    assert!(
        bond.contains("MII Status: down"),
        "eth0 should be down:\n{bond}"
    );
    node.monitor("set_link n0 on").unwrap();
    wait_for(
        "re-aggregation on the node",
        Duration::from_secs(90),
        || node.bond_aggregated("bond0").is_some(),
    );
    let (st, _) = node
        .run("ping -c 2 -W 3 192.168.110.1", Duration::from_secs(60))
        .unwrap();
    assert_eq!(st, 0);

    // 3. Day 2 without a reboot: VLAN 120 through `nodenet apply`.
    let boot_id = node.boot_id().unwrap();
    //    A new VLAN alone: its profile loaded directly under a checkpoint.
    let out = must(&mut node, "s=$(date +%s.%N); nodenet apply /run/cfg/vlan120.yml --probe gateway 2>&1; r=$?; e=$(date +%s.%N); echo \"took $s $e\"; [ $r = 0 ]", "day-2 apply failed");
    assert!(
        out.contains("probe gateway: ok")
            && out.contains("committed")
            && out.contains("loaded directly")
            && out.contains("quick look "),
        "{out}"
    );
    eprintln!("day-2 apply (VLAN 120): {}\n{out}", took(&out));
    must(
        &mut node,
        "ping -c 3 -W 3 192.168.120.1",
        "ping over VLAN 120 failed",
    );
    //    Then a name server: a change to existing profiles, merged by nmstate.
    let out = must(&mut node, "s=$(date +%s.%N); nodenet apply /run/cfg/day2.yml --probe gateway 2>&1; r=$?; e=$(date +%s.%N); echo \"took $s $e\"; [ $r = 0 ]", "day-2 apply of the name server failed");
    assert!(
        out.contains("committed") && out.contains("merged and applied by nmstate"),
        "{out}"
    );
    eprintln!("day-2 apply (name server): {}\n{out}", took(&out));
    must(
        &mut node,
        "grep -qx 'nameserver 192.168.110.1' /etc/resolv.conf",
        "NetworkManager does not use the name server",
    );
    //    The same state again: nothing to do (nmstate's gen_diff re-lists
    //    routes that are in place; they are not sent again).
    let out = must(
        &mut node,
        "nodenet apply /run/cfg/day2.yml 2>&1",
        "re-applying the day-2 state failed",
    );
    assert!(out.contains("nothing to apply"), "{out}");
    assert_eq!(node.boot_id().unwrap(), boot_id, "the node rebooted");
    must(
        &mut node,
        "nodenet diff /run/cfg/day2.yml --live 2>&1",
        "live state differs from the applied one",
    );

    // 6. show reports what is there.
    let shown = must(&mut node, "nodenet show --format json", "command failed");
    let json_line = shown
        .lines()
        .find(|l| l.starts_with('{'))
        .expect("show printed JSON");
    let v: serde_json::Value = serde_json::from_str(json_line).unwrap();
    let ifaces = v["interfaces"].as_array().unwrap();
    let by = |n: &str| {
        ifaces
            .iter()
            .find(|i| i["name"] == n)
            .unwrap_or_else(|| panic!("{n} missing in show"))
    };
    assert_eq!(by("bond0")["link-aggregation"]["mode"], "802.3ad");
    let mut ports: Vec<String> = by("bond0")["link-aggregation"]["port"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    ports.sort();
    assert_eq!(ports, vec!["eth0", "eth1"]);
    assert_eq!(by("bond0.120")["vlan"]["id"], 120);
    assert_eq!(
        by("bond0.110")["ipv4"]["address"][0]["ip"],
        "192.168.110.10"
    );
    let routes = v["routes"]["running"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        routes
            .iter()
            .any(|r| r["destination"] == "0.0.0.0/0" && r["next-hop-address"] == "192.168.110.1"),
        "{}",
        v["routes"]
    );

    // 4. A change that cuts the node off is undone.
    let out = must(&mut node, "s=$(date +%s.%N); NODENET_LOG=info nodenet apply /run/cfg/broken.yml --probe gateway --probe-timeout 5 --timeout 30 2>&1; r=$?; e=$(date +%s.%N); echo \"took $s $e\"; [ $r = 1 ]", "the broken apply did not fail with exit 1");
    assert!(
        out.contains("probe `gateway` failed") && out.contains("restored"),
        "{out}"
    );
    // NetworkManager's rollback left the new name server in place; the
    // agent wrote the saved one back.
    assert!(
        out.contains("writing back the global DNS configuration"),
        "{out}"
    );
    eprintln!("failed apply until restored: {}\n{out}", took(&out));
    let out = must(
        &mut node,
        "ping -c 2 -W 3 192.168.110.1 && ip route show default",
        "no connectivity after the rollback",
    );
    assert!(out.contains("default via 192.168.110.1"), "{out}");
    must(
        &mut node,
        "grep -qx 'nameserver 192.168.110.1' /etc/resolv.conf && ! grep -q 192.168.110.99 /etc/resolv.conf",
        "the name server was not rolled back",
    );
    must(
        &mut node,
        "nodenet diff /run/cfg/day2.yml --live 2>&1",
        "state after rollback differs",
    );
    assert_eq!(node.boot_id().unwrap(), boot_id);

    // 4b. `--probe lldp`: a wrong port list (eth1 replaced by a dummy)
    //     keeps the gateway reachable over eth0, but a bond port hears no
    //     switch: rolled back, eth1 back in the aggregation. (The
    //     switch's lldpd sends every 2 s.)
    let out = must(
        &mut node,
        "nodenet apply /run/cfg/port-down.yml --probe gateway,lldp --probe-timeout 6 --timeout 30 2>&1; [ $? = 1 ]",
        "the apply that takes a bond port down was not refused",
    );
    assert!(
        out.contains("probe `lldp` failed")
            && out.contains("no LLDP neighbour within 6 s on bond port(s) dummy0")
            && out.contains("restored"),
        "{out}"
    );
    wait_for(
        "re-aggregation after the LLDP probe's rollback",
        Duration::from_secs(90),
        || node.bond_aggregated("bond0").is_some(),
    );
    must(
        &mut node,
        "nodenet diff /run/cfg/day2.yml --live 2>&1",
        "state after the LLDP probe's rollback differs",
    );

    // --no-commit, then `nodenet rollback` from another process: the
    // VLAN and its profile are gone, VLAN 120 and the default route stay.
    let out = must(
        &mut node,
        "nodenet apply /run/cfg/vlan130.yml --no-commit --timeout 60 --probe lldp --probe-timeout 6 2>&1 && ping -c 1 -W 3 192.168.130.1 && nodenet rollback 2>&1",
        "apply --no-commit then rollback",
    );
    // Both bond ports heard the switch after the change.
    assert!(
        out.contains("checkpoint open") && out.contains("probe lldp: ok"),
        "{out}"
    );
    must(
        &mut node,
        "[ ! -e /sys/class/net/bond0.130 ] && ! grep -rqs 'id=130' /etc/NetworkManager/system-connections && ping -c 2 -W 3 192.168.120.1 && nodenet diff /run/cfg/day2.yml --live 2>&1 || { ls /sys/class/net; grep -rl 'id=130' /etc/NetworkManager/system-connections; false; }",
        "not back to the day-2 state after `nodenet rollback`",
    );

    // 5. The agent killed mid-apply (SIGKILL once the new VLAN exists,
    //    under a 10 s checkpoint): NetworkManager's own timeout restores.
    let out = must(&mut node, "NODENET_LOG=info nodenet apply /run/cfg/vlan130.yml --no-commit --timeout 10 >/tmp/killed.log 2>&1 & pid=$!; i=0; while [ ! -e /sys/class/net/bond0.130 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; kill -9 $pid; wait $pid; echo \"agent exit $?\"; cat /tmp/killed.log; date +%s.%N", "command failed");
    assert!(
        out.contains("agent exit 137"),
        "the agent was not killed mid-apply:\n{out}"
    );
    // The new VLAN went the direct way: its checkpoint is NetworkManager's
    // to roll back, as nmstate's would be.
    assert!(out.contains("loading their profiles directly"), "{out}");
    let killed_at: f64 = out.lines().last().unwrap().trim().parse().unwrap();
    let mut restored_at = 0.0;
    wait_for(
        "NetworkManager's checkpoint rollback",
        Duration::from_secs(60),
        || {
            let (st, out) = node
                .run(
                    "[ ! -e /sys/class/net/bond0.130 ] && ! grep -rqs 'id=130' /etc/NetworkManager/system-connections && date +%s.%N",
                    Duration::from_secs(30),
                )
                .unwrap();
            restored_at = out.trim().parse().unwrap_or(0.0);
            st == 0
        },
    );
    eprintln!(
        "agent killed: NetworkManager restored {:.1} s after the kill (checkpoint timeout 10 s)",
        restored_at - killed_at
    );
    must(&mut node, "ping -c 2 -W 3 192.168.110.1 && ping -c 2 -W 3 192.168.120.1 && nodenet diff /run/cfg/day2.yml --live 2>&1", "not back to the day-2 state after the kill");

    // 7. --ephemeral: in NetworkManager's memory only (no keyfile in /etc).
    let out = must(
        &mut node,
        "nodenet apply /run/cfg/vlan130.yml --ephemeral --probe ping:192.168.130.1 2>&1",
        "ephemeral apply failed",
    );
    assert!(
        out.contains("probe ping:192.168.130.1: ok") && out.contains("loaded directly"),
        "{out}"
    );
    let out = must(&mut node, "grep -rls 'id=130' /etc/NetworkManager/system-connections; grep -rls 'id=130' /run/NetworkManager/system-connections", "no in-memory profile for VLAN 130");
    assert!(
        !out.contains("/etc/"),
        "--ephemeral wrote a persistent profile:\n{out}"
    );

    // 8. The MachineConfig path, for comparison: the day-2 state as
    //    /etc/nodenet/nmstate/node.yml, VLAN 120's profile removed, and a
    //    reboot; `nodenet service` (what nodenet-apply.service runs) brings
    //    VLAN 120 back at boot and records the file's sha256. The
    //    ephemeral VLAN 130 is gone.
    let out = must(&mut node, "mkdir -p /etc/nodenet/nmstate && cp /run/cfg/day2.yml /etc/nodenet/nmstate/node.yml && nmcli connection delete bond0.120 && sync && ls /etc/NetworkManager/system-connections", "command failed");
    assert!(!out.contains("bond0.120.nmconnection"), "{out}");
    let reboot = std::time::Instant::now();
    node.reset().unwrap();
    node.wait_ready(Duration::from_secs(180)).unwrap();
    wait_for(
        "nodenet service at boot, then VLAN 120",
        Duration::from_secs(120),
        || {
            node.run(
                "grep -q '^exit 0' /run/nodenet-service.log && ping -c 1 -W 1 192.168.120.1",
                Duration::from_secs(30),
            )
            .is_ok_and(|(st, _)| st == 0)
        },
    );
    eprintln!(
        "reboot (MachineConfig path) until the service committed and VLAN 120 answers: {:.2} s",
        reboot.elapsed().as_secs_f64()
    );
    assert_ne!(node.boot_id().unwrap(), boot_id, "the node did not reboot");
    let (st, out) = node
        .run(
            "ls /etc/NetworkManager/system-connections; cat /run/nodenet-service.log; [ ! -e /sys/class/net/bond0.130 ] && echo 'no bond0.130'; sha256sum /etc/nodenet/nmstate/node.yml; cat /var/lib/nodenet/status.json",
            Duration::from_secs(30),
        )
        .unwrap();
    eprintln!("after the reboot:\n{out}");
    assert_eq!(st, 0, "{out}");
    assert!(
        out.contains("no bond0.130"),
        "the ephemeral VLAN survived the reboot:\n{out}"
    );
    let sha = out
        .lines()
        .find(|l| l.ends_with("/etc/nodenet/nmstate/node.yml") && !l.starts_with("applying"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    assert!(
        out.contains(&format!("\"sha256\": \"{sha}\"")),
        "the service did not record the sha256 of node.yml:\n{out}"
    );
    must(
        &mut node,
        "nodenet diff /run/cfg/day2.yml --live 2>&1",
        "state after the reboot differs",
    );

    // 9. Day 2 through the Machine Config Operator, without a reboot: it
    //    writes the files the MachineConfig carries, then restarts
    //    nodenet-apply.service (render's node disruption policy), which
    //    runs the unit's ExecStart, and ExecStopPost when it stops.
    let boot_id = node.boot_id().unwrap();
    let (start, stop_post) = unit_commands();
    let restart = format!(
        "{stop_post} 2>&1; echo \"stop-post exit $?\"; {start} 2>&1; echo \"service exit $?\""
    );
    let status = |node: &mut Vm| -> serde_json::Value {
        let out = must(node, "cat /var/lib/nodenet/status.json", "no status record");
        serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap()
    };
    //    The MachineConfig as rendered for the day-2 state: the node's file
    //    as render writes it: the same state, written byte for byte as
    //    the day-2 file had it (YAML as serde_yaml writes it), so unchanged.
    let out = must(
        &mut node,
        &format!("sh /run/cfg/mc-day2.sh && stat -c 'mode %a' /etc/nodenet/nmstate/node.yml && {restart}"),
        "the rendered MachineConfig",
    );
    assert!(
        out.contains("mode 644") && out.contains("service exit 0"),
        "{out}"
    );
    assert_eq!(status(&mut node)["last"]["outcome"], "unchanged");
    //    a. A worker added: another host's file appears, this node's is
    //       unchanged. The unit restarts and changes nothing.
    let out = must(
        &mut node,
        &format!("sh /run/cfg/mc-day2-worker9.sh && ls /etc/nodenet/nmstate && {restart}"),
        "restart after a worker was added",
    );
    assert!(out.contains("worker-9.yml"), "{out}");
    assert!(
        out.contains("service exit 0") && out.contains("applied already"),
        "{out}"
    );
    assert_eq!(status(&mut node)["last"]["outcome"], "unchanged");
    must(
        &mut node,
        "[ ! -e /sys/class/net/bond0.130 ] && nodenet diff /run/cfg/day2.yml --live 2>&1",
        "another host's file changed this node",
    );
    //    b. This node's file changed (VLAN 130 added): applied under the
    //       default probes (the default gateway; no kubeconfig here).
    let out = must(
        &mut node,
        &format!("sh /run/cfg/mc-vlan130.sh && {restart} && ping -c 2 -W 3 192.168.130.1"),
        "the changed file was not applied",
    );
    assert!(
        out.contains("service exit 0")
            && out.contains("probe gateway: ok")
            && out.contains("committed"),
        "{out}"
    );
    let st = status(&mut node);
    assert_eq!(st["last"]["outcome"], "applied", "{st}");
    let sha130 = st["applied"]["sha256"].as_str().unwrap().to_string();
    assert!(must(
        &mut node,
        "sha256sum /etc/nodenet/nmstate/node.yml",
        "sha256sum"
    )
    .starts_with(&sha130));
    //    c. A disruptive change that cuts the node off (the default route
    //       to a gateway that does not exist): rolled back, the unit
    //       fails (the MCO degrades the node and stops the pool), the
    //       record says why; what was in place stays recorded.
    //       (The unit's guard with a 10 s probe timeout: the broken state
    //       never answers, and step 10 tests the 120 s default.)
    assert!(start.contains(" --probe-timeout 120"), "{start}");
    let quick_restart = restart.replace(" --probe-timeout 120", " --probe-timeout 10");
    let out = must(
        &mut node,
        &format!(
            "sh /run/cfg/mc-broken.sh && {quick_restart}; nodenet status; echo \"status exit $?\""
        ),
        "command failed",
    );
    assert!(
        out.contains("service exit 1") && out.contains("status exit 1"),
        "{out}"
    );
    let st = status(&mut node);
    assert_eq!(st["last"]["outcome"], "rolled-back", "{st}");
    assert_eq!(st["last"]["failed_probe"], "gateway", "{st}");
    assert_eq!(st["applied"]["sha256"], sha130.as_str(), "{st}");
    must(&mut node, "ping -c 2 -W 3 192.168.110.1 && ping -c 2 -W 3 192.168.130.1 && nodenet diff /run/cfg/vlan130.yml --live 2>&1", "not back to the state in place after the rollback");
    //    d. The unit stopped mid-apply: a new VLAN 140 whose probe waits
    //       (192.168.140.1 answers before the change, through the default
    //       gateway where the switch holds it; after it, the node looks for
    //       it on VLAN 140, which the switch does not carry), under a 120 s
    //       checkpoint; SIGKILL once the apply has its checkpoint open, then
    //       ExecStopPost: rolled back at once, no checkpoint left open.
    must(
        &mut switch,
        "ip addr add 192.168.140.1/32 dev bond0.110",
        "switch address",
    );
    let long = start
        .replace(" --timeout 480", " --timeout 120")
        .replace(" --probe-timeout 120", "");
    let out = must(&mut node, &format!("sh /run/cfg/mc-vlan140.sh && ({long} --probe ping:192.168.140.1 --probe-timeout 60 >/tmp/stopped.log 2>&1 & pid=$!; i=0; while [ ! -e /run/nodenet/pending-rollback.json ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done; sleep 1; [ -e /sys/class/net/bond0.140 ] && echo 'bond0.140 up before the stop'; kill -9 $pid; wait $pid; echo \"service exit $?\"; cat /tmp/stopped.log; s=$(date +%s.%N); {stop_post} 2>&1; echo \"stop-post exit $?\"; e=$(date +%s.%N); echo \"took $s $e\")"), "command failed");
    assert!(
        out.contains("bond0.140 up before the stop")
            && out.contains("service exit 137")
            && out.contains("stop-post exit 0"),
        "{out}"
    );
    assert!(out.contains("rolled back the change left open"), "{out}");
    eprintln!(
        "ExecStopPost after a SIGKILL mid-apply: rolled back in {}",
        took(&out)
    );
    let out = must(&mut node, "dbus-send --system --print-reply --dest=org.freedesktop.NetworkManager /org/freedesktop/NetworkManager org.freedesktop.DBus.Properties.Get string:org.freedesktop.NetworkManager string:Checkpoints", "NetworkManager's checkpoints");
    assert!(
        !out.contains("object path"),
        "a checkpoint is still open:\n{out}"
    );
    must(&mut node, "[ ! -e /sys/class/net/bond0.140 ] && ! grep -rqs 'id=140' /etc/NetworkManager/system-connections && ping -c 2 -W 3 192.168.130.1 && nodenet diff /run/cfg/vlan130.yml --live 2>&1", "not back to the state in place after ExecStopPost");
    assert_eq!(node.boot_id().unwrap(), boot_id, "the node rebooted");

    // 10. The guard's defaults against slow convergence: a change that
    //     brings bond0 up again while its LACP partner answers only 20 s
    //     later (the switch's bond down from the moment the apply opens
    //     its checkpoint). With the default probe timeout (120 s, as
    //     kubernetes-nmstate's) the gateway answers once LACP is back and
    //     the change is committed; with the old 10 s it is rolled back.
    let slow_partner = |node: &mut Vm, switch: &mut Vm, file: &str, extra: &str| -> String {
        node.run(
            &format!("rm -f /tmp/slow.log; (s=$(date +%s.%N); nodenet apply /run/cfg/{file} --probe gateway{extra} >/tmp/slow.log 2>&1; r=$?; e=$(date +%s.%N); echo \"exit $r\" >> /tmp/slow.log; echo \"took $s $e\" >> /tmp/slow.log) >/dev/null 2>&1 & true"),
            Duration::from_secs(30),
        )
        .unwrap();
        wait_for(
            "the apply's checkpoint record",
            Duration::from_secs(60),
            || {
                node.run(
                    "[ -e /run/nodenet/pending-rollback.json ]",
                    Duration::from_secs(30),
                )
                .is_ok_and(|(st, _)| st == 0)
            },
        );
        must(
            switch,
            "ip link set bond0 down; (sleep 20; ip link set bond0 up) >/dev/null 2>&1 & true",
            "the switch's bond down for 20 s",
        );
        let mut log = String::new();
        wait_for("the apply to end", Duration::from_secs(300), || {
            log = node
                .run("cat /tmp/slow.log", Duration::from_secs(30))
                .map(|(_, o)| o)
                .unwrap_or_default();
            log.contains("took ")
        });
        wait_for("LACP again on the node", Duration::from_secs(120), || {
            node.bond_aggregated("bond0").is_some()
        });
        log
    };
    let log = slow_partner(&mut node, &mut switch, "bond-miimon-101.yml", "");
    assert!(log.contains("exit 0") && log.contains("committed"), "{log}");
    eprintln!(
        "bond whose LACP partner answers after 20 s, default guard: committed in {}\n{log}",
        took(&log)
    );
    must(
        &mut node,
        "nodenet diff /run/cfg/bond-miimon-101.yml --live 2>&1",
        "the bond change is in place",
    );
    let log = slow_partner(
        &mut node,
        &mut switch,
        "bond-miimon-102.yml",
        " --probe-timeout 10",
    );
    assert!(
        log.contains("exit 1")
            && log.contains("probe `gateway` failed")
            && log.contains("restored"),
        "{log}"
    );
    eprintln!("the same with a 10 s probe: rolled back ({})", took(&log));
    must(
        &mut node,
        "ping -c 2 -W 3 192.168.110.1 && nodenet diff /run/cfg/bond-miimon-101.yml --live 2>&1",
        "back to the committed bond after the rollback",
    );
    drop(switch);
}

/// The commands of dist/systemd/nodenet-apply.service (ExecStart,
/// ExecStopPost), nodenet taken from PATH.
fn unit_commands() -> (String, String) {
    let unit = fs::read_to_string(repo().join("dist/systemd/nodenet-apply.service")).unwrap();
    let line = |key: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in the unit"))
            .replace("/usr/local/bin/nodenet", "nodenet")
    };
    (line("ExecStart="), line("ExecStopPost="))
}

/// "took START END" (seconds since the epoch, in the guest) → "N.NN s".
fn took(out: &str) -> String {
    let line = out
        .lines()
        .find(|l| l.starts_with("took "))
        .unwrap_or("took 0 0");
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    format!(
        "{:.2} s",
        v.get(1).unwrap_or(&0.0) - v.first().unwrap_or(&0.0)
    )
}

/// A cloud image's first boot from a config drive, as Ironic (and the
/// baremetal-operator's BareMetalHost `networkData`) deploy one: the
/// network_data.json `render --with network-data` writes for the lab's
/// node, on an ISO 9660 disk labelled config-2 made the way Ironic makes
/// it. The node runs no nodenet and no NetworkManager: systemd starts
/// cloud-init, its ConfigDrive datasource reads the file, writes netplan,
/// netplan writes systemd-networkd's files, networkd brings up the
/// 802.3ad bond (LACP with the switch) and VLAN 110 with its address and
/// default route; `diff --live` against the host's intent is empty.
#[test]
fn config_drive_network_data_through_cloud_init() {
    if skip_without(&["debootstrap", "genisoimage", "qemu-system-x86_64"]) {
        return;
    }
    let _slot = crate::lab_slot();
    let img = nodenet_lab::image(&cache()).expect("lab image");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = dir.join("render");
    let o = run(nodenet()
        .arg("render")
        .arg(repo().join("crates/cli/tests/lab-data/lab.yaml"))
        .args(["--with", "network-data", "-o"])
        .arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // The config drive: openstack/latest/{meta_data,network_data}.json.
    let tree = dir.join("config-drive");
    let latest = tree.join("openstack/latest");
    fs::create_dir_all(&latest).unwrap();
    fs::copy(
        out.join("network-data/node/network_data.json"),
        latest.join("network_data.json"),
    )
    .unwrap();
    fs::write(
        latest.join("meta_data.json"),
        r#"{"uuid": "5a1e0000-0000-4000-8000-000000000011", "name": "node", "hostname": "node"}"#,
    )
    .unwrap();
    let iso = dir.join("config-drive.iso");
    // Ironic's (openstacksdk's make_configdrive) genisoimage options.
    let o = run(std::process::Command::new("genisoimage")
        .args(["-quiet", "-o"])
        .arg(&iso)
        .args([
            "-ldots",
            "-allow-lowercase",
            "-allow-multidot",
            "-l",
            "-publisher",
            "nodenet lab",
            "-J",
            "-r",
            "-V",
            "config-2",
        ])
        .arg(&tree));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let node_cfg = dir.join("node-cfg");
    fs::create_dir_all(&node_cfg).unwrap();
    fs::copy(env!("CARGO_BIN_EXE_nodenet"), node_cfg.join("nodenet")).unwrap();
    fs::copy(
        out.join("hosts/node/nmstate.yml"),
        node_cfg.join("nmstate.yml"),
    )
    .unwrap();
    let (mut node, switch) = node_and_switch(dir, node_cfg, 0x10);
    node.role = "cloud".into();
    node.config_drive = Some(iso);
    let powered_on = std::time::Instant::now();
    let mut n = Vm::launch(&img, &node, dir).unwrap();
    let mut s = Vm::launch(&img, &switch, dir).unwrap();
    n.wait_ready(Duration::from_secs(180)).unwrap();
    s.wait_ready(Duration::from_secs(180)).unwrap();

    // cloud-init, not anything of ours, configured it: the datasource
    // found the config drive and netplan was written from it.
    wait_for("cloud-init's local stage", Duration::from_secs(240), || {
        n.run(
            "test -s /etc/netplan/50-cloud-init.yaml",
            Duration::from_secs(10),
        )
        .is_ok_and(|(st, _)| st == 0)
    });
    assert_day1_network(&mut n, &mut s);
    println!(
        "config drive: bond aggregated and the gateway answering {:.1} s after power-on",
        powered_on.elapsed().as_secs_f64()
    );
    let ds = must(
        &mut n,
        "jq -r '.v1.platform, .v1.subplatform' /run/cloud-init/instance-data.json && ! pidof NetworkManager && pidof systemd-networkd && ls /run/systemd/network",
        "cloud-init's instance data",
    );
    assert!(ds.contains("configdrive\nconfig-disk (/dev/vdc)"), "{ds}");
    assert!(ds.contains("10-netplan-bond0.110.network"), "{ds}");
    // The bond options network_data.json carries (`bond_miimon`,
    // `bond_lacp_rate`) reached the kernel; `diff --live` reads only the
    // mode and the ports.
    let options = must(
        &mut n,
        "cat /sys/class/net/bond0/bonding/mode /sys/class/net/bond0/bonding/miimon /sys/class/net/bond0/bonding/lacp_rate",
        "bond0's options",
    );
    assert!(options.contains("802.3ad 4\n100\nfast 1"), "{options}");
    must(
        &mut n,
        "nodenet diff /run/cfg/nmstate.yml --live 2>&1",
        "the network cloud-init made from our network_data.json is not the intent",
    );
    drop(s);
}
