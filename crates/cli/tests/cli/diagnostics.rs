//! What `check` says and how it prints it, on inputs a first hour
//! produces: huge, binary and hostile files; one mistake in a template that
//! reaches a hundred hosts; output that a later stage would reject;
//! findings located at their cause.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;

/// `check --format json`: exit code and (severity, code, line, host,
/// message) of every diagnostic.
type Found = Vec<(String, String, u64, String, String)>;

fn check_json(files: &[&Path]) -> (i32, Found) {
    let o = run(nodenet().args(["check", "--format", "json"]).args(files));
    let v = json(&o);
    let found = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["severity"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap_or(0),
                d["host"].as_str().unwrap_or("").to_string(),
                d["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (o.status.code().unwrap(), found)
}

fn codes(found: &Found) -> Vec<&str> {
    found.iter().map(|d| d.1.as_str()).collect()
}

/// Human output on stderr (not a terminal: no colour).
fn check_human(files: &[&Path]) -> (Output, String) {
    let o = run(nodenet().arg("check").args(files).env("COLUMNS", "100"));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, stderr)
}

/// Bytes a terminal would act on: everything below 0x20 but the newline,
/// and DEL.
fn control_bytes(out: &[u8]) -> Vec<u8> {
    out.iter()
        .copied()
        .filter(|b| (*b < 0x20 && *b != b'\n') || *b == 0x7f)
        .collect()
}

/// examples/workers-100.yaml (3 masters, 100 workers from one template)
/// with `from` replaced by `to`.
fn workers_100_with(dir: &Path, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("examples/workers-100.yaml")).unwrap();
    assert!(text.contains(from), "examples/workers-100.yaml changed");
    write(dir, "cluster.yaml", text.replacen(from, to, 1))
}

// ---- 6: huge, binary and hostile input ----

#[test]
fn an_input_over_the_size_limit_is_refused_before_it_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    // 3 MiB of valid YAML: over a 2 MiB limit, under the default.
    let mut text = String::from("interfaces:\n");
    while text.len() < 3 << 20 {
        text.push_str("- {name: eth0, type: ethernet, state: up}\n");
    }
    let f = write(tmp.path(), "big.yaml", &text);
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(&f)
        .env("NODENET_MAX_INPUT_MIB", "2"));
    assert_eq!(o.status.code(), Some(2));
    let v = json(&o);
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "input-too-large", "{v}");
    assert_eq!(d["file"], f.display().to_string().as_str());
    let msg = d["message"].as_str().unwrap();
    assert!(
        msg.contains("3 MiB") && msg.contains("up to 2 MiB"),
        "{msg}"
    );
    assert!(msg.contains("NODENET_MAX_INPUT_MIB"), "{msg}");
    // Human: one line, exit 2; with the limit raised it is read.
    let o = run(nodenet()
        .arg("check")
        .arg(&f)
        .env("NODENET_MAX_INPUT_MIB", "2"));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
    let o = run(nodenet()
        .arg("check")
        .arg(&f)
        .env("NODENET_MAX_INPUT_MIB", "4"));
    assert_ne!(o.status.code(), Some(2), "{o:?}");
    // A limit that is no number is a usage error.
    let o = run(nodenet()
        .arg("check")
        .arg(&f)
        .env("NODENET_MAX_INPUT_MIB", "lots"));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("NODENET_MAX_INPUT_MIB=lots"));
}

#[test]
fn a_binary_file_is_one_finding_and_none_of_its_bytes_reach_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes = b"\x7fELF\x02\x01\x01\x1b[2J\x1b]0;owned\x07".to_vec();
    bytes.extend((0..200_000u32).map(|i| (i.wrapping_mul(2654435761) >> 7) as u8));
    let f = write(tmp.path(), "inventory.yaml", &bytes);
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 1);
    assert_eq!(codes(&found), ["unknown-format"], "{found:?}");
    assert!(found[0].4.contains("binary"), "{found:?}");
    let (o, stderr) = check_human(&[&f]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(control_bytes(&o.stderr), Vec::<u8>::new(), "{stderr}");
    assert!(
        stderr.contains("\\x1b[2J"),
        "the escape shown escaped: {stderr}"
    );
    assert!(o.stderr.len() < 2000, "{stderr}");
}

