//! `nodenet import` and `nodenet diff`, judged by nmstate's generator and
//! by NetworkManager's own keyfile code (`nmcli --offline`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

fn gc_into(state: &Path, dir: &Path) {
    let o = run(nodenet().arg("gc").arg(state).arg("-o").arg(dir));
    assert!(
        o.status.success(),
        "gc {state:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn import(paths: &[&Path]) -> std::process::Output {
    run(nodenet().arg("import").args(paths))
}

/// gc → import → gc is the identity on every keyfile of the corpus, and
/// the import needs no warning for keyfiles nmstate wrote.
#[test]
fn corpus_round_trip_is_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus: Vec<PathBuf> = files_under(&repo().join("tests/gc-corpus"));
    assert!(corpus.len() >= 20);
    for f in corpus {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        let first = tmp.path().join(format!("{stem}-1"));
        gc_into(&f, &first);
        let o = import(&[&first]);
        assert!(
            o.status.success(),
            "import {stem}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("keyfile-unmapped"),
            "{stem}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let imported = tmp.path().join(format!("{stem}.yml"));
        fs::write(&imported, &o.stdout).unwrap();
        let second = tmp.path().join(format!("{stem}-2"));
        gc_into(&imported, &second);
        assert_eq!(
            files_by_name(&first),
            files_by_name(&second),
            "{stem}: round trip changed the keyfiles"
        );
    }
}

/// `nmcli --offline connection add …` prints the keyfile NetworkManager
/// would write.
fn nmcli_add(args: &[&str]) -> String {
    let o = run(Command::new(tool("nmcli"))
        .args(["--offline", "connection", "add"])
        .args(args));
    assert!(
        o.status.success(),
        "nmcli add {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // nmcli prints "Warning: master='bond0' doesn't refer to any existing
    // profile." on stdout before the keyfile: drop what precedes it.
    let out = String::from_utf8(o.stdout).unwrap();
    out[out.find("[connection]").expect("a keyfile")..].to_string()
}

/// A keyfile as NetworkManager normalises it (`nmcli --offline connection
/// modify` reads it with NM's own code and writes it back with defaults).
fn normalise(keyfile: &str) -> String {
    let mut child = Command::new(tool("nmcli"))
        .args(["--offline", "connection", "modify", "connection.zone", ""])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(keyfile.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "nmcli rejects:\n{keyfile}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The settings that matter, per interface, from normalised keyfiles.
///
/// Ignored on purpose: `uuid` and `id` (nmstate names profiles after their
/// interface and derives UUIDs from it, so the controller is compared by
/// interface name, whatever the reference was written as); defaults that
/// NetworkManager or nmstate fill in (`dhcp-timeout`, `addr-gen-mode`,
/// `dns-priority`, `autoconnect-slaves`, `may-fail`, empty `[proxy]`,
/// `[ethernet]`); a gateway written as `address1=…,GW` or `gateway=GW`,
/// which nmstate writes as a default route: both become "default via GW",
/// compared without metric.
fn settings(keyfiles: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let parsed: Vec<BTreeMap<(String, String), String>> = keyfiles
        .iter()
        .map(|k| {
            let mut m = BTreeMap::new();
            let mut group = String::new();
            for line in k.lines() {
                if let Some(g) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                    group = g.to_string();
                } else if let Some((key, v)) = line.split_once('=') {
                    m.insert((group.clone(), key.to_string()), v.to_string());
                }
            }
            m
        })
        .collect();
    let get = |m: &BTreeMap<(String, String), String>, g: &str, k: &str| {
        m.get(&(g.to_string(), k.to_string())).cloned()
    };
    // uuid/id → interface name, to compare controllers and VLAN parents.
    let mut names = BTreeMap::new();
    for m in &parsed {
        let iface = get(m, "connection", "interface-name").unwrap_or_default();
        for key in ["uuid", "id", "interface-name"] {
            if let Some(v) = get(m, "connection", key) {
                names.insert(v, iface.clone());
            }
        }
    }
    let resolve = |r: Option<String>| {
        r.map(|r| names.get(&r).cloned().unwrap_or(r))
            .unwrap_or_default()
    };
    let mut out = BTreeMap::new();
    for m in &parsed {
        let iface = get(m, "connection", "interface-name").unwrap_or_default();
        let mut s = BTreeSet::new();
        s.insert(format!(
            "type={}",
            get(m, "connection", "type").unwrap_or_default()
        ));
        s.insert(format!(
            "controller={}",
            resolve(get(m, "connection", "master"))
        ));
        s.insert(format!(
            "port-type={}",
            get(m, "connection", "slave-type").unwrap_or_default()
        ));
        for ((g, k), v) in m {
            let keep = match g.as_str() {
                "vlan" => k == "id" || k == "protocol",
                "bond" => true,
                "bridge" => k == "stp",
                "ethernet" => k == "mtu" || k == "cloned-mac-address",
                "ipv4" | "ipv6" => {
                    k == "method"
                        || k == "dns-search"
                        || k.starts_with("route") && !k.ends_with("_options")
                }
                _ => false,
            };
            if keep {
                s.insert(format!("{g}.{k}={v}"));
            }
            if (g == "ipv4" || g == "ipv6") && k.starts_with("address") {
                let mut parts = v.split(',');
                s.insert(format!("{g}.address={}", parts.next().unwrap()));
                if let Some(gw) = parts.next() {
                    s.insert(format!("{g}.default-via={gw}"));
                }
            }
            if (g == "ipv4" || g == "ipv6") && k == "gateway" {
                s.insert(format!("{g}.default-via={v}"));
            }
            if (g == "ipv4" || g == "ipv6") && k == "dns" {
                for d in v.split(';').filter(|d| !d.is_empty()) {
                    s.insert(format!("dns={d}"));
                }
            }
        }
        if let Some(p) = get(m, "vlan", "parent") {
            s.insert(format!("vlan.parent={}", resolve(Some(p))));
        }
        // nmstate writes the gateway as routeN=0.0.0.0/0,GW,METRIC.
        let routes: Vec<String> = s.iter().filter(|x| x.contains(".route")).cloned().collect();
        for r in routes {
            let (lhs, v) = r.split_once('=').unwrap();
            let fam = lhs.split('.').next().unwrap();
            let parts: Vec<&str> = v.split(',').collect();
            s.remove(&r);
            if parts[0] == "0.0.0.0/0" || parts[0] == "::/0" {
                s.insert(format!("{fam}.default-via={}", parts.get(1).unwrap_or(&"")));
            } else {
                let metric = parts
                    .get(2)
                    .filter(|m| **m != "0")
                    .map(|m| format!(" metric {m}"))
                    .unwrap_or_default();
                s.insert(format!(
                    "{fam}.route={} via {}{metric}",
                    parts[0],
                    parts.get(1).unwrap_or(&"")
                ));
            }
        }
        out.insert(iface, s);
    }
    out
}

#[test]
fn networkmanager_written_keyfiles_survive_import_and_gc() {
    let scenarios: Vec<(&str, Vec<Vec<&str>>)> = vec![
        (
            "bond-active-backup-static",
            vec![
                vec![
                    "type",
                    "bond",
                    "ifname",
                    "bond0",
                    "con-name",
                    "bond0",
                    "bond.options",
                    "mode=active-backup,miimon=100,primary=eno1",
                    "ipv4.method",
                    "manual",
                    "ipv4.addresses",
                    "10.0.0.5/24",
                    "ipv4.gateway",
                    "10.0.0.1",
                    "ipv4.dns",
                    "10.0.0.53",
                    "ipv6.method",
                    "disabled",
                ],
                vec![
                    "type",
                    "ethernet",
                    "ifname",
                    "eno1",
                    "con-name",
                    "bond0-port-a",
                    "master",
                    "bond0",
                    "slave-type",
                    "bond",
                ],
                vec![
                    "type",
                    "ethernet",
                    "ifname",
                    "eno2",
                    "con-name",
                    "bond0-port-b",
                    "master",
                    "bond0",
                    "slave-type",
                    "bond",
                ],
            ],
        ),
        (
            "bond-8023ad-vlan-dhcp",
            vec![
                vec![
                    "type",
                    "bond",
                    "ifname",
                    "bond0",
                    "con-name",
                    "bond0",
                    "bond.options",
                    "mode=802.3ad,miimon=1,lacp_rate=fast,xmit_hash_policy=layer3+4",
                    "ipv4.method",
                    "disabled",
                    "ipv6.method",
                    "disabled",
                ],
                vec![
                    "type",
                    "ethernet",
                    "ifname",
                    "eno2",
                    "con-name",
                    "bond0-slave-1",
                    "master",
                    "bond0",
                    "slave-type",
                    "bond",
                ],
                vec![
                    "type",
                    "ethernet",
                    "ifname",
                    "eno3",
                    "con-name",
                    "bond0-slave-2",
                    "master",
                    "bond0",
                    "slave-type",
                    "bond",
                ],
                vec![
                    "type",
                    "vlan",
                    "ifname",
                    "bond0.110",
                    "con-name",
                    "vlan110",
                    "vlan.parent",
                    "bond0",
                    "vlan.id",
                    "110",
                    "ipv4.method",
                    "auto",
                    "ipv6.method",
                    "disabled",
                ],
            ],
        ),
        (
            "bridge-static-routes-dns",
            vec![
                vec![
                    "type",
                    "bridge",
                    "ifname",
                    "br0",
                    "con-name",
                    "br0",
                    "bridge.stp",
                    "no",
                    "ipv4.method",
                    "manual",
                    "ipv4.addresses",
                    "192.168.122.2/24",
                    "ipv4.routes",
                    "10.10.0.0/16 192.168.122.254 50",
                    "ipv4.dns",
                    "192.168.122.1",
                    "ipv4.dns-search",
                    "lab.example.com",
                    "ipv6.method",
                    "manual",
                    "ipv6.addresses",
                    "fd00:122::2/64",
                    "ipv6.routes",
                    "fd00:99::/64 fd00:122::1 20",
                ],
                vec![
                    "type",
                    "ethernet",
                    "ifname",
                    "enp1s0",
                    "con-name",
                    "br0-port",
                    "master",
                    "br0",
                    "slave-type",
                    "bridge",
                ],
            ],
        ),
        (
            "ethernet-dhcp-and-vlan-static",
            vec![
                vec![
                    "type",
                    "ethernet",
                    "ifname",
                    "eth0",
                    "con-name",
                    "uplink",
                    "ipv4.method",
                    "auto",
                    "ipv6.method",
                    "auto",
                    "802-3-ethernet.mtu",
                    "9000",
                ],
                vec![
                    "type",
                    "vlan",
                    "ifname",
                    "eth0.20",
                    "con-name",
                    "storage",
                    "vlan.parent",
                    "eth0",
                    "vlan.id",
                    "20",
                    "ipv4.method",
                    "manual",
                    "ipv4.addresses",
                    "172.16.20.5/24",
                    "ipv6.method",
                    "disabled",
                ],
            ],
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = BTreeSet::new();
    for (name, profiles) in scenarios {
        let dir = tmp.path().join(name);
        fs::create_dir_all(&dir).unwrap();
        let originals: Vec<String> = profiles.iter().map(|args| nmcli_add(args)).collect();
        for (i, k) in originals.iter().enumerate() {
            fs::write(dir.join(format!("{i}.nmconnection")), k).unwrap();
        }
        let o = import(&[&dir]);
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let state = tmp.path().join(format!("{name}.yml"));
        fs::write(&state, &o.stdout).unwrap();
        // The imported state is clean for nodenet's checker too.
        let c = run(nodenet().arg("check").arg(&state));
        assert!(
            c.status.success(),
            "{name}: check: {}",
            String::from_utf8_lossy(&c.stderr)
        );
        let ours_dir = tmp.path().join(format!("{name}-gc"));
        gc_into(&state, &ours_dir);
        let ours: Vec<String> = files_by_name(&ours_dir)
            .values()
            .map(|k| normalise(k))
            .collect();
        let theirs: Vec<String> = originals.iter().map(|k| normalise(k)).collect();
        let expected = settings(&theirs);
        assert_eq!(
            expected.len(),
            profiles.len(),
            "{name}: one entry per interface"
        );
        assert_eq!(expected, settings(&ours), "{name}");
        seen.extend(expected.into_values().flatten());
    }
    // The comparison covered what the issue names (not vacuous).
    for s in [
        "bond.mode=active-backup",
        "bond.mode=802.3ad",
        "bond.miimon=1",
        "controller=bond0",
        "port-type=bond",
        "controller=br0",
        "bridge.stp=false",
        "vlan.id=110",
        "vlan.parent=bond0",
        "ipv4.address=10.0.0.5/24",
        "ipv4.default-via=10.0.0.1",
        "ipv4.route=10.10.0.0/16 via 192.168.122.254 metric 50",
        "ipv6.route=fd00:99::/64 via fd00:122::1 metric 20",
        "dns=192.168.122.1",
        "ipv4.dns-search=lab.example.com;",
        "ipv4.method=auto",
        "ipv6.method=auto",
        "ipv6.method=disabled",
        "ethernet.mtu=9000",
    ] {
        assert!(seen.contains(s), "never compared: {s}; saw {seen:?}");
    }
}

/// The seed topology as a person writes it by hand: ids that differ from
/// interface names, ports naming their bond by UUID, `multi-connect=1`.
#[test]
fn hand_written_seed_keyfiles_import_to_bond_and_vlan() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bond_uuid = "0b1b6c4e-2f0d-4a36-9d7b-6c2a9c2d0b01";
    fs::write(
        dir.join("bond0.nmconnection"),
        format!("[connection]\nid=bond0\nuuid={bond_uuid}\ntype=bond\ninterface-name=bond0\n\n[bond]\nmode=802.3ad\nmiimon=1\n\n[ipv4]\nmethod=disabled\n\n[ipv6]\nmethod=disabled\n"),
    )
    .unwrap();
    for (i, nic) in ["eno2", "eno3"].iter().enumerate() {
        fs::write(
            dir.join(format!("bond0-slave-{}.nmconnection", i + 1)),
            format!("[connection]\nid=bond0-slave-{}\ntype=ethernet\ninterface-name={nic}\nmaster={bond_uuid}\nslave-type=bond\n", i + 1),
        )
        .unwrap();
    }
    fs::write(
        dir.join("bond0.110.nmconnection"),
        "# baremetal network\n[connection]\nid=bond0.110\ntype=vlan\ninterface-name=bond0.110\nmulti-connect=1\n\n[vlan]\nflags=1\nid=110\nparent=bond0\n\n[ipv4]\nmethod=auto\n\n[ipv6]\nmethod=disabled\n",
    )
    .unwrap();
    let o = import(&[dir]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let state: serde_json::Value = serde_yaml::from_slice(&o.stdout).unwrap();
    let ifaces = state["interfaces"].as_array().unwrap();
    let by = |n: &str| {
        ifaces
            .iter()
            .find(|i| i["name"] == n)
            .unwrap_or_else(|| panic!("{n} missing: {state}"))
    };
    assert_eq!(by("bond0")["type"], "bond");
    assert_eq!(by("bond0")["link-aggregation"]["mode"], "802.3ad");
    assert_eq!(
        by("bond0")["link-aggregation"]["port"],
        serde_json::json!(["eno2", "eno3"])
    );
    assert_eq!(by("bond0")["link-aggregation"]["options"]["miimon"], 1);
    assert_eq!(
        by("bond0.110")["vlan"],
        serde_json::json!({"base-iface": "bond0", "id": 110})
    );
    assert_eq!(by("bond0.110")["ipv4"]["dhcp"], true);
    assert_eq!(by("eno2")["type"], "ethernet");
    let f = tmp.path().join("host.yml");
    fs::write(&f, &o.stdout).unwrap();
    assert!(run(nodenet().arg("check").arg(&f)).status.success());
}

#[test]
fn bad_keyfiles_are_located_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str, u64)> = vec![
        ("missing-group.nmconnection", b"id=eth0\ntype=ethernet\n".to_vec(), "keyfile-syntax", 1),
        ("bad-ip.nmconnection", b"[connection]\nid=eth0\ntype=ethernet\ninterface-name=eth0\n\n[ipv4]\nmethod=manual\naddress1=10.0.0.300/24\n".to_vec(), "keyfile-invalid", 8),
        ("vlan-no-parent.nmconnection", b"[connection]\nid=v\ntype=vlan\ninterface-name=v10\n[vlan]\nid=10\n".to_vec(), "keyfile-invalid", 5),
        ("unknown-type.nmconnection", b"[connection]\nid=x\ntype=frobnicator\ninterface-name=x0\n".to_vec(), "keyfile-invalid", 3),
        ("garbage.nmconnection", (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 7) as u8).collect(), "keyfile-syntax", 1),
        ("huge.nmconnection", { let mut v = b"[connection]\n".to_vec(); v.resize(10 << 20, b'#'); v }, "keyfile-syntax", 1),
        ("controller-without-port-type.nmconnection", b"[connection]\nid=eth0\ntype=ethernet\ninterface-name=eth0\nmaster=bond9\n".to_vec(), "keyfile-invalid", 5),
    ];
    for (name, bytes, code, line) in cases {
        let f = tmp.path().join(name);
        fs::write(&f, &bytes).unwrap();
        let o = run(nodenet().args(["import", "--format", "json"]).arg(&f));
        assert_eq!(
            o.status.code(),
            Some(1),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = json(&o);
        let found =
            v["diagnostics"].as_array().unwrap().iter().any(|d| {
                d["code"] == code && d["line"] == line && d["file"] == f.to_str().unwrap()
            });
        assert!(found, "{name}: expected {code} at line {line}, got {v}");
    }
}

#[test]
fn unmapped_settings_warn_and_strict_makes_them_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("eth0.nmconnection");
    fs::write(&f, "[connection]\nid=eth0\ntype=ethernet\ninterface-name=eth0\n\n[ethernet]\nwake-on-lan=64\n\n[ipv4]\nmethod=auto\n").unwrap();
    let o = run(nodenet().arg("import").arg(&f));
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("keyfile-unmapped") && err.contains("eth0.nmconnection:7:13"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("name: eth0"));
    // --format json: the warning as JSON on stderr, the state on stdout.
    let o = run(nodenet().args(["import", "--format", "json"]).arg(&f));
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    assert!(
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "keyfile-unmapped"
                && d["severity"] == "warning"
                && d["line"] == 7),
        "{v}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("name: eth0"));
    let o = run(nodenet().args(["import", "--strict"]).arg(&f));
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
}

/// NetworkManager writes `timestamp=` (its last activation) into a
/// profile once it has been up: bookkeeping, not configuration, so a
/// profile NetworkManager used imports as cleanly as before.
#[test]
fn the_activation_timestamp_networkmanager_writes_is_not_a_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("eth0.nmconnection");
    fs::write(&f, "[connection]\nid=eth0\ntype=ethernet\ninterface-name=eth0\ntimestamp=1795436521\n\n[ipv4]\nmethod=auto\n").unwrap();
    let o = run(nodenet().args(["import", "--strict"]).arg(&f));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("keyfile-unmapped"));
}

