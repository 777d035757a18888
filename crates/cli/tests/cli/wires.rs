//! Wire verification against real peers in network namespaces: lldpd
//! (Debian's) announcing on veth "switch ports", tcpdump captures, and
//! two `nodenet netverify run` processes exchanging tagged frames over
//! veth cables. The switch-side VLAN filtering, MTU and LACP cases need a
//! kernel with bridge and bonding: the lab (`lab.rs`) proves those.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

/// The switch port's 802.3 maximum frame size (1518: MTU 1500) and VLAN
/// names 110 and 120, as custom TLVs: lldpd sends neither on veth ports
/// (no ethtool, no VLAN module here); the lab's switch sends them itself.
const SWP2_TLVS: &str = "configure ports swp2 lldp custom-tlv add oui 00,12,0f subtype 4 oui-info 05,ee
configure ports swp2 lldp custom-tlv add oui 00,80,c2 subtype 3 oui-info 00,6e,07,76,6c,61,6e,31,31,30
configure ports swp2 lldp custom-tlv add oui 00,80,c2 subtype 3 oui-info 00,78,07,76,6c,61,6e,31,32,30
";

const INVENTORY: &str = r#"nodenet: v1
hosts:
- name: node-a
  nics:
  - {name: eth0, mac: "52:54:00:aa:00:01", switch: sw1, port: swp1}
  - {name: eth1, mac: "52:54:00:aa:00:02", switch: sw1, port: swp2, vlans: [110, 130]}
  network:
    interfaces:
    - name: eth0
      type: ethernet
      mtu: 9000
      ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.10, prefix-length: 24}]}
    - {name: eth1, type: ethernet, mtu: 9000}
"#;

