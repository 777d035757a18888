//! The mapping on objects shaped as NetBox 4.x's REST API returns them
//! (fields trimmed to what a read uses, values made up).

use serde_json::{json, Value as J};

use super::*;
use crate::objects::*;

fn de<T: serde::de::DeserializeOwned>(v: J) -> T {
    serde_json::from_value(v).unwrap()
}

const NB: &str = "https://nb.example.com";

fn iface(id: u64, device: u64, name: &str, kind: &str, extra: J) -> Interface {
    let mut v = json!({
        "id": id, "url": format!("{NB}/api/dcim/interfaces/{id}/"),
        "display_url": format!("{NB}/dcim/interfaces/{id}/"),
        "device": {"id": device, "name": format!("dev-{device}"), "url": ""},
        "name": name, "type": {"value": kind, "label": kind}, "enabled": true,
        "parent": null, "bridge": null, "lag": null, "mtu": null, "mgmt_only": false,
        "mode": null, "untagged_vlan": null, "tagged_vlans": [],
        "primary_mac_address": null, "mac_address": null,
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    de(v)
}

fn mac(m: &str) -> J {
    json!({"id": 1, "mac_address": m, "url": ""})
}

fn ip(id: u64, address: &str, on: u64, status: &str) -> IpAddress {
    de(json!({
        "id": id, "url": format!("{NB}/api/ipam/ip-addresses/{id}/"), "address": address,
        "status": {"value": status}, "role": null, "assigned_object_type": "dcim.interface",
        "assigned_object_id": on, "dns_name": "",
    }))
}

fn device(id: u64, name: &str, role: &str, context: J) -> Device {
    de(json!({
        "id": id, "url": format!("{NB}/api/dcim/devices/{id}/"),
        "display_url": format!("{NB}/dcim/devices/{id}/"), "name": name,
        "role": {"id": 1, "slug": role, "name": role, "url": ""},
        "site": {"id": 1, "slug": "dc1", "url": ""},
        "cluster": {"id": 3, "name": "ocp-prod", "url": format!("{NB}/api/virtualization/clusters/3/")},
        "oob_ip": {"id": 90 + id, "address": format!("10.0.0.{id}/24"), "url": format!("{NB}/api/ipam/ip-addresses/{}/", 90 + id)},
        "config_context": context,
    }))
}

/// Two workers: one with its VLAN as a subinterface of the LAG in access
/// mode, one with the LAG tagged and a `bond0.110` virtual interface.
fn fleet() -> Snapshot {
    let ctx = json!({"nodenet": {
        "cluster": {"baseDomain": "example.com", "machineNetworks": ["10.0.110.0/24"]},
        "credentials": {"bmc": {"username": "admin", "passwordEnv": "BMC_PASSWORD"}},
        "network": {
            "interfaces": [{"name": "bond0", "link-aggregation": {"options": {"miimon": "100"}}}],
            "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.0.110.1", "next-hop-interface": "bond0.110"}]},
        },
    }});
    let mut interfaces = Vec::new();
    for (d, base) in [(1u64, 10u64), (2, 20)] {
        // The first host's eno1 cabled to a leaf through a patch panel
        // (the path's far end), its eno2 straight to it (the cable's peer).
        let (eno1_cable, eno2_cable) = if d == 1 {
            (
                json!({"connected_endpoints": [{"name": "Ethernet1/1", "device": {"id": 99, "name": "leaf-1", "url": ""}}], "connected_endpoints_type": "dcim.interface", "link_peers": [{"name": "front-1"}], "link_peers_type": "dcim.frontport"}),
                json!({"link_peers": [{"name": "Ethernet1/2", "device": {"id": 99, "name": "leaf-1", "url": ""}}], "link_peers_type": "dcim.interface"}),
            )
        } else {
            (json!({}), json!({}))
        };
        let mut eno1 = json!({"lag": {"id": base + 3, "name": "bond0", "url": ""}, "primary_mac_address": mac(&format!("52:54:00:00:0{d}:01")), "mtu": 9000});
        eno1.as_object_mut()
            .unwrap()
            .extend(eno1_cable.as_object().unwrap().clone());
        interfaces.push(iface(base + 1, d, "eno1", "25gbase-x-sfp28", eno1));
        let mut eno2 = json!({"lag": {"id": base + 3, "name": "bond0", "url": ""}, "primary_mac_address": mac(&format!("52:54:00:00:0{d}:02")), "mtu": 9000});
        eno2.as_object_mut()
            .unwrap()
            .extend(eno2_cable.as_object().unwrap().clone());
        interfaces.push(iface(base + 2, d, "eno2", "25gbase-x-sfp28", eno2));
        interfaces.push(iface(
            base + 5,
            d,
            "bmc",
            "1000base-t",
            json!({"mgmt_only": true, "primary_mac_address": mac("52:54:00:ff:00:01")}),
        ));
    }
    interfaces.push(iface(13, 1, "bond0", "lag", json!({"mtu": 9000})));
    interfaces.push(iface(14, 1, "bond0.110", "virtual", json!({"parent": {"id": 13, "name": "bond0", "url": ""}, "mode": {"value": "access"}, "untagged_vlan": {"id": 110, "vid": 110, "url": ""}})));
    interfaces.push(iface(23, 2, "bond0", "lag", json!({"mtu": 9000, "mode": {"value": "tagged"}, "tagged_vlans": [{"id": 110, "vid": 110, "url": ""}]})));
    interfaces.push(iface(24, 2, "bond0.110", "virtual", json!({})));
    Snapshot {
        cluster: Some(de(
            json!({"id": 3, "name": "ocp-prod", "url": format!("{NB}/api/virtualization/clusters/3/")}),
        )),
        devices: vec![
            device(1, "worker-0", "worker", ctx.clone()),
            device(2, "worker-1", "compute-node", ctx),
        ],
        interfaces,
        addresses: vec![
            ip(501, "10.0.110.11/24", 14, "active"),
            ip(502, "10.0.110.12/24", 24, "active"),
        ],
        vlans: vec![de(
            json!({"id": 110, "vid": 110, "site": {"id": 1, "slug": "dc1", "url": ""}, "url": ""}),
        )],
        vips: vec![de(
            json!({"url": format!("{NB}/api/ipam/ip-addresses/700/"), "address": "10.0.110.5/32", "status": {"value": "active"}, "dns_name": "api.ocp-prod.example.com"}),
        )],
        prefixes: Vec::new(),
    }
}

