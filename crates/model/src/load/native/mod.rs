//! The nodenet inventory (`nodenet: v1`): cluster, credentials, pools,
//! templates and hosts, expanded into one host each (`count` entries in
//! parallel, on addresses drawn in host order).

use std::net::IpAddr;

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::nic_binding::NicBinding;
use crate::template::{Draw, Expander, Pool, PoolAllocator, Predrawn, Recording, Vars};
use crate::yaml::{Node, Value};

const TOP_FIELDS: &[&str] = &[
    "nodenet",
    "cluster",
    "credentials",
    "pools",
    "templates",
    "hosts",
    "sites",
];
const CLUSTER_FIELDS: &[&str] = &[
    "nodeNames",
    "failureDomain",
    "noDefaultRoute",
    "nicBinding",
    "name",
    "baseDomain",
    "machineNetworks",
    "apiVIPs",
    "ingressVIPs",
    "provisioning",
    "clusterOSImage",
    "sshKey",
    "rendezvousIP",
    "brEx",
    "ovnMasquerade",
    "nodeAgent",
    "installConfig",
    "agentConfig",
    "clusterInstance",
    "behindNat",
];

mod cluster;
mod hosts;

pub(super) use cluster::count_and_start;
use cluster::*;
use hosts::*;
const NODE_AGENT_FIELDS: &[&str] = &[
    "image",
    "layering",
    "renderedImagePushSpec",
    "renderedImagePushSecret",
    "baseImagePullSecret",
    "osImageURL",
    "checkpointTimeout",
    "probeTimeout",
    "probes",
];
const PROVISIONING_FIELDS: &[&str] = &["network", "cidr", "interface", "allowLacp"];
const CREDENTIAL_FIELDS: &[&str] = &["username", "passwordEnv", "passwordFile"];
const POOL_FIELDS: &[&str] = &["range", "prefix", "gateway", "dns"];
/// Fields a host and a template share.
const HOST_FIELDS: &[&str] = &[
    "labels",
    "name",
    "template",
    "count",
    "start",
    "role",
    "bmc",
    "bootMACAddress",
    "bootInterface",
    "bootMode",
    "rootDeviceHints",
    "nics",
    "network",
    "ips",
    "vars",
    "pxeInterface",
    "brExUplink",
    "nicBinding",
];
const BMC_FIELDS: &[&str] = &["address", "credentials", "disableCertificateVerification"];
/// A NIC of the `nics:` list form: its name and MAC, and its expected
/// cabling (docs/wires.md).
const NIC_FIELDS: &[&str] = &[
    "name",
    "mac",
    "macAddress",
    "switch",
    "port",
    "vlans",
    "native",
    "mtu",
];

pub(crate) fn load(root: &Node, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut d = Decoder::new(diags);
    d.check_fields(root, "the inventory", TOP_FIELDS);
    if let Some(v) = root.get("nodenet") {
        if v.scalar_text().as_deref() != Some("v1") {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    "unsupported inventory version (this nodenet reads `nodenet: v1`)",
                )
                .at(v.span),
            );
        }
    }
    let mut inv = Inventory::default();
    if let Some(c) = root.get("cluster") {
        inv.cluster = native_cluster(&mut d, c);
        inv.rendezvous_ip = native_rendezvous(&mut d, root);
    }
    if let Some(creds) = root.get("credentials") {
        if creds.as_map().is_none() && !creds.is_null() {
            d.type_error(creds, "credentials", "a mapping of credential names");
        }
        let (creds, _) = misindented(&mut d, creds, "credentials", CREDENTIAL_FIELDS);
        for (k, v) in creds {
            let name = k.scalar_text().unwrap_or_default();
            if let Some(c) = native_credentials(&mut d, k, v, &name) {
                inv.credentials.insert(name, Located::new(c, k.span));
            }
        }
    }
    // Every address written literally is reserved before pools hand any out.
    let mut pools = Vec::new();
    // Pools that are written but unusable: their own finding is the one
    // to fix, not every placeholder that names them.
    let mut broken = Vec::new();
    if let Some(p) = root.get("pools") {
        if p.as_map().is_none() && !p.is_null() {
            d.type_error(p, "pools", "a mapping of pool names");
        }
        let (entries, misplaced) = misindented(&mut d, p, "pool", POOL_FIELDS);
        broken.extend(misplaced);
        for (k, v) in entries {
            match native_pool(&mut d, k, v) {
                Some(pool) => pools.push(pool),
                None => broken.push(k.scalar_text().unwrap_or_default()),
            }
        }
    }
    let mut alloc = PoolAllocator::new(pools);
    for name in broken {
        alloc.mark_broken(name);
    }
    for vip in inv.cluster.api_vips.iter().chain(&inv.cluster.ingress_vips) {
        alloc.reserve(vip.value);
    }
    let templates = root.get("templates");
    let mut broken_templates = Vec::new();
    if let Some(t) = templates {
        if t.as_map().is_none() && !t.is_null() {
            d.type_error(t, "templates", "a mapping of template names");
        }
        let (entries, misplaced) = misindented(&mut d, t, "template", HOST_FIELDS);
        broken_templates = misplaced;
        for (k, v) in entries {
            d.check_fields(v, &format!("template `{}`", k), HOST_FIELDS);
        }
    }
    inv.cluster.hosts_span = Some(root.get("hosts").map(|h| h.span).unwrap_or(root.span));
    let entries = d.seq(root, "hosts");
    for entry in entries {
        for (_, ip) in entry.get("ips").and_then(Node::as_map).unwrap_or_default() {
            if let Some(ip) = ip.scalar_text().and_then(|s| s.parse::<IpAddr>().ok()) {
                alloc.reserve(ip);
            }
        }
        reserve_literal_ips(entry.get("network"), &mut alloc);
    }
    if let Some(t) = templates {
        for (_, v) in t.as_map().unwrap_or_default() {
            reserve_literal_ips(v.get("network"), &mut alloc);
        }
    }
    for entry in entries {
        // A host of a template whose fields were mis-indented out of it
        // is not built: the template's finding says what to fix.
        let of_broken = entry
            .get("template")
            .and_then(Node::scalar_text)
            .is_some_and(|t| broken_templates.contains(&t));
        if !of_broken {
            expand_host_entry(&mut d, entry, templates, &mut alloc, &mut inv.hosts);
        }
    }
    for h in &mut inv.hosts {
        if h.binding(&inv.cluster) == NicBinding::Mac {
            h.network = h
                .network
                .as_ref()
                .map(|n| crate::nic_binding::bind_by_mac(n, &h.nics));
        }
    }
    inv
}

