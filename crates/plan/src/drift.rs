//! What the nodes run against what the inventory in place says: the
//! cluster's own truth (kubernetes-nmstate's NodeNetworkStates) read beside
//! OLD, so that a change made by hand on a node is seen apart from the
//! change NEW makes.

use std::collections::HashMap;

use rayon::prelude::*;
use serde::Serialize;

use nodenet_import::diff::{Actual, Diff, DiffError};
use nodenet_model::load::node_network_state::RunningNode;
use nodenet_model::{Code, Diagnostic, Host, Inventory, Scope};

/// One node that runs otherwise than OLD says.
#[derive(Debug, Serialize)]
pub struct Drifted {
    pub host: String,
    /// Its name in Kubernetes (the NodeNetworkState's).
    pub node: String,
    /// Per interface, route and name server: `desired` is what OLD says,
    /// `actual` what the node reports.
    pub network: Diff,
}

#[derive(Debug, Default, Serialize)]
pub struct Drift {
    /// Nodes whose state OLD describes otherwise.
    pub drifted: Vec<Drifted>,
    /// Nodes reported as OLD says.
    pub as_described: usize,
    /// Hosts of OLD no NodeNetworkState reports (not installed yet, or
    /// not in the export).
    pub unreported: Vec<String>,
}

impl Drift {
    pub fn is_empty(&self) -> bool {
        self.drifted.is_empty()
    }
}

/// Each reported node against its host in `old`. A node no host of `old`
/// is (by its Kubernetes name, short name or host name) is an error at
/// its `metadata.name`: the export is of another cluster, or the
/// inventory lacks a node the cluster runs.
pub fn drift(old: &Inventory, running: &[RunningNode]) -> Result<Drift, Vec<Diagnostic>> {
    let hosts: Vec<&Host> = old
        .hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .collect();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for (i, h) in hosts.iter().enumerate() {
        for name in [
            h.node_name(&old.cluster),
            h.short_name().to_string(),
            h.name.value.clone(),
        ] {
            by_name.entry(name).or_insert(i);
        }
    }
    let mut errors = Vec::new();
    let mut pairs: Vec<(usize, &RunningNode)> = Vec::new();
    for node in running {
        match by_name.get(&node.name.value) {
            Some(&i) => pairs.push((i, node)),
            None => errors.push(
                Diagnostic::error(
                    Code::NodeUnknown,
                    format!(
                        "node `{}` reports its state, but no host of the inventory in place is that node",
                        node.name.value
                    ),
                )
                .at(node.name.span)
                .host(&node.name.value)
                .help("give OLD the inventory the cluster was rolled out from (every node it runs), or leave this node's NodeNetworkState out"),
            ),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let compared: Vec<Result<Option<Drifted>, (String, DiffError)>> = pairs
        .par_iter()
        .map(|&(i, node)| {
            let host = hosts[i];
            // What a day-2 engine holds the node to: on an OpenShift node
            // whose br-ex configure-ovs makes, without the uplink it
            // moved under br-ex (the node runs that as br-ex's port).
            let Some(state) = nodenet_check::br_ex::plan(host, &old.cluster)
                .ok()
                .and_then(|plan| nodenet_check::br_ex::day2_state(host, &old.cluster, &plan))
                .or_else(|| host.network.as_ref().map(|n| n.to_json()))
            else {
                return Ok(None);
            };
            let d = nodenet_import::diff::diff_with(&state, &node.state, Actual::Running)
                .map_err(|e| (host.name.value.clone(), e))?;
            Ok((!d.equal).then(|| Drifted {
                host: host.name.value.clone(),
                node: node.name.value.clone(),
                network: d,
            }))
        })
        .collect();
    let mut out = Drift::default();
    for c in compared {
        match c {
            Ok(Some(d)) => out.drifted.push(d),
            Ok(None) => out.as_described += 1,
            Err((host, e)) => {
                return Err(vec![Diagnostic::error(
                    Code::NmstateError,
                    format!("the reported state of `{host}` cannot be compared: {e}"),
                )
                .host(host)])
            }
        }
    }
    let reported: std::collections::HashSet<usize> = pairs.iter().map(|(i, _)| *i).collect();
    out.unreported = (0..hosts.len())
        .filter(|i| !reported.contains(i))
        .map(|i| hosts[i].name.value.clone())
        .collect();
    Ok(out)
}

/// The human form: per drifted node, what OLD says and what runs.
pub fn render_text(d: &Drift) -> String {
    let mut s = String::new();
    for n in &d.drifted {
        s.push_str(&format!(
            "! {} (node {}) runs otherwise than the inventory in place says:\n",
            n.host, n.node
        ));
        for line in nodenet_import::diff::render_text(&n.network).lines() {
            s.push_str(&format!("    {line}\n"));
        }
    }
    if !d.drifted.is_empty() {
        s.push_str("  (each line: what the node runs -> what the inventory in place says; `+` the node lacks it, `-` the node has it and should not)\n");
    }
    s
}

#[cfg(test)]
mod tests;
