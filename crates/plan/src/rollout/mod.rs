//! The rollout a plan implies, through the engines the cluster runs:
//!
//! - the Machine Config Operator: the pools' MachineConfigs whose host
//!   files change are written again; with `cluster.nodeAgent`, the node
//!   disruption policy of `openshift/machineconfiguration-cluster.yaml`
//!   has every node of the pool restart `nodenet-apply.service` in turn
//!   (`maxUnavailable` of the pool), which changes only the nodes whose
//!   own file changed and degrades (stopping the rollout) a node whose
//!   change is rolled back;
//! - kubernetes-nmstate: the change itself as policies, one set per risk
//!   class — only the interfaces, routes and name servers that change
//!   (removals as `state: absent`) — disruptive ones one node at a time
//!   (`maxUnavailable: 1`, or one policy per failure domain), the others
//!   with kubernetes-nmstate's default.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::{json, Map, Value as J};

use nodenet_check::network::Network;
use nodenet_check::shapes::text::holds_value;
use nodenet_import::diff::Change;
use nodenet_model::{Host, Inventory, Node};
use nodenet_render::artifacts::{self, Policy};
use nodenet_render::OutFile;

use crate::{HostChange, HostChangeKind, Item, Plan, Risk};

/// One policy of the rollout.
#[derive(Debug, Serialize)]
pub struct PlannedPolicy {
    /// Waves go out in order: a wave's policies after every policy of the
    /// one before is Available.
    pub wave: usize,
    pub risk: Risk,
    pub file: String,
    pub name: String,
    pub selector: BTreeMap<String, String>,
    #[serde(rename = "maxUnavailable")]
    pub max_unavailable: J,
    /// Nodes it selects among the inventory's.
    pub hosts: usize,
    #[serde(skip)]
    pub state: J,
}

/// One step of the rollout through kubernetes-nmstate: the policies of
/// one file, applied together.
#[derive(Debug)]
pub struct PolicyStep<'a> {
    pub wave: usize,
    pub risk: Risk,
    pub file: &'a str,
    pub policies: Vec<&'a PlannedPolicy>,
}

#[derive(Debug, Serialize)]
pub struct Rollout {
    /// Roles whose MachineConfigs change, with the hosts whose own files
    /// change in each.
    pub machine_configs: BTreeMap<String, usize>,
    pub policies: Vec<PlannedPolicy>,
    /// Changes no day-2 engine may carry: interfaces configure-ovs.sh has
    /// put under br-ex, by host.
    pub left_to_configure_ovs: Vec<LeftToConfigureOvs>,
}

/// A host's interface that configure-ovs.sh has put under br-ex: a change
/// to it is said, not carried. Written `host: interface` (its JSON form
/// too).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LeftToConfigureOvs {
    pub host: String,
    pub iface: String,
}

impl std::fmt::Display for LeftToConfigureOvs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.host, self.iface)
    }
}

impl Serialize for LeftToConfigureOvs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What one policy file gathers: wave, risk class, role.
type PolicyKey = (usize, Risk, String);

mod waves;
mod written;

pub use waves::*;
pub use written::*;

/// The rollout of `plan` onto the `new` inventory.
pub fn rollout(plan: &Plan, new: &Inventory) -> Rollout {
    rollout_counted(plan, new).0
}

/// [`rollout`], and how many hosts took deltas worked out for another.
pub(crate) fn rollout_counted(plan: &Plan, new: &Inventory) -> (Rollout, usize) {
    let by_name: HashMap<&str, &Host> = new
        .hosts
        .iter()
        .map(|h| (h.name.value.as_str(), h))
        .collect();
    let agent = new.cluster.node_agent.is_some();
    let changed: Vec<(&HostChange, &Host)> = plan
        .changes
        .par_iter()
        .filter(|c| c.change == HostChangeKind::Modified)
        .filter_map(|c| Some((c, *by_name.get(c.host.as_str())?)))
        .collect();
    let (hosts, lent) = deltas_of(&changed, new, agent);
    let mut machine_configs: BTreeMap<String, usize> = BTreeMap::new();
    let mut left_to_configure_ovs = Vec::new();
    // (wave, risk, role) → the hosts' deltas.
    let mut deltas: BTreeMap<PolicyKey, Vec<(&Host, J)>> = BTreeMap::new();
    for h in hosts {
        if let Some(role) = h.machine_config {
            *machine_configs.entry(role).or_default() += 1;
        }
        left_to_configure_ovs.extend(h.left_to_configure_ovs);
        for (key, delta) in h.deltas {
            deltas.entry(key).or_default().push((h.host, delta));
        }
    }
    let policies = policies(deltas, new);
    left_to_configure_ovs.par_sort_unstable();
    left_to_configure_ovs.dedup();
    let rollout = Rollout {
        machine_configs,
        policies,
        left_to_configure_ovs,
    };
    (rollout, lent)
}

