//! `check`, `render` and `diff` on the inputs people already have
//! (`tests/cluster-inputs`): every kind alone and mixed, directories of
//! manifests, and NMState's partial semantics.

use std::path::{Path, PathBuf};

use crate::common::*;

fn inputs(rel: &str) -> PathBuf {
    repo().join("tests/cluster-inputs").join(rel)
}

/// (severity, code, line, message) of every diagnostic of a JSON check.
fn diagnostics(args: &[&Path]) -> (i32, Vec<(String, String, u64, String)>) {
    let o = run(nodenet().args(["check", "--format", "json"]).args(args));
    let v = json(&o);
    let list = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["severity"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap_or(0),
                d["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (o.status.code().unwrap(), list)
}

fn errors(d: &[(String, String, u64, String)]) -> Vec<&(String, String, u64, String)> {
    d.iter().filter(|d| d.0 == "error").collect()
}

#[test]
fn every_scenario_checks_as_its_readme_says() {
    for scenario in [
        "agent-v1alpha1",
        "agent-v1beta1",
        "machineconfig",
        "nncp",
        "nmstateconfig",
        "baremetalhost",
        "manifests",
    ] {
        let (code, d) = diagnostics(&[&inputs(scenario)]);
        assert_eq!(code, 0, "{scenario}: {:?}", errors(&d));
    }
    let (code, d) = diagnostics(&[&inputs("conflict")]);
    assert_eq!(code, 1);
    let errs = errors(&d);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!((errs[0].1.as_str(), errs[0].2), ("conflict", 177));
    // Everything at once is still one cluster of the same 5 hosts (+ the
    // scale-out worker), with no duplicate.
    let o = run(nodenet()
        .arg("check")
        .arg(inputs("agent-v1beta1"))
        .arg(inputs("nmstateconfig"))
        .arg(inputs("baremetalhost"))
        .arg(inputs("manifests"))
        .arg(inputs("machineconfig"))
        .arg(inputs("nncp")));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("6 host(s) and 13 change(s) to hosts checked: 0 errors"),
        "{stderr}"
    );
}

#[test]
fn a_file_given_by_name_must_be_something_nodenet_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let cm = write(
        tmp.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    );
    let (code, d) = diagnostics(&[&cm]);
    assert_eq!(code, 1);
    assert_eq!((d[0].1.as_str(), d[0].2), ("unknown-format", 2));
    // In a directory, the same object is skipped; a directory with nothing
    // nodenet reads is an error.
    let dir = tmp.path().join("m");
    std::fs::create_dir(&dir).unwrap();
    write(&dir, "README.md", "# not yaml\n");
    let (code, d) = diagnostics(&[&dir]);
    assert_eq!(code, 1, "{d:?}");
    assert_eq!(d[0].1, "unknown-format");
    std::fs::copy(&cm, dir.join("cm.yaml")).unwrap();
    std::fs::copy(inputs("nncp/worker-vm-bridge.yaml"), dir.join("p.yaml")).unwrap();
    let (code, d) = diagnostics(&[&dir]);
    assert_eq!(code, 0, "{d:?}");
}

#[test]
fn a_finding_inside_a_machine_config_names_the_embedded_file_and_line() {
    let (_, d) = diagnostics(&[&repo().join("tests/bad/mc-embedded-vlan-id-range.yaml")]);
    let vlan = d.iter().find(|d| d.1 == "vlan-id-range").expect("found");
    assert_eq!(vlan.2, 19);
    assert!(
        vlan.3
            .ends_with("(in `/etc/nmstate/openshift/worker-0.yml`, line 7 column 9)"),
        "{}",
        vlan.3
    );
}

