//! `nodenet lab rehearse OLD NEW`: day 2 in the lab, as the plan rolls it
//! out. The steps of the plan's rollout through kubernetes-nmstate
//! (`ROLLOUT.md`'s, from [`nodenet_plan::rollout::Rollout::policy_steps`])
//! go out in order, each once the one before is done. A policy is enacted
//! as kubernetes-nmstate's handler enacts it: its partial state applied on
//! each lab node its selector picks (`nodenet apply`, which merges it with
//! what runs, under a NetworkManager checkpoint with the gateway probe),
//! at most `maxUnavailable` of them at once; when a node fails, the
//! policy's nodes not yet changed are aborted (kubernetes-nmstate's
//! `ConfigurationAborted` enactment condition, api/shared/
//! nodenetworkconfigurationenactment_types.go) and the rollout stops at
//! that step (a Degraded policy never becomes Available). Meanwhile the
//! switch pings every address of the nodes changing (each of their
//! networks and VLANs) every 20 ms; the connectivity lost is the replies
//! missed, in milliseconds, per node and per round of nodes changed at
//! once, beside what the plan claimed. VLANs the new inventory adds to a
//! NIC's port are added on the switch first, as the network team would
//! before the change. Afterwards each changed host's whole new state is
//! held against its kernel (`diff --live`): the rollout's partial states
//! must add up to the new inventory.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use nodenet_model::{Host, Inventory};
use nodenet_plan::rollout::{PlannedPolicy, PolicyStep};
use nodenet_plan::{HostChange, HostChangeKind, Risk};
use serde::{Deserialize, Serialize};
use serde_json::Value as J;

use crate::state::LabState;
use crate::topology::{self, Topology};
use crate::{LabError, Vm};

/// Interval of the switch's pings, in milliseconds.
pub const PING_INTERVAL_MS: u64 = 20;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Loss {
    pub address: IpAddr,
    pub interface: String,
    pub sent: u64,
    pub lost: u64,
    /// `lost` × the ping interval.
    pub ms: u64,
    /// The most lost one after another ([`OUTAGE_PINGS`] or more is an
    /// outage).
    #[serde(default)]
    pub in_a_row: u64,
}

