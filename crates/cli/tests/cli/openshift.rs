//! OpenShift as its nodes run it: what `render` writes for the Machine
//! Config Operator, judged by the consumers that can run here (nmstate's
//! own `nmstatectl gc`, NetworkManager's keyfile reader `nmcli --offline`,
//! `nodenet check` as the gate before deploy) and by etcd's limits. The
//! RHCOS scripts themselves run in the lab (tests/lab.rs).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::common::layering::{agent_image, buildah, ok, unpack};
use crate::common::*;
use serde_json::Value;

fn render(inputs: &[&Path], out: &Path) -> String {
    let o = run(nodenet().arg("render").args(inputs).arg("-o").arg(out));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    stderr
}

/// Every document of a YAML file.
fn docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

/// The files a MachineConfig writes: path → text (gzip `data:` URLs
/// decoded by base64 and flate2, as Ignition and the MCO read them).
fn mc_files(mc: &Value) -> BTreeMap<String, String> {
    use base64::Engine;
    let mut out = BTreeMap::new();
    for f in mc["spec"]["config"]["storage"]["files"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let source = f["contents"]["source"].as_str().unwrap();
        let (head, data) = source.split_once(',').unwrap();
        assert!(head.ends_with(";base64"), "{head}");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        let mut text = String::new();
        assert_eq!(f["contents"]["compression"], "gzip");
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
        out.insert(f["path"].as_str().unwrap().to_string(), text);
    }
    out
}

/// Every file the MachineConfigs of `dir` write.
fn written(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in files_under(dir) {
        if !f.to_string_lossy().ends_with(".yaml") {
            continue;
        }
        for doc in docs(&f) {
            if doc["kind"] == "MachineConfig" {
                out.extend(mc_files(&doc));
            }
        }
    }
    out
}

/// `nmstatectl gc` on `state` (its MAC to copy pinned as `mac`, which
/// nmstate reads from the live node), each keyfile read by NetworkManager
/// (`nmcli --offline`): the keyfiles, by name.
fn nmstate_keyfiles(state: &str, mac: &str, dir: &Path) -> BTreeMap<String, String> {
    let mut v: Value = serde_yaml::from_str(state).unwrap();
    for i in v["interfaces"].as_array_mut().unwrap() {
        if i.get("copy-mac-from").is_some() {
            let o = i.as_object_mut().unwrap();
            o.remove("copy-mac-from");
            o.insert("mac-address".into(), mac.into());
        }
    }
    let file = dir.join("state.yml");
    std::fs::write(&file, serde_yaml::to_string(&v).unwrap()).unwrap();
    let o = run(std::process::Command::new(tool("nmstatectl"))
        .arg("gc")
        .arg(&file));
    assert!(
        o.status.success(),
        "nmstatectl gc rejects {state}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let gc: Value = serde_yaml::from_slice(&o.stdout).unwrap();
    let mut out = BTreeMap::new();
    for pair in gc["NetworkManager"].as_array().unwrap() {
        let (name, content) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
        let kf = dir.join(name);
        std::fs::write(&kf, content).unwrap();
        let o = run(std::process::Command::new(tool("nmcli"))
            .args(["--offline", "connection", "modify", "connection.id", "x"])
            .stdin(std::fs::File::open(&kf).unwrap()));
        assert!(
            o.status.success(),
            "NetworkManager rejects {name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        out.insert(name.to_string(), content.to_string());
    }
    out
}

/// A key of a keyfile's group.
fn key<'a>(keyfile: &'a str, group: &str, k: &str) -> Option<&'a str> {
    let mut in_group = false;
    for line in keyfile.lines() {
        if line.starts_with('[') {
            in_group = line == format!("[{group}]");
        } else if in_group {
            if let Some(v) = line.strip_prefix(&format!("{k}=")) {
                return Some(v);
            }
        }
    }
    None
}