#[test]
fn a_partial_state_warns_where_a_listed_host_errs_and_says_why() {
    if skip_without(&["nmstatectl"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = "interfaces:\n- name: eth1.120\n  type: vlan\n  state: up\n  vlan: {base-iface: eth1, id: 120}\n- name: bond0\n  type: bond\n  state: up\n  link-aggregation: {mode: active-backup, port: [eth2, eth3]}\n";
    let bare = write(tmp.path(), "day2.yml", state);
    let (code, d) = diagnostics(&[&bare]);
    assert_eq!(code, 0, "{d:?}");
    let warned: Vec<&str> = d.iter().map(|d| d.1.as_str()).collect();
    assert_eq!(
        warned,
        ["vlan-base-missing", "port-undefined", "port-undefined"]
    );
    assert!(d
        .iter()
        .all(|d| d.0 == "warning" && d.3.contains("applied on a node")));
    // nmstatectl gc accepts it; nodenet gc gives the same bytes.
    let ours = run(nodenet().arg("gc").arg(&bare));
    let theirs = run(std::process::Command::new(tool("nmstatectl"))
        .arg("gc")
        .arg(&bare));
    assert!(theirs.status.success());
    assert_eq!(ours.stdout, theirs.stdout);

    // The same state for a host whose NICs are listed: eth1 and eth3 are
    // none of them, so they do not exist at first boot.
    let indented: String = state.lines().map(|l| format!("    {l}\n")).collect();
    let inv = write(
        tmp.path(),
        "inv.yaml",
        format!(
            "nodenet: v1\nhosts:\n- name: n0\n  nics: {{eth0: '52:54:00:00:00:01', eth2: '52:54:00:00:00:02'}}\n  network:\n{indented}"
        ),
    );
    let (code, d) = diagnostics(&[&inv]);
    assert_eq!(code, 1);
    let errs = errors(&d);
    let codes: Vec<(&str, u64)> = errs.iter().map(|d| (d.1.as_str(), d.2)).collect();
    assert_eq!(codes, [("vlan-base-missing", 10), ("port-undefined", 14)]);
    assert!(
        errs[0].3.contains("nor a NIC of the host (eth0, eth2)"),
        "{}",
        errs[0].3
    );
}

#[test]
fn state_only_sections_are_nmstate() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("hostname.yml", "hostname:\n  config: node-1.example.com\n"),
        ("dns.yml", "dns-resolver:\n  config:\n    server: [192.0.2.53]\n"),
        (
            "routes.yml",
            "routes:\n  config:\n  - destination: 198.51.100.0/24\n    next-hop-address: 192.0.2.1\n    next-hop-interface: eth0\n",
        ),
    ] {
        let f = write(tmp.path(), name, text);
        let (code, d) = diagnostics(&[&f]);
        assert_eq!(code, 0, "{name}: {d:?}");
        assert!(d.iter().all(|d| d.1 != "unknown-format"), "{name}: {d:?}");
    }
}

#[test]
fn a_policy_for_a_host_the_inputs_describe_is_checked_against_it() {
    let tmp = tempfile::tempdir().unwrap();
    // bond0 exists in master-0's agent-config network: nothing to say.
    let (code, d) = diagnostics(&[
        &inputs("agent-v1beta1"),
        &inputs("nncp/master-storage.yaml"),
    ]);
    assert_eq!(code, 0);
    assert!(d.is_empty(), "{d:?}");
    // A typo in the base names the host that lacks it.
    let typo = std::fs::read_to_string(inputs("nncp/master-storage.yaml"))
        .unwrap()
        .replacen("base-iface: bond0", "base-iface: bnod0", 1);
    let f = write(tmp.path(), "p.yaml", &typo);
    let (_, d) = diagnostics(&[&inputs("agent-v1beta1"), &f]);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].1, "vlan-base-missing");
    assert!(d[0].3.contains("`master-0`"), "{}", d[0].3);
}

#[test]
fn nodenets_own_render_reads_back_as_the_same_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    for example in examples() {
        let out = tmp.path().join(example.file_stem().unwrap());
        run(nodenet().arg("render").arg(&example).arg("-o").arg(&out));
        let hosts = {
            let o = run(nodenet().arg("check").arg(&example));
            let s = String::from_utf8_lossy(&o.stderr).into_owned();
            s.split(": ").nth(1).unwrap().to_string()
        };
        let o = run(nodenet()
            .arg("check")
            .arg(out.join("install-config.yaml"))
            .arg(out.join("agent-config.yaml")));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{example:?}: {stderr}");
        assert!(
            stderr.contains(&format!("ok: {hosts}: 0 errors, 0 warnings")),
            "{stderr}"
        );
        // The whole output directory too (keyfiles are skipped, every
        // MachineConfig, NNCP and nmstate.yml is a change to its host).
        let (code, d) = diagnostics(&[&out]);
        assert_eq!(code, 0, "{example:?}: {:?}", errors(&d));
        assert!(d.is_empty(), "{example:?}: {d:?}");
    }
}