fn load(g: &Generated) -> nodenet_model::Loaded {
    nodenet_model::load::load_files_and_texts(
        &[] as &[&std::path::Path],
        vec![(g.name.clone(), g.text.clone())],
        None,
    )
    .unwrap()
}

#[test]
fn both_ways_of_modelling_a_hosts_vlan_read_as_the_same_bond_and_vlan() {
    let g = inventory("netbox:?cluster=ocp-prod", NB, &fleet());
    assert_eq!(g.findings, vec![], "{}", g.text);
    let loaded = load(&g);
    let errors: Vec<_> = loaded.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{}", g.text);
    let inv = &loaded.inventory;
    assert_eq!(inv.cluster.name.as_ref().unwrap().value, "ocp-prod");
    assert_eq!(inv.hosts.len(), 2);
    for (h, n) in inv.hosts.iter().zip([1, 2]) {
        assert_eq!(h.name.value, format!("worker-{}", n - 1));
        assert_eq!(h.role.value.as_str(), "worker");
        let state = h.network.as_ref().unwrap().to_json();
        let ifaces = state["interfaces"].as_array().unwrap();
        let by = |name: &str| ifaces.iter().find(|i| i["name"] == name).unwrap().clone();
        assert_eq!(by("bond0")["type"], "bond");
        assert_eq!(by("bond0")["link-aggregation"]["mode"], "802.3ad");
        assert_eq!(
            by("bond0")["link-aggregation"]["port"],
            json!(["eno1", "eno2"])
        );
        // The config context's option, merged over the LAG.
        assert_eq!(by("bond0")["link-aggregation"]["options"]["miimon"], "100");
        assert_eq!(by("bond0")["mtu"], 9000);
        assert_eq!(by("bond0.110")["type"], "vlan");
        assert_eq!(
            by("bond0.110")["vlan"],
            json!({"base-iface": "bond0", "id": 110})
        );
        assert_eq!(
            by("bond0.110")["ipv4"]["address"],
            json!([{"ip": format!("10.0.110.1{n}"), "prefix-length": 24}])
        );
        assert_eq!(by("eno1")["type"], "ethernet");
        assert!(
            by("eno1").get("ipv4").is_none(),
            "a LAG member has no address"
        );
        assert!(ifaces.iter().all(|i| i["name"] != "bmc"), "management-only");
        assert_eq!(
            state["routes"]["config"][0]["next-hop-address"],
            "10.0.110.1"
        );
        let nics: Vec<_> = h
            .nics
            .iter()
            .map(|n| {
                (
                    n.name.value.as_str(),
                    n.mac.as_ref().unwrap().value.as_str(),
                )
            })
            .collect();
        assert_eq!(
            nics,
            [
                ("eno1", format!("52:54:00:00:0{n}:01").as_str()),
                ("eno2", format!("52:54:00:00:0{n}:02").as_str())
            ]
        );
        let cabled: Vec<_> = h
            .nics
            .iter()
            .map(|n| {
                (
                    n.wiring.switch.as_ref().map(|s| s.value.clone()),
                    n.wiring.port.as_ref().map(|p| p.value.clone()),
                )
            })
            .collect();
        if n == 1 {
            let leaf = |p: &str| (Some("leaf-1".to_string()), Some(p.to_string()));
            assert_eq!(cabled, [leaf("Ethernet1/1"), leaf("Ethernet1/2")]);
        } else {
            assert_eq!(cabled, [(None, None), (None, None)]);
        }
        assert_eq!(
            h.labels.get(DEVICE_LABEL).map(String::as_str),
            Some(n.to_string().as_str())
        );
        let bmc = h.bmc.as_ref().unwrap();
        assert_eq!(
            bmc.address.value,
            format!("redfish-virtualmedia://10.0.0.{n}/redfish/v1/Systems/1")
        );
    }
    assert_eq!(
        inv.cluster
            .api_vips
            .iter()
            .map(|v| v.value.to_string())
            .collect::<Vec<_>>(),
        ["10.0.110.5"]
    );
    // Each value's source on its line.
    assert!(
        g.text
            .contains("- name: bond0.110  # https://nb.example.com/dcim/interfaces/14/"),
        "{}",
        g.text
    );
    assert!(
        g.text
            .contains("role: worker  # device role `compute-node`"),
        "{}",
        g.text
    );
}

