//! `nodenet plan OLD NEW` driven as a user runs it: exit codes, the human
//! and JSON reports, `-o`, and OLD given as a render's output directory.

use crate::common;

use std::fs;
use std::path::Path;

use crate::common::*;

/// The workers-100 example with `edit` applied to its text.
fn version(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> std::path::PathBuf {
    let text = fs::read_to_string(repo().join("examples/workers-100.yaml")).unwrap();
    let p = dir.join(name);
    fs::write(&p, edit(text)).unwrap();
    p
}

/// `nodenet plan OLD NEW` with `extra` arguments after them.
fn plan(old: &Path, new: &Path, extra: &[&str]) -> std::process::Output {
    run(nodenet().arg("plan").arg(old).arg(new).args(extra))
}

#[test]
fn nothing_changes_exit_0() {
    let tmp = tempfile::tempdir().unwrap();
    let old = version(tmp.path(), "old.yaml", |t| t);
    let o = run(nodenet().arg("plan").arg(&old).arg(&old));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(nodenet()
        .args(["plan", "--format", "json"])
        .arg(&old)
        .arg(&old));
    let j = json(&o);
    assert_eq!(j["changes"].as_array().unwrap().len(), 0, "{j}");
    assert_eq!(j["unchanged"], j["hosts"], "{j}");
}

#[test]
fn an_mtu_change_on_the_uplink_is_disruptive_on_every_host() {
    let tmp = tempfile::tempdir().unwrap();
    let old = version(tmp.path(), "old.yaml", |t| t);
    assert!(fs::read_to_string(&old).unwrap().contains("mtu: 9000"));
    let new = version(tmp.path(), "new.yaml", |t| {
        t.replace("mtu: 9000", "mtu: 8000")
    });
    let out = tmp.path().join("plan");
    let o = run(nodenet()
        .arg("plan")
        .arg(&old)
        .arg(&new)
        .arg("-o")
        .arg(&out));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("mtu: 9000 -> 8000"), "{stdout}");
    assert!(stdout.contains("disruptive"), "{stdout}");
    assert!(stdout.contains("machine network"), "{stdout}");
    let o = run(nodenet()
        .args(["plan", "--format", "json"])
        .arg(&old)
        .arg(&new));
    let j = json(&o);
    let changes = j["changes"].as_array().unwrap();
    assert_eq!(changes.len() as u64, j["hosts"].as_u64().unwrap(), "{j}");
    assert!(changes
        .iter()
        .all(|c| c["risk"] == "disruptive" && c["change"] == "modified"));
    // -o: the MachineConfigs that change, the MachineConfiguration, and
    // the disruptive policies one node at a time.
    for f in [
        "openshift/machineconfiguration-cluster.yaml",
        "openshift/10-nodenet-nmstate-worker.yaml",
        "openshift/10-nodenet-nmstate-master.yaml",
        "nncp/disruptive-worker.yaml",
    ] {
        assert!(
            out.join(f).exists(),
            "{f} not written: {:?}",
            files_by_name(&out).keys()
        );
    }
    // Planning the same versions again replaces the directory; another
    // plan into it needs --force.
    let out_arg = out.to_str().unwrap();
    for (a, b, force, code) in [
        (&old, &new, false, 1),
        (&new, &old, false, 2),
        (&new, &old, true, 1),
        (&old, &new, true, 1),
    ] {
        let mut extra = vec!["-o", out_arg];
        if force {
            extra.push("--force");
        }
        let o = plan(a, b, &extra);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let policy = fs::read_to_string(out.join("nncp/disruptive-worker.yaml")).unwrap();
    assert!(policy.contains("maxUnavailable: 1"), "{policy}");
    assert!(policy.contains("mtu: 8000"), "{policy}");
    // Only the change: no address of any host.
    assert!(!policy.contains("prefix-length"), "{policy}");
}

/// A VLAN beside the machine network's on the workers' bond shares its
/// ports: modifying, not additive.
#[test]
fn a_new_vlan_on_the_uplink_bond_is_modifying_and_old_may_be_a_render() {
    let tmp = tempfile::tempdir().unwrap();
    let old = version(tmp.path(), "old.yaml", |t| t);
    let rendered = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&old).arg("-o").arg(&rendered));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A storage VLAN on the workers' bond, nothing else.
    let new = version(tmp.path(), "new.yaml", |t| {
        let anchor = "      - name: bond0\n";
        assert!(t.contains(anchor), "the example changed");
        t.replacen(
            anchor,
            "      - {name: bond0.300, type: vlan, state: up, vlan: {base-iface: bond0, id: 300}, ipv4: {enabled: false}, ipv6: {enabled: false}}\n      - name: bond0\n",
            1,
        )
    });
    for old in [&old, &rendered] {
        let o = run(nodenet()
            .args(["plan", "--format", "json"])
            .arg(old)
            .arg(&new));
        assert_eq!(o.status.code(), Some(1));
        let j = json(&o);
        let changes = j["changes"].as_array().unwrap();
        assert!(!changes.is_empty(), "{j}");
        for c in changes {
            assert_eq!(
                c["risk"],
                "modifying",
                "{} from {}: {c}",
                c["host"],
                old.display()
            );
        }
    }
    // Unchanged from the render of the same version.
    let o = run(nodenet().arg("plan").arg(&rendered).arg(&old));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn usage_errors_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let old = version(tmp.path(), "old.yaml", |t| t);
    let o = run(nodenet()
        .arg("plan")
        .arg(&old)
        .arg(tmp.path().join("nope.yaml")));
    assert_eq!(o.status.code(), Some(2));
    // A new version with errors plans nothing.
    let bad = version(tmp.path(), "bad.yaml", |t| {
        t.replace("mtu: 9000", "mtu: -1")
    });
    let o = run(nodenet().arg("plan").arg(&old).arg(&bad));
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing planned"));
    // JSON mode: one object on stdout even then.
    let o = run(nodenet()
        .args(["plan", "--format", "json"])
        .arg(&old)
        .arg(tmp.path().join("nope.yaml")));
    assert_eq!(o.status.code(), Some(2));
    let j = json(&o);
    assert!(j.is_object(), "{j}");
}