/// One policy on one node: kubernetes-nmstate's enactment.
#[derive(Debug, Serialize, Deserialize)]
pub struct Enactment {
    pub host: String,
    /// The round of the policy's step it went out in (from 1): nodes of
    /// one round change at once.
    pub round: usize,
    /// `committed`, `rolled-back`, `refused`, or `aborted` (another node
    /// of the policy failed first, so this one was left alone).
    pub outcome: String,
    /// What `nodenet apply` said (its last lines), for a failure the why.
    pub detail: String,
    pub loss: Vec<Loss>,
    /// What the plan said of this host's change of the policy's risk.
    pub claims: Vec<String>,
    /// The plan said the change leaves the cluster's traffic alone
    /// (additive, or "carries no cluster traffic"), yet pings to the
    /// host's machine-network addresses were lost: the plan was wrong.
    pub contradicted: bool,
    /// When pings were lost: what the node's NetworkManager and kernel,
    /// and the switch's kernel, logged meanwhile (a reactivated profile,
    /// a bond port leaving its aggregator), so the loss has its why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct PolicyResult {
    pub name: String,
    #[serde(rename = "maxUnavailable")]
    pub max_unavailable: J,
    /// The lab nodes its selector picks.
    pub selects: Vec<String>,
    /// How many of them kubernetes-nmstate changes at once.
    pub at_once: usize,
    /// `Available` (every node committed), `Degraded`, or `not-applied`
    /// (the rollout stopped at an earlier step).
    pub status: String,
    pub enactments: Vec<Enactment>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct StepResult {
    /// ROLLOUT.md's number of the step (kubernetes-nmstate's part).
    pub step: usize,
    pub wave: usize,
    pub risk: Risk,
    pub file: String,
    pub policies: Vec<PolicyResult>,
    /// The most nodes with a machine-network outage ([`OUTAGE_PINGS`] in
    /// a row lost) in one round, and how many of them run the control
    /// plane.
    pub lost_at_once: usize,
    pub control_plane_lost_at_once: usize,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct HostResult {
    pub host: String,
    /// 1-based, in the plan's order of risk.
    pub order: usize,
    pub risk: Risk,
    /// The worst of its enactments: `committed`, `rolled-back`,
    /// `refused`, `aborted`; `not-applied` when the rollout stopped before
    /// its policies, `nothing-to-apply` when no policy carries its change,
    /// `not-in-lab`.
    pub outcome: String,
    pub detail: String,
    /// Every enactment's.
    pub loss: Vec<Loss>,
    /// The host's whole new state is what its kernel runs afterwards.
    pub converged: bool,
    /// Every network change of the host is in a policy (none is left to
    /// configure-ovs.sh): only then must it converge.
    #[serde(default = "yes")]
    pub carried: bool,
    #[serde(default)]
    pub claims: Vec<String>,
    #[serde(default)]
    pub contradicted: bool,
}

fn yes() -> bool {
    true
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
    /// The rollout's steps as they went.
    #[serde(default)]
    pub steps: Vec<StepResult>,
    pub hosts: Vec<HostResult>,
    /// Hosts the plan changes that the lab does not have, cluster changes,
    /// what no policy carries.
    pub notes: Vec<String>,
    /// The lab's switch as it is now (the new inventory's).
    #[serde(skip)]
    pub topology: Option<Topology>,
}

impl Rehearsal {
    /// Every host committed and converged, no claim contradicted, the
    /// control plane never losing two nodes at once.
    pub fn ok(&self) -> bool {
        self.hosts.iter().all(|h| {
            matches!(h.outcome.as_str(), "committed" | "nothing-to-apply")
                && (h.converged || !h.carried)
                && !h.contradicted
        }) && self.steps.iter().all(|s| s.control_plane_lost_at_once < 2)
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

/// Condenses a `ping` log on the switch: its summary line, the sequence
/// number of the last reply (`last-reply N`) and the most sequence
/// numbers missing between two replies (`longest-gap N`).
const SEQ_SUMMARY: &str = "awk -F'icmp_seq=' '/bytes from/{split($2,a,\" \"); s=a[1]+0; if (s-p-1>g) g=s-p-1; p=s} /packets transmitted/{print} END{print \"last-reply \" p+0; print \"longest-gap \" g+0}'";

/// The fewest machine-network pings lost one after another that the lab
/// calls an outage (60 ms): what contradicts a plan that said a change
/// leaves the cluster's traffic alone. A lone echo lost is not one: CI's
/// starved lab (its sampler 884 ms late) lost 1 of 574 pings to a route
/// added by reapply, where the routes `nodenet apply` added and 13
/// reapplies by `nmcli` lost none here; the outages measured here ran
/// 5-18 in a row (a profile taken down and up to remove a route).
pub const OUTAGE_PINGS: u64 = 3;

/// What the switch's pings to one address came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PingOutcome {
    pub sent: u64,
    /// Never answered, less the one in flight when ping was stopped
    /// (counted as lost by ping's own summary, so one reply in a few runs
    /// went "missing" with nothing changing at all).
    pub lost: u64,
    /// The most of them lost one after another.
    pub in_a_row: u64,
}

/// A [`SEQ_SUMMARY`] read.
pub fn ping_outcome(summary: &str) -> Option<PingOutcome> {
    let (sent, received) = ping_counts(summary)?;
    let field = |key: &str| -> u64 {
        summary
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    let last = field("last-reply ");
    let in_flight = u64::from(last < sent && received > 0);
    let lost = sent.saturating_sub(received).saturating_sub(in_flight);
    // Those after the last reply are a run too.
    let trailing = sent.saturating_sub(last).saturating_sub(in_flight);
    Some(PingOutcome {
        sent,
        lost,
        in_a_row: field("longest-gap ").max(trailing).min(lost),
    })
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

/// Which lab nodes a policy selects, by the labels each host's node
/// carries (role, hostname, the inventory's own labels).
fn selected<'a>(p: &PlannedPolicy, lab: &[(&'a Host, BTreeMap<String, String>)]) -> Vec<&'a Host> {
    lab.iter()
        .filter(|(_, labels)| p.selector.iter().all(|(k, v)| labels.get(k) == Some(v)))
        .map(|(h, _)| *h)
        .collect()
}

/// The rounds a step's policies go out in: each policy advances
/// `at_once` of its nodes per round, the step's policies side by side.
/// (policy index, host) per round.
fn rounds<T: Copy>(batches: &[Vec<Vec<T>>]) -> Vec<Vec<(usize, T)>> {
    let depth = batches.iter().map(Vec::len).max().unwrap_or(0);
    (0..depth)
        .map(|r| {
            batches
                .iter()
                .enumerate()
                .flat_map(|(i, b)| b.get(r).into_iter().flatten().map(move |h| (i, *h)))
                .collect()
        })
        .collect()
}

/// What the rehearsal needs from the lab and the plan.
struct Lab<'a> {
    state: &'a LabState,
    dir: &'a Path,
    new: &'a Inventory,
    changes: BTreeMap<&'a str, &'a HostChange>,
    switch: Vm,
}

