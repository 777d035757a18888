//! The shipped examples, judged by their real consumers: NetworkManager
//! parses every keyfile, ignition-validate accepts every MachineConfig,
//! nmstatectl generates the same keyfiles.

use std::os::unix::fs::PermissionsExt;

use crate::common::*;

fn render(example: &std::path::Path, out: &std::path::Path) {
    let o = run(nodenet().arg("render").arg(example).arg("-o").arg(out));
    assert!(
        o.status.success(),
        "render {example:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn examples_check_clean() {
    for ex in examples() {
        let o = run(nodenet().args(["check", "--format", "json"]).arg(&ex));
        let diags = json(&o)["diagnostics"].as_array().unwrap().clone();
        assert!(diags.is_empty(), "{ex:?}: {diags:#?}");
        assert_eq!(o.status.code(), Some(0), "{ex:?}");
    }
}

#[test]
fn every_rendered_keyfile_is_accepted_by_networkmanager_and_is_0600() {
    if skip_without(&["nmcli"]) {
        return;
    }
    let nmcli = tool("nmcli");
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for ex in examples() {
        let out = tmp.path().join(ex.file_stem().unwrap());
        render(&ex, &out);
        for f in files_under(&out)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "nmconnection"))
        {
            let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{f:?}");
            let o = run(std::process::Command::new(&nmcli)
                .args(["--offline", "connection", "modify", "connection.id", "x"])
                .stdin(std::fs::File::open(&f).unwrap()));
            assert!(
                o.status.success(),
                "nmcli rejects {f:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            checked += 1;
        }
    }
    // 4 + 5x(5) + 3x(3) + 103x(3) keyfiles across the four examples.
    assert!(checked > 300, "only {checked} keyfiles checked");
}

