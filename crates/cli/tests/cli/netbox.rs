//! `netbox:` inputs against a real NetBox (4.x, from its PyPI wheel, on
//! PostgreSQL and Redis: .ci/netbox.sh), filled through its REST API as a
//! team that keeps its hosts there would fill it: both ways NetBox users
//! model a host's VLAN, MAC address objects, out-of-band addresses, VIPs,
//! and a config context for what NetBox does not hold.

use serde_json::{json, Value as J};

use crate::common::netbox::*;
use crate::common::*;

mod round_trip;

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
fn a_netbox_that_refuses_the_token_a_missing_token_or_a_bad_timeout_is_said_without_the_token() {
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
    let o = run(nb
        .nodenet()
        .env("NETBOX_TIMEOUT", "soon")
        .args(["check", "netbox:?cluster=any"]));
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(
        said(&o).contains("NETBOX_TIMEOUT=soon is not a number of seconds"),
        "{}",
        said(&o)
    );
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

/// Three workers whose eno2 NetBox holds without a MAC, each behind a
/// system of the BMC emulator (the device's `bmc_address` custom field)
/// that lists eno1's and eno2's MACs. worker-1's eno2 has its MAC
/// address object already, not made primary; worker-2's BMC gives eno2 a
/// MAC NetBox holds on another device's port.
#[test]
fn macs_the_bmcs_list_are_written_to_netbox_after_the_change_set_is_shown() {
    use crate::common::sushy::{Emulator, PASSWORD};
    let Some(nb) = netbox() else { return };
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let m = nb.cluster(json!({"nodenet": {
        "cluster": {"baseDomain": "example.com", "machineNetworks": ["10.79.0.0/24"]},
        "credentials": {"bmc": {"username": "admin", "passwordEnv": "NB_TEST_BMC_PASSWORD"}},
    }}));
    // The default route from the prefix's gateway (a custom field).
    nb.custom_field("gateway", "ipam.prefix");
    nb.post(
        "ipam/prefixes/",
        json!({"prefix": "10.79.0.0/24", "vrf": m.vrf, "status": "active", "custom_fields": {"gateway": "10.79.0.1"}}),
    );
    // Unique per run: the database is kept between runs.
    let (hi, lo) = ((m.vrf >> 8) & 0xff, m.vrf & 0xff);
    let mac = |host: usize, port: usize| format!("52:{hi:02x}:{lo:02x}:79:{host:02x}:{port:02x}");
    let emu = Emulator::start_with_nics(
        tmp.path(),
        &(0..3)
            .map(|h| vec![mac(h, 1), mac(h, 2)])
            .collect::<Vec<_>>(),
    );
    nb.custom_field("bmc_address", "dcim.device");
    let leaf = nb.switch(&m, &format!("leaf-{}", m.site_slug));
    let mut eno2s = Vec::new();
    for h in 0..3 {
        let d = nb.device(&m, &format!("worker-{h}"), "worker");
        nb.patch(
            &format!("dcim/devices/{}/", d["id"]),
            json!({"custom_fields": {"bmc_address": emu.system_url(h)}}),
        );
        let eno1 = nb.interface(&d, "eno1", "25gbase-x-sfp28", json!({}));
        nb.mac(&eno1, &mac(h, 1));
        nb.address(
            &m,
            &format!("10.79.0.{}/24", 10 + h),
            Some(&eno1),
            json!({}),
        );
        eno2s.push(nb.interface(&d, "eno2", "25gbase-x-sfp28", json!({})));
    }
    let own = nb.post(
        "dcim/mac-addresses/",
        json!({"mac_address": mac(1, 2), "assigned_object_type": "dcim.interface", "assigned_object_id": eno2s[1]["id"]}),
    );
    let elsewhere = nb.interface(&leaf, "Ethernet1/9", "25gbase-x-sfp28", json!({}));
    nb.mac(&elsewhere, &mac(2, 2));
    let source = format!("netbox:?cluster={}", m.cluster);
    let discover = |extra: &[&str]| {
        run(nb
            .nodenet()
            .env("NB_TEST_BMC_PASSWORD", PASSWORD)
            .arg("discover")
            .arg(&source)
            .args(extra))
    };
    let primary = |i: &J| {
        interface_of(nb, i["device"]["id"].as_u64().unwrap(), "eno2")["primary_mac_address"].clone()
    };
    // This run's MAC address objects (other tests write beside it).
    let mac_objects = || {
        nb.call(
            "GET",
            &format!("dcim/mac-addresses/?limit=1&mac_address__ic=52:{hi:02x}:{lo:02x}:79"),
            &J::Null,
        )["count"]
            .as_u64()
            .unwrap()
    };
    let before = mac_objects();

    // The change set, read from NetBox; nothing written.
    let o = discover(&["--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let j = json(&o);
    let page = |i: &J| i["display_url"].as_str().unwrap().to_string();
    let o = run(nb.nodenet().args(["import", "--from", &source]));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("next-hop-address: \"10.79.0.1\"  # "),
        "{}",
        said(&o)
    );
    assert_eq!(
        j["netbox"]["changes"],
        json!([
            {"host": "worker-0", "nic": "eno2", "mac": mac(0, 2), "interface": page(&eno2s[0]), "action": "new MAC address object, made primary"},
            {"host": "worker-1", "nic": "eno2", "mac": mac(1, 2), "interface": page(&eno2s[1]), "action": "its MAC address object, made primary"},
        ]),
        "{}",
        said(&o)
    );
    let refused = &j["netbox"]["refused"];
    assert_eq!(refused.as_array().unwrap().len(), 1, "{refused}");
    assert_eq!(refused[0]["host"], "worker-2");
    let elsewhere_mac = nb.call(
        "GET",
        &format!("dcim/mac-addresses/?interface_id={}", elsewhere["id"]),
        &J::Null,
    )["results"][0]
        .clone();
    assert!(
        refused[0]["why"]
            .as_str()
            .unwrap()
            .contains(&page(&elsewhere_mac)),
        "{refused}"
    );
    assert_eq!(j["netbox"]["written"], 0);
    assert!(eno2s.iter().all(|i| primary(i).is_null()));
    assert_eq!(mac_objects(), before);

    // A token without write rights: said, nothing written.
    let token = nb.post(
        "users/tokens/",
        json!({"user": nb.call("GET", "users/users/?username=admin", &J::Null)["results"][0]["id"],
               "write_enabled": false, "description": "read-only, discover test"}),
    );
    let read_only = format!(
        "nbt_{}.{}",
        token["key"].as_str().unwrap(),
        token["token"].as_str().unwrap()
    );
    let o = run(nb
        .nodenet()
        .env("NETBOX_TOKEN", &read_only)
        .env("NB_TEST_BMC_PASSWORD", PASSWORD)
        .args(["discover", &source, "--write-netbox"]));
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(
        said(&o).contains("refused the write (403)") && said(&o).contains("nothing was written"),
        "{}",
        said(&o)
    );
    assert!(!said(&o).contains(token["token"].as_str().unwrap()));
    assert!(eno2s.iter().all(|i| primary(i).is_null()));
    nb.call(
        "DELETE",
        &format!("users/tokens/{}/", token["id"]),
        &J::Null,
    );

    // --write-netbox: shown, then written, each change logged.
    let o = discover(&["--write-netbox"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!(
            "worker-0 eno2: primary MAC address (none) -> {}",
            mac(0, 2)
        )),
        "{}",
        said(&o)
    );
    assert!(
        said(&o).contains("wrote 2 MAC address(es) to NetBox"),
        "{}",
        said(&o)
    );
    assert!(!said(&o).contains(&nb.token) && !said(&o).contains(PASSWORD));
    assert_eq!(primary(&eno2s[0])["mac_address"], mac(0, 2).to_uppercase());
    assert_eq!(primary(&eno2s[1])["id"], own["id"]);
    assert!(
        primary(&eno2s[2]).is_null(),
        "a MAC held elsewhere is not written"
    );
    assert_eq!(mac_objects(), before + 1, "one object made, none deleted");
    let log = nb.call(
        "GET",
        &format!(
            "core/object-changes/?changed_object_type=dcim.interface&changed_object_id={}&ordering=-time",
            eno2s[1]["id"]
        ),
        &J::Null,
    );
    let change = log["results"][0].clone();
    assert_eq!(change["action"]["value"], "update");
    assert_eq!(
        change["message"],
        "nodenet discover: eno2 of worker-1 as its BMC lists it (Redfish EthernetInterfaces)"
    );
    assert_eq!(change["prechange_data"]["primary_mac_address"], J::Null);
    assert_eq!(change["postchange_data"]["primary_mac_address"], own["id"]);

    // Again: NetBox holds them now; only the refused one is left.
    let o = discover(&["--write-netbox", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let j = json(&o);
    assert_eq!(j["netbox"]["changes"], json!([]));
    assert_eq!(j["netbox"]["written"], 0);
    assert_eq!(mac_objects(), before + 1);
}

/// lldpd as the switch in a namespace, the node's ports cabled to it;
/// tcpdump's capture on each port read by `nodenet lldp --pcap`. NetBox
/// holds both ports and the switch, eno1 uncabled and eno2 cabled to
/// another switch port than the one LLDP hears.
#[test]
fn cables_heard_over_lldp_that_netbox_lacks_are_recorded_after_the_change_set_is_shown() {
    let Some(nb) = netbox() else { return };
    if skip_without(&["ip", "lldpd", "tcpdump"]) {
        return;
    }
    let m = nb.cluster(json!({"nodenet": {}}));
    let (node_name, leaf_name) = (
        format!("node-{}", m.site_slug),
        format!("leaf-{}", m.site_slug),
    );
    let d = nb.device(&m, &node_name, "worker");
    let leaf = nb.switch(&m, &leaf_name);
    let eno1 = nb.interface(&d, "eno1", "25gbase-x-sfp28", json!({}));
    let eno2 = nb.interface(&d, "eno2", "25gbase-x-sfp28", json!({}));
    let swp: Vec<J> = (1..=3)
        .map(|i| nb.interface(&leaf, &format!("swp{i}"), "25gbase-x-sfp28", json!({})))
        .collect();
    nb.cable(&eno2, &swp[2]);

    let tmp = tempfile::tempdir().unwrap();
    let sw = Netns::new("nb-sw");
    let node = Netns::new("nb-node");
    let _lldpd = Lldpd::start(
        &sw,
        tmp.path(),
        &format!("configure system hostname {leaf_name}\n"),
    );
    let mut captures = Vec::new();
    for (nic, port) in [("eno1", "swp1"), ("eno2", "swp2")] {
        node.cable(nic, &sw, port);
        sw.exec(&["link", "set", port, "up"]);
        node.exec(&["link", "set", nic, "up"]);
        let cap = tmp.path().join(format!("{nic}.pcap"));
        let o = run(node
            .command(tool("tcpdump"))
            .args(["-i", nic, "-c", "1", "-w"])
            .arg(&cap)
            .arg("ether proto 0x88cc"));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        captures.push(cap);
    }
    let lldp = |nic: &str, cap: &std::path::Path, extra: &[&str]| {
        run(nb
            .nodenet()
            .args(["lldp", "--nic", nic, "--host", &node_name, "--pcap"])
            .arg(cap)
            .args(extra))
    };
    let far_end = |i: &J| {
        let now = nb.call("GET", &format!("dcim/interfaces/{}/", i["id"]), &J::Null);
        now["link_peers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };

    // The change set; nothing written.
    let o = lldp("eno1", &captures[0], &["--netbox"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let page = |i: &J| i["display_url"].as_str().unwrap().to_string();
    assert!(
        said(&o).contains(&format!(
            "NetBox: cable to add: {node_name} eno1 ({}) -- {leaf_name} swp1 ({})",
            page(&eno1),
            page(&swp[0])
        )),
        "{}",
        said(&o)
    );
    assert!(
        said(&o).contains("run again with --write-netbox"),
        "{}",
        said(&o)
    );
    assert!(far_end(&eno1).is_empty());

    // Written, logged, and not written twice.
    let o = lldp("eno1", &captures[0], &["--write-netbox"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(
        said(&o).contains("wrote 1 cable(s) to NetBox"),
        "{}",
        said(&o)
    );
    assert_eq!(far_end(&eno1), ["swp1"]);
    let cable = nb.call("GET", &format!("dcim/interfaces/{}/", eno1["id"]), &J::Null)["cable"]
        ["id"]
        .clone();
    let log = nb.call(
        "GET",
        &format!("core/object-changes/?changed_object_type=dcim.cable&changed_object_id={cable}"),
        &J::Null,
    );
    assert_eq!(
        log["results"][0]["message"],
        format!("nodenet lldp: eno1 of {node_name} hears {leaf_name} swp1 over LLDP")
    );
    let o = lldp("eno1", &captures[0], &["--write-netbox"]);
    assert!(
        said(&o).contains("NetBox has every cable heard (1)"),
        "{}",
        said(&o)
    );

    // eno2: NetBox says swp3, LLDP hears swp2: never re-cabled.
    let o = lldp("eno2", &captures[1], &["--write-netbox"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(
        said(&o).contains(&format!(
            "NetBox cables it to {leaf_name} swp3; nodenet does not re-cable"
        )),
        "{}",
        said(&o)
    );
    assert_eq!(far_end(&eno2), ["swp3"]);
}
