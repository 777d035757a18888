//! A host's network intent read from its NMState tree: interfaces, ports,
//! addresses and routes, each with the node it was written at. The host
//! checks and the fleet checks both read this one view.

use std::net::IpAddr;

use ipnet::IpNet;
use nodenet_model::{Node, Span};

/// Interface types nmstate 2.2 knows; anything else it silently turns
/// into ethernet.
pub const INTERFACE_TYPES: &[&str] = &[
    "bond",
    "linux-bridge",
    "dummy",
    "ethernet",
    "hsr",
    "ip-tunnel",
    "loopback",
    "mac-vlan",
    "mac-vtap",
    "ovs-bridge",
    "ovs-interface",
    "veth",
    "vlan",
    "vrf",
    "vxlan",
    "infiniband",
    "tun",
    "macsec",
    "ipsec",
    "xfrm",
    "ipvlan",
    "team",
    "unknown",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn key(self) -> &'static str {
        match self {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        }
    }
    /// `IPv4`, `IPv6`.
    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }
    /// The destination of this family's default route.
    pub fn default_destination(self) -> &'static str {
        match self {
            Family::V4 => "0.0.0.0/0",
            Family::V6 => "::/0",
        }
    }
    pub fn of(ip: &IpAddr) -> Family {
        if ip.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        }
    }
}

/// A static address on an interface.
#[derive(Clone, Debug)]
pub struct Address {
    pub iface: String,
    pub ip: IpAddr,
    pub prefix: Option<u8>,
    /// The `ip:` value node.
    pub span: Span,
}

impl Address {
    pub fn network(&self) -> Option<IpNet> {
        IpNet::new(self.ip, self.prefix?).ok().map(|n| n.trunc())
    }
}

/// One port of a controller, in the order written.
#[derive(Clone, Debug)]
pub struct Port<'a> {
    pub name: String,
    pub node: &'a Node,
}

/// An interface entry of the NMState document.
#[derive(Debug)]
pub struct Iface<'a> {
    pub node: &'a Node,
    pub name: String,
    pub name_node: Option<&'a Node>,
    pub kind: Option<String>,
    pub absent: bool,
    pub ports: Vec<Port<'a>>,
}

impl<'a> Iface<'a> {
    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.node.get(key)
    }

    pub fn name_span(&self) -> Span {
        self.name_node.map(|n| n.span).unwrap_or(self.node.span)
    }

    pub fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }

    pub fn bond_mode(&self) -> Option<String> {
        let mode = self.get("link-aggregation")?.get("mode")?.scalar_text()?;
        Some(
            match mode.as_str() {
                "0" => "balance-rr",
                "1" => "active-backup",
                "2" => "balance-xor",
                "3" => "broadcast",
                "4" | "lacp" => "802.3ad",
                "5" => "balance-tlb",
                "6" => "balance-alb",
                m => m,
            }
            .to_string(),
        )
    }

    /// `enabled` of ipv4/ipv6; an absent block means disabled for a new
    /// interface (nmstate's gen_conf default).
    pub fn family_enabled(&self, fam: Family) -> bool {
        self.get(fam.key())
            .and_then(|n| n.get("enabled"))
            .and_then(Node::as_bool)
            .unwrap_or(false)
    }

    /// True when the family gets addresses from DHCP/autoconf.
    pub fn family_dynamic(&self, fam: Family) -> bool {
        let Some(block) = self.get(fam.key()) else {
            return false;
        };
        let flag = |k: &str| block.get(k).and_then(Node::as_bool).unwrap_or(false);
        flag("dhcp") || flag("autoconf")
    }

    pub fn mtu(&self) -> Option<(i64, Span)> {
        let n = self.get("mtu")?;
        Some((n.as_i64()?, n.span))
    }
}