#[test]
fn every_machineconfig_passes_ignition_validate() {
    if skip_without(&["ignition-validate"]) {
        return;
    }
    let validate = tool("ignition-validate");
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut br_ex_files = 0;
    let mut pinned = 0;
    for ex in examples() {
        let out = tmp.path().join(ex.file_stem().unwrap());
        render(&ex, &out);
        // Nothing goes through the MCO without br-ex by NMState, pinned
        // NIC names or the node agent.
        if !out.join("openshift").exists() {
            continue;
        }
        for f in files_under(&out.join("openshift")) {
            if !f.to_string_lossy().ends_with(".yaml") {
                continue;
            }
            let mc: serde_json::Value =
                serde_yaml::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            if mc["kind"] == "MachineConfiguration" {
                // Not an Ignition carrier: the MCO's node disruption policy
                // for the files nodenet-apply.service applies.
                let files = &mc["spec"]["nodeDisruptionPolicy"]["files"];
                assert_eq!(files[0]["path"], "/etc/nodenet/nmstate", "{}", f.display());
                continue;
            }
            if mc["kind"] != "MachineConfig" {
                // MachineOSConfig, MachineConfigPool: tests/schemas.rs.
                continue;
            }
            let role = mc["metadata"]["labels"]["machineconfiguration.openshift.io/role"]
                .as_str()
                .unwrap();
            assert!(f.to_string_lossy().ends_with(&format!("-{role}.yaml")));
            let files = mc["spec"]["config"]["storage"]["files"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for file in &files {
                let path = file["path"].as_str().unwrap();
                if path.starts_with("/etc/systemd/network/") {
                    // Pinned NIC names: one .link file per NIC of every
                    // host in the pool, each matching that NIC's MAC.
                    let text = gunzip_data_url(file["contents"]["source"].as_str().unwrap());
                    assert!(path.ends_with(".link"), "{path}");
                    assert!(f.to_string_lossy().contains("10-nodenet-nic-names-"));
                    let mac = text
                        .lines()
                        .find_map(|l| l.strip_prefix("PermanentMACAddress="))
                        .unwrap_or_else(|| panic!("{path}: {text}"));
                    assert!(path.contains(&mac.replace(':', "")), "{path}: {text}");
                    pinned += 1;
                    continue;
                }
                assert!(
                    (path.starts_with("/etc/nmstate/openshift/")
                        || path.starts_with("/etc/nodenet/nmstate/"))
                        && path.ends_with(".yml"),
                    "{path}"
                );
                assert_eq!(file["mode"], 420);
                assert_eq!(file["contents"]["compression"], "gzip");
                // What RHCOS applies from /etc/nmstate/openshift defines
                // br-ex (else configure-ovs is skipped and there is none).
                if path.starts_with("/etc/nmstate/openshift/") {
                    let text = gunzip_data_url(file["contents"]["source"].as_str().unwrap());
                    let state: serde_json::Value = serde_yaml::from_str(&text).unwrap();
                    let kinds: Vec<&str> = state["interfaces"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|i| i["name"] == "br-ex")
                        .filter_map(|i| i["type"].as_str())
                        .collect();
                    assert_eq!(kinds, ["ovs-bridge", "ovs-interface"], "{path}: {text}");
                    br_ex_files += 1;
                }
            }
            let units = mc["spec"]["config"]["systemd"]["units"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                !files.is_empty() || !units.is_empty() || mc["spec"]["osImageURL"].is_string(),
                "{}",
                f.display()
            );
            let ign = tmp.path().join("config.ign");
            std::fs::write(&ign, serde_json::to_vec(&mc["spec"]["config"]).unwrap()).unwrap();
            let o = run(std::process::Command::new(&validate).arg(&ign));
            assert!(
                o.status.success(),
                "ignition-validate rejects {f:?}: {}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked}");
    assert!(br_ex_files >= 6, "{br_ex_files}");
    // pxe-active-backup pins its hosts' two NICs each.
    assert!(pinned >= 6, "{pinned}");
}

/// The text of a gzip-compressed `data:` URL, decoded by flate2 and base64
/// as any Ignition reader would.
fn gunzip_data_url(url: &str) -> String {
    use base64::Engine;
    use std::io::Read;
    let (_, data) = url.split_once(',').unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// The per-host `nmstate.yml` is the state the keyfiles came from:
/// nmstatectl generates byte-identical keyfiles from it.
#[test]
fn rendered_keyfiles_equal_nmstatectl_gc() {
    if skip_without(&["nmstatectl"]) {
        return;
    }
    let nmstatectl = tool("nmstatectl");
    let tmp = tempfile::tempdir().unwrap();
    let mut hosts = 0;
    for ex in examples() {
        let out = tmp.path().join(ex.file_stem().unwrap());
        render(&ex, &out);
        let mut dirs: Vec<_> = std::fs::read_dir(out.join("hosts"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        dirs.sort();
        // Every host: the big example's keyfiles come mostly from its
        // shape (one nmstate run filled with each host's addresses), so
        // each one is held against nmstatectl's.
        for dir in &dirs {
            let state = dir.join("nmstate.yml");
            let theirs = run(std::process::Command::new(&nmstatectl)
                .arg("gc")
                .arg(&state));
            assert!(
                theirs.status.success(),
                "{state:?}: {}",
                String::from_utf8_lossy(&theirs.stderr)
            );
            let ours = run(nodenet().arg("gc").arg(&state));
            assert!(ours.status.success());
            assert_eq!(
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&theirs.stdout),
                "{state:?}"
            );
            // And the rendered files are exactly those keyfiles.
            let parsed: serde_yaml::Value = serde_yaml::from_slice(&theirs.stdout).unwrap();
            let ours_gc = run(nodenet()
                .arg("gc")
                .arg(&state)
                .arg("-o")
                .arg(tmp.path().join("gc")));
            assert!(ours_gc.status.success());
            for pair in parsed["NetworkManager"].as_sequence().unwrap() {
                let name = pair[0].as_str().unwrap();
                let rendered =
                    std::fs::read_to_string(dir.join("system-connections").join(name)).unwrap();
                assert_eq!(
                    rendered,
                    std::fs::read_to_string(tmp.path().join("gc").join(name)).unwrap(),
                    "{state:?} {name}"
                );
            }
            hosts += 1;
        }
    }
    assert!(hosts >= 100, "{hosts}");
}

#[test]
fn render_is_deterministic_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    for ex in examples() {
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        render(&ex, &a);
        render(&ex, &b);
        // Rendering again over an existing output replaces it.
        render(&ex, &b);
        let fa = files_under(&a);
        let fb = files_under(&b);
        assert_eq!(fa.len(), fb.len());
        for (x, y) in fa.iter().zip(&fb) {
            assert_eq!(x.strip_prefix(&a).unwrap(), y.strip_prefix(&b).unwrap());
            assert_eq!(
                std::fs::read(x).unwrap(),
                std::fs::read(y).unwrap(),
                "{x:?}"
            );
        }
        std::fs::remove_dir_all(&a).unwrap();
        std::fs::remove_dir_all(&b).unwrap();
    }
}

#[test]
fn manifest_lists_every_file_with_its_sha256() {
    if skip_without(&["sha256sum"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    render(&examples()[0], &out);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let listed: Vec<&serde_json::Value> = manifest["files"].as_array().unwrap().iter().collect();
    let on_disk: Vec<_> = files_under(&out)
        .into_iter()
        .filter(|p| !p.ends_with("manifest.json"))
        .collect();
    assert_eq!(listed.len(), on_disk.len());
    let sha = tool("sha256sum");
    for entry in listed {
        let path = out.join(entry["path"].as_str().unwrap());
        let o = run(std::process::Command::new(&sha).arg(&path));
        let expected = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        assert_eq!(entry["sha256"].as_str().unwrap(), expected, "{path:?}");
    }
}

/// Names and values that YAML 1.1 reads as booleans, base-60 integers or
/// dates when unquoted.
const YAML11_TRAPS: &str = r#"nodenet: v1
cluster:
  name: traps
  baseDomain: example.com
  machineNetworks: [192.168.111.0/24]
  provisioning: {network: Disabled}
hosts:
- name: "no"
  role: worker
  bootMACAddress: "52:54:00:12:00:01"
  nics: {eth0: "52:54:00:12:00:01", "on": "52:54:00:12:00:02"}
  network:
    interfaces:
    - {name: "on", type: ethernet, state: up, description: "2024-01-01"}
    - name: eth0
      type: ethernet
      state: up
      description: "yes"
      ipv4: {enabled: true, dhcp: false, address: [{ip: 192.168.111.20, prefix-length: 24}]}
    routes:
      config:
      - {destination: 0.0.0.0/0, next-hop-address: 192.168.111.1, next-hop-interface: eth0}
"#;

/// Every YAML file a render writes reads the same in YAML 1.1 (PyYAML;
/// go-yaml v2 in openshift-install and kubectl is 1.1 too) as in YAML 1.2
/// (serde_yaml, nmstate).
#[test]
fn every_rendered_yaml_reads_the_same_in_yaml_1_1() {
    if skip_without(&["python3"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let traps = tmp.path().join("traps.yaml");
    std::fs::write(&traps, YAML11_TRAPS).unwrap();
    let mut files = Vec::new();
    for (i, ex) in examples().into_iter().chain([traps]).enumerate() {
        let out = tmp.path().join(format!("out{i}"));
        render(&ex, &out);
        files.extend(
            files_under(&out)
                .into_iter()
                .filter(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml")),
        );
    }
    let py = run(std::process::Command::new("python3")
        .arg("-c")
        .arg("import sys, json, yaml\nprint(json.dumps({f: list(yaml.safe_load_all(open(f))) for f in sys.argv[1:]}, default=lambda o: ['not a string', str(o)]))")
        .args(&files));
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let yaml11: serde_json::Value = serde_json::from_slice(&py.stdout).unwrap();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let yaml12: Vec<serde_json::Value> = serde_yaml::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        assert_eq!(
            yaml11[f.to_str().unwrap()],
            serde_json::json!(yaml12),
            "{} reads differently in YAML 1.1",
            f.display()
        );
    }
    assert!(files.len() > 20, "{files:?}");
}
