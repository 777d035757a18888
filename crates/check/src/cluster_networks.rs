//! The cluster's own networks: machine, cluster (pod) and service. They
//! must not overlap, and the cluster network must hold a node subnet of
//! `hostPrefix` per host: openshift-install and assisted-service refuse
//! the install otherwise. Rules transcribed from assisted-service@063b2579
//! `internal/network/cidr_validations.go` (`VerifyClusterCIDRsNotOverlap`
//! L133-149, `VerifyClusterCidrSize` L108-131).

use ipnet::IpNet;
use nodenet_model::{Code, Diagnostic, Inventory, Node, Span};

/// One network of the cluster, where it is written.
struct Net {
    what: &'static str,
    net: IpNet,
    host_prefix: Option<(u8, Span)>,
    span: Span,
}

/// The cluster and service networks an install-config (`networking:`) or
/// a ZTP site (`clusterNetwork`, `serviceNetwork` as strings or `{cidr}`)
/// gives, and the machine networks.
fn networks(inv: &Inventory) -> Vec<Net> {
    let mut out: Vec<Net> = inv
        .cluster
        .machine_networks
        .iter()
        .map(|m| Net {
            what: "machine network",
            net: m.value,
            host_prefix: None,
            span: m.span,
        })
        .collect();
    let install = inv
        .cluster
        .install_config
        .as_ref()
        .and_then(|ic| ic.get("networking"));
    let ztp = inv.cluster.ztp.as_ref().map(|z| &z.entry);
    for holder in [install, ztp].into_iter().flatten() {
        for c in holder
            .get("clusterNetwork")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            let Some((net, span)) = cidr(c.get("cidr")) else {
                continue;
            };
            let host_prefix = c.get("hostPrefix").and_then(|p| {
                let v = u8::try_from(p.as_i64()?).ok()?;
                Some((v, p.span))
            });
            out.push(Net {
                what: "cluster network",
                net,
                host_prefix,
                span,
            });
        }
        for s in holder
            .get("serviceNetwork")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            if let Some((net, span)) = cidr(Some(s)).or_else(|| cidr(s.get("cidr"))) {
                out.push(Net {
                    what: "service network",
                    net,
                    host_prefix: None,
                    span,
                });
            }
        }
    }
    out
}

fn cidr(n: Option<&Node>) -> Option<(IpNet, Span)> {
    let n = n?;
    Some((n.as_str()?.parse::<IpNet>().ok()?.trunc(), n.span))
}

fn overlap(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

pub fn check(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let nets = networks(inv);
    for (i, b) in nets.iter().enumerate() {
        if let Some(a) = nets[..i]
            .iter()
            .find(|a| a.what != b.what && overlap(&a.net, &b.net))
        {
            out.push(
                Diagnostic::error(
                    Code::NetworkOverlap,
                    format!(
                        "{} {} overlaps the {} {}: pod, service and node addresses must be told apart (assisted-service: \"CIDRS {} and {} overlap\")",
                        b.what, b.net, a.what, a.net, a.net, b.net
                    ),
                )
                .at(b.span)
                .related(a.span, format!("the {}", a.what)),
            );
        }
    }
    let replicas =
        inv.cluster.control_plane_replicas.unwrap_or(0) + inv.cluster.compute_replicas.unwrap_or(0);
    let hosts = (inv.hosts.len() as u64).max(replicas);
    for n in nets.iter().filter(|n| n.what == "cluster network") {
        let Some((host_prefix, span)) = n.host_prefix else {
            continue;
        };
        let bits = n.net.max_prefix_len();
        let prefix = n.net.prefix_len();
        if host_prefix > bits - 7 {
            out.push(
                Diagnostic::error(
                    Code::ClusterNetworkTooSmall,
                    format!("hostPrefix {host_prefix} leaves each node fewer than 128 pod addresses (assisted-service: \"Host prefix, now {host_prefix}, must be less than or equal to {} to allow at least 128 addresses\")", bits - 7),
                )
                .at(span),
            );
            continue;
        }
        let requested: u64 = if hosts == 1 { 1 } else { hosts.max(4) };
        let possible: u64 = 1 << (host_prefix.saturating_sub(prefix)).min(63);
        if requested > possible {
            out.push(
                Diagnostic::error(
                    Code::ClusterNetworkTooSmall,
                    format!(
                        "cluster network {} holds {possible} node subnet(s) of /{host_prefix}, and the cluster needs {requested} ({hosts} host(s), at least 4): assisted-service refuses it (\"Cluster network CIDR prefix {prefix} does not contain enough addresses for {hosts} hosts each one with {host_prefix} prefix\")",
                        n.net
                    ),
                )
                .at(span)
                .related(n.span, "the cluster network")
                .help(format!("widen the cluster network (a shorter prefix than /{prefix}) or lengthen hostPrefix")),
            );
        }
    }
}

#[cfg(test)]
mod tests;
