//! An OpenShift node's network, proven on RHCOS's own scripts
//! (`cargo test --release -p nodenet --test lab openshift::`): a lab VM booted with
//! systemd, NetworkManager with its OVS device plugin (rebuilt from
//! Debian's source, `.ci/install-lab.sh`), Open vSwitch and nmstatectl,
//! with the Machine Config Operator's own units and scripts installed
//! from ../shared/openshift-node as RHCOS has them (units enabled,
//! scripts at their paths, Go template lines left out), the files and
//! units of the MachineConfigs `nodenet render` writes, the day-1
//! keyfiles, and the `nodenet` binary taken from the image dist/
//! Containerfile builds. Its host name is an FQDN, as on many nodes;
//! RHCOS and nodenet pick files by `hostname -s`.
//!
//! Three boots against the lab's switch (an LACP bond, VLANs 110/120):
//! configure-ovs making br-ex (no br-ex in the intent), then a day-2
//! change through the node agent, and what the node then reports
//! (`nmstatectl show`, as its NodeNetworkState) held against the
//! inventory before and after a change by hand; br-ex derived by nodenet and applied by
//! nmstate.service; and an older render's state without br-ex under
//! /etc/nmstate/openshift, which leaves the node without br-ex.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cache;
use crate::common::layering::agent_image;
use crate::common::*;
use nodenet_lab::{LabError, Vm, VmSpec};
use serde_json::Value;

const FQDN: &str = "node.lab.example.com";

/// RHCOS's files and units from ../shared/openshift-node, as the MCO
/// writes them: (path or unit name, mode, text, is a unit and enabled).
fn rhcos_templates() -> Vec<(String, u32, String, bool)> {
    let dir = repo().join("../shared/openshift-node");
    assert!(
        dir.join("README.md").exists(),
        "{} is missing: this test runs RHCOS's own scripts from ../shared beside the checkout",
        dir.display()
    );
    let mut out = Vec::new();
    for f in files_under(&dir) {
        if f.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        // The Go template evaluated for an OVN-Kubernetes cluster without
        // a proxy; any other template line left out.
        let mut text = String::new();
        let mut proxy = false;
        for line in fs::read_to_string(&f).unwrap().lines() {
            if line.contains("{{if .Proxy") {
                proxy = true;
                continue;
            }
            if proxy {
                proxy = !line.contains("{{end");
                continue;
            }
            let line = line.replace(
                r#"{{if eq .NetworkType "OVNKubernetes"}}true{{else}}false{{end}}"#,
                "true",
            );
            if line.contains("{{") {
                continue;
            }
            text.push_str(&line);
            text.push('\n');
        }
        let doc: Value = serde_yaml::from_str(&text).unwrap();
        if let Some(path) = doc["path"].as_str() {
            // Go's YAML reads `0755` as octal.
            let mode = text
                .lines()
                .find_map(|l| l.strip_prefix("mode: "))
                .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
                .unwrap_or(0o644);
            out.push((
                path.to_string(),
                mode,
                doc["contents"]["inline"].as_str().unwrap().to_string(),
                false,
            ));
        } else {
            out.push((
                doc["name"].as_str().unwrap().to_string(),
                0o644,
                doc["contents"].as_str().unwrap().to_string(),
                doc["enabled"] == true,
            ));
        }
    }
    assert!(out.len() >= 6, "{out:?}");
    out
}

/// The files and units of a rendered MachineConfig, as the MCO writes
/// them on a node of its pool (contents gzip in `data:` URLs).
fn machine_config(mc: &Value) -> Vec<(String, u32, String, bool)> {
    use base64::Engine;
    use std::io::Read;
    let mut out = Vec::new();
    for f in mc["spec"]["config"]["storage"]["files"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let (_, data) = f["contents"]["source"]
            .as_str()
            .unwrap()
            .split_once(',')
            .unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
        out.push((
            f["path"].as_str().unwrap().to_string(),
            f["mode"].as_u64().unwrap() as u32,
            text,
            false,
        ));
    }
    for u in mc["spec"]["config"]["systemd"]["units"]
        .as_array()
        .into_iter()
        .flatten()
    {
        out.push((
            u["name"].as_str().unwrap().to_string(),
            0o644,
            u["contents"].as_str().unwrap().to_string(),
            u["enabled"] == true,
        ));
    }
    out
}

