//! kubernetes-nmstate's policies across the fleet: two that can meet on a
//! node must not name one interface, and none may change two
//! control-plane nodes at once.

use std::collections::HashMap;

use nodenet_model::{Code, Diagnostic, Host, Inventory, Scope, Span};

use crate::network::Network;

/// A policy that kubernetes-nmstate would enact on more than one
/// control-plane node at once, counted over the inventory's hosts it
/// selects (its `maxUnavailable` scaled to them, as kubernetes-nmstate
/// does): two masters changing together can cost etcd its quorum. A
/// warning: the policy is valid, its pace is the risk (`plan` writes
/// every policy on masters with `maxUnavailable: 1`).
fn check_control_plane_at_once(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let nodes: Vec<(&Host, std::collections::BTreeMap<String, String>)> = inv
        .hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .map(|h| (h, h.node_labels(&inv.cluster)))
        .collect();
    for h in &inv.hosts {
        let Some(p) = &h.policy else { continue };
        let selected: Vec<&Host> = nodes
            .iter()
            .filter(|(_, labels)| p.selector.iter().all(|(k, v)| labels.get(k) == Some(v)))
            .map(|(h, _)| *h)
            .collect();
        let masters = selected
            .iter()
            .filter(|h| crate::traffic::is_control_plane(h.role.value.pool()))
            .count();
        let default = serde_json::json!("50%");
        let value = p
            .max_unavailable
            .as_ref()
            .map(|m| &m.value)
            .unwrap_or(&default);
        let Some(at_once) = crate::traffic::nodes_at_once(value, selected.len()) else {
            continue;
        };
        if masters < 2 || at_once < 2 {
            continue;
        }
        let written = match value {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        out.push(
            Diagnostic::warning(
                Code::ControlPlaneAtOnce,
                format!(
                    "policy `{}` selects {masters} control-plane node(s) among {} node(s), and kubernetes-nmstate changes {at_once} of them at once (maxUnavailable {written}{}, a percentage rounded up): two masters changing together can cost etcd its quorum",
                    p.name,
                    selected.len(),
                    if p.max_unavailable.is_none() { ", its default" } else { "" }
                ),
            )
            .at(p.max_unavailable.as_ref().map(|m| m.span).unwrap_or(p.span))
            .host(h.name.value.clone())
            .help("set `maxUnavailable: 1` on a policy that selects masters (or give the masters a policy of their own with it)"),
        );
    }
}

/// Policies that can select one node must not both name an interface:
/// kubernetes-nmstate would apply both, each undoing the other. Where the
/// inputs describe hosts, "can select" is tested against their labels;
/// else two selectors without a contradicting label may meet.
pub(super) fn check_policies(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    check_control_plane_at_once(inv, out);
    let policies: Vec<&Host> = inv.hosts.iter().filter(|h| h.policy.is_some()).collect();
    if policies.len() < 2 {
        return;
    }
    let nodes: Vec<std::collections::BTreeMap<String, String>> = inv
        .hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .map(|h| h.node_labels(&inv.cluster))
        .collect();
    let selects = |sel: &std::collections::BTreeMap<String, String>,
                   node: &std::collections::BTreeMap<String, String>| {
        sel.iter().all(|(k, v)| node.get(k) == Some(v))
    };
    let may_meet = |a: &Host, b: &Host| {
        let (sa, sb) = (
            &a.policy.as_ref().expect("a policy").selector,
            &b.policy.as_ref().expect("a policy").selector,
        );
        if nodes.is_empty() {
            sa.iter().all(|(k, v)| sb.get(k).is_none_or(|w| w == v))
        } else {
            nodes.iter().any(|n| selects(sa, n) && selects(sb, n))
        }
    };
    // Policies for one node by name meet only each other and the wide ones.
    let hostname = |h: &Host| {
        h.policy
            .as_ref()
            .and_then(|p| p.selector.get("kubernetes.io/hostname").cloned())
    };
    let mut by_node: HashMap<Option<String>, Vec<&Host>> = HashMap::new();
    for p in &policies {
        by_node.entry(hostname(p)).or_default().push(p);
    }
    let wide = by_node.get(&None).cloned().unwrap_or_default();
    let mut groups: Vec<Vec<&Host>> = by_node
        .iter()
        .filter(|(k, _)| k.is_some())
        .map(|(_, v)| v.iter().chain(&wide).copied().collect())
        .collect();
    groups.push(wide.clone());
    let mut reported = std::collections::HashSet::new();
    for group in groups {
        for (i, a) in group.iter().enumerate() {
            for b in &group[i + 1..] {
                let (pa, pb) = (
                    a.policy.as_ref().expect("a policy"),
                    b.policy.as_ref().expect("a policy"),
                );
                // One object given twice (a copy in another directory).
                if pa.name == pb.name || !reported.insert((a.span, b.span)) || !may_meet(a, b) {
                    continue;
                }
                let named = |h: &Host| -> Vec<(String, Span)> {
                    Network::read(h.network.as_ref().expect("a policy has a state"))
                        .ifaces
                        .iter()
                        .filter_map(|i| i.name_node.map(|n| (i.name.clone(), n.span)))
                        .collect()
                };
                let theirs = named(a);
                for (name, span) in named(b) {
                    if let Some((_, first)) = theirs.iter().find(|(n, _)| *n == name) {
                        out.push(
                            Diagnostic::error(
                                Code::PolicyOverlap,
                                format!(
                                    "`{name}` is named by this policy and by `{}`, which can select the same node",
                                    pa.name
                                ),
                            )
                            .at(span)
                            .host(b.name.value.clone())
                            .related(*first, "also named here")
                            .help("give each interface to one policy (split the states, or make the node selectors exclude each other)"),
                        );
                    }
                }
            }
        }
    }
}
