//! The views an engineer reads in the first hour: `nodenet hosts` (table,
//! JSON, CSV), `nodenet show-host`, and `topology.html`, judged by
//! loading it in headless Chromium (Debian's `chromium`) from disk: the
//! DOM after its script ran, and a screenshot.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

/// Two shapes: 150 hosts of a bond + VLAN + bridge template booting over
/// PXE (ipmi), and three of a single-NIC DHCP one; BMC passwords from the
/// environment and in a URL.
const FLEET: &str = r#"nodenet: v1
cluster:
  name: views
  baseDomain: example.com
  machineNetworks: [10.0.0.0/16]
  provisioning: {network: Managed, interface: eno1}
credentials:
  admin: {username: root, passwordEnv: VIEWS_BMC_PASSWORD}
pools:
  p: {range: 10.0.1.1-10.0.9.254, prefix: 16, gateway: 10.0.0.1}
templates:
  big:
    role: worker
    bootInterface: eno1
    bmc: {address: "ipmi://10.1.${index}.1:623", credentials: admin}
    network:
      interfaces:
      - {name: eno1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}}
      - {name: eno2, type: ethernet, state: up}
      - {name: eno3, type: ethernet, state: up}
      - name: bond0
        type: bond
        state: up
        mtu: 9000
        ipv4: {enabled: false}
        ipv6: {enabled: false}
        link-aggregation: {mode: 802.3ad, port: [eno2, eno3]}
      - name: bond0.120
        type: vlan
        state: up
        vlan: {base-iface: bond0, id: 120}
        ipv4: {enabled: false}
        ipv6: {enabled: false}
      - name: br-vm
        type: linux-bridge
        state: up
        bridge: {options: {stp: {enabled: false}}, port: [{name: bond0.120}]}
        ipv4: {enabled: true, dhcp: false, address: [{ip: "${ip.p}", prefix-length: 16}]}
        ipv6: {enabled: false}
      routes:
        config: [{destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: br-vm}]
  small:
    role: master
    bootInterface: eno1
    bmc: {address: "redfish-virtualmedia://admin:hunter2@10.2.0.${index}/redfish/v1/Systems/1"}
    network:
      interfaces:
      - {name: eno1, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}, ipv6: {enabled: false}}
hosts:
- name: master-${index}
  template: small
  count: 3
  nics: {eno1: "52:54:00:aa:00:${index:02x}"}
- name: worker-${index:03}
  template: big
  count: 150
  nics:
    eno1: "${index:mac 52:54:00:01:00:00}"
    eno2: "${index:mac 52:54:00:02:00:00}"
    eno3: "${index:mac 52:54:00:03:00:00}"
"#;

const PASSWORD: &str = "s3cr3t-views-pw";

fn fleet(dir: &Path) -> PathBuf {
    write(dir, "fleet.yaml", FLEET)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Parses RFC 4180 CSV (quoted fields, doubled quotes, CRLF rows).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    rows
}