/// What `render` wrote for the worker pool: every MachineConfig's files
/// and units.
fn worker_machine_configs(out: &Path) -> Vec<(String, u32, String, bool)> {
    let mut all = Vec::new();
    for f in files_under(&out.join("openshift")) {
        let text = fs::read_to_string(&f).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let doc: Value = serde::Deserialize::deserialize(doc).unwrap();
            if doc["kind"] == "MachineConfig"
                && doc["metadata"]["labels"]["machineconfiguration.openshift.io/role"] == "worker"
            {
                all.extend(machine_config(&doc));
            }
        }
    }
    all
}

/// The node's config disk: a root tree copied over `/` before systemd
/// starts (files at their paths, units in /etc/systemd/system), the units
/// to enable, the day-1 keyfiles (as coreos-installer --copy-network
/// leaves them) and the binary from the agent image.
fn node_config(
    dir: &Path,
    name: &str,
    out: &Path,
    agent_root: &Path,
    extra: &[(String, u32, String, bool)],
) -> PathBuf {
    let cfg = dir.join(format!("{name}-cfg"));
    let root = cfg.join("root");
    let _ = fs::remove_dir_all(&cfg);
    let mut enable = Vec::new();
    let mut all = rhcos_templates();
    all.extend(worker_machine_configs(out));
    all.extend(extra.iter().cloned());
    for (path, mode, text, enabled) in all {
        let (target, is_unit) = if path.starts_with('/') {
            (root.join(path.trim_start_matches('/')), false)
        } else {
            (root.join("etc/systemd/system").join(&path), true)
        };
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(&target, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&target, fs::Permissions::from_mode(mode)).unwrap();
        if is_unit && enabled {
            enable.push(path);
        }
    }
    let keyfiles = root.join("etc/NetworkManager/system-connections");
    fs::create_dir_all(&keyfiles).unwrap();
    for f in files_under(&out.join("hosts/node/system-connections")) {
        fs::copy(&f, keyfiles.join(f.file_name().unwrap())).unwrap();
    }
    fs::create_dir_all(root.join("usr/bin")).unwrap();
    fs::copy(
        agent_root.join("usr/bin/nodenet"),
        root.join("usr/bin/nodenet"),
    )
    .unwrap();
    fs::write(
        cfg.join("setup.sh"),
        format!(
            "set -e\ncp -a /run/cfg/root/. /\nchmod 0600 /etc/NetworkManager/system-connections/*\nsystemctl --root=/ enable {} 2>&1\necho 'lab: setup done'\n",
            enable.join(" ")
        ),
    )
    .unwrap();
    cfg
}

fn must(vm: &mut Vm, cmd: &str, what: &str) -> String {
    let (st, out) = vm.run(cmd, Duration::from_secs(300)).unwrap();
    assert_eq!(st, 0, "{what}:\n{out}");
    out
}

/// Boots the node from `cfg` against the switch's cables; waits until
/// systemd is done starting it (every unit run, nodenet-apply.service
/// last) and prints how long that took. Under TCG a guest can hang while
/// it boots with the host busy (CI, stop 56: the shell silent for 300 s
/// before basic.target), as `lab up` knows: a guest that stops answering
/// is started again once (its disk is a snapshot, so from the same
/// state), its first console printed; silent again is the failure.
fn boot(
    img: &nodenet_lab::Image,
    dir: &Path,
    cfg: PathBuf,
    nics: Vec<nodenet_lab::Nic>,
    id: u8,
) -> Vm {
    let spec = VmSpec {
        name: FQDN.into(),
        role: "rhcos".into(),
        machine_id: format!("5a1e00000000000000000000000000{id:02x}"),
        nics,
        config: cfg,
        cdrom: None,
        config_drive: None,
    };
    match boot_once(img, dir, &spec) {
        Ok(node) => node,
        Err(hung @ LabError::Timeout(_)) => {
            eprintln!(
                "{FQDN}: the guest stopped answering while it booted; started again once ({hung})"
            );
            boot_once(img, dir, &spec)
                .unwrap_or_else(|e| panic!("{FQDN}: silent again after a second start: {e}"))
        }
        Err(e) => panic!("{FQDN}: {e}"),
    }
}

