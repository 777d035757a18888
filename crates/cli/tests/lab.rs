//! The lab suite (`cargo test --release --test lab`): qemu TCG VMs with
//! Debian's kernel and a real NetworkManager, linked NIC-to-NIC over UDP
//! on 127.0.0.1, against a "switch" VM running a kernel 802.3ad bond.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use nodenet_lab::{Image, Nic, Vm, VmSpec};

fn cache() -> PathBuf {
    std::env::var_os("NODENET_LAB_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/lab-cache"))
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

const SWITCH: &str = "ip link add bond0 type bond mode 802.3ad miimon 100 lacp_rate fast
for i in eth0 eth1; do ip link set $i down; ip link set $i master bond0; done
ip link set bond0 up
ip link add link bond0 name bond0.110 type vlan id 110
ip addr add 192.168.110.1/24 dev bond0.110
ip link set bond0.110 up
ip link add link bond0 name bond0.120 type vlan id 120
ip addr add 192.168.120.1/24 dev bond0.120
ip link set bond0.120 up
";

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
        node_cfg.join("day2.yml"),
        serde_yaml::to_string(&day2).unwrap(),
    )
    .unwrap();
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
    fs::write(
        node_cfg.join("broken.yml"),
        serde_yaml::to_string(&broken).unwrap(),
    )
    .unwrap();
    let switch_cfg = dir.join("switch-cfg");
    fs::create_dir_all(&switch_cfg).unwrap();
    fs::write(switch_cfg.join("switch.sh"), SWITCH).unwrap();
    let ports: Vec<u16> = (0..4).map(|_| free_udp_port()).collect();
    let node = VmSpec {
        name: "node".into(),
        role: "node".into(),
        machine_id: "5a1e0000000000000000000000000001".into(),
        nics: vec![
            Nic {
                local: ports[0],
                remote: ports[1],
                mac: "52:54:00:12:00:01".into(),
            },
            Nic {
                local: ports[2],
                remote: ports[3],
                mac: "52:54:00:12:00:02".into(),
            },
        ],
        config: node_cfg,
    };
    let switch = VmSpec {
        name: "switch".into(),
        role: "switch".into(),
        machine_id: "5a1e0000000000000000000000000002".into(),
        nics: vec![
            Nic {
                local: ports[1],
                remote: ports[0],
                mac: "52:54:00:34:00:01".into(),
            },
            Nic {
                local: ports[3],
                remote: ports[2],
                mac: "52:54:00:34:00:02".into(),
            },
        ],
        config: switch_cfg,
    };
    let mut n = Vm::launch(img, &node, dir).unwrap();
    let mut s = Vm::launch(img, &switch, dir).unwrap();
    n.wait_ready(Duration::from_secs(180)).unwrap();
    s.wait_ready(Duration::from_secs(180)).unwrap();
    (n, s)
}

/// Aggregator ids of the bond's ports, once both ports (actor and
/// partner) are collecting and distributing in the same aggregator.
fn aggregated(vm: &mut Vm) -> Option<Vec<String>> {
    let (_, out) = vm
        .run("cat /proc/net/bonding/bond0", Duration::from_secs(30))
        .ok()?;
    let ids: Vec<String> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("Aggregator ID:"))
        .map(|l| l.split(':').nth(1).unwrap().trim().to_string())
        .collect();
    // LACP port state bits: 0x10 collecting, 0x20 distributing.
    let states: Vec<u32> = out
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("port state:"))
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    let ready = states.len() == 4 && states.iter().all(|s| s & 0x30 == 0x30);
    // The first "Aggregator ID" is the bond's active aggregator.
    (ready && ids.len() == 3 && ids.iter().all(|i| i == &ids[0])).then_some(ids)
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    panic!("{what}: not reached within {timeout:?}");
}