#[test]
fn a_file_that_is_not_utf8_is_located_at_its_first_such_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "state.yaml",
        b"interfaces:\n- name: eth0\n  description: caf\xe9\n  type: ethernet\n",
    );
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 1);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].1.as_str(), found[0].2), ("yaml-syntax", 3));
    assert!(found[0].4.contains("0xe9"), "{found:?}");
}

#[test]
fn escape_sequences_in_names_are_printed_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    // YAML's own escapes put ESC, BEL and a right-to-left override into the
    // host name; every message about the host names it.
    let f = write(
        tmp.path(),
        "inventory.yaml",
        "nodenet: v1\nhosts:\n- name: \"evil\\e[2J\\e]0;pwned\\a\\u202Eosh\"\n  role: master\n",
    );
    let (o, stderr) = check_human(&[&f]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(control_bytes(&o.stderr), Vec::<u8>::new(), "{stderr}");
    assert!(!stderr.contains('\u{202e}'), "{stderr}");
    assert!(
        stderr.contains("evil\\x1b[2J\\x1b]0;pwned\\x07\\u{202e}osh"),
        "{stderr}"
    );
    // JSON keeps the value, as JSON escapes it.
    let (_, found) = check_json(&[&f]);
    assert!(found
        .iter()
        .any(|d| d.3 == "evil\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}osh"));
}

#[test]
fn a_snippet_of_a_huge_line_is_cut_to_the_screen() {
    let tmp = tempfile::tempdir().unwrap();
    // A 4 MB state on one line (a flow list), wrong at its very end: the
    // whole line used to be printed (and a long enough one panicked
    // miette).
    let mut line = String::from("{\"interfaces\": [");
    for i in 0..100_000 {
        line.push_str(&format!(
            "{{\"name\": \"eth{i}\", \"type\": \"ethernet\"}}, "
        ));
    }
    line.push_str("{\"name\": \"x\", \"type\": \"ethernet\"}], \"bogus\": 1}");
    let f = write(tmp.path(), "state.yaml", &line);
    let (o, stderr) = check_human(&[&f]);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("`bogus`"), "{stderr}");
    assert!(o.stderr.len() < 3000, "{} bytes: {stderr}", o.stderr.len());
    // The snippet line: the part around the finding, with `…` where cut,
    // no wider than COLUMNS (its gutter included).
    let snippet = stderr
        .lines()
        .find(|l| l.contains("│ …"))
        .unwrap_or_else(|| panic!("no cut line: {stderr}"));
    assert!(snippet.contains("\"bogus\": 1}"), "{snippet}");
    assert!(snippet.chars().count() <= 100, "{snippet}");
}

#[test]
fn nested_aliases_do_not_expand_into_billions_of_nodes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    text.push_str("interfaces: *a9\n");
    let f = write(tmp.path(), "bomb.yaml", &text);
    let started = std::time::Instant::now();
    let (code, found) = check_json(&[&f]);
    assert!(started.elapsed().as_secs() < 20);
    assert_eq!(code, 1);
    assert_eq!(codes(&found), ["yaml-syntax"], "{found:?}");
    assert!(found[0].4.contains("aliases expand"), "{found:?}");
}

// ---- 7: one mistake, one finding ----