/// One boot of [`boot`]: the node once systemd is done, or the guest's
/// silence (a shell command unanswered for two minutes: a healthy guest
/// answers `systemctl is-system-running` in a second).
fn boot_once(img: &nodenet_lab::Image, dir: &Path, spec: &VmSpec) -> Result<Vm, LabError> {
    let started = Instant::now();
    let mut node = Vm::launch(img, spec, dir).unwrap();
    node.wait_ready(Duration::from_secs(300))?;
    let ask = |node: &mut Vm, cmd: &str| -> Result<String, LabError> {
        let (st, out) = node.run(cmd, Duration::from_secs(120))?;
        assert_eq!(st, 0, "{cmd}:\n{out}");
        Ok(out)
    };
    // Until every unit has run (running, or degraded with a failed one).
    let deadline = Instant::now() + Duration::from_secs(480);
    loop {
        let state = ask(&mut node, "systemctl is-system-running; true")?;
        if state.contains("running") || state.contains("degraded") {
            let failed = ask(&mut node, "systemctl --failed --no-legend --plain; true")?;
            eprintln!(
                "{FQDN}: systemd done in {:.1} s ({}){}",
                started.elapsed().as_secs_f64(),
                state.trim(),
                if failed.trim().is_empty() {
                    String::new()
                } else {
                    format!("; failed: {}", failed.trim())
                }
            );
            return Ok(node);
        }
        // configure-ovs.sh retries a failed run after 15 minutes: say why
        // it failed now.
        let retry = ask(
            &mut node,
            "journalctl -b -u ovs-configuration -o cat --no-pager | grep -c 'will retry after'; true",
        )?;
        if retry.trim().parse::<u32>().unwrap_or(0) > 0 {
            let why = must(
                &mut node,
                "journalctl -b -u ovs-configuration -o cat --no-pager | grep -B60 -m1 'ERROR: configure-ovs exited' | cut -c1-220",
                "why configure-ovs failed",
            );
            panic!("{FQDN}: configure-ovs.sh failed:\n{why}");
        }
        if Instant::now() >= deadline {
            let why = must(
                &mut node,
                "systemctl list-jobs --no-pager; journalctl -b --no-pager -o short-monotonic -u NetworkManager -u openvswitch-switch -u nmstate-configuration -u nmstate -u ovs-configuration -u nodenet-apply | tail -n 150",
                "why the boot did not end",
            );
            panic!(
                "{FQDN}: the boot did not end within 480 s ({}):\n{why}",
                state.trim()
            );
        }
        std::thread::sleep(Duration::from_secs(5));
    }
}

/// A unit's journal.
fn journal(node: &mut Vm, unit: &str) -> String {
    must(
        node,
        &format!("journalctl -b -u {unit} --no-pager -o cat | tail -n 400"),
        unit,
    )
}

/// br-ex holds the node's address, copies `port`'s MAC, has `port` as
/// its uplink in OVS, and the gateway answers through it.
fn assert_br_ex(node: &mut Vm, port: &str) {
    let out = must(
        node,
        &format!("ovs-vsctl list-ports br-ex; ip -4 -o addr show dev br-ex; cat /sys/class/net/br-ex/address /sys/class/net/{port}/address; ping -c 2 -W 3 192.168.110.1 >/dev/null && echo ping-ok"),
        "br-ex",
    );
    if !out.lines().any(|l| l.trim() == port) {
        let why = must(
            node,
            "ip -br link; ovs-vsctl show; nmcli -c no -f NAME,TYPE,DEVICE,ACTIVE connection; ls -l /run/NetworkManager/system-connections; head -n 20 /run/NetworkManager/system-connections/ovs-if-br-ex*; journalctl -b -o cat --no-pager -u NetworkManager | grep -i -E 'ovs|ovsdb|br-ex|error|warn' | tail -n 60; journalctl -b -o cat --no-pager -u nodenet-apply -u nmstate | tail -n 40",
            "the node's network",
        );
        panic!("{port} is not a port of br-ex:\n{out}\n{why}");
    }
    assert!(
        out.contains("192.168.110.10/24"),
        "br-ex lacks the node's address:\n{out}"
    );
    let macs: Vec<&str> = out
        .lines()
        .filter(|l| l.matches(':').count() == 5 && !l.contains(' '))
        .collect();
    assert!(
        macs.len() == 2 && macs[0] == macs[1],
        "br-ex does not copy {port}'s MAC:\n{out}"
    );
    assert!(out.contains("ping-ok"), "{out}");
}

/// The node agent's record.
fn status(node: &mut Vm) -> Value {
    let out = must(node, "cat /var/lib/nodenet/status.json", "status.json");
    serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap()
}