/// The MachineConfig of pinned NIC names reads back as pins: with the
/// agent-config it came with, nothing to say; a .link file that names a
/// NIC of the table otherwise is a MAC mapped to two names, located in
/// the MachineConfig.
#[test]
fn pinned_nic_names_read_back_and_a_contradicting_pin_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run(nodenet()
        .arg("render")
        .arg(repo().join("examples/pxe-active-backup.yaml"))
        .arg("-o")
        .arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mc = out.join("openshift/10-nodenet-nic-names-master.yaml");
    let (code, d) = diagnostics(&[&out.join("agent-config.yaml"), &mc]);
    assert_eq!(code, 0, "{d:?}");
    assert!(d.is_empty(), "{d:?}");
    // A hand-written MachineConfig pinning master-0's eno1 MAC as eth7.
    use base64::Engine;
    let link = "[Match]\nPermanentMACAddress=52:54:00:20:00:01\n\n[Link]\nName=eth7\n";
    let url = format!(
        "data:;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(link)
    );
    let other = write(
        tmp.path(),
        "99-names.yaml",
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-names\n  labels: {{machineconfiguration.openshift.io/role: master}}\nspec:\n  config:\n    ignition: {{version: 3.2.0}}\n    storage:\n      files:\n      - path: /etc/systemd/network/50-eth7.link\n        mode: 420\n        contents: {{source: \"{url}\"}}\n"
        ),
    );
    let (code, d) = diagnostics(&[&out.join("agent-config.yaml"), &other]);
    assert_eq!(code, 1, "{d:?}");
    assert_eq!(errors(&d).len(), 1, "{d:?}");
    let e = errors(&d)[0];
    assert_eq!(e.1, "duplicate-mac");
    assert_eq!(e.2, 11, "located at the file's path: {e:?}");
    assert!(e.3.contains("`eno1`") && e.3.contains("`eth7`"), "{}", e.3);
}

#[test]
fn render_writes_whole_hosts_and_keeps_changes_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run(nodenet()
        .arg("render")
        .arg(inputs("manifests"))
        .arg("-o")
        .arg(&out));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("1 change(s) to hosts checked, not rendered"),
        "{stderr}"
    );
    assert!(out.join("scale-out/worker-2.yaml").exists());
    assert!(!out.join("hosts/nncp-worker-vm-bridge").exists());
    // Changes alone: their keyfiles, nothing that describes hosts.
    let out = tmp.path().join("out2");
    let o = run(nodenet()
        .arg("render")
        .arg(inputs("nncp"))
        .arg("-o")
        .arg(&out));
    assert!(o.status.success());
    assert!(out
        .join("hosts/nncp-worker-vm-bridge/system-connections/br-vm130.nmconnection")
        .exists());
    assert!(!out.join("install-config.yaml").exists());
}

#[test]
fn diff_takes_one_state_out_of_any_input() {
    let policies = inputs("nncp/master-storage.yaml");
    let o = run(nodenet().arg("diff").arg(&policies).arg(&policies));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("master-0, master-1, master-2"));
    let o = run(nodenet()
        .args(["diff", "--host", "master-1"])
        .arg(inputs("machineconfig/10-br-ex-master.yaml"))
        .arg(inputs("machineconfig-sources/master-1.yml")));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(nodenet()
        .args(["diff", "--host", "master-1"])
        .arg(inputs("machineconfig/10-br-ex-master.yaml"))
        .arg(inputs("machineconfig-sources/master-2.yml")));
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("192.168.111.22"));
}

