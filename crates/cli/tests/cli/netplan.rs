//! `render --with netplan`: netplan YAML per host, judged by netplan
//! itself (Debian's netplan.io): `netplan generate` accepts every file,
//! NetworkManager accepts the keyfiles it generates (`nmcli --offline`),
//! and they describe the same network as nodenet's own keyfiles for the
//! host.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use crate::common::*;
use serde_json::Value as J;

const EXAMPLES: &[&str] = &[
    "examples/lacp-vlan.yaml",
    "examples/dual-stack.yaml",
    "examples/ipv6-only.yaml",
    "examples/pxe-active-backup.yaml",
];

/// The NetworkManager renderer, as a netplan file.
const NM_RENDERER: &str = "network:\n  version: 2\n  renderer: NetworkManager\n";

/// `netplan generate --root-dir ROOT` over these files in
/// `ROOT/etc/netplan` (mode 0600, as netplan wants them).
fn netplan_generate(root: &std::path::Path, files: &[(&str, &str)]) -> std::process::Output {
    let etc = root.join("etc/netplan");
    std::fs::create_dir_all(&etc).unwrap();
    for (name, body) in files {
        let p = etc.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    run(std::process::Command::new(tool("netplan"))
        .args(["generate", "--root-dir"])
        .arg(root))
}

#[test]
fn netplan_generates_the_hosts_own_network_from_every_file() {
    if skip_without(&["netplan", "nmcli"]) {
        return;
    }
    let nmcli = tool("nmcli");
    let tmp = tempfile::tempdir().unwrap();
    let mut hosts = 0;
    for ex in EXAMPLES {
        let out = tmp.path().join(ex.replace('/', "-"));
        let o = run(nodenet()
            .arg("render")
            .arg(repo().join(ex))
            .args(["--with", "netplan", "-o"])
            .arg(&out));
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for f in files_under(&out.join("netplan")) {
            let host = f.file_stem().unwrap().to_string_lossy().into_owned();
            let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{f:?}");
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(
                !text.contains("gateway4") && !text.contains("gateway6"),
                "{text}"
            );
            let doc: J = serde_yaml::from_str(&text).unwrap();
            // The NICs by MAC, with our names.
            let mut names = BTreeMap::new();
            for (name, e) in doc["network"]["ethernets"]
                .as_object()
                .into_iter()
                .flatten()
            {
                let mac = e["match"]["macaddress"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{text}"));
                assert_eq!(e["set-name"], name.as_str(), "{text}");
                names.insert(mac.to_ascii_lowercase(), name.clone());
            }
            let root = out.join(format!("netplan-{host}-root"));
            // NetworkManager renders it here (Ubuntu Server's default is
            // networkd; the network is the same).
            let o = netplan_generate(
                &root,
                &[
                    ("00-renderer.yaml", NM_RENDERER),
                    ("50-nodenet.yaml", &text),
                ],
            );
            assert!(
                o.status.success(),
                "{ex} {host}: netplan generate rejects:\n{text}\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            let keyfiles = root.join("run/NetworkManager/system-connections");
            let generated = files_under(&keyfiles);
            assert!(!generated.is_empty(), "{ex} {host}: nothing generated");
            for k in &generated {
                let o = run(std::process::Command::new(&nmcli)
                    .args(["--offline", "connection", "modify", "connection.id", "x"])
                    .stdin(std::fs::File::open(k).unwrap()));
                assert!(
                    o.status.success(),
                    "nmcli rejects {k:?}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            let theirs = facts(&import(&keyfiles), &names);
            let ours = facts(
                &import(&out.join("hosts").join(&host).join("system-connections")),
                &names,
            );
            assert_eq!(
                theirs, ours,
                "{ex} {host}: netplan's keyfiles describe another network\n{text}"
            );
            // Bond modes and DNS servers came through too.
            for (bond, b) in doc["network"]["bonds"].as_object().into_iter().flatten() {
                let mode = b["parameters"]["mode"].as_str().unwrap();
                let kf = generated
                    .iter()
                    .map(|k| std::fs::read_to_string(k).unwrap())
                    .find(|t| t.contains(&format!("interface-name={bond}\n")))
                    .unwrap_or_else(|| panic!("{bond}: no keyfile"));
                assert!(kf.contains(&format!("mode={mode}\n")), "{kf}");
            }
            let all: String = generated
                .iter()
                .map(|k| std::fs::read_to_string(k).unwrap())
                .collect();
            let state: J = serde_yaml::from_str(
                &std::fs::read_to_string(out.join("hosts").join(&host).join("nmstate.yml"))
                    .unwrap(),
            )
            .unwrap();
            for s in state["dns-resolver"]["config"]["server"]
                .as_array()
                .into_iter()
                .flatten()
            {
                assert!(
                    all.contains(s.as_str().unwrap()),
                    "{ex} {host}: DNS {s} lost\n{all}"
                );
            }
            hosts += 1;
        }
    }
    assert!(hosts >= 15, "{hosts}");
}

/// netplan files as people and tools write them (`tests/cluster-inputs/
/// netplan`: cloud-init's renderer, netplan's examples, a renderer among
/// the ids, units on bond times, address options, cloud-init's
/// network-config without `network:`) mean to nodenet what they mean to
/// netplan: `netplan generate` accepts each, and the keyfiles it generates
/// describe the same network as the keyfiles nodenet renders from the
/// file. The NetworkManager renderer is forced last, so every device has
/// keyfiles to compare.
#[test]
fn nodenet_reads_netplan_files_as_netplan_does() {
    if skip_without(&["netplan"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = repo().join("tests/cluster-inputs/netplan");
    let mut read = 0;
    for f in files_under(&dir) {
        let host = f.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        let doc: J = serde_yaml::from_str(&text).unwrap();
        // cloud-init's network-config is netplan under `network:`.
        let (netplan_text, network) = match doc.get("network") {
            Some(n) => (text.clone(), n.clone()),
            None => (
                format!(
                    "network:\n{}",
                    text.lines().map(|l| format!("  {l}\n")).collect::<String>()
                ),
                doc.clone(),
            ),
        };
        let mut names = BTreeMap::new();
        for (id, e) in network["ethernets"].as_object().into_iter().flatten() {
            if let Some(mac) = e["match"]["macaddress"].as_str() {
                let name = e["set-name"].as_str().unwrap_or(id);
                names.insert(mac.to_ascii_lowercase(), name.to_string());
            }
        }
        let root = tmp.path().join(format!("{host}-root"));
        let o = netplan_generate(
            &root,
            &[
                ("50-input.yaml", &netplan_text),
                ("99-renderer.yaml", NM_RENDERER),
            ],
        );
        assert!(
            o.status.success(),
            "{host}: netplan generate rejects it: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let theirs = facts(
            &import(&root.join("run/NetworkManager/system-connections")),
            &names,
        );
        let out = tmp.path().join(format!("{host}-out"));
        let o = run(nodenet().arg("render").arg(&f).arg("-o").arg(&out));
        assert!(
            o.status.success(),
            "{host}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let ours = facts(
            &import(&out.join("hosts").join(&host).join("system-connections")),
            &names,
        );
        assert_eq!(
            theirs, ours,
            "{host}: nodenet reads another network\n{text}"
        );
        read += 1;
    }
    assert_eq!(read, 5);
    // The file nodenet refuses, netplan refuses too.
    let bad = repo().join("tests/bad/netplan-nm-address-options.yaml");
    let o = netplan_generate(
        &tmp.path().join("bad-root"),
        &[("50-input.yaml", &std::fs::read_to_string(&bad).unwrap())],
    );
    assert!(!o.status.success(), "netplan accepts {bad:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("address options"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Round trip: the netplan files nodenet writes read back as the hosts
/// they came from: same NICs and MACs, bonds, VLANs, addresses, DHCP and
/// gateways; beside the inventory, nothing to say.
#[test]
fn netplan_files_read_back_as_the_same_hosts() {
    let tmp = tempfile::tempdir().unwrap();
    for ex in EXAMPLES {
        let example = repo().join(ex);
        let out = tmp.path().join(ex.replace('/', "-"));
        let o = run(nodenet()
            .arg("render")
            .arg(&example)
            .args(["--with", "netplan", "-o"])
            .arg(&out));
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let np = out.join("netplan");
        assert_eq!(
            host_facts(&[&np], true),
            host_facts(&[&example], true),
            "{ex}"
        );
        let o = run(nodenet().arg("check").arg(&example).arg(&np));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{ex}: {stderr}");
        assert!(!stderr.contains("conflict"), "{ex}: {stderr}");
    }
}