pub fn rehearse(
    state: &LabState,
    dir: &Path,
    old: &Inventory,
    new: &Inventory,
    names: (&str, &str),
) -> Result<Rehearsal, LabError> {
    let plan = nodenet_plan::plan(old, new).map_err(|e| LabError::Input(e.to_string()))?;
    let rollout = nodenet_plan::rollout::rollout(&plan, new);
    let mut notes: Vec<String> = plan
        .cluster
        .iter()
        .map(|c| format!("cluster change not rehearsed: {}", c.field))
        .collect();
    for left in &rollout.left_to_configure_ovs {
        notes.push(format!(
            "{left}: on an OpenShift node configure-ovs.sh owns this interface (br-ex); no policy carries its change, so the lab does not apply it"
        ));
    }
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
    let mut lab = Lab {
        state,
        dir,
        new,
        changes: plan.changes.iter().map(|c| (c.host.as_str(), c)).collect(),
        switch,
    };
    let steps = rollout_steps(&mut lab, &rollout.policy_steps())?;
    let hosts = host_results(&mut lab, &plan, &steps, &rollout.left_to_configure_ovs)?;
    Ok(Rehearsal {
        old: names.0.to_string(),
        new: names.1.to_string(),
        switch_changes,
        steps,
        hosts,
        notes,
        topology: Some(new_topology),
    })
}

/// The steps in order, until one has a Degraded policy (the rest are
/// written down as not applied).
fn rollout_steps(lab: &mut Lab, steps: &[PolicyStep]) -> Result<Vec<StepResult>, LabError> {
    let in_lab: Vec<(&Host, BTreeMap<String, String>)> = lab
        .new
        .hosts
        .iter()
        .filter(|h| {
            lab.state
                .topology
                .nodes
                .iter()
                .any(|n| n.name == h.name.value)
        })
        .map(|h| (h, h.node_labels(&lab.new.cluster)))
        .collect();
    let mut out = Vec::new();
    let mut stopped = false;
    for (i, step) in steps.iter().enumerate() {
        let mut policies: Vec<PolicyResult> = Vec::new();
        let mut batches = Vec::new();
        for p in &step.policies {
            let picks = selected(p, &in_lab);
            let at_once =
                nodenet_check::traffic::nodes_at_once(&p.max_unavailable, picks.len()).unwrap_or(1);
            batches.push(picks.chunks(at_once).map(<[_]>::to_vec).collect::<Vec<_>>());
            policies.push(PolicyResult {
                name: p.name.clone(),
                max_unavailable: p.max_unavailable.clone(),
                selects: picks.iter().map(|h| h.name.value.clone()).collect(),
                at_once,
                status: "not-applied".into(),
                enactments: Vec::new(),
            });
        }
        let mut result = StepResult {
            step: i + 1,
            wave: step.wave,
            risk: step.risk,
            file: step.file.to_string(),
            policies,
            lost_at_once: 0,
            control_plane_lost_at_once: 0,
        };
        if !stopped {
            enact_step(lab, step, &batches, &mut result)?;
            stopped = result.policies.iter().any(|p| p.status == "Degraded");
        }
        out.push(result);
    }
    Ok(out)
}

/// The nodes of one round, each with the index of its policy in the step.
type Round<'a> = Vec<(usize, &'a Host)>;