/// A directory of documents nodenet does not read (ConfigMaps and a
/// Kustomization) must not pass as checked: an error naming the kinds and
/// their counts, exit 1.
#[test]
fn a_directory_of_nothing_readable_is_an_error_not_a_pass() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..3 {
        write(
            tmp.path(),
            &format!("site-{i}.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: sno{i}, namespace: sno{i}}}\ndata: {{a: b}}\n"),
        );
    }
    write(
        tmp.path(),
        "kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [site-0.yaml]\n",
    );
    let (code, d) = diagnostics(&[tmp.path()]);
    assert_eq!(code, 1, "{d:?}");
    let errs = errors(&d);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].1, "unknown-format");
    assert!(
        errs[0].3.contains("ConfigMap ×3, Kustomization ×1")
            && errs[0].3.contains("no host was checked"),
        "{}",
        errs[0].3
    );
}

/// Metal3 and Ironic users' files: Metal3DataTemplates (v1beta1 and
/// v1beta2) with their IPPools and the BareMetalHosts whose inspection
/// data gives the NICs' MACs; netplan files as cloud-init, netplan's
/// examples and `netplan set` write them; BareMetalHosts whose `networkData`
/// (or ramdisk) Secrets hold network_data.json as CAPM3 writes it (YAML,
/// keys sorted) or as nova and Ironic write it (JSON, in `stringData` or
/// base64 `data`), and config drives (`<host>/openstack/latest/`) written
/// the ways cloud-init's, Ironic's and hand-written files are. Each reads
/// as the same 5 hosts the OpenShift BareMetalHosts describe, and all
/// together merge into them without a conflict.
#[test]
fn network_data_in_secrets_and_config_drives_reads_as_the_same_hosts() {
    for scenario in [
        "metal3-networkdata",
        "config-drive",
        "metal3-template",
        "netplan",
    ] {
        let (code, d) = diagnostics(&[&inputs(scenario)]);
        assert_eq!(code, 0, "{scenario}: {:?}", errors(&d));
        // cloud-init 22.4 writes the deprecated `gateway4`, as netplan says.
        let said: Vec<_> = d
            .iter()
            .filter(|d| !(scenario == "netplan" && d.3.starts_with("`gateway4` is deprecated")))
            .collect();
        assert!(said.is_empty(), "{scenario}: {said:?}");
    }
    let openshift = host_facts(&[&inputs("baremetalhost")], true);
    assert_eq!(openshift.len(), 5);
    let worker1 = &openshift["worker-1"];
    for fact in [
        "bond0.120 vlan bond=null vlan={\"id\":120,\"base\":\"bond0\"} v4=false/false/[\"192.168.120.31/24\"] v6=null/null/null",
        "ens1f0 ethernet bond=null vlan=null v4=null/null/null v6=null/null/null mac=52:54:00:aa:04:00",
        "gateway \"192.168.111.1\" via \"bond0.110\"",
    ] {
        assert!(worker1.contains(&fact.to_string()), "{fact}: {worker1:#?}");
    }
    for scenario in [
        "metal3-networkdata",
        "config-drive",
        "metal3-template",
        "netplan",
    ] {
        let seen = host_facts(&[&inputs(scenario)], true);
        for (host, facts) in &openshift {
            assert_eq!(&seen[host], facts, "{scenario} {host}");
        }
    }
    let o = run(nodenet()
        .arg("check")
        .arg(inputs("baremetalhost"))
        .arg(inputs("metal3-networkdata"))
        .arg(inputs("config-drive"))
        .arg(inputs("metal3-template"))
        .arg(inputs("netplan")));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("ok: 5 host(s) checked: 0 errors, 1 warning"),
        "{stderr}"
    );
}

