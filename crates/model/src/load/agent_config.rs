//! The agent installer's agent-config.yaml: `rendezvousIP` and hosts with
//! their NIC name → MAC table and `networkConfig`.

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::Node;

/// openshift-install's `AgentConfig` and `Host` (pkg/types/agent) by their
/// JSON tags (`BMC` has none: its Go field name is the key).
const TOP: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "additionalNTPSources",
    "rendezvousIP",
    "bootArtifactsBaseURL",
    "hosts",
    "minimalISO",
];
pub(super) const HOST: &[&str] = &[
    "hostname",
    "role",
    "rootDeviceHints",
    "interfaces",
    "networkConfig",
    "BMC",
];

/// The inventory's `cluster.agentConfig`: agent-config fields to carry
/// into the rendered agent-config.yaml (`additionalNTPSources`,
/// `bootArtifactsBaseURL`, `minimalISO`); those nodenet writes from the
/// inventory are refused there, naming the inventory field.
pub(crate) fn base(d: &mut Decoder, given: &Node) -> Option<Node> {
    if given.as_map().is_none() {
        d.type_error(given, "cluster.agentConfig", "a mapping");
        return None;
    }
    let mut base = given.clone();
    d.go_fields(&mut base, "cluster.agentConfig", TOP);
    super::refuse_owned(
        d,
        &base,
        "cluster.agentConfig",
        &[
            (&["rendezvousIP"], "cluster.rendezvousIP"),
            (&["hosts"], "hosts"),
        ],
    );
    Some(base)
}

/// openshift-install decodes agent-config.yaml strictly: an unknown field
/// is an error there too.
fn fields(d: &mut Decoder, root: &mut Node) {
    d.go_fields(root, "agent-config.yaml", TOP);
    for h in root.seq_at_mut(&["hosts"]).into_iter().flatten() {
        d.go_fields(h, "a host", HOST);
        if let Some(r) = h.get_mut("rootDeviceHints") {
            d.go_fields(
                r,
                "rootDeviceHints",
                super::install_config::ROOT_DEVICE_HINTS,
            );
        }
        if let Some(b) = h.get_mut("BMC") {
            d.go_fields(
                b,
                "BMC",
                &[
                    "username",
                    "password",
                    "address",
                    "disableCertificateVerification",
                ],
            );
        }
        for i in h.seq_at_mut(&["interfaces"]).into_iter().flatten() {
            d.go_fields(i, "an interface", &["name", "macAddress"]);
        }
    }
}

