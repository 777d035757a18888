//! The CLI contract: exit codes, JSON shape, atomic output, secrets, and
//! every accepted input format.

use crate::common;

use std::fs;
use std::process::Command;

use crate::common::*;

#[test]
fn missing_file_is_a_usage_error_and_bad_flag_too() {
    let o = run(nodenet().args(["check", "/nonexistent/cluster.yaml"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/cluster.yaml"));
    let o = run(nodenet().args(["check", "--bogus", "x"]));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn json_diagnostics_point_at_the_wrong_node() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "host.yml",
        "interfaces:\n- name: eth0\n  type: ethernet\n  state: up\n- name: eth0.5000\n  type: vlan\n  state: up\n  vlan:\n    base-iface: eth0\n    id: 5000\n",
    );
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&f));
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let d = &v["diagnostics"][0];
    assert_eq!(d["severity"], "error");
    assert_eq!(d["code"], "vlan-id-range");
    assert_eq!(d["line"], 10);
    assert_eq!(d["column"], 9);
    assert_eq!(d["host"], "host");
    assert_eq!(d["file"], f.to_str().unwrap());
}

#[test]
fn human_output_has_location_snippet_code_and_help() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "host.yml",
        "interfaces:\n- name: bond0\n  type: bond\n  state: up\n  link-aggregation:\n    mode: active-backup\n    options:\n      lacp_rate: fast\n    port: [eth0, eth1]\n- {name: eth0, type: ethernet}\n- {name: eth1, type: ethernet}\n",
    );
    let o = run(nodenet().arg("check").arg(&f));
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("host.yml:8:7"), "{err}");
    assert!(err.contains("bond-option-mode"), "{err}");
    assert!(err.contains("lacp_rate: fast"), "snippet: {err}");
    assert!(err.contains("only valid for 802.3ad"), "help: {err}");
}

#[test]
fn all_problems_are_reported_in_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "host.yml",
        "interfaces:\n- name: eth0\n  type: ethernet\n  ipv4:\n    enabled: true\n    address:\n    - ip: 10.0.0.300\n      prefix-length: 24\n    - ip: 10.0.0.1\n      prefix-length: 33\n- name: v\n  type: vlan\n  vlan: {base-iface: nope, id: 0}\n",
    );
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&f));
    let codes: Vec<String> = json(&o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect();
    for c in [
        "ip-invalid",
        "ip-prefix-range",
        "vlan-base-missing",
        "vlan-id-range",
    ] {
        assert!(codes.iter().any(|x| x == c), "{c} missing from {codes:?}");
    }
}

#[test]
fn failed_render_writes_nothing_and_keeps_previous_output() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let good = repo().join("examples/lacp-vlan.yaml");
    assert!(run(nodenet().arg("render").arg(&good).arg("-o").arg(&out))
        .status
        .success());
    let before = fs::read(out.join("manifest.json")).unwrap();
    let bad = write(
        tmp.path(),
        "bad.yaml",
        fs::read_to_string(&good)
            .unwrap()
            .replace("id: 110", "id: 4095"),
    );
    let o = run(nodenet().arg("render").arg(&bad).arg("-o").arg(&out));
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(fs::read(out.join("manifest.json")).unwrap(), before);
    // No temporary directory left behind.
    let names: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.contains("nodenet-")), "{names:?}");
}

#[test]
fn render_refuses_to_replace_a_foreign_directory() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
    let o = run(nodenet()
        .arg("render")
        .arg(repo().join("examples/lacp-vlan.yaml"))
        .arg("-o")
        .arg(tmp.path()));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        fs::read_to_string(tmp.path().join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn render_without_file_uses_the_builtin_example() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(nodenet().arg("render").current_dir(tmp.path()));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(tmp
        .path()
        .join("out/hosts/master-0/system-connections/bond0.110.nmconnection")
        .is_file());
    // Said first, and in the verdict: it is the example, not yours.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.lines()
            .next()
            .unwrap()
            .starts_with("note: no inventory given: rendering nodenet's built-in example"),
        "{err}"
    );
    assert!(
        err.contains("ok: 4 host(s) of the built-in example"),
        "{err}"
    );
    // What to do next is said; the next step writes a starter inventory
    // whose render replaces the example's in `out/` with a note, no --force.
    assert!(
        err.contains("next: open out/topology.html") && err.contains("nodenet init"),
        "{err}"
    );
    let o = run(nodenet().arg("init").current_dir(tmp.path()));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(nodenet()
        .args(["render", "cluster.yaml"])
        .current_dir(tmp.path()));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("note: out holds the built-in example's render"),
        "{err}"
    );
    assert!(tmp.path().join("out/hosts/worker-1").is_dir());
    assert!(!tmp
        .path()
        .join("out/hosts/master-0/system-connections/bond0.110.nmconnection")
        .exists());
    // Quiet means quiet: no note, no verdict.
    fs::remove_dir_all(tmp.path().join("out")).unwrap();
    let o = run(nodenet().args(["render", "-q"]).current_dir(tmp.path()));
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    // init never writes over a file.
    let o = run(nodenet().arg("init").current_dir(tmp.path()));
    assert_eq!(o.status.code(), Some(2));
    // The inventory forgotten, `-o prod-out` (an existing directory that
    // is no render): refused, nothing written; --example writes it.
    let prod = tmp.path().join("prod-out");
    fs::create_dir(&prod).unwrap();
    let o = run(nodenet().args(["render", "-o"]).arg(&prod));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no inventory given") && err.contains("--example"),
        "{err}"
    );
    assert_eq!(fs::read_dir(&prod).unwrap().count(), 0);
    let o = run(nodenet().args(["render", "--example", "-o"]).arg(&prod));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(prod.join("manifest.json").is_file());
}

