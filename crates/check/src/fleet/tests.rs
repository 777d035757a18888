use super::*;

/// A static storage address beside a DHCP machine network is an
/// ordinary day-2 edit: the node IP is the DHCP one. Without DHCP, a
/// host whose static addresses all lie outside is refused.
#[test]
fn static_addresses_outside_the_machine_network_beside_dhcp_are_fine() {
    let text = |dhcp: bool| {
        format!(
            "nodenet: v1
cluster: {{name: c, baseDomain: example.com, machineNetworks: [192.168.110.0/24]}}
hosts:
- name: w0
  role: worker
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up, ipv4: {{enabled: true, dhcp: {dhcp}}}}}
    - name: eno1.120
      type: vlan
      vlan: {{base-iface: eno1, id: 120}}
      ipv4: {{enabled: true, address: [{{ip: 192.168.120.10, prefix-length: 24}}]}}
"
        )
    };
    let codes = |dhcp: bool| -> Vec<Code> {
        let l = nodenet_model::load_texts(vec![("c.yaml".into(), text(dhcp))]);
        crate::check(&l.inventory, l.diagnostics)
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect()
    };
    assert!(!codes(true).contains(&Code::IpOutsideMachineNetwork));
    assert!(codes(false).contains(&Code::IpOutsideMachineNetwork));
}

#[test]
fn os_image_urls() {
    let h = "a".repeat(64);
    assert!(os_image_ok(&format!(
        "http://10.0.0.2:8080/rhcos.qcow2.gz?sha256={h}"
    )));
    assert!(!os_image_ok("http://10.0.0.2:8080/rhcos.qcow2.gz"));
    assert!(!os_image_ok(&format!("ftp://x/y?sha256={h}")));
    assert!(!os_image_ok(&format!("http://x/y?sha256={}", &h[1..])));
}