#[test]
fn rhcos_scripts_make_br_ex_from_what_render_writes() {
    if skip_without(&["buildah", "debootstrap", "qemu-system-x86_64", "strip"]) {
        return;
    }
    let _slot = crate::lab_slot();
    let img = nodenet_lab::rhcos_image(&cache()).expect("the lab's OpenShift node image");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (agent_root, _) = agent_image(&dir.join("agent"), "quay.io/example/nodenet:0.1.0");
    let inventory =
        fs::read_to_string(repo().join("crates/cli/tests/lab-data/openshift.yaml")).unwrap();
    let render = |name: &str, text: &str| -> PathBuf {
        let f = write(dir, &format!("{name}.yaml"), text);
        let out = dir.join(name);
        let o = run(nodenet().arg("render").arg(&f).arg("-o").arg(&out));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    // The switch: the seed topology's LACP bond with VLANs 110-130.
    let switch_cfg = dir.join("switch-cfg");
    fs::create_dir_all(&switch_cfg).unwrap();
    fs::write(switch_cfg.join("switch.sh"), nodenet_lab::SWITCH_LACP_VLANS).unwrap();
    let (node_nics, switch_nics) = nodenet_lab::cables(
        &["52:54:00:12:00:01", "52:54:00:12:00:02"],
        &["52:54:00:34:00:01", "52:54:00:34:00:02"],
    );
    let base = nodenet_lab::image(&cache()).unwrap();
    let mut switch = Vm::launch(
        &base,
        &VmSpec {
            name: "switch".into(),
            role: "switch".into(),
            machine_id: "5a1e000000000000000000000000ee02".into(),
            nics: switch_nics,
            config: switch_cfg,
            cdrom: None,
            config_drive: None,
        },
        dir,
    )
    .unwrap();
    switch.wait_ready(Duration::from_secs(180)).unwrap();

    // 1. br-ex by configure-ovs: the intent defines none, so nothing goes
    //    to /etc/nmstate/openshift; configure-ovs moves bond0.110 (the
    //    default route's) under br-ex. nodenet-apply.service runs after
    //    it with its day-2 state, which leaves bond0.110 alone.
    let out = render("configure-ovs", &inventory);
    let cfg = node_config(dir, "ovs", &out, &agent_root, &[]);
    let mut node = boot(&img, dir, cfg, node_nics.clone(), 0x31);
    assert!(must(&mut node, "hostname; hostname -s", "hostname").contains(&format!("{FQDN}\nnode")));
    let log = journal(&mut node, "nmstate-configuration.service");
    assert!(log.contains("No configuration found"), "{log}");
    let log = journal(&mut node, "ovs-configuration.service");
    assert!(!log.contains("Skipping configure-ovs"), "{log}");
    assert_br_ex(&mut node, "bond0.110");
    let st = status(&mut node);
    assert_eq!(st["last"]["outcome"], "applied", "{st}");
    assert_eq!(st["last"]["file"], "/etc/nodenet/nmstate/node.yml", "{st}");
    //    Day 2 through the MCO: VLAN 120 in the node's file, the unit
    //    restarted (the node disruption policy): applied, br-ex intact.
    let day2 = inventory.replace(
        "    dns-resolver:",
        "    - {name: bond0.120, type: vlan, state: up, vlan: {base-iface: bond0, id: 120}, ipv4: {enabled: true, address: [{ip: 192.168.120.10, prefix-length: 24}]}, ipv6: {enabled: false}}\n    dns-resolver:",
    );
    let out2 = render("configure-ovs-day2", &day2);
    let file = worker_machine_configs(&out2)
        .into_iter()
        .find(|(p, ..)| p == "/etc/nodenet/nmstate/node.yml")
        .unwrap();
    let started = Instant::now();
    let out = must(
        &mut node,
        &format!(
            "cat > /etc/nodenet/nmstate/node.yml.mco <<'EOF'\n{}EOF\nmv /etc/nodenet/nmstate/node.yml.mco /etc/nodenet/nmstate/node.yml && systemctl restart nodenet-apply.service && ping -c 2 -W 3 192.168.120.1 && echo day2-ok",
            file.2
        ),
        "day 2 through nodenet-apply.service",
    );
    assert!(out.contains("day2-ok"), "{out}");
    eprintln!(
        "day 2 (VLAN 120) through the unit: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(status(&mut node)["last"]["outcome"], "applied");
    assert_br_ex(&mut node, "bond0.110");
    //    What the node runs, as kubernetes-nmstate reports it (a
    //    NodeNetworkState's currentState is `nmstatectl show`), against
    //    the day-2 inventory: as it says (br-ex and its port are
    //    configure-ovs's). Then VLAN 120's address changed by hand on
    //    the node: that node drifted.
    let day2_file = dir.join("configure-ovs-day2.yaml");
    let running = |node: &mut Vm| {
        let show = must(
            node,
            "nmstatectl show --json 2>/dev/null",
            "nmstatectl show",
        );
        let json = &show[show.find('{').unwrap()..=show.rfind('}').unwrap()];
        let current: Value = serde_json::from_str(json).unwrap();
        let nns = serde_json::json!({
            "apiVersion": "nmstate.io/v1beta1",
            "kind": "NodeNetworkState",
            "metadata": {"name": "node"},
            "status": {"currentState": current},
        });
        let f = write(dir, "nns.json", serde_json::to_vec_pretty(&nns).unwrap());
        run(nodenet()
            .arg("plan")
            .arg(&day2_file)
            .arg(&day2_file)
            .arg("--running")
            .arg(&f))
    };
    let o = running(&mut node);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(
        said.contains("0 node(s) drifted") && said.contains("1 as it says"),
        "{said}"
    );
    must(
        &mut node,
        "nmcli connection modify bond0.120 ipv4.addresses 192.168.120.11/24 && nmcli connection up bond0.120",
        "VLAN 120's address changed by hand",
    );
    let o = running(&mut node);
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(said.contains("! node (node node) runs otherwise"), "{said}");
    assert!(
        said.contains("~ bond0.120 (vlan)") && said.contains("ipv4.address"),
        "{said}"
    );
    drop(node);

    // 2. br-ex derived by nodenet: /etc/nmstate/openshift/node.yml,
    //    applied by nmstate-configuration + nmstate.service; configure-ovs
    //    skips; nodenet's day-2 state keeps OVN-Kubernetes' masquerade
    //    address on br-ex.
    let out = render(
        "derive",
        &inventory.replace("  nodeAgent:", "  brEx: derive\n  nodeAgent:"),
    );
    let cfg = node_config(dir, "derive", &out, &agent_root, &[]);
    let mut node = boot(&img, dir, cfg, node_nics.clone(), 0x32);
    let log = journal(&mut node, "ovs-configuration.service");
    assert!(
        log.contains("Skipping configure-ovs due to manual network configuration"),
        "{log}"
    );
    must(
        &mut node,
        "cmp /etc/nmstate/openshift/node.yml /etc/nmstate/openshift/applied",
        "recorded as applied",
    );
    assert_br_ex(&mut node, "bond0.110");
    let st = status(&mut node);
    assert_eq!(st["last"]["outcome"], "applied", "{st}");
    let out = must(&mut node, "ip -4 -o addr show dev br-ex", "masquerade");
    assert!(out.contains("169.254.0.2/17"), "{out}");
    drop(node);

    // 3. An older render: the intent, without br-ex, under
    //    /etc/nmstate/openshift. `check` refuses it before deploy; on the
    //    node configure-ovs skips and there is no br-ex at all.
    let state = fs::read_to_string(dir.join("configure-ovs/hosts/node/nmstate.yml")).unwrap();
    let old = vec![(
        "/etc/nmstate/openshift/node.yml".to_string(),
        0o644,
        state.clone(),
        false,
    )];
    let mc = write(
        dir,
        "old-mc.yaml",
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata: {{name: 10-old-worker, labels: {{machineconfiguration.openshift.io/role: worker}}}}\nspec:\n  config:\n    ignition: {{version: 3.2.0}}\n    storage:\n      files:\n      - path: /etc/nmstate/openshift/node.yml\n        mode: 420\n        contents: {{source: 'data:;base64,{}'}}\n",
            {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.encode(&state)
            }
        ),
    );
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&mc));
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json(&o)["diagnostics"][0]["code"], "br-ex-missing");
    let out = dir.join("configure-ovs");
    let cfg = node_config(dir, "old", &out, &agent_root, &old);
    let mut node = boot(&img, dir, cfg, node_nics, 0x33);
    let log = journal(&mut node, "ovs-configuration.service");
    assert!(
        log.contains("Skipping configure-ovs due to manual network configuration"),
        "{log}"
    );
    let out = must(
        &mut node,
        "ovs-vsctl br-exists br-ex; echo \"br-exists $?\"; ip link show br-ex 2>&1 | head -1",
        "no br-ex",
    );
    assert!(out.contains("br-exists 2"), "br-ex exists:\n{out}");
    assert!(out.contains("does not exist"), "{out}");
    drop(switch);
}