/// br-ex as nodenet derives it from the seed topology (an LACP bond with
/// VLAN 110, DHCP): nmstate makes OpenShift's br-ex of it (ovs-bridge and
/// its ports, the VLAN as the uplink port, the ovs-interface with DHCP at
/// route metric 48 and the uplink's MAC), and NetworkManager reads every
/// keyfile. The same for the intent's own br-ex (static-masters-br-ex).
#[test]
fn br_ex_states_are_openshifts_br_ex_to_nmstate_and_networkmanager() {
    if skip_without(&["nmcli", "nmstatectl"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let seed = std::fs::read_to_string(repo().join("examples/lacp-vlan.yaml")).unwrap();
    let derived = tmp.path().join("derive.yaml");
    std::fs::write(
        &derived,
        seed.replace("  nodeAgent:", "  brEx: derive\n  nodeAgent:"),
    )
    .unwrap();
    let out = tmp.path().join("derive");
    render(&[&derived], &out);
    let files = written(&out.join("openshift"));
    let state = &files["/etc/nmstate/openshift/worker-0.yml"];
    // bond0's MAC is its first port's: eno2's (52:54:00:10:10:02).
    let kf = nmstate_keyfiles(state, "52:54:00:10:10:02", tmp.path());
    let bridge = &kf["br-ex-br.nmconnection"];
    assert_eq!(key(bridge, "connection", "type"), Some("ovs-bridge"));
    assert_eq!(
        key(bridge, "ovs-bridge", "mcast-snooping-enable"),
        Some("true")
    );
    let vlan = &kf["bond0.110.nmconnection"];
    assert_eq!(key(vlan, "connection", "slave-type"), Some("ovs-port"));
    assert_eq!(key(vlan, "vlan", "id"), Some("110"));
    let iface = &kf["br-ex-if.nmconnection"];
    assert_eq!(key(iface, "connection", "type"), Some("ovs-interface"));
    assert_eq!(key(iface, "ipv4", "method"), Some("auto"));
    assert_eq!(key(iface, "ipv4", "route-metric"), Some("48"));
    assert_eq!(key(iface, "ovs-interface", "type"), Some("internal"));
    assert_eq!(
        key(iface, "ethernet", "cloned-mac-address").map(str::to_ascii_lowercase),
        Some("52:54:00:10:10:02".into())
    );
    // nodenet's own day-2 state is the same br-ex, with OVN-Kubernetes'
    // masquerade address kept (nmstate would remove what it does not list).
    let day2: Value = serde_yaml::from_str(&files["/etc/nodenet/nmstate/worker-0.yml"]).unwrap();
    let internal = day2["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "ovs-interface")
        .unwrap();
    assert_eq!(internal["ipv4"]["dhcp"], true);
    assert_eq!(
        internal["ipv4"]["address"],
        serde_json::json!([{"ip": "169.254.0.2", "prefix-length": 17}])
    );
    // The intent's own br-ex goes there as written.
    let out = tmp.path().join("static");
    render(&[&repo().join("examples/static-masters-br-ex.yaml")], &out);
    let files = written(&out.join("openshift"));
    let kf = nmstate_keyfiles(
        &files["/etc/nmstate/openshift/master-1.yml"],
        "00:5c:5a:8e:a1:11",
        tmp.path(),
    );
    let iface = &kf["br-ex-if.nmconnection"];
    assert_eq!(key(iface, "ipv4", "address0"), Some("192.168.111.111/24"));
    assert_eq!(
        key(iface, "ipv4", "route0"),
        Some("0.0.0.0/0,192.168.111.1,0")
    );
    assert_eq!(
        key(iface, "ethernet", "cloned-mac-address").map(str::to_ascii_lowercase),
        Some("00:5c:5a:8e:a1:11".into())
    );
}

/// What configure-ovs makes br-ex of is configure-ovs's: without br-ex in
/// the intent nothing goes to /etc/nmstate/openshift, and nodenet's day-2
/// state leaves out the interface configure-ovs moves under br-ex.
#[test]
fn under_configure_ovs_nothing_goes_to_openshifts_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    render(&[&repo().join("examples/lacp-vlan.yaml")], &out);
    let files = written(&out.join("openshift"));
    assert!(
        files.keys().all(|p| p.starts_with("/etc/nodenet/nmstate/")),
        "{:?}",
        files.keys()
    );
    let day2: Value = serde_yaml::from_str(&files["/etc/nodenet/nmstate/master-0.yml"]).unwrap();
    let names: Vec<&str> = day2["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["eno1", "eno2", "eno3", "bond0"]);
    // The day-1 network still has the VLAN (install-config, keyfiles).
    let ic = std::fs::read_to_string(out.join("install-config.yaml")).unwrap();
    assert!(ic.contains("name: bond0.110"));
}

/// `check` refuses what RHCOS would apply from /etc/nmstate/openshift
/// without br-ex, in a MachineConfig someone already has (an older
/// nodenet's render), and accepts the MachineConfigs render writes now,
/// read back from the output directory with their gzip contents.
#[test]
fn check_finds_a_state_without_br_ex_where_rhcos_applies_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    render(&[&repo().join("examples/lacp-vlan.yaml")], &out);
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(out.join("openshift")));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The same MachineConfig moved to OpenShift's br-ex directory.
    let mc = std::fs::read_to_string(out.join("openshift/10-nodenet-nmstate-worker.yaml"))
        .unwrap()
        .replace("/etc/nodenet/nmstate/", "/etc/nmstate/openshift/");
    let old = write(tmp.path(), "10-old-worker.yaml", &mc);
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&old));
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let d = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "br-ex-missing")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(d["host"], "worker-0");
    assert!(d["message"]
        .as_str()
        .unwrap()
        .contains("Skipping configure-ovs due to manual network configuration"));
}

