//! Views of a checked inventory for people: one row per host (`nodenet
//! hosts`), one host's state (`nodenet show-host`), and what the topology
//! page (`topology.rs`) draws. Built from each host's NMState tree as
//! written (placeholders expanded), so a view of an inventory with errors
//! still shows what it says.

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value as J;

use nodenet_check::network::{Iface, Network};
use nodenet_check::{fleet, nmstate_bridge, HostReport, Report};
use nodenet_model::{Host, Inventory, Node, ProvisioningNetwork, Role, Scope};

/// One host (or one change to hosts) as people review it. Never holds a
/// secret: the BMC is its address, with any password in it masked.
#[derive(Clone, Debug, Serialize)]
pub struct HostView {
    pub name: String,
    /// `master`, `worker`, `arbiter`, or `None` when unset.
    pub role: Option<&'static str>,
    /// The format the host was read from.
    pub input: &'static str,
    /// For a change applied to several nodes (an NNCP selecting by label,
    /// a MachineConfig's `cluster.yml`): which.
    pub applies_to: Option<String>,
    /// Hosts whose states differ only in addresses and MACs share a shape
    /// (numbered from 1 in the order of each shape's first host).
    pub shape: Option<usize>,
    pub boot_mac: Option<String>,
    /// The NIC with the boot MAC.
    pub boot_interface: Option<String>,
    /// The provisioning network's NIC, when the network is in use.
    pub provisioning_interface: Option<String>,
    /// Whether the host PXE-boots from it (its BMC driver boots over the
    /// provisioning network).
    pub pxe_boot: bool,
    pub bmc: Option<String>,
    /// Default routes' next hops (static; DHCP gateways are not known).
    pub gateways: Vec<Gateway>,
    pub interfaces: Vec<IfaceView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Gateway {
    pub address: String,
    pub interface: Option<String>,
}

/// One interface of a host's state.
#[derive(Clone, Debug, Serialize)]
pub struct IfaceView {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// `up`, `down`, `absent`, ... as written (`None`: not written).
    pub state: Option<String>,
    /// From the host's NIC list, else the state's `mac-address`.
    pub mac: Option<String>,
    pub mtu: Option<i64>,
    /// `None` when the family is disabled (or not written).
    pub ipv4: Option<IpView>,
    pub ipv6: Option<IpView>,
    pub vlan: Option<VlanView>,
    /// The interface a MAC-VLAN, IPVLAN, VXLAN or InfiniBand partition
    /// sits on (a VLAN's is in `vlan`).
    pub base: Option<String>,
    pub bond: Option<BondView>,
    pub bridge: Option<BridgeView>,
    /// The bond or bridge this interface is a port of.
    pub controller: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct IpView {
    pub dhcp: bool,
    pub autoconf: bool,
    /// Static addresses, `ip/prefix`.
    pub addresses: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct VlanView {
    pub id: Option<i64>,
    pub base: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BondView {
    pub mode: Option<String>,
    pub ports: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BridgeView {
    pub ports: Vec<String>,
}

/// Interface types stacked on one other interface, by the key that holds
/// its `base-iface`.
const STACKED: &[&str] = &[
    "vlan",
    "mac-vlan",
    "mac-vtap",
    "ipvlan",
    "vxlan",
    "infiniband",
];

impl IfaceView {
    fn read(iface: &Iface, net: &Network, host: &Host) -> IfaceView {
        let text = |n: Option<&Node>| n.and_then(Node::scalar_text);
        let kind = iface.kind.clone();
        let mut base = None;
        let mut vlan = None;
        for key in STACKED {
            if let Some(block) = iface.get(key) {
                let b = text(block.get("base-iface"));
                if *key == "vlan" && iface.is("vlan") {
                    vlan = Some(VlanView {
                        id: block.get("id").and_then(Node::as_i64),
                        base: b,
                    });
                } else if b.is_some() && base.is_none() {
                    base = b;
                }
            }
        }
        let ports = || iface.ports.iter().map(|p| p.name.clone()).collect();
        let bond = iface.is("bond").then(|| BondView {
            mode: iface.bond_mode(),
            ports: ports(),
        });
        let bridge = (iface.is("linux-bridge") || iface.is("ovs-bridge"))
            .then(|| BridgeView { ports: ports() });
        let ip = |key: &str| {
            let block = iface.get(key)?;
            if !block
                .get("enabled")
                .and_then(Node::as_bool)
                .unwrap_or(false)
            {
                return None;
            }
            let flag = |k: &str| block.get(k).and_then(Node::as_bool).unwrap_or(false);
            let addresses = block
                .get("address")
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .filter_map(|a| {
                    let ip = text(a.get("ip"))?;
                    Some(match text(a.get("prefix-length")) {
                        Some(p) => format!("{ip}/{p}"),
                        None => ip,
                    })
                })
                .collect();
            Some(IpView {
                dhcp: flag("dhcp"),
                autoconf: flag("autoconf"),
                addresses,
            })
        };
        let mac = host
            .mac_of(&iface.name)
            .map(|m| m.value.clone())
            .or_else(|| text(iface.get("mac-address")));
        IfaceView {
            name: iface.name.clone(),
            kind,
            state: text(iface.get("state")),
            mac,
            mtu: iface.mtu().map(|(m, _)| m),
            ipv4: ip("ipv4"),
            ipv6: ip("ipv6"),
            vlan,
            base,
            bond,
            bridge,
            controller: (!iface.absent)
                .then(|| net.controller_of(&iface.name).map(|(c, _)| c.name.clone()))
                .flatten(),
        }
    }

    /// The interface it sits on (a VLAN's base, a MAC-VLAN's...).
    pub fn lower(&self) -> Option<&str> {
        self.vlan
            .as_ref()
            .and_then(|v| v.base.as_deref())
            .or(self.base.as_deref())
    }

    /// What the interface is, in a few words: `802.3ad eno2+eno3`, `vlan
    /// 110 on bond0`, `linux-bridge eno1`, `ovs-interface`; empty for an
    /// ethernet NIC.
    pub fn detail(&self) -> String {
        let kind = self.kind.as_deref().unwrap_or("");
        let mut s = match (&self.bond, &self.bridge, &self.vlan) {
            (Some(b), _, _) => {
                let mode = b.mode.as_deref().unwrap_or("bond");
                format!("{mode} {}", b.ports.join("+"))
            }
            (_, Some(b), _) => format!("{kind} {}", b.ports.join("+")),
            (_, _, Some(v)) => {
                let id = v.id.map(|i| i.to_string()).unwrap_or_else(|| "?".into());
                format!("vlan {id} on {}", v.base.as_deref().unwrap_or("?"))
            }
            _ if kind == "ethernet" || kind.is_empty() => String::new(),
            _ => match &self.base {
                Some(b) => format!("{kind} on {b}"),
                None => kind.to_string(),
            },
        };
        let trimmed = s.trim_end().len();
        s.truncate(trimmed);
        s
    }

    /// How the interface gets addresses besides static ones: `dhcp4`,
    /// `dhcp6`, `autoconf6`.
    pub fn dynamic(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.ipv4.as_ref().is_some_and(|i| i.dhcp) {
            out.push("dhcp4");
        }
        if let Some(v6) = &self.ipv6 {
            if v6.dhcp {
                out.push("dhcp6");
            }
            if v6.autoconf {
                out.push("autoconf6");
            }
        }
        out
    }

    /// Static addresses of both families, `ip/prefix`.
    pub fn addresses(&self) -> impl Iterator<Item = &str> {
        self.ipv4
            .iter()
            .chain(&self.ipv6)
            .flat_map(|i| i.addresses.iter().map(String::as_str))
    }

    pub fn is_up(&self) -> bool {
        matches!(self.state.as_deref(), None | Some("up"))
    }
}

impl HostView {
    /// Marks for an interface: whether the host PXE-boots from it, or it
    /// is the provisioning NIC, and whether it has the boot MAC.
    pub fn marks(&self, iface: &str) -> Vec<&'static str> {
        let mut marks = Vec::new();
        if self.provisioning_interface.as_deref() == Some(iface) {
            marks.push(if self.pxe_boot { "pxe" } else { "provisioning" });
        }
        if self.boot_interface.as_deref() == Some(iface) {
            marks.push("boot MAC");
        }
        marks
    }

    /// One interface in a few words, without its static addresses:
    /// `eno1[provisioning]`, `bond0[802.3ad eno2+eno3]`,
    /// `bond0.110[vlan 110 on bond0] dhcp4`.
    pub fn iface_label(&self, iface: &IfaceView) -> String {
        let mut parts = Vec::new();
        let detail = iface.detail();
        if !detail.is_empty() {
            parts.push(detail);
        }
        if !iface.is_up() {
            parts.push(iface.state.clone().unwrap_or_default());
        }
        parts.extend(self.marks(&iface.name).into_iter().map(String::from));
        let mut s = iface.name.clone();
        if !parts.is_empty() {
            s.push('[');
            s.push_str(&parts.join(", "));
            s.push(']');
        }
        for d in iface.dynamic() {
            s.push(' ');
            s.push_str(d);
        }
        s
    }

    /// Every interface with its addresses, on one line.
    pub fn interfaces_line(&self) -> String {
        self.interfaces
            .iter()
            .map(|i| {
                let mut s = self.iface_label(i);
                for a in i.addresses() {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Gateways on one line, `dhcp` when there is none but a family gets
    /// its addresses (and routes) dynamically.
    pub fn gateway_line(&self) -> String {
        if self.gateways.is_empty() {
            let dynamic = self.interfaces.iter().any(|i| !i.dynamic().is_empty());
            return if dynamic {
                "dhcp".into()
            } else {
                String::new()
            };
        }
        self.gateways
            .iter()
            .map(|g| g.address.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `scheme://user:password@host/...` with the password masked.
pub fn mask_userinfo(address: &str) -> String {
    let Some((scheme, rest)) = address.split_once("://") else {
        return address.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map(|(u, _)| u);
            match user {
                Some(user) => format!("{scheme}://{user}:***@{host}{path}"),
                None => address.to_string(),
            }
        }
        None => address.to_string(),
    }
}

/// Default routes (`0.0.0.0/0`, `::/0`) of a state.
fn gateways(state: &Node) -> Vec<Gateway> {
    let routes = state
        .get("routes")
        .and_then(|r| r.get("config"))
        .and_then(Node::as_seq)
        .unwrap_or_default();
    routes
        .iter()
        .filter(|r| r.get("state").and_then(Node::as_str) != Some("absent"))
        .filter(|r| {
            r.get("destination")
                .and_then(Node::scalar_text)
                .is_some_and(|d| d == "0.0.0.0/0" || d == "::/0")
        })
        .filter_map(|r| {
            Some(Gateway {
                address: r.get("next-hop-address").and_then(Node::scalar_text)?,
                interface: r.get("next-hop-interface").and_then(Node::scalar_text),
            })
        })
        .collect()
}

/// One host's view; `report` is its check report.
pub fn host_view(inv: &Inventory, host: &Host, report: &HostReport) -> HostView {
    let boot_interface = host
        .boot_mac
        .as_ref()
        .and_then(|m| host.nic_with_mac(&m.value))
        .map(|n| n.name.value.clone());
    let in_use = fleet::provisioning_mode(inv).is_some_and(|m| m != ProvisioningNetwork::Disabled);
    let provisioning_interface = in_use
        .then(|| fleet::pxe_interface(&inv.cluster, host))
        .flatten();
    let (interfaces, gateways) = match &host.network {
        Some(node) => {
            let net = Network::read(node);
            let ifaces = net
                .ifaces
                .iter()
                .map(|i| IfaceView::read(i, &net, host))
                .collect();
            (ifaces, gateways(node))
        }
        None => (Vec::new(), Vec::new()),
    };
    HostView {
        name: host.name.value.clone(),
        role: (host.role.value != Role::Unset).then(|| host.role.value.as_str()),
        input: host.kind.describe(),
        applies_to: host.applies_to.clone(),
        shape: report.shape.map(|s| s + 1),
        boot_mac: host.boot_mac.as_ref().map(|m| m.value.clone()),
        boot_interface,
        pxe_boot: provisioning_interface.is_some() && fleet::boots_over_pxe(inv, host),
        provisioning_interface,
        bmc: host.bmc.as_ref().map(|b| mask_userinfo(&b.address.value)),
        gateways,
        interfaces,
    }
}

/// Every host's view (whole hosts first, then changes to hosts, each in
/// input order).
pub struct Views {
    pub hosts: Vec<HostView>,
    pub changes: Vec<HostView>,
}

pub fn views(inv: &Inventory, report: &Report) -> Views {
    let all: Vec<(Scope, HostView)> = inv
        .hosts
        .par_iter()
        .zip(&report.hosts)
        .map(|(h, r)| (h.scope(), host_view(inv, h, r)))
        .collect();
    let (hosts, changes): (Vec<_>, Vec<_>) =
        all.into_iter().partition(|(s, _)| *s == Scope::FirstBoot);
    Views {
        hosts: hosts.into_iter().map(|(_, v)| v).collect(),
        changes: changes.into_iter().map(|(_, v)| v).collect(),
    }
}

impl Views {
    /// `{"hosts": [...], "changes": [...]}`.
    pub fn to_json(&self) -> J {
        serde_json::json!({"hosts": self.hosts, "changes": self.changes})
    }

    /// Aligned columns, one row per host; changes in a table of their own.
    pub fn table(&self) -> String {
        let dash = |s: String| if s.is_empty() { "-".to_string() } else { s };
        let mut out = String::new();
        if !self.hosts.is_empty() || self.changes.is_empty() {
            let rows: Vec<Vec<String>> = self
                .hosts
                .iter()
                .map(|h| {
                    vec![
                        h.name.clone(),
                        dash(h.role.unwrap_or("").to_string()),
                        dash(h.shape.map(|s| s.to_string()).unwrap_or_default()),
                        dash(h.boot_mac.clone().unwrap_or_default()),
                        dash(h.bmc.clone().unwrap_or_default()),
                        dash(h.gateway_line()),
                        dash(h.interfaces_line()),
                    ]
                })
                .collect();
            columns(
                &[
                    "HOST",
                    "ROLE",
                    "SHAPE",
                    "BOOT MAC",
                    "BMC",
                    "GATEWAY",
                    "INTERFACES",
                ],
                &rows,
                &mut out,
            );
        }
        if !self.changes.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            let rows: Vec<Vec<String>> = self
                .changes
                .iter()
                .map(|h| {
                    vec![
                        h.name.clone(),
                        h.input.to_string(),
                        h.applies_to.clone().unwrap_or_else(|| h.name.clone()),
                        dash(h.gateway_line()),
                        dash(h.interfaces_line()),
                    ]
                })
                .collect();
            columns(
                &["CHANGE", "FROM", "APPLIES TO", "GATEWAY", "INTERFACES"],
                &rows,
                &mut out,
            );
        }
        out
    }

    /// RFC 4180 CSV with a header; `kind` is `host` or `change`.
    pub fn csv(&self) -> String {
        let mut out = String::new();
        let header = [
            "kind",
            "name",
            "role",
            "shape",
            "boot_mac",
            "boot_interface",
            "provisioning_interface",
            "pxe_boot",
            "bmc",
            "gateway",
            "applies_to",
            "interfaces",
        ];
        csv_row(header.iter().map(|s| s.to_string()), &mut out);
        let rows = self
            .hosts
            .iter()
            .map(|h| ("host", h))
            .chain(self.changes.iter().map(|h| ("change", h)));
        for (kind, h) in rows {
            csv_row(
                [
                    kind.to_string(),
                    h.name.clone(),
                    h.role.unwrap_or("").to_string(),
                    h.shape.map(|s| s.to_string()).unwrap_or_default(),
                    h.boot_mac.clone().unwrap_or_default(),
                    h.boot_interface.clone().unwrap_or_default(),
                    h.provisioning_interface.clone().unwrap_or_default(),
                    h.pxe_boot.to_string(),
                    h.bmc.clone().unwrap_or_default(),
                    h.gateway_line(),
                    h.applies_to.clone().unwrap_or_default(),
                    h.interfaces_line(),
                ]
                .into_iter(),
                &mut out,
            );
        }
        out
    }
}

fn csv_row(fields: impl Iterator<Item = String>, out: &mut String) {
    for (i, f) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        if f.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(&f);
        }
    }
    out.push_str("\r\n");
}

/// Left-aligned columns two spaces apart; the last column is not padded.
/// Control characters in values are shown escaped, so a value cannot
/// move the cursor or break a row.
fn columns(header: &[&str], rows: &[Vec<String>], out: &mut String) {
    let clean = |s: &str| -> String {
        if s.chars().any(char::is_control) {
            s.chars()
                .flat_map(|c| {
                    if c.is_control() {
                        c.escape_default().collect::<Vec<_>>()
                    } else {
                        vec![c]
                    }
                })
                .collect()
        } else {
            s.to_string()
        }
    };
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>, out: &mut String| {
        let mut first = true;
        let n = header.len();
        for (i, c) in cells.enumerate() {
            if !first {
                out.push_str("  ");
            }
            first = false;
            out.push_str(c);
            if i + 1 < n {
                let pad = widths[i] - c.chars().count();
                nodenet_model::yaml::pad(out, pad);
            }
        }
        out.push('\n');
    };
    line(&mut header.iter().copied(), out);
    for r in &rows {
        line(&mut r.iter().map(String::as_str), out);
    }
}

/// The NMState `render` writes as `hosts/<host>/nmstate.yml`: the host's
/// state with `copy-mac-from` pinned to the MAC the inventory knows (as
/// written when there is none), also when nmstate rejected it.
pub fn host_state_yaml(host: &Host, report: &HostReport) -> Option<String> {
    let state = match &report.pinned_state {
        Some(pinned) => pinned.clone(),
        None => {
            let network = host.network.as_ref()?;
            nmstate_bridge::pin_written(host, network)
                .0
                .unwrap_or_else(|| network.to_json())
        }
    };
    Some(crate::artifacts::yaml(&state))
}

#[cfg(test)]
mod tests;