/// One step: round after round, the nodes of each round changed at once
/// while the switch pings them.
fn enact_step(
    lab: &mut Lab,
    step: &PolicyStep,
    batches: &[Vec<Vec<&Host>>],
    result: &mut StepResult,
) -> Result<(), LabError> {
    let mut failed = vec![false; step.policies.len()];
    for (r, round) in rounds(batches).into_iter().enumerate() {
        // A policy whose node failed enacts no more of them.
        let (go, aborted): (Round, Round) = round.into_iter().partition(|(i, _)| !failed[*i]);
        for (i, h) in aborted {
            result.policies[i].enactments.push(Enactment {
                host: h.name.value.clone(),
                round: r + 1,
                outcome: "aborted".into(),
                detail: "another node of the policy failed first (ConfigurationAborted)".into(),
                loss: Vec::new(),
                claims: Vec::new(),
                contradicted: false,
                evidence: Vec::new(),
            });
        }
        if go.is_empty() {
            continue;
        }
        let enacted = enact_round(lab, step, &go, r + 1)?;
        let lost: Vec<&Enactment> = enacted
            .iter()
            .map(|(_, e)| e)
            .filter(|e| machine_lost(lab.new, e))
            .collect();
        result.lost_at_once = result.lost_at_once.max(lost.len());
        let control_plane = lost
            .iter()
            .filter(|e| {
                lab.changes
                    .get(e.host.as_str())
                    .is_some_and(|c| nodenet_check::traffic::is_control_plane(&c.role))
            })
            .count();
        result.control_plane_lost_at_once = result.control_plane_lost_at_once.max(control_plane);
        for (i, e) in enacted {
            failed[i] |= e.outcome != "committed";
            result.policies[i].enactments.push(e);
        }
    }
    for (p, failed) in result.policies.iter_mut().zip(failed) {
        p.status = if failed { "Degraded" } else { "Available" }.into();
    }
    Ok(())
}

/// Whether an address of the machine network had an outage
/// ([`OUTAGE_PINGS`] in a row lost).
fn machine_lost(new: &Inventory, e: &Enactment) -> bool {
    e.loss.iter().any(|l| {
        l.in_a_row >= OUTAGE_PINGS
            && new
                .cluster
                .machine_networks
                .iter()
                .any(|m| m.value.contains(&l.address))
    })
}

/// Where a VM's logs stood before a change, so what they gain after is
/// the change's: the lines of its NetworkManager log (`/run/nm.log`,
/// lab-init's) and of its kernel's.
struct LogMarks {
    nm: usize,
    kernel: usize,
}

/// What of a log says why pings were lost: profiles reactivated or
/// reapplied, devices changing state, DHCP, carrier, bond events (an
/// 802.3ad port's mux machine among them, [`MUX_DEBUG`]).
const EVIDENCE_PATTERN: &str =
    "state change|eapply|ctivat|dhcp4|carrier|bond|LACP|802.3ad|link (is )?(up|down)";

/// At most this many lines from each log (the last ones).
const EVIDENCE_LINES: usize = 12;

/// The kernel logs an 802.3ad port's mux machine changing state only as
/// a debug message (bond_3ad.c's `ad_mux_machine`, once per change):
/// turned on, a port that stops carrying traffic says so, as when its
/// partner's LACPDUs stop for three intervals (a stalled VM). (Its rx
/// machine's message comes with every LACPDU and would flood the log.)
const MUX_DEBUG: &str =
    "echo 'module bonding format \"Mux Machine\" +p' > /proc/dynamic_debug/control 2>/dev/null";

/// A state machine's message that says it stayed where it was (the rx
/// machine's, with every LACPDU, when its debug messages are on too).
const SAME_STATE: &str = "Last State=([0-9]+), Curr State=\\1$";

/// The mux machine's states by number (Linux include/net/bond_3ad.h,
/// `mux_states_t`).
const MUX_STATES: [&str; 7] = [
    "DUMMY",
    "DETACHED",
    "WAITING",
    "ATTACHED",
    "COLLECTING",
    "DISTRIBUTING",
    "COLLECTING_DISTRIBUTING",
];