#[test]
fn an_unknown_pool_in_a_template_is_the_only_finding_and_one_report() {
    let tmp = tempfile::tempdir().unwrap();
    let f = workers_100_with(tmp.path(), "${ip.machine}", "${ip.mgnt}");
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 1);
    // Once per host (JSON is per host), and nothing else: not nmstate's
    // "invalid IP address syntax", not `${ip.mgnt}` as an invalid
    // address, not the route's next hop outside the (unknown) subnet, not
    // a missing rendezvous IP.
    assert_eq!(found.len(), 103, "{:?}", &found[..found.len().min(8)]);
    assert!(
        found
            .iter()
            .all(|d| d.1 == "template-variable" && d.4 == "no IP pool named `mgnt`"),
        "{:?}",
        found.iter().find(|d| d.1 != "template-variable")
    );
    let (_, stderr) = check_human(&[&f]);
    assert_eq!(stderr.matches("template-variable").count(), 1, "{stderr}");
    assert!(
        stderr.contains("[master-0, master-1 and 101 more hosts] no IP pool named `mgnt`"),
        "{stderr}"
    );
    assert!(stderr.lines().count() < 20, "{stderr}");
}

#[test]
fn a_misindented_pool_is_one_finding_at_the_pool() {
    let tmp = tempfile::tempdir().unwrap();
    let f = workers_100_with(
        tmp.path(),
        "  machine:\n    range: 10.20.1.1-10.20.1.254\n    prefix: 16\n    gateway: 10.20.0.1\n    dns: [10.20.0.2, 10.20.0.3]\n",
        "  machine:\n  range: 10.20.1.1-10.20.1.254\n  prefix: 16\n  gateway: 10.20.0.1\n  dns: [10.20.0.2, 10.20.0.3]\n",
    );
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 1);
    assert_eq!(found.len(), 1, "{:?}", &found[..found.len().min(8)]);
    assert_eq!((found[0].1.as_str(), found[0].2), ("missing-field", 23));
    assert!(
        found[0].4.contains("`range`, `prefix`, `gateway`, `dns`"),
        "{found:?}"
    );
}

#[test]
fn a_template_line_wrong_on_every_host_is_one_report_whatever_values_it_names() {
    let tmp = tempfile::tempdir().unwrap();
    let f = workers_100_with(
        tmp.path(),
        "idrac-virtualmedia://10.30.0.${index}",
        "idrac-virtmedia://10.30.0.${index}",
    );
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 1);
    // JSON: one per host, each with its own address.
    assert_eq!(found.len(), 103);
    assert!(found
        .iter()
        .all(|d| d.1 == "bmc-scheme-unknown" && d.2 == 34));
    assert!(found
        .iter()
        .any(|d| d.4.contains("`idrac-virtmedia://10.30.0.99/")));
    // Human: one report naming the hosts, with the first host's value.
    let (_, stderr) = check_human(&[&f]);
    assert_eq!(stderr.matches("bmc-scheme-unknown").count(), 1, "{stderr}");
    assert!(stderr.contains("and 101 more hosts]"), "{stderr}");
    assert!(
        stderr.lines().count() < 20,
        "{} lines:\n{stderr}",
        stderr.lines().count()
    );
}

#[test]
fn nmstates_unplaced_error_beside_a_placed_one_is_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "state.yaml",
        "interfaces:\n- name: eth0\n  type: ethernet\n  state: up\n  ipv4:\n    enabled: true\n    address: [{ip: 10.0.0.256, prefix-length: 24}]\nroutes:\n  config:\n  - {destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: eth0}\n",
    );
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 1);
    // Not nmstate's "invalid IP address syntax" at the top of the file,
    // not the next hop "inside no subnet" of an address that is none.
    assert_eq!(codes(&found), ["ip-invalid"], "{found:?}");
    assert_eq!(found[0].2, 7);
}

// ---- 8: output that a later stage rejects ----

