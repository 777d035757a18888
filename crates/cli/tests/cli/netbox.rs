//! `netbox:` inputs against a real NetBox (4.x, from its PyPI wheel, on
//! PostgreSQL and Redis: .ci/netbox.sh), filled through its REST API as a
//! team that keeps its hosts there would fill it: both ways NetBox users
//! model a host's VLAN, MAC address objects, out-of-band addresses, VIPs,
//! and a config context for what NetBox does not hold.

use serde_json::{json, Value as J};

use crate::common::netbox::*;
use crate::common::*;

const BMC_PASSWORD: &str = "Nb-bmc-Pa55word";

fn context() -> J {
    json!({"nodenet": {
        "cluster": {"baseDomain": "example.com", "machineNetworks": ["10.77.110.0/24"]},
        "credentials": {"bmc": {"username": "admin", "passwordEnv": "NB_TEST_BMC_PASSWORD"}},
        "host": {"bootMode": "UEFI"},
        "network": {
            "interfaces": [{"name": "bond0", "link-aggregation": {"options": {"miimon": "100"}}}],
            "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.77.110.1", "next-hop-interface": "bond0.110"}]},
            "dns-resolver": {"config": {"server": ["10.77.110.2"]}},
        },
    }})
}

/// One host as NetBox holds it: two 25G ports in a LAG, a management
/// port with the out-of-band address, and VLAN 110 carrying its address,
/// modelled as a subinterface of the LAG in access mode (`subinterface`)
/// or as a `bond0.110` virtual interface on the LAG tagged for it.
struct HostMade {
    id: u64,
    name: String,
    interface_pages: std::collections::BTreeMap<String, String>,
}

/// Where a host goes: its cluster, the VLAN its address is on, and the
/// switch its ports are cabled to (if any).
struct Place<'a> {
    m: &'a Made,
    vlan: &'a J,
    leaf: Option<&'a J>,
}

fn host(
    nb: &NetBox,
    at: &Place,
    i: u8,
    (name, role): (&str, &str),
    subinterface: bool,
) -> HostMade {
    let (m, vlan, leaf) = (at.m, at.vlan, at.leaf);
    let d = nb.device(m, name, role);
    let mut pages = std::collections::BTreeMap::new();
    let lag_extra = if subinterface {
        json!({"mtu": 9000})
    } else {
        json!({"mtu": 9000, "mode": "tagged", "tagged_vlans": [vlan["id"]]})
    };
    let bond = nb.interface(&d, "bond0", "lag", lag_extra);
    for (n, port) in ["eno1", "eno2"].iter().enumerate() {
        let p = nb.interface(
            &d,
            port,
            "25gbase-x-sfp28",
            json!({"mtu": 9000, "lag": bond["id"]}),
        );
        nb.mac(&p, &format!("52:54:00:77:{i:02x}:{:02x}", n + 1));
        if let Some(leaf) = leaf {
            let name = format!("Ethernet1/{}", 2 * i as usize + n + 1);
            let switch_port = nb.interface(leaf, &name, "25gbase-x-sfp28", json!({}));
            nb.cable(&p, &switch_port);
        }
        pages.insert(
            port.to_string(),
            p["display_url"].as_str().unwrap().to_string(),
        );
    }
    let vif = if subinterface {
        nb.interface(
            &d,
            "bond0.110",
            "virtual",
            json!({"parent": bond["id"], "mode": "access", "untagged_vlan": vlan["id"]}),
        )
    } else {
        nb.interface(&d, "bond0.110", "virtual", json!({}))
    };
    nb.address(
        m,
        &format!("10.77.110.{}/24", 10 + i),
        Some(&vif),
        json!({}),
    );
    let mgmt = nb.interface(&d, "bmc", "1000base-t", json!({"mgmt_only": true}));
    let oob = nb.address(m, &format!("10.77.0.{}/24", 10 + i), Some(&mgmt), json!({}));
    nb.patch(
        &format!("dcim/devices/{}/", d["id"]),
        json!({"oob_ip": oob["id"]}),
    );
    pages.insert(
        "bond0".into(),
        bond["display_url"].as_str().unwrap().to_string(),
    );
    pages.insert(
        "bond0.110".into(),
        vif["display_url"].as_str().unwrap().to_string(),
    );
    HostMade {
        id: d["id"].as_u64().unwrap(),
        name: name.to_string(),
        interface_pages: pages,
    }
}