/// A node disruption policy restarts a unit only together with the
/// MachineConfig that installs it: render writes both (or neither);
/// `check` refuses the policy alone.
#[test]
fn the_restart_policy_comes_only_with_its_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    render(&[&repo().join("examples/lacp-vlan.yaml")], &out);
    let openshift = out.join("openshift");
    let unit_mcs: Vec<PathBuf> = files_under(&openshift)
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("10-nodenet-agent-"))
        .collect();
    assert_eq!(unit_mcs.len(), 2, "{unit_mcs:?}");
    let unit = &docs(&unit_mcs[0])[0]["spec"]["config"]["systemd"]["units"][0];
    assert_eq!(unit["name"], "nodenet-apply.service");
    assert_eq!(unit["enabled"], true);
    let contents = unit["contents"].as_str().unwrap();
    assert!(contents.contains("ExecStart=/usr/bin/nodenet service --dir /etc/nodenet/nmstate --timeout 480 --probe-timeout 120\n"));
    let policy = openshift.join("machineconfiguration-cluster.yaml");
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&policy));
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["diagnostics"][0]["code"], "restart-unit-missing", "{v}");
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(&policy)
        .arg(&unit_mcs[0]));
    assert_eq!(o.status.code(), Some(0), "{}", json(&o));
    // Without cluster.nodeAgent: no unit, no policy.
    let seed = std::fs::read_to_string(repo().join("examples/lacp-vlan.yaml")).unwrap();
    let start = seed.find("  nodeAgent:").unwrap();
    let end = start + seed[start..].find("credentials:").unwrap();
    let plain = write(
        tmp.path(),
        "plain.yaml",
        format!("{}{}", &seed[..start], &seed[end..]),
    );
    let out = tmp.path().join("plain");
    render(&[&plain], &out);
    assert!(!out.join("openshift").exists());
}

/// Three masters whose states are large (2,000 VLANs each, written in
/// flow style): install-config.yaml would be past etcd's 1 MiB with the
/// control plane alone. `render` refuses it, and so do `check` and `plan`
/// of a change to it, before anything is written. (`check` said the
/// fleet was clean: it sized the states by where the input wrote them,
/// and a block mapping's place is its first character.)
#[test]
fn masters_past_etcds_limit_are_refused_by_check_render_and_plan_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let inventory = |mtu: u32| {
        let mut text = String::from(
            "nodenet: v1\ncluster: {name: big, baseDomain: example.com, machineNetworks: [10.0.0.0/24], apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.6], provisioning: {network: Disabled}}\nhosts:\n",
        );
        for m in 0..3 {
            text.push_str(&format!(
                "- name: master-{m}\n  role: master\n  nics: {{eno1: '52:54:00:00:0{m}:01'}}\n  network:\n    interfaces:\n    - {{name: eno1, type: ethernet, state: up, mtu: {mtu}, ipv4: {{enabled: true, address: [{{ip: 10.0.0.{}, prefix-length: 24}}]}}}}\n",
                10 + m
            ));
            for v in 2..2002 {
                text.push_str(&format!(
                    "    - {{name: eno1.{v}, type: vlan, state: up, vlan: {{base-iface: eno1, id: {v}}}, ipv4: {{enabled: true, address: [{{ip: 172.{}.{}.{}, prefix-length: 24}}]}}}}\n",
                    16 + v / 250,
                    v % 250,
                    10 + m
                ));
            }
            text.push_str("    routes:\n      config: [{destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: eno1}]\n");
        }
        text
    };
    let old = write(tmp.path(), "old.yaml", inventory(1500));
    let new = write(tmp.path(), "new.yaml", inventory(9000));
    let said = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&new));
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    let errors: Vec<String> = json(&o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| format!("{} {}", d["code"], d["message"]))
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("\"object-too-large\" \"install-config.yaml would be")
            && errors[0].contains("with the control-plane hosts alone"),
        "{errors:?}"
    );
    // The same finding stops render and plan, and nothing is written.
    let out = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&new).arg("-o").arg(&out));
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    assert!(said(&o).contains("object-too-large"), "{}", said(&o));
    assert!(!out.exists());
    let o = run(nodenet()
        .arg("plan")
        .arg(&old)
        .arg(&new)
        .arg("-o")
        .arg(&out));
    assert!(!o.status.success(), "{}", said(&o));
    assert!(
        said(&o).contains("object-too-large")
            && said(&o).contains("does not check clean: nothing planned"),
        "{}",
        said(&o)
    );
    assert!(!out.exists());
}