/// A kernel line, with a mux machine's state numbers named.
fn mux_named(line: &str) -> String {
    let state = |key: &str| {
        let at = line.find(key)? + key.len();
        let n: usize = line[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()?;
        MUX_STATES.get(n).copied()
    };
    match (
        line.contains("Mux Machine:"),
        state("Last State="),
        state("Curr State="),
    ) {
        (true, Some(a), Some(b)) => format!("{line} ({a} -> {b})"),
        _ => line.to_string(),
    }
}

impl LogMarks {
    fn of(vm: &mut Vm) -> LogMarks {
        let (_, text) = vm.shell(
            &format!(
                "{MUX_DEBUG}; echo marks $(cat /run/nm.log 2>/dev/null | wc -l) $(dmesg | wc -l)"
            ),
            Duration::from_secs(30),
        );
        let mut n = text
            .lines()
            .find_map(|l| l.strip_prefix("marks "))
            .unwrap_or_default()
            .split_whitespace()
            .map(|w| w.parse().unwrap_or(0));
        LogMarks {
            nm: n.next().unwrap_or(0),
            kernel: n.next().unwrap_or(0),
        }
    }

    /// What each log gained since the mark that [`EVIDENCE_PATTERN`]
    /// picks, NetworkManager's first (the switch has only its kernel's),
    /// each line prefixed with where it was logged. (One command, its
    /// lines tagged: the shell's own job notices come in the same output.)
    fn since(&self, vm: &mut Vm, name: &str) -> Vec<String> {
        let (_, text) = vm.shell(
            &format!(
                "{{ cat /run/nm.log 2>/dev/null | tail -n +{nm} | grep -E '{EVIDENCE_PATTERN}' | tail -n {EVIDENCE_LINES} | sed 's/^/nm: /'; \
                 dmesg | tail -n +{kernel} | grep -E '{EVIDENCE_PATTERN}' | grep -vE '{SAME_STATE}' | tail -n {EVIDENCE_LINES} | sed 's/^/kernel: /'; }}",
                nm = self.nm + 1,
                kernel = self.kernel + 1,
            ),
            Duration::from_secs(30),
        );
        let logged = |tag: &'static str| {
            text.lines()
                .filter_map(move |l| l.strip_prefix(tag))
                .map(|l| l.trim().chars().take(240).collect::<String>())
        };
        logged("nm: ")
            .map(|l| format!("{name} NetworkManager: {l}"))
            .chain(logged("kernel: ").map(|l| format!("{name} kernel: {}", mux_named(&l))))
            .collect()
    }
}

/// The nodes of one round, each with its policy's state, at once.
fn enact_round(
    lab: &mut Lab,
    step: &PolicyStep,
    round: &[(usize, &Host)],
    number: usize,
) -> Result<Vec<(usize, Enactment)>, LabError> {
    let mut vms = Vec::new();
    let mut targets: Vec<(String, String, IpAddr)> = Vec::new();
    for (_, h) in round {
        let mut vm = Vm::attach(&h.name.value, lab.dir)?;
        let (_, text) = vm.shell("ip -j addr show", Duration::from_secs(30));
        // The switch pings each address it has a network for.
        for (iface, nets) in crate::verify::parse_addresses(&text) {
            for n in nets {
                let a = n.addr();
                if lab
                    .state
                    .topology
                    .segments
                    .iter()
                    .any(|s| s.network.contains(&a))
                {
                    targets.push((h.name.value.clone(), iface.clone(), a));
                }
            }
        }
        vms.push(vm);
    }
    let marks: Vec<LogMarks> = crate::on_each(&mut vms, LogMarks::of);
    let switch_mark = LogMarks::of(&mut lab.switch);
    for (n, (_, _, a)) in targets.iter().enumerate() {
        lab.switch.shell(
            &format!(
                "ping -n -i 0.0{} -W 1 {a} > /tmp/rehearse-{n}.log 2>&1 & echo $! > /tmp/rehearse-{n}.pid",
                PING_INTERVAL_MS / 10
            ),
            Duration::from_secs(10),
        );
    }
    std::thread::sleep(Duration::from_secs(2));
    // Each node's policy state, by its VM's name.
    let states: BTreeMap<&str, String> = round
        .iter()
        .map(|(i, h)| {
            let json = serde_json::to_string_pretty(&step.policies[*i].state).expect("state");
            (h.name.value.as_str(), json)
        })
        .collect();
    // apply's own exit status, its last lines as the detail.
    let applied = crate::on_each(&mut vms, |vm| {
        let json = &states[vm.name.as_str()];
        vm.shell(&format!(
                "cat > /tmp/policy.yml <<'NODENET_EOF'\n{json}\nNODENET_EOF\nnodenet apply /tmp/policy.yml --probe gateway --probe-timeout 30 > /tmp/apply.log 2>&1; rc=$?; tail -5 /tmp/apply.log; (exit $rc)"
            ),
            Duration::from_secs(600),
        )
    });
    std::thread::sleep(Duration::from_secs(2));
    let mut losses: BTreeMap<String, Vec<Loss>> = BTreeMap::new();
    for (n, (host, iface, a)) in targets.iter().enumerate() {
        let (_, summary) = lab.switch.shell(
            &format!("kill -INT $(cat /tmp/rehearse-{n}.pid); sleep 1; {SEQ_SUMMARY} /tmp/rehearse-{n}.log"),
            Duration::from_secs(20),
        );
        let o = ping_outcome(&summary).unwrap_or_default();
        losses.entry(host.clone()).or_default().push(Loss {
            address: *a,
            interface: iface.clone(),
            sent: o.sent,
            lost: o.lost,
            ms: o.lost * PING_INTERVAL_MS,
            in_a_row: o.in_a_row,
        });
    }
    // Each node that lost pings: its own lines, then the switch's (read
    // once for the round).
    let mut evidence: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut switch_lines: Option<Vec<String>> = None;
    for (vm, mark) in vms.iter_mut().zip(&marks) {
        if losses
            .get(&vm.name)
            .is_some_and(|l| l.iter().any(|l| l.lost > 0))
        {
            let name = vm.name.clone();
            let mut lines = mark.since(vm, &name);
            lines.extend(
                switch_lines
                    .get_or_insert_with(|| switch_mark.since(&mut lab.switch, "switch"))
                    .iter()
                    .cloned(),
            );
            evidence.insert(name, lines);
        }
    }
    Ok(round
        .iter()
        .zip(applied)
        .map(|((i, h), (st, out))| {
            // apply: 0 committed; 1 refused, or failed and rolled back
            // (it says "the previous state was restored").
            let outcome = if st == 0 {
                "committed"
            } else if out.contains("previous state was restored") {
                "rolled-back"
            } else {
                "refused"
            };
            let claims: Vec<String> = lab
                .changes
                .get(h.name.value.as_str())
                .map(|c| {
                    c.reasons
                        .iter()
                        .filter(|r| r.risk == step.risk)
                        .map(|r| r.what.clone())
                        .collect()
                })
                .unwrap_or_default();
            let mut e = Enactment {
                host: h.name.value.clone(),
                round: number,
                outcome: outcome.into(),
                detail: out.trim().to_string(),
                loss: losses.remove(&h.name.value).unwrap_or_default(),
                claims,
                contradicted: false,
                evidence: evidence.remove(&h.name.value).unwrap_or_default(),
            };
            e.contradicted =
                machine_lost(lab.new, &e) && claims_no_cluster_traffic(step.risk, &e.claims);
            (*i, e)
        })
        .collect())
}