#[test]
fn cluster_changes_are_plan_entries_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let old = version(tmp.path(), "old.yaml", |t| t);
    let new = version(tmp.path(), "new.yaml", |t| {
        t.replace("apiVIPs: [10.20.0.5]", "apiVIPs: [10.20.0.6]")
            .replace(
                "machineNetworks: [10.20.0.0/16]",
                "machineNetworks: [10.20.0.0/15]",
            )
            // The PXE NIC is in the LACP bond: the switch does LACP fallback.
            .replace(
                "network: Disabled",
                "network: Managed\n    cidr: 172.22.0.0/24\n    allowLacp: true",
            )
    });
    // Old as written and old as rendered: the same verdict (a render's
    // install-config holds nodenet's defaults, which are no change).
    let rendered = tmp.path().join("out");
    run(nodenet().arg("render").arg(&old).arg("-o").arg(&rendered));
    for before in [&old, &rendered] {
        let o = plan(before, &new, &["--format", "json"]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let j = json(&o);
        let fields: Vec<(&str, &str)> = j["cluster"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["field"].as_str().unwrap(), c["risk"].as_str().unwrap()))
            .collect();
        assert_eq!(
            fields,
            vec![
                ("machineNetworks", "disruptive"),
                ("apiVIPs", "disruptive"),
                ("provisioning.network", "disruptive"),
                ("provisioning.cidr", "modifying"),
            ],
            "{before:?}: {j}"
        );
        assert_eq!(j["changes"].as_array().unwrap().len(), 0, "{j}");
    }
    let o = plan(&old, &new, &[]);
    assert_eq!(o.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("~ cluster apiVIPs: 10.20.0.5 -> 10.20.0.6 (disruptive)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("~ cluster provisioning.network: Disabled -> Managed (disruptive)"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("4 cluster field(s) changed"), "{stderr}");
    // Nothing changed: exit 0, also with a render as OLD.
    let o = plan(&rendered, &old, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// `plan --measured`: what `lab rehearse` wrote (its rehearse.json, as it
/// writes it) shown beside each risk class; a file that is no rehearsal is
/// a usage error.
#[test]
fn measured_disruption_is_shown_beside_each_risk_class() {
    let tmp = tempfile::tempdir().unwrap();
    let data = repo().join("crates/cli/tests/lab-data");
    let rehearsal = r#"{"old":"rehearsal.yaml","new":"rehearsal-day2.yaml","switch_changes":[],"hosts":[
        {"host":"master-0","order":1,"risk":"disruptive","outcome":"committed","detail":"",
         "loss":[{"address":"192.168.110.131","interface":"bond0.110","sent":1078,"lost":0,"ms":0}],"converged":true},
        {"host":"master-1","order":2,"risk":"disruptive","outcome":"rolled-back","detail":"probe `gateway` failed",
         "loss":[{"address":"192.168.110.209","interface":"bond0.110","sent":1929,"lost":1179,"ms":23580}],"converged":false}],
        "notes":[]}"#;
    let measured = common::write(tmp.path(), "rehearse.json", rehearsal);
    let o = run(nodenet()
        .arg("plan")
        .arg(data.join("rehearsal.yaml"))
        .arg(data.join("rehearsal-day2.yaml"))
        .arg("--measured")
        .arg(&measured));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("measured in the lab (lab rehearse):\n  disruptive: master-0 committed, 0 ms lost; master-1 rolled-back, 23580 ms lost, not as intended after\n"),
        "{out}"
    );
    let o = run(nodenet()
        .arg("plan")
        .arg(data.join("rehearsal.yaml"))
        .arg(data.join("rehearsal-day2.yaml"))
        .args(["--format", "json", "--measured"])
        .arg(&measured));
    let v = json(&o);
    assert_eq!(v["measured"][1]["lost_ms"], 23580, "{v}");
    let bad = common::write(tmp.path(), "not.json", "{}");
    let o = run(nodenet()
        .arg("plan")
        .arg(data.join("rehearsal.yaml"))
        .arg(data.join("rehearsal-day2.yaml"))
        .arg("--measured")
        .arg(&bad));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a rehearsal"));
}