/// A small inventory: one master on DHCP (with `extra` in its cluster),
/// its BMC when `bmc`.
fn small_inventory(dir: &Path, extra: &str, bmc: bool) -> PathBuf {
    let bmc = if bmc {
        "  bmc: {address: 'redfish-virtualmedia://10.1.0.1/redfish/v1/Systems/1', credentials: admin}\n"
    } else {
        ""
    };
    write(
        dir,
        "cluster.yaml",
        format!(
            "nodenet: v1\ncluster: {{name: c, baseDomain: example.com, machineNetworks: [10.0.0.0/24]{extra}}}\ncredentials:\n  admin: {{username: admin, passwordEnv: NODENET_TEST_PW}}\nhosts:\n- name: master-0\n  role: master\n  nics: {{eno1: '52:54:00:00:00:01'}}\n{bmc}  network:\n    interfaces:\n    - {{name: eno1, type: ethernet, state: up, ipv4: {{enabled: true, dhcp: true}}}}\n"
        ),
    )
}

fn render(files: &[&Path], out: &Path, env: &[(&str, &str)]) -> (Output, String) {
    let o = run(nodenet()
        .arg("render")
        .args(files)
        .arg("-o")
        .arg(out)
        .envs(env.iter().copied()));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, stderr)
}

#[test]
fn an_empty_host_list_is_warned_by_check_and_refused_by_render() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "cluster.yaml",
        "nodenet: v1\ncluster: {name: c, baseDomain: example.com, machineNetworks: [10.0.0.0/24]}\nhosts: []\n",
    );
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 0);
    assert_eq!(codes(&found), ["no-hosts"]);
    assert_eq!((found[0].0.as_str(), found[0].2), ("warning", 3));
    let out = tmp.path().join("out");
    let (o, stderr) = render(&[&f], &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no-hosts"), "{stderr}");
    assert!(!out.exists(), "render wrote {out:?}");
}

#[test]
fn a_host_without_bmc_is_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let f = small_inventory(tmp.path(), ", rendezvousIP: 10.0.0.10", false);
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 0);
    assert_eq!(codes(&found), ["bmc-missing"], "{found:?}");
    assert_eq!((found[0].2, found[0].3.as_str()), (6, "master-0"));
    // With its BMC (and the password there): nothing to say.
    let f = small_inventory(tmp.path(), ", rendezvousIP: 10.0.0.10", true);
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(&f)
        .env("NODENET_TEST_PW", "pw"));
    assert_eq!(json(&o)["diagnostics"], serde_json::json!([]));
}