/// The findings about the wires (the inventory's own warnings left out).
fn lldp_findings(o: &std::process::Output) -> Vec<serde_json::Value> {
    json(o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"].as_str().unwrap().starts_with("lldp-"))
        .cloned()
        .collect()
}

fn observe(node: &Netns, dir: &Path) -> (std::process::Output, serde_json::Value) {
    let obs = dir.join("node-a.json");
    let o = run(node
        .command(env!("CARGO_BIN_EXE_nodenet"))
        .args([
            "lldp",
            "-i",
            "eth0",
            "-i",
            "eth1",
            "--timeout",
            "20",
            "--host",
            "node-a",
        ])
        .args(["--format", "json", "-o"])
        .arg(&obs));
    let v = serde_json::from_str(&fs::read_to_string(&obs).unwrap_or_default()).unwrap_or_default();
    (o, v)
}

/// `nodenet lldp` on NICs that are down: it brings them up (link only),
/// hears lldpd on each, puts them down again. With the cables crossed,
/// `check --observed` says each NIC is on the other's port; the port
/// that announces frame size and VLANs is checked against the intent.
#[test]
fn lldp_hears_lldpd_on_every_nic_and_check_finds_crossed_cables_vlans_and_mtu() {
    if skip_without(&["ip", "lldpd"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let sw = Netns::new("lldp-sw");
    let node = Netns::new("lldp-node");
    // Crossed: eth0 to swp2, eth1 to swp1.
    node.cable("eth0", &sw, "swp2");
    node.cable("eth1", &sw, "swp1");
    node.exec(&["link", "set", "eth0", "address", "52:54:00:aa:00:01"]);
    node.exec(&["link", "set", "eth1", "address", "52:54:00:aa:00:02"]);
    for p in ["swp1", "swp2"] {
        sw.exec(&["link", "set", p, "up"]);
    }
    let _lldpd = Lldpd::start(&sw, tmp.path(), SWP2_TLVS);
    assert!(!node.link("eth0").contains(",UP"), "{}", node.link("eth0"));
    let started = Instant::now();
    let (o, v) = observe(&node, tmp.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // It stopped as soon as both NICs had a neighbour.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let nic = |i: usize| &v["nics"][i];
    assert_eq!(nic(0)["name"], "eth0");
    assert_eq!(nic(0)["mac"], "52:54:00:aa:00:01");
    assert_eq!(nic(0)["neighbor"]["system_name"], "sw1");
    assert_eq!(nic(0)["neighbor"]["port_id"]["value"], "swp2");
    assert_eq!(nic(0)["neighbor"]["port_id"]["subtype"], "ifname");
    assert_eq!(nic(0)["neighbor"]["max_frame_size"], 1518);
    assert_eq!(nic(0)["neighbor"]["vlans"][0]["id"], 110);
    assert_eq!(nic(0)["neighbor"]["vlans"][1]["name"], "vlan120");
    assert_eq!(nic(1)["neighbor"]["port_id"]["value"], "swp1");
    // Put back as they were: down.
    for l in ["eth0", "eth1"] {
        assert!(!node.link(l).contains(",UP"), "{}", node.link(l));
    }
    let inv = tmp.path().join("inventory.yaml");
    fs::write(&inv, INVENTORY).unwrap();
    let check = |observed: &Path| {
        run(nodenet()
            .args(["check", "--format", "json"])
            .arg(&inv)
            .arg("--observed")
            .arg(observed))
    };
    let o = check(&tmp.path().join("node-a.json"));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let d = lldp_findings(&o);
    let codes: Vec<&str> = d.iter().map(|x| x["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["lldp-wrong-port", "lldp-wrong-port"], "{d:#?}");
    assert_eq!(d[0]["line"], 5, "{:#?}", d[0]);
    assert!(
        d[0]["message"]
            .as_str()
            .unwrap()
            .contains("eth0 is cabled to sw1 port swp2, not to port swp1"),
        "{:#?}",
        d[0]
    );
    let help = |i: usize| d[i]["help"].as_str().unwrap_or_default().to_string();
    assert!(
        help(0).contains("looks swapped with NIC eth1"),
        "{:#?}",
        d[0]
    );
    assert!(
        help(1).contains("looks swapped with NIC eth0"),
        "{:#?}",
        d[1]
    );

    // Cabled right: eth1 on swp2, which announces VLANs 110 and 120 and
    // frames of 1518 bytes; the inventory wants VLAN 130 and MTU 9000.
    node.exec(&["link", "del", "eth0"]);
    node.exec(&["link", "del", "eth1"]);
    node.cable("eth0", &sw, "swp1");
    node.cable("eth1", &sw, "swp2");
    node.exec(&["link", "set", "eth0", "address", "52:54:00:aa:00:01"]);
    node.exec(&["link", "set", "eth1", "address", "52:54:00:aa:00:02"]);
    for p in ["swp1", "swp2"] {
        sw.exec(&["link", "set", p, "up"]);
    }
    let (o, _) = observe(&node, tmp.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = check(&tmp.path().join("node-a.json"));
    let d = lldp_findings(&o);
    let found: Vec<(&str, u64)> = d
        .iter()
        .map(|x| (x["code"].as_str().unwrap(), x["line"].as_u64().unwrap()))
        .collect();
    // VLAN 130 at its place in `vlans: [110, 130]`; the MTU at eth1's
    // `mtu: 9000` (eth0's port announces no frame size: not checked).
    assert_eq!(
        found,
        [("lldp-vlan-missing", 6), ("lldp-mtu", 13)],
        "{d:#?}"
    );
    assert_eq!(d[0]["column"], 82, "{:#?}", d[0]);
    assert!(
        d[1]["message"]
            .as_str()
            .unwrap()
            .contains("at most 1518 bytes (MTU 1500)"),
        "{:#?}",
        d[1]
    );
}

/// tcpdump's capture of lldpd's frames decodes as listening does; a
/// capture with damaged frames gives one warning per frame, and a file
/// that is no capture is refused with exit 1.
#[test]
fn lldp_decodes_a_tcpdump_capture_and_warns_per_damaged_frame() {
    if skip_without(&["ip", "lldpd", "tcpdump"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let sw = Netns::new("pcap-sw");
    let node = Netns::new("pcap-node");
    node.cable("eth0", &sw, "swp1");
    sw.exec(&["link", "set", "swp1", "up"]);
    node.exec(&["link", "set", "eth0", "up"]);
    let _lldpd = Lldpd::start(&sw, tmp.path(), "");
    let cap = tmp.path().join("lldp.pcap");
    let o = run(node
        .command(tool("tcpdump"))
        .args(["-i", "eth0", "-c", "3", "-w"])
        .arg(&cap)
        .arg("ether proto 0x88cc"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(nodenet()
        .args([
            "lldp", "--format", "json", "--nic", "eth0", "--host", "node-a", "--pcap",
        ])
        .arg(&cap));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["source"], format!("pcap:{}", cap.display()));
    assert_eq!(v["nics"][0]["frames"], 3);
    assert_eq!(v["nics"][0]["neighbor"]["port_id"]["value"], "swp1");
    assert_eq!(
        v["nics"][0]["neighbor"]["system_description"],
        "nodenet test switch"
    );
    assert!(v["warnings"].as_array().is_none(), "{v:#}");

    // Frame 2's LLDPDU cut (its record says fewer bytes), frame 3's
    // first TLV made a port id: two warnings, frame 1 still read.
    let mut bytes = fs::read(&cap).unwrap();
    let rec1 = 24;
    let len1 = u32::from_le_bytes(bytes[rec1 + 8..rec1 + 12].try_into().unwrap()) as usize;
    let rec2 = rec1 + 16 + len1;
    let len2 = u32::from_le_bytes(bytes[rec2 + 8..rec2 + 12].try_into().unwrap()) as usize;
    let rec3 = rec2 + 16 + len2;
    // Frame 3: the chassis id TLV's type byte (after the 14-byte header).
    bytes[rec3 + 16 + 14] = 0x04;
    // Frame 2: keep 40 bytes of it.
    let cut = 40u32;
    bytes[rec2 + 8..rec2 + 12].copy_from_slice(&cut.to_le_bytes());
    bytes.drain(rec2 + 16 + cut as usize..rec2 + 16 + len2);
    let damaged = tmp.path().join("damaged.pcap");
    fs::write(&damaged, &bytes).unwrap();
    let o = run(nodenet().args(["lldp", "--pcap"]).arg(&damaged));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("capture -: sw1 port swp1"), "{out}");
    let warnings: Vec<&str> = out.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 2, "{out}");
    assert!(
        warnings[0].starts_with("warning: frame 2: LLDPDU byte "),
        "{out}"
    );
    assert!(
        warnings[1].contains("frame 3: LLDPDU byte 0: TLV 1 must be the chassis id TLV"),
        "{out}"
    );

    fs::write(
        tmp.path().join("not.pcap"),
        "interfaces:\n- {name: eth0, type: ethernet}\n",
    )
    .unwrap();
    let o = run(nodenet()
        .args(["lldp", "--pcap"])
        .arg(tmp.path().join("not.pcap")));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a pcap file"),
        "{o:?}"
    );
}

const TWO_NODES: &str = r#"nodenet: v1
hosts:
- name: node-a
  nics:
  - {name: eth0, mac: "52:54:00:aa:00:01"}
  - {name: eth1, mac: "52:54:00:aa:00:02"}
  network:
    interfaces:
    - {name: eth0, type: ethernet, mtu: 9000, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.10, prefix-length: 24}]}}
    - {name: eth0.110, type: vlan, vlan: {base-iface: eth0, id: 110}}
    - {name: eth1.130, type: vlan, vlan: {base-iface: eth1, id: 130}}
- name: node-b
  nics:
  - {name: eth0, mac: "52:54:00:bb:00:01"}
  - {name: eth1, mac: "52:54:00:bb:00:02"}
  network:
    interfaces:
    - {name: eth0, type: ethernet, mtu: 9000, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.11, prefix-length: 24}]}}
    - {name: eth0.110, type: vlan, vlan: {base-iface: eth0, id: 110}}
    - {name: eth1.130, type: vlan, vlan: {base-iface: eth1, id: 130}}
"#;

/// Two nodes, two veth cables, `netverify run` on both at once: every
/// planned VLAN passes (and untagged, and 9000-byte frames with the MTUs
/// raised for the run); with the cables crossed, the report says which
/// VLAN does not pass between whom and who hears what it does not plan.
/// Links and MTUs are as before after each run.
#[test]
fn netverify_between_two_nodes_over_veth_cables() {
    if skip_without(&["ip"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let a = Netns::new("nv-a");
    let b = Netns::new("nv-b");
    let wire = |crossed: bool| {
        for (ns, l) in [(&a, "eth0"), (&a, "eth1")] {
            if ns.link(l).contains(l) {
                ns.exec(&["link", "del", l]);
            }
        }
        a.cable("eth0", &b, if crossed { "eth1" } else { "eth0" });
        a.cable("eth1", &b, if crossed { "eth0" } else { "eth1" });
        for (ns, host) in [(&a, "aa"), (&b, "bb")] {
            ns.exec(&[
                "link",
                "set",
                "eth0",
                "address",
                &format!("52:54:00:{host}:00:01"),
            ]);
            ns.exec(&[
                "link",
                "set",
                "eth1",
                "address",
                &format!("52:54:00:{host}:00:02"),
            ]);
        }
        // node-b's eth0 is up already, at MTU 1500; the rest is down.
        b.exec(&["link", "set", "eth0", "up"]);
    };
    wire(false);
    let inv = tmp.path().join("inventory.yaml");
    fs::write(&inv, TWO_NODES).unwrap();
    let plan = tmp.path().join("plan.json");
    let o = run(nodenet()
        .args(["netverify", "plan", "--mtu", "--window", "4"])
        .arg(&inv)
        .arg("-o")
        .arg(&plan));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: serde_json::Value = serde_json::from_str(&fs::read_to_string(&plan).unwrap()).unwrap();
    assert_eq!(p["hosts"][0]["nics"][0]["vlans"], serde_json::json!([110]));
    assert_eq!(p["hosts"][0]["nics"][0]["mtu"], 9000);
    assert_eq!(p["hosts"][0]["nics"][1]["untagged"], false);

    let run_both = |tag: &str| {
        let spawn = |ns: &Netns, host: &str| {
            ns.command(env!("CARGO_BIN_EXE_nodenet"))
                .args(["netverify", "run", "--host", host, "-o"])
                .arg(tmp.path().join(format!("{tag}-{host}.json")))
                .arg(&plan)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let ca = spawn(&a, "node-a");
        let cb = spawn(&b, "node-b");
        for c in [ca, cb] {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        run(nodenet()
            .args(["netverify", "report"])
            .arg(tmp.path().join(format!("{tag}-node-a.json")))
            .arg(tmp.path().join(format!("{tag}-node-b.json")))
            .arg(&inv)
            .args(["--format", "json"]))
    };
    // Flags (UP or not) and MTU: what a run may change and must put back.
    let state = |ns: &Netns, l: &str| {
        let line = ns.link(l);
        let flags = line
            .split(['<', '>'])
            .nth(1)
            .unwrap_or_default()
            .replace("NO-CARRIER,", "");
        let mtu = line
            .split(" mtu ")
            .nth(1)
            .and_then(|m| m.split(' ').next())
            .unwrap_or_default()
            .to_string();
        (flags, mtu)
    };
    let links = || {
        [
            state(&a, "eth0"),
            state(&a, "eth1"),
            state(&b, "eth0"),
            state(&b, "eth1"),
        ]
    };
    let before = links();
    assert_eq!(
        before[2],
        ("BROADCAST,MULTICAST,UP".to_string(), "1500".to_string())
    );
    let o = run_both("straight");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(json(&o)["diagnostics"], serde_json::json!([]));
    // The human report: every direction of every segment passes.
    let human = run(nodenet()
        .args(["netverify", "report"])
        .arg(tmp.path().join("straight-node-a.json"))
        .arg(tmp.path().join("straight-node-b.json"))
        .arg(&inv));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("VLAN 110: 2/2 directions pass"), "{text}");
    assert!(text.contains("VLAN 130: 2/2 directions pass"), "{text}");
    assert!(text.contains("untagged: 2/2 directions pass"), "{text}");
    assert!(!text.contains(" m") && !text.contains(" -"), "{text}");
    let r: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(tmp.path().join("straight-node-b.json")).unwrap())
            .unwrap();
    let heard = &r["nics"][0]["heard"];
    assert!(
        heard
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["sent_vlan"] == 110
                && h["seen_vlan"] == 110
                && h["full_frames"].as_u64().unwrap() > 0),
        "{heard:#}"
    );
    // At most rate x window frames per NIC (20/s, 4 s, and one tick).
    let sent: u64 = r["nics"][0]["sent"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!((40..=81).contains(&sent), "{sent}");
    assert_eq!(
        r["changed"],
        serde_json::json!(["eth1: brought up", "eth0: MTU raised from 1500"])
    );
    assert_eq!(links(), before);

    wire(true);
    let o = run_both("crossed");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let d = json(&o)["diagnostics"].as_array().unwrap().clone();
    let summary: Vec<(String, String)> = d
        .iter()
        .map(|x| {
            (
                x["code"].as_str().unwrap().to_string(),
                x["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let has = |code: &str, text: &str| summary.iter().any(|(c, m)| c == code && m.contains(text));
    assert!(
        has(
            "netverify-vlan-not-carried",
            "VLAN 110 does not pass between node-a eth0 and node-b eth0 (in either direction)"
        ),
        "{summary:#?}"
    );
    assert!(
        has(
            "netverify-vlan-not-carried",
            "VLAN 130 does not pass between node-a eth1 and node-b eth1"
        ),
        "{summary:#?}"
    );
    assert!(
        has(
            "netverify-other-segment",
            "node-b: NIC eth1 hears VLAN 110 from node-a eth0"
        ),
        "{summary:#?}"
    );
    // Located at the VLAN's `id:` in the intent of node-a.
    let vlan110 = d
        .iter()
        .find(|x| x["message"].as_str().unwrap().starts_with("VLAN 110"))
        .unwrap();
    assert_eq!(
        (vlan110["line"].as_u64(), vlan110["host"].as_str()),
        (Some(10), Some("node-a"))
    );
}

/// Bad inputs: a result of another plan, a plan that is not one, a host
/// the plan does not have; clear errors, no panic.
#[test]
fn netverify_refuses_what_it_cannot_use() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = tmp.path().join("inventory.yaml");
    fs::write(&inv, TWO_NODES).unwrap();
    let plan = tmp.path().join("plan.json");
    let o = run(nodenet()
        .args(["netverify", "plan"])
        .arg(&inv)
        .arg("-o")
        .arg(&plan));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(nodenet()
        .args(["netverify", "run", "--host", "node-z"])
        .arg(&plan));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("host `node-z` is not in the plan (it has node-a, node-b)"),
        "{o:?}"
    );
    let o = run(nodenet()
        .args(["netverify", "run", "--host", "node-a"])
        .arg(&inv));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not JSON"),
        "{o:?}"
    );
    let o = run(nodenet()
        .args(["netverify", "plan", "--rate", "5000"])
        .arg(&inv));
    assert_eq!(o.status.code(), Some(2));
    let o = run(nodenet().args(["netverify", "report"]).arg(&plan).arg(&inv));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a netverify result"),
        "{o:?}"
    );
    let o = run(nodenet()
        .args(["check"])
        .arg(&inv)
        .arg("--observed")
        .arg(&plan)
        .args(["--format", "json"]));
    assert_eq!(o.status.code(), Some(1));
    let d = json(&o)["diagnostics"].as_array().unwrap().clone();
    let invalid: Vec<&serde_json::Value> = d
        .iter()
        .filter(|x| x["code"] == "observed-invalid")
        .collect();
    assert_eq!(invalid.len(), 1, "{d:#?}");
    assert!(
        invalid[0]["message"]
            .as_str()
            .unwrap()
            .contains("not an LLDP observation"),
        "{d:#?}"
    );
}

/// Probe frames are only what the issue allows: raw frames on the NIC,
/// at the plan's rate; `run` on a NIC with no peer still ends on time,
/// hears nothing, and leaves the link as it was.
#[test]
fn netverify_alone_ends_on_time_and_restores_the_link() {
    if skip_without(&["ip"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let a = Netns::new("nv-alone");
    let peer = Netns::new("nv-alone-peer");
    a.cable("eth0", &peer, "eth0");
    a.exec(&["link", "set", "eth0", "address", "52:54:00:aa:00:01"]);
    let inv = tmp.path().join("inventory.yaml");
    fs::write(&inv, TWO_NODES).unwrap();
    let plan = tmp.path().join("plan.json");
    let o = run(nodenet()
        .args(["netverify", "plan", "--window", "2", "--rate", "50"])
        .arg(&inv)
        .arg("-o")
        .arg(&plan));
    assert!(o.status.success());
    let started = Instant::now();
    let o = run(a
        .command(env!("CARGO_BIN_EXE_nodenet"))
        .args(["netverify", "run", "--host", "node-a"])
        .arg(&plan));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(started.elapsed() < Duration::from_secs(5));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["nics"][0]["interface"], "eth0");
    assert_eq!(
        r["nics"][1]["interface"],
        serde_json::Value::Null,
        "no eth1 here"
    );
    assert_eq!(r["nics"][0]["heard"], serde_json::json!([]));
    let sent = r["nics"][0]["sent"].as_object().unwrap();
    let total: u64 = sent.values().map(|v| v.as_u64().unwrap()).sum();
    assert!(total <= 101, "{total} frames in 2 s at 50/s");
    assert!(
        sent.contains_key("0") && sent.contains_key("110"),
        "{sent:?}"
    );
    assert!(!a.link("eth0").contains(",UP"), "{}", a.link("eth0"));
}
