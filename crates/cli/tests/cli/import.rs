//! `nodenet import` and `nodenet diff`, judged by nmstate's generator and
//! by NetworkManager's own keyfile code (`nmcli --offline`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::*;

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

/// Corpus states whose keyfiles cannot come back byte for byte, and why.
/// Every other state of `tests/gc-corpus/` must; for these, every
/// difference is warned about where it is
/// (`every_round_trip_difference_is_warned_at_its_line`).
const NOT_ROUND_TRIPPED: &[(&str, &str)] = &[
    // No keyfile: nmstate writes none, so there is nothing to import.
    (
        "dns-resolver-only-empty",
        "an empty DNS config only: no keyfile",
    ),
    ("eth-absent", "an interface to remove: no keyfile"),
    ("hostname-only", "a hostname only: no keyfile"),
    ("ovs-bridge-absent", "an OVS bridge to remove: no keyfile"),
    // The keyfile does not hold what the state said.
    (
        "eth-identifier-mac-profile-name",
        "matched by MAC, the interface's name (uplink0) is in no key, only in the \
         UUID nmstate derives from it",
    ),
    (
        "hsr",
        "nmstate writes no [hsr] group: the ports and protocol are in no key",
    ),
    (
        "ipvlan-l2-l3",
        "nmstate writes no [ipvlan] group: the parent and mode are in no key",
    ),
    // NetworkManager has no xfrm connection type: it rejects the keyfile.
    ("xfrm", "`type=xfrm` is no NetworkManager connection type"),
];

/// `nodenet import --format json`: the state (None when it failed) and
/// the diagnostics, as (file, line).
fn import_json(dir: &Path) -> (Option<Vec<u8>>, Vec<(String, u64)>) {
    let o = run(nodenet().args(["import", "--format", "json"]).arg(dir));
    // The diagnostics go to stderr, or to stdout instead of the state.
    let text = if o.status.success() {
        &o.stderr
    } else {
        &o.stdout
    };
    let diags: serde_json::Value = if text.iter().all(u8::is_ascii_whitespace) {
        serde_json::json!({"diagnostics": []})
    } else {
        serde_json::from_slice(text).unwrap_or_else(|e| {
            panic!(
                "{dir:?}: diagnostics are not JSON ({e}): {}",
                String::from_utf8_lossy(text)
            )
        })
    };
    let found = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| Some((d["file"].as_str()?.to_string(), d["line"].as_u64()?)))
        .collect();
    (o.status.success().then_some(o.stdout), found)
}

/// gc → import → gc is the identity on the keyfiles of every corpus
/// state but those `NOT_ROUND_TRIPPED` says, and the import needs no
/// warning for keyfiles nmstate wrote.
#[test]
fn corpus_round_trip_is_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus: Vec<PathBuf> = files_under(&repo().join("tests/gc-corpus"));
    assert!(corpus.len() >= 90, "the corpus has {} states", corpus.len());
    let stems: Vec<String> = corpus
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for (name, why) in NOT_ROUND_TRIPPED {
        assert!(
            stems.contains(&name.to_string()),
            "{name} is no corpus state"
        );
        assert!(!why.is_empty());
    }
    let mut identical = 0;
    for (f, stem) in corpus.iter().zip(&stems) {
        let first = tmp.path().join(format!("{stem}-1"));
        gc_into(f, &first);
        let exception = NOT_ROUND_TRIPPED.iter().any(|(n, _)| n == stem);
        if !first.exists() || files_under(&first).is_empty() {
            assert!(exception, "{stem}: nmstate writes no keyfile for it");
            continue;
        }
        let o = import(&[&first]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        if !o.status.success() {
            assert!(exception, "import {stem}: {err}");
            continue;
        }
        let imported = tmp.path().join(format!("{stem}.yml"));
        fs::write(&imported, &o.stdout).unwrap();
        let second = tmp.path().join(format!("{stem}-2"));
        gc_into(&imported, &second);
        let same = files_by_name(&first) == files_by_name(&second);
        if exception {
            // Not listed for nothing.
            assert!(!same, "{stem} round-trips: take it off NOT_ROUND_TRIPPED");
            continue;
        }
        assert!(!err.contains("keyfile-"), "{stem}: {err}");
        assert_eq!(
            files_by_name(&first),
            files_by_name(&second),
            "{stem}: round trip changed the keyfiles"
        );
        identical += 1;
    }
    assert_eq!(identical, corpus.len() - NOT_ROUND_TRIPPED.len());
}

