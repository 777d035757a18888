//! `nodenet lab verify`: does the network the inventory describes work,
//! in the lab built from it? Each node is asked over its serial shell
//! (nodenet runs there as on a real node); the switch is never asked
//! what it was told, only the nodes what they see. One [`Check`] per
//! fact, each with its cause when it fails.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use ipnet::IpNet;
use nodenet_check::network::{Family, Network};
use nodenet_model::{Diagnostic, Inventory};
use nodenet_wires::compare::{compare, Observed};
use nodenet_wires::netverify::{self, probe::RunResult, PlanOptions};
use nodenet_wires::observation::Observation;
use serde::Serialize;

use crate::state::LabState;
use crate::topology::SwitchPort;
use crate::{lacp_aggregated, on_each, LabError, Vm};

mod node;
mod pxe;
mod vlans;

use node::*;
use pxe::*;
use vlans::*;

#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub node: String,
    /// `state`, `bond`, `dhcp`, `lldp`, `ping`, `mtu`, `vlans`.
    pub check: String,
    /// What was checked (`bond0`, `eno1`, `192.168.110.1 (gateway)`).
    pub subject: String,
    pub ok: bool,
    /// What was seen; for a failure, why.
    pub detail: String,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub inventory: String,
    pub switch: String,
    pub accel: String,
    pub seconds: f64,
    pub passed: usize,
    pub failed: usize,
    pub checks: Vec<Check>,
    /// What the lab could not be faithful to (from `lab up`).
    pub notes: Vec<String>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.failed == 0
    }
}

fn check(
    node: &str,
    kind: &str,
    subject: impl Into<String>,
    ok: bool,
    detail: impl Into<String>,
) -> Check {
    Check {
        node: node.to_string(),
        check: kind.to_string(),
        subject: subject.into(),
        ok,
        detail: detail.into(),
    }
}

/// A node's live addresses: interface -> global addresses with prefixes.
pub type Addresses = BTreeMap<String, Vec<IpNet>>;

pub fn parse_addresses(ip_j_addr: &str) -> Addresses {
    let mut out = Addresses::new();
    let Ok(serde_json::Value::Array(links)) = serde_json::from_str(ip_j_addr) else {
        return out;
    };
    for l in links {
        let Some(name) = l["ifname"].as_str() else {
            continue;
        };
        for a in l["addr_info"].as_array().into_iter().flatten() {
            if a["scope"] != "global" {
                continue;
            }
            let (Some(ip), Some(p)) = (a["local"].as_str(), a["prefixlen"].as_u64()) else {
                continue;
            };
            if let Ok(net) = format!("{ip}/{p}").parse::<IpNet>() {
                out.entry(name.to_string()).or_default().push(net);
            }
        }
    }
    out
}

/// What verify needs of one node, gathered in phase 1.
struct Seen {
    name: String,
    addresses: Addresses,
    observation: Option<Observation>,
}

