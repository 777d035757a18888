use super::*;

fn load(text: &str) -> (Inventory, Report) {
    let loaded = nodenet_model::load_texts(vec![("c.yaml".into(), text.into())]);
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    (loaded.inventory, report)
}

const INV: &str = r#"nodenet: v1
cluster:
  name: c
  baseDomain: example.com
  machineNetworks: [10.0.0.0/24]
  provisioning: {network: Managed, interface: eno1}
credentials:
  admin: {username: root, passwordEnv: PW}
pools:
  p: {range: 10.0.0.10-10.0.0.20, prefix: 24, gateway: 10.0.0.1}
templates:
  node:
    role: worker
    bootInterface: eno2
    bmc: {address: "ipmi://root:hunter2@10.1.0.${index}:623", credentials: admin}
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
        link-aggregation: {mode: active-backup, port: [eno2, eno3]}
      - name: bond0.110
        type: vlan
        state: up
        vlan: {base-iface: bond0, id: 110}
        ipv4: {enabled: true, dhcp: false, address: [{ip: "${ip.p}", prefix-length: 24}]}
        ipv6: {enabled: true, dhcp: true, autoconf: true}
      routes:
        config:
        - {destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: bond0.110}
hosts:
- name: w-${index}
  template: node
  count: 5
  nics: {eno1: "52:54:00:00:${index:02x}:01", eno2: "52:54:00:00:${index:02x}:02", eno3: "52:54:00:00:${index:02x}:03"}
"#;

#[test]
fn a_host_row_has_every_interface_its_addresses_and_no_secret() {
    let (inv, report) = load(INV);
    assert!(!report.has_errors(), "{:?}", report.diagnostics);
    let v = views(&inv, &report);
    assert_eq!(v.hosts.len(), 5);
    assert!(v.changes.is_empty());
    let h = &v.hosts[1];
    assert_eq!(h.name, "w-1");
    assert_eq!(h.role, Some("worker"));
    assert_eq!(h.shape, Some(1));
    assert!(v.hosts.iter().all(|h| h.shape == Some(1)));
    assert_eq!(h.boot_mac.as_deref(), Some("52:54:00:00:01:02"));
    assert_eq!(h.boot_interface.as_deref(), Some("eno2"));
    assert_eq!(h.provisioning_interface.as_deref(), Some("eno1"));
    assert!(h.pxe_boot, "ipmi boots over the provisioning network");
    assert_eq!(h.bmc.as_deref(), Some("ipmi://root:***@10.1.0.1:623"));
    assert_eq!(h.gateway_line(), "10.0.0.1");
    assert_eq!(
        h.interfaces_line(),
        "eno1[pxe], eno2[boot MAC], eno3, bond0[active-backup eno2+eno3], \
             bond0.110[vlan 110 on bond0] dhcp6 autoconf6 10.0.0.11/24"
    );
    let bond = &h.interfaces[3];
    assert_eq!(bond.mtu, Some(9000));
    assert!(bond.ipv4.is_none());
    assert_eq!(h.interfaces[2].controller.as_deref(), Some("bond0"));
    assert_eq!(h.interfaces[2].mac.as_deref(), Some("52:54:00:00:01:03"));
    let json = v.to_json().to_string();
    assert!(!json.contains("hunter2"), "{json}");
    assert!(
        json.contains(r#""vlan":{"id":110,"base":"bond0"}"#),
        "{json}"
    );
    let table = v.table();
    assert!(!table.contains("hunter2"));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 6, "{table}");
    assert!(
        lines[0].starts_with("HOST  ROLE    SHAPE  BOOT MAC"),
        "{table}"
    );
    assert!(lines[2].starts_with("w-1   worker  1      52:54:00:00:01:02  ipmi://root:***@10.1.0.1:623  10.0.0.1  eno1[pxe]"), "{table}");
    let csv = v.csv();
    assert!(csv.starts_with("kind,name,role,shape,"), "{csv}");
    assert!(csv.contains("\r\nhost,w-1,worker,1,52:54:00:00:01:02,eno2,eno1,true,ipmi://root:***@10.1.0.1:623,10.0.0.1,,\"eno1[pxe], eno2[boot MAC],"), "{csv}");
}

#[test]
fn changes_are_listed_apart() {
    let nncp = r#"apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata: {name: vlan120}
spec:
  nodeSelector: {node-role.kubernetes.io/worker: ""}
  desiredState:
    interfaces:
    - {name: bond0.120, type: vlan, state: up, vlan: {base-iface: bond0, id: 120}}
"#;
    let loaded = nodenet_model::load_texts(vec![
        ("c.yaml".into(), INV.into()),
        ("nncp.yaml".into(), nncp.into()),
    ]);
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    let v = views(&loaded.inventory, &report);
    assert_eq!(v.hosts.len(), 5);
    assert_eq!(v.changes.len(), 1);
    let c = &v.changes[0];
    assert_eq!(c.name, "nncp/vlan120");
    let table = v.table();
    let (hosts, changes) = table.split_once("\n\n").expect("two tables");
    assert!(!hosts.contains("vlan120"), "{table}");
    assert!(changes.starts_with("CHANGE"), "{table}");
    assert!(
        changes.contains("nodes with node-role.kubernetes.io/worker")
            && changes.contains("bond0.120[vlan 120 on bond0]"),
        "{table}"
    );
    assert!(v.csv().contains("\r\nchange,nncp/vlan120,"));
}

#[test]
fn passwords_in_bmc_urls_are_masked() {
    for (given, shown) in [
        ("redfish://u:p@h/x", "redfish://u:***@h/x"),
        ("redfish://u:p:q@h:8000", "redfish://u:***@h:8000"),
        ("redfish://u@h/x", "redfish://u@h/x"),
        ("redfish://h/x@y", "redfish://h/x@y"),
        ("ipmi://10.0.0.1", "ipmi://10.0.0.1"),
        ("no scheme", "no scheme"),
    ] {
        assert_eq!(mask_userinfo(given), shown, "{given}");
    }
}

#[test]
fn control_characters_cannot_break_a_table_row() {
    let mut out = String::new();
    columns(
        &["A", "B"],
        &[vec!["x\u{1b}[2Jy".into(), "z\nw".into()]],
        &mut out,
    );
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(!out.contains('\u{1b}'), "{out}");
}
