//! Checks that need the cluster or more than one host: PXE and boot MAC
//! rules, BMCs, duplicates across the fleet, VIPs and machine networks.

use std::collections::HashMap;
use std::net::IpAddr;

use nodenet_model::{
    Cluster, Code, Diagnostic, Host, InputKind, Inventory, PasswordSource, ProvisioningNetwork,
    Role, Scope, Span,
};

use crate::network::{Address, Network};

mod addresses;
mod boot;
mod outputs;

use addresses::*;
use boot::*;
pub use boot::{
    boots_over_pxe, check_host_in_cluster, for_agent_installer, provisioning_mode, pxe_interface,
};
use outputs::*;

pub fn check_fleet(inv: &Inventory, reports: &[crate::HostReport], out: &mut Vec<Diagnostic>) {
    let hosts: Vec<HostAddresses> = inv
        .hosts
        .iter()
        .zip(reports)
        .map(|(host, r)| HostAddresses {
            host,
            addresses: &r.addresses,
        })
        .collect();
    let cluster = &inv.cluster;
    let ips = check_unique(inv, &hosts, out);
    check_vips(inv, &ips, out);

    if let Some(img) = &cluster.cluster_os_image {
        if !os_image_ok(&img.value) {
            out.push(
                Diagnostic::error(Code::OsImageChecksum, "clusterOSImage must be an http(s) URL ending in `?sha256=<64 hex digits>`")
                    .at(img.span)
                    .help("`nodenet image disk` prints this URL form with the checksum of the image it wrote"),
            );
        }
    }

    let with_addresses: Vec<(&Host, &[crate::network::Address])> =
        hosts.iter().map(|h| (h.host, h.addresses)).collect();
    crate::dual_stack::check(inv, &with_addresses, out);
    check_policies(inv, out);
    if let Some(domain) = &cluster.failure_domain {
        for h in hosts.iter().filter(|h| h.host.scope() == Scope::FirstBoot) {
            if !h.host.labels.contains_key(&domain.value) {
                out.push(
                    Diagnostic::warning(
                        Code::MissingField,
                        format!(
                            "`{}` has no `{}` label (cluster.failureDomain): its role's policies cannot go one failure domain at a time",
                            h.host.name.value, domain.value
                        ),
                    )
                    .at(h.host.span)
                    .host(h.host.name.value.clone()),
                );
            }
        }
    }
    check_outputs(inv, &hosts, out);

    if let Some(rv) = &inv.rendezvous_ip {
        for h in hosts.iter().filter(|h| h.host.role.value == Role::Worker) {
            if let Some(a) = h.addresses.iter().find(|a| a.ip == rv.value) {
                out.push(
                    Diagnostic::error(
                        Code::RendezvousIpIsWorker,
                        format!(
                            "rendezvousIP {} is the address of worker `{}`",
                            rv.value, h.host.name.value
                        ),
                    )
                    .at(rv.span)
                    .related(a.span, "worker address")
                    .help("the rendezvous host runs the bootstrap: pick a master's address"),
                );
            }
        }
    }
}

