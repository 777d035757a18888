//! Every artifact that carries host networking, built from a checked
//! inventory. Pure functions from inventory to file contents; writing is
//! [`crate::output`]'s job.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde_json::{json, Map, Value as J};

use nodenet_check::HostReport;
use nodenet_model::{Cluster, Code, Credentials, Diagnostic, Host, Inventory, Role, Secret};

use crate::openshift::OBJECT_LIMIT;
use crate::output::OutFile;

pub const NAMESPACE: &str = "openshift-machine-api";

pub fn yaml(v: &J) -> String {
    crate::yaml_out::to_string(v)
}

/// Stand-in value replaced by [`embed`]: each host state is emitted as
/// YAML once and spliced into every envelope that carries it, instead of
/// being re-emitted (YAML emission dominated render time).
const TOKEN: &str = "__nodenet_embedded__";

/// How embedded text goes in.
#[derive(Clone, Copy)]
pub enum Embed {
    /// As a nested block mapping (a `networkConfig:` / `desiredState:`).
    Mapping,
    /// As a literal block scalar (a Secret's `stringData.nmstate: |`).
    Literal,
}

/// Replaces the i-th `key: TOKEN` line of `envelope` with `texts[i]`
/// indented under the key (one linear pass, for 10,000-host documents).
pub fn embed_all(envelope: &str, texts: &[&str], how: Embed) -> String {
    let needle = format!(": {TOKEN}\n");
    let mut out =
        String::with_capacity(envelope.len() + texts.iter().map(|t| t.len() * 2).sum::<usize>());
    let mut rest = envelope;
    for text in texts {
        let Some(pos) = rest.find(&needle) else { break };
        let line_start = rest[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line = &rest[line_start..pos];
        let key_col = line.len() - line.trim_start_matches([' ', '-']).len();
        out.push_str(&rest[..pos]);
        out.push_str(match how {
            Embed::Mapping => ":\n",
            Embed::Literal => ": |\n",
        });
        for l in text.lines() {
            if !l.is_empty() {
                out.extend(std::iter::repeat_n(' ', key_col + 2));
                out.push_str(l);
            }
            out.push('\n');
        }
        rest = &rest[pos + needle.len()..];
    }
    out.push_str(rest);
    out
}

pub fn embed(envelope: &str, text: &str, how: Embed) -> String {
    embed_all(envelope, &[text], how)
}

/// Stand-in for a `${VAR}` placeholder that [`placeholders`] turns into a
/// block scalar.
const PLACEHOLDER: &str = "__nodenet_placeholder__";

/// A value to be filled in later with `envsubst`: `${var}`.
pub fn placeholder(var: &str) -> J {
    J::String(format!("{PLACEHOLDER}{var}"))
}

/// Writes every [`placeholder`] value as a literal block scalar with an
/// explicit indentation indicator, the placeholder alone on its line:
///
/// ```yaml
/// password: |2-
///   ${BMC_PASSWORD}
/// ```
///
/// Whatever one-line text `envsubst` puts there is read back as that very
/// string by every YAML reader: no character is special inside a literal
/// block (`:`, `#`, quotes, backslashes, `{`, a leading `-` or space), and
/// the indicator keeps leading spaces as content. A plain, single- or
/// double-quoted scalar each break on some of those.
pub fn placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(pos) = rest.find(PLACEHOLDER) {
        let line_start = rest[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line = &rest[line_start..pos];
        let Some(before) = line.strip_suffix(": ") else {
            // Not a mapping value (never written so): leave it.
            out.push_str(&rest[..pos + PLACEHOLDER.len()]);
            rest = &rest[pos + PLACEHOLDER.len()..];
            continue;
        };
        // The key's column is the mapping's indentation, which the
        // indicator counts from (after `- ` too).
        let key_col = before.len() - before.trim_start_matches([' ', '-']).len();
        let end = rest[pos..]
            .find('\n')
            .map(|i| pos + i)
            .unwrap_or(rest.len());
        let var = &rest[pos + PLACEHOLDER.len()..end];
        out.push_str(&rest[..pos]);
        out.push_str("|2-\n");
        out.extend(std::iter::repeat_n(' ', key_col + 2));
        out.push_str("${");
        out.push_str(var);
        out.push('}');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Every host's intent as YAML text, emitted once.
pub fn intent_texts(inv: &Inventory) -> Vec<Option<String>> {
    use rayon::prelude::*;
    inv.hosts
        .par_iter()
        .map(|h| intent(h).map(|j| yaml(&j)))
        .collect()
}

/// The host's network intent as written (placeholders expanded): what the
/// node applies live, where `copy-mac-from` works.
pub fn intent(host: &Host) -> Option<J> {
    host.network.as_ref().map(|n| n.to_json())
}

/// The `.link` files that pin a host's NIC names (`nicBinding: pin`);
/// none for other bindings.
pub fn pinned_names(host: &Host, cluster: &Cluster) -> Vec<nodenet_model::nic_binding::LinkFile> {
    if host.binding(cluster) != nodenet_model::nic_binding::NicBinding::Pin {
        return Vec::new();
    }
    nodenet_model::nic_binding::link_files(&host.name.value, &host.nics)
}

/// Per host: keyfiles (0600), the NMState they were generated from, and
/// the `.link` files pinning its NIC names (`systemd-network/`).
pub fn host_files(
    host: &Host,
    cluster: &Cluster,
    report: &HostReport,
    intent_text: Option<&String>,
    out: &mut Vec<OutFile>,
) {
    // A change's name may be its policy's (`nncp/x`, `mc:cluster.yml`).
    let dir = format!("hosts/{}", host.name.value.replace(['/', ':'], "-"));
    for link in pinned_names(host, cluster) {
        out.push(OutFile::new(
            format!("{dir}/systemd-network/{}", link.file_name),
            link.text,
            0o644,
        ));
    }
    if let Some(keyfiles) = &report.keyfiles {
        for (name, content) in keyfiles {
            out.push(OutFile::new(
                format!("{dir}/system-connections/{name}"),
                content.as_bytes(),
                0o600,
            ));
        }
    }
    if report.keyfiles.is_some() {
        // The state as written unless copy-mac-from was pinned.
        let text = match (&report.pinned_state, intent_text) {
            (Some(pinned), _) => yaml(pinned),
            (None, Some(t)) => t.clone(),
            (None, None) => return,
        };
        out.push(OutFile::new(format!("{dir}/nmstate.yml"), text, 0o644));
    }
}

/// Environment variable the rendered install-config expects the BMC
/// password in (install-config carries passwords inline; nodenet never
/// writes them there).
pub fn password_var(cred_name: &str, cred: Option<&Credentials>) -> String {
    nodenet_model::password_var(cred_name, cred)
}

fn install_config_host(inv: &Inventory, host: &Host, has_net: bool) -> J {
    let mut h = Map::new();
    h.insert("name".into(), json!(host.name.value));
    h.insert("role".into(), json!(host.role.value.as_str()));
    if let Some(bmc) = &host.bmc {
        let cred_name = bmc
            .credentials
            .as_ref()
            .map(|c| c.value.as_str())
            .unwrap_or("");
        let cred = inv.credentials.get(cred_name).map(|c| &c.value);
        h.insert(
            "bmc".into(),
            json!({
                "address": bmc.address.value,
                "username": cred.map(|c| c.username.as_str()).unwrap_or(""),
                "password": placeholder(&password_var(cred_name, cred)),
                "disableCertificateVerification": bmc.disable_certificate_verification,
            }),
        );
    }
    if let Some(mac) = &host.boot_mac {
        h.insert("bootMACAddress".into(), json!(mac.value));
    }
    if let Some(mode) = &host.boot_mode {
        h.insert("bootMode".into(), json!(mode.value));
    }
    if let Some(hints) = &host.root_device_hints {
        h.insert("rootDeviceHints".into(), hints.to_json());
    }
    if let Some(J::Object(extra)) = host.install_config_extra.as_ref().map(|n| n.to_json()) {
        h.extend(extra);
    }
    if has_net {
        h.insert("networkConfig".into(), json!(TOKEN));
    }
    J::Object(h)
}

/// install-config.yaml: complete when the inventory has the cluster
/// fields, else only `platform.baremetal.hosts` to paste in.
pub fn install_config(inv: &Inventory, texts: &[Option<String>]) -> String {
    let all: Vec<usize> = (0..inv.hosts.len()).collect();
    install_config_of(inv, texts, &all)
}

/// install-config.yaml for the hosts at `keep` (indices into the
/// inventory's hosts, in order).
fn install_config_of(inv: &Inventory, texts: &[Option<String>], keep: &[usize]) -> String {
    let hosts: Vec<J> = keep
        .iter()
        .map(|&i| install_config_host(inv, &inv.hosts[i], texts[i].is_some()))
        .collect();
    let doc = install_config_document(inv, keep, hosts);
    let states: Vec<&str> = keep.iter().filter_map(|&i| texts[i].as_deref()).collect();
    embed_all(&placeholders(&yaml(&doc)), &states, Embed::Mapping)
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
fn as_written(v: &mut J) {
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
fn install_config_document(inv: &Inventory, keep: &[usize], hosts: Vec<J>) -> J {
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
fn has_password(url: &str) -> bool {
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
fn set_default(doc: &mut Map<String, J>, key: &str, value: J) {
    doc.entry(key.to_string()).or_insert(value);
}

/// The mapping under `key`, made (or replacing what is no mapping).
fn object_at<'m>(doc: &'m mut Map<String, J>, key: &str) -> &'m mut Map<String, J> {
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
fn replicas(given: Option<u64>, listed: usize) -> u64 {
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
    let full = install_config(inv, texts);
    if full.len() <= OBJECT_LIMIT {
        return (full, Vec::new());
    }
    let Some(items) = list_items(&full, "hosts:") else {
        return (full, Vec::new());
    };
    let base = full.len() - items.iter().map(|(a, b)| b - a).sum::<usize>();
    let control = |r: Role| matches!(r, Role::Master | Role::Arbiter);
    let mut used = base;
    let mut keep = Vec::new();
    for (i, h) in inv.hosts.iter().enumerate() {
        if control(h.role.value) {
            used += items[i].1 - items[i].0;
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
        return (full, vec![d]);
    }
    let mut dropped = Vec::new();
    for (i, h) in inv.hosts.iter().enumerate() {
        if control(h.role.value) {
            continue;
        }
        let size = items[i].1 - items[i].0;
        if dropped.is_empty() && used + size <= OBJECT_LIMIT {
            used += size;
            keep.push(i);
        } else {
            dropped.push(i);
        }
    }
    keep.sort_unstable();
    let text = install_config_of(inv, texts, &keep);
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
            mib(full.len()),
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

/// The byte ranges of the items of the block list under the first line
/// that ends with `key` (a `- ` line at one indentation each), in order.
fn list_items(text: &str, key: &str) -> Option<Vec<(usize, usize)>> {
    let mut offset = 0;
    let mut lines = text.split_inclusive('\n').map(|l| {
        let at = offset;
        offset += l.len();
        (at, l)
    });
    lines.by_ref().find(|(_, l)| l.trim_end().ends_with(key))?;
    let mut items: Vec<(usize, usize)> = Vec::new();
    let mut indent: Option<usize> = None;
    for (at, l) in lines {
        let body = l.trim_start_matches(' ');
        let col = l.len() - body.len();
        match indent {
            None if body.starts_with("- ") => {
                indent = Some(col);
                items.push((at, at + l.len()));
            }
            None => return None,
            Some(i) if col == i && body.starts_with("- ") => items.push((at, at + l.len())),
            Some(i) if col > i || body.trim().is_empty() => {
                if let Some(last) = items.last_mut() {
                    last.1 = at + l.len();
                }
            }
            Some(_) => break,
        }
    }
    Some(items)
}

/// The rendezvous host's address: the inventory's, else the first
/// master's first static address in the primary machine network (any of
/// its addresses without machine networks). `addresses` per host.
pub fn rendezvous_ip(inv: &Inventory, addresses: &[Vec<IpAddr>]) -> Option<IpAddr> {
    let primary = inv.cluster.machine_networks.first().map(|m| m.value);
    let in_primary = |ip: &IpAddr| primary.is_none_or(|m| m.contains(ip));
    inv.rendezvous_ip.as_ref().map(|r| r.value).or_else(|| {
        inv.hosts
            .iter()
            .zip(addresses)
            .filter(|(h, _)| h.role.value == Role::Master)
            .find_map(|(_, a)| a.iter().copied().find(in_primary))
    })
}

/// agent-config.yaml; rendezvousIP is the inventory's, else the first
/// master's first static address in the primary machine network (the
/// first one's; any of its addresses without machine networks): the
/// other agents reach the rendezvous host there, not on a PXE or storage
/// network.
pub fn agent_config(
    inv: &Inventory,
    addresses: &[Vec<IpAddr>],
    texts: &[Option<String>],
) -> String {
    let rendezvous = rendezvous_ip(inv, addresses);
    // The agent installer identifies a listed host by a MAC and refuses
    // one without: a host with none is left out (it joins as any machine
    // that boots the ISO; check says so), one with only a boot MAC gets
    // the interface openshift-install gives it too (`boot`).
    let listed: Vec<(&Host, Vec<J>, Option<&str>)> = inv
        .hosts
        .iter()
        .zip(texts)
        .filter_map(|(h, text)| {
            let ifaces = agent_interfaces(h);
            (!ifaces.is_empty()).then_some((h, ifaces, text.as_deref()))
        })
        .collect();
    let hosts: Vec<J> = listed
        .iter()
        .map(|(h, ifaces, text)| agent_host(h, ifaces.clone(), text.is_some()))
        .collect();
    // What the user gave first, in its order; nodenet's fields set in place.
    let mut doc = match inv.cluster.agent_config.as_ref().map(|n| n.to_json()) {
        Some(J::Object(m)) => m,
        _ => Map::new(),
    };
    set_default(&mut doc, "apiVersion", json!("v1beta1"));
    set_default(&mut doc, "kind", json!("AgentConfig"));
    let name = inv.cluster.name.as_ref().map(|n| n.value.clone());
    match name {
        Some(name) => set_at(&mut doc, &["metadata", "name"], json!(name)),
        None => set_default(object_at(&mut doc, "metadata"), "name", json!("cluster")),
    }
    if let Some(ip) = rendezvous {
        set_at(&mut doc, &["rendezvousIP"], json!(ip.to_string()));
    }
    set_at(&mut doc, &["hosts"], J::Array(hosts));
    let states: Vec<&str> = listed.iter().filter_map(|(_, _, t)| *t).collect();
    embed_all(&yaml(&J::Object(doc)), &states, Embed::Mapping)
}

/// A host as agent-config.yaml and nodes-config.yaml list one (the
/// installer's `agent.Host`); its `networkConfig` is embedded after.
fn agent_host(h: &Host, ifaces: Vec<J>, has_network: bool) -> J {
    let mut m = Map::new();
    m.insert("hostname".into(), json!(h.name.value));
    if h.role.value != Role::Unset {
        m.insert("role".into(), json!(h.role.value.as_str()));
    }
    m.insert("interfaces".into(), J::Array(ifaces));
    if let Some(hints) = &h.root_device_hints {
        m.insert("rootDeviceHints".into(), hints.to_json());
    }
    if has_network {
        m.insert("networkConfig".into(), json!(TOKEN));
    }
    J::Object(m)
}

/// `oc adm node-image create`'s nodes-config.yaml for hosts added to a
/// cluster the agent installer made: each host as agent-config.yaml
/// lists it (a host with no MAC is left out, as there), with its intent
/// as its `networkConfig`. `None` when no host can be listed.
pub fn nodes_config(hosts: &[&Host]) -> Option<String> {
    let listed: Vec<(&Host, Vec<J>, Option<String>)> = hosts
        .iter()
        .filter_map(|h| {
            let ifaces = agent_interfaces(h);
            (!ifaces.is_empty()).then(|| (*h, ifaces, intent(h).map(|j| yaml(&j))))
        })
        .collect();
    if listed.is_empty() {
        return None;
    }
    let entries: Vec<J> = listed
        .iter()
        .map(|(h, ifaces, text)| agent_host(h, ifaces.clone(), text.is_some()))
        .collect();
    let doc = object([("hosts", J::Array(entries))]);
    let states: Vec<&str> = listed.iter().filter_map(|(_, _, t)| t.as_deref()).collect();
    let head = "# The hosts this change adds, for `oc adm node-image create --dir=DIR` (this\n# file in DIR): boot each from the ISO it writes; the node joins the cluster.\n";
    Some(format!(
        "{head}{}",
        embed_all(&yaml(&doc), &states, Embed::Mapping)
    ))
}

/// A host's interfaces for agent-config.yaml: its NICs with a MAC, else
/// its boot MAC as openshift-install names it (`boot`).
pub fn agent_interfaces(h: &Host) -> Vec<J> {
    let nics: Vec<J> = h
        .nics
        .iter()
        .filter_map(|n| Some(json!({"name": n.name.value, "macAddress": n.mac.as_ref()?.value})))
        .collect();
    match (&h.boot_mac, nics.is_empty()) {
        (Some(mac), true) => vec![json!({"name": "boot", "macAddress": mac.value})],
        _ => nics,
    }
}

/// A JSON object of `entries`, moved in: `json!` would serialise (copy)
/// every value it is given, and these carry all 10,000 hosts.
fn object<const N: usize>(entries: [(&str, J); N]) -> J {
    J::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// kubernetes-nmstate's default `maxUnavailable`.
pub const DEFAULT_MAX_UNAVAILABLE: &str = "50%";

pub use nodenet_check::traffic::{is_control_plane, nodes_at_once};

/// A policy's `maxUnavailable`: one node at a time for what carries the
/// cluster's own traffic and for every policy on control-plane nodes
/// (kubernetes-nmstate's 50 % takes two of three masters at once),
/// kubernetes-nmstate's default for the rest.
pub fn max_unavailable(pool: &str, carries_cluster_traffic: bool) -> J {
    if carries_cluster_traffic || is_control_plane(pool) {
        json!(1)
    } else {
        json!(DEFAULT_MAX_UNAVAILABLE)
    }
}

/// One NodeNetworkConfigurationPolicy: a name, the nodes it selects, how
/// many of them may be unavailable at once, and its state.
pub struct Policy {
    pub name: String,
    /// `metadata.labels` (none for render's own policies).
    pub labels: BTreeMap<String, String>,
    pub selector: BTreeMap<String, String>,
    pub max_unavailable: J,
    pub state: J,
}

impl Policy {
    /// The policy as a YAML document. Takes the policy: its state is moved
    /// into the document, not copied (a per-node policy for each of
    /// 10,000 hosts).
    pub fn into_yaml(self) -> String {
        let mut spec = Map::new();
        spec.insert("nodeSelector".into(), json!(self.selector));
        spec.insert("maxUnavailable".into(), self.max_unavailable);
        spec.insert("desiredState".into(), self.state);
        let mut metadata = Map::new();
        metadata.insert("name".into(), json!(self.name));
        if !self.labels.is_empty() {
            metadata.insert("labels".into(), json!(self.labels));
        }
        yaml(&json!({
            "apiVersion": "nmstate.io/v1",
            "kind": "NodeNetworkConfigurationPolicy",
            "metadata": J::Object(metadata),
            "spec": J::Object(spec),
        }))
    }
}

/// A host's day-2 state (`nodenet_check::br_ex::day2_state`: what
/// configure-ovs owns left out, br-ex's masquerade addresses kept) split
/// in two: what carries the cluster's own traffic
/// (`nodenet_check::traffic`) with the routes and name servers, and the
/// rest. A policy never names an interface another one owns.
pub fn split_state(inv: &Inventory, host: &Host) -> Option<(J, J)> {
    let node = host.network.as_ref()?;
    let plan = nodenet_check::br_ex::plan(host, &inv.cluster).ok()?;
    let state = nodenet_check::br_ex::day2_state(host, &inv.cluster, &plan)?;
    let derived;
    let carried = match &plan {
        // The derived br-ex and its uplink carry what the intent's uplink did.
        nodenet_check::br_ex::BrExPlan::Derived { .. } => {
            derived = nodenet_model::yaml::Node::from_json(&state, node.span);
            &derived
        }
        _ => node,
    };
    let carriers = nodenet_check::traffic::cluster_traffic(host, &inv.cluster, carried);
    let J::Object(map) = state else {
        return None;
    };
    let mut cluster = Map::new();
    let mut rest = Map::new();
    for (k, v) in map {
        match (k.as_str(), v) {
            ("interfaces", J::Array(ifaces)) => {
                let (c, r): (Vec<J>, Vec<J>) = ifaces.into_iter().partition(|i| {
                    i.get("name")
                        .and_then(J::as_str)
                        .is_some_and(|n| carriers.contains_key(n))
                });
                if !c.is_empty() {
                    cluster.insert(k.clone(), J::Array(c));
                }
                if !r.is_empty() {
                    rest.insert(k, J::Array(r));
                }
            }
            (_, v) => {
                cluster.insert(k, v);
            }
        }
    }
    Some((J::Object(cluster), J::Object(rest)))
}

/// NodeNetworkConfigurationPolicies per role (`nncp/nodenet-<role>.yaml`):
/// the part of the state that carries cluster traffic goes out one node at
/// a time (`maxUnavailable: 1`; with `cluster.failureDomain`, one policy
/// per value of that label, each one node at a time), the rest with
/// kubernetes-nmstate's default, but on control-plane nodes, where every
/// policy goes one node at a time. A part every host of the role shares is
/// one policy for the role, else one policy per node, selected by its
/// Kubernetes node name.
pub fn nncps(inv: &Inventory, out: &mut Vec<OutFile>) {
    use rayon::prelude::*;
    // Each host's state is split (and later written) on every core.
    let split: Vec<(&Host, [J; 2])> = inv
        .hosts
        .par_iter()
        .filter_map(|h| split_state(inv, h).map(|(c, r)| (h, [c, r])))
        .collect();
    let mut roles: BTreeMap<&'static str, Vec<(&Host, [J; 2])>> = BTreeMap::new();
    for (h, parts) in split {
        roles
            .entry(h.role.value.pool())
            .or_default()
            .push((h, parts));
    }
    for (role, mut hosts) in roles {
        let mut policies = Vec::new();
        let role_label = format!("node-role.kubernetes.io/{role}");
        for (part, cluster_part) in [(0, true), (1, false)] {
            let suffix = if cluster_part { "-cluster-network" } else { "" };
            // Each part is read once: moved out, not copied.
            let states: Vec<J> = hosts
                .iter_mut()
                .map(|(_, parts)| std::mem::take(&mut parts[part]))
                .collect();
            if states
                .iter()
                .all(|s| s.as_object().is_some_and(Map::is_empty))
            {
                continue;
            }
            let unavailable = max_unavailable(role, cluster_part);
            if states.windows(2).all(|w| w[0] == w[1]) {
                // One state for the role; the part that carries cluster
                // traffic one policy per failure domain when every host
                // has the domain label.
                let domains: Option<std::collections::BTreeSet<String>> = inv
                    .cluster
                    .failure_domain
                    .as_ref()
                    .filter(|_| cluster_part)
                    .and_then(|d| {
                        hosts
                            .iter()
                            .map(|(h, _)| h.labels.get(&d.value).cloned())
                            .collect()
                    });
                let base = BTreeMap::from([(role_label.clone(), String::new())]);
                let state = states.into_iter().next().unwrap_or_default();
                match (domains, &inv.cluster.failure_domain) {
                    (Some(values), Some(key)) => {
                        for value in values {
                            let mut selector = base.clone();
                            selector.insert(key.value.clone(), value.clone());
                            policies.push((
                                None,
                                Policy {
                                    name: format!("nodenet-{role}{suffix}-{}", dns_label(&value)),
                                    labels: BTreeMap::new(),
                                    selector,
                                    max_unavailable: unavailable.clone(),
                                    state: state.clone(),
                                },
                            ));
                        }
                    }
                    _ => policies.push((
                        None,
                        Policy {
                            name: format!("nodenet-{role}{suffix}"),
                            labels: BTreeMap::new(),
                            selector: base,
                            max_unavailable: unavailable,
                            state,
                        },
                    )),
                }
            } else {
                for ((h, _), state) in hosts.iter().zip(states) {
                    // A control-plane node's own policies in a file of their
                    // own: applied together, they change together.
                    let own = is_control_plane(role).then(|| dns_label(h.short_name()));
                    policies.push((
                        own,
                        Policy {
                            name: format!("nodenet-{}{suffix}", dns_label(h.short_name())),
                            labels: BTreeMap::new(),
                            selector: BTreeMap::from([
                                (role_label.clone(), String::new()),
                                (
                                    "kubernetes.io/hostname".to_string(),
                                    h.node_name(&inv.cluster),
                                ),
                            ]),
                            max_unavailable: unavailable.clone(),
                            state,
                        },
                    ));
                }
            }
        }
        // Nothing of the role's states left for a policy (all of it is
        // configure-ovs's, under br-ex): no file, not an empty one.
        let mut files: BTreeMap<String, Vec<Policy>> = BTreeMap::new();
        for (own, policy) in policies {
            let file = match own {
                Some(host) => format!("nncp/nodenet-{role}-{host}.yaml"),
                None => format!("nncp/nodenet-{role}.yaml"),
            };
            files.entry(file).or_default().push(policy);
        }
        for (file, policies) in files {
            let text: Vec<String> = policies.into_par_iter().map(Policy::into_yaml).collect();
            out.push(OutFile::new(file, text.join("---\n"), 0o644));
        }
    }
}

pub use nodenet_model::names::dns_label;

/// A BMC login as the BMC Secrets carry it.
pub struct BmcLogin {
    pub username: String,
    /// The clear password, when its source is available.
    pub password: Option<Secret>,
    /// The `${VAR}` written in its place when it is not (as in
    /// install-config.yaml), to fill with `envsubst`.
    pub var: String,
}

/// The BMC login per credentials name.
pub type Passwords = BTreeMap<String, BmcLogin>;

/// Reads every password once (not once per host), only when asked to
/// embed them. One not read, not available (check warns of it) or empty
/// is written as its `${VAR}` placeholder.
pub fn resolve_passwords(inv: &Inventory, how: crate::BmcSecrets) -> Passwords {
    if how == crate::BmcSecrets::Reference {
        // Secrets made elsewhere: none written, none read.
        return Passwords::new();
    }
    inv.credentials
        .iter()
        .map(|(name, cred)| {
            let login = BmcLogin {
                username: cred.value.username.clone(),
                password: (how == crate::BmcSecrets::Embed)
                    .then(|| cred.value.resolve_password())
                    .flatten()
                    .filter(|p| !p.expose().is_empty()),
                var: password_var(name, Some(&cred.value)),
            };
            (name.clone(), login)
        })
        .collect()
}

/// Scale-out, one file per host to `oc apply`: the network Secret
/// `<host>-network-config-secret` (key `nmstate`), the BMC Secret
/// `<host>-bmc-secret` and the BareMetalHost. The file is 0600 when it
/// holds the BMC password, the only place a password is ever written;
/// a password that is not available is a `${VAR}` placeholder.
pub fn scale_out(
    host: &Host,
    text: Option<&String>,
    passwords: &Passwords,
    out: &mut Vec<OutFile>,
) {
    let name = &host.name.value;
    let mut docs = Vec::new();
    let net_secret = format!("{name}-network-config-secret");
    if let Some(state) = text {
        let envelope = yaml(&json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": net_secret, "namespace": NAMESPACE},
            "type": "Opaque",
            "stringData": {"nmstate": TOKEN},
        }));
        docs.push(embed(&envelope, state, Embed::Literal));
    }
    let mut spec = baremetal_host_spec(host);
    let mut mode = 0o644;
    if let Some(bmc) = &host.bmc {
        let secret = bmc_secret_name(host);
        if let Some(login) = bmc
            .credentials
            .as_ref()
            .and_then(|c| passwords.get(&c.value))
        {
            let mut data = Map::new();
            data.insert("username".into(), json!(login.username));
            match &login.password {
                Some(p) => {
                    data.insert("password".into(), json!(p.expose()));
                    mode = 0o600;
                }
                None => {
                    data.insert("password".into(), placeholder(&login.var));
                }
            }
            docs.push(placeholders(&yaml(&json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret, "namespace": NAMESPACE},
                "type": "Opaque",
                "stringData": data,
            }))));
        }
    }
    if text.is_some() {
        spec.insert("preprovisioningNetworkDataName".into(), json!(net_secret));
    }
    docs.push(yaml(&json!({
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    })));
    out.push(OutFile::new(
        format!("scale-out/{name}.yaml"),
        docs.join("---\n"),
        mode,
    ));
}

/// The BMC Secret a host's BareMetalHost names (`credentialsName`).
pub fn bmc_secret_name(host: &Host) -> String {
    format!("{}-bmc-secret", host.name.value)
}

/// A BareMetalHost's `spec` for a host, less its network: online, boot
/// MAC and mode, BMC (credentials in [`bmc_secret_name`]), root device.
pub fn baremetal_host_spec(host: &Host) -> Map<String, J> {
    let mut spec = Map::new();
    spec.insert("online".into(), json!(true));
    if let Some(mac) = &host.boot_mac {
        spec.insert("bootMACAddress".into(), json!(mac.value));
    }
    if let Some(mode) = &host.boot_mode {
        spec.insert("bootMode".into(), json!(mode.value));
    }
    if let Some(bmc) = &host.bmc {
        spec.insert(
            "bmc".into(),
            json!({
                "address": bmc.address.value,
                "credentialsName": bmc_secret_name(host),
                "disableCertificateVerification": bmc.disable_certificate_verification,
            }),
        );
    }
    if let Some(hints) = &host.root_device_hints {
        spec.insert("rootDeviceHints".into(), hints.to_json());
    }
    spec
}

/// One host's own files: keyfiles, nmstate.yml and its scale-out file.
pub fn host_artifacts(
    host: &Host,
    cluster: &Cluster,
    report: &HostReport,
    text: Option<&String>,
    passwords: &Passwords,
) -> Vec<OutFile> {
    let mut files = Vec::new();
    host_files(host, cluster, report, text, &mut files);
    scale_out(host, text, passwords, &mut files);
    files
}

/// The files that carry the whole fleet: install-config, agent-config,
/// MachineConfigs (and the pools and agent they need) and policies (each
/// one long document, built side by side); and what keeping them within
/// etcd's limits decided.
pub fn fleet_artifacts(
    inv: &Inventory,
    texts: &[Option<String>],
    addresses: &[Vec<IpAddr>],
) -> (Vec<OutFile>, Vec<Diagnostic>) {
    let (((ic, ic_diags), ac), (openshift, policies)) = rayon::join(
        || {
            rayon::join(
                || install_config_within_limit(inv, texts),
                || agent_config(inv, addresses, texts),
            )
        },
        || {
            rayon::join(
                || crate::openshift::openshift_files(inv),
                || {
                    let mut v = Vec::new();
                    nncps(inv, &mut v);
                    v
                },
            )
        },
    );
    let (mcs, mut diagnostics) = openshift;
    diagnostics.extend(ic_diags);
    let mut out = vec![
        OutFile::new("install-config.yaml", ic, 0o644),
        OutFile::new("agent-config.yaml", ac, 0o644),
    ];
    out.extend(mcs);
    out.extend(policies);
    (out, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As kubernetes-nmstate scales it (its `pkg/node/nodes_test.go` has
    /// the default 50 % of 5 nodes as 3): of 3 masters 2, of 1 node 1,
    /// and 0 is 1.
    #[test]
    fn percentages_round_up_as_kubernetes_nmstate_scales_them() {
        let at_once = |v: J, n| nodes_at_once(&v, n).unwrap();
        assert_eq!(at_once(json!("50%"), 5), 3);
        assert_eq!(at_once(json!("50%"), 3), 2);
        assert_eq!(at_once(json!("50%"), 1), 1);
        assert_eq!(at_once(json!("34%"), 3), 2);
        assert_eq!(at_once(json!("33%"), 3), 1);
        assert_eq!(at_once(json!(0), 3), 1);
        assert_eq!(at_once(json!(2), 3), 2);
        assert_eq!(at_once(json!("2"), 3), 2);
        assert_eq!(nodes_at_once(&json!("half"), 3), None);
        // Masters go one at a time whatever the part; workers' rest does not.
        assert_eq!(max_unavailable("master", false), json!(1));
        assert_eq!(max_unavailable("worker", true), json!(1));
        assert_eq!(max_unavailable("worker", false), json!("50%"));
    }

    /// Filled in as `envsubst` does (plain text replacement), every value
    /// reads back as the same string (serde_yaml's reader here; PyYAML and
    /// go-yaml in the CLI tests).
    #[test]
    fn placeholders_take_any_one_line_value() {
        let doc = json!({
            "pullSecret": placeholder("PULL_SECRET"),
            "hosts": [{"name": "a", "bmc": {"password": placeholder("PW"), "username": "u"}}],
        });
        let text = placeholders(&yaml(&doc));
        assert!(
            text.contains("pullSecret: |2-\n  ${PULL_SECRET}\n")
                && text.contains("    password: |2-\n      ${PW}\n"),
            "{text}"
        );
        for value in [
            r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz","email":"o'neil@example.com"}}}"#,
            "p@ss: #word",
            " leading and trailing ",
            "- 'it''s' \"q\" \\ {a} [b] &c *d !e |f >g %h @i `j",
            "---",
            "",
        ] {
            let filled = text
                .replace("${PULL_SECRET}", value)
                .replace("${PW}", value);
            let back: J = serde_yaml::from_str(&filled).unwrap_or_else(|e| panic!("{e}: {filled}"));
            assert_eq!(back["pullSecret"], json!(value), "{filled}");
            assert_eq!(
                back["hosts"][0]["bmc"]["password"],
                json!(value),
                "{filled}"
            );
            assert_eq!(back["hosts"][0]["bmc"]["username"], json!("u"), "{filled}");
        }
    }

    /// Spliced YAML must parse to the same value as emitting the whole
    /// document (checked with serde_yaml's parser, not our splicer).
    #[test]
    fn embedding_equals_full_emission() {
        let state = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "ipv4": {"address": [{"ip": "10.0.0.1", "prefix-length": 24}]}}], "x": "multi\nline\n"});
        let text = yaml(&state);
        let envelope = json!({"hosts": [{"name": "a", "networkConfig": TOKEN}, {"name": "b", "networkConfig": TOKEN}], "secret": {"nmstate": TOKEN}});
        let spliced = embed_all(&yaml(&envelope), &[&text, &text], Embed::Mapping);
        let spliced = embed(&spliced, &text, Embed::Literal);
        let parsed: J = serde_yaml::from_str(&spliced).unwrap();
        assert_eq!(parsed["hosts"][0]["networkConfig"], state);
        assert_eq!(parsed["hosts"][1]["networkConfig"], state);
        assert_eq!(parsed["secret"]["nmstate"], J::String(text.clone()));
    }
}