/// Each changed host's deltas, on every core, in the plan's order; and
/// how many were lent. Hosts of one diff with one risk in one role
/// (`HostChange::alike`) are worked out once: their deltas are their
/// first host's where those name no address or MAC (no host's own
/// value) and the second host, the last and every 64th, worked out as
/// well, have the same.
fn deltas_of<'a>(
    changed: &[(&'a HostChange, &'a Host)],
    new: &Inventory,
    agent: bool,
) -> (Vec<HostDeltas<'a>>, usize) {
    let groups = crate::shaped::groups_of(
        changed
            .iter()
            .map(|(c, _)| Some((c.alike?, c.role.as_str()))),
    );
    let work = |i: usize| host_deltas(changed[i].0, changed[i].1, new, agent);
    let (mut out, _, count) = crate::shaped::lend_per_group(
        changed.len(),
        &groups,
        work,
        |first, _, own| !holds_value(&format!("{:?}", first.deltas)) && own.same_as(first),
        |first, i| first.lent_to(changed[i].0, changed[i].1),
    );
    // Hosts in no group, and groups whose sample did not agree: each
    // host's own.
    let rest: Vec<(usize, HostDeltas)> = (0..changed.len())
        .into_par_iter()
        .filter(|&i| out[i].is_none())
        .map(|i| (i, work(i)))
        .collect();
    for (i, d) in rest {
        out[i] = Some(d);
    }
    let all = out
        .into_iter()
        .map(|d| d.expect("every host is worked out"))
        .collect();
    (all, count)
}

/// What one changed host adds to the rollout.
struct HostDeltas<'a> {
    host: &'a Host,
    /// Its role, when its change reaches a MachineConfig.
    machine_config: Option<String>,
    left_to_configure_ovs: Vec<LeftToConfigureOvs>,
    deltas: Vec<(PolicyKey, J)>,
}

impl<'a> HostDeltas<'a> {
    /// The same deltas and MachineConfig, and the same interfaces left to
    /// configure-ovs.sh.
    fn same_as(&self, other: &HostDeltas) -> bool {
        self.deltas == other.deltas
            && self.machine_config == other.machine_config
            && self
                .left_to_configure_ovs
                .iter()
                .map(|l| &l.iface)
                .eq(other.left_to_configure_ovs.iter().map(|l| &l.iface))
    }

