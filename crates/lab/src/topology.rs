//! What `nodenet lab up` builds from an inventory: a node VM per chosen
//! host with its NICs (names and MACs), one switch port per NIC with what
//! the inventory expects of it (VLANs tagged and native, MTU, an 802.3ad
//! aggregation per LACP bond, the LLDP port name), and the networks the
//! switch routes, serves by DHCP and names in DNS.

use std::collections::BTreeSet;
use std::net::IpAddr;

use ipnet::IpNet;
use nodenet_check::network::{Family, Network};
use nodenet_check::wiring::{self, Expected};
use nodenet_model::{Host, Inventory, Node};
use serde::{Deserialize, Serialize};

use crate::LabError;

/// NICs one node VM can have (virtio-net PCI devices beside its disks).
pub const MAX_NICS_PER_NODE: usize = 8;
/// Ports of the lab's switch VM: one PCI slot each.
pub const MAX_SWITCH_PORTS: usize = 24;
/// The name lldpd announces when the inventory names no switch.
pub const DEFAULT_SWITCH: &str = "lab-switch";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LabNic {
    /// The inventory's name for it (the name the node VM gives it).
    pub name: String,
    pub mac: String,
    /// Its switch port (`swp1`...).
    pub port: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LabNode {
    pub name: String,
    pub nics: Vec<LabNic>,
    pub machine_id: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SwitchPort {
    /// `swpN`: the switch VM's N-th NIC.
    pub name: String,
    pub host: String,
    pub nic: String,
    /// The port name the inventory gives (announced by LLDP), if any.
    pub label: Option<String>,
    pub vlans: Vec<u16>,
    /// The untagged VLAN.
    pub native: u16,
    pub mtu: u32,
    /// The switch-side 802.3ad bond this port is in (`bond1`...), for a
    /// host's LACP bond.
    pub lacp: Option<String>,
}

/// An IP network on one VLAN of the switch: the switch holds `gateway`
/// there, and serves DHCP when a node asks for it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Segment {
    pub vlan: u16,
    pub network: IpNet,
    pub gateway: IpAddr,
    /// First and last address DHCP hands out, when some node uses DHCP here.
    pub dhcp: Option<(IpAddr, IpAddr)>,
    /// Why the lab has this network (`machine network`, `master-0's bond0.110`).
    pub why: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Topology {
    pub switch: String,
    pub nodes: Vec<LabNode>,
    pub ports: Vec<SwitchPort>,
    pub segments: Vec<Segment>,
    /// DNS names the switch answers (api, api-int, *.apps, the nodes).
    pub dns: Vec<(String, IpAddr)>,
    /// What the lab cannot be faithful to, said once each.
    pub notes: Vec<String>,
    /// The nodes' NICs keep the names the kernel gives them (eth0, eth1,
    /// ... in PCI order) instead of the inventory's: another boot medium,
    /// as far as names go (`lab up --nic-names kernel`).
    #[serde(default)]
    pub kernel_nic_names: bool,
}

/// A stable locally administered MAC for a NIC the inventory gives none.
fn made_up_mac(host: &str, nic: &str) -> String {
    let mut h: u32 = 2166136261;
    for b in host.bytes().chain([0]).chain(nic.bytes()) {
        h = (h ^ b as u32).wrapping_mul(16777619);
    }
    let b = h.to_be_bytes();
    format!("52:54:00:{:02x}:{:02x}:{:02x}", b[1], b[2], b[3])
}

/// The VLAN an interface's untagged traffic rides on: its own VLAN id
/// for a VLAN interface, else the native VLAN of the first NIC under it.
fn vlan_of(net: &Network, expected: &[Expected], iface: &str, depth: u8) -> Option<u16> {
    if depth > 8 {
        return None;
    }
    let i = net.iface(iface);
    if let Some(i) = i.filter(|i| i.is("vlan")) {
        return i
            .get("vlan")
            .and_then(|v| v.get("id"))
            .and_then(Node::as_i64)
            .and_then(|v| u16::try_from(v).ok());
    }
    if let Some(e) = expected.iter().find(|e| e.nic == iface) {
        return Some(e.native.as_ref().map(|n| n.value).unwrap_or(1));
    }
    let i = i?;
    i.ports
        .iter()
        .find_map(|p| vlan_of(net, expected, &p.name, depth + 1))
}

/// The hosts `--hosts` names (in the inventory's order), or with
/// `per_shape`, the first N of each shape (role, NIC count and the
/// interface types and bond modes of its intent), else all.
pub fn choose<'i>(
    inv: &'i Inventory,
    names: &[String],
    per_shape: Option<usize>,
) -> Result<Vec<&'i Host>, LabError> {
    for n in names {
        if !inv.hosts.iter().any(|h| &h.name.value == n) {
            return Err(LabError::Input(format!(
                "--hosts: no host `{n}` in the inventory (it has {})",
                inv.hosts
                    .iter()
                    .map(|h| h.name.value.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let mut chosen: Vec<&Host> = inv
        .hosts
        .iter()
        .filter(|h| names.is_empty() || names.contains(&h.name.value))
        .collect();
    if let Some(n) = per_shape {
        let mut seen: Vec<(String, usize)> = Vec::new();
        chosen.retain(|h| {
            let s = shape(h);
            match seen.iter_mut().find(|(k, _)| *k == s) {
                Some((_, count)) if *count >= n => false,
                Some((_, count)) => {
                    *count += 1;
                    true
                }
                None => {
                    seen.push((s, 1));
                    true
                }
            }
        });
    }
    if chosen.is_empty() {
        return Err(LabError::Input(
            "the inventory has no host to put in the lab".into(),
        ));
    }
    Ok(chosen)
}

/// What makes two hosts the same for a rehearsal.
pub fn shape(h: &Host) -> String {
    let mut parts = vec![format!("{:?}", h.role.value), h.nics.len().to_string()];
    if let Some(n) = &h.network {
        let net = Network::read(n);
        let mut kinds: Vec<String> = net
            .ifaces
            .iter()
            .filter(|i| !i.absent)
            .map(|i| {
                let mut k = i.kind.clone().unwrap_or_default();
                if let Some(m) = i.bond_mode() {
                    k = format!("{k}:{m}");
                }
                if let Some(v) = i
                    .get("vlan")
                    .and_then(|v| v.get("id"))
                    .and_then(Node::as_i64)
                {
                    k = format!("{k}:{v}");
                }
                k
            })
            .collect();
        kinds.sort();
        parts.extend(kinds);
    }
    parts.join(",")
}

/// The lab for `hosts` of `inv`.
pub fn plan(inv: &Inventory, hosts: &[&Host]) -> Result<Topology, LabError> {
    let mut t = Topology {
        switch: DEFAULT_SWITCH.to_string(),
        nodes: Vec::new(),
        ports: Vec::new(),
        segments: Vec::new(),
        dns: Vec::new(),
        notes: Vec::new(),
        kernel_nic_names: false,
    };
    let mut switches: BTreeSet<String> = BTreeSet::new();
    let mut lacp_groups = 0;
    // Addresses taken (static, VIPs): DHCP ranges and gateways avoid them.
    let mut taken: BTreeSet<IpAddr> = inv
        .cluster
        .api_vips
        .iter()
        .chain(&inv.cluster.ingress_vips)
        .map(|v| v.value)
        .collect();
    let nets: Vec<(Vec<Expected>, Option<&Node>)> = hosts
        .iter()
        .map(|h| (wiring::expected(h), h.network.as_ref()))
        .collect();
    for (_, n) in &nets {
        if let Some(n) = n {
            for a in Network::read(n).addresses {
                taken.insert(a.ip);
            }
        }
    }
    for (idx, (h, (expected, _))) in hosts.iter().zip(&nets).enumerate() {
        let node = cable(&mut t, idx, &h.name.value, expected, &mut lacp_groups)?;
        switches.extend(
            expected
                .iter()
                .filter_map(|e| e.switch.as_ref())
                .map(|s| s.value.clone()),
        );
        t.nodes.push(node);
    }
    if t.ports.len() > MAX_SWITCH_PORTS {
        return Err(LabError::Input(format!(
            "the chosen hosts have {} NICs; the lab's switch has {MAX_SWITCH_PORTS} ports (choose fewer with --hosts or --per-shape)",
            t.ports.len()
        )));
    }
    if let Some(first) = switches.iter().next() {
        t.switch = first.clone();
        if switches.len() > 1 {
            t.notes.push(format!(
                "the inventory names {} switches ({}); the lab has one, announced as {first}",
                switches.len(),
                switches.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    for (h, (expected, state)) in hosts.iter().zip(&nets) {
        if let Some(state) = state {
            host_segments(&mut t, inv, &h.name.value, expected, state, &taken);
        }
    }
    provisioning_segment(&mut t, inv, &taken);
    dns_names(&mut t, inv, hosts);
    Ok(t)
}

/// A node for host `name` (the `idx`th), each NIC cabled to the next
/// switch port with the VLANs, MTU and LACP bond its host expects.
fn cable(
    t: &mut Topology,
    idx: usize,
    name: &str,
    expected: &[Expected],
    lacp_groups: &mut usize,
) -> Result<LabNode, LabError> {
    if expected.len() > MAX_NICS_PER_NODE {
        return Err(LabError::Input(format!(
            "{name} has {} NICs; a lab node has at most {MAX_NICS_PER_NODE}",
            expected.len()
        )));
    }
    if expected.is_empty() {
        return Err(LabError::Input(format!(
            "{name}: neither its NIC table nor its network names a NIC; the lab cannot cable it"
        )));
    }
    let mut node = LabNode {
        name: name.to_string(),
        nics: Vec::new(),
        machine_id: format!("5a1e{:028x}", idx + 1),
    };
    for e in expected {
        let port = format!("swp{}", t.ports.len() + 1);
        if e.nic.len() > 15 {
            return Err(LabError::Input(format!(
                "{name}: NIC name `{}` is longer than the kernel's 15 characters",
                e.nic
            )));
        }
        let mac = e
            .mac
            .clone()
            .map(|m| m.to_ascii_lowercase())
            .unwrap_or_else(|| made_up_mac(name, &e.nic));
        // The ports of one LACP bond share one switch-side bond.
        let lacp = e
            .bond
            .as_ref()
            .filter(|b| b.mode.as_deref() == Some("802.3ad"))
            .map(|b| {
                t.ports
                    .iter()
                    .find(|p| p.host == name && b.ports.contains(&p.nic))
                    .and_then(|p| p.lacp.clone())
                    .unwrap_or_else(|| {
                        *lacp_groups += 1;
                        format!("bond{lacp_groups}")
                    })
            });
        t.ports.push(SwitchPort {
            name: port.clone(),
            host: name.to_string(),
            nic: e.nic.clone(),
            label: e.port.as_ref().map(|p| p.value.clone()),
            vlans: e.vlans.iter().map(|v| v.id).collect(),
            native: e.native.as_ref().map(|n| n.value).unwrap_or(1),
            mtu: e.mtu.as_ref().map(|m| m.mtu).unwrap_or(1500),
            lacp,
        });
        node.nics.push(LabNic {
            name: e.nic.clone(),
            mac,
            port,
        });
    }
    Ok(node)
}

/// Networks: every static address's network, on the VLAN it rides;
/// DHCP on an interface serves the machine network of that family.
fn host_segments(
    t: &mut Topology,
    inv: &Inventory,
    host: &str,
    expected: &[Expected],
    state: &Node,
    taken: &BTreeSet<IpAddr>,
) {
    let net = Network::read(state);
    let gateways = gateways(state);
    for a in &net.addresses {
        let Some(network) = a.network() else { continue };
        let Some(vlan) = vlan_of(&net, expected, &a.iface, 0) else {
            continue;
        };
        let what = format!("{host}'s {}", a.iface);
        add_segment(t, vlan, network, &gateways, taken, false, what);
    }
    for i in net.ifaces.iter().filter(|i| !i.absent) {
        for fam in [Family::V4, Family::V6] {
            if !(i.family_enabled(fam) && i.family_dynamic(fam)) {
                continue;
            }
            let Some(vlan) = vlan_of(&net, expected, &i.name, 0) else {
                continue;
            };
            let machine = inv
                .cluster
                .machine_networks
                .iter()
                .map(|m| m.value)
                .find(|m| Family::of(&m.addr()) == fam);
            match machine {
                Some(network) => {
                    let what = format!("{host}'s {} (DHCP, machine network)", i.name);
                    add_segment(t, vlan, network, &gateways, taken, true, what);
                }
                None => t.notes.push(format!(
                    "{host}: {} asks for {} by DHCP but the cluster has no {} machine network for the lab to serve",
                    i.name,
                    fam.key(),
                    fam.key()
                )),
            }
        }
    }
}

/// The provisioning network: the switch answers DHCP there as Ironic's
/// dnsmasq would, on the native VLAN of each host's provisioning NIC.
fn provisioning_segment(t: &mut Topology, inv: &Inventory, taken: &BTreeSet<IpAddr>) {
    let prov = &inv.cluster.provisioning;
    let (Some(cidr), Some(nic)) = (&prov.cidr, &prov.interface) else {
        return;
    };
    if prov.mode() == nodenet_model::ProvisioningNetwork::Disabled {
        return;
    }
    if let Some(port) = t.ports.iter().find(|p| p.nic == nic.value) {
        let vlan = port.native;
        add_segment(
            t,
            vlan,
            cidr.value,
            &[],
            taken,
            true,
            "provisioning network".into(),
        );
    }
}

/// DNS: what the installer and the nodes look up.
fn dns_names(t: &mut Topology, inv: &Inventory, hosts: &[&Host]) {
    let (Some(c), Some(d)) = (&inv.cluster.name, &inv.cluster.base_domain) else {
        return;
    };
    let domain = format!("{}.{}", c.value, d.value);
    for v in &inv.cluster.api_vips {
        t.dns.push((format!("api.{domain}"), v.value));
        t.dns.push((format!("api-int.{domain}"), v.value));
    }
    for v in &inv.cluster.ingress_vips {
        t.dns.push((format!("apps.{domain}"), v.value));
    }
    for h in hosts {
        let Some(state) = &h.network else { continue };
        for a in Network::read(state).addresses {
            if inv
                .cluster
                .machine_networks
                .iter()
                .any(|m| m.value.contains(&a.ip))
            {
                t.dns.push((format!("{}.{domain}", h.name.value), a.ip));
            }
        }
    }
}

/// Next hops of a state's routes (default routes first).
fn gateways(state: &Node) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    for route in state
        .get("routes")
        .and_then(|r| r.get("config"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        if route.get("state").and_then(Node::as_str) == Some("absent") {
            continue;
        }
        if let Some(ip) = route
            .get("next-hop-address")
            .and_then(Node::scalar_text)
            .and_then(|s| s.parse().ok())
        {
            if !out.contains(&ip) {
                out.push(ip);
            }
        }
    }
    out
}

fn add_segment(
    t: &mut Topology,
    vlan: u16,
    network: IpNet,
    gateways: &[IpAddr],
    taken: &BTreeSet<IpAddr>,
    dhcp: bool,
    why: String,
) {
    let network = network.trunc();
    if let Some(s) = t
        .segments
        .iter_mut()
        .find(|s| s.vlan == vlan && s.network == network)
    {
        if dhcp && s.dhcp.is_none() {
            s.dhcp = dhcp_range(network, s.gateway, taken);
        }
        return;
    }
    if t.segments.iter().any(|s| s.network == network) {
        t.notes.push(format!(
            "{network} is on more than one VLAN ({why}); the lab routes it on the first"
        ));
        return;
    }
    let gateway = gateways
        .iter()
        .copied()
        .find(|g| network.contains(g))
        .or_else(|| network.hosts().find(|a| !taken.contains(a)));
    let Some(gateway) = gateway else { return };
    t.segments.push(Segment {
        vlan,
        network,
        gateway,
        dhcp: if dhcp {
            dhcp_range(network, gateway, taken)
        } else {
            None
        },
        why,
    });
}

/// A DHCP range in the upper half of `network` (up to 100 addresses)
/// clear of the gateway and of every address the inventory uses.
fn dhcp_range(
    network: IpNet,
    gateway: IpAddr,
    taken: &BTreeSet<IpAddr>,
) -> Option<(IpAddr, IpAddr)> {
    let size: u128 = match network {
        IpNet::V4(n) => 1u128 << (32 - n.prefix_len()),
        IpNet::V6(n) => 1u128 << (128 - n.prefix_len()).min(64),
    };
    if size < 8 {
        return None;
    }
    let base = match network.network() {
        IpAddr::V4(a) => u32::from(a) as u128,
        IpAddr::V6(a) => u128::from(a),
    };
    let at = |off: u128| -> IpAddr {
        match network {
            IpNet::V4(_) => IpAddr::V4(((base + off) as u32).into()),
            IpNet::V6(_) => IpAddr::V6((base + off).into()),
        }
    };
    let count = (size / 2 - 2).min(100);
    // Slide the range up past addresses in use.
    let mut start = size / 2;
    while start + count < size - 1 {
        let clash = (start..start + count)
            .map(at)
            .any(|a| a == gateway || taken.contains(&a));
        if !clash {
            return Some((at(start), at(start + count - 1)));
        }
        start += count;
    }
    None
}

#[cfg(test)]
mod tests;