/// Three control-plane hosts and a worker, cabled to one leaf switch
/// (`Ethernet1/1`, `/2` for the first host's eno1, eno2, and so on), VIPs
/// by their DNS names.
fn fleet(nb: &NetBox) -> (Made, String, Vec<HostMade>) {
    let m = nb.cluster(context());
    let vlan = nb.vlan(m.site, 110);
    let leaf_name = format!("leaf-{}", m.site_slug);
    let leaf = nb.switch(&m, &leaf_name);
    let at = Place {
        m: &m,
        vlan: &vlan,
        leaf: Some(&leaf),
    };
    let hosts = vec![
        host(nb, &at, 0, ("master-0", "control-plane"), true),
        host(nb, &at, 1, ("master-1", "control-plane"), true),
        host(nb, &at, 2, ("master-2", "control-plane"), false),
        host(nb, &at, 3, ("worker-0", "worker"), false),
    ];
    let zone = format!("{}.example.com", m.cluster);
    nb.address(
        &m,
        "10.77.110.5/32",
        None,
        json!({"role": "vip", "dns_name": format!("api.{zone}")}),
    );
    nb.address(
        &m,
        "10.77.110.4/32",
        None,
        json!({"role": "vip", "dns_name": format!("*.apps.{zone}")}),
    );
    (m, leaf_name, hosts)
}

