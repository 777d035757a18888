//! What a new inventory version changes for the whole cluster: its
//! networks, VIPs, provisioning, OS image, br-ex, node agent, and every
//! install-config and agent-config field it carries through. Each is a
//! plan entry with its risk and what it breaks: most are fixed at install
//! (openshift-install reads its files once), so a plan must not wave them
//! through.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::Serialize;
use serde_json::{Map, Value as J};

use nodenet_check::network::Network;
use nodenet_model::{Cluster, InputKind, Inventory, Located, Scope};

use crate::Risk;

/// One cluster field that differs between the versions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClusterChange {
    pub field: String,
    pub old: String,
    pub new: String,
    pub risk: Risk,
    /// What the change means for a cluster that runs.
    pub what: String,
}

fn one_binding(b: &Option<Located<nodenet_model::nic_binding::NicBinding>>) -> String {
    b.as_ref()
        .map(|b| b.value.as_str().to_string())
        .unwrap_or_default()
}

fn list<T: ToString>(items: &[Located<T>]) -> String {
    items
        .iter()
        .map(|i| i.value.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn one<T: ToString>(item: &Option<Located<T>>) -> String {
    item.as_ref()
        .map(|i| i.value.to_string())
        .unwrap_or_default()
}

/// Whether both versions come from inputs that can say a field: the
/// inventory's own settings (`brEx`, `nodeAgent`, …) are in no installer
/// file, so a render's install-config read back as OLD is silent on them.
fn both_say(old: &Inventory, new: &Inventory, kinds: &[InputKind]) -> bool {
    let says = |inv: &Inventory| inv.kinds.iter().any(|k| kinds.contains(k));
    says(old) && says(new)
}

/// Fields of the inventory alone.
const NATIVE: &[&str] = &[
    "nodeNames",
    "failureDomain",
    "brEx",
    "ovnMasquerade",
    "nodeAgent",
];

/// The changes found so far, and which fields both versions can say.
struct Changes {
    out: Vec<ClusterChange>,
    /// Both versions are nodenet inventories (the [`NATIVE`] fields).
    native: bool,
    /// Both carry the agent installer's settings.
    agent_said: bool,
    /// The machine networks reach install-config.yaml only in a cluster
    /// with a name, domain and machine network (else render writes only
    /// its hosts there).
    complete: bool,
}

impl Changes {
    /// A change of `field` from `a` to `b`, when they differ and both
    /// versions can say the field.
    fn push(&mut self, field: &str, a: String, b: String, risk: Risk, what: &str) {
        self.push_with(field, a, b, risk, || what.to_string());
    }

    /// [`Changes::push`] with its meaning worked out only for a change
    /// (some read every host's state: 10,000 of them for nothing when the
    /// field is the same).
    fn push_with(
        &mut self,
        field: &str,
        a: String,
        b: String,
        risk: Risk,
        what: impl FnOnce() -> String,
    ) {
        let said = match field {
            f if NATIVE.contains(&f) => self.native,
            "rendezvousIP" => self.agent_said,
            "machineNetworks" => self.complete,
            _ => true,
        };
        if said && a != b {
            self.out.push(ClusterChange {
                field: field.into(),
                old: a,
                new: b,
                risk,
                what: what(),
            });
        }
    }
}

/// Every cluster-level difference between `old` and `new`.
pub fn cluster_changes(old: &Inventory, new: &Inventory) -> Vec<ClusterChange> {
    let (o, n) = (&old.cluster, &new.cluster);
    let mut c = Changes {
        out: Vec::new(),
        native: both_say(old, new, &[InputKind::Inventory]),
        agent_said: both_say(old, new, &[InputKind::Inventory, InputKind::AgentConfig]),
        complete: o.is_complete() || n.is_complete(),
    };
    identity_and_addresses(&mut c, new, o, n);
    provisioning(&mut c, o, n);
    node_settings(&mut c, o, n);
    c.push(
        "rendezvousIP",
        rendezvous(old),
        rendezvous(new),
        Risk::Modifying,
        "install only: the agent installer's first host (the agent ISO must be made again)",
    );
    carried(
        &mut c.out,
        "install-config",
        &install_config_carried(old),
        &install_config_carried(new),
    );
    if c.agent_said {
        carried(
            &mut c.out,
            "agent-config",
            &agent_config_carried(o),
            &agent_config_carried(n),
        );
    }
    c.out
}

/// The cluster's name and domain, machine networks and VIPs.
fn identity_and_addresses(c: &mut Changes, new: &Inventory, o: &Cluster, n: &Cluster) {
    let fixed = "fixed at install: a cluster of another name or domain is another cluster";
    c.push("name", one(&o.name), one(&n.name), Risk::Disruptive, fixed);
    c.push(
        "baseDomain",
        one(&o.base_domain),
        one(&n.base_domain),
        Risk::Disruptive,
        fixed,
    );
    c.push_with(
        "machineNetworks",
        list(&o.machine_networks),
        list(&n.machine_networks),
        Risk::Disruptive,
        || machine_network_breaks(new, n),
    );
    c.push(
        "apiVIPs",
        list(&o.api_vips),
        list(&n.api_vips),
        Risk::Disruptive,
        &vip_breaks("API", "api", n),
    );
    c.push(
        "ingressVIPs",
        list(&o.ingress_vips),
        list(&n.ingress_vips),
        Risk::Disruptive,
        &vip_breaks("ingress", "*.apps", n),
    );
}

/// The Provisioning object's mode, network and NIC, and the OS image.
fn provisioning(c: &mut Changes, o: &Cluster, n: &Cluster) {
    // Written or left to the installer's default (Managed), the same
    // mode: install-config.yaml changes, the cluster does not.
    let said = |c: &Cluster| {
        let written = c.provisioning.network.as_ref().map(|m| m.value.as_str());
        match written {
            Some(m) => m.to_string(),
            None => format!("(unset: {})", c.provisioning.mode().as_str()),
        }
    };
    if o.provisioning.mode() == n.provisioning.mode() {
        c.push(
            "provisioning.network",
            said(o),
            said(n),
            Risk::Additive,
            "the same mode, written otherwise: install-config.yaml changes, the cluster does not",
        );
    }
    c.push(
        "provisioning.network",
        o.provisioning.mode().as_str().into(),
        n.provisioning.mode().as_str().into(),
        Risk::Disruptive,
        "the Provisioning object's network mode: Managed runs the cluster's DHCP and PXE server on the provisioning network, Unmanaged only PXE, Disabled neither (hosts then boot by virtual media); metal3 restarts with it and hosts being provisioned fail",
    );
    c.push(
        "provisioning.cidr",
        one(&o.provisioning.cidr),
        one(&n.provisioning.cidr),
        Risk::Modifying,
        "the provisioning network's addresses (the Provisioning object): the masters' provisioning IP and the DHCP range move with it",
    );
    c.push(
        "provisioning.interface",
        one(&o.provisioning.interface),
        one(&n.provisioning.interface),
        Risk::Modifying,
        "the NIC the masters serve the provisioning network on (the Provisioning object)",
    );
    c.push(
        "clusterOSImage",
        one(&o.cluster_os_image),
        one(&n.cluster_os_image),
        Risk::Modifying,
        "provisioning only: hosts provisioned from now on boot this image",
    );
}

/// What the cluster asks of every node: key, names, br-ex, node agent.
fn node_settings(c: &mut Changes, o: &Cluster, n: &Cluster) {
    c.push(
        "sshKey",
        o.ssh_key.clone().unwrap_or_default(),
        n.ssh_key.clone().unwrap_or_default(),
        Risk::Modifying,
        "the core user's key: the MCO writes it to every node (no reboot)",
    );
    c.push(
        "nodeNames",
        format!("{:?}", o.node_names).to_lowercase(),
        format!("{:?}", n.node_names).to_lowercase(),
        Risk::Disruptive,
        "the name every node is known by: policies pinned by kubernetes.io/hostname and the files under /etc/nmstate/openshift change name",
    );
    c.push(
        "failureDomain",
        one(&o.failure_domain),
        one(&n.failure_domain),
        Risk::Modifying,
        "the order disruptive policies go out in (one failure domain at a time)",
    );
    c.push(
        "nicBinding",
        one_binding(&o.nic_binding),
        one_binding(&n.nic_binding),
        Risk::Modifying,
        "how the hosts' profiles find their NICs (by name, or by the NIC table's MACs): every ethernet profile of a host that follows it is written again (the hosts' own changes say which)",
    );
    c.push(
        "noDefaultRoute",
        list(&o.no_default_route),
        list(&n.no_default_route),
        Risk::Modifying,
        "nothing on the nodes: what `check` asks of the hosts' default routes per family",
    );
    let br_ex = |c: &Cluster| {
        c.br_ex
            .as_ref()
            .map(|b| b.value.as_str())
            .unwrap_or_default()
            .to_string()
    };
    c.push(
        "brEx",
        br_ex(o),
        br_ex(n),
        Risk::Disruptive,
        "who makes br-ex, OVN-Kubernetes' bridge: every node's uplink moves under a new owner at its next boot",
    );
    c.push(
        "ovnMasquerade",
        list(&o.ovn_masquerade),
        list(&n.ovn_masquerade),
        Risk::Disruptive,
        "the masquerade addresses day-2 states keep on br-ex: wrong ones cut pods off the node's services",
    );
    c.push(
        "nodeAgent",
        node_agent(o),
        node_agent(n),
        Risk::Disruptive,
        "a new node image or unit: every node of the pool reboots into it in turn (maxUnavailable)",
    );
}

fn node_agent(c: &Cluster) -> String {
    c.node_agent
        .as_ref()
        .map(|a| {
            format!(
                "image {}, layering {:?}, osImageURL {}, push {} with {}, pull secret {}, checkpoint {}, probe {}, probes {}",
                one(&a.image),
                a.layering,
                one(&a.os_image_url),
                one(&a.rendered_image_push_spec),
                one(&a.rendered_image_push_secret),
                one(&a.base_image_pull_secret),
                one(&a.checkpoint_timeout),
                one(&a.probe_timeout),
                list(&a.probes)
            )
        })
        .unwrap_or_default()
}

/// The rendezvous host's address as render writes it: the inventory's,
/// else the one render picks from the masters' static addresses.
fn rendezvous(inv: &Inventory) -> String {
    let addresses: Vec<Vec<IpAddr>> = inv
        .hosts
        .iter()
        .map(|h| match (&h.network, h.role.value) {
            (Some(state), nodenet_model::Role::Master) => Network::read(state)
                .addresses
                .iter()
                .map(|a| a.ip)
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    nodenet_render::artifacts::rendezvous_ip(inv, &addresses)
        .map(|ip| ip.to_string())
        .unwrap_or_default()
}

/// The machine networks changed: what no longer fits.
fn machine_network_breaks(new: &Inventory, c: &Cluster) -> String {
    let nets: Vec<IpNet> = c.machine_networks.iter().map(|n| n.value).collect();
    let inside = |ip: &IpAddr| nets.iter().any(|n| n.contains(ip));
    let mut outside: Vec<String> = Vec::new();
    for h in new.hosts.iter().filter(|h| h.scope() == Scope::FirstBoot) {
        let Some(state) = &h.network else { continue };
        let net = Network::read(state);
        let addrs: Vec<IpAddr> = net.addresses.iter().map(|a| a.ip).collect();
        let same_family = |ip: &IpAddr| nets.iter().any(|n| n.addr().is_ipv4() == ip.is_ipv4());
        if !addrs.is_empty() && addrs.iter().any(same_family) && !addrs.iter().any(inside) {
            outside.push(h.name.value.clone());
        }
    }
    let vips: Vec<String> = c
        .api_vips
        .iter()
        .chain(&c.ingress_vips)
        .filter(|v| !inside(&v.value))
        .map(|v| v.value.to_string())
        .collect();
    let mut what = "fixed at install (install-config is read once): on a running cluster every node's address, the VIPs and etcd's peers are in it; changing it means re-addressing the cluster".to_string();
    if !outside.is_empty() {
        what.push_str(&format!(
            "; {} host(s) have no address in it ({})",
            outside.len(),
            crate::first_and_more(&outside, "")
        ));
    }
    if !vips.is_empty() {
        what.push_str(&format!("; VIPs outside it: {}", vips.join(", ")));
    }
    what
}

fn vip_breaks(which: &str, record: &str, c: &Cluster) -> String {
    let domain = match (&c.name, &c.base_domain) {
        (Some(n), Some(d)) => format!("{record}.{}.{}", n.value, d.value),
        _ => format!("{record}.<cluster>.<domain>"),
    };
    format!("the {which} VIP moves: keepalived moves it, the DNS record {domain} and every client must follow; on an installed cluster only the Infrastructure object changes it")
}

/// The install-config fields nodenet carries through (what render would
/// write, less the fields the plan compares from the model and the
/// replicas that follow the hosts).
fn install_config_carried(inv: &Inventory) -> J {
    let mut doc = nodenet_render::artifacts::install_config_cluster(inv);
    for (path, _) in nodenet_model::load::INSTALL_CONFIG_OWNED {
        remove_path(&mut doc, path);
    }
    remove_path(&mut doc, &["controlPlane", "replicas"]);
    for pool in doc
        .get_mut("compute")
        .and_then(J::as_array_mut)
        .into_iter()
        .flatten()
    {
        remove_path(pool, &["replicas"]);
    }
    doc
}

/// `doc` without the value at `path` (keys of nested mappings).
fn remove_path(doc: &mut J, path: &[&str]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut v = doc;
    for k in parents {
        match v.get_mut(*k) {
            Some(inner) => v = inner,
            None => return,
        }
    }
    if let Some(m) = v.as_object_mut() {
        m.shift_remove(*last);
    }
}

fn agent_config_carried(c: &Cluster) -> J {
    let mut doc = c
        .agent_config
        .as_ref()
        .map(|n| n.to_json())
        .unwrap_or(J::Object(Map::new()));
    for path in [
        &["apiVersion"][..],
        &["kind"],
        &["rendezvousIP"],
        &["hosts"],
        &["metadata", "name"],
    ] {
        remove_path(&mut doc, path);
    }
    doc
}

/// Leaf differences between two carried documents, by dotted path
/// (lists compared whole).
fn carried(out: &mut Vec<ClusterChange>, file: &str, old: &J, new: &J) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    leaves("", old, &mut a);
    leaves("", new, &mut b);
    let mut paths: Vec<&String> = a.iter().chain(&b).map(|(p, _)| p).collect();
    paths.sort();
    paths.dedup();
    let value = |set: &[(String, J)], p: &str| {
        set.iter()
            .find(|(q, _)| q == p)
            .map(|(_, v)| v.to_string())
            .unwrap_or_default()
    };
    for p in paths {
        let (was, is) = (value(&a, p), value(&b, p));
        if was == is {
            continue;
        }
        let (risk, what) = field_meaning(file, p);
        out.push(ClusterChange {
            field: format!("{file} {p}"),
            old: was,
            new: is,
            risk,
            what,
        });
    }
}

fn leaves(prefix: &str, v: &J, out: &mut Vec<(String, J)>) {
    match v {
        J::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(&p, v, out);
            }
        }
        J::Object(_) if prefix.is_empty() => {}
        _ => out.push((prefix.to_string(), v.clone())),
    }
}

/// How a carried field's change lands on a cluster that runs.
fn field_meaning(file: &str, path: &str) -> (Risk, String) {
    let day1 = format!("{file}.yaml is read once, at install");
    let (risk, how) = match path {
        "fips" => (Risk::Disruptive, "FIPS mode cannot be changed on an installed cluster"),
        p if p.starts_with("networking.clusterNetwork") || p.starts_with("networking.serviceNetwork") => (
            Risk::Disruptive,
            "pod and service networks are changed on a running cluster only through the Network object, with every node rebooted (and service networks not at all)",
        ),
        p if p.starts_with("networking.") => (
            Risk::Disruptive,
            "the cluster network's settings change on a running cluster only through the Network operator, with node reboots",
        ),
        p if p.starts_with("proxy") => (
            Risk::Modifying,
            "on an installed cluster the `cluster` Proxy object carries it; every node's MachineConfig changes with it",
        ),
        "additionalTrustBundle" | "additionalTrustBundlePolicy" => (
            Risk::Modifying,
            "on an installed cluster a ConfigMap named by the Proxy object's trustedCA carries it",
        ),
        p if p.starts_with("imageDigestSources") || p.starts_with("imageContentSources") => (
            Risk::Modifying,
            "on an installed cluster ImageDigestMirrorSet objects carry it; every node's MachineConfig changes with it",
        ),
        p if p.starts_with("platform.baremetal.bootstrap") => (
            Risk::Modifying,
            "used by the bootstrap VM only: nothing changes on an installed cluster",
        ),
        _ => (Risk::Modifying, "change it on the cluster itself, if it can be changed at all"),
    };
    (risk, format!("{day1}: {how}"))
}

#[cfg(test)]
mod tests;
