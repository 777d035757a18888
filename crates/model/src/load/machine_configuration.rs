//! The Machine Config Operator's MachineConfiguration (`operator.openshift.io/
//! v1`): the units its node disruption policy restarts or reloads, so that
//! a policy naming a unit no MachineConfig provides is found before the
//! MCO restarts a unit that does not exist and the node goes Degraded.

use crate::diag::Diagnostic;
use crate::inventory::*;
use crate::yaml::Node;

pub(crate) fn load(root: &Node, _diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut inv = Inventory::default();
    let policy = root.get("spec").and_then(|s| s.get("nodeDisruptionPolicy"));
    let lists = ["files", "units"]
        .into_iter()
        .filter_map(|k| policy.and_then(|p| p.get(k)).and_then(Node::as_seq))
        .flatten()
        .chain(policy.and_then(|p| p.get("sshkey")));
    for entry in lists {
        for action in entry
            .get("actions")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            for key in ["restart", "reload"] {
                if let Some(name) = action.get(key).and_then(|r| r.get("serviceName")) {
                    if let Some(text) = name.scalar_text() {
                        inv.disruption_units.push(Located::new(text, name.span));
                    }
                }
            }
        }
    }
    inv
}