/// A keyfile as written by nmstate: `(group, key) → (value, line)`, and
/// each group's header line.
type KeyLines = (
    BTreeMap<(String, String), (String, u64)>,
    BTreeMap<String, u64>,
);

fn key_lines(text: &str) -> KeyLines {
    let (mut keys, mut groups) = (BTreeMap::new(), BTreeMap::new());
    let mut group = String::new();
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        if let Some(g) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            group = g.to_string();
            groups.insert(group.clone(), n);
        } else if let Some((k, v)) = line.split_once('=') {
            keys.insert((group.clone(), k.to_string()), (v.to_string(), n));
        }
    }
    (keys, groups)
}

/// Nothing is lost silently: for every corpus state, every key whose
/// value differs between the keyfiles nmstate writes for it (A) and those
/// it writes for its import (B) has a finding of the import at its line
/// in A, at its group's header (the whole group), or at the profile's
/// `[connection]` header or `type=` (the whole profile). A key only B has
/// is named at its group in A, or at the profile.
#[test]
fn every_round_trip_difference_is_warned_at_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus: Vec<PathBuf> = files_under(&repo().join("tests/gc-corpus"));
    let mut unwarned = Vec::new();
    let mut warned = 0;
    for f in &corpus {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        let first = tmp.path().join(format!("{stem}-1"));
        gc_into(f, &first);
        if !first.exists() {
            continue;
        }
        let (state, found) = import_json(&first);
        let second = tmp.path().join(format!("{stem}-2"));
        if let Some(state) = state {
            let imported = tmp.path().join(format!("{stem}.yml"));
            fs::write(&imported, state).unwrap();
            gc_into(&imported, &second);
        }
        let a = files_by_name(&first);
        let b = if second.exists() {
            files_by_name(&second)
        } else {
            BTreeMap::new()
        };
        for name in a.keys().chain(b.keys()).collect::<BTreeSet<_>>() {
            let path = first.join(name).to_string_lossy().into_owned();
            let at = |line: u64| found.contains(&(path.clone(), line));
            let Some(a_text) = a.get(name) else {
                unwarned.push(format!("{stem}: {name} is written for the import only"));
                continue;
            };
            let (a_keys, a_groups) = key_lines(a_text);
            let (b_keys, _) = key_lines(b.get(name).map_or("", String::as_str));
            let whole = |k: &(String, String)| a_keys.get(k).is_some_and(|(_, l)| at(*l));
            let profile = at(a_groups.get("connection").copied().unwrap_or(0))
                || whole(&("connection".into(), "type".into()));
            for k in a_keys.keys().chain(b_keys.keys()).collect::<BTreeSet<_>>() {
                let (va, vb) = (a_keys.get(k), b_keys.get(k));
                if va.map(|v| &v.0) == vb.map(|v| &v.0) {
                    continue;
                }
                let group = a_groups.get(&k.0).is_some_and(|l| at(*l));
                if whole(k) || group || profile {
                    warned += 1;
                } else {
                    unwarned.push(format!(
                        "{stem}: {name} [{}] {}: {:?} -> {:?}",
                        k.0,
                        k.1,
                        va.map(|v| &v.0),
                        vb.map(|v| &v.0)
                    ));
                }
            }
        }
    }
    assert!(
        unwarned.is_empty(),
        "differences no finding names:\n{}",
        unwarned.join("\n")
    );
    // Not vacuous: the exceptions' differences were found, and warned.
    assert!(
        warned >= NOT_ROUND_TRIPPED.len(),
        "{warned} differences warned"
    );
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

