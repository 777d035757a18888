//! `render --with network-data`: OpenStack network_data.json per host,
//! judged by its real consumers: nova's JSON schema (../shared/schemas),
//! and cloud-init (`cloud-init devel net-convert`, Debian's package) whose
//! NetworkManager keyfiles NetworkManager accepts (`nmcli --offline`) and
//! describe the same network as nodenet's own keyfiles for the host, and
//! whose netplan carries the bond modes and DNS servers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::*;
use serde_json::Value as J;

const EXAMPLES: &[&str] = &[
    "examples/lacp-vlan.yaml",
    "examples/dual-stack.yaml",
    "examples/ipv6-only.yaml",
    "examples/pxe-active-backup.yaml",
];

fn render_with(example: &str, out: &Path) -> std::process::Output {
    run(nodenet()
        .arg("render")
        .arg(repo().join(example))
        .args(["--with", "network-data", "-o"])
        .arg(out))
}

fn network_data_files(out: &Path) -> Vec<PathBuf> {
    files_under(&out.join("network-data"))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "network_data.json"))
        .collect()
}

#[test]
fn every_network_data_json_is_valid_against_novas_schema() {
    let schema_path = repo().join("../shared/schemas/openstack-network_data.schema.json");
    assert!(
        schema_path.exists(),
        "{} is missing: this test reads ../shared/schemas beside the checkout",
        schema_path.display()
    );
    // Nova validates with Python, whose regexes take the inline `(?i)` of
    // the MAC pattern; JSON Schema's ECMA-262 regexes have no inline flags:
    // the same pattern spelled with both cases, the same language.
    let text = std::fs::read_to_string(&schema_path).unwrap().replace(
        "(?i)^([0-9A-F]{2}[:-]){5}([0-9A-F]{2})$",
        "^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$",
    );
    assert!(!text.contains("(?i)"), "another inline flag in the schema");
    let schema: J = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    // The BareMetalHost beside it, against the baremetal-operator's CRD.
    let crd: J = serde_yaml::from_str(
        &std::fs::read_to_string(repo().join("../shared/schemas/metal3.io_baremetalhosts.yaml"))
            .unwrap(),
    )
    .unwrap();
    let bmh_schema =
        jsonschema::validator_for(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
            .expect("the CRD's schema compiles");
    assert_eq!(crd["spec"]["versions"][0]["name"], "v1alpha1");
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for ex in EXAMPLES {
        let out = tmp.path().join(ex.replace('/', "-"));
        let o = render_with(ex, &out);
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for f in network_data_files(&out) {
            let doc: J = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{f:?}: {errors:#?}");
            // The Secret beside it carries the same text under
            // networkData, and the host's BareMetalHost names it for the
            // deployed system and the ramdisk.
            let host = f.parent().unwrap().file_name().unwrap().to_string_lossy();
            let beside = f.parent().unwrap().with_file_name(format!("{host}.yaml"));
            let text = std::fs::read_to_string(&beside).unwrap();
            let docs: Vec<J> = serde_yaml::Deserializer::from_str(&text)
                .map(|d| serde::Deserialize::deserialize(d).unwrap())
                .collect();
            let [s, bmh] = &docs[..] else {
                panic!("{beside:?}: {docs:?}")
            };
            assert_eq!(s["kind"], "Secret");
            assert_eq!(
                s["stringData"]["networkData"].as_str().unwrap(),
                std::fs::read_to_string(&f).unwrap()
            );
            assert_eq!(bmh["kind"], "BareMetalHost");
            assert_eq!(bmh["metadata"]["name"].as_str(), Some(host.as_ref()));
            assert_eq!(bmh["spec"]["networkData"]["name"], s["metadata"]["name"]);
            assert_eq!(
                bmh["spec"]["preprovisioningNetworkDataName"],
                s["metadata"]["name"]
            );
            let errors: Vec<String> = bmh_schema.iter_errors(bmh).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{beside:?}: {errors:#?}");
            checked += 1;
        }
    }
    assert!(checked >= 3 + 3 + 4 + 5, "{checked}");
}

#[test]
fn cloud_init_turns_every_network_data_json_into_the_hosts_own_network() {
    if skip_without(&["cloud-init", "nmcli"]) {
        return;
    }
    let cloud_init = tool("cloud-init");
    let nmcli = tool("nmcli");
    let tmp = tempfile::tempdir().unwrap();
    let mut hosts = 0;
    for ex in EXAMPLES {
        let out = tmp.path().join(ex.replace('/', "-"));
        let o = render_with(ex, &out);
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for f in network_data_files(&out) {
            let host = f
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let doc: J = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            // cloud-init names NICs by MAC from the system; here, as the
            // machine would, from the links' MACs and our names.
            let mut names = BTreeMap::new();
            let mut convert = |kind: &str, dir: &Path| {
                let mut cmd = std::process::Command::new(&cloud_init);
                cmd.args(["devel", "net-convert", "-k", "network_data.json", "-p"])
                    .arg(&f)
                    .arg("-d")
                    .arg(dir)
                    .args([
                        "-D",
                        if kind == "netplan" { "ubuntu" } else { "rhel" },
                        "-O",
                        kind,
                    ]);
                for l in doc["links"].as_array().unwrap() {
                    if l["type"] == "phy" {
                        let (n, m) = (
                            l["id"].as_str().unwrap(),
                            l["ethernet_mac_address"].as_str().unwrap(),
                        );
                        names.insert(m.to_ascii_lowercase(), n.to_string());
                        cmd.arg("-m").arg(format!("{n},{m}"));
                    }
                }
                let o = run(&mut cmd);
                assert!(
                    o.status.success(),
                    "{ex} {host}: cloud-init -O {kind}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            };
            let nm = tmp
                .path()
                .join(format!("{}-cloud-init-{host}-nm", ex.replace('/', "-")));
            convert("network-manager", &nm);
            let np = tmp.path().join(format!(
                "{}-cloud-init-{host}-netplan",
                ex.replace('/', "-")
            ));
            convert("netplan", &np);
            let keyfiles = nm.join("etc/NetworkManager/system-connections");
            for k in files_under(&keyfiles) {
                let o = run(std::process::Command::new(&nmcli)
                    .args(["--offline", "connection", "modify", "connection.id", "x"])
                    .stdin(std::fs::File::open(&k).unwrap()));
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
                theirs,
                ours,
                "{ex} {host}: cloud-init's keyfiles describe another network than ours\n{}",
                std::fs::read_to_string(&f).unwrap()
            );
            // The netplan cloud-init writes keeps what its NetworkManager
            // renderer (22.4) drops: each bond's mode, the DNS servers.
            let netplan: J = serde_yaml::from_str(
                &std::fs::read_to_string(files_under(&np)[0].clone()).unwrap(),
            )
            .unwrap();
            for l in doc["links"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|l| l["type"] == "bond")
            {
                let id = l["id"].as_str().unwrap();
                assert_eq!(
                    netplan["network"]["bonds"][id]["parameters"]["mode"], l["bond_mode"],
                    "{ex} {host}: {netplan:#}"
                );
            }
            let servers: BTreeSet<String> = doc["services"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["address"].as_str().unwrap().to_string())
                .collect();
            let mut seen = BTreeSet::new();
            for kind in ["ethernets", "bonds", "vlans"] {
                for (_, i) in netplan["network"][kind].as_object().into_iter().flatten() {
                    for a in i["nameservers"]["addresses"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        seen.insert(a.as_str().unwrap().to_string());
                    }
                }
            }
            assert_eq!(seen, servers, "{ex} {host}: {netplan:#}");
            hosts += 1;
        }
    }
    assert!(hosts >= 15, "{hosts}");
}

/// An OVS bridge in the intent: network_data.json cannot carry it. That
/// host's files are left out with an error located at the intent; every
/// other file is written; exit 1.
#[test]
fn what_network_data_cannot_carry_is_an_error_for_that_output_only() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run(nodenet()
        .arg("render")
        .arg(repo().join("examples/static-masters-br-ex.yaml"))
        .args(["--with", "network-data", "--format", "json", "-o"])
        .arg(&out));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let errors: Vec<&J> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert!(!errors.is_empty(), "{v:#}");
    for e in &errors {
        assert_eq!(e["code"], "target-unsupported", "{e:#}");
        assert!(
            e["file"]
                .as_str()
                .unwrap()
                .ends_with("static-masters-br-ex.yaml"),
            "{e:#}"
        );
        assert!(e["line"].as_u64().unwrap() > 0, "{e:#}");
    }
    // The other outputs are there; the refused hosts' network data is not.
    assert!(out.join("install-config.yaml").is_file());
    assert!(files_under(&out.join("hosts")).len() > 3);
    for e in &errors {
        let host = e["host"].as_str().unwrap();
        assert!(!out.join("network-data").join(host).exists(), "{host}");
    }
}

/// Round trip: each network_data.json nodenet wrote reads back (`check`
/// clean of errors, `render` of it alone) as the same network: its
/// keyfiles describe the interfaces, ports, VLANs, addresses and routes of
/// the host's own.
#[test]
fn network_data_json_reads_back_as_the_same_network() {
    let tmp = tempfile::tempdir().unwrap();
    let mut hosts = 0;
    for ex in EXAMPLES {
        let out = tmp.path().join(ex.replace('/', "-"));
        let o = render_with(ex, &out);
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for f in network_data_files(&out) {
            let host = f
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let back = tmp
                .path()
                .join(format!("{}-read-back-{host}", ex.replace('/', "-")));
            let o = run(nodenet().arg("render").arg(&f).arg("-o").arg(&back));
            assert!(
                o.status.success(),
                "{ex} {host}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let names = BTreeMap::new();
            let again = facts(
                &import(&back.join("hosts").join(&host).join("system-connections")),
                &names,
            );
            let ours = facts(
                &import(&out.join("hosts").join(&host).join("system-connections")),
                &names,
            );
            assert_eq!(again, ours, "{ex} {host}");
            hosts += 1;
        }
        // The whole output read back: each network_data.json joins its host
        // (install-config, agent-config) without a conflict.
        let o = run(nodenet().args(["check", "--format", "json"]).arg(&out));
        let v = json(&o);
        let errors: Vec<&J> = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["severity"] == "error")
            .collect();
        assert!(errors.is_empty(), "{ex}: {errors:#?}");
    }
    assert!(hosts >= 15, "{hosts}");
    // One whose address differs from its host's is a conflict there.
    let out = tmp.path().join("examples-dual-stack.yaml");
    let f = out.join("network-data/master-1/network_data.json");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.contains("192.168.111.21"), "{text}");
    std::fs::write(&f, text.replace("192.168.111.21", "192.168.111.121")).unwrap();
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&out));
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert!(
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["severity"] == "error"
                && d["file"]
                    .as_str()
                    .unwrap_or("")
                    .ends_with("master-1/network_data.json")),
        "{v:#}"
    );
}