/// A state's default routes (IPv4 and IPv6, not `absent`), in order.
fn default_routes(state: &Node) -> impl Iterator<Item = &Node> {
    state
        .get("routes")
        .and_then(|r| r.get("config"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter(|route| {
            let dest = route.get("destination").and_then(Node::as_str);
            let absent = route.get("state").and_then(Node::as_str) == Some("absent");
            matches!(dest, Some("0.0.0.0/0" | "::/0")) && !absent
        })
}

/// The interfaces a state's default routes (IPv4 and IPv6, not `absent`)
/// leave through, in order, each once.
pub fn default_route_interfaces(state: &Node) -> Vec<String> {
    let mut via: Vec<String> = Vec::new();
    for route in default_routes(state) {
        if let Some(i) = route.get("next-hop-interface").and_then(Node::scalar_text) {
            if !via.contains(&i) {
                via.push(i);
            }
        }
    }
    via
}

/// Whether the state has a default route of `fam` (not `absent`).
pub fn has_default_route(state: &Node, fam: Family) -> bool {
    default_routes(state)
        .any(|r| r.get("destination").and_then(Node::as_str) == Some(fam.default_destination()))
}

/// The parsed view of a host's `network` NMState.
#[derive(Debug, Default)]
pub struct Network<'a> {
    pub ifaces: Vec<Iface<'a>>,
    pub addresses: Vec<Address>,
}

impl<'a> Network<'a> {
    pub fn read(root: &'a Node) -> Network<'a> {
        let mut net = Network::default();
        let Some(list) = root.get("interfaces").and_then(Node::as_seq) else {
            return net;
        };
        let mut controllers = Vec::new();
        for node in list {
            let [name_node, kind, state, v4, v6, controller] =
                node.get_all(["name", "type", "state", "ipv4", "ipv6", "controller"]);
            let name = name_node.and_then(Node::scalar_text).unwrap_or_default();
            let kind = kind.and_then(Node::scalar_text);
            let absent = state.and_then(Node::as_str) == Some("absent");
            let ports = ports_of(node, kind.as_deref());
            controllers.push(controller);
            for block in [v4, v6] {
                let addrs = block
                    .and_then(|b| b.get("address"))
                    .and_then(Node::as_seq)
                    .unwrap_or_default();
                for a in addrs {
                    let Some(ip_node) = a.get("ip") else { continue };
                    let Some(ip) = ip_node.scalar_text().and_then(|s| s.parse::<IpAddr>().ok())
                    else {
                        continue;
                    };
                    let prefix = a
                        .get("prefix-length")
                        .and_then(Node::as_i64)
                        .and_then(|p| u8::try_from(p).ok());
                    net.addresses.push(Address {
                        iface: name.clone(),
                        ip,
                        prefix,
                        span: ip_node.span,
                    });
                }
            }
            net.ifaces.push(Iface {
                node,
                name,
                name_node,
                kind,
                absent,
                ports,
            });
        }
        // A port may name its controller instead (`controller: bond0`).
        let claimed: Vec<(String, Port<'a>)> = net
            .ifaces
            .iter()
            .zip(controllers)
            .filter_map(|(i, c)| {
                let c = c?;
                let controller = c.scalar_text().filter(|s| !s.is_empty())?;
                Some((
                    controller,
                    Port {
                        name: i.name.clone(),
                        node: i.name_node.unwrap_or(i.node),
                    },
                ))
            })
            .collect();
        for (controller, port) in claimed {
            if let Some(c) = net.ifaces.iter_mut().find(|c| {
                c.name == controller && !c.absent && !c.ports.iter().any(|p| p.name == port.name)
            }) {
                c.ports.push(port);
            }
        }
        net
    }

    /// The interface a name refers to, preferring the non-OVS-internal one
    /// (br-ex is both an ovs-bridge and an ovs-interface).
    /// Whether some interface takes `fam`'s addresses from DHCP or
    /// autoconf (which may give a default route too).
    pub fn dynamic(&self, fam: Family) -> bool {
        self.ifaces
            .iter()
            .any(|i| !i.absent && i.family_enabled(fam) && i.family_dynamic(fam))
    }

    pub fn iface(&self, name: &str) -> Option<&Iface<'a>> {
        let mut found = self.ifaces.iter().filter(|i| i.name == name);
        let first = found.next()?;
        Some(found.find(|i| !i.is("ovs-bridge")).unwrap_or(first))
    }

    pub fn has(&self, name: &str) -> bool {
        self.ifaces.iter().any(|i| i.name == name && !i.absent)
    }

    /// The controller (bond/bridge) that has `port` as a port, and the
    /// port's position in its list.
    pub fn controller_of(&self, port: &str) -> Option<(&Iface<'a>, usize)> {
        self.ifaces.iter().filter(|i| !i.absent).find_map(|c| {
            c.ports
                .iter()
                .position(|p| p.name == port)
                .map(|pos| (c, pos))
        })
    }
}

/// Port lists by type: bond `link-aggregation.port` (old names `ports`,
/// `slaves`), bridge `bridge.port[].name`, and OVS bonds nested in OVS
/// bridge ports.
fn ports_of<'a>(node: &'a Node, kind: Option<&str>) -> Vec<Port<'a>> {
    let mut ports = Vec::new();
    let names = |list: Option<&'a Node>, out: &mut Vec<Port<'a>>| {
        for p in list.and_then(Node::as_seq).unwrap_or_default() {
            let name_node = p.get("name").unwrap_or(p);
            if let Some(name) = name_node.scalar_text() {
                out.push(Port {
                    name,
                    node: name_node,
                });
            }
        }
    };
    match kind {
        Some("bond") => {
            if let Some(la) = node.get("link-aggregation") {
                for key in ["port", "ports", "slaves"] {
                    names(la.get(key), &mut ports);
                }
                // `ports-config` (per-port priority, queue id) names ports too.
                let mut configured = Vec::new();
                names(la.get("ports-config"), &mut configured);
                for p in configured {
                    if !ports.iter().any(|q| q.name == p.name) {
                        ports.push(p);
                    }
                }
            }
        }
        Some("linux-bridge") | Some("ovs-bridge") => {
            if let Some(br) = node.get("bridge") {
                for key in ["port", "ports", "slaves"] {
                    for p in br.get(key).and_then(Node::as_seq).unwrap_or_default() {
                        match p.get("link-aggregation") {
                            // An OVS bond: its members are the real ports.
                            Some(la) => {
                                for key in ["port", "ports", "slaves"] {
                                    names(la.get(key), &mut ports);
                                }
                            }
                            None => {
                                let name_node = p.get("name").unwrap_or(p);
                                if let Some(name) = name_node.scalar_text() {
                                    ports.push(Port {
                                        name,
                                        node: name_node,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        _ => {}
    }
    ports
}