#[test]
fn bmc_password_only_in_its_secret() {
    let secret = "s3cr3t-Pa55-9f1c";
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let ex = repo().join("examples/lacp-vlan.yaml");
    // By default no password is written anywhere, even when available.
    let o = run(nodenet()
        .arg("render")
        .arg(&ex)
        .arg("-o")
        .arg(&out)
        .env("BMC_PASSWORD", secret));
    assert!(o.status.success());
    for f in files_under(&out) {
        assert!(!fs::read_to_string(&f).unwrap().contains(secret), "{f:?}");
    }
    let o = run(nodenet()
        .args(["render", "--bmc-secrets", "reference"])
        .arg(&ex)
        .arg("-o")
        .arg(&out)
        .env("BMC_PASSWORD", secret));
    assert!(o.status.success());
    let scale_out = fs::read_to_string(out.join("scale-out/master-0.yaml")).unwrap();
    assert!(
        !scale_out.contains("kind: Secret\nmetadata:\n  name: master-0-bmc-secret")
            && scale_out.contains("credentialsName: master-0-bmc-secret"),
        "{scale_out}"
    );
    for format in ["human", "json"] {
        let o = run(nodenet()
            .args(["render", "--bmc-secrets", "embed", "--format", format])
            .arg(&ex)
            .arg("-o")
            .arg(&out)
            .env("BMC_PASSWORD", secret));
        assert!(o.status.success());
        assert!(!String::from_utf8_lossy(&o.stdout).contains(secret));
        assert!(!String::from_utf8_lossy(&o.stderr).contains(secret));
    }
    let mut in_secret = 0;
    for f in files_under(&out) {
        let text = fs::read_to_string(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        // The scale-out file carries the BMC Secret (and only it the password).
        if f.parent().unwrap().ends_with("scale-out") {
            let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&text)
                .map(|d| serde::Deserialize::deserialize(d).unwrap())
                .collect();
            let bmc_secret = docs
                .iter()
                .find(|d| {
                    d["metadata"]["name"].as_str()
                        == Some(&format!("{}-bmc-secret", name.trim_end_matches(".yaml")))
                })
                .unwrap();
            assert_eq!(bmc_secret["stringData"]["password"].as_str(), Some(secret));
            for d in docs.iter().filter(|d| !std::ptr::eq(*d, bmc_secret)) {
                assert!(!serde_yaml::to_string(d).unwrap().contains(secret), "{f:?}");
            }
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&f).unwrap().permissions().mode() & 0o777,
                0o600
            );
            in_secret += 1;
        } else {
            assert!(!text.contains(secret), "password leaked into {f:?}");
        }
    }
    assert_eq!(in_secret, 4);
    let ic = fs::read_to_string(out.join("install-config.yaml")).unwrap();
    assert!(
        ic.contains("password: |2-\n          ${BMC_PASSWORD}\n"),
        "{ic}"
    );
}

#[test]
fn password_from_install_config_is_not_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "install-config.yaml",
        "apiVersion: v1\nbaseDomain: example.com\nmetadata: {name: c}\nnetworking:\n  machineNetwork: [{cidr: 192.168.111.0/24}]\nplatform:\n  baremetal:\n    apiVIPs: [192.168.111.5]\n    ingressVIPs: [192.168.111.4]\n    hosts:\n    - name: m0\n      role: master\n      bmc: {address: 'bogus://x', username: admin, password: Inline-Secret-77}\n      bootMACAddress: 52:54:00:00:00:01\n",
    );
    for format in ["human", "json"] {
        let o = run(nodenet().args(["check", "--format", format]).arg(&f));
        assert_eq!(o.status.code(), Some(1));
        assert!(!String::from_utf8_lossy(&o.stdout).contains("Inline-Secret-77"));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("Inline-Secret-77"));
    }
}