/// 3,000 workers and 3 masters, each with a bond, a VLAN and a static
/// address, br-ex derived and the node agent on: every object render
/// writes stays under 1 MiB, and so does every pool's MachineConfigs
/// together; the workers go to custom pools that take every worker
/// exactly once, each with its own files; install-config.yaml lists the
/// control plane and the workers that fit, scale-out/ every host; and
/// `check` says all this before render does.
#[test]
fn a_large_fleet_stays_within_etcds_limits() {
    const LIMIT: usize = 1 << 20;
    let tmp = tempfile::tempdir().unwrap();
    let inv = write(
        tmp.path(),
        "fleet.yaml",
        r#"nodenet: v1
cluster: {name: big, baseDomain: example.com, machineNetworks: [10.0.0.0/8], apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.4], provisioning: {network: Disabled}, brEx: derive, nodeAgent: {image: "quay.io/example/nodenet:0.1.0", renderedImagePushSpec: "quay.io/example/os-image:nodenet", renderedImagePushSecret: push}}
pools:
  m: {range: 10.1.0.1-10.9.255.254, prefix: 8, gateway: 10.0.0.1}
templates:
  node:
    nics: {eno1: "${index:mac 52:54:00:00:00:00}", eno2: "${index:mac 52:55:00:00:00:00}"}
    network:
      interfaces:
      - {name: eno1, type: ethernet, state: up}
      - {name: eno2, type: ethernet, state: up}
      - {name: bond0, type: bond, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}, link-aggregation: {mode: 802.3ad, options: {miimon: "100"}, port: [eno1, eno2]}}
      - name: bond0.110
        type: vlan
        state: up
        vlan: {base-iface: bond0, id: 110}
        ipv4: {enabled: true, address: [{ip: "${ip.m}", prefix-length: "${prefix.m}"}]}
      routes:
        config: [{destination: 0.0.0.0/0, next-hop-address: "${gateway.m}", next-hop-interface: bond0.110}]