#[test]
fn hosts_shows_every_host_in_table_json_and_csv_and_no_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = fleet(tmp.path());
    let hosts = |format: &str| {
        let o = run(nodenet()
            .args(["hosts", "--format", format])
            .arg(&inv)
            .env("VIEWS_BMC_PASSWORD", PASSWORD));
        assert_eq!(o.status.code(), Some(0), "{format}: {}", stderr(&o));
        for secret in [PASSWORD, "hunter2"] {
            assert!(!stdout(&o).contains(secret), "{format}: {secret}");
            assert!(!stderr(&o).contains(secret), "{format}: {secret}");
        }
        stdout(&o)
    };

    let table = hosts("table");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 1 + 153, "{table}");
    assert!(
        lines[0].starts_with("HOST        ROLE    SHAPE  BOOT MAC "),
        "{}",
        lines[0]
    );
    let w7 = lines.iter().find(|l| l.starts_with("worker-007 ")).unwrap();
    for part in [
        " worker ",
        " 52:54:00:01:00:07 ",
        " ipmi://10.1.7.1:623 ",
        " 10.0.0.1 ",
        "eno1[pxe, boot MAC], eno2, eno3, bond0[802.3ad eno2+eno3], bond0.120[vlan 120 on bond0], br-vm[linux-bridge bond0.120] 10.0.1.8/16",
    ] {
        assert!(w7.contains(part), "{part:?} not in {w7}");
    }
    let m1 = lines.iter().find(|l| l.starts_with("master-1 ")).unwrap();
    assert!(
        m1.contains("redfish-virtualmedia://admin:***@10.2.0.1/redfish/v1/Systems/1"),
        "{m1}"
    );
    assert!(
        m1.contains(" dhcp ") && m1.ends_with("eno1[provisioning, boot MAC] dhcp4"),
        "{m1}"
    );

    let v: serde_json::Value = serde_json::from_str(&hosts("json")).unwrap();
    // A fleet of workers only: agent-config gets no rendezvousIP (a
    // warning), nothing else.
    let codes: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["rendezvous-ip-missing"], "{}", v["diagnostics"]);
    assert_eq!(v["changes"], serde_json::json!([]));
    let list = v["hosts"].as_array().unwrap();
    assert_eq!(list.len(), 153);
    let w7 = list.iter().find(|h| h["name"] == "worker-007").unwrap();
    assert_eq!(w7["role"], "worker");
    assert_eq!(w7["shape"], 2);
    assert_eq!(w7["boot_mac"], "52:54:00:01:00:07");
    assert_eq!(w7["boot_interface"], "eno1");
    assert_eq!(w7["provisioning_interface"], "eno1");
    assert_eq!(w7["pxe_boot"], true);
    assert_eq!(
        w7["gateways"],
        serde_json::json!([{"address": "10.0.0.1", "interface": "br-vm"}])
    );
    let iface = |name: &str| {
        w7["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        iface("bond0")["bond"],
        serde_json::json!({"mode": "802.3ad", "ports": ["eno2", "eno3"]})
    );
    assert_eq!(iface("bond0")["mtu"], 9000);
    assert_eq!(
        iface("bond0.120")["vlan"],
        serde_json::json!({"id": 120, "base": "bond0"})
    );
    assert_eq!(
        iface("br-vm")["bridge"]["ports"],
        serde_json::json!(["bond0.120"])
    );
    assert_eq!(
        iface("br-vm")["ipv4"]["addresses"],
        serde_json::json!(["10.0.1.8/16"])
    );
    assert_eq!(iface("eno2")["controller"], "bond0");
    assert_eq!(iface("eno2")["mac"], "52:54:00:02:00:07");
    // Every worker is one shape, the masters another.
    let shapes: std::collections::BTreeSet<i64> =
        list.iter().map(|h| h["shape"].as_i64().unwrap()).collect();
    assert_eq!(shapes.into_iter().collect::<Vec<_>>(), [1, 2]);

    let csv = parse_csv(&hosts("csv"));
    assert_eq!(csv.len(), 154);
    assert_eq!(csv[0][..4], ["kind", "name", "role", "shape"]);
    assert!(csv.iter().all(|r| r.len() == csv[0].len()));
    let col = |name: &str| csv[0].iter().position(|c| c == name).unwrap();
    let w7 = csv.iter().find(|r| r[1] == "worker-007").unwrap();
    assert_eq!(w7[col("kind")], "host");
    assert_eq!(w7[col("pxe_boot")], "true");
    assert_eq!(w7[col("gateway")], "10.0.0.1");
    assert!(w7[col("interfaces")].ends_with("br-vm[linux-bridge bond0.120] 10.0.1.8/16"));
}

