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

use nodenet_check::network::Network;
use nodenet_import::diff::Change;
use nodenet_model::{Host, Inventory, Node};
use nodenet_render::artifacts::{self, Policy};
use nodenet_render::OutFile;

use crate::{HostChangeKind, Item, Plan, Risk};

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
    /// put under br-ex (`host: interface`).
    pub left_to_configure_ovs: Vec<String>,
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
    let new_iface = |name: &str| {
        new_ifaces
            .iter()
            .find(|i| i.get("name").and_then(J::as_str) == Some(name))
            .copied()
    };
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
                    if let Some(i) = new_iface(name) {
                        ifaces.push(i.clone());
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
                        // A value left out whose default is the device's
                        // own cannot be written back (the plan says so).
                        for f in d.fields.iter().filter(|f| !f.desired.is_null()) {
                            let path: Vec<&str> = f.path.split('.').collect();
                            artifacts::set_at(&mut entry, &path, f.desired.clone());
                        }
                    }
                    // nmstate replaces a VLAN's settings as a whole when a
                    // state gives any (`VlanConfig::update`: base-iface,
                    // id and protocol all taken from the desired side), so
                    // a changed id goes with its base.
                    if entry.contains_key("vlan") {
                        if let Some(v) = new_iface(name).and_then(|i| i.get("vlan")) {
                            entry.insert("vlan".into(), v.clone());
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

/// The wave of each of a host's items (from 1). An item goes after what
/// it needs: a VLAN after its base is made, or after its base's MTU is
/// raised to hold the VLAN's; a base's MTU lowered after its VLANs'; a
/// route after the interface it leaves by; a removal after the host's
/// additions (what replaces it). Items that go out in one policy (same
/// risk, same wave) are ordered by nmstate; an item needed by one of
/// another risk class goes a wave earlier.
pub fn waves(items: &[Item], diff: &nodenet_import::diff::Diff, new_state: &Node) -> Vec<usize> {
    let net = Network::read(new_state);
    let index = |name: &str| {
        items
            .iter()
            .position(|i| matches!(i, Item::Iface { name: n, .. } if n == name))
    };
    let mtu_change = |name: &str| {
        diff.interfaces
            .iter()
            .filter(|d| d.name == name)
            .flat_map(|d| d.fields.iter())
            .find(|f| f.path == "mtu")
            .map(|f| (f.actual.as_i64(), f.desired.as_i64()))
    };
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for (x, item) in items.iter().enumerate() {
        match item {
            Item::Iface {
                name,
                change: Change::Added | Change::Changed,
                ..
            } => {
                let Some(iface) = net.iface(name) else {
                    continue;
                };
                let Some((base, p)) =
                    crate::risk::base_iface(iface.node).and_then(|b| Some((b.clone(), index(&b)?)))
                else {
                    continue;
                };
                match &items[p] {
                    Item::Iface {
                        change: Change::Added,
                        ..
                    } => edges.push((p, x)),
                    Item::Iface {
                        change: Change::Changed,
                        ..
                    } => {
                        let Some((base_old, base_new)) = mtu_change(&base) else {
                            continue;
                        };
                        // An unset MTU is the kernel's default 1500.
                        let base_old = base_old.unwrap_or(1500);
                        if iface.mtu().is_some_and(|(m, _)| m > base_old) {
                            edges.push((p, x));
                        }
                        let own_old = mtu_change(name).and_then(|(old, _)| old);
                        if let (Some(old), Some(new)) = (own_old, base_new) {
                            if old > new {
                                edges.push((x, p));
                            }
                        }
                    }
                    _ => {}
                }
            }
            Item::Route {
                route, added: true, ..
            } => {
                if let Some(p) = route["next-hop-interface"].as_str().and_then(index) {
                    if matches!(
                        items[p],
                        Item::Iface {
                            change: Change::Added,
                            ..
                        }
                    ) {
                        edges.push((p, x));
                    }
                }
            }
            Item::Iface {
                change: Change::Removed,
                ..
            } => {
                for (a, other) in items.iter().enumerate() {
                    if matches!(
                        other,
                        Item::Iface {
                            change: Change::Added,
                            ..
                        }
                    ) {
                        edges.push((a, x));
                    }
                }
            }
            _ => {}
        }
    }
    let mut wave = vec![1; items.len()];
    // Longest path; bounded, as a cycle (none is built above) must not hang.
    for _ in 0..=items.len() {
        let mut moved = false;
        for &(a, b) in &edges {
            let need = wave[a] + usize::from(items[a].risk() != items[b].risk());
            if wave[b] < need {
                wave[b] = need;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    wave
}

/// What one policy file gathers: wave, risk class, role.
type PolicyKey = (usize, Risk, String);

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
    // (wave, risk, role) → the hosts' deltas.
    let mut deltas: BTreeMap<PolicyKey, Vec<(&Host, J)>> = BTreeMap::new();
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
        let wave_of = match (&c.network, &h.network) {
            (Some(diff), Some(node)) => waves(&c.items, diff, node),
            _ => vec![1; c.items.len()],
        };
        let last = wave_of.iter().copied().max().unwrap_or(1);
        for (wave, risk) in (1..=last)
            .flat_map(|w| [Risk::Additive, Risk::Modifying, Risk::Disruptive].map(|r| (w, r)))
        {
            let items: Vec<&Item> = c
                .items
                .iter()
                .zip(&wave_of)
                .filter(|(i, w)| i.risk() == risk && **w == wave)
                .map(|(i, _)| i)
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
                deltas
                    .entry((wave, risk, c.role.clone()))
                    .or_default()
                    .push((
                        h,
                        delta(&new_state, &items, c.network.as_ref().expect("a diff")),
                    ));
            }
        }
    }
    let policies = policies(deltas, new);
    left_to_configure_ovs.sort();
    left_to_configure_ovs.dedup();
    Rollout {
        machine_configs,
        policies,
        left_to_configure_ovs,
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
        let shared = hosts.windows(2).all(|w| w[0].1 == w[1].1)
            && hosts.len() == role_size(&role)
            && !hosts.iter().any(|(_, d)| carries_address(d));
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

/// The label every policy of a plan carries, its value the plan's [`Rollout::id`].
pub const PLAN_LABEL: &str = "nodenet.io/plan";

impl Rollout {
    /// The plan's identity: the first 12 hex digits of a SHA-256 over its
    /// policies (names, selectors, states). The same plan made again has
    /// the same one; policy names stay the same from plan to plan (by
    /// wave, risk and role, or node), so `oc apply` replaces them.
    pub fn id(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for p in &self.policies {
            h.update(p.name.as_bytes());
            h.update(serde_json::to_vec(&p.selector).unwrap_or_default());
            h.update(serde_json::to_vec(&p.state).unwrap_or_default());
            h.update(p.max_unavailable.to_string().as_bytes());
        }
        h.finalize()
            .iter()
            .take(6)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The manifests that carry the change: the policies (one file per
    /// risk and role), the MachineConfigs that change and the
    /// MachineConfiguration that keeps them from rebooting the pool.
    pub fn files(&self, new: &Inventory) -> Vec<OutFile> {
        let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let labels = BTreeMap::from([(PLAN_LABEL.to_string(), self.id())]);
        for p in &self.policies {
            let policy = Policy {
                name: p.name.clone(),
                labels: labels.clone(),
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
        let mut openshift = Vec::new();
        if !self.machine_configs.is_empty() {
            // The pools of the changed roles (custom pools of a split
            // role included) with their MachineConfigs and what they need.
            let (files, _) = nodenet_render::openshift::openshift_files(new);
            openshift.extend(files.into_iter().filter(|f| {
                let pool_file = f.path.starts_with("openshift/10-nodenet-br-ex-")
                    || f.path.starts_with("openshift/10-nodenet-nmstate-")
                    || f.path.starts_with("openshift/machineconfigpool-");
                !pool_file
                    || self
                        .machine_configs
                        .keys()
                        .any(|role| of_pool(&f.path, role))
            }));
        }
        let names: Vec<&str> = openshift.iter().map(|f| f.path.as_str()).collect();
        out.push(OutFile::new("ROLLOUT.md", self.steps_for(&names), 0o644));
        out.extend(openshift);
        out
    }

    /// `ROLLOUT.md` for a rollout whose MachineConfig files are not known
    /// (see [`Rollout::steps_for`]).
    pub fn steps(&self) -> String {
        self.steps_for(&[])
    }

    /// The Machine Config Operator's part: the node disruption policy
    /// first (so no pool drains and reboots for this change), then one
    /// pool at a time, the control plane's last (a pool's own
    /// `maxUnavailable` paces its nodes; pools apart would roll at once).
    fn machine_config_steps(&self, openshift: &[&str], s: &mut String) -> usize {
        let mut roles: Vec<&str> = self.machine_configs.keys().map(String::as_str).collect();
        roles.sort_by_key(|r| artifacts::is_control_plane(r));
        s.push_str("\n## Through the Machine Config Operator\n\nOne pool at a time, the control plane's last; each node of a pool restarts nodenet-apply.service in turn (the pool's `maxUnavailable`; the master pool's is 1). A Degraded pool stops the rollout there.\n");
        let mut n = 0;
        let shared: Vec<&str> = openshift
            .iter()
            .copied()
            .filter(|f| !roles.iter().any(|r| of_pool(f, r)))
            .collect();
        if !shared.is_empty() {
            n += 1;
            let files: Vec<String> = shared.iter().map(|f| format!("-f {f}")).collect();
            s.push_str(&format!(
                "\n{n}. What every pool needs first (the node disruption policy that makes a change a restart of nodenet-apply.service, not a drain and reboot), merged into the cluster's own objects:\n\n   ```sh\n   oc apply --server-side --field-manager=nodenet {}\n   ```\n",
                files.join(" ")
            ));
        }
        for role in roles {
            n += 1;
            let files: Vec<String> = openshift
                .iter()
                .filter(|f| of_pool(f, role))
                .map(|f| format!("-f {f}"))
                .collect();
            let apply = match files.is_empty() {
                true => "oc apply -f openshift/".to_string(),
                false => format!("oc apply {}", files.join(" ")),
            };
            s.push_str(&format!(
                "\n{n}. The {role} pool ({} host file(s) change):\n\n   ```sh\n   {apply}\n   oc wait mcp/{role} --for condition=Updated --timeout=-1s\n   ```\n",
                self.machine_configs[role]
            ));
        }
        n
    }

    /// kubernetes-nmstate's part, in order: one step per policy file, by
    /// wave, additive before modifying before disruptive, and within a
    /// risk class the other pools before the control plane's (as through
    /// the MCO). A step starts once the one before is Available; the
    /// policies of one step go out together. `ROLLOUT.md` prints these,
    /// and `lab rehearse` applies them.
    pub fn policy_steps(&self) -> Vec<PolicyStep<'_>> {
        let control_plane = |p: &PlannedPolicy| {
            p.selector.keys().any(|k| {
                k.strip_prefix("node-role.kubernetes.io/")
                    .is_some_and(artifacts::is_control_plane)
            })
        };
        let mut files: Vec<(usize, Risk, bool, &str)> = self
            .policies
            .iter()
            .map(|p| (p.wave, p.risk, control_plane(p), p.file.as_str()))
            .collect();
        files.sort();
        files.dedup();
        files
            .into_iter()
            .map(|(wave, risk, _, file)| PolicyStep {
                wave,
                risk,
                file,
                policies: self
                    .policies
                    .iter()
                    .filter(|p| p.wave == wave && p.file == file)
                    .collect(),
            })
            .collect()
    }

    /// The order to apply what `files` writes, as numbered steps
    /// (`ROLLOUT.md`): the MachineConfigs (`openshift`: the files under
    /// openshift/), then each wave's policies, additive first, each step
    /// once the one before is done. Every command is whole, in a `sh`
    /// block, to be pasted as it is.
    pub fn steps_for(&self, openshift: &[&str]) -> String {
        let mut s = String::from("# Rollout\n");
        if !self.machine_configs.is_empty() && !self.policies.is_empty() {
            s.push_str("\nOne engine carries this change, not both: the Machine Config Operator on nodes that run nodenet-apply.service, kubernetes-nmstate on clusters that manage host networking with it.\n");
        }
        if !self.machine_configs.is_empty() {
            self.machine_config_steps(openshift, &mut s);
        }
        if self.policies.is_empty() {
            return s;
        }
        s.push_str("\n## Through kubernetes-nmstate\n\nIn this order; start a step only once the one before is done. A Degraded policy stops the rollout there (kubernetes-nmstate has rolled its failed node back). Control-plane nodes change one at a time, each in a step of its own.\n");
        let mut n = 0;
        for step in self.policy_steps() {
            let names: Vec<String> = step
                .policies
                .iter()
                .map(|p| format!("nncp/{}", p.name))
                .collect();
            n += 1;
            s.push_str(&format!(
                "\n{n}. {} change, wave {}: {} {}\n\n   ```sh\n   oc apply -f {}\n   oc wait {} --for condition=Available --timeout=-1s\n   ```\n",
                step.risk.as_str(),
                step.wave,
                names.len(),
                if names.len() == 1 { "policy" } else { "policies" },
                step.file,
                names.join(" ")
            ));
        }
        n += 1;
        let id = self.id();
        s.push_str(&format!(
            "\n{n}. Last, once every step above is done: the policies of earlier plans are spent (their changes are on the nodes, and deleting a policy reverts nothing: kubernetes-nmstate's rule). Delete them now, after this plan's `state: absent` entries have removed what they made, so that none of them makes it again on a node it is enacted on later. This plan's own policies (label {PLAN_LABEL}={id}) stay until the next plan deletes them.\n\n   ```sh\n   oc delete nncp -l '{PLAN_LABEL},{PLAN_LABEL}!={id}'\n   ```\n"
        ));
        for what in &self.left_to_configure_ovs {
            s.push_str(&format!(
                "\nNot carried by any step: {what} (the interface configure-ovs.sh puts under br-ex).\n"
            ));
        }
        s
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
        let staged = self.policies.iter().any(|p| p.wave > 1);
        let mut last_wave = None;
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
            if staged && Some(p.wave) != last_wave {
                s.push_str(&format!(
                    "  wave {}{}:\n",
                    p.wave,
                    if p.wave > 1 {
                        " (after every policy of the wave before is Available)"
                    } else {
                        ""
                    }
                ));
                last_wave = Some(p.wave);
            }
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
                "  note: the {per_node} disruptive per-node policies are independent to kubernetes-nmstate: apply them one at a time, waiting for each to be Available (ROLLOUT.md's steps){}\n",
                if self.machine_configs.is_empty() {
                    ""
                } else {
                    ", or roll the change out through the MachineConfigs above"
                }
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's state after a policy's `delta` is applied to `state`, as
    /// nmstate merges a desired state into the current one: interfaces by
    /// name (fields merged, `state: absent` removes), routes by value
    /// (`state: absent` removes), name servers replaced.
    fn apply_delta(state: &J, delta: &J) -> J {
        let mut out = state.clone();
        let Some(root) = out.as_object_mut() else {
            return out;
        };
        if let Some(changes) = delta.get("interfaces").and_then(J::as_array) {
            let ifaces = root
                .entry("interfaces")
                .or_insert_with(|| json!([]))
                .as_array_mut();
            if let Some(ifaces) = ifaces {
                for change in changes {
                    let name = change.get("name");
                    let pos = ifaces.iter().position(|i| i.get("name") == name);
                    let absent = change.get("state").and_then(J::as_str) == Some("absent");
                    match (pos, absent) {
                        (Some(p), true) => {
                            ifaces.remove(p);
                        }
                        (Some(p), false) => merge(&mut ifaces[p], change),
                        (None, true) => {}
                        (None, false) => ifaces.push(change.clone()),
                    }
                }
            }
        }
        if let Some(changes) = delta.pointer("/routes/config").and_then(J::as_array) {
            let config = root
                .entry("routes")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .map(|r| r.entry("config").or_insert_with(|| json!([])));
            if let Some(J::Array(routes)) = config {
                for r in changes {
                    let mut plain = r.clone();
                    let absent = plain
                        .as_object_mut()
                        .and_then(|o| o.shift_remove("state"))
                        .is_some_and(|s| s == "absent");
                    if absent {
                        routes.retain(|x| x != &plain);
                    } else if !routes.contains(&plain) {
                        routes.push(plain);
                    }
                }
            }
        }
        if let Some(dns) = delta.get("dns-resolver") {
            root.insert("dns-resolver".into(), dns.clone());
        }
        out
    }

    /// `b` merged into `a`: mappings key by key, anything else replaced.
    fn merge(a: &mut J, b: &J) {
        match (a, b) {
            (J::Object(a), J::Object(b)) => {
                for (k, v) in b {
                    match a.get_mut(k) {
                        Some(slot) => merge(slot, v),
                        None => {
                            a.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            (a, b) => *a = b.clone(),
        }
    }

    /// One worker: a bond of two NICs, VLAN 110 on it with the machine
    /// address and the default route; `bond` and `extra` go into the
    /// bond's entry and after it.
    fn inventory(bond: &str, extra: &str) -> Inventory {
        let text = format!(
            "nodenet: v1
cluster:
  name: c
  baseDomain: example.com
  machineNetworks: [10.0.0.0/24]
  brEx: none
hosts:
- name: w0
  role: worker
  nics: {{eno1: '52:54:00:00:00:01', eno2: '52:54:00:00:00:02'}}
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up}}
    - {{name: eno2, type: ethernet, state: up}}
    - name: bond0
      type: bond
      state: up
{bond}      ipv4: {{enabled: false}}
      ipv6: {{enabled: false}}
      link-aggregation: {{mode: 802.3ad, port: [eno1, eno2]}}
    - name: bond0.110
      type: vlan
      state: up
      vlan: {{base-iface: bond0, id: 110}}
      ipv4: {{enabled: true, address: [{{ip: 10.0.0.10, prefix-length: 24}}]}}
      ipv6: {{enabled: false}}
{extra}    routes:
      config:
      - {{destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: bond0.110}}
"
        );
        crate::load_clean(text)
    }

    const VLAN_120: &str = "    - name: bond0.120
      type: vlan
      state: up
      mtu: 9000
      vlan: {base-iface: bond0, id: 120}
      ipv4: {enabled: false}
      ipv6: {enabled: false}
";

    /// `inv` with w0's state replaced.
    fn with_state(inv: &Inventory, state: &J) -> Inventory {
        let mut inv = inv.clone();
        inv.hosts[0].network = Some(Node::from_json(state, Default::default()));
        inv
    }

    fn errors(inv: &Inventory) -> Vec<String> {
        nodenet_check::check(inv, Vec::new())
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{}: {}", d.code.as_str(), d.message))
            .collect()
    }

    /// Each wave's policies applied in turn to the old state: the state
    /// after every wave checks clean, and the last is the new one.
    fn cumulative_states_check_clean(old: &Inventory, new: &Inventory, waves: usize) {
        let plan = crate::plan(old, new).unwrap();
        let rollout = rollout(&plan, new);
        assert_eq!(
            rollout.policies.iter().map(|p| p.wave).max(),
            Some(waves),
            "{:?}",
            rollout.policies
        );
        let mut state = old.hosts[0].network.as_ref().unwrap().to_json();
        for wave in 1..=waves {
            for p in rollout.policies.iter().filter(|p| p.wave == wave) {
                state = apply_delta(&state, &p.state);
            }
            let errors = errors(&with_state(old, &state));
            assert!(errors.is_empty(), "after wave {wave}: {errors:?}");
        }
        let d =
            nodenet_import::diff::diff(&new.hosts[0].network.as_ref().unwrap().to_json(), &state)
                .unwrap();
        assert!(d.equal, "{d:?}");
    }

    #[test]
    fn a_vlan_above_its_bonds_raised_mtu_goes_in_the_wave_after_it() {
        let old = inventory("", "");
        let new = inventory("      mtu: 9000\n", VLAN_120);
        let plan = crate::plan(&old, &new).unwrap();
        let c = &plan.changes[0];
        // The VLAN shares bond0's ports with VLAN 110 and the machine
        // network: not additive.
        let vlan = c
            .reasons
            .iter()
            .find(|r| r.what.contains("adds `bond0.120`"))
            .unwrap();
        assert_eq!(vlan.risk, Risk::Modifying, "{}", vlan.what);
        assert!(vlan.what.contains("on `bond0`"), "{}", vlan.what);
        let rollout = rollout(&plan, &new);
        let placed: Vec<(usize, Risk, &str)> = rollout
            .policies
            .iter()
            .map(|p| (p.wave, p.risk, p.file.as_str()))
            .collect();
        assert_eq!(
            placed,
            vec![
                (1, Risk::Disruptive, "nncp/wave-1/disruptive-worker.yaml"),
                (2, Risk::Modifying, "nncp/wave-2/modifying-worker.yaml"),
            ]
        );
        // ROLLOUT.md says the order: wave 1's file, then wave 2's.
        let steps = rollout.steps();
        let first = steps.find("nncp/wave-1/disruptive-worker.yaml").unwrap();
        let second = steps.find("nncp/wave-2/modifying-worker.yaml").unwrap();
        assert!(first < second, "{steps}");
        assert!(steps.contains("\n1. disruptive change, wave 1"), "{steps}");
        // Wave 2 alone on the old state is what the kernel refuses, and
        // check says so.
        let state = apply_delta(
            &old.hosts[0].network.as_ref().unwrap().to_json(),
            &rollout.policies[1].state,
        );
        let errors = errors(&with_state(&old, &state));
        assert!(
            errors.iter().any(|e| e.starts_with("mtu-exceeds-parent")),
            "{errors:?}"
        );
        cumulative_states_check_clean(&old, &new, 2);
    }

    #[test]
    fn a_bonds_mtu_lowered_goes_after_its_vlans() {
        let old = inventory("      mtu: 9000\n", VLAN_120);
        let new = inventory(
            "      mtu: 1500\n",
            &VLAN_120.replace("mtu: 9000", "mtu: 1500"),
        );
        cumulative_states_check_clean(&old, &new, 2);
        let plan = crate::plan(&old, &new).unwrap();
        let rollout = rollout(&plan, &new);
        let bond_wave = rollout
            .policies
            .iter()
            .find(|p| p.state.to_string().contains("\"bond0\""))
            .unwrap()
            .wave;
        assert_eq!(bond_wave, 2);
    }

    #[test]
    fn independent_changes_are_one_wave_in_the_plain_layout() {
        let old = inventory("", "");
        let new = inventory("      mtu: 9000\n", "");
        let plan = crate::plan(&old, &new).unwrap();
        let rollout = rollout(&plan, &new);
        assert_eq!(rollout.policies.len(), 1);
        assert_eq!(rollout.policies[0].file, "nncp/disruptive-worker.yaml");
        assert_eq!(rollout.policies[0].name, "nodenet-plan-disruptive-worker");
    }

    /// Three masters whose changes differ (each its own address): one
    /// policy per master, each one node at a time and in a file (so a
    /// step) of its own; a modifying change on the masters too.
    #[test]
    fn masters_change_one_at_a_time_each_in_a_step_of_its_own() {
        let masters = |third_octet: u8, extra: &str| {
            let hosts: String = (0..3)
                .map(|i| {
                    format!(
                        "- name: m{i}
  role: master
  network:
    interfaces:
    - name: eno1
      type: ethernet
      state: up
      ipv4: {{enabled: true, address: [{{ip: 10.0.{third_octet}.1{i}, prefix-length: 16}}]}}
{extra}"
                    )
                })
                .collect();
            crate::load_clean(format!(
                "nodenet: v1\ncluster: {{name: c, baseDomain: example.com, machineNetworks: [10.0.0.0/16], brEx: none}}\nhosts:\n{hosts}"
            ))
        };
        let storage = "    - {name: eno2, type: ethernet, state: up, mtu: 9000}\n";
        let old = masters(0, "");
        let new = masters(1, storage);
        let plan = crate::plan(&old, &new).unwrap();
        let rollout = rollout(&plan, &new);
        let disruptive: Vec<&PlannedPolicy> = rollout
            .policies
            .iter()
            .filter(|p| p.risk == Risk::Disruptive)
            .collect();
        assert_eq!(disruptive.len(), 3, "{:?}", rollout.policies);
        let files: BTreeSet<&str> = disruptive.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(
            files,
            BTreeSet::from([
                "nncp/disruptive-master-m0.yaml",
                "nncp/disruptive-master-m1.yaml",
                "nncp/disruptive-master-m2.yaml"
            ])
        );
        // The same new NIC on every master: one policy, one at a time all
        // the same (kubernetes-nmstate's 50 % would be two of three).
        let shared: Vec<&PlannedPolicy> = rollout
            .policies
            .iter()
            .filter(|p| p.risk != Risk::Disruptive)
            .collect();
        assert_eq!(shared.len(), 1, "{:?}", rollout.policies);
        assert!(rollout
            .policies
            .iter()
            .all(|p| p.max_unavailable == json!(1)));
        let steps = rollout.steps();
        assert_eq!(steps.matches("oc apply -f nncp/").count(), 4, "{steps}");
    }
}