/// A finding inside network_data.json points into it: inside a Secret's
/// base64 value (the place in the decoded text), and at the link of a
/// config drive's file.
#[test]
fn a_finding_inside_network_data_points_at_its_link_or_network() {
    use base64::Engine;
    let tmp = tempfile::tempdir().unwrap();
    // master-2's network_data.json takes master-1's address.
    let text = std::fs::read_to_string(inputs("metal3-networkdata/master-2.yaml")).unwrap();
    let (line_no, encoded) = text
        .lines()
        .enumerate()
        .find_map(|(n, l)| Some((n + 1, l.strip_prefix("  networkData: ")?)))
        .unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let json = String::from_utf8(b64.decode(encoded).unwrap()).unwrap();
    let address_line = json
        .lines()
        .position(|l| l.contains("192.168.111.22"))
        .unwrap()
        + 1;
    let bad = json.replace("192.168.111.22", "192.168.111.21");
    let text = text.replace(encoded, &b64.encode(bad));
    let dir = tmp.path().join("secrets");
    std::fs::create_dir(&dir).unwrap();
    write(&dir, "master-2.yaml", text);
    std::fs::copy(
        inputs("metal3-networkdata/master-1.yaml"),
        dir.join("master-1.yaml"),
    )
    .unwrap();
    let (code, d) = diagnostics(&[&dir]);
    assert_eq!(code, 1);
    let dup = d
        .iter()
        .find(|d| d.1 == "duplicate-ip" && d.3.contains("master-2-networkdata"))
        .unwrap_or_else(|| panic!("{d:?}"));
    assert_eq!(dup.2, line_no as u64, "{dup:?}");
    // The place inside the decoded JSON is the address itself.
    assert!(
        dup.3.contains(&format!("line {address_line} column")),
        "{dup:?} (address on line {address_line})"
    );

    // A config drive's VLAN without the MAC cloud-init needs.
    let drive = tmp.path().join("drive/worker-1/openstack/latest");
    std::fs::create_dir_all(&drive).unwrap();
    let json = std::fs::read_to_string(inputs(
        "config-drive/worker-1/openstack/latest/network_data.json",
    ))
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["links"][4]
        .as_object_mut()
        .unwrap()
        .remove("vlan_mac_address");
    let text = serde_json::to_string_pretty(&v).unwrap();
    let link_line = text
        .lines()
        .position(|l| l.contains("\"bond0.120\""))
        .unwrap();
    write(&drive, "network_data.json", &text);
    let (code, d) = diagnostics(&[&tmp.path().join("drive")]);
    assert_eq!(code, 1, "{d:?}");
    let missing = d
        .iter()
        .find(|d| d.1 == "missing-field" && d.3.contains("vlan_mac_address"))
        .unwrap_or_else(|| panic!("{d:?}"));
    // The link's object opens on the line before its first key.
    assert!(
        (missing.2 as usize) + 1 >= link_line && (missing.2 as usize) <= link_line + 1,
        "{missing:?} (link id on line {})",
        link_line + 1
    );
}