fn said(o: &std::process::Output) -> String {
    format!(
        "exit {:?}\n{}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_clusters_hosts_read_from_netbox_check_clean_and_carry_what_netbox_holds() {
    let Some(nb) = netbox() else { return };
    let (m, leaf, hosts) = fleet(nb);
    // master-0's BMC by the device's own custom field (a Dell iDRAC).
    nb.custom_field("bmc_address", "dcim.device");
    nb.patch(
        &format!("dcim/devices/{}/", hosts[0].id),
        json!({"custom_fields": {"bmc_address": "idrac-virtualmedia://${oob_ip}/redfish/v1/Systems/System.Embedded.1"}}),
    );
    let dir = tempfile::tempdir().unwrap();
    let source = format!("netbox:?cluster={}&site={}", m.cluster, m.site_slug);
    let file = dir.path().join("cluster.yaml");
    let o = run(nb
        .nodenet()
        .args(["import", "--from", &source, "-o"])
        .arg(&file));
    assert!(o.status.success(), "{}", said(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    // Read back by another YAML reader than nodenet's.
    let inv: J =
        serde_json::to_value(serde_yaml::from_str::<serde_yaml::Value>(&text).unwrap()).unwrap();
    assert_eq!(inv["cluster"]["name"], m.cluster.as_str());
    assert_eq!(inv["cluster"]["apiVIPs"], json!(["10.77.110.5"]));
    assert_eq!(inv["cluster"]["ingressVIPs"], json!(["10.77.110.4"]));
    assert_eq!(inv["cluster"]["baseDomain"], "example.com");
    let got = inv["hosts"].as_array().unwrap();
    assert_eq!(got.len(), 4, "{text}");
    for (i, (h, made)) in got.iter().zip(&hosts).enumerate() {
        assert_eq!(h["name"], made.name.as_str());
        assert_eq!(h["role"], if i < 3 { "master" } else { "worker" });
        assert_eq!(h["bootMode"], "UEFI");
        assert_eq!(
            h["nics"],
            json!([
                {"name": "eno1", "mac": format!("52:54:00:77:{i:02x}:01"), "switch": leaf, "port": format!("Ethernet1/{}", 2 * i + 1)},
                {"name": "eno2", "mac": format!("52:54:00:77:{i:02x}:02"), "switch": leaf, "port": format!("Ethernet1/{}", 2 * i + 2)},
            ])
        );
        let bmc = if i == 0 {
            "idrac-virtualmedia://10.77.0.10/redfish/v1/Systems/System.Embedded.1".to_string()
        } else {
            format!(
                "redfish-virtualmedia://10.77.0.{}/redfish/v1/Systems/1",
                10 + i
            )
        };
        assert_eq!(h["bmc"]["address"], bmc);
        let ifaces = h["network"]["interfaces"].as_array().unwrap();
        let by = |n: &str| {
            ifaces
                .iter()
                .find(|x| x["name"] == n)
                .unwrap_or_else(|| panic!("{n} in {text}"))
        };
        assert_eq!(by("bond0")["type"], "bond");
        assert_eq!(
            by("bond0")["link-aggregation"],
            json!({"mode": "802.3ad", "port": ["eno1", "eno2"], "options": {"miimon": "100"}})
        );
        assert_eq!(
            by("bond0.110")["vlan"],
            json!({"base-iface": "bond0", "id": 110}),
            "host {i}"
        );
        assert_eq!(
            by("bond0.110")["ipv4"]["address"],
            json!([{"ip": format!("10.77.110.{}", 10 + i), "prefix-length": 24}])
        );
        assert_eq!(by("eno1")["mtu"], 9000);
        assert!(
            ifaces.iter().all(|x| x["name"] != "bmc"),
            "the management port is the BMC's"
        );
        assert_eq!(
            h["network"]["routes"]["config"][0]["next-hop-address"],
            "10.77.110.1"
        );
        // Each interface's line names its NetBox page.
        for (iface, page) in &made.interface_pages {
            assert!(
                text.contains(&format!("- name: {iface}  # {page}")),
                "{iface} {page}\n{text}"
            );
        }
    }
    // The file, and NetBox itself as the input, check clean and render alike.
    let mut outs = Vec::new();
    for input in [file.to_str().unwrap(), source.as_str()] {
        let o = run(nb.nodenet().args(["check", "--format", "json", input]));
        let v = json(&o);
        let errors = diagnostics_where(&v, |d| d["severity"] == "error");
        assert!(
            o.status.success() && errors.is_empty(),
            "{input}: {}",
            said(&o)
        );
        let out = dir.path().join(format!("out-{}", outs.len()));
        let o = run(nb
            .nodenet()
            .env("NB_TEST_BMC_PASSWORD", BMC_PASSWORD)
            .args(["render", input, "-o"])
            .arg(&out));
        assert!(o.status.success(), "{}", said(&o));
        assert!(!said(&o).contains(&nb.token), "the token is never said");
        outs.push(out);
    }
    // Everything but the manifest, which names the input.
    let rendered = |d: &std::path::Path| {
        files_under(d)
            .into_iter()
            .map(|p| {
                let name = p.strip_prefix(d).unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&p).unwrap())
            })
            .filter(|(name, _)| name != "manifest.json")
            .collect::<std::collections::BTreeMap<String, Vec<u8>>>()
    };
    let (a, b) = (rendered(&outs[0]), rendered(&outs[1]));
    assert!(
        a.keys().any(|k| k.ends_with("bond0.110.nmconnection")),
        "{:?}",
        a.keys()
    );
    assert_eq!(a, b, "render of NetBox and of the file it imports to");
}

#[test]
fn what_netbox_holds_but_nodenet_cannot_map_is_said_at_a_line_naming_the_object() {
    let Some(nb) = netbox() else { return };
    let m = nb.cluster(context());
    let vlan = nb.vlan(m.site, 110);
    let at = Place {
        m: &m,
        vlan: &vlan,
        leaf: None,
    };
    let made = host(nb, &at, 9, ("worker-9", "worker"), false);
    let d = nb.call(
        "GET",
        &format!("dcim/devices/?name={}&site_id={}", made.name, m.site),
        &J::Null,
    )["results"][0]
        .clone();
    let wlan = nb.interface(&d, "wlan0", "ieee802.11ax", json!({}));
    // A subinterface's access VLAN moved to another site afterwards
    // (NetBox refuses another site's VLAN on an interface, but not moving
    // the VLAN once it is assigned).
    let foreign = nb.vlan(m.site, 120);
    let bond = nb.call(
        "GET",
        &format!("dcim/interfaces/?device_id={}&name=bond0", d["id"]),
        &J::Null,
    )["results"][0]
        .clone();
    let sub = nb.interface(
        &d,
        "bond0.120",
        "virtual",
        json!({"parent": bond["id"], "mode": "access", "untagged_vlan": foreign["id"]}),
    );
    let slug = unique("s");
    let elsewhere = nb.post(
        "dcim/sites/",
        json!({"name": slug, "slug": slug, "status": "active"}),
    );
    nb.patch(
        &format!("ipam/vlans/{}/", foreign["id"]),
        json!({"site": elsewhere["id"]}),
    );
    let source = format!("netbox:?cluster={}", m.cluster);
    let o = run(nb.nodenet().args(["check", "--format", "json", &source]));
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    let v = json(&o);
    let unmapped = diagnostics_where(&v, |d| d["code"] == "netbox-unmapped");
    assert_eq!(unmapped.len(), 2, "{v:#}");
    let wlan_page = wlan["display_url"].as_str().unwrap();
    let sub_page = sub["display_url"].as_str().unwrap();
    let foreign_page = foreign["display_url"].as_str().unwrap();
    let w = unmapped
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains(wlan_page))
        .expect("wlan0 named by its page");
    assert_eq!(w["severity"], "warning");
    let s = unmapped
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains(sub_page))
        .expect("bond0.120 named by its page");
    assert_eq!(s["severity"], "error");
    assert!(s["message"].as_str().unwrap().contains(foreign_page), "{s}");
    for d in &unmapped {
        assert_eq!(d["file"], source.as_str());
        assert_eq!(d["host"], "worker-9");
        assert!(d["line"].as_u64().unwrap() > 1);
    }
    // import writes nothing then.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.yaml");
    let o = run(nb
        .nodenet()
        .args(["import", "--from", &source, "-o"])
        .arg(&file));
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    assert!(!file.exists());
}