/// Runs every check on the lab in `dir`. `inv` is the inventory the lab
/// was built from, as loaded now.
pub fn verify(state: &LabState, dir: &Path, inv: &Inventory) -> Result<Report, LabError> {
    let started = Instant::now();
    let mut sub = inv.clone();
    sub.hosts = state.hosts_in(inv).into_iter().cloned().collect();
    let mut vms: Vec<Vm> = Vec::new();
    for n in &state.topology.nodes {
        vms.push(Vm::attach(&n.name, dir)?);
    }
    let routed = routed_families(&sub);
    // Phase 1, each node on its own: the state, bonds, DHCP, default
    // routes, LLDP.
    let phase1: Vec<(Vec<Check>, Seen)> = on_each(&mut vms, |vm| {
        let host = sub.hosts.iter().find(|h| h.name.value == vm.name);
        let pxe = host.and_then(|h| pxe_of(&sub, h, state));
        node_checks(vm, host, pxe, sub.cluster.provisioning.allow_lacp, &routed)
    });
    let mut checks: Vec<Check> = state
        .topology
        .nodes
        .iter()
        .filter_map(|n| provisioned(dir, &n.name))
        .collect();
    let mut seen: Vec<Seen> = Vec::new();
    for (c, s) in phase1 {
        checks.extend(c);
        seen.push(s);
    }
    // LLDP: what each NIC hears against the inventory's expectations.
    let observed: Vec<Observed> = seen
        .iter()
        .filter_map(|s| {
            s.observation.clone().map(|obs| Observed {
                obs,
                span: nodenet_model::Span::default(),
            })
        })
        .collect();
    let findings = compare(&sub, &observed);
    for s in &seen {
        let Some(obs) = &s.observation else {
            checks.push(check(
                &s.name,
                "lldp",
                "",
                false,
                "nodenet lldp gave no observation",
            ));
            continue;
        };
        let node = state.topology.nodes.iter().find(|n| n.name == s.name);
        for nic in node.map(|n| n.nics.as_slice()).unwrap_or_default() {
            let heard = obs.nics.iter().find(|o| o.name == nic.name);
            let about: Vec<&Diagnostic> = findings
                .iter()
                .filter(|d| {
                    d.host.as_deref() == Some(s.name.as_str()) && d.message.contains(&nic.name)
                })
                .collect();
            let neighbour = heard
                .and_then(|h| h.neighbor.as_ref())
                .map(|n| format!("{} port {}", n.switch_name(), n.port_id.value))
                .unwrap_or_else(|| "no LLDP neighbour".into());
            let ok =
                heard.is_some_and(|h| h.neighbor.is_some()) && about.iter().all(|d| !d.is_error());
            let detail = if about.is_empty() {
                neighbour
            } else {
                format!(
                    "{neighbour}: {}",
                    about
                        .iter()
                        .map(|d| d.message.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            };
            checks.push(check(&s.name, "lldp", &nic.name, ok, detail));
        }
    }
    // Phase 2: reachability from every node to its gateways and peers.
    let peers: Vec<(String, String, IpNet)> = seen
        .iter()
        .flat_map(|s| {
            s.addresses
                .iter()
                .flat_map(move |(i, a)| a.iter().map(move |n| (s.name.clone(), i.clone(), *n)))
        })
        .collect();
    let jumbo: BTreeMap<(String, String), u32> = sub
        .hosts
        .iter()
        .flat_map(|h| {
            let net = h.network.as_ref().map(Network::read).unwrap_or_default();
            net.ifaces
                .iter()
                .filter_map(|i| i.mtu().map(|(m, _)| (i.name.clone(), m)))
                .filter(|(_, m)| *m > 1500)
                .map(|(i, m)| ((h.name.value.clone(), i), m as u32))
                .collect::<Vec<_>>()
        })
        .collect();
    let segments = &state.topology.segments;
    let phase2 = on_each(&mut vms, |vm| reachability(vm, &peers, segments, &jumbo));
    checks.extend(phase2.into_iter().flatten());
    // Phase 3: netverify, every VLAN of the lab between every pair of nodes.
    checks.extend(vlans(&mut vms, &sub, &state.topology.ports));
    let mut notes = state.topology.notes.clone();
    if state.topology.nodes.len() < 2 {
        notes.push("one node: no VLAN is probed between nodes (netverify needs two links)".into());
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    Ok(Report {
        inventory: state.inventory.display().to_string(),
        switch: state.topology.switch.clone(),
        accel: state.accel.clone(),
        seconds: started.elapsed().as_secs_f64(),
        passed: checks.len() - failed,
        failed,
        checks,
        notes,
    })
}

/// The families every node needs a default route of: those of the
/// cluster's machine networks, less the ones `noDefaultRoute` waives (the
/// check's `default-route-missing`, seen live).
fn routed_families(inv: &Inventory) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for m in &inv.cluster.machine_networks {
        let fam = Family::of(&m.value.addr());
        let waived = inv
            .cluster
            .no_default_route
            .iter()
            .any(|w| w.value == fam.key());
        if !waived && !out.contains(&fam) {
            out.push(fam);
        }
    }
    out
}

/// The default routes of `ip -j route show default` as `via X dev Y`.
pub fn parse_default_routes(ip_j_route: &str) -> Vec<String> {
    let Ok(serde_json::Value::Array(routes)) = serde_json::from_str(ip_j_route) else {
        return Vec::new();
    };
    routes
        .iter()
        .filter(|r| r["dst"] == "default")
        .map(|r| {
            let dev = r["dev"].as_str().unwrap_or("?");
            match r["gateway"].as_str() {
                Some(gw) => format!("via {gw} dev {dev}"),
                None => format!("dev {dev}"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_routes_are_read_from_ip_json_with_their_gateway() {
        // `ip -j -6 route show default` (iproute2 6.1) on a dual-stack node.
        let j = r#"[{"dst":"default","gateway":"fd2e:6f44:5dd8:c956::1","dev":"enp2s0","protocol":"static","metric":100,"flags":[],"pref":"medium"}]"#;
        assert_eq!(
            parse_default_routes(j),
            vec!["via fd2e:6f44:5dd8:c956::1 dev enp2s0".to_string()]
        );
        assert!(parse_default_routes("[]").is_empty());
        assert!(parse_default_routes("").is_empty());
    }

    #[test]
    fn every_machine_network_family_needs_a_default_route_unless_waived() {
        let text = "nodenet: v1\ncluster:\n  name: c\n  baseDomain: x.org\n  machineNetworks: [192.168.111.0/24, fd00::/64, 10.0.0.0/24]\nhosts: []\n";
        let inv = |t: &str| nodenet_model::load_texts(vec![("c.yaml".into(), t.into())]).inventory;
        assert_eq!(routed_families(&inv(text)), vec![Family::V4, Family::V6]);
        let waived = text.replace("hosts:", "  noDefaultRoute: [ipv6]\nhosts:");
        assert_eq!(routed_families(&inv(&waived)), vec![Family::V4]);
    }

    #[test]
    fn live_addresses_are_the_global_ones_per_interface() {
        let j = r#"[{"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8,"scope":"host"}]},
            {"ifname":"bond0.110","addr_info":[{"family":"inet","local":"192.168.110.130","prefixlen":24,"scope":"global"},
             {"family":"inet6","local":"fe80::1","prefixlen":64,"scope":"link"}]}]"#;
        let a = parse_addresses(j);
        assert_eq!(a.len(), 1);
        assert_eq!(
            a["bond0.110"],
            vec!["192.168.110.130/24".parse::<IpNet>().unwrap()]
        );
    }
}