/// Policies that can select one node must not both name an interface:
/// kubernetes-nmstate would apply both, each undoing the other. Where the
/// inputs describe hosts, "can select" is tested against their labels;
/// else two selectors without a contradicting label may meet.
/// A policy that kubernetes-nmstate would enact on more than one
/// control-plane node at once, counted over the inventory's hosts it
/// selects (its `maxUnavailable` scaled to them, as kubernetes-nmstate
/// does): two masters changing together can cost etcd its quorum. A
/// warning: the policy is valid, its pace is the risk (`plan` writes
/// every policy on masters with `maxUnavailable: 1`).
fn check_control_plane_at_once(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let nodes: Vec<(&Host, std::collections::BTreeMap<String, String>)> = inv
        .hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .map(|h| (h, h.node_labels(&inv.cluster)))
        .collect();
    for h in &inv.hosts {
        let Some(p) = &h.policy else { continue };
        let selected: Vec<&Host> = nodes
            .iter()
            .filter(|(_, labels)| p.selector.iter().all(|(k, v)| labels.get(k) == Some(v)))
            .map(|(h, _)| *h)
            .collect();
        let masters = selected
            .iter()
            .filter(|h| crate::traffic::is_control_plane(h.role.value.pool()))
            .count();
        let default = serde_json::json!("50%");
        let value = p
            .max_unavailable
            .as_ref()
            .map(|m| &m.value)
            .unwrap_or(&default);
        let Some(at_once) = crate::traffic::nodes_at_once(value, selected.len()) else {
            continue;
        };
        if masters < 2 || at_once < 2 {
            continue;
        }
        let written = match value {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        out.push(
            Diagnostic::warning(
                Code::ControlPlaneAtOnce,
                format!(
                    "policy `{}` selects {masters} control-plane node(s) among {} node(s), and kubernetes-nmstate changes {at_once} of them at once (maxUnavailable {written}{}, a percentage rounded up): two masters changing together can cost etcd its quorum",
                    p.name,
                    selected.len(),
                    if p.max_unavailable.is_none() { ", its default" } else { "" }
                ),
            )
            .at(p.max_unavailable.as_ref().map(|m| m.span).unwrap_or(p.span))
            .host(h.name.value.clone())
            .help("set `maxUnavailable: 1` on a policy that selects masters (or give the masters a policy of their own with it)"),
        );
    }
}

fn check_policies(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    check_control_plane_at_once(inv, out);
    let policies: Vec<&Host> = inv.hosts.iter().filter(|h| h.policy.is_some()).collect();
    if policies.len() < 2 {
        return;
    }
    let nodes: Vec<std::collections::BTreeMap<String, String>> = inv
        .hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .map(|h| h.node_labels(&inv.cluster))
        .collect();
    let selects = |sel: &std::collections::BTreeMap<String, String>,
                   node: &std::collections::BTreeMap<String, String>| {
        sel.iter().all(|(k, v)| node.get(k) == Some(v))
    };
    let may_meet = |a: &Host, b: &Host| {
        let (sa, sb) = (
            &a.policy.as_ref().expect("a policy").selector,
            &b.policy.as_ref().expect("a policy").selector,
        );
        if nodes.is_empty() {
            sa.iter().all(|(k, v)| sb.get(k).is_none_or(|w| w == v))
        } else {
            nodes.iter().any(|n| selects(sa, n) && selects(sb, n))
        }
    };
    // Policies for one node by name meet only each other and the wide ones.
    let hostname = |h: &Host| {
        h.policy
            .as_ref()
            .and_then(|p| p.selector.get("kubernetes.io/hostname").cloned())
    };
    let mut by_node: HashMap<Option<String>, Vec<&Host>> = HashMap::new();
    for p in &policies {
        by_node.entry(hostname(p)).or_default().push(p);
    }
    let wide = by_node.get(&None).cloned().unwrap_or_default();
    let mut groups: Vec<Vec<&Host>> = by_node
        .iter()
        .filter(|(k, _)| k.is_some())
        .map(|(_, v)| v.iter().chain(&wide).copied().collect())
        .collect();
    groups.push(wide.clone());
    let mut reported = std::collections::HashSet::new();
    for group in groups {
        for (i, a) in group.iter().enumerate() {
            for b in &group[i + 1..] {
                let (pa, pb) = (
                    a.policy.as_ref().expect("a policy"),
                    b.policy.as_ref().expect("a policy"),
                );
                // One object given twice (a copy in another directory).
                if pa.name == pb.name || !reported.insert((a.span, b.span)) || !may_meet(a, b) {
                    continue;
                }
                let named = |h: &Host| -> Vec<(String, Span)> {
                    Network::read(h.network.as_ref().expect("a policy has a state"))
                        .ifaces
                        .iter()
                        .filter_map(|i| i.name_node.map(|n| (i.name.clone(), n.span)))
                        .collect()
                };
                let theirs = named(a);
                for (name, span) in named(b) {
                    if let Some((_, first)) = theirs.iter().find(|(n, _)| *n == name) {
                        out.push(
                            Diagnostic::error(
                                Code::PolicyOverlap,
                                format!(
                                    "`{name}` is named by this policy and by `{}`, which can select the same node",
                                    pa.name
                                ),
                            )
                            .at(span)
                            .host(b.name.value.clone())
                            .related(*first, "also named here")
                            .help("give each interface to one policy (split the states, or make the node selectors exclude each other)"),
                        );
                    }
                }
            }
        }
    }
}

/// What the agent installer refuses of a single-node install-config
/// (openshift/installer@782c0705 `pkg/asset/agent/installconfig.go`,
/// its tests `sno_invalid_workers.txt`, `sno_invalid_network_type.txt`):
/// compute replicas on platform none or external, a network type other
/// than OVN-Kubernetes.
fn agent_single_node(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let Some(ic) = inv.cluster.install_config.as_ref() else {
        return;
    };
    if inv.cluster.control_plane_replicas != Some(1) {
        return;
    }
    let platform = install_platform(inv);
    let workers = ic
        .get("compute")
        .and_then(|c| c.as_seq())
        .and_then(|c| c.first())
        .and_then(|w| w.get("replicas"));
    if let Some(w) = workers.filter(|w| w.as_i64().is_some_and(|n| n > 0)) {
        if matches!(platform.as_deref(), Some("none" | "external")) {
            out.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("{} compute replicas beside one control-plane replica on platform {}: the agent installer refuses it (\"Total number of compute replicas must be 0 when controlPlane.replicas is 1 for platform none or external\")", w.as_i64().unwrap_or_default(), platform.as_deref().unwrap_or_default()),
                )
                .at(w.span)
                .help("a single-node cluster has no workers at install; add them afterwards (nodes-config.yaml, `oc adm node-image create`)"),
            );
        }
    }
    if let Some(t) = ic.get("networking").and_then(|n| n.get("networkType")) {
        if t.as_str().is_some_and(|t| t != "OVNKubernetes") {
            out.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("networkType `{}` on a single-node cluster: the agent installer refuses it (\"Only OVNKubernetes network type is allowed for Single Node OpenShift (SNO) cluster\")", t.as_str().unwrap_or_default()),
                )
                .at(t.span),
            );
        }
    }
}

/// Whether hosts must be in the machine network: not under user-managed
/// networking (install-config platform `none` or `external`), unless the
/// cluster is a single node (assisted-service@063b2579
/// internal/network/utils.go L169-171, `IsMachineNetworkRequired`).
fn machine_network_required(inv: &Inventory) -> bool {
    let user_managed = matches!(install_platform(inv).as_deref(), Some("none" | "external"));
    !user_managed || inv.cluster.control_plane_replicas == Some(1)
}

/// install-config's platform (`baremetal`, `none`, `external`, ...): the
/// one key under `platform:`.
fn install_platform(inv: &Inventory) -> Option<String> {
    let ic = inv.cluster.install_config.as_ref()?;
    let (key, _) = ic.get("platform")?.as_map()?.first()?;
    key.as_str().map(str::to_string)
}

fn os_image_ok(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return false;
    };
    let Some((_, query)) = rest.split_once('?') else {
        return false;
    };
    query.split('&').any(|kv| {
        kv.strip_prefix("sha256=")
            .is_some_and(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
    })
}

#[cfg(test)]
mod tests;
