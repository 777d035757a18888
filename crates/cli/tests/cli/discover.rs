//! `nodenet discover` against sushy-tools (the BMC emulator Metal3 uses):
//! the NICs each system's Redfish `EthernetInterfaces` lists, held
//! against the inventory; `--write` fills a missing MAC in place; the
//! saved discovery is what `check --observed` reads.

use std::fs;
use std::path::Path;

use crate::common::sushy::*;
use crate::common::*;

/// w0: eno2's MAC unknown (the hardware has one MAC left: it fills in);
/// w1: no NIC table, and a boot MAC on no NIC of the machine (which only
/// the hardware can tell); w2: a NIC MAC of another machine. Comments and flow maps, to see an edit touch one line.
fn inventory(dir: &Path, emu: &Emulator) -> std::path::PathBuf {
    let text = format!(
        "# Three hosts behind one emulator.
nodenet: v1
cluster: {{name: lab, provisioning: {{network: Disabled}}}}
credentials:
  good: {{username: admin, passwordEnv: NODENET_TEST_BMC_PW}}
hosts:
- name: w0
  bmc: {{address: \"{}\", credentials: good}}
  bootMACAddress: '00:5c:52:31:3a:00'
  nics: {{eno1: '00:5c:52:31:3a:00', eno2: ''}}   # eno2: ask the BMC
- name: w1
  bmc: {{address: \"{}\", credentials: good}}
  bootMACAddress: '00:5c:52:31:3a:99'
- name: w2
  bmc: {{address: \"{}\", credentials: good}}
  nics: {{eno1: '00:5c:52:31:3a:07'}}
",
        emu.system_url(0),
        emu.system_url(1),
        emu.system_url(2)
    );
    let p = dir.join("cluster.yaml");
    fs::write(&p, text).unwrap();
    p
}

/// `nodenet discover INV EXTRA…` with the emulator's password.
fn discover(inv: &Path, extra: &[&str]) -> std::process::Output {
    run(nodenet()
        .arg("discover")
        .args(extra)
        .arg(inv)
        .env("NODENET_TEST_BMC_PW", PASSWORD))
}

fn macs(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn discovery_fills_what_is_missing_and_finds_what_is_wrong() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let emu = Emulator::start_with_nics(
        tmp.path(),
        &[
            macs(&["00:5c:52:31:3a:00", "00:5c:52:31:3b:00"]),
            macs(&["00:5c:52:31:3a:01"]),
            macs(&["00:5c:52:31:3a:02", "00:5c:52:31:3b:02"]),
        ],
    );
    let inv = inventory(tmp.path(), &emu);
    let before = fs::read_to_string(&inv).unwrap();
    let saved = tmp.path().join("discovery.json");
    let o = discover(&inv, &["--format", "json", "-o", saved.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j = json(&o);
    // What each BMC lists.
    let listed: Vec<(String, usize)> = j["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["host"].as_str().unwrap().to_string(),
                h["nics"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [("w0".into(), 2), ("w1".into(), 1), ("w2".into(), 2)]
    );
    let found: Vec<(String, String, u64)> = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["host"].as_str().unwrap_or("").to_string(),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("observed-mac-missing".to_string(), "w0".to_string(), 10),
            (
                "observed-boot-mac-not-on-hardware".to_string(),
                "w1".to_string(),
                13
            ),
            (
                "observed-mac-not-on-hardware".to_string(),
                "w2".to_string(),
                16
            ),
        ]
    );
    assert_eq!(
        j["fills"],
        serde_json::json!([{"host": "w0", "nic": "eno2", "mac": "00:5c:52:31:3b:00"}])
    );
    // Without --write the inventory is untouched; the password is nowhere.
    assert_eq!(fs::read_to_string(&inv).unwrap(), before);
    assert!(!fs::read_to_string(&saved).unwrap().contains(PASSWORD));

    // The human form shows the edit as a diff first.
    let o = discover(&inv, &["--host", "w0"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("00:5c:52:31:3b:00"), "{stdout}");
    assert!(
        stdout.contains("-10      nics: {eno1: '00:5c:52:31:3a:00', eno2: ''}   # eno2: ask the BMC\n+10      nics: {eno1: '00:5c:52:31:3a:00', eno2: \"00:5c:52:31:3b:00\"}   # eno2: ask the BMC\n"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--write"));

    // --write: that one line changes, nothing else.
    let o = discover(&inv, &["--write", "--host", "w0"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let after = fs::read_to_string(&inv).unwrap();
    let changed: Vec<(usize, &str)> = before
        .lines()
        .zip(after.lines())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (_, b))| (i + 1, b))
        .collect();
    assert_eq!(
        changed,
        [(
            10,
            "  nics: {eno1: '00:5c:52:31:3a:00', eno2: \"00:5c:52:31:3b:00\"}   # eno2: ask the BMC"
        )]
    );
    assert_eq!(before.lines().count(), after.lines().count());

    // The saved discovery, read by check: the same findings, located in
    // the inventory (w0's MAC is known now).
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(&inv)
        .arg("--observed")
        .arg(&saved));
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    let codes: Vec<(&str, u64)> = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"].as_str().unwrap().starts_with("observed-"))
        .map(|d| (d["code"].as_str().unwrap(), d["line"].as_u64().unwrap_or(0)))
        .collect();
    assert_eq!(
        codes,
        [
            ("observed-boot-mac-not-on-hardware", 13),
            ("observed-mac-not-on-hardware", 16)
        ]
    );
}

#[test]
fn an_unreachable_bmc_fails_its_host_only() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let emu = Emulator::start_with_nics(tmp.path(), &[macs(&["00:5c:52:31:3a:00"])]);
    let inv = tmp.path().join("cluster.yaml");
    fs::write(
        &inv,
        format!(
            "nodenet: v1\ncluster: {{name: lab, provisioning: {{network: Disabled}}}}\ncredentials:\n  good: {{username: admin, passwordEnv: NODENET_TEST_BMC_PW}}\nhosts:\n- name: up\n  bmc: {{address: \"{}\", credentials: good}}\n  nics: {{eno1: '00:5c:52:31:3a:00'}}\n- name: gone\n  bmc: {{address: \"redfish-virtualmedia+http://127.0.0.1:{}/redfish/v1/Systems/1\", credentials: good}}\n",
            emu.system_url(0),
            free_port()
        ),
    )
    .unwrap();
    let o = discover(&inv, &["--timeout", "10", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["hosts"][0]["host"], "up");
    assert_eq!(j["failed"][0]["host"], "gone");
    assert!(j["diagnostics"].as_array().unwrap().is_empty(), "{j}");
}