#[test]
fn install_config_and_agent_config_render_as_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let net = "      networkConfig:\n        interfaces:\n        - name: eno1\n          type: ethernet\n          state: up\n          mac-address: 52:54:00:00:00:0IDX\n          ipv4:\n            enabled: true\n            address: [{ip: 192.168.111.1IDX, prefix-length: 24}]\n        routes:\n          config:\n          - {destination: 0.0.0.0/0, next-hop-address: 192.168.111.1, next-hop-interface: eno1}\n";
    let mut hosts = String::new();
    for i in 0..3 {
        hosts += &format!(
            "    - name: master-{i}\n      role: master\n      bmc: {{address: 'redfish-virtualmedia+http://192.168.111.1:8000/redfish/v1/Systems/{i}', username: admin, password: pw}}\n      bootMACAddress: 52:54:00:00:00:0{i}\n"
        );
        hosts += &net.replace("IDX", &i.to_string());
    }
    let ic = write(
        tmp.path(),
        "install-config.yaml",
        format!("apiVersion: v1\nbaseDomain: example.com\nmetadata: {{name: c}}\nnetworking:\n  machineNetwork: [{{cidr: 192.168.111.0/24}}]\nplatform:\n  baremetal:\n    apiVIPs: [192.168.111.5]\n    ingressVIPs: [192.168.111.4]\n    provisioningNetwork: Disabled\n    hosts:\n{hosts}"),
    );
    let o = run(nodenet().arg("check").arg(&ic));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&ic).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let kf = fs::read_to_string(out.join("hosts/master-2/system-connections/eno1.nmconnection"))
        .unwrap();
    assert!(kf.contains("address0=192.168.111.12/24"), "{kf}");
    // Passwords from install-config are not copied into the rendered one.
    let rendered = fs::read_to_string(out.join("install-config.yaml")).unwrap();
    assert!(!rendered.contains("password: pw"), "{rendered}");

    let ac = write(
        tmp.path(),
        "agent-config.yaml",
        "apiVersion: v1beta1\nkind: AgentConfig\nmetadata: {name: c}\nrendezvousIP: 192.168.111.10\nhosts:\n- hostname: master-0\n  role: master\n  interfaces: [{name: eno1, macAddress: '52:54:00:00:00:10'}]\n  networkConfig:\n    interfaces:\n    - name: eno1\n      type: ethernet\n      state: up\n      ipv4: {enabled: true, address: [{ip: 192.168.111.10, prefix-length: 24}]}\n",
    );
    let o = run(nodenet().arg("check").arg(&ac));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(nodenet()
        .arg("render")
        .arg(&ac)
        .arg("-o")
        .arg(tmp.path().join("out2")));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let agent: serde_json::Value = serde_yaml::from_str(
        &fs::read_to_string(tmp.path().join("out2/agent-config.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(agent["rendezvousIP"], "192.168.111.10");
    assert_eq!(
        agent["hosts"][0]["interfaces"][0]["macAddress"],
        "52:54:00:00:00:10"
    );
}

#[test]
fn install_config_plus_agent_config_check_together() {
    let tmp = tempfile::tempdir().unwrap();
    let ic = write(
        tmp.path(),
        "install-config.yaml",
        "apiVersion: v1\nbaseDomain: example.com\nmetadata: {name: c}\nnetworking:\n  machineNetwork: [{cidr: 10.0.0.0/24}]\nplatform:\n  baremetal:\n    apiVIPs: [10.0.0.5]\n    ingressVIPs: [10.0.0.4]\n",
    );
    // The host's address is outside install-config's machine network.
    let ac = write(
        tmp.path(),
        "agent-config.yaml",
        "apiVersion: v1beta1\nkind: AgentConfig\nmetadata: {name: c}\nhosts:\n- hostname: m0\n  interfaces: [{name: eno1, macAddress: '52:54:00:00:00:10'}]\n  networkConfig:\n    interfaces:\n    - name: eno1\n      type: ethernet\n      ipv4: {enabled: true, address: [{ip: 192.168.1.10, prefix-length: 24}]}\n",
    );
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(&ic)
        .arg(&ac));
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let d = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "ip-outside-machine-network")
        .expect("diag");
    assert_eq!(d["file"], ac.to_str().unwrap());
    assert_eq!(d["line"], 11);
}

#[test]
fn template_expansion_is_deterministic_and_pools_skip_written_addresses() {
    if skip_without(&["ip"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let inv = write(
        tmp.path(),
        "c.yaml",
        "nodenet: v1\npools:\n  p: {range: 10.0.0.10-10.0.0.20, prefix: 24}\ntemplates:\n  t:\n    network:\n      interfaces:\n      - name: eth0\n        type: ethernet\n        ipv4: {enabled: true, address: [{ip: '${ip.p}', prefix-length: '${prefix.p}'}]}\nhosts:\n- {name: fixed, template: t, ips: {p: 10.0.0.11}}\n- {name: 'w-${index}', template: t, count: 3}\n",
    );
    let out = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&inv).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ip = |h: &str| {
        let kf =
            fs::read_to_string(out.join(format!("hosts/{h}/system-connections/eth0.nmconnection")))
                .unwrap();
        kf.lines()
            .find(|l| l.starts_with("address0="))
            .unwrap()
            .to_string()
    };
    assert_eq!(ip("fixed"), "address0=10.0.0.11/24");
    assert_eq!(ip("w-0"), "address0=10.0.0.10/24");
    assert_eq!(ip("w-1"), "address0=10.0.0.12/24");
    assert_eq!(ip("w-2"), "address0=10.0.0.13/24");
}

#[test]
fn nmstate_warnings_become_located_diagnostics() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "h.yml",
        "interfaces:\n- name: eth0\n  type: ethernet\n  state: up\nhostname:\n  config: node-1\n",
    );
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&f));
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    let d = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "nmstate-warning")
        .expect("nmstate warning");
    assert_eq!(d["severity"], "warning");
    assert!(d["message"].as_str().unwrap().contains("hostname"));
    assert_eq!(d["line"], 5, "{d}");
}

#[test]
fn nmstate_errors_are_located_not_line_2() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "h.yml", "interfaces:\n- name: eth0\n  type: ethernet\n  state: up\n  ipv4:\n    enabled: true\n    dhcpp: true\n");
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&f));
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "unknown-field");
    assert_eq!(d["line"], 7, "{d}");
}