hosts:
- {name: "master-${index}", template: node, role: master, count: 3, start: 9000}
- {name: "worker-${index:04}", template: node, role: worker, count: 3000}
"#,
    );
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&inv));
    assert_eq!(o.status.code(), Some(0));
    let codes: BTreeSet<String> = json(&o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect();
    assert!(
        codes.contains("pool-split") && codes.contains("install-config-scale-out"),
        "{codes:?}"
    );
    let out = tmp.path().join("out");
    render(&[&inv], &out);
    // Every object.
    let mut yaml_files: Vec<PathBuf> = files_under(&out.join("openshift"));
    yaml_files.push(out.join("install-config.yaml"));
    for f in &yaml_files {
        let text = std::fs::read_to_string(f).unwrap();
        for doc in text.split("\n---\n") {
            assert!(
                doc.len() < LIMIT,
                "{} has a {} byte object",
                f.display(),
                doc.len()
            );
        }
    }
    // The pools: each custom pool with its selector, files and total.
    let mut pools: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in files_under(&out.join("openshift")) {
        for doc in docs(&f) {
            if doc["kind"] != "MachineConfigPool" {
                continue;
            }
            let name = doc["metadata"]["name"].as_str().unwrap().to_string();
            assert_eq!(
                doc["spec"]["machineConfigSelector"]["matchExpressions"][0]["values"],
                serde_json::json!(["worker", name])
            );
            let names: Vec<String> = doc["spec"]["nodeSelector"]["matchExpressions"][0]["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            pools.insert(name, names);
        }
    }
    assert!(pools.len() >= 3, "{:?}", pools.keys());
    let mut seen = BTreeSet::new();
    let agent_worker = std::fs::metadata(out.join("openshift/10-nodenet-agent-worker.yaml"))
        .unwrap()
        .len() as usize;
    for (pool, nodes) in &pools {
        for n in nodes {
            assert!(seen.insert(n.clone()), "{n} is in two pools");
        }
        let mut total = agent_worker;
        let mut files = BTreeSet::new();
        for kind in ["br-ex", "nmstate"] {
            let f = out.join(format!("openshift/10-nodenet-{kind}-{pool}.yaml"));
            total += std::fs::metadata(&f).unwrap().len() as usize;
            files.extend(mc_files(&docs(&f)[0]).into_keys());
        }
        assert!(total < LIMIT, "{pool}: {total} bytes of MachineConfigs");
        let expected: BTreeSet<String> = nodes
            .iter()
            .flat_map(|n| {
                [
                    format!("/etc/nmstate/openshift/{n}.yml"),
                    format!("/etc/nodenet/nmstate/{n}.yml"),
                ]
            })
            .collect();
        assert_eq!(files, expected, "{pool} carries another pool's files");
        // One MachineOSConfig per pool: its nodes get the binary too.
        assert!(out
            .join(format!("openshift/machineosconfig-{pool}.yaml"))
            .exists());
    }
    assert_eq!(seen.len(), 3000);
    assert!(!out
        .join("openshift/10-nodenet-nmstate-worker.yaml")
        .exists());
    // install-config.yaml: the control plane and the first workers; the
    // rest in scale-out/ only, as every host is.
    let ic: Value =
        serde_yaml::from_str(&std::fs::read_to_string(out.join("install-config.yaml")).unwrap())
            .unwrap();
    let listed: Vec<&str> = ic["platform"]["baremetal"]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(&listed[..3], ["master-9000", "master-9001", "master-9002"]);
    assert!(
        listed.len() > 500 && listed.len() < 3003,
        "{}",
        listed.len()
    );
    assert_eq!(ic["compute"][0]["replicas"], listed.len() as u64 - 3);
    assert_eq!(
        std::fs::read_dir(out.join("scale-out")).unwrap().count(),
        3003
    );
}

/// install-config.yaml as openshift-install reads it: keys in any case
/// (read, with a warning to write them as documented), no unknown field,
/// network addresses without host bits.
#[test]
fn install_config_is_read_as_the_installer_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let ic = write(
        tmp.path(),
        "install-config.yaml",
        "apiVersion: v1\nbaseDomain: example.com\nmetadata: {name: c}\nnetworking:\n  machineNetwork: [{cidr: 192.168.56.1/25}]\n  serviceNetwork: [172.30.0.0/16]\nplatform:\n  baremetal:\n    apiVips: [10.9.9.9]\n    ingressVIPs: [192.168.56.4]\n    provisioningNetwork: Disabled\n    hosts:\n    - name: m0\n      role: master\n      bootMACAddress: '52:54:00:00:00:01'\n      bmc: {address: 'redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/1', username: admin, password: pw}\n      netwrokConfig: {interfaces: []}\n",
    );
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&ic));
    assert_eq!(o.status.code(), Some(1));
    let found: Vec<(String, String, u64)> = json(&o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["severity"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let has = |sev: &str, code: &str, line: u64| {
        found.contains(&(sev.to_string(), code.to_string(), line))
    };
    assert!(has("error", "cidr-not-network", 5), "{found:?}");
    // `apiVips` is read: its VIP is outside the machine network.
    assert!(has("warning", "field-case", 9), "{found:?}");
    assert!(has("error", "vip-outside-machine-network", 9), "{found:?}");
    assert!(has("error", "unknown-field", 17), "{found:?}");
    let help = json(&o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "unknown-field")
        .unwrap()["help"]
        .clone();
    assert_eq!(help, "did you mean `networkConfig`?");
    // agent-config.yaml is decoded strictly too.
    let ac = write(
        tmp.path(),
        "agent-config.yaml",
        "apiVersion: v1beta1\nkind: AgentConfig\nmetadata: {name: c}\nrendezvousIp: 192.168.56.10\nhosts:\n- hostname: m0\n  interfaces: [{name: eno1, macAddress: '52:54:00:00:00:01', mtu: 9000}]\n",
    );
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&ac));
    let v = json(&o);
    let codes: Vec<(&str, u64)> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap(), d["line"].as_u64().unwrap()))
        .collect();
    assert!(codes.contains(&("field-case", 4)), "{codes:?}");
    assert!(codes.contains(&("unknown-field", 7)), "{codes:?}");
}