    /// These deltas as host `h`'s (change `c`).
    fn lent_to(&self, c: &HostChange, h: &'a Host) -> HostDeltas<'a> {
        HostDeltas {
            host: h,
            machine_config: self.machine_config.clone(),
            left_to_configure_ovs: self
                .left_to_configure_ovs
                .iter()
                .map(|l| LeftToConfigureOvs {
                    host: c.host.clone(),
                    iface: l.iface.clone(),
                })
                .collect(),
            deltas: self.deltas.clone(),
        }
    }
}

/// The deltas of host `h`'s change `c`, per (wave, risk, role).
fn host_deltas<'a>(c: &'a HostChange, h: &'a Host, new: &Inventory, agent: bool) -> HostDeltas<'a> {
    let br_ex = nodenet_check::br_ex::plan(h, &new.cluster).ok();
    // Only a file the MCO carries changes a MachineConfig.
    let carried = agent || br_ex.as_ref().is_some_and(|p| p.writes_openshift_dir());
    let machine_config = (c.network.is_some() && carried).then(|| c.role.clone());
    // What configure-ovs.sh put under br-ex is no day-2 engine's.
    let owned: Vec<String> = match br_ex {
        Some(nodenet_check::br_ex::BrExPlan::ConfigureOvs { uplinks }) => uplinks,
        _ => Vec::new(),
    };
    let mut left_to_configure_ovs = Vec::new();
    let mut deltas = Vec::new();
    let wave_of = match (&c.network, &h.network) {
        (Some(diff), Some(node)) => waves(&c.items, diff, node),
        _ => vec![1; c.items.len()],
    };
    let last = wave_of.iter().copied().max().unwrap_or(1);
    for (wave, risk) in
        (1..=last).flat_map(|w| [Risk::Additive, Risk::Modifying, Risk::Disruptive].map(|r| (w, r)))
    {
        let items: Vec<&Item> = c
            .items
            .iter()
            .zip(&wave_of)
            .filter(|(i, w)| i.risk() == risk && **w == wave)
            .map(|(i, _)| i)
            .filter(|i| match i {
                Item::Iface { name, .. } if owned.contains(name) => {
                    left_to_configure_ovs.push(LeftToConfigureOvs {
                        host: c.host.clone(),
                        iface: name.clone(),
                    });
                    false
                }
                Item::Route { route, .. }
                    if route["next-hop-interface"]
                        .as_str()
                        .is_some_and(|n| owned.iter().any(|o| o == n)) =>
                {
                    false
                }
                _ => true,
            })
            .collect();
        if !items.is_empty() {
            deltas.push((
                (wave, risk, c.role.clone()),
                delta(
                    h.network.as_ref(),
                    &items,
                    c.network.as_ref().expect("a diff"),
                ),
            ));
        }
    }
    HostDeltas {
        host: h,
        machine_config,
        left_to_configure_ovs,
        deltas,
    }
}

/// The policies that carry each (wave, risk, role)'s deltas: one for the
/// role when every host of it has the same delta (one per failure
/// domain for a disruptive one), else one per node, a control-plane
/// node's in a file of its own.
fn policies(deltas: BTreeMap<PolicyKey, Vec<(&Host, J)>>, new: &Inventory) -> Vec<PlannedPolicy> {
    let role_size = |role: &str| {
        new.hosts
            .iter()
            .filter(|h| h.scope() == nodenet_model::Scope::FirstBoot && h.role.value.pool() == role)
            .count()
    };
    let mut policies = Vec::new();
    // Policies that must go out in order say so in their files' and
    // names' wave; one wave is the plain layout.
    let staged = deltas.keys().any(|(wave, _, _)| *wave > 1);
    for ((wave, risk, role), hosts) in deltas {
        let (file, prefix) = match staged {
            true => (
                format!("nncp/wave-{wave}/{}-{role}.yaml", risk.as_str()),
                format!("nodenet-plan-w{wave}"),
            ),
            false => (
                format!("nncp/{}-{role}.yaml", risk.as_str()),
                "nodenet-plan".to_string(),
            ),
        };
        let role_label = format!("node-role.kubernetes.io/{role}");
        let unavailable = artifacts::max_unavailable(&role, risk == Risk::Disruptive);
        // A static address is one node's: a policy for the role would give
        // it to every node of the role, those that join later too.
        let shared = hosts.len() == role_size(&role)
            && hosts.par_windows(2).all(|w| w[0].1 == w[1].1)
            && !hosts.par_iter().any(|(_, d)| carries_address(d));
        if shared {
            let domains: Option<BTreeSet<String>> = new
                .cluster
                .failure_domain
                .as_ref()
                .filter(|_| risk == Risk::Disruptive)
                .and_then(|d| {
                    hosts
                        .iter()
                        .map(|(h, _)| h.labels.get(&d.value).cloned())
                        .collect()
                });
            let base = BTreeMap::from([(role_label.clone(), String::new())]);
            match (domains, &new.cluster.failure_domain) {
                (Some(values), Some(key)) => {
                    for value in values {
                        let mut selector = base.clone();
                        selector.insert(key.value.clone(), value.clone());
                        let n = hosts
                            .iter()
                            .filter(|(h, _)| h.labels.get(&key.value) == Some(&value))
                            .count();
                        policies.push(PlannedPolicy {
                            wave,
                            risk,
                            file: file.clone(),
                            name: format!(
                                "{prefix}-{}-{role}-{}",
                                risk.as_str(),
                                artifacts::dns_label(&value)
                            ),
                            selector,
                            max_unavailable: unavailable.clone(),
                            hosts: n,
                            state: hosts[0].1.clone(),
                        });
                    }
                }
                _ => policies.push(PlannedPolicy {
                    wave,
                    risk,
                    file: file.clone(),
                    name: format!("{prefix}-{}-{role}", risk.as_str()),
                    selector: base,
                    max_unavailable: unavailable.clone(),
                    hosts: hosts.len(),
                    state: hosts[0].1.clone(),
                }),
            }
            // The role's copies of one delta (10,000 in a fleet-wide
            // change), freed on every core.
            hosts.into_par_iter().for_each(drop);
        } else {
            for (h, state) in hosts {
                let host = artifacts::dns_label(h.short_name());
                // One control-plane node per step: policies applied
                // together are changed together, one node each.
                let file = match artifacts::is_control_plane(&role) {
                    true => format!("{}-{host}.yaml", file.trim_end_matches(".yaml")),
                    false => file.clone(),
                };
                policies.push(PlannedPolicy {
                    wave,
                    risk,
                    file,
                    name: format!("{prefix}-{}-{host}", risk.as_str()),
                    selector: BTreeMap::from([
                        (role_label.clone(), String::new()),
                        (
                            "kubernetes.io/hostname".to_string(),
                            h.node_name(&new.cluster),
                        ),
                    ]),
                    max_unavailable: unavailable.clone(),
                    hosts: 1,
                    state,
                });
            }
        }
    }
    policies
}

/// Whether a delta gives an interface a static address.
fn carries_address(delta: &J) -> bool {
    delta["interfaces"].as_array().is_some_and(|ifaces| {
        ifaces.iter().any(|i| {
            ["ipv4", "ipv6"]
                .iter()
                .any(|f| i[f]["address"].as_array().is_some_and(|a| !a.is_empty()))
        })
    })
}

/// Whether an openshift/ file is one pool's (`…-worker.yaml`,
/// `…-worker-…`).
fn of_pool(path: &str, role: &str) -> bool {
    path.ends_with(&format!("-{role}.yaml")) || path.contains(&format!("-{role}-"))
}

#[cfg(test)]
mod tests;