#[test]
fn import_into_inventory_adds_then_updates_the_host() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = tmp.path().join("cluster.yaml");
    fs::write(
        &inv,
        "nodenet: v1\nhosts:\n- name: worker-1\n  role: worker\n",
    )
    .unwrap();
    let kf = tmp.path().join("keyfiles");
    gc_into(
        &repo().join("tests/gc-corpus/bond-8023ad-vlan-dhcp.yml"),
        &kf,
    );
    let o = run(nodenet()
        .arg("import")
        .arg(&kf)
        .args(["--host", "worker-3", "--into"])
        .arg(&inv));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(nodenet()
        .arg("import")
        .arg(&kf)
        .args(["--host", "worker-1", "--into"])
        .arg(&inv));
    assert!(o.status.success());
    let doc: serde_json::Value = serde_yaml::from_str(&fs::read_to_string(&inv).unwrap()).unwrap();
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[0]["role"], "worker");
    for h in hosts {
        assert!(
            h["network"]["interfaces"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["name"] == "bond0.110"),
            "{h}"
        );
    }
    let c = run(nodenet().arg("check").arg(&inv));
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
}

#[test]
fn diff_keyfiles_against_desired() {
    let tmp = tempfile::tempdir().unwrap();
    let desired = repo().join("tests/gc-corpus/bond-8023ad-vlan-dhcp.yml");
    let actual = tmp.path().join("actual");
    gc_into(&desired, &actual);
    let o = run(nodenet().arg("diff").arg(&desired).arg(&actual));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // Day 2: VLAN 120 added and the bond's MTU changed.
    let text = fs::read_to_string(&desired).unwrap().replace("  ipv4:\n    enabled: false\n  ipv6:\n    enabled: false\n  link-aggregation:", "  mtu: 9000\n  ipv4:\n    enabled: false\n  ipv6:\n    enabled: false\n  link-aggregation:")
        + "- name: bond0.120\n  type: vlan\n  state: up\n  vlan: {base-iface: bond0, id: 120}\n  ipv4: {enabled: true, address: [{ip: 10.120.0.5, prefix-length: 24}]}\n";
    let changed = tmp.path().join("day2.yml");
    fs::write(&changed, text).unwrap();
    let o = run(nodenet().arg("diff").arg(&changed).arg(&actual));
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("+ bond0.120 (vlan)"), "{out}");
    assert!(
        out.contains("~ bond0 (bond)\n    mtu: (unset) -> 9000"),
        "{out}"
    );
    let o = run(nodenet()
        .args(["diff", "--format", "json"])
        .arg(&changed)
        .arg(&actual));
    let v = json(&o);
    assert_eq!(v["equal"], false);
    let added: Vec<&str> = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["change"] == "added")
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(added, vec!["bond0.120"]);
}