#[test]
fn garbage_and_huge_inputs_are_located_errors_not_panics() {
    let tmp = tempfile::tempdir().unwrap();
    // 10 MB of pseudo-random bytes.
    let mut x: u32 = 12345;
    let bytes: Vec<u8> = (0..10 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    let garbage = tmp.path().join("garbage.yaml");
    fs::write(&garbage, &bytes).unwrap();
    let nested = write(
        tmp.path(),
        "nested.yaml",
        format!("interfaces: {}", "[".repeat(200_000)),
    );
    let scalar = write(tmp.path(), "scalar.yaml", "just a string\n");
    for f in [&garbage, &nested, &scalar] {
        let o = run(nodenet().args(["check", "--format", "json"]).arg(f));
        assert_eq!(
            o.status.code(),
            Some(1),
            "{f:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = json(&o);
        let d = &v["diagnostics"][0];
        assert!(
            d["code"] == "yaml-syntax" || d["code"] == "unknown-format",
            "{d}"
        );
        assert!(d["line"].as_u64().unwrap() >= 1);
    }
}

/// The shipped unit parses cleanly by systemd's own reader and its
/// ExecStart is a command line nodenet accepts.
#[test]
fn systemd_unit_is_valid_and_runs_nodenet_service() {
    if skip_without(&["systemd-analyze"]) {
        return;
    }
    let unit = repo().join("dist/systemd/nodenet-apply.service");
    let out = run(Command::new(tool("systemd-analyze"))
        .arg("verify")
        .arg(&unit));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines() {
        // The only complaint allowed: nodenet is not installed on this machine.
        assert!(
            line.contains("/usr/local/bin/nodenet is not executable"),
            "systemd-analyze verify: {line}"
        );
    }
    let text = std::fs::read_to_string(&unit).unwrap();
    let exec = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart=/usr/local/bin/nodenet "))
        .expect("ExecStart runs /usr/local/bin/nodenet");
    let empty = tempfile::tempdir().unwrap();
    // The unit's own arguments, its directory pointed at an empty one.
    let mut args: Vec<String> = exec.split_whitespace().map(str::to_string).collect();
    let dir = args.iter().position(|a| a == "--dir").expect("--dir") + 1;
    assert_eq!(args[dir], "/etc/nodenet/nmstate");
    args[dir] = empty.path().display().to_string();
    let out = run(nodenet()
        .args(&args)
        .arg("--status")
        .arg(empty.path().join("status.json")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to apply"));
}

/// `nodenet service` picks <hostname>.yml over cluster.yml, refuses a
/// state `check` rejects without recording it as applied (the run is
/// recorded as refused, and `nodenet status` fails), and skips a file
/// whose sha256 is already recorded (without touching NetworkManager),
/// reading the record an older nodenet left (`applied`) too.
#[test]
fn service_picks_the_host_file_refuses_bad_states_and_skips_applied_ones() {
    if skip_without(&["sha256sum"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let status = dir.path().join("state/status.json");
    write(
        dir.path(),
        "cluster.yml",
        "interfaces:\n- {name: eth0, type: ethernet, state: up}\n",
    );
    let bad = "interfaces:\n- name: v\n  type: vlan\n  vlan: {base-iface: eth0, id: 5000}\n";
    let host_file = write(dir.path(), &format!("{host}.yml"), bad);
    let service = || {
        run(nodenet()
            .arg("service")
            .arg("--dir")
            .arg(dir.path())
            .arg("--status")
            .arg(&status))
    };
    let read_status = || -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(&status).unwrap()).unwrap()
    };
    let status_cmd = || run(nodenet().arg("status").arg("--status").arg(&status));
    let out = service();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("{host}.yml")), "{stderr}");
    assert!(stderr.contains("refused"), "{stderr}");
    let s = read_status();
    assert!(
        s.get("applied").is_none(),
        "a refused state was recorded as applied: {s}"
    );
    assert_eq!(s["last"]["outcome"], "refused", "{s}");
    assert_eq!(s["last"]["sha256"], sha256sum(&host_file), "{s}");
    let o = status_cmd();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("last run: refused"));
    // Recorded as applied by an older nodenet: nothing to do, exit 0.
    std::fs::remove_file(&status).unwrap();
    let sha = sha256sum(&host_file);
    std::fs::write(
        dir.path().join("state/applied"),
        format!("{sha}  {}\n", host_file.display()),
    )
    .unwrap();
    let out = service();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("applied already"), "{stderr}");
    let s = read_status();
    assert_eq!(s["applied"]["sha256"], sha, "{s}");
    assert_eq!(s["last"]["outcome"], "unchanged", "{s}");
    let o = status_cmd();
    assert!(o.status.success());
    let o = run(nodenet()
        .args(["status", "--format", "json", "--status"])
        .arg(&status));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j, s);
}

