//! A fleet of clusters (GitOps ZTP sites: ClusterInstances, SiteConfig
//! clusters): each is checked as a cluster; these rules look across them,
//! and at what single-node sites may say.

use std::collections::HashMap;
use std::net::IpAddr;

use nodenet_model::{Code, Diagnostic, Inventory, Role, Span};

use crate::Report;

/// A ZTP site the installer runs as a single-node cluster. The SiteConfig
/// generator makes any cluster of one master one and forces its workers
/// to 0 (cnf-features-deploy@ac7d09f7 siteConfig.go L278-299); a
/// ClusterInstance says `clusterType: SNO`, and assisted-service takes
/// one control-plane agent and no worker as one too
/// (assisted-service@063b2579 clusterdeployments_controller.go L763-770).
pub fn single_node(inv: &Inventory) -> bool {
    if !inv.is_site() {
        return false;
    }
    let declared = inv
        .cluster
        .ztp
        .as_ref()
        .and_then(|z| z.entry.get("clusterType"))
        .and_then(|t| t.as_str());
    let masters = inv
        .hosts
        .iter()
        .filter(|h| h.role.value == Role::Master)
        .count();
    let workers = inv.hosts.len() - masters;
    match inv.kind {
        Some(nodenet_model::InputKind::SiteConfig) => masters == 1,
        _ => declared == Some("SNO") || masters == 1 && workers == 0,
    }
}

/// A single-node cluster runs with user-managed networking, under which
/// assisted-service refuses any VIP (assisted-service@063b2579
/// internal/cluster/validations/validations.go L644-658: "API VIPs cannot
/// be set with User Managed Networking"): the AgentClusterInstall never
/// syncs and the site never installs.
pub fn check_single_node(
    inv: &Inventory,
    _reports: &[crate::HostReport],
    out: &mut Vec<Diagnostic>,
) {
    if !single_node(inv) {
        return;
    }
    let cluster = &inv.cluster;
    for (vips, what, said) in [
        (&cluster.api_vips, "API", "API VIPs"),
        (&cluster.ingress_vips, "ingress", "Ingress VIPs"),
    ] {
        for vip in vips.iter() {
            out.push(
                Diagnostic::error(
                    Code::SnoVip,
                    format!(
                        "{what} VIP {} on a single-node cluster: assisted-service runs it with user-managed networking and refuses every VIP (\"{said} cannot be set with User Managed Networking\")",
                        vip.value
                    ),
                )
                .at(vip.span)
                .help("remove the VIPs (a single-node cluster serves its API and ingress at the node's own address), or add control-plane nodes"),
            );
        }
    }
}

/// A site an inventory describes is rendered as a ClusterInstance: what
/// the CRD requires and nodenet does not own must be in its
/// `cluster.clusterInstance`.
pub fn check_cluster_instance_fields(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let Some(z) = inv
        .cluster
        .ztp
        .as_ref()
        .filter(|_| inv.kind == Some(nodenet_model::InputKind::Inventory))
    else {
        return;
    };
    for key in ["clusterImageSetNameRef", "pullSecretRef"] {
        if z.entry.get(key).is_none() {
            let mut d = Diagnostic::error(
                Code::MissingField,
                format!("the site's ClusterInstance needs `{key}`, which nodenet does not make up"),
            )
            .help(format!("add `{key}` to `cluster.clusterInstance` (for every site) or to the site's `cluster.clusterInstance`"));
            if let Some(span) = inv.cluster.span {
                d = d.at(span);
            }
            out.push(d);
        }
    }
}

