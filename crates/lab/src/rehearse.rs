//! `nodenet lab rehearse OLD NEW`: day 2 in the lab. The plan's changed
//! hosts, one at a time in the plan's order of risk (additive, then
//! modifying, then disruptive: the order its rollout's waves go out in),
//! get their new state the way a node does — `nodenet apply` under a
//! NetworkManager checkpoint with the gateway probe — while the switch
//! pings every address the host has (each of its networks and VLANs) every
//! 20 ms; the connectivity lost is the replies missed, in milliseconds.
//! VLANs the new inventory adds to a NIC's port are added on the switch
//! first, as the network team would before the change.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use nodenet_model::Inventory;
use nodenet_plan::{HostChangeKind, Risk};
use serde::{Deserialize, Serialize};

use crate::state::LabState;
use crate::topology::{self, Topology};
use crate::{LabError, Vm};

/// Interval of the switch's pings, in milliseconds.
pub const PING_INTERVAL_MS: u64 = 20;

#[derive(Debug, Serialize, Deserialize)]
pub struct Loss {
    pub address: IpAddr,
    pub interface: String,
    pub sent: u64,
    pub lost: u64,
    /// `lost` × the ping interval.
    pub ms: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct HostResult {
    pub host: String,
    /// 1-based, in the order applied.
    pub order: usize,
    pub risk: Risk,
    /// `committed`, `rolled-back`, `refused` or `not-in-lab`.
    pub outcome: String,
    /// What `nodenet apply` said (its last lines), for a failure the why.
    pub detail: String,
    pub loss: Vec<Loss>,
    /// The state is the new intent afterwards (`diff --live` empty).
    pub converged: bool,
    /// What the plan said of this host's change (its reasons).
    #[serde(default)]
    pub claims: Vec<String>,
    /// The plan said the change leaves the cluster's traffic alone
    /// (additive, or "carries no cluster traffic"), yet pings to the
    /// host's machine-network addresses were lost: the plan was wrong.
    #[serde(default)]
    pub contradicted: bool,
}

/// Whether a plan's claims for a host say its change leaves the cluster's
/// own traffic alone.
pub fn claims_no_cluster_traffic(risk: Risk, claims: &[String]) -> bool {
    risk == Risk::Additive
        || risk != Risk::Disruptive
            && claims
                .iter()
                .any(|c| c.contains("carries no cluster traffic"))
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Rehearsal {
    pub old: String,
    pub new: String,
    /// VLANs added on switch ports before the change (`swp3 +130`).
    pub switch_changes: Vec<String>,
    pub hosts: Vec<HostResult>,
    /// Hosts the plan changes that the lab does not have, cluster changes.
    pub notes: Vec<String>,
    /// The lab's switch as it is now (the new inventory's).
    #[serde(skip)]
    pub topology: Option<Topology>,
}

impl Rehearsal {
    pub fn ok(&self) -> bool {
        self.hosts
            .iter()
            .all(|h| h.outcome == "committed" && h.converged && !h.contradicted)
    }
}

/// The switch-side VLANs `new` needs that the running switch lacks, as
/// commands for it, and a line per change.
fn switch_additions(running: &Topology, new: &Topology) -> (String, Vec<String>) {
    let mut script = String::new();
    let mut said = Vec::new();
    for np in &new.ports {
        let Some(rp) = running
            .ports
            .iter()
            .find(|p| p.host == np.host && p.nic == np.nic)
        else {
            continue;
        };
        let member = rp.lacp.clone().unwrap_or(rp.name.clone());
        for v in np.vlans.iter().filter(|v| !rp.vlans.contains(v)) {
            let cmd = format!("bridge vlan add dev {member} vid {v}\n");
            if !script.contains(&cmd) {
                script.push_str(&cmd);
            }
            said.push(format!("{} ({} {}) +{v}", rp.name, rp.host, rp.nic));
        }
    }
    for s in &new.segments {
        if running.segments.iter().any(|r| r.network == s.network) {
            continue;
        }
        script.push_str(&format!(
            "bridge vlan add dev br0 vid {v} self; ip link add link br0 name gw{v} type vlan id {v} 2>/dev/null; ip link set gw{v} up; ip addr add {}/{} dev gw{v} nodad\n",
            s.gateway,
            s.network.prefix_len(),
            v = s.vlan
        ));
        said.push(format!("gateway {} on VLAN {}", s.gateway, s.vlan));
    }
    (script, said)
}

/// `ping -q`'s summary: (transmitted, received).
pub fn ping_counts(summary: &str) -> Option<(u64, u64)> {
    let line = summary
        .lines()
        .find(|l| l.contains("packets transmitted"))?;
    let mut nums = line
        .split(',')
        .filter_map(|part| part.split_whitespace().next()?.parse::<u64>().ok());
    Some((nums.next()?, nums.next()?))
}

pub fn rehearse(
    state: &LabState,
    dir: &Path,
    old: &Inventory,
    new: &Inventory,
    names: (&str, &str),
) -> Result<Rehearsal, LabError> {
    let plan = nodenet_plan::plan(old, new).map_err(|e| LabError::Input(e.to_string()))?;
    let mut notes: Vec<String> = plan
        .cluster
        .iter()
        .map(|c| format!("cluster change not rehearsed: {}", c.field))
        .collect();
    // What an OpenShift node's day 2 cannot carry, the lab (no OVS, no
    // br-ex) applies anyway: said, not hidden.
    for left in nodenet_plan::rollout::rollout(&plan, new).left_to_configure_ovs {
        notes.push(format!(
            "{left}: on an OpenShift node configure-ovs.sh owns this interface (br-ex) and the plan does not carry it; the lab, without br-ex, applies it"
        ));
    }
    // The switch first: VLANs the new intents put on each NIC.
    let new_topology = topology::plan(new, &state.hosts_in(new))?;
    let (script, switch_changes) = switch_additions(&state.topology, &new_topology);
    let mut switch = Vm::attach("switch", dir)?;
    if !script.is_empty() {
        let (st, out) = switch.shell(script.trim_end(), Duration::from_secs(60));
        if st != 0 {
            return Err(LabError::Tool("switch".into(), out));
        }
        switch.shell("swp-lldp", Duration::from_secs(60));
    }
    let mut changes: Vec<&nodenet_plan::HostChange> = plan
        .changes
        .iter()
        .filter(|c| c.change == HostChangeKind::Modified)
        .collect();
    changes.sort_by_key(|c| c.risk);
    for c in plan
        .changes
        .iter()
        .filter(|c| c.change != HostChangeKind::Modified)
    {
        notes.push(format!(
            "{} is {} by the plan: not rehearsed (the lab has the old hosts)",
            c.host,
            match c.change {
                HostChangeKind::Added => "added",
                _ => "removed",
            }
        ));
    }
    let mut hosts = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        let order = i + 1;
        let in_lab = state.topology.nodes.iter().any(|n| n.name == c.host);
        let new_state = new
            .hosts
            .iter()
            .find(|h| h.name.value == c.host)
            .and_then(|h| h.network.as_ref())
            .map(|n| n.to_json());
        let (true, Some(new_state)) = (in_lab, new_state) else {
            hosts.push(HostResult {
                host: c.host.clone(),
                order,
                risk: c.risk,
                outcome: "not-in-lab".into(),
                detail: "the lab was built without this host".into(),
                loss: Vec::new(),
                converged: false,
                claims: Vec::new(),
                contradicted: false,
            });
            continue;
        };
        let mut node = Vm::attach(&c.host, dir)?;
        let (_, text) = node.shell("ip -j addr show", Duration::from_secs(30));
        let addrs: Vec<(String, IpAddr)> = crate::verify::parse_addresses(&text)
            .into_iter()
            .flat_map(|(i, a)| a.into_iter().map(move |n| (i.clone(), n.addr())))
            .collect();
        // The switch pings each address it has a network for.
        let targets: Vec<&(String, IpAddr)> = addrs
            .iter()
            .filter(|(_, a)| {
                state
                    .topology
                    .segments
                    .iter()
                    .any(|s| s.network.contains(a))
            })
            .collect();
        for (n, (_, a)) in targets.iter().enumerate() {
            switch.shell(&format!(
                    "ping -n -q -i 0.0{} -W 1 {a} > /tmp/rehearse-{n}.log 2>&1 & echo $! > /tmp/rehearse-{n}.pid",
                    PING_INTERVAL_MS / 10
                ),
                Duration::from_secs(10),
            );
        }
        std::thread::sleep(Duration::from_secs(2));
        let json = serde_json::to_string_pretty(&new_state).expect("state serialises");
        // apply's own exit status, its last lines as the detail.
        let (st, out) = node.shell(&format!(
                "cat > /tmp/new-state.yml <<'NODENET_EOF'\n{json}\nNODENET_EOF\nnodenet apply /tmp/new-state.yml --probe gateway --probe-timeout 30 > /tmp/apply.log 2>&1; rc=$?; tail -5 /tmp/apply.log; (exit $rc)"
            ),
            Duration::from_secs(600),
        );
        std::thread::sleep(Duration::from_secs(2));
        let mut loss = Vec::new();
        for (n, (iface, a)) in targets.iter().enumerate() {
            let (_, summary) = switch.shell(
                &format!(
                    "kill -INT $(cat /tmp/rehearse-{n}.pid); sleep 1; cat /tmp/rehearse-{n}.log"
                ),
                Duration::from_secs(20),
            );
            let (sent, received) = ping_counts(&summary).unwrap_or((0, 0));
            let lost = sent.saturating_sub(received);
            loss.push(Loss {
                address: *a,
                interface: iface.clone(),
                sent,
                lost,
                ms: lost * PING_INTERVAL_MS,
            });
        }
        // apply: 0 committed; 1 refused, or failed and rolled back (it
        // says "the previous state was restored").
        let outcome = if st == 0 {
            "committed"
        } else if out.contains("previous state was restored") {
            "rolled-back"
        } else {
            "refused"
        };
        let (dst, _) = node.shell(
            "nodenet diff /tmp/new-state.yml --live >/dev/null 2>&1",
            Duration::from_secs(120),
        );
        // The plan's word against the switch's pings on the machine
        // network.
        let claims: Vec<String> = c.reasons.iter().map(|r| r.what.clone()).collect();
        let machine_lost = loss.iter().any(|l| {
            l.lost > 0
                && new
                    .cluster
                    .machine_networks
                    .iter()
                    .any(|m| m.value.contains(&l.address))
        });
        let contradicted = machine_lost && claims_no_cluster_traffic(c.risk, &claims);
        hosts.push(HostResult {
            host: c.host.clone(),
            order,
            risk: c.risk,
            outcome: outcome.into(),
            detail: out.trim().to_string(),
            loss,
            converged: dst == 0,
            claims,
            contradicted,
        });
    }
    Ok(Rehearsal {
        old: names.0.to_string(),
        new: names.1.to_string(),
        switch_changes,
        hosts,
        notes,
        topology: Some(new_topology),
    })
}

/// One host's measured rehearsal, read back from `rehearse.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    pub host: String,
    pub outcome: String,
    /// The largest loss over the host's addresses, ms.
    pub lost_ms: u64,
    pub converged: bool,
}