/// The NMState states a YAML or JSON text carries, in any envelope: a
/// bare state, a host's `networkConfig`, a MAC map's `config` (SiteConfig,
/// ClusterInstance, NMStateConfig).
fn nmstate_blocks(text: &str) -> Vec<serde_yaml::Value> {
    use serde::Deserialize;
    fn walk(v: &serde_yaml::Value, out: &mut Vec<serde_yaml::Value>) {
        match v {
            serde_yaml::Value::Mapping(m) => {
                let get = |k: &str| m.get(serde_yaml::Value::from(k));
                let is_state = |s: &serde_yaml::Value| {
                    s.as_mapping().is_some_and(|m| {
                        ["interfaces", "routes", "dns-resolver"]
                            .iter()
                            .any(|k| m.contains_key(serde_yaml::Value::from(*k)))
                    })
                };
                for key in ["networkConfig", "config"] {
                    if let Some(s) = get(key).filter(|s| is_state(s)) {
                        out.push(s.clone());
                    }
                }
                for (_, v) in m {
                    walk(v, out);
                }
            }
            serde_yaml::Value::Sequence(s) => s.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        // A document that does not parse ends the stream (serde_yaml
        // would repeat its error).
        let Ok(v) = serde_yaml::Value::deserialize(doc) else {
            break;
        };
        let bare = v.as_mapping().is_some_and(|m| {
            m.contains_key(serde_yaml::Value::from("interfaces"))
                && !m.contains_key(serde_yaml::Value::from("apiVersion"))
        });
        if bare {
            out.push(v);
        } else {
            walk(&v, &mut out);
        }
    }
    out
}

/// Whether the consumer accepts a file: nmstatectl 2.2.62 `gc` for every
/// NMState state in it, cloud-init's converter for a network_data.json,
/// `netplan generate` for netplan.
/// `None` when no consumer runs here for it (keyfiles: NetworkManager
/// 1.42 has no `nmcli --offline`).
fn consumer_accepts(f: &Path, scratch: &Path) -> Option<bool> {
    let name = f.file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(f).ok()?;
    if name.ends_with(".json") && text.contains("\"links\"") {
        let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
        let mut cmd = std::process::Command::new(tool("cloud-init"));
        cmd.args(["devel", "net-convert", "-k", "network_data.json", "-p"])
            .arg(f)
            .arg("-d")
            .arg(scratch.join(&name))
            .args(["-D", "ubuntu", "-O", "netplan"]);
        // The machine's NICs, as cloud-init would find them by MAC.
        for (i, l) in doc["links"].as_array()?.iter().enumerate() {
            let physical = !matches!(l["type"].as_str(), Some("bond" | "vlan"));
            if let (true, Some(mac)) = (physical, l["ethernet_mac_address"].as_str()) {
                cmd.arg("-m").arg(format!("nic{i},{mac}"));
            }
        }
        let o = cmd.output().unwrap();
        if !o.status.success() {
            eprintln!("{f:?}: cloud-init: {}", String::from_utf8_lossy(&o.stderr));
        }
        return Some(o.status.success());
    }
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap_or_default();
    let v2 =
        |v: &serde_yaml::Value| v["version"].as_u64() == Some(2) && v.get("ethernets").is_some();
    if v2(&yaml["network"]) || v2(&yaml) {
        // netplan itself: `netplan generate` over the file in ROOT/etc/netplan
        // (cloud-init's network-config v2 is netplan under `network:`).
        use std::os::unix::fs::PermissionsExt;
        let root = scratch.join(format!("{name}-root"));
        let etc = root.join("etc/netplan");
        std::fs::create_dir_all(&etc).unwrap();
        let body = if v2(&yaml) {
            serde_yaml::to_string(&serde_yaml::Mapping::from_iter([("network".into(), yaml)]))
                .unwrap()
        } else {
            text
        };
        let p = etc.join("50-nodenet.yaml");
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let o = std::process::Command::new(tool("netplan"))
            .args(["generate", "--root-dir"])
            .arg(&root)
            .output()
            .unwrap();
        return Some(o.status.success());
    }
    let blocks = nmstate_blocks(&text);
    let objects = api_server_accepts(&text);
    if blocks.is_empty() && objects.is_none() {
        return None;
    }
    Some(
        objects != Some(false)
            && blocks.iter().enumerate().all(|(i, b)| {
                let state = scratch.join(format!("{name}-{i}.yml"));
                std::fs::write(&state, serde_yaml::to_string(b).unwrap()).unwrap();
                std::process::Command::new(tool("nmstatectl"))
                    .arg("gc")
                    .arg(&state)
                    .output()
                    .unwrap()
                    .status
                    .success()
            }),
    )
}

/// Whether the API server takes every object of a file whose CRD is in
/// ../shared/schemas (ClusterInstance, NMStateConfig, BareMetalHost,
/// Metal3DataTemplate, IPPool): a version it serves, and the schema's
/// types, enums and required fields; unknown fields it prunes, not
/// refuses. `None` when the file holds none of them. (SiteConfig's CRD is
/// not its consumer: the ZTP generator is.)
fn api_server_accepts(text: &str) -> Option<bool> {
    use serde::Deserialize;
    const CRDS: &[(&str, &str)] = &[
        (
            "ClusterInstance",
            "siteconfig.open-cluster-management.io_clusterinstances.yaml",
        ),
        (
            "NMStateConfig",
            "agent-install.openshift.io_nmstateconfigs.yaml",
        ),
        ("BareMetalHost", "metal3.io_baremetalhosts.yaml"),
        (
            "Metal3DataTemplate",
            "infrastructure.cluster.x-k8s.io_metal3datatemplates.yaml",
        ),
        ("IPPool", "ipam.metal3.io_ippools.yaml"),
    ];
    let mut verdict = None;
    for doc in serde_yaml::Deserializer::from_str(text) {
        let Ok(v) = serde_json::Value::deserialize(doc) else {
            break;
        };
        let Some((_, file)) = CRDS.iter().find(|(k, _)| v["kind"] == *k) else {
            continue;
        };
        let version = v["apiVersion"]
            .as_str()
            .unwrap_or("")
            .rsplit('/')
            .next()
            .unwrap_or("");
        let ok = crd::served_schema(file, version)
            .is_some_and(|schema| crd::validator(&schema).is_valid(&v));
        verdict = Some(verdict.unwrap_or(true) && ok);
    }
    verdict
}

/// Files shaped like upstream's own (tests/upstream-shapes, one directory
/// per reader, written here) and the bad inputs: nodenet is never
/// stricter than the consumer (every file its consumer accepts checks
/// without an error) and at least as strict (every file its consumer
/// refuses is an error). Prints the agreement per reader
/// (RELIABILITY.md, "Upstream's files as their consumers read them").
#[test]
fn upstream_shaped_files_check_as_their_consumers_read_them() {
    if skip_without(&["cloud-init", "netplan", "nmstatectl"]) {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let root = repo().join("tests/upstream-shapes");
    // reader -> (files, consumer ran, both accept, both refuse, disagree)
    let mut table: std::collections::BTreeMap<String, [usize; 5]> = Default::default();
    let mut disagreements = Vec::new();
    let mut readers: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    readers.sort();
    for reader in readers {
        let name = reader.file_name().unwrap().to_string_lossy().into_owned();
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&reader)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for entry in entries {
            let row = table.entry(name.clone()).or_default();
            row[0] += 1;
            let (code, d) = diagnostics(&[&entry]);
            let errors: Vec<_> = d.iter().filter(|d| d.0 == "error").collect();
            if code != 0 {
                disagreements.push(format!("{entry:?}: nodenet refuses it: {errors:?}"));
            }
            let files = if entry.is_dir() {
                files_under(&entry)
            } else {
                vec![entry.clone()]
            };
            let verdicts: Vec<bool> = files
                .iter()
                .filter_map(|f| consumer_accepts(f, scratch.path()))
                .collect();
            if verdicts.is_empty() {
                continue;
            }
            row[1] += 1;
            if verdicts.iter().all(|v| *v) {
                row[2] += 1;
            } else {
                row[4] += 1;
                disagreements.push(format!("{entry:?}: its consumer refuses it"));
            }
        }
    }
    // The bad inputs whose consumer runs and refuses them: an error each.
    // Those it takes are defects it lets through (assisted-service's,
    // the operators' or the node's to find later), listed for review.
    let mut let_through = Vec::new();
    for f in files_under(&repo().join("tests/bad")) {
        let verdict = consumer_accepts(&f, scratch.path());
        if verdict == Some(true) {
            let_through.push(f.file_name().unwrap().to_string_lossy().into_owned());
        }
        if verdict != Some(false) {
            continue;
        }
        let row = table.entry("bad inputs".into()).or_default();
        row[0] += 1;
        row[1] += 1;
        let (code, _) = diagnostics(&[&f]);
        if code == 1 {
            row[3] += 1;
        } else {
            row[4] += 1;
            disagreements.push(format!(
                "{f:?}: its consumer refuses it, nodenet exits {code}"
            ));
        }
    }
    // A config drive's host is the one its meta_data.json names, as
    // cloud-init sets it; a file name is never a finding.
    let drive = root.join("network-data/config-drive/openstack/latest/network_data.json");
    let o = run(nodenet().arg("hosts").arg(&drive));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("worker-7.example.com"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    println!("| reader | files | consumer ran | both accept | both refuse | disagree |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (reader, [files, ran, accept, refuse, disagree]) in &table {
        println!("| {reader} | {files} | {ran} | {accept} | {refuse} | {disagree} |");
    }
    println!(
        "bad inputs the consumer run here takes ({}): {}",
        let_through.len(),
        let_through.join(", ")
    );
    assert!(table.len() >= 7, "{table:?}");
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
