//! The agent installer's and assisted-service's cluster manifests:
//! NMStateConfig (a host's first-boot state and its NIC name → MAC table;
//! the object's name is not the host's, so it joins a host by MAC) and
//! AgentClusterInstall (machine networks and VIPs).

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::Node;

pub(crate) fn load_nmstate_config(root: &Node, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut d = Decoder::new(diags);
    let mut inv = Inventory::default();
    let Some(name) = super::object_name(&mut d, root, "the NMStateConfig") else {
        return inv;
    };
    d.host = Some(name.value.clone());
    let spec = root.get("spec");
    let mut host = Host::new(name, InputKind::NmStateConfig);
    let ifaces = spec.map(|s| d.seq(s, "interfaces")).unwrap_or_default();
    if ifaces.is_empty() {
        d.push(
            Diagnostic::error(
                Code::InterfaceWithoutMac,
                "NMStateConfig has no `spec.interfaces` with a MAC address",
            )
            .at(spec
                .map(|s| s.get("interfaces").unwrap_or(s).span)
                .unwrap_or(root.span))
            .help("the agent finds its host by MAC: add `interfaces: [{name: eno1, macAddress: ...}]`"),
        );
    }
    host.nics = super::agent_config::nic_table(&mut d, ifaces);
    host.nics_listed = !host.nics.is_empty();
    host.network = spec
        .and_then(|s| s.get("config"))
        .filter(|c| !c.is_null())
        .cloned();
    if host.network.is_none() {
        d.push(
            Diagnostic::error(Code::MissingField, "NMStateConfig has no `spec.config`")
                .at(spec.map(|s| s.span).unwrap_or(root.span)),
        );
    }
    inv.hosts.push(host);
    inv
}

pub(crate) fn load_cluster_install(root: &Node, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut d = Decoder::new(diags);
    let mut inv = Inventory::default();
    let c = &mut inv.cluster;
    c.span = Some(root.span);
    let Some(spec) = root.get("spec") else {
        return inv;
    };
    if let Some(net) = spec.get("networking") {
        for n in d.seq(net, "machineNetwork") {
            if let Some(cidr) = n.get("cidr") {
                c.machine_networks.extend(d.network(cidr));
            }
        }
    }
    // The list wins over the older single field it replaced.
    for key in ["apiVIPs", "apiVIP"] {
        if let Some(v) = spec.get(key) {
            c.api_vips.extend(d.ips(v));
            break;
        }
    }
    for key in ["ingressVIPs", "ingressVIP"] {
        if let Some(v) = spec.get(key) {
            c.ingress_vips.extend(d.ips(v));
            break;
        }
    }
    inv
}