/// The OpenShift minor release an image set's name gives (`openshift-
/// 4.13.5`, `img4.12.30-x86-64-appsub`): the `4.N` in it.
fn openshift_minor(image_set: &str) -> Option<u32> {
    let at = image_set.find("4.")?;
    let digits: String = image_set[at + 2..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// A site whose image set names OpenShift 4.13 or earlier cannot take a
/// state bound by MAC: its nmstate (before 2.2.10) does not know
/// `identifier`. Said once per site, at the image set.
pub fn check_mac_binding_release(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let Some(z) = &inv.cluster.ztp else { return };
    let Some(image_set) = z.entry.get("clusterImageSetNameRef").or_else(|| {
        z.site
            .as_ref()
            .and_then(|s| s.get("clusterImageSetNameRef"))
    }) else {
        return;
    };
    let Some(name) = image_set.scalar_text() else {
        return;
    };
    let Some(minor) = openshift_minor(&name).filter(|m| *m <= 13) else {
        return;
    };
    let bound = inv.hosts.iter().find_map(|h| {
        let ifaces = h.network.as_ref()?.get("interfaces")?.as_seq()?;
        let id = ifaces.iter().find_map(|i| {
            i.get("identifier")
                .filter(|v| v.as_str() == Some("mac-address"))
        })?;
        Some((h, id))
    });
    let Some((host, id)) = bound else { return };
    out.push(
        Diagnostic::warning(
            Code::MacBindingUnsupported,
            format!(
                "the site installs `{name}` (OpenShift 4.{minor}, nmstate before 2.2.10), which refuses `identifier: mac-address`; `{}` and every host bound by MAC would have its whole state refused",
                host.name.value
            ),
        )
        .at(image_set.span)
        .related(id.span, "bound by MAC")
        .help("pin the NIC names instead (`nicBinding: pin`), or install 4.14 or later"),
    );
}

/// What is unique across the fleet: cluster names; and since the hub must
/// reach every site, each MAC, boot MAC, BMC address and static address
/// belongs to one cluster (duplicates inside a cluster are its own
/// checks' findings), but for addresses in a site's `behindNat` ranges.
pub fn check_across(clusters: &[(&Inventory, &Report)], out: &mut Vec<Diagnostic>) {
    if clusters.len() < 2 {
        return;
    }
    let mut names: HashMap<&str, Span> = HashMap::new();
    let mut seen = Claims::default();
    for (c, (inv, report)) in clusters.iter().enumerate() {
        if let Some(name) = &inv.cluster.name {
            if let Some(first) = names.insert(&name.value, name.span) {
                out.push(
                    Diagnostic::error(
                        Code::DuplicateClusterName,
                        format!("cluster name `{}` is used twice in the fleet", name.value),
                    )
                    .at(name.span)
                    .related(first, "first used here")
                    .help("each site is a ManagedCluster and a namespace on the hub: give it its own name"),
                );
            }
        }
        let cluster = inv
            .cluster
            .name
            .as_ref()
            .map(|n| n.value.as_str())
            .unwrap_or("?");
        for (host, r) in inv.hosts.iter().zip(&report.hosts) {
            let owner = Owner {
                cluster: c,
                cluster_name: cluster,
                host: &host.name.value,
            };
            let mut claim = |key: Key, span: Span, what: String, code: Code| {
                if let Some(first) = seen.claim(key, owner, span) {
                    out.push(
                        Diagnostic::error(
                            code,
                            format!(
                                "{what} is also used by `{}` of cluster `{}`",
                                first.0.host, first.0.cluster_name
                            ),
                        )
                        .at(span)
                        .host(host.name.value.clone())
                        .related(first.1, "first used here"),
                    );
                }
            };
            if let Some(m) = &host.boot_mac {
                claim(
                    Key::BootMac(m.value.to_ascii_lowercase()),
                    m.span,
                    format!("boot MAC {}", m.value),
                    Code::DuplicateBootMac,
                );
            }
            for nic in &host.nics {
                if let Some(m) = &nic.mac {
                    claim(
                        Key::Mac(m.value.to_ascii_lowercase()),
                        m.span,
                        format!("MAC {} of `{}`", m.value, nic.name.value),
                        Code::DuplicateMac,
                    );
                }
            }
            let bmc = host.bmc.as_ref();
            if let Some(b) = bmc.filter(|b| !behind_nat(inv, bmc_ip(&b.address.value))) {
                let key = b.address.value.trim_end_matches('/').to_ascii_lowercase();
                claim(
                    Key::Bmc(key),
                    b.address.span,
                    "the BMC address".into(),
                    Code::DuplicateBmcAddress,
                );
            }
            for a in r.addresses.iter().filter(|a| {
                !crate::br_ex::shared_by_design(&inv.cluster, &a.ip)
                    && !a.ip.is_loopback()
                    && !behind_nat(inv, Some(a.ip))
            }) {
                claim(Key::Ip(a.ip), a.span, a.ip.to_string(), Code::DuplicateIp);
            }
        }
    }
}

/// An address inside the site's `behindNat` ranges: private to the site,
/// which other sites may reuse.
fn behind_nat(inv: &Inventory, ip: Option<IpAddr>) -> bool {
    ip.is_some_and(|ip| inv.cluster.behind_nat.iter().any(|n| n.value.contains(&ip)))
}

/// The IP address a BMC URL names (`redfish://10.0.0.5/...`,
/// `[fd00::5]`), when it names one rather than a host name.
pub fn bmc_ip(url: &str) -> Option<IpAddr> {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split('/').next()?;
    let host = authority
        .rsplit_once('@')
        .map(|(_, h)| h)
        .unwrap_or(authority);
    if let Some(v6) = host.strip_prefix('[') {
        return v6.split(']').next()?.parse().ok();
    }
    host.split(':').next()?.parse().ok()
}

#[derive(Clone, Copy)]
struct Owner<'a> {
    cluster: usize,
    cluster_name: &'a str,
    host: &'a str,
}

#[derive(Hash, PartialEq, Eq)]
enum Key {
    BootMac(String),
    Mac(String),
    Bmc(String),
    Ip(IpAddr),
}

#[derive(Default)]
struct Claims<'a> {
    first: HashMap<Key, (Owner<'a>, Span)>,
}

impl<'a> Claims<'a> {
    /// The first user of `key` when it is in another cluster.
    fn claim(&mut self, key: Key, owner: Owner<'a>, span: Span) -> Option<(Owner<'a>, Span)> {
        match self.first.get(&key) {
            Some(&(first, at)) if first.cluster != owner.cluster => Some((first, at)),
            Some(_) => None,
            None => {
                self.first.insert(key, (owner, span));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn image_set_names_give_their_minor_release() {
        assert_eq!(super::openshift_minor("openshift-4.13.5"), Some(13));
        assert_eq!(super::openshift_minor("img4.12.30-x86-64-appsub"), Some(12));
        assert_eq!(super::openshift_minor("openshift-v4.16"), Some(16));
        assert_eq!(super::openshift_minor("latest"), None);
    }

    #[test]
    fn bmc_ip_reads_the_host_of_a_bmc_url() {
        let ip = |s: &str| super::bmc_ip(s).map(|i| i.to_string());
        assert_eq!(
            ip("redfish-virtualmedia+https://10.0.0.5/redfish/v1/Systems/1").as_deref(),
            Some("10.0.0.5")
        );
        assert_eq!(ip("ipmi://10.0.0.6:623").as_deref(), Some("10.0.0.6"));
        assert_eq!(
            ip("idrac-virtualmedia://[fd00::5]:443/x").as_deref(),
            Some("fd00::5")
        );
        assert_eq!(ip("redfish://bmc-1.example.com/x"), None);
    }
}
