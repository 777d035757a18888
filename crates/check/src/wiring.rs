//! What the inventory says about each NIC's switch port: the `nics:` list
//! form's `switch`, `port`, `vlans`, `native` and `mtu`, and what the
//! network intent implies — the VLANs a host puts on an interface must be
//! on every NIC beneath it (a VLAN on a bond: on each port), the MTU it
//! runs over a NIC must pass the switch port, and an 802.3ad bond needs a
//! link aggregation on the switch side. Wire verification
//! (`crates/wires`) compares these with what LLDP and probe frames show;
//! the checks here are the contradictions an inventory has by itself.

use std::collections::HashMap;

use nodenet_model::{Code, Diagnostic, Host, Inventory, Located, Node, Scope, Span};

use crate::network::{Family, Network};

/// Why a NIC is expected to carry something.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// Written on the NIC (`vlans:`, `mtu:`).
    Listed,
    /// Implied by an interface of the network intent (its name).
    Intent(String),
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Listed => f.write_str("listed on the NIC"),
            Why::Intent(iface) => write!(f, "from `{iface}` in the network intent"),
        }
    }
}

/// A VLAN a NIC's switch port must carry tagged.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectedVlan {
    pub id: u16,
    /// The list item, or the VLAN interface's `id:`.
    pub span: Span,
    pub why: Why,
}

/// The MTU a NIC's switch port must carry.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectedMtu {
    pub mtu: u32,
    pub span: Span,
    pub why: Why,
}

/// The bond a NIC is a port of.
#[derive(Clone, Debug, PartialEq)]
pub struct BondOf {
    pub name: String,
    /// Canonical mode name (`802.3ad`, `active-backup`, ...).
    pub mode: Option<String>,
    /// The bond's `mode:` (else its name).
    pub span: Span,
    /// Its ports, as written.
    pub ports: Vec<String>,
}

/// Everything expected of one NIC's switch port.
#[derive(Clone, Debug)]
pub struct Expected {
    pub nic: String,
    pub mac: Option<String>,
    /// The NIC's entry (its `name:`), else the intent's interface.
    pub span: Span,
    pub switch: Option<Located<String>>,
    pub port: Option<Located<String>>,
    /// Listed VLANs first, then those of the intent not listed.
    pub vlans: Vec<ExpectedVlan>,
    pub native: Option<Located<u16>>,
    /// The largest MTU the host runs over the NIC (listed, else intent).
    pub mtu: Option<ExpectedMtu>,
    pub bond: Option<BondOf>,
    /// An interface with addresses runs over the NIC untagged (the NIC,
    /// its bond or bridge): its switch port's native VLAN carries traffic.
    pub carries_untagged: bool,
}

impl Expected {
    /// Whether anything at all is expected of the switch port.
    pub fn is_empty(&self) -> bool {
        self.switch.is_none()
            && self.port.is_none()
            && self.vlans.is_empty()
            && self.native.is_none()
            && self.mtu.is_none()
            && self.bond.is_none()
    }
}

/// The expected switch port of every NIC of `host`: its listed NICs in
/// order, then the NICs only its network intent names (ethernet
/// interfaces, ports and VLAN bases that are no virtual interface). A
/// partial state (an NNCP, a MachineConfig file) describes no NICs:
/// nothing.
pub fn expected(host: &Host) -> Vec<Expected> {
    let net = host.network.as_ref().map(Network::read).unwrap_or_default();
    expected_from(host, &net)
}

/// [`expected`] with the host's state already read.
fn expected_from(host: &Host, net: &Network) -> Vec<Expected> {
    if host.scope() == Scope::Partial {
        return Vec::new();
    }
    let mut out: Vec<Expected> = host
        .nics
        .iter()
        .map(|n| Expected {
            nic: n.name.value.clone(),
            mac: n.mac.as_ref().map(|m| m.value.clone()),
            span: n.name.span,
            switch: n.wiring.switch.clone(),
            port: n.wiring.port.clone(),
            vlans: n
                .wiring
                .vlans
                .iter()
                .map(|v| ExpectedVlan {
                    id: v.value,
                    span: v.span,
                    why: Why::Listed,
                })
                .collect(),
            native: n.wiring.native.clone(),
            mtu: n.wiring.mtu.as_ref().map(|m| ExpectedMtu {
                mtu: m.value,
                span: m.span,
                why: Why::Listed,
            }),
            bond: None,
            carries_untagged: false,
        })
        .collect();
    // NICs only the intent names.
    for name in nic_names(net) {
        if !out.iter().any(|e| e.nic == name) {
            let span = net.iface(&name).map(|i| i.name_span()).unwrap_or(host.span);
            out.push(Expected {
                nic: name,
                mac: None,
                span,
                switch: None,
                port: None,
                vlans: Vec::new(),
                native: None,
                mtu: None,
                bond: None,
                carries_untagged: false,
            });
        }
    }
    for e in &mut out {
        derive(net, e);
    }
    out
}

/// Names in the intent that stand for NICs: ethernet interfaces, and
/// ports and VLAN bases that are not defined as some other interface.
fn nic_names(net: &Network) -> Vec<String> {
    let virtual_ = |n: &str| {
        net.ifaces
            .iter()
            .any(|i| i.name == n && !i.absent && !(i.kind.is_none() || i.is("ethernet")))
    };
    let mut names: Vec<String> = Vec::new();
    let mut add = |n: String| {
        if !n.is_empty() && !virtual_(&n) && !names.contains(&n) {
            names.push(n);
        }
    };
    for i in net.ifaces.iter().filter(|i| !i.absent) {
        if i.is("ethernet") {
            add(i.name.clone());
        }
        if i.is("bond") || i.is("linux-bridge") {
            for p in &i.ports {
                add(p.name.clone());
            }
        }
        if i.is("vlan") {
            if let Some(base) = vlan_base(i.node) {
                add(base);
            }
        }
    }
    names
}

