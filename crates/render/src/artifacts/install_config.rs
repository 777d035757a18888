//! install-config.yaml: the cluster and every host (role, boot MAC, BMC,
//! network) as openshift-install reads them, the fields nodenet does not
//! own passed through as written, within the size etcd takes.

use super::*;
pub(crate) fn install_config_host(inv: &Inventory, host: &Host, has_net: bool) -> J {
    let bmc = host.bmc.as_ref().map(|bmc| {
        let cred_name = bmc
            .credentials
            .as_ref()
            .map(|c| c.value.as_str())
            .unwrap_or("");
        let cred = inv.credentials.get(cred_name).map(|c| &c.value);
        kube::InstallConfigBmc {
            address: &bmc.address.value,
            username: cred.map(|c| c.username.as_str()).unwrap_or(""),
            password: placeholder(&password_var(cred_name, cred)),
            disable_certificate_verification: bmc.disable_certificate_verification,
        }
    });
    let extra = match host.install_config_extra.as_ref().map(|n| n.to_json()) {
        Some(J::Object(extra)) => extra,
        _ => Map::new(),
    };
    let entry = kube::InstallConfigHost {
        name: &host.name.value,
        role: host.role.value.as_str(),
        bmc,
        boot_mac_address: host.boot_mac.as_ref().map(|m| m.value.as_str()),
        boot_mode: host.boot_mode.as_ref().map(|m| m.value.as_str()),
        root_device_hints: host.root_device_hints.as_ref().map(|h| h.to_json()),
        extra,
        network_config: has_net.then_some(TOKEN),
    };
    serde_json::to_value(entry).expect("a host entry of strings and JSON serialises")
}

/// install-config.yaml: complete when the inventory has the cluster
/// fields, else only `platform.baremetal.hosts` to paste in.
pub fn install_config(inv: &Inventory, texts: &[Option<String>]) -> String {
    let all: Vec<usize> = (0..inv.hosts.len()).collect();
    install_config_of(inv, texts, &all)
}

/// install-config.yaml for the hosts at `keep` (indices into the
/// inventory's hosts, in order).
pub(crate) fn install_config_of(
    inv: &Inventory,
    texts: &[Option<String>],
    keep: &[usize],
) -> String {
    let Some(envelope) = hosts_envelope(inv, keep) else {
        return install_config_serially(inv, texts, keep);
    };
    let items = host_items(inv, texts, keep, &envelope);
    envelope.with(items.iter().map(String::as_str))
}

/// install-config.yaml for `keep` with the mark of an [`Envelope`] for
/// their items (`None` for no hosts: the document says `hosts: []`).
pub(crate) fn hosts_envelope(inv: &Inventory, keep: &[usize]) -> Option<Envelope> {
    if keep.is_empty() {
        return None;
    }
    Envelope::of(&install_config_document(inv, keep, vec![Envelope::mark()]))
}

/// install-config.yaml made in one piece: for a list of no hosts (the
/// document says `hosts: []`), and the reference the pieces are tested
/// against.
pub(crate) fn install_config_serially(
    inv: &Inventory,
    texts: &[Option<String>],
    keep: &[usize],
) -> String {
    let hosts: Vec<J> = keep
        .iter()
        .map(|&i| install_config_host(inv, &inv.hosts[i], texts[i].is_some()))
        .collect();
    let doc = install_config_document(inv, keep, hosts);
    let states: Vec<&str> = keep.iter().filter_map(|&i| texts[i].as_deref()).collect();
    embed_all(&placeholders(&yaml(&doc)), &states, Embed::Mapping)
}

/// The hosts' items of the list (`- name: …`, each with its state and
/// its placeholders) as they stand in `envelope`, made on every core.
fn host_items(
    inv: &Inventory,
    texts: &[Option<String>],
    keep: &[usize],
    envelope: &Envelope,
) -> Vec<String> {
    use rayon::prelude::*;
    keep.par_iter()
        .map(|&i| {
            let host = install_config_host(inv, &inv.hosts[i], texts[i].is_some());
            envelope.item(host, texts[i].as_deref())
        })
        .collect()
}

/// The install-config document render writes without its hosts: what
/// `plan` compares between two versions of a cluster.
pub fn install_config_cluster(inv: &Inventory) -> J {
    let all: Vec<usize> = (0..inv.hosts.len()).collect();
    let mut doc = install_config_document(inv, &all, Vec::new());
    if let Some(bm) = doc
        .pointer_mut("/platform/baremetal")
        .and_then(J::as_object_mut)
    {
        bm.shift_remove("hosts");
    }
    as_written(&mut doc);
    doc
}

/// Each [`placeholder`] in `v` as the file shows it: `${VAR}`.
pub(crate) fn as_written(v: &mut J) {
    match v {
        J::String(s) => {
            if let Some(var) = s.strip_prefix(PLACEHOLDER) {
                *s = format!("${{{var}}}");
            }
        }
        J::Array(items) => items.iter_mut().for_each(as_written),
        J::Object(m) => m.values_mut().for_each(as_written),
        _ => {}
    }
}