#[test]
fn objects_that_cannot_be_mapped_are_said_at_a_line_naming_them() {
    let mut snap = fleet();
    // A VLAN interface whose parent does not carry the VLAN tagged.
    snap.interfaces.retain(|i| i.id != 23);
    snap.interfaces.push(iface(
        23,
        2,
        "bond0",
        "lag",
        json!({"mode": {"value": "tagged"}, "tagged_vlans": []}),
    ));
    // A wireless interface; a VLAN of another site.
    snap.interfaces
        .push(iface(30, 1, "wlan0", "ieee802.11ax", json!({})));
    snap.interfaces.push(iface(31, 1, "bond0.120", "virtual", json!({"parent": {"id": 13, "name": "bond0", "url": ""}, "mode": {"value": "access"}, "untagged_vlan": {"id": 120, "vid": 120, "url": ""}})));
    snap.vlans.push(de(json!({"id": 120, "vid": 120, "site": {"id": 9, "slug": "dc9", "url": ""}, "url": format!("{NB}/api/ipam/vlans/120/")})));
    // A port whose LAG is no LAG (NetBox's API takes it).
    snap.interfaces.push(iface(
        32,
        1,
        "eno3",
        "25gbase-x-sfp28",
        json!({"lag": {"id": 30, "name": "wlan0", "url": ""}}),
    ));
    // A device whose role is no cluster role.
    snap.devices
        .push(device(3, "tor-1", "leaf-switch", json!({})));
    let g = inventory("netbox:?cluster=ocp-prod", NB, &snap);
    let said: Vec<(Severity, &str)> = g
        .findings
        .iter()
        .map(|f| (f.severity, f.message.as_str()))
        .collect();
    assert_eq!(said.len(), 5, "{said:#?}");
    let at = |needle: &str| {
        let f = g
            .findings
            .iter()
            .find(|f| f.message.contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {said:#?}"));
        let line = &g.text[f.at.0..f.at.0 + f.at.1];
        assert!(line.contains(needle), "{line}");
        f.severity
    };
    assert_eq!(
        at("interface wlan0 (https://nb.example.com/dcim/interfaces/30/): type `ieee802.11ax`"),
        Severity::Warning
    );
    assert_eq!(at("VLAN 120 (https://nb.example.com/ipam/vlans/120/) is of site dc9, the device is at dc1"), Severity::Error);
    assert_eq!(
        at("VLAN 110 by its name, but bond0 does not carry it tagged"),
        Severity::Error
    );
    assert_eq!(
        at("device role `leaf-switch` is no cluster role"),
        Severity::Error
    );
    assert_eq!(
        at("a member of wlan0, which is no LAG (type `ieee802.11ax`)"),
        Severity::Error
    );
    // The rest still reads: the host without the unread objects.
    let loaded = load(&g);
    assert_eq!(loaded.inventory.hosts.len(), 2);
}

#[test]
fn a_bmc_address_custom_field_wins_over_the_context_and_takes_the_oob_ip() {
    let mut snap = fleet();
    snap.devices[0].custom_fields.insert(
        BMC_FIELD.into(),
        json!("idrac-virtualmedia://${oob_ip}/redfish/v1/Systems/System.Embedded.1"),
    );
    let g = inventory("netbox:?cluster=ocp-prod", NB, &snap);
    let loaded = load(&g);
    let addresses: Vec<&str> = loaded
        .inventory
        .hosts
        .iter()
        .map(|h| h.bmc.as_ref().unwrap().address.value.as_str())
        .collect();
    assert_eq!(
        addresses,
        [
            "idrac-virtualmedia://10.0.0.1/redfish/v1/Systems/System.Embedded.1",
            "redfish-virtualmedia://10.0.0.2/redfish/v1/Systems/1",
        ]
    );
    assert!(
        g.text.contains(
            "# custom field `bmc_address`, oob_ip https://nb.example.com/ipam/ip-addresses/91/"
        ),
        "{}",
        g.text
    );
}

/// The gateway a prefix's custom field names (the most specific prefix
/// of the address's VRF that names one) makes the default route, at its
/// interface; a config context's `routes` replaces it.
#[test]
fn a_prefix_gateway_field_gives_the_default_route_and_the_context_replaces_it() {
    let mut snap = fleet();
    let prefix = |id: u64, p: &str, vrf: Option<u64>, gw: J| -> crate::objects::Prefix {
        de(
            json!({"prefix": p, "vrf": vrf.map(|v| json!({"id": v, "url": ""})),
                  "url": format!("{NB}/api/ipam/prefixes/{id}/"),
                  "custom_fields": {"gateway": gw}}),
        )
    };
    snap.prefixes = vec![
        prefix(1, "10.0.0.0/16", None, json!("10.0.0.254")),
        prefix(
            2,
            "10.0.110.0/24",
            None,
            json!({"id": 9, "address": "10.0.110.1/24"}),
        ),
        prefix(3, "10.0.110.0/25", Some(4), json!("10.0.110.126")),
        prefix(4, "10.0.110.0/26", None, J::Null),
    ];
    for d in &mut snap.devices {
        d.config_context.as_mut().unwrap()["nodenet"]["network"]
            .as_object_mut()
            .unwrap()
            .remove("routes");
    }
    let g = inventory("netbox:?cluster=ocp-prod", NB, &snap);
    let loaded = load(&g);
    for h in &loaded.inventory.hosts {
        let state = h.network.as_ref().unwrap().to_json();
        assert_eq!(
            state["routes"]["config"],
            json!([{"destination": "0.0.0.0/0", "next-hop-address": "10.0.110.1", "next-hop-interface": "bond0.110"}]),
            "{}",
            g.text
        );
    }
    assert!(
        g.text.contains(&format!(
            "next-hop-address: \"10.0.110.1\"  # {NB}/ipam/prefixes/2/ (custom field `gateway`)"
        )),
        "{}",
        g.text
    );
    // The context's routes win.
    let g = inventory(
        "netbox:?cluster=ocp-prod",
        NB,
        &fleet_with(snap.prefixes.clone()),
    );
    assert!(!g.text.contains("custom field `gateway`"), "{}", g.text);
}

fn fleet_with(prefixes: Vec<crate::objects::Prefix>) -> Snapshot {
    Snapshot {
        prefixes,
        ..fleet()
    }
}

#[test]
fn a_context_interface_merges_into_the_one_of_its_name_and_type() {
    let base = Y::from_json(
        &json!({"interfaces": [{"name": "enp2s0", "type": "ethernet", "state": "up"}]}),
        "objects",
    );
    // An OVS bridge and its internal interface share a name.
    let over = Y::from_json(
        &json!({"interfaces": [
            {"name": "br-ex", "type": "ovs-bridge", "bridge": {"port": [{"name": "enp2s0"}]}},
            {"name": "br-ex", "type": "ovs-interface", "copy-mac-from": "enp2s0"},
            {"name": "enp2s0", "mtu": 9000},
        ]}),
        CONTEXT,
    );
    let (text, _) = crate::emit::emit(&[("network".into(), merge(base, over))], "");
    let doc = nodenet_model::yaml::parse(&text, 0).unwrap().to_json();
    let ifaces = doc["network"]["interfaces"].as_array().unwrap();
    assert_eq!(ifaces.len(), 3, "{text}");
    assert_eq!(ifaces[0]["mtu"], 9000, "typeless: by name: {text}");
    assert_eq!(ifaces[1]["type"], "ovs-bridge", "{text}");
    assert!(ifaces[1].get("copy-mac-from").is_none(), "{text}");
    assert_eq!(ifaces[2]["type"], "ovs-interface", "{text}");
    assert_eq!(ifaces[2]["copy-mac-from"], "enp2s0", "{text}");
}
