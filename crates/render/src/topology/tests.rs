use super::*;
use crate::views::views;

fn page_of(text: &str) -> String {
    let loaded = nodenet_model::load_texts(vec![("c.yaml".into(), text.into())]);
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    page(&loaded.inventory, &views(&loaded.inventory, &report))
}

const INV: &str = r#"nodenet: v1
cluster: {name: lab, provisioning: {network: Managed, interface: eno1}}
pools:
  p: {range: 10.0.0.10-10.0.0.200, prefix: 24, gateway: 10.0.0.1}
templates:
  node:
    role: worker
    bootInterface: eno1
    bmc: {address: "ipmi://10.1.0.${index}"}
    network:
      interfaces:
      - {name: eno1, type: ethernet, state: up}
      - {name: eno2, type: ethernet, state: up}
      - name: bond0
        type: bond
        state: up
        link-aggregation: {mode: active-backup, port: [eno1, eno2]}
      - name: bond0.10
        type: vlan
        state: up
        vlan: {base-iface: bond0, id: 10}
        ipv4: {enabled: true, address: [{ip: "${ip.p}", prefix-length: 24}]}
      - name: br0
        type: linux-bridge
        state: up
        bridge: {port: [{name: bond0.10}]}
hosts:
- {name: "w-${index}", template: node, count: 6, nics: {eno1: "52:54:00:00:00:${index:02x}"}}
- name: odd
  template: node
  nics: {eno1: "52:54:00:00:01:01"}
  bmc: {address: "ipmi://10.1.1.1"}
  network:
    interfaces:
    - {name: eno1, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}}
"#;

#[test]
fn one_diagram_per_shape_with_every_layer() {
    let html = page_of(INV);
    assert_eq!(html.matches("<svg class=\"diagram\"").count(), 2, "{html}");
    // The six hosts of the template are one shape, drawn first.
    let first = &html[html.find("<article").unwrap()..html.find("</article>").unwrap()];
    assert!(first.contains("data-hosts=\"6\""), "{first}");
    assert!(first.contains("Drawn from <b>w-0</b>"), "{first}");
    for name in ["eno1", "eno2", "bond0", "bond0.10", "br0"] {
        assert!(first.contains(&format!("data-name=\"{name}\"")), "{name}");
    }
    // Edges: ports to the bond, the bond to its VLAN, the VLAN to the bridge.
    for (from, to) in [
        ("eno1", "bond0"),
        ("eno2", "bond0"),
        ("bond0", "bond0.10"),
        ("bond0.10", "br0"),
    ] {
        assert!(
            first.contains(&format!("data-from=\"{from}\" data-to=\"{to}\"")),
            "{from} -> {to}"
        );
    }
    assert!(first.contains(">10.0.0.10/24<"), "the first host's address");
    assert!(first.contains(">PXE<") && first.contains(">boot MAC<"));
    // Columns left to right: NIC, bond, VLAN, bridge.
    let x = |name: &str| -> f64 {
        let at = first.find(&format!("data-name=\"{name}\"")).unwrap();
        let rest = &first[at..];
        let x = &rest[rest.find("<rect x=\"").unwrap() + 9..];
        x[..x.find('"').unwrap()].parse().unwrap()
    };
    assert!(x("eno1") < x("bond0") && x("bond0") < x("bond0.10") && x("bond0.10") < x("br0"));
    assert_eq!(x("eno1"), x("eno2"));
    // Every host in the data, none drawn as its own diagram.
    assert!(html.contains("[\"w-5\",\"worker\",1,"), "{html}");
    // BMC addresses after the first are coded against the previous one.
    assert!(html.contains("\"ipmi://10.1.0.0\""), "{html}");
    assert!(html.contains("[14,\"1\"]"), "{html}");
}

#[test]
fn input_text_is_escaped_everywhere() {
    let hostile = "<script>alert(1)</script>\"'&";
    let mut host = nodenet_model::Host::new(
        nodenet_model::Located::new(hostile.to_string(), Default::default()),
        nodenet_model::InputKind::Inventory,
    );
    let net = format!(
        "interfaces:\n- name: '{}'\n  type: ethernet\n  state: up\n",
        "<img src=x onerror=alert(2)>".replace('\'', "''")
    );
    host.network = Some(nodenet_model::yaml::parse(&net, 0).unwrap());
    let inv = Inventory {
        hosts: vec![host],
        ..Inventory::default()
    };
    let mut cluster = inv.cluster.clone();
    cluster.name = Some(nodenet_model::Located::new(
        "</title><script>alert(3)</script>".into(),
        Default::default(),
    ));
    let inv = Inventory { cluster, ..inv };
    let report = nodenet_check::check(&inv, Vec::new());
    let html = page(&inv, &views(&inv, &report));
    // Exactly our two script elements, and no element from the input.
    assert_eq!(html.matches("<script").count(), 2, "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;"));
    assert!(html.contains("&lt;/title&gt;&lt;script&gt;alert(3)&lt;/script&gt;"));
    // In the JSON block, `<` never appears raw.
    let data = &html[html.find("id=\"fleet-data\">").unwrap()..];
    let data = &data[..data.find("</script>").unwrap()];
    assert!(!data.contains('<'), "{data}");
    let json: J = serde_json::from_str(&data[data.find('>').unwrap() + 1..]).unwrap();
    assert_eq!(json["hosts"][0][0], J::String(hostile.into()));
}

#[test]
fn the_csp_names_the_pages_own_script_and_style() {
    let html = page_of(INV);
    let csp = &html[html.find("Content-Security-Policy").unwrap()..];
    let csp = &csp[..csp.find('>').unwrap()];
    assert!(csp.contains("default-src 'none'"));
    let script = &html[html.rfind("<script>").unwrap() + 8..html.rfind("</script>").unwrap()];
    assert_eq!(script, SCRIPT);
    assert!(csp.contains(&csp_hash(script)), "{csp}");
    assert!(csp.contains(&csp_hash(STYLE)), "{csp}");
    // Nothing to fetch: no src, and links only within the page.
    assert!(!html.contains(" src="));
    for href in html.split(" href=\"").skip(1) {
        assert!(href.starts_with('#'), "{}", &href[..40.min(href.len())]);
    }
}

#[test]
fn the_page_is_byte_identical_on_rerun() {
    assert_eq!(page_of(INV), page_of(INV));
}