fn vlan_base(node: &Node) -> Option<String> {
    node.get("vlan")?.get("base-iface")?.scalar_text()
}

/// Whether interface `upper` runs over NIC `nic`: it is the NIC, or a
/// bond, bridge or VLAN whose ports or base run over it.
fn runs_over(net: &Network, upper: &str, nic: &str, depth: u32) -> bool {
    if upper == nic {
        return true;
    }
    if depth > 8 {
        return false;
    }
    let Some(i) = net.ifaces.iter().find(|i| i.name == upper && !i.absent) else {
        return false;
    };
    if i.is("vlan") {
        return vlan_base(i.node).is_some_and(|b| runs_over(net, &b, nic, depth + 1));
    }
    if i.is("bond") || i.is("linux-bridge") {
        return i
            .ports
            .iter()
            .any(|p| runs_over(net, &p.name, nic, depth + 1));
    }
    false
}

/// Adds what the intent implies to one NIC's expectation.
fn derive(net: &Network, e: &mut Expected) {
    for i in net.ifaces.iter().filter(|i| !i.absent) {
        if !runs_over(net, &i.name, &e.nic, 0) {
            continue;
        }
        if !i.is("vlan") && (i.family_enabled(Family::V4) || i.family_enabled(Family::V6)) {
            e.carries_untagged = true;
        }
        if i.is("vlan") {
            let id = i.get("vlan").and_then(|v| v.get("id"));
            if let Some((id, span)) = id.and_then(|n| Some((n.as_i64()?, n.span))) {
                if let Ok(id) = u16::try_from(id) {
                    if (1..=4094).contains(&id) && !e.vlans.iter().any(|v| v.id == id) {
                        e.vlans.push(ExpectedVlan {
                            id,
                            span,
                            why: Why::Intent(i.name.clone()),
                        });
                    }
                }
            }
        }
        if let Some((mtu, span)) = i.mtu() {
            let mtu = u32::try_from(mtu).unwrap_or(0);
            // The listed MTU is what the inventory says; the intent's is
            // kept when larger (the contradiction is reported).
            if e.mtu.as_ref().is_none_or(|m| mtu > m.mtu) {
                e.mtu = Some(ExpectedMtu {
                    mtu,
                    span,
                    why: Why::Intent(i.name.clone()),
                });
            }
        }
        if i.is("bond") && i.ports.iter().any(|p| p.name == e.nic) && e.bond.is_none() {
            let span = i
                .get("link-aggregation")
                .and_then(|la| la.get("mode"))
                .map(|m| m.span)
                .unwrap_or(i.name_span());
            e.bond = Some(BondOf {
                name: i.name.clone(),
                mode: i.bond_mode(),
                span,
                ports: i.ports.iter().map(|p| p.name.clone()).collect(),
            });
        }
    }
}

/// The contradictions of one host's expected cabling: a native VLAN also
/// carried tagged, a listed MTU below what the intent runs over the NIC.
/// `net` is the host's state as the host checks read it.
pub fn check_host(host: &Host, net: Option<&Network>, out: &mut Vec<Diagnostic>) {
    let listed_mtu: HashMap<&str, &Located<u32>> = host
        .nics
        .iter()
        .filter_map(|n| Some((n.name.value.as_str(), n.wiring.mtu.as_ref()?)))
        .collect();
    let read = Network::default();
    for e in expected_from(host, net.unwrap_or(&read)) {
        if let Some(native) = &e.native {
            if let Some(v) = e.vlans.iter().find(|v| v.id == native.value) {
                let d = Diagnostic::error(
                    Code::WiringNativeTagged,
                    format!(
                        "{}: native VLAN {} is also carried tagged ({})",
                        e.nic, native.value, v.why
                    ),
                )
                .at(native.span)
                .host(&host.name.value)
                .related(v.span, "tagged here")
                .help("a switch port sends a VLAN either untagged (native) or tagged");
                out.push(d);
            }
        }
        if let (Some(listed), Some(mtu)) = (listed_mtu.get(e.nic.as_str()), &e.mtu) {
            if mtu.mtu > listed.value {
                out.push(
                    Diagnostic::error(
                        Code::WiringMtuBelowIntent,
                        format!(
                            "{}: `mtu: {}` is smaller than the MTU {} the host runs over it ({})",
                            e.nic, listed.value, mtu.mtu, mtu.why
                        ),
                    )
                    .at(listed.span)
                    .host(&host.name.value)
                    .related(mtu.span, "this MTU"),
                );
            }
        }
    }
}

/// Two NICs (of one host or two) expected on the same switch port.
pub fn check_fleet(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let mut seen: HashMap<(String, String), (&str, &str, Span)> = HashMap::new();
    for host in inv.hosts.iter().filter(|h| h.scope() == Scope::FirstBoot) {
        for nic in &host.nics {
            let (Some(switch), Some(port)) = (&nic.wiring.switch, &nic.wiring.port) else {
                continue;
            };
            let key = (switch.value.to_ascii_lowercase(), port.value.clone());
            match seen.get(&key) {
                None => {
                    seen.insert(key, (&host.name.value, &nic.name.value, port.span));
                }
                Some((h, n, span)) => out.push(
                    Diagnostic::error(
                        Code::WiringPortDuplicate,
                        format!(
                            "{} is expected on {} port {}, as {h} {n} is",
                            nic.name.value, switch.value, port.value
                        ),
                    )
                    .at(port.span)
                    .host(&host.name.value)
                    .related(*span, format!("{h} {n}")),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests;