/// sha256sum's digest of a file.
fn sha256sum(path: &std::path::Path) -> String {
    let o = run(Command::new(tool("sha256sum")).arg(path));
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn render_replaces_only_a_render_of_the_same_inputs_unless_forced() {
    if skip_without(&["ip", "sha256sum"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mine = tmp.path().join("cluster.yaml");
    fs::copy(repo().join("examples/static-masters-br-ex.yaml"), &mine).unwrap();
    let render = |args: &[&str]| run(nodenet().arg("render").args(args).current_dir(tmp.path()));
    let o = render(&["cluster.yaml"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The manifest names the input and its digest.
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(tmp.path().join("out/manifest.json")).unwrap()).unwrap();
    let abs = mine.canonicalize().unwrap();
    assert_eq!(
        manifest["source"]["inputs"],
        serde_json::json!([abs.to_str().unwrap()])
    );
    assert_eq!(manifest["source"]["files"][0]["sha256"], sha256sum(&mine));
    // The same input, spelled otherwise and edited since: replaced.
    fs::write(
        &mine,
        fs::read_to_string(&mine)
            .unwrap()
            .replace("ostest", "edited"),
    )
    .unwrap();
    let o = render(&[abs.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = fs::read(tmp.path().join("out/manifest.json")).unwrap();
    // The README's first command (the built-in example) in that directory:
    // refused, naming what `out` holds, nothing changed.
    for format in ["human", "json"] {
        let o = render(&["--format", format]);
        assert_eq!(o.status.code(), Some(2));
        if format == "json" {
            let v = json(&o);
            assert_eq!(v["diagnostics"][0]["code"], "output-other-input");
        } else {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains(abs.to_str().unwrap()) && err.contains("--force"),
                "{err}"
            );
        }
    }
    assert_eq!(
        fs::read(tmp.path().join("out/manifest.json")).unwrap(),
        before
    );
    assert!(tmp.path().join("out/hosts/master-2").is_dir());
    // --force replaces it.
    let o = render(&["--force"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(tmp.path().join("out/manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["source"]["inputs"],
        serde_json::json!(["<built-in example: examples/lacp-vlan.yaml>"])
    );
}

/// A small Go program reading YAML with go-yaml v2 (what openshift-install
/// and kubectl read install-config with) or v3, printing it as JSON.
const GO_YAML: &str = r#"package main

import (
	"encoding/json"
	"fmt"
	"io/ioutil"
	"os"

	yaml2 "gopkg.in/yaml.v2"
	yaml3 "gopkg.in/yaml.v3"
)

func plain(v interface{}) interface{} {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		m := map[string]interface{}{}
		for k, x := range t {
			m[fmt.Sprint(k)] = plain(x)
		}
		return m
	case map[string]interface{}:
		for k, x := range t {
			t[k] = plain(x)
		}
		return t
	case []interface{}:
		for i, x := range t {
			t[i] = plain(x)
		}
		return t
	}
	return v
}

func main() {
	data, err := ioutil.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	var v interface{}
	if os.Args[1] == "v2" {
		err = yaml2.Unmarshal(data, &v)
	} else {
		err = yaml3.Unmarshal(data, &v)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, _ := json.Marshal(plain(v))
	fmt.Println(string(out))
}
"#;

/// Builds [`GO_YAML`] against Debian's golang-gopkg-yaml.v2-dev/v3-dev.
fn go_yaml_reader(dir: &std::path::Path) -> std::path::PathBuf {
    let src = dir.join("goyaml.go");
    fs::write(&src, GO_YAML).unwrap();
    let bin = dir.join("goyaml");
    let o = run(Command::new(tool("go"))
        .args(["build", "-o"])
        .arg(&bin)
        .arg(&src)
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOCACHE", dir.join("gocache"))
        .env("HOME", dir));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    bin
}

#[test]
fn placeholders_filled_by_envsubst_stay_one_string_for_pyyaml_and_go_yaml() {
    if skip_without(&["envsubst", "go", "python3"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // Three credentials, so three password variables in install-config.
    let inv = fs::read_to_string(repo().join("examples/static-masters-br-ex.yaml")).unwrap();
    assert!(inv.contains("credentials: bmc-admin"), "example changed");
    let mut text = inv.replacen(
        "credentials:\n",
        "credentials:\n  c1: {username: u1, passwordEnv: PW_ONE}\n  c2: {username: u2, passwordEnv: PW_TWO}\n",
        1,
    );
    // master-1 and master-2 use the new credentials.
    for (host, cred) in [("master-1", "c1"), ("master-2", "c2")] {
        let at = text.find(&format!("- name: {host}")).unwrap();
        text.insert_str(
            at + format!("- name: {host}").len(),
            &format!("\n  bmc: {{address: 'redfish-virtualmedia+http://192.168.111.1:8000/redfish/v1/Systems/{host}', credentials: {cred}}}"),
        );
    }
    let inv = write(tmp.path(), "cluster.yaml", &text);
    let out = tmp.path().join("out");
    // The BMC Secrets need the passwords when rendering; install-config
    // keeps placeholders for them all the same.
    let o = run(nodenet()
        .arg("render")
        .arg(&inv)
        .arg("-o")
        .arg(&out)
        .env("PW_ONE", "render-one")
        .env("PW_TWO", "render-two"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rendered = out.join("install-config.yaml");
    let go = go_yaml_reader(tmp.path());
    let pull_secret = r#"{"auths":{"cloud.openshift.com":{"auth":"b3BlbnNoaWZ0LXJlbGVhc2UtZGV2K29jbV9hY2Nlc3NfMTIzOjQ1Ng==","email":"o'neil@example.com"},"quay.io":{"auth":"b3BlbnNoaWZ0LXJlbGVhc2UtZGV2","email":"dev@example.com"}}}"#;
    let hostile = [
        (
            "p@ss: #word",
            "it's a \"quoted\" \\ back\\slash",
            "- {a: [b]} &x *y !z |p >f %q @r `t",
        ),
        (" leading and trailing ", "#hash-first", "---"),
        ("'single", "\"double", "tab\there"),
    ];
    for (one, two, three) in hostile {
        let filled = tmp.path().join("filled.yaml");
        let o = run(Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{} '$PULL_SECRET $BMC_PASSWORD $PW_ONE $PW_TWO' < '{}' > '{}'",
                tool("envsubst").display(),
                rendered.display(),
                filled.display()
            ))
            .env("PULL_SECRET", pull_secret)
            .env("BMC_PASSWORD", one)
            .env("PW_ONE", two)
            .env("PW_TWO", three));
        assert!(o.status.success());
        let mut readers: Vec<(String, serde_json::Value)> = Vec::new();
        let py = run(Command::new("python3")
            .arg("-c")
            .arg("import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))")
            .arg(&filled));
        assert!(
            py.status.success(),
            "PyYAML: {}",
            String::from_utf8_lossy(&py.stderr)
        );
        readers.push(("PyYAML".into(), serde_json::from_slice(&py.stdout).unwrap()));
        for v in ["v2", "v3"] {
            let o = run(Command::new(&go).arg(v).arg(&filled));
            assert!(
                o.status.success(),
                "go-yaml {v}: {}\n{}",
                String::from_utf8_lossy(&o.stderr),
                fs::read_to_string(&filled).unwrap()
            );
            readers.push((
                format!("go-yaml {v}"),
                serde_json::from_slice(&o.stdout).unwrap(),
            ));
        }
        for (reader, doc) in readers {
            assert_eq!(doc["pullSecret"], pull_secret, "{reader}");
            let hosts = &doc["platform"]["baremetal"]["hosts"];
            for (i, want) in [one, two, three].iter().enumerate() {
                assert_eq!(hosts[i]["bmc"]["password"], *want, "{reader}: host {i}");
            }
            assert_eq!(hosts[1]["bmc"]["username"], "u1", "{reader}");
        }
    }
}

#[test]
fn dns_placeholder_gives_every_server_of_the_pool() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = write(
        tmp.path(),
        "c.yaml",
        "nodenet: v1\npools:\n  p: {range: 10.0.0.10-10.0.0.20, prefix: 24, gateway: 10.0.0.1, dns: [10.0.0.2, 10.0.0.3]}\ntemplates:\n  t:\n    network:\n      dns-resolver:\n        config:\n          server: ${dns.p}\n      interfaces:\n      - name: eth0\n        type: ethernet\n        ipv4: {enabled: true, address: [{ip: '${ip.p}', prefix-length: '${prefix.p}'}]}\n      routes:\n        config:\n        - {destination: 0.0.0.0/0, next-hop-address: '${gateway.p}', next-hop-interface: eth0}\nhosts:\n- {name: a, template: t}\n- name: b\n  template: t\n  network:\n    dns-resolver:\n      config:\n        server: ['${dns.p[1]}']\n    interfaces:\n    - name: eth0\n      type: ethernet\n      ipv4: {enabled: true, address: [{ip: '${ip.p}', prefix-length: 24}]}\n    routes:\n      config:\n      - {destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: eth0}\n",
    );
    let out = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&inv).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let servers = |h: &str| -> serde_json::Value {
        let state: serde_json::Value = serde_yaml::from_str(
            &fs::read_to_string(out.join(format!("hosts/{h}/nmstate.yml"))).unwrap(),
        )
        .unwrap();
        state["dns-resolver"]["config"]["server"].clone()
    };
    assert_eq!(servers("a"), serde_json::json!(["10.0.0.2", "10.0.0.3"]));
    assert_eq!(servers("b"), serde_json::json!(["10.0.0.3"]));
    let kf = fs::read_to_string(out.join("hosts/a/system-connections/eth0.nmconnection")).unwrap();
    assert!(kf.lines().any(|l| l == "dns=10.0.0.2;10.0.0.3"), "{kf}");
}

/// stdout is exactly one JSON object; returns it.
fn one_json_object(o: &std::process::Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&o.stdout);
    let mut objects = serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>();
    let first = objects
        .next()
        .unwrap_or_else(|| {
            panic!(
                "no JSON on stdout; stderr: {}",
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    assert!(objects.next().is_none(), "more than one object: {text}");
    assert!(first.is_object(), "{text}");
    first
}

#[test]
fn every_json_outcome_is_one_object_on_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    let good = repo().join("examples/lacp-vlan.yaml");
    let foreign = tmp.path().join("foreign");
    fs::create_dir(&foreign).unwrap();
    fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let inv_with_errors = write(
        tmp.path(),
        "bad.yaml",
        "nodenet: v1\nhosts:\n- name: Bad_Name\n",
    );
    let state = write(
        tmp.path(),
        "s.yml",
        "interfaces:\n- {name: eth0, type: ethernet, state: up}\n",
    );
    let f = |p: &std::path::Path| p.to_str().unwrap().to_string();
    // (arguments, exit code, code of the first diagnostic)
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (vec!["check".into(), "nope.yaml".into()], 2, "io"),
        (vec!["render".into(), "nope.yaml".into()], 2, "io"),
        (
            vec!["render".into(), f(&good), "-o".into(), f(&foreign)],
            2,
            "output-not-ours",
        ),
        (vec!["diff".into(), "nope.yml".into(), f(&state)], 2, "io"),
        (vec!["diff".into(), f(&good), f(&state)], 2, "not-a-state"),
        (vec!["import".into(), "nope.nmconnection".into()], 2, "io"),
        (
            vec!["bmc".into(), "status".into(), "nope.yaml".into()],
            2,
            "io",
        ),
        (
            vec!["bmc".into(), "status".into(), f(&inv_with_errors)],
            1,
            "host-name-invalid",
        ),
        (
            vec![
                "provision".into(),
                f(&good),
                "--image-url-base".into(),
                "http://x/".into(),
            ],
            2,
            "usage",
        ),
        (vec!["check".into(), "--bogus".into()], 2, "usage"),
        (vec!["hosts".into(), "nope.yaml".into()], 2, "io"),
        (vec!["hosts".into(), "--bogus".into()], 2, "usage"),
        (
            vec!["hosts".into(), f(&inv_with_errors)],
            1,
            "host-name-invalid",
        ),
        (
            vec!["check".into(), f(&inv_with_errors)],
            1,
            "host-name-invalid",
        ),
    ];
    for (args, exit, code) in cases {
        let o = run(nodenet().args(&args).args(["--format", "json"]));
        assert_eq!(
            o.status.code(),
            Some(exit),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = one_json_object(&o);
        assert_eq!(v["diagnostics"][0]["code"], code, "{args:?}: {v}");
        assert_eq!(v["diagnostics"][0]["severity"], "error", "{args:?}: {v}");
        if code == "io" {
            assert!(
                v["diagnostics"][0]["file"]
                    .as_str()
                    .unwrap()
                    .contains("nope"),
                "{v}"
            );
        }
    }
    // Success is one object too.
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&good));
    assert!(o.status.success());
    assert!(one_json_object(&o)["diagnostics"].is_array());
    let o = run(nodenet()
        .args(["render", "--format", "json", "-o"])
        .arg(tmp.path().join("out"))
        .arg(&good));
    assert!(o.status.success());
    assert!(one_json_object(&o)["output"]["files"].as_u64().unwrap() > 10);
}

#[test]
fn node_commands_without_network_manager_say_so_plainly() {
    if skip_without(&["make", "man", "nmstatectl"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = write(
        tmp.path(),
        "s.yml",
        "interfaces:\n- {name: dummy0, type: dummy, state: up}\n",
    );
    let no_bus = format!("unix:path={}", tmp.path().join("no-bus").display());
    for args in [
        vec!["show".to_string()],
        vec!["apply".to_string(), state.to_str().unwrap().to_string()],
        vec!["commit".to_string()],
    ] {
        let o = run(nodenet()
            .args(&args)
            .env("DBUS_SYSTEM_BUS_ADDRESS", &no_bus)
            .env_remove("NODENET_LOG"));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(
                "cannot reach NetworkManager over the system D-Bus (is NetworkManager running?)"
            ),
            "{args:?}: {err}"
        );
        for noise in ["WARN", "Bug", "DbusConnectionError", "Os {", "kind:"] {
            assert!(!err.contains(noise), "{args:?}: {noise} in {err}");
        }
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    // In JSON, one object on stdout.
    let o = run(nodenet()
        .args(["show", "--format", "json"])
        .env("DBUS_SYSTEM_BUS_ADDRESS", &no_bus));
    assert_eq!(o.status.code(), Some(2));
    let v = one_json_object(&o);
    assert_eq!(v["diagnostics"][0]["code"], "network-manager-unreachable");
}

#[test]
fn no_color_turns_colour_off_on_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = write(
        tmp.path(),
        "h.yml",
        "interfaces:\n- {name: v, type: vlan, vlan: {base-iface: eth0, id: 5000}}\n- {name: eth0, type: ethernet}\n",
    );
    let (status, coloured) = run_in_pty(
        nodenet()
            .arg("check")
            .arg(&bad)
            .env_remove("NO_COLOR")
            .env("TERM", "xterm"),
        "",
    );
    assert_eq!(status.code(), Some(1), "{coloured}");
    assert!(
        coloured.contains("\x1b["),
        "no colour on a terminal: {coloured}"
    );
    let (status, plain) = run_in_pty(
        nodenet()
            .arg("check")
            .arg(&bad)
            .env("NO_COLOR", "1")
            .env("TERM", "xterm"),
        "",
    );
    assert_eq!(status.code(), Some(1), "{plain}");
    assert!(plain.contains("vlan-id-range"), "{plain}");
    assert!(
        !plain.contains('\x1b'),
        "colour despite NO_COLOR: {plain:?}"
    );
}

#[test]
fn quiet_keeps_results_and_errors_and_drops_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let good = repo().join("examples/lacp-vlan.yaml");
    let o = run(nodenet().arg("check").arg(&good));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ok: "));
    let o = run(nodenet().args(["check", "-q"]).arg(&good));
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    let o = run(nodenet()
        .args(["--quiet", "render", "-o"])
        .arg(tmp.path().join("out"))
        .arg(&good));
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    // Errors still show.
    let o = run(nodenet().args(["check", "-q", "nope.yaml"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nope.yaml"));
}

#[test]
fn version_names_the_embedded_nmstate() {
    if skip_without(&["nmstatectl"]) {
        return;
    }
    let o = run(nodenet().arg("--version"));
    let ours = String::from_utf8_lossy(&o.stdout).to_string();
    // nmstatectl of the same release, as CI installs it.
    let o = run(Command::new(tool("nmstatectl")).arg("--version"));
    let theirs = String::from_utf8_lossy(&o.stdout);
    let nmstate = theirs.split_whitespace().last().unwrap();
    assert!(
        ours.starts_with("nodenet ") && ours.contains(&format!("(nmstate {nmstate})")),
        "{ours} / {theirs}"
    );
}

#[test]
fn explain_is_case_insensitive_and_shows_an_example() {
    for spelling in ["vlan-id-range", "VLAN-ID-RANGE", "Vlan_Id_Range"] {
        let o = run(nodenet().args(["explain", spelling]));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{spelling}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            out.starts_with("vlan-id-range: A VLAN id is outside 1-4094."),
            "{out}"
        );
        // More than the table line: an input of the catalogue that has it...
        let file = out
            .lines()
            .find_map(|l| l.strip_prefix("An input that has it ("))
            .and_then(|l| l.strip_suffix("):"))
            .unwrap_or_else(|| panic!("{out}"));
        let text = fs::read_to_string(repo().join(file)).unwrap();
        assert!(text.starts_with("# expect: vlan-id-range "), "{file}");
        // (its `# fix:` lines, at the end, are shown as the fixed input)
        let last = text
            .lines()
            .rev()
            .find(|l| !l.starts_with("# fix:"))
            .unwrap();
        assert!(out.contains(last), "{out}");
        assert!(out.contains(&format!("Fixed ({file}, ")), "{out}");
        // ...and what check says about it, help included.
        assert!(
            out.contains("is outside 1-4094") && out.contains("help: "),
            "{out}"
        );
    }
    let o = run(nodenet().args(["explain", "no-such-code"]));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn make_install_puts_binary_manual_and_completions_in_place() {
    if skip_without(&["make", "man"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("root");
    let o = run(Command::new(tool("make"))
        .arg("-C")
        .arg(repo())
        .arg("install")
        .arg(format!("DESTDIR={}", dest.display()))
        .arg("PREFIX=/usr")
        .arg(format!("BIN={}", env!("CARGO_BIN_EXE_nodenet"))));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let usr = dest.join("usr");
    let bin = usr.join("bin/nodenet");
    assert!(run(Command::new(&bin).arg("--version")).status.success());
    // One page per command, each read by man(1) without a warning.
    let man1 = usr.join("share/man/man1");
    for page in [
        "nodenet.1",
        "nodenet-render.1",
        "nodenet-bmc-power.1",
        "nodenet-image-iso.1",
    ] {
        let p = man1.join(page);
        assert!(p.is_file(), "{page}");
        let o = run(Command::new(tool("man"))
            .arg("-l")
            .arg(&p)
            .env("MANWIDTH", "100")
            .env("MAN_KEEP_STDERR", "1")
            .env("LC_ALL", "C.UTF-8"));
        assert!(
            o.status.success(),
            "{page}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            String::from_utf8_lossy(&o.stderr).trim().is_empty(),
            "{page}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        if page == "nodenet.1" {
            let text = String::from_utf8_lossy(&o.stdout);
            for cmd in ["check", "render", "provision", "completions"] {
                assert!(text.contains(cmd), "{cmd} not in nodenet(1)");
            }
        }
    }
    // bash loads the completion and completes subcommands and flags.
    let script = usr.join("share/bash-completion/completions/nodenet");
    let o = run(Command::new("bash").arg("-c").arg(format!(
        "source '{}'; COMP_WORDS=(nodenet bmc power off --a); COMP_CWORD=4; COMP_LINE='nodenet bmc power off --a'; COMP_POINT=${{#COMP_LINE}}; _nodenet nodenet --a power; printf '%s\\n' \"${{COMPREPLY[@]}}\"; COMP_WORDS=(nodenet pro); COMP_CWORD=1; _nodenet nodenet pro nodenet; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    )));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.lines().any(|l| l == "--all"), "{out}");
    assert!(out.lines().any(|l| l == "provision"), "{out}");
    for (f, shell) in [
        ("zsh/site-functions/_nodenet", "zsh"),
        ("fish/vendor_completions.d/nodenet.fish", "fish"),
    ] {
        let text = fs::read_to_string(usr.join("share").join(f)).unwrap();
        assert!(
            text.contains("provision") && text.contains("dry-run"),
            "{shell}"
        );
    }
}

/// Every option of every command is in that command's row of the README's
/// command table (read from `--help`, so a new flag without its row fails).
#[test]
fn readme_command_table_names_every_option() {
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let table: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| command | does | exit |"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(table.len() > 10, "no command table");
    let commands: &[&[&str]] = &[
        &["check"],
        &["render"],
        &["init"],
        &["hosts"],
        &["show-host"],
        &["gc"],
        &["import"],
        &["diff"],
        &["image", "iso"],
        &["image", "pxe"],
        &["image", "disk"],
        &["serve"],
        &["bmc", "status"],
        &["bmc", "power"],
        &["bmc", "media"],
        &["provision"],
        &["show"],
        &["apply"],
        &["commit"],
        &["rollback"],
        &["service"],
        &["explain"],
        &["lab", "up"],
        &["lab", "verify"],
        &["lab", "rehearse"],
        &["lab", "status"],
        &["lab", "console"],
        &["lab", "down"],
        &["lab", "image"],
        &["completions"],
        &["man"],
    ];
    let mut missing = Vec::new();
    for path in commands {
        let o = run(nodenet().args(*path).arg("--help"));
        assert!(o.status.success(), "{path:?}");
        let help = String::from_utf8_lossy(&o.stdout).to_string();
        let name = format!("nodenet {}", path.join(" "));
        let row = table
            .iter()
            .find(|r| r.contains(&format!("`{name} ")) || r.contains(&format!("`{name}`")))
            .unwrap_or_else(|| panic!("no README row for {name}"));
        for line in help
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with('-'))
        {
            let mut short = None;
            let mut long = None;
            for word in line.split([' ', ',']).take_while(|w| w.starts_with('-')) {
                if word.starts_with("--") {
                    long = Some(word.to_string());
                } else {
                    short = Some(word.to_string());
                }
            }
            let Some(long) = long else { continue };
            if ["--help", "--quiet", "--verbose", "--version"].contains(&long.as_str()) {
                continue;
            }
            let named = row.contains(&long)
                || short
                    .as_ref()
                    .is_some_and(|s| row.contains(&format!("{s} ")));
            if !named {
                missing.push(format!("{name}: {long}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "README's command table lacks: {missing:?}"
    );
}

#[test]
fn gc_writes_what_nmstatectl_writes_and_warns_with_checks_code() {
    if skip_without(&["nmstatectl"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = common::write(
        tmp.path(),
        "vlan.yml",
        "interfaces:
- name: eno1
  type: ethernet
  state: up
- name: eno1.5000
  type: vlan
  state: up
  vlan:
    base-iface: eno1
    id: 5000
",
    );
    let ours = run(nodenet().arg("gc").arg(&state));
    assert_eq!(ours.status.code(), Some(0));
    let theirs = run(Command::new(tool("nmstatectl")).arg("gc").arg(&state));
    assert!(theirs.status.success(), "nmstatectl gc takes id 5000");
    assert_eq!(ours.stdout, theirs.stdout);
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(
        err.contains("vlan-id-range")
            && err.contains("outside 1-4094")
            && err.contains("vlan.yml:10"),
        "{err}"
    );
    assert!(err.contains("⚠"), "{err}");
}
