//! NodeNetworkConfigurationPolicies for kubernetes-nmstate: a host's
//! state split into what the installer applies and what the policy
//! carries, and how many nodes a policy changes at once.

use super::*;
/// kubernetes-nmstate's default `maxUnavailable`.
pub const DEFAULT_MAX_UNAVAILABLE: &str = "50%";

pub use nodenet_check::traffic::{is_control_plane, nodes_at_once};

/// A policy's `maxUnavailable`: one node at a time for what carries the
/// cluster's own traffic and for every policy on control-plane nodes
/// (kubernetes-nmstate's 50 % takes two of three masters at once),
/// kubernetes-nmstate's default for the rest.
pub fn max_unavailable(pool: &str, carries_cluster_traffic: bool) -> J {
    if carries_cluster_traffic || is_control_plane(pool) {
        json!(1)
    } else {
        json!(DEFAULT_MAX_UNAVAILABLE)
    }
}

/// One NodeNetworkConfigurationPolicy: a name, the nodes it selects, how
/// many of them may be unavailable at once, and its state.
pub struct Policy {
    pub name: String,
    /// `metadata.labels` (none for render's own policies).
    pub labels: BTreeMap<String, String>,
    pub selector: BTreeMap<String, String>,
    pub max_unavailable: J,
    pub state: J,
}

impl Policy {
    /// The policy as a YAML document. Takes the policy: its state is moved
    /// into the document, not copied (a per-node policy for each of
    /// 10,000 hosts).
    pub fn into_yaml(self) -> String {
        let mut doc = kube::Object {
            api_version: "nmstate.io/v1",
            kind: "NodeNetworkConfigurationPolicy",
            metadata: kube::Metadata {
                name: &self.name,
                namespace: None,
                labels: Some(&self.labels).filter(|l| !l.is_empty()),
            },
            body: kube::SpecBody {
                spec: kube::NncpSpec {
                    node_selector: &self.selector,
                    max_unavailable: &self.max_unavailable,
                    desired_state: J::Null,
                },
            },
        }
        .to_json();
        // Moved in after: serialising it with the envelope would copy it.
        doc["spec"]["desiredState"] = self.state;
        yaml(&doc)
    }

    /// The policy as a YAML document with `state`, the state's YAML text
    /// (made once per shape of hosts), as its `desiredState`; `self.state`
    /// is not read.
    fn yaml_with(self, state: &str) -> String {
        if is_empty_state(state) {
            // An empty state is a flow mapping on the key's own line.
            return Policy {
                state: J::Object(Map::new()),
                ..self
            }
            .into_yaml();
        }
        let envelope = Policy {
            state: json!(TOKEN),
            ..self
        }
        .into_yaml();
        embed(&envelope, state, Embed::Mapping)
    }
}

/// Whether a state's YAML text is the empty state (`{}`).
fn is_empty_state(text: &str) -> bool {
    text.trim_end() == "{}"
}

/// A host's day-2 state (`nodenet_check::br_ex::day2_state`: what
/// configure-ovs owns left out, br-ex's masquerade addresses kept) split
/// in two: what carries the cluster's own traffic
/// (`nodenet_check::traffic`) with the routes and name servers, and the
/// rest. A policy never names an interface another one owns.
pub fn split_state(inv: &Inventory, host: &Host) -> Option<(J, J)> {
    let node = host.network.as_ref()?;
    let plan = nodenet_check::br_ex::plan(host, &inv.cluster).ok()?;
    let state = nodenet_check::br_ex::day2_state(host, &inv.cluster, &plan)?;
    let derived;
    let carried = match &plan {
        // The derived br-ex and its uplink carry what the intent's uplink did.
        nodenet_check::br_ex::BrExPlan::Derived { .. } => {
            derived = nodenet_model::yaml::Node::from_json(&state, node.span);
            &derived
        }
        _ => node,
    };
    let carriers = nodenet_check::traffic::cluster_traffic(host, &inv.cluster, carried);
    let J::Object(map) = state else {
        return None;
    };
    let mut cluster = Map::new();
    let mut rest = Map::new();
    for (k, v) in map {
        match (k.as_str(), v) {
            ("interfaces", J::Array(ifaces)) => {
                let (c, r): (Vec<J>, Vec<J>) = ifaces.into_iter().partition(|i| {
                    i.get("name")
                        .and_then(J::as_str)
                        .is_some_and(|n| carriers.contains_key(n))
                });
                if !c.is_empty() {
                    cluster.insert(k.clone(), J::Array(c));
                }
                if !r.is_empty() {
                    rest.insert(k, J::Array(r));
                }
            }
            (_, v) => {
                cluster.insert(k, v);
            }
        }
    }
    Some((J::Object(cluster), J::Object(rest)))
}