/// The built-in example (examples/lacp-vlan.yaml) with `edit` applied.
fn lacp_vlan(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> std::path::PathBuf {
    let text = fs::read_to_string(repo().join("examples/lacp-vlan.yaml")).unwrap();
    let p = dir.join(name);
    fs::write(&p, edit(text)).unwrap();
    p
}

/// Removing bond options is a change: running nodes keep them (nmstate
/// keeps what a state leaves out) while new nodes get the defaults, so
/// the plan says both and its policy sets the defaults. bond0 is beneath
/// bond0.110, the machine network's DHCP VLAN that configure-ovs moves
/// under br-ex: disruptive, never "no cluster traffic". The three masters
/// go one at a time, each its own step; every ROLLOUT.md command parses
/// and names what the plan wrote.
#[test]
fn removed_bond_options_on_the_machine_network_bond_roll_out_one_master_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let options = "          options:\n            miimon: \"1\"\n";
    let with = |t: String| {
        t.replace(
            options,
            "          options:\n            miimon: \"1\"\n            lacp_rate: fast\n            xmit_hash_policy: layer3+4\n",
        )
    };
    let old = lacp_vlan(tmp.path(), "old.yaml", with);
    let new = lacp_vlan(tmp.path(), "new.yaml", |t| t);
    assert!(fs::read_to_string(&new).unwrap().contains(options));
    let out = tmp.path().join("plan");
    let o = plan(&old, &new, &["-o", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("link-aggregation.options.lacp_rate: fast -> (unset: slow)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "running nodes keep `fast`, nodes provisioned from this inventory get `slow`"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("carries no cluster traffic"), "{stdout}");
    assert!(stdout.contains("beneath `bond0.110`"), "{stdout}");
    // The policies set the defaults, one master at a time.
    let j = json(&plan(&old, &new, &["--format", "json"]));
    let policies = j["rollout"]["policies"].as_array().unwrap();
    let masters: Vec<&serde_json::Value> = policies
        .iter()
        .filter(|p| {
            p["selector"]
                .get("node-role.kubernetes.io/master")
                .is_some()
        })
        .collect();
    assert!(!masters.is_empty(), "{j}");
    for p in &masters {
        assert_eq!(p["maxUnavailable"], 1, "{p}");
    }
    let mut files: Vec<&str> = masters
        .iter()
        .map(|p| p["file"].as_str().unwrap())
        .collect();
    files.sort();
    files.dedup();
    assert_eq!(
        files.len(),
        masters.len(),
        "a master policy shares a file: {files:?}"
    );
    let written = fs::read_to_string(out.join(files[0])).unwrap();
    assert!(written.contains("lacp_rate: slow"), "{written}");
    assert!(written.contains("xmit_hash_policy: layer2"), "{written}");
    // The MCO's pools one at a time, the masters last.
    let pools = rollout_commands_are_whole(&out, policies);
    assert_eq!(pools, ["mcp/worker", "mcp/master"]);
    // Through kubernetes-nmstate too, the workers' policy first.
    let steps = fs::read_to_string(out.join("ROLLOUT.md")).unwrap();
    let at = |f: &str| steps.find(f).unwrap_or_else(|| panic!("{f}: {steps}"));
    assert!(
        at("-f nncp/disruptive-worker.yaml") < at("-f nncp/disruptive-master.yaml"),
        "{steps}"
    );
}

/// The `nodenet.io/plan` label of the (first) policy in a written file.
fn written_label(out: &Path, file: &str) -> String {
    let doc: serde_yaml::Value = serde_yaml::from_str(
        fs::read_to_string(out.join(file))
            .unwrap()
            .split("---\n")
            .next()
            .unwrap(),
    )
    .unwrap();
    doc["metadata"]["labels"]["nodenet.io/plan"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Every command of ROLLOUT.md's `sh` blocks parses (`bash -n`), names a
/// file the plan wrote (`oc apply -f`) and waits on policies the plan
/// wrote (`oc wait nncp/…`), each policy exactly once; returns the
/// MachineConfigPools waited on, in order.
fn rollout_commands_are_whole(out: &Path, policies: &[serde_json::Value]) -> Vec<String> {
    let text = fs::read_to_string(out.join("ROLLOUT.md")).unwrap();
    assert!(!text.contains('…'), "{text}");
    let mut script = String::new();
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        match (inside, line) {
            (false, "```sh") => inside = true,
            (true, "```") => inside = false,
            (true, l) => script.push_str(&format!("{l}\n")),
            _ => {}
        }
    }
    let sh = out.join("rollout.sh");
    fs::write(&sh, &script).unwrap();
    let o = run(std::process::Command::new("bash").arg("-n").arg(&sh));
    assert!(
        o.status.success(),
        "{script}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut waited = Vec::new();
    let mut pools = Vec::new();
    for line in script.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["oc", "apply", rest @ ..] => {
                let files: Vec<&str> = rest
                    .windows(2)
                    .filter(|w| w[0] == "-f")
                    .map(|w| w[1])
                    .collect();
                assert!(!files.is_empty(), "{line}");
                for path in files {
                    assert!(out.join(path).exists(), "{line}: {path} not written");
                }
            }
            ["oc", "wait", pool, "--for", "condition=Updated", "--timeout=-1s"]
                if pool.starts_with("mcp/") =>
            {
                pools.push(pool.to_string());
            }
            ["oc", "wait", rest @ ..] => {
                waited.extend(rest.iter().filter_map(|w| w.strip_prefix("nncp/")));
            }
            // Last: earlier plans' policies, by label, never this one's.
            ["oc", "delete", "nncp", "-l", selector] => {
                let label: Vec<String> = policies
                    .iter()
                    .map(|p| written_label(out, p["file"].as_str().unwrap()))
                    .collect();
                assert!(label.windows(2).all(|w| w[0] == w[1]), "{label:?}");
                assert_eq!(
                    *selector,
                    format!("'nodenet.io/plan,nodenet.io/plan!={}'", label[0]),
                    "{line}"
                );
            }
            _ => panic!("an unexpected command: {line}"),
        }
    }
    let mut names: Vec<&str> = policies
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    names.sort();
    waited.sort();
    assert_eq!(waited, names, "{script}");
    pools
}

/// `oc get nns -o yaml` of the example's masters, made from what render
/// wrote for them (hosts/<h>/nmstate.yml) with what a node reports
/// beside it: its loopback, MACs, DHCP's address and routes, the name
/// servers it runs. `miimon` is bond0's on master-1 (changed by hand).
fn node_network_states(rendered: &Path, miimon: u32) -> String {
    let mut items = String::new();
    for (i, host) in ["master-0", "master-1", "master-2"].iter().enumerate() {
        let state: serde_yaml::Value = serde_yaml::from_str(
            &fs::read_to_string(rendered.join(format!("hosts/{host}/nmstate.yml"))).unwrap(),
        )
        .unwrap();
        let mut ifaces = state["interfaces"].as_sequence().unwrap().clone();
        for iface in ifaces.iter_mut() {
            let m = iface.as_mapping_mut().unwrap();
            m.insert("mac-address".into(), format!("52:54:00:10:0{i}:01").into());
            if m["name"] == "bond0" && *host == "master-1" {
                m["link-aggregation"]["options"]["miimon"] = miimon.into();
            }
            if m["name"] == "bond0.110" {
                let ip = serde_yaml::from_str(&format!(
                    "{{enabled: true, dhcp: true, auto-dns: true, address: [{{ip: 192.168.110.1{i}, prefix-length: 24}}]}}"
                ))
                .unwrap();
                m.insert("ipv4".into(), ip);
            }
        }
        ifaces.push(
            serde_yaml::from_str("{name: lo, type: loopback, state: up, mtu: 65536}").unwrap(),
        );
        let current = serde_yaml::to_string(&serde_yaml::Value::Sequence(ifaces)).unwrap();
        let indented: String = current.lines().map(|l| format!("      {l}\n")).collect();
        items.push_str(&format!(
            "- apiVersion: nmstate.io/v1beta1
  kind: NodeNetworkState
  metadata:
    name: {host}
  status:
    currentState:
      dns-resolver:
        config: {{search: [], server: []}}
        running: {{search: [lacp.example.com], server: [192.168.110.1]}}
      routes:
        config: []
        running:
        - {{destination: 0.0.0.0/0, next-hop-address: 192.168.110.1, next-hop-interface: bond0.110}}
      interfaces:
{indented}"
        ));
    }
    format!("apiVersion: v1\nkind: List\nitems:\n{items}")
}

/// `plan OLD NEW --running NNS`: a node changed by hand is said apart
/// from what NEW changes (and is a difference: exit 1); a node OLD lacks
/// and an export cut short are located errors, nothing planned (exit 2).
#[test]
fn node_network_states_show_drift_apart_from_the_change() {
    let tmp = tempfile::tempdir().unwrap();
    let inventory = repo().join("examples/lacp-vlan.yaml");
    let rendered = tmp.path().join("out");
    let o = run(nodenet()
        .arg("render")
        .arg(&inventory)
        .arg("-o")
        .arg(&rendered)
        .arg("-q"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let nns = tmp.path().join("nns.yaml");
    let running = ["--running", nns.to_str().unwrap()];
    // As described: nothing to do.
    fs::write(&nns, node_network_states(&rendered, 1)).unwrap();
    let o = plan(&inventory, &inventory, &running);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stderr}{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(stderr.contains("0 node(s) drifted"), "{stderr}");
    assert!(
        stderr.contains("3 as it says, 1 host(s) not reported"),
        "{stderr}"
    );
    // master-1's bond at miimon 100 by hand.
    fs::write(&nns, node_network_states(&rendered, 100)).unwrap();
    let o = plan(&inventory, &inventory, &running);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("! master-1 (node master-1) runs otherwise"),
        "{stdout}"
    );
    assert!(
        stdout.contains("~ bond0 (bond)\n        link-aggregation.options.miimon: 100 -> 1"),
        "{stdout}"
    );
    assert!(!stdout.contains("master-0 (node"), "{stdout}");
    let j = json(&plan(
        &inventory,
        &inventory,
        &["--format", "json", "--running", nns.to_str().unwrap()],
    ));
    assert_eq!(j["drift"]["drifted"][0]["host"], "master-1", "{j}");
    assert_eq!(j["changes"].as_array().unwrap().len(), 0, "{j}");
    // `diff` takes a node's reported state as ACTUAL too.
    let diff = |host: &str| {
        run(nodenet()
            .arg("diff")
            .arg(rendered.join(format!("hosts/{host}/nmstate.yml")))
            .arg(&nns)
            .args(["--host", host]))
    };
    assert_eq!(diff("master-0").status.code(), Some(0));
    let o = diff("master-1");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("link-aggregation.options.miimon: 100 -> 1"),
        "{stdout}"
    );
    // A node the inventory lacks: at its name's line.
    let text = node_network_states(&rendered, 1).replace("name: master-2", "name: master-9");
    fs::write(&nns, &text).unwrap();
    let line = text.lines().position(|l| l.contains("master-9")).unwrap() + 1;
    let o = plan(&inventory, &inventory, &running);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("node-unknown"), "{stderr}");
    assert!(stderr.contains(&format!("nns.yaml:{line}:")), "{stderr}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // Cut short in the middle of a state.
    let cut = &text[..text.find("routes:").unwrap() + 3];
    fs::write(&nns, cut).unwrap();
    let o = plan(&inventory, &inventory, &running);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stdout.is_empty());
}

/// A host added to a cluster the agent installer made is written as
/// `oc adm node-image create` takes it (nodes-config.yaml: its MAC map,
/// role and networkConfig), which reads back as that host; a cluster the
/// installer provisioned gets none (its hosts join by BareMetalHost).
#[test]
fn a_host_added_to_an_agent_cluster_is_written_to_nodes_config() {
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    for d in [&old, &new] {
        fs::create_dir(d).unwrap();
        for f in ["install-config.yaml", "agent-config.yaml"] {
            fs::copy(
                repo().join("tests/cluster-inputs/agent-v1beta1").join(f),
                d.join(f),
            )
            .unwrap();
        }
    }
    let agent = fs::read_to_string(new.join("agent-config.yaml")).unwrap();
    let worker = &agent[agent.find("- hostname: worker-1").unwrap()..];
    let added = worker
        .replace("worker-1", "worker-2")
        .replace("52:54:00:aa:04:", "52:54:00:aa:05:")
        .replace("192.168.111.31", "192.168.111.32")
        .replace("192.168.120.31", "192.168.120.32");
    fs::write(
        new.join("agent-config.yaml"),
        format!("{}\n{added}", agent.trim_end()),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let o = plan(&old, &new, &["-o", out.to_str().unwrap()]);
    // A plan with changes exits 1.
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let written = fs::read_to_string(out.join("nodes-config.yaml")).unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&written).unwrap();
    let hosts = doc["hosts"].as_sequence().unwrap();
    assert_eq!(hosts.len(), 1, "{written}");
    assert_eq!(hosts[0]["hostname"], "worker-2");
    assert_eq!(hosts[0]["role"], "worker");
    assert_eq!(hosts[0]["interfaces"][0]["macAddress"], "52:54:00:aa:05:00");
    // Its state is the one the new agent-config gives it.
    let addresses = |state: &serde_yaml::Value| -> Vec<String> {
        let mut v: Vec<String> = state["interfaces"]
            .as_sequence()
            .unwrap()
            .iter()
            .flat_map(|i| {
                i["ipv4"]["address"]
                    .as_sequence()
                    .cloned()
                    .unwrap_or_default()
            })
            .map(|a| a["ip"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        addresses(&hosts[0]["networkConfig"]),
        vec!["192.168.111.32", "192.168.120.32"]
    );
    // nodenet reads it back: one worker, clean.
    let (code, found) = {
        let o = run(nodenet()
            .args(["check", "--format", "json"])
            .arg(out.join("nodes-config.yaml")));
        (o.status.code(), json(&o))
    };
    assert_eq!(code, Some(0), "{found}");
    assert_eq!(found["diagnostics"].as_array().unwrap().len(), 0, "{found}");
    // An installer-provisioned cluster's added host: no nodes-config.yaml.
    let ipi_old = version(tmp.path(), "ipi-old.yaml", |t| t);
    let ipi_new = version(tmp.path(), "ipi-new.yaml", |t| {
        t.replace("count: 100", "count: 101")
    });
    let ipi_out = tmp.path().join("ipi-out");
    let o = plan(&ipi_old, &ipi_new, &["-o", ipi_out.to_str().unwrap()]);
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!ipi_out.join("nodes-config.yaml").exists());
}
