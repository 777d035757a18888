//! Round trip (issue #42, item 5): a NetBox filled from each example the
//! way its users model hosts (devices, physical ports with MAC address
//! objects, LAGs, VLAN subinterfaces, IP addresses, VIPs), with only what
//! NetBox cannot hold in config contexts, read back with `netbox:`,
//! renders what the example file renders.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Map, Value as J};

use super::said;
use crate::common::netbox::*;
use crate::common::*;

/// The example's YAML as JSON (nodenet's own reader).
fn example(path: &Path) -> J {
    let text = std::fs::read_to_string(path).unwrap();
    nodenet_model::yaml::parse(&text, 0).unwrap().to_json()
}

/// `nodenet hosts --format json` of the example: what nodenet resolved
/// per host (role, BMC address, each interface's MAC, bond, VLAN).
fn resolved_hosts(path: &Path) -> Vec<J> {
    let o = run(nodenet().args(["hosts", "--format", "json"]).arg(path));
    assert!(o.status.success(), "{}", said(&o));
    json(&o)["hosts"].as_array().unwrap().clone()
}

/// The host's NMState as render writes it, as JSON.
fn state(path: &Path, host: &str) -> J {
    let o = run(nodenet().args(["show-host", host]).arg(path));
    assert!(o.status.success(), "{}", said(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    nodenet_model::yaml::parse(&text, 0).unwrap().to_json()
}

/// The host's fields beside its network, its template's under its own.
fn host_fields(doc: &J, host: &J) -> Map<String, J> {
    let mut fields = Map::new();
    if let Some(t) = host["template"].as_str() {
        fields.extend(doc["templates"][t].as_object().unwrap().clone());
    }
    fields.extend(host.as_object().unwrap().clone());
    for k in [
        "name", "template", "vars", "count", "nics", "network", "role",
    ] {
        fields.remove(k);
    }
    fields
}

/// `show-host` writes the state as the node gets it: an interface that
/// copies another's MAC (`copy-mac-from`, br-ex's) with that MAC. The
/// intent's own words again, from the host's or its template's network.
fn as_written(state: &mut J, doc: &J, host: &J) {
    let template = host["template"].as_str().map(|t| &doc["templates"][t]);
    let written: Vec<&J> = [Some(host), template]
        .into_iter()
        .flatten()
        .flat_map(|h| h["network"]["interfaces"].as_array().into_iter().flatten())
        .collect();
    for i in state["interfaces"].as_array_mut().unwrap() {
        let copy = written
            .iter()
            .find(|w| w["name"] == i["name"] && w["type"] == i["type"])
            .and_then(|w| w.get("copy-mac-from"));
        if let (Some(copy), Some(i)) = (copy, i.as_object_mut()) {
            i.remove("mac-address");
            i.insert("copy-mac-from".into(), copy.clone());
        }
    }
}

/// Keys of an address family block that NetBox's IP address objects say
/// (an address assigned, or none: the family disabled).
fn objects_say(family: &J) -> bool {
    let f = family.as_object().cloned().unwrap_or_default();
    f.iter().all(|(k, v)| match k.as_str() {
        "address" | "enabled" => true,
        "dhcp" | "autoconf" => v == &J::Bool(false),
        _ => false,
    })
}

/// Fills NetBox with the example's cluster; the `netbox:` query that
/// reads it back.
fn fill(nb: &NetBox, path: &Path) -> String {
    let doc = example(path);
    let cluster = &doc["cluster"];
    let name = cluster["name"].as_str().unwrap();
    let domain = cluster["baseDomain"].as_str().unwrap();
    let mut cluster_ctx = cluster.as_object().unwrap().clone();
    for k in ["name", "apiVIPs", "ingressVIPs"] {
        cluster_ctx.remove(k);
    }
    let mut context = json!({"nodenet": {"cluster": cluster_ctx}});
    if let Some(c) = doc.get("credentials") {
        context["nodenet"]["credentials"] = c.clone();
    }
    let m = nb.cluster_named(name, context);
    // The VIPs: addresses of role VIP named as the installer's DNS
    // records are (an earlier run's, kept in the database, removed: a
    // cluster whose hosts use DHCP only takes any VIP of those names).
    for (key, dns) in [
        ("apiVIPs", format!("api.{name}.{domain}")),
        ("ingressVIPs", format!("*.apps.{name}.{domain}")),
    ] {
        let earlier = nb.call(
            "GET",
            &format!("ipam/ip-addresses/?dns_name={dns}&role=vip"),
            &J::Null,
        );
        for old in earlier["results"].as_array().into_iter().flatten() {
            nb.call(
                "DELETE",
                &format!("ipam/ip-addresses/{}/", old["id"]),
                &J::Null,
            );
        }
        for vip in cluster[key].as_array().into_iter().flatten() {
            let vip = vip.as_str().unwrap();
            let len = if vip.contains(':') { 128 } else { 32 };
            nb.address(
                &m,
                &format!("{vip}/{len}"),
                None,
                json!({"role": "vip", "dns_name": dns}),
            );
        }
    }
    let mut vlans: BTreeMap<u64, J> = BTreeMap::new();
    let hosts = resolved_hosts(path);
    let written = doc["hosts"].as_array().unwrap();
    for h in &hosts {
        let host = h["name"].as_str().unwrap();
        // Its entry, or the generator (`count:`) that made it.
        let w = written
            .iter()
            .find(|w| w["name"] == host)
            .or_else(|| written.iter().find(|w| w.get("count").is_some()))
            .unwrap();
        let role = if h["role"] == "master" {
            "control-plane"
        } else {
            "worker"
        };
        let device = nb.device(&m, host, role);
        let mut fields = host_fields(&doc, w);
        let mut bmc = fields
            .remove("bmc")
            .and_then(|b| b.as_object().cloned())
            .unwrap_or_default();
        if let Some(address) = h["bmc"].as_str() {
            bmc.insert("address".into(), json!(address));
        }
        if !bmc.is_empty() {
            fields.insert("bmc".into(), J::Object(bmc));
        }
        let mut state = state(path, host);
        as_written(&mut state, &doc, w);
        let network = fill_interfaces(nb, &m, &mut vlans, &device, h, &state);
        let local = json!({"nodenet": {"host": fields, "network": network}});
        nb.patch(
            &format!("dcim/devices/{}/", device["id"]),
            json!({"local_context_data": local}),
        );
    }
    format!("netbox:?cluster={name}&site={}", m.site_slug)
}

/// The host's interfaces as NetBox objects; what they cannot say (a
/// bond's mode and options, DHCP, Open vSwitch, routes, DNS) returned
/// as the config context's `network`.
fn fill_interfaces(
    nb: &NetBox,
    m: &Made,
    vlans: &mut BTreeMap<u64, J>,
    device: &J,
    h: &J,
    state: &J,
) -> J {
    let resolved: BTreeMap<&str, &J> = h["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["name"].as_str().unwrap(), i))
        .collect();
    let mut made: BTreeMap<String, J> = BTreeMap::new();
    let mut context_ifaces = Vec::new();
    let ifaces = state["interfaces"].as_array().unwrap();
    // LAGs and bridges before their members, parents before VLANs.
    let rank = |t: &str| match t {
        "bond" | "linux-bridge" => 0,
        "ethernet" => 1,
        "vlan" => 2,
        _ => 3,
    };
    let mut order: Vec<&J> = ifaces.iter().collect();
    order.sort_by_key(|i| rank(i["type"].as_str().unwrap_or("")));
    for i in order {
        let name = i["name"].as_str().unwrap();
        let kind = i["type"].as_str().unwrap_or("");
        let mut body = json!({"enabled": i["state"] != "down"});
        if let Some(mtu) = i.get("mtu") {
            body["mtu"] = mtu.clone();
        }
        let mut rest = Map::new();
        match kind {
            "ethernet" => {
                let lag = ifaces.iter().find(|b| {
                    b["link-aggregation"]["port"]
                        .as_array()
                        .is_some_and(|p| p.iter().any(|p| p == name))
                });
                if let Some(lag) = lag {
                    body["lag"] = made[lag["name"].as_str().unwrap()]["id"].clone();
                }
            }
            "bond" => {
                let la = &i["link-aggregation"];
                let mut extra = la.as_object().unwrap().clone();
                extra.remove("port");
                if extra.get("mode") == Some(&json!("802.3ad")) {
                    extra.remove("mode");
                }
                if !extra.is_empty() {
                    rest.insert("link-aggregation".into(), J::Object(extra));
                }
            }
            "vlan" => {
                let id = i["vlan"]["id"].as_u64().unwrap();
                let vlan = vlans
                    .entry(id)
                    .or_insert_with(|| nb.vlan(m.site, id as u16))
                    .clone();
                let base = i["vlan"]["base-iface"].as_str().unwrap();
                body["parent"] = made[base]["id"].clone();
                body["mode"] = json!("access");
                body["untagged_vlan"] = vlan["id"].clone();
            }
            _ => {
                // No NetBox type: the interface as the context says it.
                context_ifaces.push(i.clone());
                continue;
            }
        }
        let netbox_type = match kind {
            "bond" => "lag",
            "vlan" => "virtual",
            _ => "1000base-t",
        };
        let iface = nb.interface(device, name, netbox_type, body);
        if let Some(mac) = resolved[name]["mac"].as_str() {
            nb.mac(&iface, mac);
        }
        for family in ["ipv4", "ipv6"] {
            let f = &i[family];
            for a in f["address"].as_array().into_iter().flatten() {
                let cidr = format!("{}/{}", a["ip"].as_str().unwrap(), a["prefix-length"]);
                nb.address(m, &cidr, Some(&iface), json!({}));
            }
            if !f.is_null() && !objects_say(f) {
                let mut f = f.as_object().unwrap().clone();
                f.remove("address");
                rest.insert(family.into(), J::Object(f));
            }
        }
        if !rest.is_empty() {
            rest.insert("name".into(), json!(name));
            context_ifaces.push(J::Object(rest));
        }
        made.insert(name.to_string(), iface);
    }
    let mut network = state.as_object().unwrap().clone();
    network.remove("interfaces");
    if !context_ifaces.is_empty() {
        network.insert("interfaces".into(), J::Array(context_ifaces));
    }
    J::Object(network)
}

/// Every file of a render but the two that name their input (the
/// manifest, and the topology page's sources), by path.
fn rendered(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .filter(|(name, _)| name != "manifest.json" && name != "topology.html")
        .collect()
}

/// A rendered file as what its consumer reads: YAML documents as data,
/// with the NMState they carry as text (a Secret's, an Ignition file's
/// gzip in a `data:` URL) read as data too. NetBox keeps a config
/// context as PostgreSQL `jsonb`, which does not keep the order of keys,
/// and the mapping writes an interface's keys in an order of its own:
/// maps are compared as maps, lists in order.
fn as_read(name: &str, bytes: &[u8]) -> J {
    if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
        return json!(String::from_utf8_lossy(bytes));
    }
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let docs = nodenet_model::yaml::parse_all(&text, 0).unwrap();
    let mut docs: Vec<J> = docs.iter().map(|d| d.to_json()).collect();
    docs.iter_mut().for_each(read_embedded);
    J::Array(docs)
}

fn read_embedded(v: &mut J) {
    match v {
        J::String(s) => {
            let text = match s.strip_prefix("data:;base64,") {
                Some(b64) => {
                    use base64::Engine;
                    let raw = base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .unwrap();
                    let mut text = String::new();
                    std::io::Read::read_to_string(
                        &mut flate2::read::GzDecoder::new(&raw[..]),
                        &mut text,
                    )
                    .unwrap();
                    text
                }
                None if s.contains('\n') && s.contains(": ") => s.clone(),
                None => return,
            };
            if let Ok(doc) = nodenet_model::yaml::parse(&text, 0) {
                let mut doc = doc.to_json();
                if doc.is_object() {
                    read_embedded(&mut doc);
                    *v = doc;
                }
            }
        }
        J::Array(a) => a.iter_mut().for_each(read_embedded),
        J::Object(m) => m.values_mut().for_each(read_embedded),
        _ => {}
    }
}

/// Where two values first differ: the path, and both values there.
fn difference(a: &J, b: &J, at: String) -> String {
    match (a, b) {
        (J::Object(x), J::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) if p == q => {}
                    (Some(p), Some(q)) => return difference(p, q, format!("{at}.{k}")),
                    (p, q) => return format!("{at}.{k}: {p:?} / {q:?}"),
                }
            }
        }
        (J::Array(x), J::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if p != q {
                    return difference(p, q, format!("{at}[{i}]"));
                }
            }
        }
        _ => {}
    }
    format!("{at}: {a} / {b}")
}