#[test]
fn hosts_of_an_input_with_errors_are_shown_and_the_errors_said_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = write(
        tmp.path(),
        "bad.yaml",
        "nodenet: v1\nhosts:\n- name: Bad_Name\n  network:\n    interfaces:\n    - {name: eth0, type: ethernet, state: up}\n    - {name: eth0.5000, type: vlan, state: up, vlan: {base-iface: eth0, id: 5000}}\n",
    );
    let o = run(nodenet().arg("hosts").arg(&inv));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.lines().nth(1).is_some_and(
            |l| l.starts_with("Bad_Name") && l.contains("eth0.5000[vlan 5000 on eth0]")
        ),
        "{out}"
    );
    let err = stderr(&o);
    assert!(
        err.contains("host-name-invalid") && err.contains("vlan-id-range"),
        "{err}"
    );
    assert!(err.contains("failed: the input has errors"), "{err}");
    // As JSON: one object with the diagnostics and the hosts.
    let o = run(nodenet().args(["hosts", "--format", "json"]).arg(&inv));
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hosts"][0]["name"], "Bad_Name");
    assert!(v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["code"] == "vlan-id-range"));
    // show-host shows its state all the same.
    let o = run(nodenet().args(["show-host", "Bad_Name"]).arg(&inv));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("id: 5000"), "{}", stdout(&o));
    assert!(stderr(&o).contains("vlan-id-range"));
    // A missing file is a usage/IO error.
    let o = run(nodenet().args(["hosts", "/nonexistent/x.yaml"]));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn hosts_lists_changes_apart_from_hosts() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = repo().join("examples/lacp-vlan.yaml");
    let nncp = write(
        tmp.path(),
        "nncp.yaml",
        "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata: {name: vlan120}\nspec:\n  nodeSelector: {node-role.kubernetes.io/worker: \"\"}\n  desiredState:\n    interfaces:\n    - {name: bond0.120, type: vlan, state: up, vlan: {base-iface: bond0, id: 120}}\n",
    );
    let o = run(nodenet().arg("hosts").arg(&inv).arg(&nncp));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let (hosts, changes) = out.split_once("\n\n").expect("two tables");
    assert_eq!(hosts.lines().count(), 5, "{out}");
    assert!(!hosts.contains("vlan120"));
    let changes: Vec<&str> = changes.lines().collect();
    assert!(changes[0].starts_with("CHANGE"), "{out}");
    assert!(
        changes[1].starts_with("nncp/vlan120")
            && changes[1].contains("nodes with node-role.kubernetes.io/worker")
            && changes[1].contains("bond0.120[vlan 120 on bond0]"),
        "{out}"
    );
    let o = run(nodenet()
        .args(["hosts", "--format", "json"])
        .arg(&inv)
        .arg(&nncp));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hosts"].as_array().unwrap().len(), 4);
    assert_eq!(v["changes"][0]["name"], "nncp/vlan120");
    assert_eq!(v["changes"][0]["input"], "NodeNetworkConfigurationPolicy");
}

#[test]
fn show_host_prints_the_state_render_writes() {
    let tmp = tempfile::tempdir().unwrap();
    for ex in examples() {
        let out = tmp.path().join(ex.file_stem().unwrap());
        let o = run(nodenet().arg("render").arg(&ex).arg("-o").arg(&out));
        assert!(o.status.success(), "{}", stderr(&o));
        for host in fs::read_dir(out.join("hosts")).unwrap() {
            let host = host.unwrap().file_name().to_string_lossy().into_owned();
            let o = run(nodenet().arg("show-host").arg(&host).arg(&ex));
            assert_eq!(o.status.code(), Some(0), "{host}: {}", stderr(&o));
            let written =
                fs::read_to_string(out.join("hosts").join(&host).join("nmstate.yml")).unwrap();
            assert_eq!(stdout(&o), written, "{ex:?} {host}");
        }
    }
    // copy-mac-from is pinned as in the rendered file.
    let br_ex = repo().join("examples/static-masters-br-ex.yaml");
    let o = run(nodenet().args(["show-host", "master-1"]).arg(&br_ex));
    assert!(
        stdout(&o).contains("mac-address: 00:5C:5A:8E:A1:11"),
        "{}",
        stdout(&o)
    );
    // An unknown host is a usage error that names the hosts there are.
    let o = run(nodenet().args(["show-host", "master-9"]).arg(&br_ex));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no host named `master-9` (hosts: master-0, master-1, master-2)"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn render_writes_topology_html_and_lists_it_in_the_manifest() {
    if skip_without(&["sha256sum"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run(nodenet()
        .arg("render")
        .arg(fleet(tmp.path()))
        .arg("-o")
        .arg(&out)
        .env("VIEWS_BMC_PASSWORD", PASSWORD));
    assert!(o.status.success(), "{}", stderr(&o));
    let page = fs::read(out.join("topology.html")).unwrap();
    let text = String::from_utf8(page.clone()).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>"));
    assert!(!text.contains(PASSWORD) && !text.contains("hunter2"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let entry = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "topology.html")
        .expect("topology.html in manifest.json");
    assert_eq!(entry["mode"], "0644");
    assert_eq!(entry["size"], page.len());
    let sha = run(Command::new(tool("sha256sum")).arg(out.join("topology.html")));
    assert!(stdout(&sha).starts_with(entry["sha256"].as_str().unwrap()));
    // A render of changes only shows them too.
    let day2 = write(
        tmp.path(),
        "day2.yml",
        "interfaces:\n- {name: eth0.7, type: vlan, state: up, vlan: {base-iface: eth0, id: 7}}\n",
    );
    let out2 = tmp.path().join("out2");
    let o = run(nodenet().arg("render").arg(&day2).arg("-o").arg(&out2));
    assert!(o.status.success(), "{}", stderr(&o));
    let page = fs::read_to_string(out2.join("topology.html")).unwrap();
    assert!(
        page.contains("<td>day2</td>") && page.contains("eth0.7[vlan 7 on eth0]"),
        "{page}"
    );
}

// ---------------------------------------------------------------------
// Chromium

/// Headless Chromium on a file, with a new profile, killed after 120 s.
fn chromium(args: &[&str], url: &str) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(tool("chromium"))
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("chromium");
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish in 120 s: {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn file_url(path: &Path, fragment: &str) -> String {
    format!("file://{}{fragment}", path.display())
}

/// The DOM after the page's script ran, as Chromium serialises it.
fn dom(page: &Path, fragment: &str) -> String {
    let o = chromium(&["--dump-dom"], &file_url(page, fragment));
    assert!(o.status.success(), "{}", stderr(&o));
    let dom = stdout(&o);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not finish: {dom}"
    );
    dom
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// The text of the cells of each row of the host table's body.
fn table_rows(dom: &str) -> Vec<Vec<String>> {
    let table = &dom[dom.find("<table id=\"hosts\"").unwrap()..];
    let body = &table[table.find("<tbody>").unwrap() + 7..table.find("</tbody>").unwrap()];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let text = &cell[cell.find('>').unwrap() + 1..cell.find("</td>").unwrap()];
                    unescape(text)
                })
                .collect()
        })
        .collect()
}