/// install-config.yaml as JSON for the hosts at `keep` (`hosts`, their
/// entries): the given document's fields in their order, nodenet's set.
pub(crate) fn install_config_document(inv: &Inventory, keep: &[usize], hosts: Vec<J>) -> J {
    let c = &inv.cluster;
    let mut bm = Map::new();
    if !c.api_vips.is_empty() {
        bm.insert(
            "apiVIPs".into(),
            json!(c
                .api_vips
                .iter()
                .map(|v| v.value.to_string())
                .collect::<Vec<_>>()),
        );
    }
    if !c.ingress_vips.is_empty() {
        bm.insert(
            "ingressVIPs".into(),
            json!(c
                .ingress_vips
                .iter()
                .map(|v| v.value.to_string())
                .collect::<Vec<_>>()),
        );
    }
    if let Some(p) = &c.provisioning.network {
        bm.insert("provisioningNetwork".into(), json!(p.value.as_str()));
    }
    if let Some(cidr) = &c.provisioning.cidr {
        bm.insert(
            "provisioningNetworkCIDR".into(),
            json!(cidr.value.to_string()),
        );
    }
    if let Some(i) = &c.provisioning.interface {
        bm.insert("provisioningNetworkInterface".into(), json!(i.value));
    }
    if let Some(img) = &c.cluster_os_image {
        bm.insert("clusterOSImage".into(), json!(img.value));
    }
    bm.insert("hosts".into(), J::Array(hosts));
    match &c.install_config {
        None if !c.is_complete() => object([("platform", object([("baremetal", J::Object(bm))]))]),
        given => {
            let count = |r: Role| {
                keep.iter()
                    .filter(|&&i| inv.hosts[i].role.value == r)
                    .count()
            };
            // What the user gave first, in its order; nodenet's fields
            // set in place (or added after).
            let mut doc = match given.as_ref().map(|n| n.to_json()) {
                Some(J::Object(m)) => m,
                _ => Map::new(),
            };
            set_default(&mut doc, "apiVersion", json!("v1"));
            if let Some(b) = &c.base_domain {
                set_at(&mut doc, &["baseDomain"], json!(b.value));
            }
            if let Some(n) = &c.name {
                set_at(&mut doc, &["metadata", "name"], json!(n.value));
            }
            let networking = object_at(&mut doc, "networking");
            if !networking.contains_key("type") {
                set_default(networking, "networkType", json!("OVNKubernetes"));
            }
            // The older single field is what nodenet read too: written
            // once, as the list that replaced it.
            networking.shift_remove("machineCIDR");
            if !c.machine_networks.is_empty() {
                set_at(
                    networking,
                    &["machineNetwork"],
                    json!(c
                        .machine_networks
                        .iter()
                        .map(|n| json!({"cidr": n.value.to_string()}))
                        .collect::<Vec<_>>()),
                );
            }
            let control_plane = object_at(&mut doc, "controlPlane");
            set_default(control_plane, "name", json!("master"));
            set_at(
                control_plane,
                &["replicas"],
                json!(replicas(c.control_plane_replicas, count(Role::Master))),
            );
            set_default(control_plane, "platform", json!({"baremetal": {}}));
            let compute = doc.entry("compute").or_insert_with(|| json!([]));
            if !compute.is_array() {
                *compute = json!([]);
            }
            let pools = compute.as_array_mut().expect("made an array above");
            let worker_replicas = json!(replicas(c.compute_replicas, count(Role::Worker)));
            match pools
                .iter_mut()
                .find(|p| p.get("name").and_then(J::as_str) == Some("worker"))
                .and_then(J::as_object_mut)
            {
                Some(worker) => set_at(worker, &["replicas"], worker_replicas),
                None => pools.push(json!({"name": "worker", "replicas": worker_replicas, "platform": {"baremetal": {}}})),
            }
            let baremetal = object_at(object_at(&mut doc, "platform"), "baremetal");
            for (old, list) in [("apiVIP", "apiVIPs"), ("ingressVIP", "ingressVIPs")] {
                if bm.contains_key(list) {
                    baremetal.shift_remove(old);
                }
            }
            for (k, v) in bm {
                set_at(baremetal, &[k.as_str()], v);
            }
            // A secret is never written: filled in with envsubst.
            set_at(&mut doc, &["pullSecret"], placeholder("PULL_SECRET"));
            if let Some(J::Object(proxy)) = doc.get_mut("proxy") {
                for (key, var) in [("httpProxy", "HTTP_PROXY"), ("httpsProxy", "HTTPS_PROXY")] {
                    if proxy.get(key).and_then(J::as_str).is_some_and(has_password) {
                        proxy.insert(key.into(), placeholder(var));
                    }
                }
            }
            if let Some(k) = &c.ssh_key {
                set_at(&mut doc, &["sshKey"], json!(k));
            }
            J::Object(doc)
        }
    }
}