/// NodeNetworkConfigurationPolicies per role (`nncp/nodenet-<role>.yaml`):
/// the part of the state that carries cluster traffic goes out one node at
/// a time (`maxUnavailable: 1`; with `cluster.failureDomain`, one policy
/// per value of that label, each one node at a time), the rest with
/// kubernetes-nmstate's default, but on control-plane nodes, where every
/// policy goes one node at a time. A part every host of the role shares is
/// one policy for the role, else one policy per node, selected by its
/// Kubernetes node name.
pub fn nncps(inv: &Inventory, shapes: &crate::shaped::HostShapes, out: &mut Vec<OutFile>) {
    use rayon::prelude::*;
    // Each host's state is split and its parts emitted once per shape.
    let parts = shapes.make(
        inv.hosts.len(),
        &|i| match split_state(inv, &inv.hosts[i]) {
            Some((c, r)) => [Some(yaml(&c)), Some(yaml(&r))],
            None => [None, None],
        },
    );
    let mut roles: BTreeMap<&'static str, Vec<(&Host, [String; 2])>> = BTreeMap::new();
    for (h, parts) in inv.hosts.iter().zip(parts) {
        if let [Some(c), Some(r)] = parts {
            roles
                .entry(h.role.value.pool())
                .or_default()
                .push((h, [c, r]));
        }
    }
    for (role, mut hosts) in roles {
        let mut policies: Vec<(Option<String>, Policy, String)> = Vec::new();
        let role_label = format!("node-role.kubernetes.io/{role}");
        for (part, cluster_part) in [(0, true), (1, false)] {
            let suffix = if cluster_part { "-cluster-network" } else { "" };
            // Each part is read once: moved out, not copied.
            let states: Vec<String> = hosts
                .iter_mut()
                .map(|(_, parts)| std::mem::take(&mut parts[part]))
                .collect();
            if states.iter().all(|s| is_empty_state(s)) {
                continue;
            }
            let unavailable = max_unavailable(role, cluster_part);
            let policy = |name: String, selector: BTreeMap<String, String>| Policy {
                name,
                labels: BTreeMap::new(),
                selector,
                max_unavailable: unavailable.clone(),
                state: J::Null,
            };
            if states.windows(2).all(|w| w[0] == w[1]) {
                // One state for the role; the part that carries cluster
                // traffic one policy per failure domain when every host
                // has the domain label.
                let domains: Option<std::collections::BTreeSet<String>> = inv
                    .cluster
                    .failure_domain
                    .as_ref()
                    .filter(|_| cluster_part)
                    .and_then(|d| {
                        hosts
                            .iter()
                            .map(|(h, _)| h.labels.get(&d.value).cloned())
                            .collect()
                    });
                let base = BTreeMap::from([(role_label.clone(), String::new())]);
                let state = states.into_iter().next().unwrap_or_default();
                match (domains, &inv.cluster.failure_domain) {
                    (Some(values), Some(key)) => {
                        for value in values {
                            let mut selector = base.clone();
                            selector.insert(key.value.clone(), value.clone());
                            let name = format!("nodenet-{role}{suffix}-{}", dns_label(&value));
                            policies.push((None, policy(name, selector), state.clone()));
                        }
                    }
                    _ => policies.push((
                        None,
                        policy(format!("nodenet-{role}{suffix}"), base),
                        state,
                    )),
                }
            } else {
                for ((h, _), state) in hosts.iter().zip(states) {
                    // A control-plane node's own policies in a file of their
                    // own: applied together, they change together.
                    let own = is_control_plane(role).then(|| dns_label(h.short_name()));
                    let selector = BTreeMap::from([
                        (role_label.clone(), String::new()),
                        (
                            "kubernetes.io/hostname".to_string(),
                            h.node_name(&inv.cluster),
                        ),
                    ]);
                    let name = format!("nodenet-{}{suffix}", dns_label(h.short_name()));
                    policies.push((own, policy(name, selector), state));
                }
            }
        }
        // Nothing of the role's states left for a policy (all of it is
        // configure-ovs's, under br-ex): no file, not an empty one.
        let mut files: BTreeMap<String, Vec<(Policy, String)>> = BTreeMap::new();
        for (own, policy, state) in policies {
            let file = match own {
                Some(host) => format!("nncp/nodenet-{role}-{host}.yaml"),
                None => format!("nncp/nodenet-{role}.yaml"),
            };
            files.entry(file).or_default().push((policy, state));
        }
        for (file, policies) in files {
            let text: Vec<String> = policies
                .into_par_iter()
                .map(|(policy, state)| policy.yaml_with(&state))
                .collect();
            out.push(OutFile::new(file, text.join("---\n"), 0o644));
        }
    }
}