fn attr(dom: &str, element_start: &str, name: &str) -> String {
    let el = &dom[dom.find(element_start).unwrap()..];
    let el = &el[..el.find('>').unwrap()];
    let v = &el[el.find(&format!("{name}=\"")).unwrap() + name.len() + 2..];
    v[..v.find('"').unwrap()].to_string()
}

fn text_of(dom: &str, element_start: &str) -> String {
    let el = &dom[dom.find(element_start).unwrap()..];
    let el = &el[el.find('>').unwrap() + 1..];
    unescape(&el[..el.find('<').unwrap()])
}

#[test]
fn topology_page_in_chromium_draws_each_shape_and_pages_the_fleet() {
    if skip_without(&["chromium"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let inv = fleet(tmp.path());
    let out = tmp.path().join("out");
    let o = run(nodenet()
        .arg("render")
        .arg(&inv)
        .arg("-o")
        .arg(&out)
        .env("VIEWS_BMC_PASSWORD", PASSWORD));
    assert!(o.status.success(), "{}", stderr(&o));
    let page = out.join("topology.html");

    let d = dom(&page, "");
    // One diagram per shape, the larger first.
    assert_eq!(d.matches("<svg class=\"diagram\"").count(), 2);
    let first = &d[d.find("<article class=\"shape\"").unwrap()..d.find("</article>").unwrap()];
    assert!(first.contains("data-hosts=\"150\""), "{first}");
    for name in ["eno1", "eno2", "eno3", "bond0", "bond0.120", "br-vm"] {
        assert!(first.contains(&format!("data-name=\"{name}\"")), "{name}");
    }
    for (from, to) in [
        ("eno2", "bond0"),
        ("eno3", "bond0"),
        ("bond0", "bond0.120"),
        ("bond0.120", "br-vm"),
    ] {
        assert!(
            first.contains(&format!("data-from=\"{from}\" data-to=\"{to}\"")),
            "{from} -> {to}"
        );
    }
    // The PXE NIC is marked, in its own box.
    let eno1 = &first[first.find("data-name=\"eno1\"").unwrap()..];
    let eno1 = &eno1[..eno1.find("</g>\n").unwrap_or(eno1.len())];
    assert!(
        eno1.contains(">PXE<") && eno1.contains(">boot MAC<"),
        "{eno1}"
    );
    let br = &first[first.find("data-name=\"br-vm\"").unwrap()..];
    assert!(
        br[..br.find("</g>").unwrap()].contains(">10.0.1.1/16<"),
        "the first worker's address"
    );

    // The table: 100 rows of 153 on page 1, with what `nodenet hosts` says.
    assert_eq!(attr(&d, "<table id=\"hosts\"", "data-matching"), "153");
    let rows = table_rows(&d);
    assert_eq!(rows.len(), 100);
    assert_eq!(text_of(&d, "<span id=\"range\""), "1–100 of 153, page 1/2");
    let csv = parse_csv(&stdout(&run(nodenet()
        .args(["hosts", "--format", "csv"])
        .arg(&inv))));
    let col = |name: &str| csv[0].iter().position(|c| c == name).unwrap();
    for row in &rows {
        let line = csv.iter().find(|r| r[1] == row[0]).unwrap();
        assert_eq!(row[6], line[col("interfaces")], "{}", row[0]);
        assert_eq!(row[3], line[col("boot_mac")], "{}", row[0]);
        assert_eq!(row[4], line[col("bmc")], "{}", row[0]);
    }
    // Page 2, a filter, a shape: from the address, as a person links them.
    let d = dom(&page, "#page=2");
    assert_eq!(table_rows(&d).len(), 53);
    assert_eq!(
        text_of(&d, "<span id=\"range\""),
        "101–153 of 153, page 2/2"
    );
    let d = dom(&page, "#q=10.0.1.2");
    let names: Vec<String> = table_rows(&d).into_iter().map(|r| r[0].clone()).collect();
    // worker-N has 10.0.1.(N+1): 10.0.1.2 and 10.0.1.20-29.
    let want: Vec<String> = std::iter::once(1)
        .chain(19..=28)
        .map(|n| format!("worker-{n:03}"))
        .collect();
    assert_eq!(names, want);
    assert_eq!(
        text_of(&d, "<span id=\"range\""),
        "1–11 of 11 (of 153), page 1/1"
    );
    let d = dom(&page, "#shape=1");
    let names: Vec<String> = table_rows(&d).into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(names, ["master-0", "master-1", "master-2"]);

    // A screenshot: the size asked for, and the diagrams' colours in it.
    let png = tmp.path().join("shot.png");
    let o = chromium(
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1280,900",
        ],
        &file_url(&page, ""),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = fs::read(&png).unwrap();
    let (w, h, pixels) = decode_png(&bytes);
    assert_eq!((w, h), (1280, 900));
    let count = |rgb: [u8; 3]| pixels.iter().filter(|p| **p == rgb).count();
    let nic = count([0xdc, 0xe8, 0xfb]);
    let bond = count([0xfd, 0xe3, 0xcf]);
    let vlan = count([0xd9, 0xf2, 0xdf]);
    let bridge = count([0xea, 0xdc, 0xf8]);
    let pxe = count([0xc0, 0x39, 0x2b]);
    eprintln!(
        "screenshot {w}x{h}, {} bytes: NIC {nic} px, bond {bond}, VLAN {vlan}, bridge {bridge}, PXE badge {pxe}",
        bytes.len()
    );
    assert!(nic > 5000 && bond > 1000 && vlan > 1000 && bridge > 1000 && pxe > 100);
}

#[test]
fn topology_page_in_chromium_shows_hostile_input_as_text_and_runs_none_of_it() {
    if skip_without(&["chromium"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // Everything here passes check: a cluster name, a BMC address and an
    // interface name (Linux allows `<`, quotes and `&` in one).
    let inv = write(
        tmp.path(),
        "inv.yaml",
        r#"nodenet: v1
cluster:
  name: "<script>document.title='pwned'</script>"
  provisioning: {network: Disabled}
hosts:
- name: m-0
  role: master
  bootMACAddress: "52:54:00:00:00:01"
  bmc:
    address: "redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/<img src=x onerror=document.title='pwned'>\"'"
  nics: {eno1: "52:54:00:00:00:01"}
  network:
    interfaces:
    - {name: eno1, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}}
    - {name: "<b>\"'&x", type: dummy, state: up}
"#,
    );
    let out = tmp.path().join("out");
    let o = run(nodenet()
        .arg("render")
        .arg(&inv)
        .arg("-o")
        .arg(&out)
        .env("VIEWS_BMC_PASSWORD", PASSWORD));
    assert!(o.status.success(), "{}", stderr(&o));
    let page = out.join("topology.html");
    let d = dom(&page, "");
    // Nothing ran: the title is the text it was given.
    assert_eq!(
        text_of(&d, "<title"),
        "<script>document.title='pwned'</script> — nodenet topology"
    );
    // No element came from the input: only the page's own two scripts,
    // no image, no <b>.
    assert_eq!(d.matches("<script").count(), 2, "{d}");
    assert!(!d.contains("<img") && !d.contains("<b>\""), "{d}");
    // The text shows as text: in the table, the diagram and the heading.
    let rows = table_rows(&d);
    assert_eq!(
        rows[0][4],
        "redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/<img src=x onerror=document.title='pwned'>\"'"
    );
    assert!(rows[0][6].contains("<b>\"'&x[dummy]"), "{:?}", rows[0]);
    assert!(
        d.contains("<text x=") && d.contains(">&lt;b&gt;\"'&amp;x</text>"),
        "{d}"
    );
    assert_eq!(
        text_of(&d, "<h1"),
        "<script>document.title='pwned'</script> — nodenet topology"
    );
}

#[test]
fn topology_page_of_thousands_of_hosts_stays_small_and_draws_one_page() {
    if skip_without(&["chromium"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let inv = write(
        tmp.path(),
        "big.yaml",
        &FLEET
            .replace("count: 150", "count: 3000")
            .replace("10.0.1.1-10.0.9.254", "10.0.1.1-10.0.99.254"),
    );
    let out = tmp.path().join("out");
    let o = run(nodenet()
        .arg("render")
        .arg(&inv)
        .arg("-o")
        .arg(&out)
        .env("VIEWS_BMC_PASSWORD", PASSWORD));
    assert!(o.status.success(), "{}", stderr(&o));
    let page = out.join("topology.html");
    let size = fs::metadata(&page).unwrap().len();
    // Two diagrams and about a hundred bytes of data per host.
    assert!(size < 3003 * 150, "{size} bytes");
    let d = dom(&page, "#page=30");
    assert_eq!(d.matches("<svg class=\"diagram\"").count(), 2);
    let rows = table_rows(&d);
    assert_eq!(rows.len(), 100);
    assert_eq!(rows[0][0], "worker-2897");
    assert_eq!(
        text_of(&d, "<span id=\"range\""),
        "2901–3000 of 3003, page 30/31"
    );
}

/// Pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium
/// writes), as RGB.
fn decode_png(bytes: &[u8]) -> (usize, usize, Vec<[u8; 3]>) {
    use std::io::Read;
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let mut at = 8;
    let (mut w, mut h, mut channels) = (0, 0, 0);
    let mut idat = Vec::new();
    while at + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = &bytes[at + 4..at + 8];
        let data = &bytes[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("colour type {t}"),
                };
                assert_eq!(data[12], 0, "interlaced");
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = w * channels;
    assert_eq!(raw.len(), h * (stride + 1));
    let mut img = vec![0u8; h * stride];
    for y in 0..h {
        let filter = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for x in 0..stride {
            let a = if x >= channels {
                img[y * stride + x - channels]
            } else {
                0
            };
            let b = if y > 0 { img[(y - 1) * stride + x] } else { 0 };
            let c = if x >= channels && y > 0 {
                img[(y - 1) * stride + x - channels]
            } else {
                0
            };
            let v = match filter {
                0 => line[x],
                1 => line[x].wrapping_add(a),
                2 => line[x].wrapping_add(b),
                3 => line[x].wrapping_add(((a as u16 + b as u16) / 2) as u8),
                4 => {
                    let p = a as i16 + b as i16 - c as i16;
                    let (pa, pb, pc) = (
                        (p - a as i16).abs(),
                        (p - b as i16).abs(),
                        (p - c as i16).abs(),
                    );
                    let pred = if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    };
                    line[x].wrapping_add(pred)
                }
                f => panic!("filter {f}"),
            };
            img[y * stride + x] = v;
        }
    }
    let pixels = img.chunks(channels).map(|p| [p[0], p[1], p[2]]).collect();
    (w, h, pixels)
}