/// `nicBinding: name | mac | pin`.
fn nic_binding(d: &mut Decoder, v: &Node) -> Option<Located<NicBinding>> {
    match v.as_str().and_then(NicBinding::parse) {
        Some(b) => Some(Located::new(b, v.span)),
        None => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("nicBinding `{v}` is not `name`, `mac` or `pin`"),
                )
                .at(v.span)
                .help("`mac`: profiles match the NIC table's MACs (identifier: mac-address), whatever the NICs are called; `pin`: systemd .link files give each NIC of the table its name by MAC, profiles stay bound by name; `name` (the default): the names as written"),
            );
            None
        }
    }
}

/// The entries of a mapping of named things (pools, credentials,
/// templates), less the fields of one of them that were indented at its
/// level: `pools: {bm: ~, range: …, prefix: …}` is pool `bm` with its
/// fields written one level too far left. That is said once, at the
/// emptied entry; the names of such entries are returned beside the rest.
fn misindented<'n>(
    d: &mut Decoder,
    map: &'n Node,
    what: &str,
    fields: &[&str],
) -> (Vec<&'n (Node, Node)>, Vec<String>) {
    let entries = map.as_map().unwrap_or_default();
    let mut kept = Vec::with_capacity(entries.len());
    let mut emptied = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let (k, v) = &entries[i];
        let stray: Vec<&str> = entries[i + 1..]
            .iter()
            .map_while(|(k, _)| k.as_str().filter(|k| fields.contains(k)))
            .collect();
        if v.is_null() && !stray.is_empty() {
            let name = k.scalar_text().unwrap_or_default();
            let listed: Vec<String> = stray.iter().map(|f| format!("`{f}`")).collect();
            d.push(
                Diagnostic::error(
                    Code::MissingField,
                    format!(
                        "{what} `{name}` is empty: {} below it {} at the level of `{name}`, not inside it",
                        listed.join(", "),
                        if stray.len() == 1 { "is" } else { "are" }
                    ),
                )
                .at(k.span)
                .help(format!("indent {} under `{name}:`", listed.join(", "))),
            );
            emptied.push(name);
            i += 1 + stray.len();
            continue;
        }
        kept.push(&entries[i]);
        i += 1;
    }
    (kept, emptied)
}

/// Static addresses written in a network block (not placeholders).
fn reserve_literal_ips(network: Option<&Node>, alloc: &mut PoolAllocator) {
    let Some(n) = network else { return };
    let mut f = |node: &Node| {
        if let Some(ip) = node
            .get("ip")
            .and_then(Node::as_str)
            .and_then(|s| s.parse::<IpAddr>().ok())
        {
            alloc.reserve(ip);
        }
        false
    };
    n.find(&mut f);
}

#[cfg(test)]
mod tests;