/// Per host the plan changes, in its order of risk: how its enactments
/// went, and whether its whole new state runs afterwards.
fn host_results(
    lab: &mut Lab,
    plan: &nodenet_plan::Plan,
    steps: &[StepResult],
    left_out: &[nodenet_plan::rollout::LeftToConfigureOvs],
) -> Result<Vec<HostResult>, LabError> {
    let mut changes: Vec<&HostChange> = plan
        .changes
        .iter()
        .filter(|c| c.change == HostChangeKind::Modified)
        .collect();
    changes.sort_by_key(|c| c.risk);
    let mut out = Vec::new();
    for (i, c) in changes.into_iter().enumerate() {
        let in_lab = lab.state.topology.nodes.iter().any(|n| n.name == c.host);
        let enactments: Vec<&Enactment> = steps
            .iter()
            .flat_map(|s| &s.policies)
            .flat_map(|p| &p.enactments)
            .filter(|e| e.host == c.host)
            .collect();
        let selected_later = steps
            .iter()
            .flat_map(|s| &s.policies)
            .any(|p| p.status == "not-applied" && p.selects.contains(&c.host));
        let carried = !left_out.iter().any(|l| l.host == c.host);
        let outcome = if !in_lab {
            "not-in-lab"
        } else if let Some(bad) = enactments.iter().find(|e| e.outcome != "committed") {
            bad.outcome.as_str()
        } else if selected_later {
            "not-applied"
        } else if enactments.is_empty() {
            "nothing-to-apply"
        } else {
            "committed"
        };
        let new_state = lab
            .new
            .hosts
            .iter()
            .find(|h| h.name.value == c.host)
            .and_then(|h| h.network.as_ref())
            .map(|n| n.to_json());
        // The difference left, when there is one, is the detail.
        let (converged, left) = match (in_lab, new_state) {
            (true, Some(state)) => {
                let json = serde_json::to_string_pretty(&state).expect("state serialises");
                let mut node = Vm::attach(&c.host, lab.dir)?;
                let (st, out) = node.shell(
                    &format!("cat > /tmp/new-state.yml <<'NODENET_EOF'\n{json}\nNODENET_EOF\nnodenet diff /tmp/new-state.yml --live > /tmp/diff.log 2>&1; rc=$?; tail -20 /tmp/diff.log; (exit $rc)"),
                    Duration::from_secs(120),
                );
                (st == 0, out.trim().to_string())
            }
            _ => (false, String::new()),
        };
        out.push(HostResult {
            host: c.host.clone(),
            order: i + 1,
            risk: c.risk,
            outcome: outcome.into(),
            detail: enactments
                .iter()
                .find(|e| e.outcome != "committed")
                .map(|e| e.detail.clone())
                .unwrap_or(if converged { String::new() } else { left }),
            loss: enactments.iter().flat_map(|e| &e.loss).cloned().collect(),
            converged,
            carried,
            claims: c.reasons.iter().map(|r| r.what.clone()).collect(),
            contradicted: enactments.iter().any(|e| e.contradicted),
        });
    }
    Ok(out)
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

/// Losses as `bond0.110 192.168.110.10 lost 40 ms (2 of 260)`.
fn loss_text(loss: &[Loss]) -> String {
    if loss.is_empty() {
        return "no address to ping".into();
    }
    loss.iter()
        .map(|l| {
            let row = if l.lost > 1 {
                format!(", at most {} in a row", l.in_a_row)
            } else {
                String::new()
            };
            format!(
                "{} {} lost {} ms ({} of {}{row})",
                l.interface, l.address, l.ms, l.lost, l.sent
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The rollout's steps as they went: each policy's rounds, each node's
/// measured loss beside what the plan claimed of its change.
fn steps_text(r: &Rehearsal, s: &mut String) {
    for step in &r.steps {
        s.push_str(&format!(
            "step {} ({} change, wave {}, {}):\n",
            step.step,
            step.risk.as_str(),
            step.wave,
            step.file
        ));
        for p in &step.policies {
            let limit = match &p.max_unavailable {
                J::String(v) => v.clone(),
                v => v.to_string(),
            };
            s.push_str(&format!(
                "  {}: selects {} (maxUnavailable {limit}: {} at once): {}\n",
                p.name,
                if p.selects.is_empty() {
                    "no lab node".to_string()
                } else {
                    p.selects.join(", ")
                },
                p.at_once,
                p.status
            ));
            for e in &p.enactments {
                s.push_str(&format!(
                    "    round {}: {} {}; {}\n",
                    e.round,
                    e.host,
                    e.outcome,
                    loss_text(&e.loss)
                ));
                for c in &e.claims {
                    s.push_str(&format!("      plan: {c}\n"));
                }
                if e.contradicted {
                    s.push_str("      CONTRADICTED: the plan said this change leaves the cluster's traffic alone, and the machine network had an outage (pings lost in a row)\n");
                }
                for l in &e.evidence {
                    s.push_str(&format!("      logged: {l}\n"));
                }
                if e.outcome != "committed" {
                    for l in e.detail.lines() {
                        s.push_str(&format!("      {l}\n"));
                    }
                }
            }
        }
        if step.policies.iter().any(|p| !p.enactments.is_empty()) {
            s.push_str(&format!(
                "  nodes with a machine-network outage at once: {} (control plane: {})\n",
                step.lost_at_once, step.control_plane_lost_at_once
            ));
        }
    }
}

pub fn text(r: &Rehearsal) -> String {
    let mut s = String::new();
    for c in &r.switch_changes {
        s.push_str(&format!("switch: {c}\n"));
    }
    steps_text(r, &mut s);
    for h in &r.hosts {
        s.push_str(&format!(
            "{}. {} ({}): {}{}; {}\n",
            h.order,
            h.host,
            h.risk.as_str(),
            h.outcome,
            match (h.converged, h.carried) {
                (true, _) => ", state as intended",
                (false, true) => ", state NOT as intended",
                (false, false) => ", not all of it carried by the plan",
            },
            loss_text(&h.loss)
        ));
        if h.contradicted {
            s.push_str(&format!(
                "   the plan said this change leaves the cluster's traffic alone, and the machine network had an outage (pings lost in a row): {}\n",
                h.claims.join("; ")
            ));
        }
        if !h.converged && h.carried {
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
mod tests;