/// Whether a proxy URL carries a password (`http://user:pw@host:3128`):
/// it is then written as a placeholder, as every secret is.
pub(crate) fn has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// `value` under `path` in `doc`: in place when the key is there (the
/// document's order kept), else added after the rest; mappings made on
/// the way.
pub fn set_at(doc: &mut Map<String, J>, path: &[&str], value: J) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut m = doc;
    for k in parents {
        m = object_at(m, k);
    }
    // An existing key keeps its place (the map keeps insertion order).
    m.insert(last.to_string(), value);
}

/// `value` under `key` unless the document gives one.
pub(crate) fn set_default(doc: &mut Map<String, J>, key: &str, value: J) {
    doc.entry(key.to_string()).or_insert(value);
}

/// The mapping under `key`, made (or replacing what is no mapping).
pub(crate) fn object_at<'m>(doc: &'m mut Map<String, J>, key: &str) -> &'m mut Map<String, J> {
    let slot = doc
        .entry(key.to_string())
        .or_insert_with(|| J::Object(Map::new()));
    if !slot.is_object() {
        *slot = J::Object(Map::new());
    }
    slot.as_object_mut().expect("made a mapping above")
}

/// The replicas an install-config gave, else as many as the hosts listed
/// (an agent install may list none: the agent-config, or nothing, says
/// which machines join).
pub(crate) fn replicas(given: Option<u64>, listed: usize) -> u64 {
    match given {
        Some(n) if listed == 0 => n,
        _ => listed as u64,
    }
}

/// install-config.yaml within [`OBJECT_LIMIT`]: the installer stores it
/// whole in the `kube-system/cluster-config-v1` ConfigMap. Control-plane
/// hosts always stay; the other hosts beyond what fits are left out (the
/// installer provisions none of them) and provisioned after the install
/// from their scale-out BareMetalHosts, as the installer's users do.
pub fn install_config_within_limit(
    inv: &Inventory,
    texts: &[Option<String>],
) -> (String, Vec<Diagnostic>) {
    let all: Vec<usize> = (0..inv.hosts.len()).collect();
    let Some(envelope) = hosts_envelope(inv, &all) else {
        return (install_config_serially(inv, texts, &all), Vec::new());
    };
    let items = host_items(inv, texts, &all, &envelope);
    let full_len = envelope.len_with(items.iter().map(String::len));
    if full_len <= OBJECT_LIMIT {
        return (envelope.with(items.iter().map(String::as_str)), Vec::new());
    }
    let base = full_len - items.iter().map(String::len).sum::<usize>();
    let control = |r: Role| matches!(r, Role::Master | Role::Arbiter);
    let mut used = base;
    let mut keep = Vec::new();
    for (i, h) in inv.hosts.iter().enumerate() {
        if control(h.role.value) {
            used += items[i].len();
            keep.push(i);
        }
    }
    let mib = |n: usize| format!("{:.2} MiB", n as f64 / (1 << 20) as f64);
    let at = inv.cluster.hosts_span.or(inv.cluster.span);
    if used > OBJECT_LIMIT {
        let d = Diagnostic::error(
            Code::ObjectTooLarge,
            format!(
                "install-config.yaml would be {} with the control-plane hosts alone, past the {} kept per object (the installer stores it whole in the cluster-config-v1 ConfigMap)",
                mib(used),
                mib(OBJECT_LIMIT)
            ),
        )
        .at_opt(at);
        return (envelope.with(items.iter().map(String::as_str)), vec![d]);
    }
    let mut dropped = Vec::new();
    for (i, h) in inv.hosts.iter().enumerate() {
        if control(h.role.value) {
            continue;
        }
        let size = items[i].len();
        if dropped.is_empty() && used + size <= OBJECT_LIMIT {
            used += size;
            keep.push(i);
        } else {
            dropped.push(i);
        }
    }
    keep.sort_unstable();
    // The kept hosts' items as made above, in a document counting them.
    let text = match hosts_envelope(inv, &keep) {
        Some(kept) => kept.with(keep.iter().map(|&i| items[i].as_str())),
        None => install_config_serially(inv, texts, &keep),
    };
    let name = |i: usize| inv.hosts[i].name.value.as_str();
    let range = match dropped.as_slice() {
        [one] => name(*one).to_string(),
        [first, .., last] => format!("{} … {}", name(*first), name(*last)),
        [] => String::new(),
    };
    let d = Diagnostic::warning(
        Code::InstallConfigScaleOut,
        format!(
            "install-config.yaml would be {} with every host, past the {} kept per object (the installer stores it whole in the cluster-config-v1 ConfigMap): it lists {} hosts ({}), and the other {} ({range}) are provisioned after the install from scale-out/<host>.yaml",
            mib(full_len),
            mib(OBJECT_LIMIT),
            keep.len(),
            mib(text.len()),
            dropped.len()
        ),
    )
    .at_opt(at)
    .help("after `openshift-install`, `oc apply -f scale-out/` (each file: the host's BareMetalHost, its BMC and network Secrets); raise the worker MachineSet's replicas to provision them");
    (text, vec![d])
}