/// The agent installer takes an agent-config.yaml without hosts (every
/// machine that boots its ISO joins): check warns, render writes it.
/// A host with no MAC at all is left out of agent-config.yaml (the
/// installer refuses a host without interfaces), with a warning.
#[test]
fn agent_installs_without_hosts_or_macs_render() {
    let tmp = tempfile::tempdir().unwrap();
    let ic = write(
        tmp.path(),
        "install-config.yaml",
        "apiVersion: v1\nbaseDomain: example.com\nmetadata: {name: c}\nnetworking: {machineNetwork: [{cidr: 192.168.111.0/24}]}\ncontrolPlane: {name: master, replicas: 3}\ncompute: [{name: worker, replicas: 2}]\nplatform:\n  baremetal: {apiVIPs: [192.168.111.5], ingressVIPs: [192.168.111.4]}\npullSecret: '{}'\n",
    );
    let ac = write(
        tmp.path(),
        "agent-config.yaml",
        "apiVersion: v1beta1\nkind: AgentConfig\nmetadata: {name: c}\nrendezvousIP: 192.168.111.80\n",
    );
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(&ic)
        .arg(&ac));
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(json(&o)["diagnostics"][0]["code"], "no-hosts");
    let out = tmp.path().join("out");
    render(&[&ic, &ac], &out);
    let agent: Value =
        serde_yaml::from_str(&std::fs::read_to_string(out.join("agent-config.yaml")).unwrap())
            .unwrap();
    assert_eq!(agent["rendezvousIP"], "192.168.111.80");
    assert_eq!(agent["hosts"], serde_json::json!([]));
    let rendered: Value =
        serde_yaml::from_str(&std::fs::read_to_string(out.join("install-config.yaml")).unwrap())
            .unwrap();
    assert_eq!(rendered["controlPlane"]["replicas"], 3);
    assert_eq!(rendered["compute"][0]["replicas"], 2);
    // An inventory host without any MAC.
    let inv = write(
        tmp.path(),
        "dhcp.yaml",
        "nodenet: v1\ncluster: {name: c, baseDomain: example.com, machineNetworks: [192.168.111.0/24], apiVIPs: [192.168.111.5], ingressVIPs: [192.168.111.4], rendezvousIP: 192.168.111.80}\nhosts:\n- {name: master-0, role: master, nics: {eno1: '52:54:00:00:00:01'}}\n- {name: master-1, role: master}\n- {name: master-2, role: master, bootMACAddress: '52:54:00:00:00:03'}\n",
    );
    let out = tmp.path().join("dhcp");
    let stderr = render(&[&inv], &out);
    assert!(
        stderr.contains("`master-1` has no NIC with a MAC"),
        "{stderr}"
    );
    let agent: Value =
        serde_yaml::from_str(&std::fs::read_to_string(out.join("agent-config.yaml")).unwrap())
            .unwrap();
    assert_eq!(
        agent["hosts"],
        serde_json::json!([
            {"hostname": "master-0", "role": "master", "interfaces": [{"name": "eno1", "macAddress": "52:54:00:00:00:01"}]},
            {"hostname": "master-2", "role": "master", "interfaces": [{"name": "boot", "macAddress": "52:54:00:00:00:03"}]},
        ])
    );
}