/// A network namespace that is deleted when the test ends.
struct Netns(String);

impl Netns {
    fn new() -> Netns {
        let name = format!("nodenet-test-{}", std::process::id());
        let ns = Netns(name);
        ns.ip(&["netns", "add", &ns.0]);
        ns
    }

    fn ip(&self, args: &[&str]) {
        let o = run(Command::new(tool("ip")).args(args));
        assert!(
            o.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    fn exec(&self, args: &[&str]) {
        let mut full = vec!["-n", self.0.as_str()];
        full.extend_from_slice(args);
        self.ip(&full);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// `--live` reads the kernel over netlink: a namespace with a bridge, a
/// veth port, an address and a route the test made with iproute2.
#[test]
fn diff_live_against_the_kernel_in_a_network_namespace() {
    let ns = Netns::new();
    ns.exec(&["link", "add", "br0", "type", "bridge"]);
    ns.exec(&[
        "link", "add", "veth0", "type", "veth", "peer", "name", "veth1",
    ]);
    ns.exec(&["link", "set", "veth0", "master", "br0"]);
    for l in ["br0", "veth0"] {
        ns.exec(&["link", "set", l, "up"]);
    }
    ns.exec(&["link", "set", "br0", "mtu", "1400"]);
    ns.exec(&["addr", "add", "10.99.0.1/24", "dev", "br0"]);
    ns.exec(&["route", "add", "10.98.0.0/16", "via", "10.99.0.254"]);
    let tmp = tempfile::tempdir().unwrap();
    let desired = tmp.path().join("desired.yml");
    let state = |mtu: u32, ip: &str, port: &str| {
        format!(
            "interfaces:\n- {{name: {port}, type: ethernet, state: up}}\n- name: br0\n  type: linux-bridge\n  state: up\n  mtu: {mtu}\n  ipv4:\n    enabled: true\n    dhcp: false\n    address: [{{ip: {ip}, prefix-length: 24}}]\n  bridge:\n    options: {{stp: {{enabled: false}}}}\n    port: [{{name: {port}}}]\nroutes:\n  config:\n  - {{destination: 10.98.0.0/16, next-hop-address: 10.99.0.254, next-hop-interface: br0}}\n"
        )
    };
    let live_diff = |text: String| {
        fs::write(&desired, text).unwrap();
        run(Command::new(tool("ip"))
            .args([
                "netns",
                "exec",
                &ns.0,
                env!("CARGO_BIN_EXE_nodenet"),
                "diff",
                "--format",
                "json",
                "--live",
            ])
            .arg(&desired))
    };
    let o = live_diff(state(1400, "10.99.0.1", "veth0"));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(json(&o)["equal"], true);
    let o = live_diff(state(9000, "10.99.0.2", "veth1"));
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let br0 = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "br0")
        .expect("br0 changed");
    let paths: BTreeSet<&str> = br0["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        BTreeSet::from(["mtu", "ipv4.address", "bridge.port"]),
        "{v}"
    );
    let mtu = br0["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "mtu")
        .unwrap();
    assert_eq!(
        (mtu["actual"].as_u64(), mtu["desired"].as_u64()),
        (Some(1400), Some(9000))
    );
    // veth1 exists but is not a bridge port and is down: changed, not added.
    let veth1 = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "veth1")
        .expect("veth1");
    assert_eq!(veth1["change"], "changed");
}