#[test]
fn a_netbox_that_refuses_the_token_or_a_missing_token_is_said_without_the_token() {
    let Some(nb) = netbox() else { return };
    let wrong = "0123456789abcdef0123456789abcdef01234567";
    let o = run(nb
        .nodenet()
        .env("NETBOX_TOKEN", wrong)
        .args(["check", "netbox:?cluster=any"]));
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    let s = said(&o);
    assert!(s.contains("403") && s.contains(&nb.url), "{s}");
    assert!(!s.contains(wrong), "{s}");
    let o = run(nb
        .nodenet()
        .env_remove("NETBOX_TOKEN")
        .args(["check", "netbox:?cluster=any"]));
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(said(&o).contains("NETBOX_TOKEN"), "{}", said(&o));
    // A cluster NetBox does not have.
    let o = run(nb
        .nodenet()
        .args(["check", "netbox:?cluster=no-such-cluster-anywhere"]));
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(
        said(&o).contains("no cluster named `no-such-cluster-anywhere`"),
        "{}",
        said(&o)
    );
}

/// The interface of `device` named `name`, as NetBox answers it.
fn interface_of(nb: &NetBox, device: u64, name: &str) -> J {
    nb.call(
        "GET",
        &format!("dcim/interfaces/?device_id={device}&name={name}"),
        &J::Null,
    )["results"][0]
        .clone()
}

/// The human report's findings, each as its code and its text (message
/// and the input's lines shown with it).
fn findings(stderr: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in stderr.lines() {
        let code_line = !line.is_empty()
            && line
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        match out.last_mut() {
            _ if code_line => out.push((line.to_string(), String::new())),
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    out
}

/// Mistakes NetBox lets a team make, each of which fails a deploy, are
/// found by the checks that run on files, at the line of the inventory
/// that NetBox's object gave (its page shown with the finding): an
/// address on a LAG member (nmstate refuses IP on a bond's port), a MAC
/// on two devices, the API VIP assigned to a host's interface, and a
/// host whose only address lies outside the machine networks.
#[test]
fn mistakes_made_in_netbox_are_found_at_the_objects_that_hold_them() {
    let Some(nb) = netbox() else { return };
    let (m, _, hosts) = fleet(nb);
    // master-0's eno1, a member of bond0, holds an address of its own.
    let eno1 = interface_of(nb, hosts[0].id, "eno1");
    nb.address(&m, "10.77.110.99/24", Some(&eno1), json!({}));
    // worker-0's eno2 gets master-1's eno1's MAC.
    let eno2 = interface_of(nb, hosts[3].id, "eno2");
    nb.mac(&eno2, "52:54:00:77:01:01");
    // The API VIP assigned to master-2's VLAN interface.
    let vip = nb.call(
        "GET",
        &format!("ipam/ip-addresses/?vrf_id={}&address=10.77.110.5/32", m.vrf),
        &J::Null,
    )["results"][0]
        .clone();
    let vlan_if = interface_of(nb, hosts[2].id, "bond0.110");
    nb.patch(
        &format!("ipam/ip-addresses/{}/", vip["id"]),
        json!({"assigned_object_type": "dcim.interface", "assigned_object_id": vlan_if["id"]}),
    );
    // worker-0's address moved outside the machine network.
    let worker_ip = nb.call(
        "GET",
        &format!(
            "ipam/ip-addresses/?vrf_id={}&address=10.77.110.13/24",
            m.vrf
        ),
        &J::Null,
    )["results"][0]
        .clone();
    nb.patch(
        &format!("ipam/ip-addresses/{}/", worker_ip["id"]),
        json!({"address": "10.78.0.13/24"}),
    );

    let source = format!("netbox:?cluster={}", m.cluster);
    let o = run(nb.nodenet().args(["check", &source]));
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let found = findings(&stderr);
    let page = |o: &J| o["display_url"].as_str().unwrap().to_string();
    let expect = [
        ("nmstate-error", "master-0", page(&eno1)),
        ("duplicate-mac", "worker-0", page(&eno2)),
        ("vip-is-host-ip", "master-2", page(&vip)),
        ("ip-outside-machine-network", "worker-0", page(&worker_ip)),
    ];
    for (code, host, page) in &expect {
        assert!(
            found
                .iter()
                .any(|(c, text)| c == code && text.contains(host) && text.contains(page.as_str())),
            "no {code} about {host} shown at {page}:\n{stderr}"
        );
    }
    // The member's address is carried to nmstate, not dropped.
    assert!(found
        .iter()
        .any(|(c, text)| c == "nmstate-error" && text.contains("eno1 cannot have IP enabled")));
}
