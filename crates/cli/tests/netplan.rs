//! `render --with netplan`: netplan YAML per host, judged by netplan
//! itself (Debian's netplan.io): `netplan generate` accepts every file,
//! NetworkManager accepts the keyfiles it generates (`nmcli --offline`),
//! and they describe the same network as nodenet's own keyfiles for the
//! host.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use common::*;
use serde_json::Value as J;

const EXAMPLES: &[&str] = &[
    "examples/lacp-vlan.yaml",
    "examples/dual-stack.yaml",
    "examples/ipv6-only.yaml",
    "examples/pxe-active-backup.yaml",
];

#[test]
fn netplan_generates_the_hosts_own_network_from_every_file() {
    let netplan = tool("netplan");
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
            let etc = root.join("etc/netplan");
            std::fs::create_dir_all(&etc).unwrap();
            // NetworkManager renders it here (Ubuntu Server's default is
            // networkd; the network is the same).
            let renderer = etc.join("00-renderer.yaml");
            std::fs::write(
                &renderer,
                "network:\n  version: 2\n  renderer: NetworkManager\n",
            )
            .unwrap();
            std::fs::set_permissions(&renderer, std::fs::Permissions::from_mode(0o600)).unwrap();
            let ours = etc.join("50-nodenet.yaml");
            std::fs::copy(&f, &ours).unwrap();
            std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o600)).unwrap();
            let o = run(std::process::Command::new(&netplan)
                .args(["generate", "--root-dir"])
                .arg(&root));
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
