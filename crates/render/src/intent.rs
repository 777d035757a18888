//! A host's NMState intent as the formats beyond NetworkManager read it
//! (network_data.json, netplan): the interfaces that come up, their ports,
//! parents and MACs, the routes and DNS servers.

use std::net::IpAddr;

use ipnet::IpNet;

use nodenet_model::{Code, Diagnostic, Host, Node};

pub fn text(n: Option<&Node>) -> Option<String> {
    n.and_then(Node::scalar_text)
}

/// An error for the output `format` of `host`, located at the intent.
pub fn unsupported(host: &Host, at: &Node, format: &str, what: String) -> Diagnostic {
    Diagnostic::error(Code::TargetUnsupported, format!("{format} cannot carry {what}"))
        .at(at.span)
        .host(&host.name.value)
        .help(format!(
            "{format} knows NICs, bonds, VLANs{} with static, DHCP or SLAAC addresses; keep this host to those, or leave it out of `render --with`",
            if format == "netplan" { " and Linux bridges" } else { "" }
        ))
}

/// A route of the intent: destination, next hop, interface.
pub struct Route<'a> {
    pub node: &'a Node,
    pub destination: IpNet,
    pub via: Option<IpAddr>,
    pub dev: Option<String>,
}

pub struct Intent<'a> {
    pub host: &'a Host,
    /// Interfaces neither absent nor down.
    pub ifaces: Vec<&'a Node>,
    pub routes: Vec<Route<'a>>,
    pub dns: Vec<String>,
}

impl<'a> Intent<'a> {
    pub fn read(host: &'a Host, state: &'a Node) -> Intent<'a> {
        let ifaces = state
            .get("interfaces")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter(|i| !matches!(text(i.get("state")).as_deref(), Some("absent" | "down")))
            .collect();
        let routes = state
            .get("routes")
            .and_then(|r| r.get("config"))
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter(|r| text(r.get("state")).as_deref() != Some("absent"))
            .filter_map(|r| {
                Some(Route {
                    node: r,
                    destination: text(r.get("destination"))?.parse().ok()?,
                    via: text(r.get("next-hop-address")).and_then(|t| t.parse().ok()),
                    dev: text(r.get("next-hop-interface")),
                })
            })
            .collect();
        let dns = state
            .get("dns-resolver")
            .and_then(|d| d.get("config"))
            .and_then(|c| c.get("server"))
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter_map(Node::scalar_text)
            .collect();
        Intent {
            host,
            ifaces,
            routes,
            dns,
        }
    }

    pub fn name(i: &Node) -> String {
        text(i.get("name")).unwrap_or_default()
    }

    pub fn kind(i: &Node) -> String {
        text(i.get("type")).unwrap_or_else(|| "ethernet".into())
    }

    pub fn mtu(i: &Node) -> Option<u64> {
        text(i.get("mtu")).and_then(|m| m.parse().ok())
    }

    /// A bond's (`link-aggregation.port`) or Linux bridge's ports.
    pub fn ports(i: &Node) -> Vec<String> {
        let list = i
            .get("link-aggregation")
            .and_then(|l| l.get("port").or(l.get("ports")))
            .or_else(|| i.get("bridge").and_then(|b| b.get("port")));
        list.and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.get("name").unwrap_or(p).scalar_text())
            .collect()
    }

    /// A VLAN's parent and id, when both are given.
    pub fn vlan(i: &Node) -> Option<(String, u64)> {
        let v = i.get("vlan");
        Some((
            text(v.and_then(|v| v.get("base-iface")))?,
            text(v.and_then(|v| v.get("id")))?.parse().ok()?,
        ))
    }

    /// NICs the intent names only as ports (they need entries of their
    /// own in these formats), each with the interface naming it.
    pub fn port_only(&self) -> Vec<(String, &'a Node)> {
        let mut defined: Vec<String> = self.ifaces.iter().map(|i| Self::name(i)).collect();
        let mut out = Vec::new();
        for i in &self.ifaces {
            for p in Self::ports(i) {
                if !defined.contains(&p) {
                    defined.push(p.clone());
                    out.push((p, *i));
                }
            }
        }
        out
    }

    fn find(&self, name: &str) -> Option<&'a Node> {
        self.ifaces.iter().copied().find(|i| Self::name(i) == name)
    }

    /// A NIC's MAC: the NIC table's, else the one the intent gives it.
    pub fn nic_mac(&self, name: &str) -> Option<String> {
        self.host
            .nics
            .iter()
            .find(|n| n.name.value == name)
            .and_then(|n| n.mac.as_ref())
            .map(|m| m.value.to_ascii_lowercase())
            .or_else(|| {
                self.find(name)
                    .and_then(|i| text(i.get("mac-address")))
                    .map(|m| m.to_ascii_lowercase())
            })
    }

    /// The MAC an interface shows: a bond its first port's, a VLAN its
    /// parent's, a NIC its own.
    pub fn mac_of(&self, name: &str) -> Option<String> {
        self.nic_mac(&self.root_nic(name)?)
    }

    /// The NIC an interface takes its MAC from: a bond's first port's, a
    /// VLAN's parent's, a NIC itself.
    pub fn root_nic(&self, name: &str) -> Option<String> {
        let mut at = name.to_string();
        for _ in 0..8 {
            let Some(i) = self.find(&at) else {
                return Some(at);
            };
            match Self::kind(i).as_str() {
                "bond" => at = Self::ports(i).first()?.clone(),
                "vlan" => at = Self::vlan(i)?.0,
                _ => return Some(at),
            }
        }
        None
    }

    /// The static addresses of one family of an interface.
    pub fn addresses(i: &Node, family: &str) -> Vec<IpNet> {
        let Some(ip) = i.get(family) else {
            return Vec::new();
        };
        ip.get("address")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter_map(|a| {
                let addr: IpAddr = text(a.get("ip"))?.parse().ok()?;
                IpNet::new(addr, text(a.get("prefix-length"))?.parse().ok()?).ok()
            })
            .collect()
    }

    /// Whether a family is enabled on an interface, and with DHCP / SLAAC.
    pub fn family(i: &Node, family: &str) -> (bool, bool, bool) {
        let Some(ip) = i.get(family) else {
            return (false, false, false);
        };
        let on = |k: &str| text(ip.get(k)).as_deref() == Some("true");
        (
            on("enabled"),
            on("dhcp"),
            family == "ipv6" && on("autoconf"),
        )
    }
}
