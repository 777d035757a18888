//! kubernetes-nmstate's NodeNetworkState: what a node runs, as nmstate on
//! the node reports it (`oc get nns -o yaml`: one object, or a `List` of
//! them). Not a description to check or render: `plan --running` holds
//! it against the inventory the cluster was rolled out from, to say which
//! node drifted from it.
//!
//! `status.currentState` is `nmstatectl show`: interfaces, `routes`
//! with `config` and `running`, `dns-resolver` with `config` and
//! `running`, and more (`hostname`, `route-rules`, `ovs-db`, …). What
//! NetworkManager is configured with is what a policy or the inventory
//! set: the interfaces, the configured routes and name servers are kept.

use serde_json::{Map, Value as J};

use crate::diag::{Code, Diagnostic};
use crate::inventory::Located;
use crate::yaml::Node;

/// One node's reported state.
#[derive(Clone, Debug)]
pub struct RunningNode {
    /// `metadata.name`: the node's name in Kubernetes.
    pub name: Located<String>,
    /// The configured part of `status.currentState`, as NMState.
    pub state: J,
}

/// Whether a document is a NodeNetworkState (any of nmstate.io's
/// versions: v1alpha1, v1beta1, v1).
pub(crate) fn is_node_network_state(kind: Option<&str>, group: &str) -> bool {
    kind == Some("NodeNetworkState") && group == "nmstate.io"
}

pub(crate) fn load(root: &Node, diags: &mut Vec<Diagnostic>) -> Option<RunningNode> {
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(|n| Some(Located::new(n.scalar_text()?, n.span)));
    let Some(name) = name else {
        diags.push(
            Diagnostic::error(
                Code::MissingField,
                "a NodeNetworkState without `metadata.name`",
            )
            .at(root.span),
        );
        return None;
    };
    let current = root
        .get("status")
        .and_then(|s| s.get("currentState"))
        .filter(|c| c.get("interfaces").and_then(Node::as_seq).is_some());
    let Some(current) = current else {
        diags.push(
            Diagnostic::error(
                Code::MissingField,
                format!(
                    "the NodeNetworkState of `{}` has no `status.currentState.interfaces`: the node has not reported its state (is its nmstate-handler running?), or the export was cut short",
                    name.value
                ),
            )
            .at(root.get("status").map(|s| s.span).unwrap_or(name.span))
            .host(&name.value),
        );
        return None;
    };
    let whole = current.to_json();
    let mut state = Map::new();
    if let Some(ifaces) = whole.get("interfaces") {
        state.insert("interfaces".into(), ifaces.clone());
    }
    for section in ["routes", "dns-resolver"] {
        if let Some(config) = whole.get(section).and_then(|s| s.get("config")) {
            let mut part = Map::new();
            part.insert("config".into(), config.clone());
            state.insert(section.into(), J::Object(part));
        }
    }
    Some(RunningNode {
        name,
        state: J::Object(state),
    })
}

#[cfg(test)]
mod tests;