pub(crate) fn load(root: &mut Node, diags: &mut Vec<Diagnostic>) -> Inventory {
    fields(&mut Decoder::new(diags), root);
    // Each host's state is moved out of the tree, not copied.
    let mut networks: Vec<Option<Node>> = root
        .seq_at_mut(&["hosts"])
        .map(|hosts| hosts.iter_mut().map(|h| h.take("networkConfig")).collect())
        .unwrap_or_default();
    let root = &*root;
    let mut d = Decoder::new(diags);
    let mut inv = Inventory::default();
    inv.cluster.agent_config = Some(without_hosts(root));
    inv.cluster.name = root.get("metadata").and_then(|m| d.string(m, "name"));
    inv.cluster.span = Some(root.span);
    let first_key = root.as_map().and_then(|m| m.first()).map(|(k, _)| k.span);
    inv.cluster.hosts_span = root
        .get("hosts")
        .map(|h| h.span)
        .or(first_key)
        .or(Some(root.span));
    inv.rendezvous_ip = root.get("rendezvousIP").and_then(|v| d.ip(v));
    for (i, h) in d.seq(root, "hosts").iter().enumerate() {
        if h.as_map().is_none() {
            d.type_error(h, "hosts[]", "a mapping");
            continue;
        }
        let name = d
            .string(h, "hostname")
            .unwrap_or_else(|| Located::new(format!("hosts[{i}]"), h.span));
        d.host = Some(name.value.clone());
        let ifaces = d.seq(h, "interfaces");
        let has_network = networks
            .get(i)
            .is_some_and(|n| n.as_ref().is_some_and(|n| !n.is_null()));
        if ifaces.is_empty() {
            // openshift-install builds the image for a host without
            // interfaces (cmd/openshift-install/testdata/agent/image/
            // configurations/ha_hosts_no_interfaces_no_macAddress.txt
            // writes no `mac_addresses` for it); a `networkConfig` needs
            // the MAC map (assisted-service `validateMacInterfaceTable`:
            // "at least one interface for host must be provided").
            let at = h.get("interfaces").map(|n| n.span).unwrap_or(h.span);
            let d_ = if has_network {
                Diagnostic::error(Code::InterfaceWithoutMac, "host has a `networkConfig` but no `interfaces`: the installer maps the state's interface names to NICs by this list, and refuses a state without it")
                    .help("add `interfaces: [{name: eno1, macAddress: ...}]` naming each NIC the networkConfig uses")
            } else {
                Diagnostic::warning(Code::InterfaceWithoutMac, "host has no `interfaces`: openshift-install takes it, but the image carries no MAC for it, so nothing ties this entry (its name, role and root device) to one machine")
                    .help("add `interfaces: [{name: eno1, macAddress: ...}]` to pin the entry to its machine")
            };
            d.push(d_.at(at));
        }
        let nics = nic_table(&mut d, ifaces);
        let mut host = Host::new(name, InputKind::AgentConfig);
        host.span = h.span;
        host.role = super::role(&mut d, h.get("role"), h.span);
        host.root_device_hints = h.get("rootDeviceHints").cloned();
        host.bmc = h.get("BMC").and_then(|b| {
            super::inline_bmc(&mut d, b, "BMC", &host.name.value, &mut inv.credentials)
        });
        host.nics_listed = !nics.is_empty();
        host.nics = nics;
        host.network = networks
            .get_mut(i)
            .and_then(Option::take)
            .filter(|n| !n.is_null());
        inv.hosts.push(host);
        d.host = None;
    }
    inv
}

/// The document less its hosts: what render carries through.
fn without_hosts(root: &Node) -> Node {
    let entries = root
        .as_map()
        .unwrap_or_default()
        .iter()
        .filter(|(k, _)| k.as_str() != Some("hosts"))
        .cloned()
        .collect();
    Node::new(crate::yaml::Value::Map(entries), root.span)
}

/// An `interfaces` list of name + `macAddress` (agent-config hosts,
/// NMStateConfig): the NICs the installer finds the host by.
pub(crate) fn nic_table(d: &mut Decoder, ifaces: &[Node]) -> Vec<Nic> {
    let mut nics = Vec::new();
    for iface in ifaces {
        let Some(nic_name) = d.required_string(iface, "name", "an interface") else {
            continue;
        };
        let mac = match iface.get("macAddress") {
            Some(m) if !m.is_null() => d.mac(m),
            _ => {
                d.push(
                    Diagnostic::error(
                        Code::InterfaceWithoutMac,
                        format!("interface `{}` has no `macAddress`", nic_name.value),
                    )
                    .at(iface.span),
                );
                None
            }
        };
        nics.push(Nic::new(nic_name, mac));
    }
    nics
}

/// agent-config.yaml as openshift-install reads it: `apiVersion`
/// v1alpha1/v1beta1 with or without `kind:`, recognised by its fields,
/// or any such document in a file named agent-config.
pub(crate) fn looks_like(root: &Node, file_name: &str) -> bool {
    let api = root.get("apiVersion").and_then(Node::scalar_text);
    if !matches!(api.as_deref(), Some("v1alpha1" | "v1beta1")) {
        return false;
    }
    let has = |k: &str| root.get(k).is_some();
    let host_fields = root
        .get("hosts")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .any(|h| h.get("hostname").is_some() || h.get("interfaces").is_some());
    has("rendezvousIP")
        || host_fields
        || has("additionalNTPSources")
        || has("bootArtifactsBaseURL")
        || has("minimalISO")
        || file_name.starts_with("agent-config")
}