/// `nmcli --offline connection modify SETTING VALUE < keyfile`: the
/// profile as NetworkManager reads, verifies and normalises it (written
/// back with its defaults), or why it rejects it.
fn nm_modify(keyfile: &[u8], setting: &str, value: &str) -> Result<String, String> {
    let mut child = Command::new(tool("nmcli"))
        .args(["--offline", "connection", "modify", setting, value])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(keyfile).unwrap();
    let o = child.wait_with_output().unwrap();
    if o.status.success() {
        Ok(String::from_utf8(o.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// A keyfile as NetworkManager normalises it (`nmcli --offline connection
/// modify` reads it with NM's own code and writes it back with defaults).
fn normalise(keyfile: &str) -> String {
    nm_modify(keyfile.as_bytes(), "connection.zone", "")
        .unwrap_or_else(|e| panic!("nmcli rejects:\n{keyfile}\n{e}"))
}

/// A normalised keyfile's `(group, key) → value`.
fn keyfile_map(k: &str) -> BTreeMap<(String, String), String> {
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
    let parsed: Vec<BTreeMap<(String, String), String>> =
        keyfiles.iter().map(|k| keyfile_map(k)).collect();
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
    if skip_without(&["nmcli"]) {
        return;
    }
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

/// The keyfile corpus (`tests/keyfiles/`): one `.nmconnection` per case,
/// written for nodenet to cover NetworkManager's keyfile syntax (man
/// nm-settings-keyfile, and the legacy forms its reader still accepts).
fn keyfile_corpus(kind: &str) -> Vec<PathBuf> {
    let files = files_under(&repo().join("tests/keyfiles").join(kind));
    assert!(files
        .iter()
        .all(|f| f.extension().is_some_and(|e| e == "nmconnection")));
    files
}

/// What a corpus file's header says about it: `# expect-warning: WHERE
/// CODE`, `# expect-error: WHERE CODE` (WHERE is `group.key` as written
/// in the file, `[group]`, or `line N`), `# not-compared: PREFIX` (a
/// setting nodenet knowingly does not carry over, see the file).
#[derive(Default)]
struct Expected {
    warnings: Found,
    errors: Found,
    not_compared: Vec<String>,
}

fn expected(text: &str) -> Expected {
    let mut e = Expected::default();
    for line in text.lines() {
        let line = line.trim();
        let pair = |rest: &str| {
            let (at, code) = rest.trim().rsplit_once(' ').expect("WHERE CODE");
            (at.to_string(), code.to_string())
        };
        if let Some(rest) = line.strip_prefix("# expect-warning:") {
            e.warnings.insert(pair(rest));
        } else if let Some(rest) = line.strip_prefix("# expect-error:") {
            e.errors.insert(pair(rest));
        } else if let Some(rest) = line.strip_prefix("# not-compared:") {
            e.not_compared
                .push(rest.split_whitespace().next().unwrap().to_string());
        }
    }
    e
}

/// The setting line `line` of a keyfile is: `group.key` (the names as
/// written), `[group]` for a header, else `line N`.
fn setting_at(text: &str, line: u64) -> String {
    let mut group = String::new();
    for (i, l) in text.split('\n').enumerate() {
        let t = l.trim_end_matches('\r').trim_start();
        let here = i as u64 + 1 == line;
        if let Some(g) = t.strip_prefix('[').and_then(|r| r.split_once(']')) {
            group = g.0.to_string();
            if here {
                return format!("[{group}]");
            }
        } else if here && !t.starts_with('#') {
            if let Some((k, _)) = t.split_once('=') {
                return format!("{group}.{}", k.trim_end());
            }
        }
    }
    format!("line {line}")
}

/// Findings as (where, code).
type Found = BTreeSet<(String, String)>;

/// The (where, code) of each finding of `nodenet import --format json`,
/// split into warnings and errors; a syntax error is where by its line.
fn findings(diags: &serde_json::Value, text: &str) -> (Found, Found) {
    let mut warnings = BTreeSet::new();
    let mut errors = BTreeSet::new();
    for d in diags["diagnostics"].as_array().unwrap() {
        let line = d["line"].as_u64().expect("every finding is located");
        let code = d["code"].as_str().unwrap().to_string();
        let at = if code == "keyfile-syntax" {
            format!("line {line}")
        } else {
            setting_at(text, line)
        };
        if d["severity"] == "error" {
            errors.insert((at, code));
        } else {
            warnings.insert((at, code));
        }
    }
    (warnings, errors)
}

/// `ADDR/PLEN` with the host bits cleared (the route the kernel gets).
fn network(cidr: &str) -> String {
    let (a, p) = cidr.split_once('/').unwrap_or((cidr, "128"));
    let p: u32 = p.parse().unwrap();
    match a.parse::<std::net::IpAddr>().unwrap() {
        std::net::IpAddr::V4(v4) => {
            let mask = if p == 0 { 0 } else { u32::MAX << (32 - p) };
            format!("{}/{p}", std::net::Ipv4Addr::from(u32::from(v4) & mask))
        }
        std::net::IpAddr::V6(v6) => {
            let mask = if p == 0 { 0 } else { u128::MAX << (128 - p) };
            format!("{}/{p}", std::net::Ipv6Addr::from(u128::from(v6) & mask))
        }
    }
}

/// What NetworkManager makes of a set of normalised keyfiles that
/// configure one interface: that profile's type, names (id, interface),
/// port, link and IP settings, and (from all of them: nmstate puts a typed route on `lo`)
/// the routes, gateways and name servers. Route metric 0 (IPv4), 1024
/// (IPv6) and table 254 are "none" (what nmstate writes for none); an
/// address's gateway, a `gateway=` and a default route are all `gateway`.
fn nm_view(keyfiles: &[String]) -> BTreeSet<String> {
    let maps: Vec<_> = keyfiles.iter().map(|k| keyfile_map(k)).collect();
    let get = |m: &BTreeMap<(String, String), String>, g: &str, k: &str| {
        m.get(&(g.to_string(), k.to_string())).cloned()
    };
    let mut v = BTreeSet::new();
    let main: Vec<_> = maps
        .iter()
        .filter(|m| get(m, "connection", "type").as_deref() != Some("loopback"))
        .collect();
    assert!(main.len() <= 1, "one profile expected: {keyfiles:?}");
    for m in main {
        v.insert(format!(
            "id={}",
            get(m, "connection", "id").unwrap_or_default()
        ));
        for ((g, k), val) in m {
            let keep = match g.as_str() {
                "connection" => [
                    "type",
                    "interface-name",
                    "master",
                    "slave-type",
                    "autoconnect",
                ]
                .contains(&k.as_str()),
                "ethernet" => [
                    "mtu",
                    "mac-address",
                    "cloned-mac-address",
                    "speed",
                    "duplex",
                    "auto-negotiate",
                ]
                .contains(&k.as_str()),
                "infiniband" => k == "mtu" || k == "transport-mode",
                "vlan" => k == "id" || k == "parent",
                "bond" | "bridge" | "bridge-port" => true,
                "ipv4" | "ipv6" => k == "method",
                _ => false,
            };
            if keep {
                let prefix = if g == "connection" {
                    String::new()
                } else {
                    format!("{g}.")
                };
                let val = if k.ends_with("mac-address") {
                    val.to_ascii_uppercase()
                } else {
                    val.clone()
                };
                v.insert(format!("{prefix}{k}={val}"));
            }
            if (g == "ipv4" || g == "ipv6") && k.starts_with("address") {
                let mut parts = val.split(',');
                v.insert(format!("{g}.address={}", parts.next().unwrap()));
                if let Some(gw) = parts.next() {
                    v.insert(format!("{g}.gateway={gw}"));
                }
            }
            if (g == "ipv4" || g == "ipv6") && k == "gateway" {
                v.insert(format!("{g}.gateway={val}"));
            }
        }
    }
    for m in &maps {
        for ((g, k), val) in m {
            if g != "ipv4" && g != "ipv6" {
                continue;
            }
            match k.as_str() {
                "dns" => v.extend(
                    val.split(';')
                        .filter(|d| !d.is_empty())
                        .map(|d| format!("dns={d}")),
                ),
                "dns-search" => v.extend(
                    val.split(';')
                        .filter(|d| !d.is_empty())
                        .map(|d| format!("dns-search={d}")),
                ),
                k if k.starts_with("route") && !k.ends_with("_options") => {
                    let parts: Vec<&str> = val.split(',').collect();
                    let dest = network(parts[0]);
                    let hop = parts
                        .get(1)
                        .filter(|h| !h.is_empty() && **h != "0.0.0.0" && **h != "::")
                        .copied();
                    if dest == "0.0.0.0/0" || dest == "::/0" {
                        v.insert(format!("{g}.gateway={}", hop.unwrap_or("")));
                        continue;
                    }
                    let mut r = format!("{g}.route={dest} via {}", hop.unwrap_or("-"));
                    let none = if g == "ipv4" { "0" } else { "1024" };
                    if let Some(m) = parts.get(2).filter(|m| **m != none) {
                        r += &format!(" metric {m}");
                    }
                    let mut options: Vec<String> = get(m, g, &format!("{k}_options"))
                        .unwrap_or_default()
                        .split(',')
                        .filter(|o| {
                            !o.is_empty()
                                && !o.starts_with("lock-")
                                && *o != "table=254"
                                && *o != "type=unicast"
                        })
                        .map(str::to_string)
                        .collect();
                    options.sort();
                    for o in options {
                        r += &format!(" {o}");
                    }
                    v.insert(r);
                }
                _ => {}
            }
        }
    }
    v
}

/// The view entries a warning at `at` (`group.key` as written) means
/// nodenet did not carry over: its own setting, a whole family for an
/// unmapped method, the routes of a family for an unmapped route option.
fn not_carried_over(at: &str) -> Vec<String> {
    let Some((g, k)) = at.split_once('.') else {
        return Vec::new();
    };
    let g = if g == "802-3-ethernet" { "ethernet" } else { g };
    match (g, k) {
        ("ipv4" | "ipv6", "method") => vec![format!("{g}.")],
        ("ipv4" | "ipv6", k) if k.starts_with("route") => vec![format!("{g}.route")],
        // A port imported without its controller: no port settings, and
        // no IP (a port has none; nmstate writes it disabled).
        ("connection", "master" | "controller") => vec![
            "master=".into(),
            "slave-type=".into(),
            "bridge-port.".into(),
            "ipv4.method=".into(),
            "ipv6.method=".into(),
        ],
        _ => vec![format!("{g}.{k}=")],
    }
}

/// The round trip the issue asks for, over the corpus: NetworkManager
/// accepts every input; `nodenet import` warns about exactly the settings
/// each file's header lists; `nodenet gc` of the result gives keyfiles
/// NetworkManager accepts; and NetworkManager reads the same link and IP
/// configuration from them as from the input, except what a warning says
/// is not carried over.
#[test]
fn keyfile_corpus_imports_and_round_trips_through_networkmanager() {
    if skip_without(&["nmcli"]) {
        return;
    }
    let corpus = keyfile_corpus("accepted");
    assert!(corpus.len() >= 40, "the corpus has {} files", corpus.len());
    let tmp = tempfile::tempdir().unwrap();
    let (mut compared, mut skipped, mut warned) = (0, 0, 0);
    for f in &corpus {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(f).unwrap();
        let want = expected(&text);
        let stem = name.trim_end_matches(".nmconnection");
        // The plugin takes a missing id from the file name; nmcli reading
        // stdin has none, so it is given the same.
        let theirs = nm_modify(text.as_bytes(), "connection.zone", "")
            .or_else(|e| {
                if e.contains("connection.id: property is missing") {
                    nm_modify(text.as_bytes(), "connection.id", stem)
                } else {
                    Err(e)
                }
            })
            .unwrap_or_else(|e| panic!("{name}: NetworkManager rejects the input: {e}"));

        let o = run(nodenet().args(["import", "--format", "json"]).arg(f));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{name}: {err}");
        let diags: serde_json::Value = if err.trim().is_empty() {
            serde_json::json!({"diagnostics": []})
        } else {
            serde_json::from_str(&err).unwrap()
        };
        let (warnings, errors) = findings(&diags, &text);
        assert!(errors.is_empty(), "{name}: {errors:?}");
        assert_eq!(warnings, want.warnings, "{name}: warnings, got {diags}");
        warned += usize::from(!warnings.is_empty());

        let state = tmp.path().join(format!("{stem}.yml"));
        fs::write(&state, &o.stdout).unwrap();
        let dir = tmp.path().join(stem);
        gc_into(&state, &dir);
        let ours: Vec<String> = files_by_name(&dir)
            .values()
            .map(|k| {
                nm_modify(k.as_bytes(), "connection.zone", "").unwrap_or_else(|e| {
                    panic!("{name}: NetworkManager rejects what gc wrote:\n{k}\n{e}")
                })
            })
            .collect();
        let theirs = nm_view(&[theirs]);
        let mut ours = nm_view(&ours);
        if !ours.iter().any(|s| s.starts_with("type=")) {
            // Skipped: nothing imported, and said so.
            assert!(
                want.warnings.iter().any(|(_, c)| c == "keyfile-unmapped"),
                "{name}: nothing imported without a warning"
            );
            skipped += 1;
            continue;
        }
        let mut excluded = want.not_compared.clone();
        if theirs.iter().any(|s| s.starts_with("interface-name=")) {
            // nmstate names a profile after its interface.
            excluded.push("id=".into());
        } else {
            // A VLAN NetworkManager names itself: nodenet writes that name.
            ours.retain(|s| !s.starts_with("interface-name="));
        }
        for (at, code) in &want.warnings {
            if code == "keyfile-unmapped" {
                excluded.extend(not_carried_over(at));
            }
        }
        let keep = |s: &String| !excluded.iter().any(|p| s.starts_with(p.as_str()));
        let theirs: BTreeSet<String> = theirs.into_iter().filter(keep).collect();
        let ours: BTreeSet<String> = ours.into_iter().filter(keep).collect();
        assert_eq!(
            theirs, ours,
            "{name}: NetworkManager reads the input (left) and the round trip (right) differently"
        );
        compared += 1;
    }
    // Not vacuous: most files are compared, some skipped, many warned.
    assert!(
        compared >= 40 && skipped >= 4 && warned >= 20,
        "{compared} compared, {skipped} skipped, {warned} warned"
    );
}

/// Inputs NetworkManager rejects: nodenet rejects them too, with an error
/// located where each file's header says, exit 1 and no panic.
#[test]
fn rejected_keyfiles_are_located_errors_as_networkmanager_rejects_them() {
    if skip_without(&["nmcli"]) {
        return;
    }
    let corpus = keyfile_corpus("rejected");
    assert!(corpus.len() >= 20);
    for f in &corpus {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(f).unwrap();
        let want = expected(&text);
        assert!(!want.errors.is_empty(), "{name}: no expect-error");
        assert!(
            nm_modify(text.as_bytes(), "connection.id", "x").is_err(),
            "{name}: NetworkManager accepts it"
        );
        let o = run(nodenet().args(["import", "--format", "json"]).arg(f));
        assert_eq!(
            o.status.code(),
            Some(1),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let (warnings, errors) = findings(&json(&o), &text);
        assert_eq!(errors, want.errors, "{name}");
        assert_eq!(warnings, want.warnings, "{name}");
    }
}

/// A directory is read as NetworkManager's keyfile plugin reads
/// /etc/NetworkManager/system-connections: the names it ignores are
/// ignored (whatever they hold), a file it cannot load is a located
/// warning and the rest is imported; nothing usable, or `--strict`: exit 1.
#[test]
fn a_directory_is_read_as_networkmanager_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("system-connections");
    fs::create_dir(&dir).unwrap();
    let profile = |iface: &str| {
        format!("[connection]\nid={iface}\ntype=ethernet\ninterface-name={iface}\n\n[ipv4]\nmethod=auto\n")
    };
    fs::write(dir.join("eno1.nmconnection"), profile("eno1")).unwrap();
    // In /etc, a file needs no .nmconnection; a 7-letter suffix is no
    // temporary file.
    fs::write(dir.join("eno2"), profile("eno2")).unwrap();
    fs::write(dir.join("eno3.nmconnection.rpmsave"), profile("eno3")).unwrap();
    // Ignored by the plugin: garbage in them must not matter.
    for ignored in [
        ".eno9.nmconnection",
        "eno9.nmconnection~",
        "eno9.nmconnection.rpmnew",
        "eno9.nmconnection.Ab3dE9",
        "ca.pem",
        "client.DER",
    ] {
        fs::write(dir.join(ignored), "garbage\0\u{1}").unwrap();
    }
    fs::create_dir(dir.join("sub")).unwrap();
    fs::write(dir.join("sub/eno8.nmconnection"), profile("eno8")).unwrap();
    // Loaded by nobody: unparseable, and invalid for NetworkManager.
    fs::write(
        dir.join("broken.nmconnection"),
        "[connection]\nid=broken\nnot a key\n",
    )
    .unwrap();
    fs::write(
        dir.join("invalid.nmconnection"),
        "[connection]\nid=invalid\ntype=ethernet\ninterface-name=eno7\n[ipv4]\nmethod=manual\n",
    )
    .unwrap();

    let o = run(nodenet().args(["import", "--format", "json"]).arg(&dir));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let state: serde_json::Value = serde_yaml::from_slice(&o.stdout).unwrap();
    let names: BTreeSet<&str> = state["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["eno1", "eno2", "eno3"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    let located: BTreeSet<(String, u64, String)> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["severity"], "warning", "{d}");
            (
                Path::new(d["file"].as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                d["line"].as_u64().unwrap(),
                d["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        located,
        BTreeSet::from([
            (
                "broken.nmconnection".to_string(),
                3,
                "keyfile-syntax".to_string()
            ),
            (
                "invalid.nmconnection".to_string(),
                6,
                "keyfile-invalid".to_string()
            ),
        ])
    );

    // --strict: the same files are errors.
    let o = run(nodenet().args(["import", "--strict"]).arg(&dir));
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());

    // Nothing usable left: the findings are errors, exit 1.
    let bad = tmp.path().join("bad");
    fs::create_dir(&bad).unwrap();
    fs::copy(
        dir.join("broken.nmconnection"),
        bad.join("broken.nmconnection"),
    )
    .unwrap();
    fs::copy(
        dir.join("invalid.nmconnection"),
        bad.join("invalid.nmconnection"),
    )
    .unwrap();
    let o = run(nodenet().args(["import", "--format", "json"]).arg(&bad));
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["severity"] == "error")
            .count(),
        2,
        "{v}"
    );

    // Only ignored names: nothing to read (a usage error).
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    fs::write(empty.join(".hidden"), profile("eno1")).unwrap();
    assert_eq!(
        run(nodenet().arg("import").arg(&empty)).status.code(),
        Some(2)
    );
}

/// A profile matched by MAC keeps its name as `profile-name` and gets no
/// interface name from it: NetworkManager accepts what gc writes, with no
/// `interface-name`, the MAC and the profile's id.
#[test]
fn a_profile_matched_by_mac_is_imported_by_identifier() {
    if skip_without(&["nmcli"]) {
        return;
    }
    let f = repo().join("tests/keyfiles/accepted/17-mac-match-profile-name.nmconnection");
    let o = run(nodenet().arg("import").arg(&f));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let state: serde_json::Value = serde_yaml::from_slice(&o.stdout).unwrap();
    let iface = &state["interfaces"][0];
    assert_eq!(iface["identifier"], "mac-address");
    assert_eq!(iface["mac-address"], "52:54:00:AB:CD:17");
    assert_eq!(iface["profile-name"], "Wired TLS");
    assert_ne!(iface["name"], "Wired TLS");
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.yml");
    fs::write(&s, &o.stdout).unwrap();
    gc_into(&s, &tmp.path().join("kf"));
    let kf = files_by_name(&tmp.path().join("kf"));
    let normalised = normalise(&kf["Wired TLS.nmconnection"]);
    let m = keyfile_map(&normalised);
    assert_eq!(
        m.get(&("connection".into(), "id".into()))
            .map(String::as_str),
        Some("Wired TLS")
    );
    assert!(!m.contains_key(&("connection".into(), "interface-name".into())));
    assert_eq!(
        m.get(&("ethernet".into(), "mac-address".into()))
            .map(String::as_str),
        Some("52:54:00:AB:CD:17")
    );
}

/// `--live` reads the kernel over netlink: a namespace with a bridge, a
/// veth port, an address and a route the test made with iproute2.
#[test]
fn diff_live_against_the_kernel_in_a_network_namespace() {
    if skip_without(&["ip"]) {
        return;
    }
    let ns = Netns::new("live");
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

/// `--into` edits the inventory in place: a commented file with flow maps
/// keeps every line but the imported host's network.
#[test]
fn import_into_keeps_the_rest_of_the_inventory_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = tmp.path().join("cluster.yaml");
    let before = "# Lab cluster: comments and flow maps must survive an import.
nodenet: v1
cluster: {name: lab, baseDomain: example.com, machineNetworks: [192.168.111.0/24]}  # one line
hosts:
- name: worker-0   # the imported one
  role: worker
  nics: {eno1: '52:54:00:00:00:01', eno2: '52:54:00:00:00:02'}
  network:
    interfaces:
    - {name: eno1, type: ethernet, state: up}
- name: worker-1
  role: worker
  nics: {eno1: '52:54:00:00:01:01'}   # stays
# trailing comment
";
    fs::write(&inv, before).unwrap();
    let kf = tmp.path().join("keyfiles");
    gc_into(
        &repo().join("tests/gc-corpus/bond-8023ad-vlan-dhcp.yml"),
        &kf,
    );
    let o = run(nodenet()
        .arg("import")
        .arg(&kf)
        .args(["--host", "worker-0", "--into"])
        .arg(&inv));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("rewritten"));
    let after = fs::read_to_string(&inv).unwrap();
    let (a, b): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    // Lines 1-8 (through `network:`) and 11-14 as they were.
    assert_eq!(a[..8], b[..8]);
    assert_eq!(a[10..], b[b.len() - 4..]);
    // In between, the imported state, and worker-0 has it.
    let doc: serde_json::Value = serde_yaml::from_str(&after).unwrap();
    let ifaces = doc["hosts"][0]["network"]["interfaces"].as_array().unwrap();
    assert!(ifaces.iter().any(|i| i["name"] == "bond0.110"), "{after}");
    assert!(!tmp.path().join("cluster.yaml.bak").exists());
    // A host written as one flow map: rewritten whole, said, backed up.
    fs::write(
        &inv,
        "nodenet: v1\nhosts:\n- {name: w9, role: worker}  # flow\n",
    )
    .unwrap();
    let o = run(nodenet()
        .arg("import")
        .arg(&kf)
        .args(["--host", "w9", "--into"])
        .arg(&inv));
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("rewritten whole"));
    assert_eq!(
        fs::read_to_string(tmp.path().join("cluster.yaml.bak")).unwrap(),
        "nodenet: v1\nhosts:\n- {name: w9, role: worker}  # flow\n"
    );
}