#[test]
fn each_example_filled_into_netbox_and_read_back_renders_what_the_example_renders() {
    let Some(nb) = netbox() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut examples = 0;
    for entry in std::fs::read_dir(repo().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        examples += 1;
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let query = fill(nb, &path);
        let mut outs = Vec::new();
        for (k, input) in [path.to_str().unwrap(), query.as_str()].iter().enumerate() {
            let out = dir.path().join(format!("{stem}-{k}"));
            let o = run(nb
                .nodenet()
                .env("BMC_PASSWORD", "round-trip")
                .args(["render", input, "-o"])
                .arg(&out));
            assert!(o.status.success(), "{stem}: {input}: {}", said(&o));
            outs.push(rendered(&out));
        }
        let (file, netbox) = (&outs[0], &outs[1]);
        assert_eq!(
            file.keys().collect::<Vec<_>>(),
            netbox.keys().collect::<Vec<_>>(),
            "{stem}: the same files"
        );
        assert!(
            file.keys().any(|k| k.ends_with(".nmconnection")),
            "{stem}: {:?}",
            file.keys()
        );
        let mut same_bytes = 0;
        for (name, bytes) in file {
            if bytes == &netbox[name] {
                same_bytes += 1;
                continue;
            }
            // nmstate's keyfiles are made from the state: byte for byte.
            assert!(
                !name.ends_with(".nmconnection"),
                "{stem}: {name} differs:\n{}\n---\n{}",
                String::from_utf8_lossy(bytes),
                String::from_utf8_lossy(&netbox[name])
            );
            let (a, b) = (as_read(name, bytes), as_read(name, &netbox[name]));
            assert!(
                a == b,
                "{stem}: {name}, as its consumer reads it, differs at {}",
                difference(&a, &b, String::new())
            );
        }
        eprintln!(
            "{stem}: {} files, {same_bytes} byte for byte, the rest equal as read",
            file.len()
        );
    }
    assert_eq!(examples, 6, "every example");
    // Two examples name their cluster `ostest`: NetBox keeps cluster
    // names unique per site only, and a query by name alone is refused.
    let o = run(nb.nodenet().args(["check", "netbox:?cluster=ostest"]));
    assert!(!o.status.success());
    let err = said(&o);
    assert!(
        err.contains("clusters named `ostest`") && err.contains("add `site=`"),
        "{err}"
    );
}
