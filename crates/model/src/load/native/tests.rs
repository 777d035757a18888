use super::*;
use crate::{Diagnostic, Loaded};

/// A `count` entry of `n` hosts after a 3-host entry; pool
/// 10.0.0.1-`last` with gateway .1 and DNS .2, VIP .5, and .7 written
/// literally on the small entry's hosts.
fn inventory(n: usize, last: &str, extra_vars: &str) -> String {
    format!(
        r#"nodenet: v1
cluster: {{name: c, baseDomain: example.com, machineNetworks: [10.0.0.0/16], apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.6]}}
pools:
  bm: {{range: 10.0.0.1-{last}, prefix: 16, gateway: 10.0.0.1, dns: [10.0.0.2]}}
templates:
  w:
    role: worker
    vars: {{rack: "r${{index}}"{extra_vars}}}
    nics: {{eno1: "${{index:mac 52:54:00:00:00:00}}"}}
    network:
      interfaces:
      - {{name: eno1, type: ethernet, state: up, ipv4: {{enabled: true, address: [{{ip: "${{ip.bm}}", prefix-length: 16}}]}}}}
hosts:
- name: m-${{index}}
  count: 3
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up, ipv4: {{enabled: true, address: [{{ip: 10.0.0.7, prefix-length: 16}}]}}}}
- name: w-${{index:04}}
  template: w
  count: {n}
"#
    )
}

fn load(text: String) -> Loaded {
    super::super::load_texts(vec![("c.yaml".into(), text)])
}

fn address(h: &Host) -> String {
    h.network
        .as_ref()
        .unwrap()
        .get("interfaces")
        .unwrap()
        .as_seq()
        .unwrap()[0]
        .get("ipv4")
        .and_then(|v| v.get("address"))
        .and_then(Node::as_seq)
        .map(|a| a[0].get("ip").unwrap().scalar_text().unwrap())
        .unwrap_or_default()
}

/// Large entries are built in parallel on addresses drawn in advance:
/// host i still gets the i-th free address in ascending order, every
/// literal and reserved address skipped, and its own name, MAC and
/// variables.
#[test]
fn a_large_entry_draws_addresses_in_host_order() {
    let loaded = load(inventory(300, "10.0.3.255", ""));
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let reserved = ["10.0.0.1", "10.0.0.2", "10.0.0.5", "10.0.0.6", "10.0.0.7"];
    let expected: Vec<String> = (1u32..)
        .map(|n| std::net::Ipv4Addr::from(0x0a00_0000 + n).to_string())
        .filter(|ip| !reserved.contains(&ip.as_str()))
        .take(300)
        .collect();
    let workers: Vec<&Host> = loaded.inventory.hosts.iter().skip(3).collect();
    assert_eq!(workers.len(), 300);
    for (i, h) in workers.iter().enumerate() {
        assert_eq!(h.name.value, format!("w-{i:04}"));
        assert_eq!(address(h), expected[i], "{}", h.name.value);
        assert_eq!(
            h.nics[0].mac.as_ref().unwrap().value,
            format!("52:54:00:00:{:02x}:{:02x}", i / 256, i % 256)
        );
    }
}

/// A pool that runs out part way is reported once, at the pool, as
/// when hosts are expanded one at a time; the hosts before it have
/// their addresses.
#[test]
fn a_large_entry_that_exhausts_its_pool_is_reported_once() {
    let loaded = load(inventory(100, "10.0.0.80", ""));
    let exhausted: Vec<&Diagnostic> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::PoolExhausted)
        .collect();
    assert_eq!(exhausted.len(), 1, "{:?}", loaded.diagnostics);
    let workers: Vec<&Host> = loaded.inventory.hosts.iter().skip(3).collect();
    assert_eq!(workers.len(), 100);
    // .1 .2 .5 .6 .7 are taken: 75 of .1-.80 are left.
    assert_eq!(address(workers[0]), "10.0.0.3");
    assert_eq!(address(workers[74]), "10.0.0.80");
    // The rest keep the placeholder (the finding is at the pool).
    assert_eq!(address(workers[75]), "${ip.bm}");
}

/// A mistake that shows on every host is found on every host.
#[test]
fn a_large_entry_reports_each_hosts_own_finding() {
    let loaded = load(inventory(80, "10.0.3.255", ", bad: \"${nope}\""));
    let unknown = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::TemplateVariable)
        .count();
    assert_eq!(unknown, 80, "{:?}", loaded.diagnostics.first());
    assert_eq!(loaded.inventory.hosts.len(), 83);
}

/// A large entry whose first host is clean and whose later hosts are not
/// (their MACs run past ff:ff:ff:ff:ff:ff) is built again one host at a
/// time: each host once, in order, each failing host with its finding.
#[test]
fn a_large_entry_failing_after_its_first_host_is_built_once_per_host() {
    let text = inventory(100, "10.0.3.255", "").replace(
        "52:54:00:00:00:00",
        "ff:ff:ff:ff:ff:c0", // 64 MACs left: hosts 64-99 have none
    );
    let loaded = load(text);
    let bad_mac = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::TemplateVariable)
        .count();
    assert_eq!(bad_mac, 36, "{:?}", loaded.diagnostics.first());
    // Each said once, as what it is: no `mac-invalid` of the placeholder
    // left behind.
    let first = loaded
        .diagnostics
        .iter()
        .find(|d| d.code == Code::TemplateVariable)
        .unwrap();
    assert_eq!(
        first.message,
        "`${index:mac ff:ff:ff:ff:ff:c0}` runs past the last MAC address (ff:ff:ff:ff:ff:ff) at index 64"
    );
    assert!(
        !loaded
            .diagnostics
            .iter()
            .any(|d| d.code == Code::MacInvalid),
        "{:?}",
        loaded.diagnostics
    );
    let workers: Vec<&Host> = loaded.inventory.hosts.iter().skip(3).collect();
    assert_eq!(workers.len(), 100);
    for (i, h) in workers.iter().enumerate() {
        assert_eq!(h.name.value, format!("w-{i:04}"));
    }
    // .1 .2 .5 .6 .7 are taken, as on the first try.
    assert_eq!(address(workers[99]), "10.0.0.105");
}

/// A MAC the expansion could not make is said once (by the expansion); a
/// MAC that is no MAC and holds no whole placeholder is still one.
#[test]
fn a_mac_left_as_a_placeholder_is_reported_once() {
    let text = "nodenet: v1\ncluster: {name: c, baseDomain: example.com}\nhosts:\n- name: a\n  nics: {eno1: \"${nope}\", eno2: \"52:54:${oops\"}\n  bootMACAddress: \"${nope}\"\n";
    let loaded = load(text.to_string());
    let codes: Vec<(Code, u32)> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.code, d.span.map(|s| s.column).unwrap_or(0)))
        .collect();
    assert_eq!(
        codes,
        [
            (Code::TemplateVariable, 16),
            (Code::MacInvalid, 33),
            (Code::TemplateVariable, 19)
        ],
        "{:?}",
        loaded.diagnostics
    );
}
