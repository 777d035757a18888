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

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Map, Value as J};

use nodenet_import::diff::Change;
use nodenet_model::{Host, Inventory};
use nodenet_render::artifacts::{self, Policy, DEFAULT_MAX_UNAVAILABLE};
use nodenet_render::OutFile;

use crate::{HostChangeKind, Item, Plan, Risk};

/// One policy of the rollout.
#[derive(Debug, Serialize)]
pub struct PlannedPolicy {
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

#[derive(Debug, Serialize)]
pub struct Rollout {
    /// Roles whose MachineConfigs change, with the hosts whose own files
    /// change in each.
    pub machine_configs: BTreeMap<String, usize>,
    pub policies: Vec<PlannedPolicy>,
    /// Changes no day-2 engine may carry: interfaces configure-ovs.sh has
    /// put under br-ex (`host: interface`).
    pub left_to_configure_ovs: Vec<String>,
}

/// `value` at the dotted `path` of `obj` (made as needed).
fn set_path(obj: &mut Map<String, J>, path: &str, value: J) {
    match path.split_once('.') {
        None => {
            obj.insert(path.to_string(), value);
        }
        Some((head, rest)) => {
            let inner = obj
                .entry(head.to_string())
                .or_insert_with(|| J::Object(Map::new()));
            if let J::Object(m) = inner {
                set_path(m, rest, value);
            }
        }
    }
}

/// The part of a host's change of one risk, as a partial NMState state:
/// new interfaces whole, changed ones with only what changes (so hosts
/// whose change is the same share one policy whatever their addresses),
/// removed ones `absent`.
fn delta(new_state: &J, items: &[&Item], diff: &nodenet_import::diff::Diff) -> J {
    let mut state = Map::new();
    let new_ifaces: Vec<&J> = new_state
        .get("interfaces")
        .and_then(J::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mut ifaces = Vec::new();
    let mut routes = Vec::new();
    for item in items {
        match item {
            Item::Iface {
                name, kind, change, ..
            } => match change {
                Change::Removed => {
                    ifaces.push(json!({"name": name, "type": kind, "state": "absent"}))
                }
                Change::Added => {
                    if let Some(i) = new_ifaces
                        .iter()
                        .find(|i| i.get("name").and_then(J::as_str) == Some(name.as_str()))
                    {
                        ifaces.push((*i).clone());
                    }
                }
                Change::Changed => {
                    let mut entry = Map::new();
                    entry.insert("name".into(), json!(name));
                    entry.insert("type".into(), json!(kind));
                    for d in diff
                        .interfaces
                        .iter()
                        .filter(|d| &d.name == name && &d.kind == kind)
                    {
                        for f in &d.fields {
                            set_path(&mut entry, &f.path, f.desired.clone());
                        }
                    }
                    ifaces.push(J::Object(entry));
                }
            },
            Item::Route { route, added, .. } => {
                let mut r = route.clone();
                if !added {
                    if let Some(o) = r.as_object_mut() {
                        o.insert("state".into(), json!("absent"));
                    }
                }
                routes.push(r);
            }
            Item::Dns { .. } => {
                if let Some(dns) = new_state.get("dns-resolver") {
                    state.insert("dns-resolver".into(), dns.clone());
                }
            }
        }
    }
    if !ifaces.is_empty() {
        state.insert("interfaces".into(), J::Array(ifaces));
    }
    if !routes.is_empty() {
        state.insert("routes".into(), json!({ "config": routes }));
    }
    J::Object(state)
}

/// The rollout of `plan` onto the `new` inventory.
pub fn rollout(plan: &Plan, new: &Inventory) -> Rollout {
    let by_name: BTreeMap<&str, &Host> = new
        .hosts
        .iter()
        .map(|h| (h.name.value.as_str(), h))
        .collect();
    let mut machine_configs: BTreeMap<String, usize> = BTreeMap::new();
    let mut left_to_configure_ovs = Vec::new();
    let agent = new.cluster.node_agent.is_some();
    // (risk, role) → the hosts' deltas.
    let mut deltas: BTreeMap<(Risk, String), Vec<(&Host, J)>> = BTreeMap::new();
    for c in plan
        .changes
        .iter()
        .filter(|c| c.change == HostChangeKind::Modified)
    {
        let Some(h) = by_name.get(c.host.as_str()) else {
            continue;
        };
        let br_ex = nodenet_check::br_ex::plan(h, &new.cluster).ok();
        // Only a file the MCO carries changes a MachineConfig.
        let carried = agent || br_ex.as_ref().is_some_and(|p| p.writes_openshift_dir());
        if c.network.is_some() && carried {
            *machine_configs.entry(c.role.clone()).or_default() += 1;
        }
        // What configure-ovs.sh put under br-ex is no day-2 engine's.
        let owned: Vec<String> = match br_ex {
            Some(nodenet_check::br_ex::BrExPlan::ConfigureOvs { uplinks }) => uplinks,
            _ => Vec::new(),
        };
        let new_state = h.network.as_ref().map(|n| n.to_json()).unwrap_or_default();
        for risk in [Risk::Additive, Risk::Modifying, Risk::Disruptive] {
            let items: Vec<&Item> = c
                .items
                .iter()
                .filter(|i| i.risk() == risk)
                .filter(|i| match i {
                    Item::Iface { name, .. } if owned.contains(name) => {
                        left_to_configure_ovs.push(format!("{}: {name}", c.host));
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
                deltas.entry((risk, c.role.clone())).or_default().push((
                    h,
                    delta(&new_state, &items, c.network.as_ref().expect("a diff")),
                ));
            }
        }
    }
    let role_size = |role: &str| {
        new.hosts
            .iter()
            .filter(|h| h.scope() == nodenet_model::Scope::FirstBoot && h.role.value.pool() == role)
            .count()
    };
    let mut policies = Vec::new();
    for ((risk, role), hosts) in deltas {
        let file = format!("nncp/{}-{role}.yaml", risk.as_str());
        let role_label = format!("node-role.kubernetes.io/{role}");
        let unavailable = if risk == Risk::Disruptive {
            json!(1)
        } else {
            json!(DEFAULT_MAX_UNAVAILABLE)
        };
        let shared = hosts.windows(2).all(|w| w[0].1 == w[1].1) && hosts.len() == role_size(&role);
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
                            risk,
                            file: file.clone(),
                            name: format!(
                                "nodenet-plan-{}-{role}-{}",
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
                    risk,
                    file: file.clone(),
                    name: format!("nodenet-plan-{}-{role}", risk.as_str()),
                    selector: base,
                    max_unavailable: unavailable.clone(),
                    hosts: hosts.len(),
                    state: hosts[0].1.clone(),
                }),
            }
        } else {
            for (h, state) in hosts {
                policies.push(PlannedPolicy {
                    risk,
                    file: file.clone(),
                    name: format!(
                        "nodenet-plan-{}-{}",
                        risk.as_str(),
                        artifacts::dns_label(h.short_name())
                    ),
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
    left_to_configure_ovs.sort();
    left_to_configure_ovs.dedup();
    Rollout {
        machine_configs,
        policies,
        left_to_configure_ovs,
    }
}

impl Rollout {
    /// The manifests that carry the change: the policies (one file per
    /// risk and role), the MachineConfigs that change and the
    /// MachineConfiguration that keeps them from rebooting the pool.
    pub fn files(&self, new: &Inventory) -> Vec<OutFile> {
        let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for p in &self.policies {
            let policy = Policy {
                name: p.name.clone(),
                selector: p.selector.clone(),
                max_unavailable: p.max_unavailable.clone(),
                state: p.state.clone(),
            };
            by_file.entry(&p.file).or_default().push(policy.into_yaml());
        }
        let mut out: Vec<OutFile> = by_file
            .into_iter()
            .map(|(file, docs)| OutFile::new(file, docs.join("---\n"), 0o644))
            .collect();
        if !self.machine_configs.is_empty() {
            // The pools of the changed roles (custom pools of a split
            // role included) with their MachineConfigs and what they need.
            let (files, _) = nodenet_render::openshift::openshift_files(new);
            out.extend(files.into_iter().filter(|f| {
                let pool_file = f.path.starts_with("openshift/10-nodenet-br-ex-")
                    || f.path.starts_with("openshift/10-nodenet-nmstate-")
                    || f.path.starts_with("openshift/machineconfigpool-");
                !pool_file
                    || self.machine_configs.keys().any(|role| {
                        f.path.ends_with(&format!("-{role}.yaml"))
                            || f.path.contains(&format!("-{role}-"))
                    })
            }));
        }
        out
    }

    /// The human form.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        for (role, n) in &self.machine_configs {
            s.push_str(&format!(
                "  MachineConfigs of the {role} pool(s): {n} host file(s) change; with the node agent, every {role} node restarts nodenet-apply.service in turn (the pool's maxUnavailable), only those {n} change, a rolled-back node is degraded and stops the pool\n"
            ));
        }
        for what in &self.left_to_configure_ovs {
            s.push_str(&format!(
                "  not carried: {what} is the interface configure-ovs.sh puts under br-ex; a day-2 change to it would undo br-ex (reaches the node with new day-1 keyfiles and a reboot, or with `cluster.brEx: derive`)\n"
            ));
        }
        // Per-node policies of one file: the first, and how many more.
        let mut shown: BTreeMap<(&str, Risk), usize> = BTreeMap::new();
        for p in &self.policies {
            let per_node = p.selector.contains_key("kubernetes.io/hostname");
            let seen = shown.entry((p.file.as_str(), p.risk)).or_default();
            *seen += 1;
            if per_node && *seen > 1 {
                continue;
            }
            let more = if per_node {
                let n = self
                    .policies
                    .iter()
                    .filter(|q| q.file == p.file && q.risk == p.risk)
                    .count();
                if n > 1 {
                    format!(" and {} more per-node policies like it", n - 1)
                } else {
                    String::new()
                }
            } else {
                String::new()
            };
            let selector: Vec<String> = p
                .selector
                .iter()
                .map(|(k, v)| {
                    if v.is_empty() {
                        k.clone()
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect();
            s.push_str(&format!(
                "  {} {}{more} ({}; {} node(s); maxUnavailable {}) in {}\n",
                p.risk.as_str(),
                p.name,
                selector.join(", "),
                p.hosts,
                match &p.max_unavailable {
                    J::String(s) => s.clone(),
                    v => v.to_string(),
                },
                p.file
            ));
        }
        let per_node = self
            .policies
            .iter()
            .filter(|p| p.risk == Risk::Disruptive && p.hosts == 1)
            .count();
        if per_node > 1 {
            s.push_str(&format!(
                "  note: the {per_node} disruptive per-node policies are independent to kubernetes-nmstate: apply them one at a time, waiting for each to be Available, or roll the change out through the MachineConfig above\n"
            ));
        }
        s
    }
}
