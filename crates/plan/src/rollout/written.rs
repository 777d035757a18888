//! A rollout as it is handed over: its identity, the files (policies,
//! MachineConfigs, ROLLOUT.md), the steps in order, and its text.

use super::*;

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
        self.files_with(new, None)
    }

    /// [`Rollout::files`], with `openshift/` as
    /// `nodenet_render::openshift::openshift_files` made it for `new`
    /// already (`check`'s findings make it), when it was.
    pub fn files_with(&self, new: &Inventory, made: Option<Vec<OutFile>>) -> Vec<OutFile> {
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
            let files = made.unwrap_or_else(|| {
                nodenet_render::openshift::openshift_files(
                    new,
                    &nodenet_render::shaped::HostShapes::of_inventory(new),
                )
                .0
            });
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
    pub(super) fn machine_config_steps(&self, openshift: &[&str], s: &mut String) -> usize {
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
        if !self.policies.is_empty() {
            self.policy_steps_text(&mut s);
        }
        // Said whether or not anything else rolls out: a plan whose only
        // change is one of these still says it does not carry it.
        for (iface, hosts) in self.left_by_interface() {
            s.push_str(&format!(
                "\nNot carried by any step: {}: {iface} (the interface configure-ovs.sh puts under br-ex).\n",
                crate::first_and_more(&hosts, "host")
            ));
        }
        s
    }

    /// kubernetes-nmstate's part of `ROLLOUT.md`: its steps in order, then
    /// the earlier plans' policies deleted.
    fn policy_steps_text(&self, s: &mut String) {
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
    }

    /// [`Rollout::left_to_configure_ovs`] as it is said: per interface
    /// (in the order first met), the hosts it is left on. A fleet-wide
    /// change is one line, not one per host.
    fn left_by_interface(&self) -> Vec<(&str, Vec<&str>)> {
        let mut by_iface: Vec<(&str, Vec<&str>)> = Vec::new();
        for left in &self.left_to_configure_ovs {
            match by_iface.iter_mut().find(|(i, _)| *i == left.iface) {
                Some((_, hosts)) => hosts.push(&left.host),
                None => by_iface.push((&left.iface, vec![&left.host])),
            }
        }
        by_iface
    }

    /// The human form.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        for (role, n) in &self.machine_configs {
            s.push_str(&format!(
                "  MachineConfigs of the {role} pool(s): {n} host file(s) change; with the node agent, every {role} node restarts nodenet-apply.service in turn (the pool's maxUnavailable), only those {n} change, a rolled-back node is degraded and stops the pool\n"
            ));
        }
        for (iface, hosts) in self.left_by_interface() {
            s.push_str(&format!(
                "  not carried: {}: {iface} is the interface configure-ovs.sh puts under br-ex; a day-2 change to it would undo br-ex (reaches the node with new day-1 keyfiles and a reboot, or with `cluster.brEx: derive`)\n",
                crate::first_and_more(&hosts, "host")
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