#[test]
fn day1_keyfiles_lacp_link_failure_day2_apply_show_and_rollback() {
    let img = nodenet_lab::image(&cache()).expect("lab image");
    let tmp = tempfile::tempdir().unwrap();
    let (mut node, mut switch) = boot_pair(&img, tmp.path());

    // 1. LACP negotiated on both ends, ping over VLAN 110.
    wait_for("LACP on the node", Duration::from_secs(150), || {
        aggregated(&mut node).is_some()
    });
    wait_for("LACP on the switch", Duration::from_secs(60), || {
        aggregated(&mut switch).is_some()
    });
    let (st, out) = node
        .run("ping -c 3 -W 3 192.168.110.1", Duration::from_secs(60))
        .unwrap();
    assert_eq!(st, 0, "ping over VLAN 110 failed:\n{out}");
    let (_, addr) = node
        .run("ip -4 addr show bond0.110", Duration::from_secs(30))
        .unwrap();
    assert!(addr.contains("192.168.110.10/24"), "{addr}");

    // 2. One link down: the bond stays up, ping still works; back up:
    //    both ports aggregate again.
    node.monitor("set_link n0 off").unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let (st, out) = node
        .run("ping -c 3 -W 3 192.168.110.1", Duration::from_secs(60))
        .unwrap();
    assert_eq!(st, 0, "ping with eth0 down failed:\n{out}");
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
        || aggregated(&mut node).is_some(),
    );
    let (st, _) = node
        .run("ping -c 2 -W 3 192.168.110.1", Duration::from_secs(60))
        .unwrap();
    assert_eq!(st, 0);

    // 3. Day 2 without a reboot: VLAN 120 through `nodenet apply`.
    let boot = |vm: &mut Vm| {
        vm.run(
            "cat /proc/sys/kernel/random/boot_id",
            Duration::from_secs(30),
        )
        .unwrap()
        .1
        .trim()
        .to_string()
    };
    let boot_id = boot(&mut node);
    let (st, out) = node
        .run("s=$(date +%s.%N); nodenet apply /run/cfg/day2.yml --probe gateway 2>&1; r=$?; e=$(date +%s.%N); echo \"took $s $e\"; [ $r = 0 ]", Duration::from_secs(120))
        .unwrap();
    assert_eq!(st, 0, "day-2 apply failed:\n{out}");
    assert!(
        out.contains("probe gateway: ok") && out.contains("committed"),
        "{out}"
    );
    eprintln!("day-2 apply: {}", took(&out));
    let (st, out) = node
        .run("ping -c 3 -W 3 192.168.120.1", Duration::from_secs(60))
        .unwrap();
    assert_eq!(st, 0, "ping over VLAN 120 failed:\n{out}");
    assert_eq!(boot(&mut node), boot_id, "the node rebooted");
    let (st, out) = node
        .run(
            "nodenet diff /run/cfg/day2.yml --live 2>&1",
            Duration::from_secs(60),
        )
        .unwrap();
    assert_eq!(st, 0, "live state differs from the applied one:\n{out}");

    // 6. show reports what is there.
    let (st, shown) = node
        .run("nodenet show --format json", Duration::from_secs(60))
        .unwrap();
    assert_eq!(st, 0, "{shown}");
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
    let (st, out) = node
        .run("s=$(date +%s.%N); nodenet apply /run/cfg/broken.yml --probe gateway --probe-timeout 5 --timeout 30 2>&1; r=$?; e=$(date +%s.%N); echo \"took $s $e\"; [ $r = 1 ]", Duration::from_secs(120))
        .unwrap();
    assert_eq!(st, 0, "the broken apply did not fail with exit 1:\n{out}");
    assert!(
        out.contains("probe `gateway` failed") && out.contains("restored"),
        "{out}"
    );
    eprintln!("failed apply until restored: {}", took(&out));
    let (st, out) = node
        .run(
            "ping -c 2 -W 3 192.168.110.1 && ip route show default",
            Duration::from_secs(60),
        )
        .unwrap();
    assert_eq!(st, 0, "no connectivity after the rollback:\n{out}");
    assert!(out.contains("default via 192.168.110.1"), "{out}");
    let (st, out) = node
        .run(
            "nodenet diff /run/cfg/day2.yml --live 2>&1",
            Duration::from_secs(60),
        )
        .unwrap();
    assert_eq!(st, 0, "state after rollback differs:\n{out}");
    assert_eq!(boot(&mut node), boot_id);
    drop(switch);
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
