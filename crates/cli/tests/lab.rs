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

/// Aggregator ids of the bond's ports, once both are collecting and
/// distributing with the same aggregator.
fn aggregated(vm: &mut Vm) -> Option<Vec<String>> {
    let (_, out) = vm
        .run("cat /proc/net/bonding/bond0", Duration::from_secs(30))
        .ok()?;
    let ids: Vec<String> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("Aggregator ID:"))
        .map(|l| l.split(':').nth(1).unwrap().trim().to_string())
        .collect();
    // The first "Aggregator ID" is the bond's active aggregator.
    (ids.len() == 3
        && ids.iter().all(|i| i == &ids[0])
        && !out.contains("Partner Mac Address: 00:00:00:00:00:00"))
    .then_some(ids)
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
fn day1_keyfiles_bring_up_lacp_and_vlan_and_survive_a_link_failure() {
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
    drop(switch);
}
