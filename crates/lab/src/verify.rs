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

/// A node's PXE NIC, as the check finds it (`fleet::pxe_interface`), when
/// the cluster PXE-boots (its provisioning network is not Disabled).
#[derive(Clone, Debug)]
struct Pxe {
    nic: String,
    /// The 802.3ad bond it is a port of, if any, and its port count.
    lacp_bond: Option<(String, usize)>,
    /// The untagged VLAN of its switch port, and whether the lab serves
    /// DHCP there.
    native: u16,
    served: bool,
}

fn pxe_of(inv: &Inventory, host: &nodenet_model::Host, state: &LabState) -> Option<Pxe> {
    use nodenet_check::fleet::{provisioning_mode, pxe_interface};
    if provisioning_mode(inv)? == nodenet_model::ProvisioningNetwork::Disabled {
        return None;
    }
    let nic = pxe_interface(inv, host)?;
    let port = state
        .topology
        .ports
        .iter()
        .find(|p| p.host == host.name.value && p.nic == nic)?;
    let net = host.network.as_ref().map(Network::read).unwrap_or_default();
    let lacp_bond = net
        .controller_of(&nic)
        .filter(|(c, _)| c.bond_mode().as_deref() == Some("802.3ad"))
        .map(|(c, _)| (c.name.clone(), c.ports.len()));
    let served = state
        .topology
        .segments
        .iter()
        .any(|s| s.vlan == port.native && s.dhcp.is_some() && s.network.addr().is_ipv4());
    Some(Pxe {
        nic,
        lacp_bond,
        native: port.native,
        served,
    })
}

/// A PXE ROM's DHCP request from the PXE NIC alone, as at power-on: the
/// NIC taken from NetworkManager (and out of its bond), a while for the
/// switch to stop seeing LACP from it, then busybox udhcpc; afterwards
/// NetworkManager takes it back with the profile it had (into its bond;
/// `nmcli dev connect` may pick or make a DHCP profile instead, leaving
/// the node other than its intent) and the bond must aggregate again.
fn pxe_check(vm: &mut Vm, pxe: &Pxe, allow_lacp: bool) -> Vec<Check> {
    let name = vm.name.clone();
    let nic = &pxe.nic;
    if !pxe.served {
        return vec![check(
            &name,
            "pxe",
            nic,
            false,
            format!(
                "no DHCP on the untagged VLAN {} of {nic}'s switch port: the lab has no network there for PXE (give the cluster a provisioning network, or the NIC a native VLAN that has one)",
                pxe.native
            ),
        )];
    }
    if pxe.lacp_bond.is_some() && allow_lacp {
        return vec![check(
            &name,
            "pxe",
            nic,
            true,
            "not tried: the inventory says the switch ports do LACP fallback (provisioning.allowLacp), which the lab's switch (Linux 802.3ad) cannot",
        )];
    }
    let (_, out) = vm.shell(
        &format!(
            "c=$(nmcli -g GENERAL.CONNECTION dev show {nic} 2>/dev/null); nmcli dev set {nic} managed no; ip link set {nic} nomaster 2>/dev/null; ip link set {nic} up; sleep 5; busybox udhcpc -i {nic} -n -q -f -t 4 -T 2 -s /bin/true 2>&1 | grep -i 'lease of' ; ip link set {nic} down; nmcli dev set {nic} managed yes; sleep 1; if [ -n \"$c\" ]; then nmcli con up \"$c\" ifname {nic} >/dev/null 2>&1; else nmcli dev connect {nic} >/dev/null 2>&1; fi"
        ),
        Duration::from_secs(120),
    );
    let lease = out
        .lines()
        .find(|l| l.to_ascii_lowercase().contains("lease of"))
        .map(|l| l.trim().to_string());
    let mut out_checks = vec![match (&lease, &pxe.lacp_bond) {
        (Some(l), _) => check(&name, "pxe", nic, true, format!("DHCP through the lab switch: {l}")),
        (None, Some((bond, _))) => check(
            &name,
            "pxe",
            nic,
            false,
            format!(
                "no DHCP lease: {nic} is a port of 802.3ad bond {bond} and its switch port has no LACP fallback, so a PXE ROM (which speaks no LACP) is not heard until LACP is up (check: pxe-nic-in-lacp-bond)"
            ),
        ),
        (None, None) => check(&name, "pxe", nic, false, format!("no DHCP lease on {nic} through the lab switch")),
    }];
    if let Some((bond, ports)) = &pxe.lacp_bond {
        let back = bond_back(vm, bond, *ports);
        if let Err(e) = back {
            out_checks.push(check(
                &name,
                "pxe",
                format!("{nic} back in {bond}"),
                false,
                format!("after the PXE try, {bond} did not aggregate again: {e}"),
            ));
        }
    }
    out_checks
}