/// The README's first command as a new user runs it: an empty directory,
/// an empty environment (no BMC password set).
#[test]
fn the_quick_start_renders_in_an_empty_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(std::process::Command::new(env!("CARGO_BIN_EXE_nodenet"))
        .arg("render")
        .current_dir(tmp.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", tmp.path()));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("credentials-unresolved"), "{stderr}");
    let secret = std::fs::read_to_string(tmp.path().join("out/scale-out/master-0.yaml")).unwrap();
    assert!(secret.contains("${BMC_PASSWORD}"), "{secret}");
}

/// dist/Containerfile builds offline (buildah, as the README says) into
/// an image that holds the stripped binary at /usr/bin/nodenet, which
/// runs; the Containerfile render puts in each MachineOSConfig, built on
/// a stand-in for the MCO's `configs` stage, takes that very binary into
/// the node image at the path the rendered unit runs; and the binary
/// needs no glibc newer than RHCOS 9's (2.34).
#[test]
fn the_agent_image_builds_offline_and_reaches_the_node_image() {
    if skip_without(&["buildah", "objdump", "strip"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let image = "quay.io/example/nodenet:0.1.0";
    let (root, bin) = agent_image(tmp.path(), image);
    let size = std::fs::metadata(&bin).unwrap().len();
    eprintln!("stripped nodenet: {:.1} MB", size as f64 / 1e6);
    // glibc: the newest symbol version the binary needs.
    let syms = ok(
        run(std::process::Command::new(tool("objdump"))
            .arg("-T")
            .arg(&bin)),
        "objdump",
    );
    let newest = String::from_utf8_lossy(&syms.stdout)
        .split_whitespace()
        .filter_map(|w| w.trim_matches(['(', ')']).strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let mut p = v.split('.').map(|n| n.parse::<u32>().unwrap_or(0));
            Some((p.next()?, p.next().unwrap_or(0)))
        })
        .max()
        .unwrap();
    assert!(
        newest <= (2, 34),
        "needs glibc {newest:?}: RHCOS 9 has 2.34"
    );
    let shipped = root.join("usr/bin/nodenet");
    assert_eq!(
        std::fs::read(&shipped).unwrap(),
        std::fs::read(&bin).unwrap()
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&shipped).unwrap().permissions().mode() & 0o111,
        0o111
    );
    let v = ok(
        run(std::process::Command::new(&shipped).arg("--version")),
        "the shipped binary",
    );
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("nodenet "));
    // The MCO's `configs` stage, stood in for: the node image's files.
    let base = tmp.path().join("base");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::write(base.join("os-release"), "ID=rhcos\n").unwrap();
    std::fs::write(
        base.join("Containerfile"),
        "FROM scratch\nCOPY os-release /etc/os-release\n",
    )
    .unwrap();
    ok(
        run(buildah(tmp.path())
            .args([
                "bud",
                "--isolation",
                "chroot",
                "--pull-never",
                "-t",
                "configs",
            ])
            .arg(&base)),
        "the configs stand-in",
    );
    // The containerFile of the rendered MachineOSConfig.
    let out = tmp.path().join("out");
    render(&[&repo().join("examples/lacp-vlan.yaml")], &out);
    let mosc = &docs(&out.join("openshift/machineosconfig-worker.yaml"))[0];
    let content = mosc["spec"]["containerFile"][0]["content"]
        .as_str()
        .unwrap();
    assert!(
        content.contains(&format!("FROM {image} AS nodenet")),
        "{content}"
    );
    let layered = tmp.path().join("layered");
    std::fs::create_dir_all(&layered).unwrap();
    std::fs::write(layered.join("Containerfile"), content).unwrap();
    ok(
        run(buildah(tmp.path())
            .args([
                "bud",
                "--isolation",
                "chroot",
                "--pull-never",
                "-t",
                "node-image",
            ])
            .arg(&layered)),
        "the MachineOSConfig's containerFile",
    );
    let layout = tmp.path().join("node-layout");
    ok(
        run(buildah(tmp.path())
            .arg("push")
            .arg("node-image")
            .arg(format!("oci:{}:node", layout.display()))),
        "buildah push",
    );
    let node = tmp.path().join("node");
    unpack(&layout, &node);
    assert_eq!(
        std::fs::read_to_string(node.join("etc/os-release")).unwrap(),
        "ID=rhcos\n"
    );
    assert_eq!(
        std::fs::read(node.join("usr/bin/nodenet")).unwrap(),
        std::fs::read(&bin).unwrap()
    );
    // Where the rendered unit runs it from.
    let unit = std::fs::read_to_string(out.join("openshift/10-nodenet-agent-worker.yaml")).unwrap();
    assert!(unit.contains("ExecStart=/usr/bin/nodenet service"));
}