/// `rehearse.json` (what `lab rehearse` wrote) read back: per host.
pub fn read_measured(text: &str) -> Result<Vec<Measured>, String> {
    let r: Rehearsal = serde_json::from_str(text).map_err(|e| format!("not a rehearsal: {e}"))?;
    Ok(r.hosts
        .iter()
        .map(|h| Measured {
            host: h.host.clone(),
            outcome: h.outcome.clone(),
            lost_ms: h.loss.iter().map(|l| l.ms).max().unwrap_or(0),
            converged: h.converged,
        })
        .collect())
}

pub fn text(r: &Rehearsal) -> String {
    let mut s = String::new();
    for c in &r.switch_changes {
        s.push_str(&format!("switch: {c}\n"));
    }
    for h in &r.hosts {
        let loss: Vec<String> = h
            .loss
            .iter()
            .map(|l| {
                format!(
                    "{} {} lost {} ms ({} of {})",
                    l.interface, l.address, l.ms, l.lost, l.sent
                )
            })
            .collect();
        s.push_str(&format!(
            "{}. {} ({}): {}{}; {}\n",
            h.order,
            h.host,
            h.risk.as_str(),
            h.outcome,
            if h.converged {
                ", state as intended"
            } else {
                ", state NOT as intended"
            },
            if loss.is_empty() {
                "no address to ping".to_string()
            } else {
                loss.join(", ")
            }
        ));
        if h.contradicted {
            s.push_str(&format!(
                "   the plan said this change leaves the cluster's traffic alone, and the machine network lost pings: {}\n",
                h.claims.join("; ")
            ));
        }
        if h.outcome != "committed" {
            for l in h.detail.lines() {
                s.push_str(&format!("   {l}\n"));
            }
        }
    }
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Additive, or a modifying change said to carry no cluster traffic,
    /// is a claim the lab can contradict; a disruptive one is not.
    #[test]
    fn which_claims_say_the_cluster_traffic_is_left_alone() {
        let no = vec!["changes mtu of `bond0.120`, which carries no cluster traffic".to_string()];
        let yes = vec!["adds `bond0.130` (vlan) on `bond0`, which carries `bond0.110`".to_string()];
        assert!(claims_no_cluster_traffic(Risk::Additive, &yes));
        assert!(claims_no_cluster_traffic(Risk::Modifying, &no));
        assert!(!claims_no_cluster_traffic(Risk::Modifying, &yes));
        assert!(!claims_no_cluster_traffic(Risk::Disruptive, &no));
    }

    #[test]
    fn measured_reads_what_rehearse_writes() {
        let r = Rehearsal {
            old: "a".into(),
            new: "b".into(),
            switch_changes: vec![],
            hosts: vec![HostResult {
                host: "m0".into(),
                order: 1,
                risk: Risk::Modifying,
                outcome: "committed".into(),
                detail: String::new(),
                loss: vec![
                    Loss {
                        address: "10.0.0.1".parse().unwrap(),
                        interface: "a".into(),
                        sent: 100,
                        lost: 2,
                        ms: 40,
                    },
                    Loss {
                        address: "10.0.1.1".parse().unwrap(),
                        interface: "b".into(),
                        sent: 100,
                        lost: 5,
                        ms: 100,
                    },
                ],
                converged: true,
                claims: vec![],
                contradicted: false,
            }],
            notes: vec![],
            topology: None,
        };
        let m = read_measured(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(
            m,
            [Measured {
                host: "m0".into(),
                outcome: "committed".into(),
                lost_ms: 100,
                converged: true
            }]
        );
        assert!(read_measured("{}").is_err());
    }

    #[test]
    fn ping_summary_counts() {
        let s = "--- 192.168.110.131 ping statistics ---\n512 packets transmitted, 498 received, 2.7% packet loss, time 10230ms\nrtt min/avg/max/mdev = 0.3/0.9/4.1/0.2 ms\n";
        assert_eq!(ping_counts(s), Some((512, 498)));
        assert_eq!(
            ping_counts(
                "12 packets transmitted, 0 received, +12 errors, 100% packet loss, time 240ms"
            ),
            Some((12, 0))
        );
        assert_eq!(ping_counts("connect: Network is unreachable"), None);
    }
}