/// Waits (up to 90 s) until `bond` has all its `ports` collecting and
/// distributing in its active aggregator.
fn bond_back(vm: &mut Vm, bond: &str, ports: usize) -> Result<usize, String> {
    let mut result = Err(String::new());
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline {
        let (_, text) = vm.shell(
            &format!("cat /proc/net/bonding/{bond}"),
            Duration::from_secs(30),
        );
        result = lacp_aggregated(&text).and_then(|n| {
            if n == ports {
                Ok(n)
            } else {
                Err(format!("{n} of its {ports} ports in the bond"))
            }
        });
        if result.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    result
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

fn node_checks(
    vm: &mut Vm,
    host: Option<&nodenet_model::Host>,
    pxe: Option<Pxe>,
    allow_lacp: bool,
    routed: &[Family],
) -> (Vec<Check>, Seen) {
    let name = vm.name.clone();
    let mut out = Vec::new();
    // The state: `nodenet diff --live` against the intent, until it is
    // empty (DHCP and LACP take a while) or two minutes pass.
    vm.shell("nm-online -s -q -t 120", Duration::from_secs(150));
    // The intent as the inventory says now (after a rehearsal, the new one).
    let intent_json = host
        .and_then(|h| h.network.as_ref())
        .map(|n| serde_json::to_string_pretty(&n.to_json()).expect("state serialises"))
        .unwrap_or_else(|| "{}".into());
    vm.shell(
        // (The terminator alone on its line: `run` appends to the last one.)
        &format!("cat > /tmp/intent.yml <<'NODENET_EOF'\n{intent_json}\nNODENET_EOF\ntrue"),
        Duration::from_secs(30),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last;
    loop {
        let (st, text) = vm.shell(
            "nodenet diff /tmp/intent.yml --live 2>&1",
            Duration::from_secs(120),
        );
        last = (st, text);
        if last.0 == 0 || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_secs(3));
    }
    out.push(check(
        &name,
        "state",
        "diff --live",
        last.0 == 0,
        if last.0 == 0 {
            "the live state is the intent".to_string()
        } else {
            last.1.trim().to_string()
        },
    ));
    let intent = host.and_then(|h| h.network.as_ref());
    let net = intent.map(Network::read).unwrap_or_default();
    for bond in net
        .ifaces
        .iter()
        .filter(|i| !i.absent && i.bond_mode().as_deref() == Some("802.3ad"))
    {
        let result = bond_back(vm, &bond.name, bond.ports.len());
        out.push(match result {
            Ok(n) => check(
                &name,
                "bond",
                &bond.name,
                true,
                format!("LACP aggregated on both ends, {n} port(s)"),
            ),
            Err(e) => check(
                &name,
                "bond",
                &bond.name,
                false,
                format!("LACP not aggregated: {e}"),
            ),
        });
    }
    if let Some(pxe) = &pxe {
        out.extend(pxe_check(vm, pxe, allow_lacp));
    }
    let (_, text) = vm.shell("ip -j addr show", Duration::from_secs(30));
    let addresses = parse_addresses(&text);
    for i in net.ifaces.iter().filter(|i| !i.absent) {
        for fam in [Family::V4, Family::V6] {
            if i.family_enabled(fam) && i.family_dynamic(fam) {
                let got: Vec<String> = addresses
                    .get(&i.name)
                    .into_iter()
                    .flatten()
                    .filter(|a| Family::of(&a.addr()) == fam)
                    .map(|a| a.to_string())
                    .collect();
                out.push(check(
                    &name,
                    "dhcp",
                    format!("{} {}", i.name, fam.key()),
                    !got.is_empty(),
                    if got.is_empty() {
                        "no lease: no address from DHCP".to_string()
                    } else {
                        format!("lease {}", got.join(", "))
                    },
                ));
            }
        }
    }
    for fam in routed {
        let flag = match fam {
            Family::V4 => "-4",
            Family::V6 => "-6",
        };
        let (_, text) = vm.shell(
            &format!("ip -j {flag} route show default"),
            Duration::from_secs(30),
        );
        let routes = parse_default_routes(&text);
        out.push(check(
            &name,
            "route",
            format!("default {}", fam.key()),
            !routes.is_empty(),
            if routes.is_empty() {
                format!(
                    "no {} default route, though the cluster has a machine network of that family",
                    fam.name()
                )
            } else {
                routes.join(", ")
            },
        ));
    }
    let (st, text) = vm.shell(
        "nodenet lldp --timeout 8 --format json -o /tmp/lldp.json >/dev/null 2>&1; cat /tmp/lldp.json",
        Duration::from_secs(60),
    );
    let observation = (st == 0)
        .then(|| Observation::from_json(&text).ok())
        .flatten();
    (
        out,
        Seen {
            name,
            addresses,
            observation,
        },
    )
}

fn ping(vm: &mut Vm, to: IpAddr, size: Option<u32>) -> (bool, String) {
    let df = match size {
        Some(s) => format!("-M do -s {s} "),
        None => String::new(),
    };
    let (st, text) = vm.shell(
        &format!("ping -n -c 3 -i 0.3 -W 2 {df}{to} 2>&1 | tail -2"),
        Duration::from_secs(30),
    );
    (
        st == 0,
        text.lines().next().unwrap_or_default().trim().to_string(),
    )
}

fn reachability(
    vm: &mut Vm,
    peers: &[(String, String, IpNet)],
    segments: &[crate::topology::Segment],
    jumbo: &BTreeMap<(String, String), u32>,
) -> Vec<Check> {
    let name = vm.name.clone();
    let mut out = Vec::new();
    let mine: Vec<(String, IpNet)> = peers
        .iter()
        .filter(|(n, _, _)| *n == name)
        .map(|(_, i, a)| (i.clone(), *a))
        .collect();
    for (iface, addr) in &mine {
        let net = addr.trunc();
        if let Some(seg) = segments.iter().find(|s| s.network == net) {
            let (ok, detail) = ping(vm, seg.gateway, None);
            out.push(check(
                &name,
                "ping",
                format!("{} (gateway, from {iface})", seg.gateway),
                ok,
                detail,
            ));
        }
        for (peer, peer_iface, peer_addr) in peers {
            if *peer == name || peer_addr.trunc() != net {
                continue;
            }
            let (ok, detail) = ping(vm, peer_addr.addr(), None);
            out.push(check(
                &name,
                "ping",
                format!("{} ({peer} {peer_iface})", peer_addr.addr()),
                ok,
                detail,
            ));
            let both = (
                jumbo.get(&(name.clone(), iface.clone())),
                jumbo.get(&(peer.clone(), peer_iface.clone())),
            );
            if let (Some(a), Some(b)) = both {
                let mtu = (*a).min(*b);
                let payload = mtu - if addr.addr().is_ipv4() { 28 } else { 48 };
                let (ok, detail) = ping(vm, peer_addr.addr(), Some(payload));
                out.push(check(
                    &name,
                    "mtu",
                    format!("{mtu} to {} ({peer})", peer_addr.addr()),
                    ok,
                    if ok {
                        format!("full-size frames pass: {detail}")
                    } else {
                        format!("full-size frames do not pass (DF set): {detail}")
                    },
                ));
            }
        }
    }
    out
}

/// A node its BMC booted from a CD (`provision --lab`): NetworkManager
/// must run with the rendered keyfiles that came on the CD, each one
/// (stage 1 says which it copied; the config disk had none).
fn provisioned(dir: &Path, node: &str) -> Option<Check> {
    if !dir.join(format!("{node}-cd.iso")).is_file() {
        return None;
    }
    let console =
        std::fs::read_to_string(dir.join(format!("{node}-console.log"))).unwrap_or_default();
    let mut rendered: Vec<String> = std::fs::read_dir(dir.join(format!("{node}-cfg/keyfiles")))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    rendered.sort();
    let missing: Vec<&String> = rendered
        .iter()
        .filter(|k| !console.contains(&format!("lab: firstboot network {k}")))
        .collect();
    Some(check(
        node,
        "boot",
        "provisioned",
        missing.is_empty() && !rendered.is_empty(),
        if missing.is_empty() {
            format!(
                "booted its CD from its BMC; its {} keyfile(s) came from the CD",
                rendered.len()
            )
        } else {
            format!(
                "booted its CD from its BMC, but not with {} from it",
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    ))
}

/// netverify on every node at once: probe frames on every VLAN of the lab
/// (all of them on every trunk NIC), judged per node and VLAN.
fn vlans(vms: &mut [Vm], inv: &Inventory, ports: &[SwitchPort]) -> Vec<Check> {
    let opts = PlanOptions {
        window_s: 10,
        ..PlanOptions::default()
    };
    let mut plan = match netverify::plan(inv, &opts) {
        Ok(p) => p,
        Err(e) => return vec![check("", "vlans", "netverify plan", false, e)],
    };
    // Every VLAN of the lab on every trunk (a NIC that carries some VLAN
    // tagged): a VLAN one node's intent lacks then fails between it and
    // the others. Access NICs (a provisioning NIC) keep their own plan.
    let mut all: Vec<u16> = plan
        .hosts
        .iter()
        .flat_map(|h| h.nics.iter().flat_map(|n| n.vlans.iter().copied()))
        .collect();
    all.sort_unstable();
    all.dedup();
    for n in plan.hosts.iter_mut().flat_map(|h| h.nics.iter_mut()) {
        if !n.vlans.is_empty() {
            n.vlans = all.clone();
        }
    }
    let text = serde_json::to_string(&plan).expect("plan serialises");
    let cmd = format!(
        "cat > /tmp/plan.json <<'NODENET_EOF'\n{text}\nNODENET_EOF\nnodenet netverify run /tmp/plan.json -o /tmp/result.json >/tmp/netverify.log 2>&1; cat /tmp/result.json"
    );
    let results: Vec<Result<RunResult, String>> = on_each(vms, |vm| {
        let (st, out) = vm.shell(&cmd, Duration::from_secs(120));
        if st != 0 {
            return Err(format!("{}: netverify run failed: {out}", vm.name));
        }
        RunResult::from_json(&out).map_err(|e| format!("{}: {e}", vm.name))
    });
    let mut out = Vec::new();
    let mut ok_results = Vec::new();
    for r in results {
        match r {
            Ok(r) => ok_results.push(r),
            Err(e) => out.push(check("", "vlans", "netverify run", false, e)),
        }
    }
    match netverify::report::report(&ok_results, inv) {
        Ok(rep) => {
            for (seg, res) in &rep.matrix {
                out.extend(segment_checks(&seg.to_string(), res, ports));
            }
            // Probe frames between NICs of one LACP bond are findings of
            // netverify's own (it knows no switch-side bonds): the matrix
            // above judges those with the bond as one link.
            // A NIC of an LACP bond that heard nothing, likewise, when its
            // bond is the segment's only link (one node).
            let one_link = rep
                .matrix
                .iter()
                .all(|(_, res)| links(res, ports).len() < 2);
            let lone_bond_nic = |d: &nodenet_model::Diagnostic| {
                one_link
                    && d.code.as_str() == "netverify-silent-nic"
                    && ports.iter().any(|p| {
                        Some(p.host.as_str()) == d.host.as_deref()
                            && p.lacp.is_some()
                            && d.message.contains(&format!("NIC {} ", p.nic))
                    })
            };
            for d in rep.diagnostics.iter().filter(|d| {
                d.is_error() && d.code.as_str() != "netverify-vlan-not-carried" && !lone_bond_nic(d)
            }) {
                out.push(check(
                    d.host.as_deref().unwrap_or_default(),
                    "vlans",
                    d.code.as_str(),
                    false,
                    d.message.clone(),
                ));
            }
        }
        Err(e) => out.push(check("", "vlans", "netverify report", false, e)),
    }
    out
}

/// A segment's distinct links ([`link_of`]).
fn links(res: &netverify::report::SegmentResult, ports: &[SwitchPort]) -> Vec<(String, String)> {
    let mut links: Vec<(String, String)> =
        res.nics.iter().map(|(h, n)| link_of(ports, h, n)).collect();
    links.sort_unstable();
    links.dedup();
    links
}

/// One link of a segment: a host's NIC, or the NICs of one of its LACP
/// bonds (the switch forwards to one port of the bond, by hash).
fn link_of(ports: &[SwitchPort], host: &str, nic: &str) -> (String, String) {
    let group = ports
        .iter()
        .find(|p| p.host == host && p.nic == nic)
        .and_then(|p| p.lacp.clone());
    match group {
        Some(g) => {
            let nics: Vec<&str> = ports
                .iter()
                .filter(|p| p.host == host && p.lacp.as_deref() == Some(&g))
                .map(|p| p.nic.as_str())
                .collect();
            (host.to_string(), format!("LACP {}", nics.join("+")))
        }
        None => (host.to_string(), nic.to_string()),
    }
}

/// A segment's result per node: every NIC of it heard on some NIC of
/// every other link of the segment. One check per node (the failures
/// named), so a VLAN missing on one node fails that node.
fn segment_checks(
    segment: &str,
    res: &netverify::report::SegmentResult,
    ports: &[SwitchPort],
) -> Vec<Check> {
    let links: Vec<((String, String), (String, String))> = res
        .nics
        .iter()
        .map(|(h, n)| ((h.clone(), n.clone()), link_of(ports, h, n)))
        .collect();
    let mut hosts: Vec<&str> = links.iter().map(|((h, _), _)| h.as_str()).collect();
    hosts.dedup();
    let mut out = Vec::new();
    for host in hosts {
        let mut missing: Vec<String> = Vec::new();
        let mut total = 0;
        for (from, from_link) in links.iter().filter(|((h, _), _)| h == host) {
            let mut others: Vec<&(String, String)> = links
                .iter()
                .map(|(_, l)| l)
                .filter(|l| *l != from_link)
                .collect();
            others.sort_unstable();
            others.dedup();
            for to_link in others {
                total += 1;
                let heard = links.iter().filter(|(_, l)| l == to_link).any(|(to, _)| {
                    res.heard
                        .get(&(from.clone(), to.clone()))
                        .is_some_and(|h| h.0)
                });
                if !heard {
                    missing.push(format!(
                        "{} {} -> {} {}",
                        from.0, from.1, to_link.0, to_link.1
                    ));
                }
            }
        }
        if total == 0 {
            // One link on the segment (a single node's bond): nothing to
            // probe between, nothing passed.
            continue;
        }
        out.push(check(
            host,
            "vlans",
            segment,
            missing.is_empty(),
            if missing.is_empty() {
                format!("probe frames from each NIC reach every other link ({total})")
            } else {
                format!("not heard: {}", missing.join(", "))
            },
        ));
    }
    out
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
