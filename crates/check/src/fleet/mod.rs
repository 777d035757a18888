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
mod policies;

use addresses::*;
use boot::*;
pub use boot::{
    boots_over_pxe, check_host_in_cluster, for_agent_installer, provisioning_mode, pxe_interface,
};
use outputs::*;
use policies::check_policies;

/// `states` are the hosts' states as the host checks read them (one per
/// host of `inv`, in order, like `reports`).
pub fn check_fleet(
    inv: &Inventory,
    reports: &[crate::HostReport],
    states: &[Option<&Network>],
    out: &mut Vec<Diagnostic>,
) {
    let hosts: Vec<HostAddresses> = inv
        .hosts
        .iter()
        .zip(reports)
        .map(|(host, r)| HostAddresses {
            host,
            addresses: &r.addresses,
        })
        .collect();
    // Every address claimed in turn (one thread) beside the other rules,
    // said in the same order as one after the other.
    let (claims, others) = rayon::join(
        || {
            let mut d = Vec::new();
            let ips = check_unique(inv, &hosts, &mut d);
            check_vips(inv, &ips, &mut d);
            d
        },
        || {
            let mut d = Vec::new();
            check_fleet_rest(inv, &hosts, states, &mut d);
            d
        },
    );
    out.extend(claims);
    out.extend(others);
}

/// The fleet's rules other than unique addresses and VIPs.
fn check_fleet_rest(
    inv: &Inventory,
    hosts: &[HostAddresses],
    states: &[Option<&Network>],
    out: &mut Vec<Diagnostic>,
) {
    let cluster = &inv.cluster;
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
    crate::dual_stack::check(inv, &with_addresses, states, out);
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
    check_outputs(inv, hosts, out);

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