#[test]
fn masters_on_dhcp_without_a_rendezvous_ip_are_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let f = small_inventory(tmp.path(), "", true);
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(&f)
        .env("NODENET_TEST_PW", "pw"));
    let v = json(&o);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(v["diagnostics"][0]["code"], "rendezvous-ip-missing", "{v}");
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 1, "{v}");
    // An inventory's render still writes (installer-provisioned installs
    // need no rendezvous IP)...
    let out = tmp.path().join("out");
    let (o, stderr) = render(&[&f], &out, &[("NODENET_TEST_PW", "pw")]);
    assert!(o.status.success(), "{stderr}");
    // ... and `cluster.rendezvousIP` is the fix: agent-config has it.
    let f = small_inventory(tmp.path(), ", rendezvousIP: 10.0.0.10", true);
    let out = tmp.path().join("out2");
    let (o, stderr) = render(&[&f], &out, &[("NODENET_TEST_PW", "pw")]);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("rendezvous"), "{stderr}");
    let agent = std::fs::read_to_string(out.join("agent-config.yaml")).unwrap();
    assert!(agent.contains("rendezvousIP: 10.0.0.10"), "{agent}");
    // Inputs for the agent installer: render refuses.
    let ac = write(
        tmp.path(),
        "agent-config.yaml",
        "apiVersion: v1beta1\nkind: AgentConfig\nhosts:\n- hostname: master-0\n  role: master\n  interfaces: [{name: eno1, macAddress: '52:54:00:00:00:01'}]\n",
    );
    let out = tmp.path().join("out3");
    let (o, stderr) = render(&[&ac], &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("rendezvous-ip-missing"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn an_unavailable_bmc_password_is_warned_by_check_and_a_placeholder_in_render() {
    if skip_without(&["envsubst"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = small_inventory(tmp.path(), ", rendezvousIP: 10.0.0.10", true);
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 0);
    assert_eq!(codes(&found), ["credentials-unresolved"], "{found:?}");
    assert_eq!((found[0].0.as_str(), found[0].2), ("warning", 4));
    assert!(
        found[0].4.contains("NODENET_TEST_PW is not set")
            && found[0].4.contains("${NODENET_TEST_PW}"),
        "{found:?}"
    );
    // An empty one is no password either.
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(&f)
        .env("NODENET_TEST_PW", ""));
    assert!(json(&o)["diagnostics"][0]["message"]
        .as_str()
        .unwrap()
        .contains("is empty"));
    // Render writes the Secret with the placeholder (a file to keep in
    // git: 0644, no password in it), which envsubst fills.
    let out = tmp.path().join("out");
    let (o, stderr) = render(&[&f], &out, &[("NODENET_TEST_PW", "")]);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("credentials-unresolved"), "{stderr}");
    let path = out.join("scale-out/master-0.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("password: |2-\n    ${NODENET_TEST_PW}\n"),
        "{text}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o644
    );
    let filled = run(std::process::Command::new(tool("envsubst"))
        .env("NODENET_TEST_PW", "p@ss: #w0rd")
        .stdin(std::fs::File::open(&path).unwrap()));
    assert!(filled.status.success());
    let docs: Vec<serde_json::Value> = serde_yaml::Deserializer::from_slice(&filled.stdout)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let secret = docs
        .iter()
        .find(|d| d["metadata"]["name"] == "master-0-bmc-secret")
        .unwrap();
    assert_eq!(secret["stringData"]["password"], "p@ss: #w0rd");
    // The password available, render still writes the placeholder: a
    // password goes into the output tree only when asked for.
    let (o, stderr) = render(&[&f], &out, &[("NODENET_TEST_PW", "s3cret")]);
    assert!(o.status.success(), "{stderr}");
    let secret = std::fs::read_to_string(&path).unwrap();
    assert!(
        secret.contains("${NODENET_TEST_PW}") && !secret.contains("s3cret"),
        "{secret}"
    );
    // --bmc-secrets embed: the Secret carries it, and the file is 0600.
    let o = run(nodenet()
        .args(["render", "--bmc-secrets", "embed"])
        .arg(&f)
        .arg("-o")
        .arg(&out)
        .env("NODENET_TEST_PW", "s3cret"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let secret = std::fs::read_to_string(&path).unwrap();
    assert!(secret.contains("password: s3cret"), "{secret}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

// ---- 11: locations and codes ----

#[test]
fn a_duplicate_pinned_address_points_at_both_ips_lines() {
    let f = repo().join("tests/bad/duplicate-ip-pinned-ips.yaml");
    let (_, found) = check_json(&[&f]);
    let dup: Vec<_> = found.iter().filter(|d| d.1 == "duplicate-ip").collect();
    assert_eq!(dup.len(), 1, "{found:?}");
    assert_eq!((dup[0].2, dup[0].3.as_str()), (25, "master-1"));
    // The other place is master-0's `ips:` line (22), not the template's
    // (17).
    let (_, stderr) = check_human(&[&f]);
    let report: Vec<&str> = stderr
        .split("\n\n")
        .skip_while(|r| !r.starts_with("duplicate-ip"))
        .nth(1)
        .unwrap_or_else(|| panic!("{stderr}"))
        .lines()
        .collect();
    let first = report
        .iter()
        .position(|l| l.starts_with(" 22 │   ips: {bm: 10.0.0.20}"))
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert!(report[first + 2].contains("first used here"), "{report:#?}");
    assert!(
        !report.iter().any(|l| l.starts_with(" 17 │")),
        "{report:#?}"
    );
}

#[test]
fn a_vlan_without_id_is_a_missing_field_not_an_id_out_of_range() {
    let f = repo().join("tests/bad/vlan-no-id.yaml");
    let (code, found) = check_json(&[&f]);
    assert_eq!(code, 1);
    assert_eq!(codes(&found), ["missing-field"], "{found:?}");
    assert_eq!(found[0].2, 10);
}

/// `cluster.noDefaultRoute` says which families the hosts need no default
/// route for: the IPv6-only-on-the-side cluster of
/// tests/bad/default-route-missing-ipv6.yaml is then clean; a family that
/// is none is refused where it is written.
#[test]
fn no_default_route_names_the_families_that_need_none() {
    // (The hosts have no BMC: that warning is beside the point.)
    let errors = |f: &Found| -> Vec<String> {
        f.iter()
            .map(|d| d.1.clone())
            .filter(|c| c != "bmc-missing")
            .collect()
    };
    let tmp = tempfile::tempdir().unwrap();
    let bad =
        std::fs::read_to_string(repo().join("tests/bad/default-route-missing-ipv6.yaml")).unwrap();
    let (code, found) = check_json(&[&repo().join("tests/bad/default-route-missing-ipv6.yaml")]);
    assert_eq!(
        (code, errors(&found)),
        (1, vec!["default-route-missing".to_string()])
    );
    let with = |families: &str| {
        let f = tmp.path().join(format!("c{}.yaml", families.len()));
        std::fs::write(
            &f,
            bad.replace(
                "  baseDomain: example.com\n",
                &format!("  baseDomain: example.com\n  noDefaultRoute: {families}\n"),
            ),
        )
        .unwrap();
        check_json(&[&f])
    };
    let (code, found) = with("[ipv6]");
    assert_eq!(
        (code, errors(&found)),
        (0, Vec::<String>::new()),
        "{found:?}"
    );
    // The other family does not excuse this one.
    let (code, found) = with("[ipv4]");
    assert_eq!(
        (code, errors(&found)),
        (1, vec!["default-route-missing".to_string()])
    );
    let (code, found) = with("[ipv5, ipv6]");
    assert_eq!(
        (code, errors(&found)),
        (1, vec!["invalid-value".to_string()]),
        "{found:?}"
    );
    let invalid = found.iter().find(|d| d.1 == "invalid-value").unwrap();
    assert_eq!(invalid.2, 9, "{found:?}");
}

/// One host copied 30 times more: 30 `duplicate-host-name` findings, of
/// which 20 are shown in full and the rest counted and named in one
/// line; JSON still lists every one.
#[test]
fn findings_of_one_code_past_twenty_are_named_not_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo().join("examples/lacp-vlan.yaml")).unwrap();
    let copy = "- name: worker-9\n  template: node\n  role: worker\n  vars: {uuid: 9b3e0a56-6f0c-4c8e-9d1b-6f1f2e6a0099}\n  nics: {eno1: \"52:54:00:10:99:01\", eno2: \"52:54:00:10:99:02\", eno3: \"52:54:00:10:99:03\"}\n";
    let f = write(
        tmp.path(),
        "copies.yaml",
        format!("{}\n{}", text.trim_end(), copy.repeat(31)),
    );
    let (o, err) = check_human(&[&f]);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let shown = err
        .lines()
        .filter(|l| l.trim() == "duplicate-host-name")
        .count();
    assert_eq!(shown, 20, "{err}");
    assert!(
        err.contains(
            "… and 10 more `duplicate-host-name`: worker-9 ×10 (`--format json` lists every one)"
        ),
        "{err}"
    );
    let (_, found) = check_json(&[&f]);
    assert_eq!(
        codes(&found)
            .iter()
            .filter(|c| **c == "duplicate-host-name")
            .count(),
        30
    );
}
