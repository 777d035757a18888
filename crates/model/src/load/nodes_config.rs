//! `oc adm node-image create`'s nodes-config.yaml (OpenShift 4.17 and
//! later): the hosts to add to a cluster the agent installer made, each as
//! agent-config.yaml lists one. The node-joiner reads it with Go's
//! `yaml.Unmarshal`, not strictly (openshift/installer@d465fb6e
//! `pkg/asset/agent/joiner/addnodesconfig.go`), and applies agent-config's
//! host rules to its hosts (`AgentHosts`, add-nodes workflow).

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::{Node, Value};

/// The node-joiner's `Config`: its TypeMeta/ObjectMeta and four fields.
const TOP: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "cpuArchitecture",
    "sshKey",
    "bootArtifactsBaseURL",
    "hosts",
];

/// What becomes of a key the node-joiner does not know.
const DROPPED: &str =
    "the node-joiner reads the file with Go's `yaml.Unmarshal`, which drops it without a word";

/// A nodes-config.yaml: hosts to add and nothing of a cluster, by its
/// name (as `oc` finds it, in `--dir`) or by its own fields.
pub(crate) fn looks_like(root: &Node, file_name: &str) -> bool {
    let Some(map) = root.as_map() else {
        return false;
    };
    let hosts = root.get("hosts").and_then(Node::as_seq);
    let host_like = hosts.is_some_and(|h| {
        h.iter().any(|h| {
            ["hostname", "interfaces", "networkConfig"]
                .iter()
                .any(|k| h.get(k).is_some())
        })
    });
    let own = ["cpuArchitecture", "sshKey", "bootArtifactsBaseURL"]
        .iter()
        .any(|k| root.get(k).is_some());
    let only_ours = map
        .iter()
        .all(|(k, _)| k.as_str().is_some_and(|k| TOP.contains(&k)));
    hosts.is_some() && (file_name.starts_with("nodes-config") || only_ours && (own || host_like))
}

pub(crate) fn load(root: &Node, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut d = Decoder::new(diags);
    d.dropped_fields(root, "nodes-config.yaml", TOP, DROPPED);
    if d.seq(root, "hosts").is_empty() {
        d.push(
            Diagnostic::error(
                Code::MissingField,
                "nodes-config.yaml lists no host: the node-joiner refuses it (\"at least one host must be defined\")",
            )
            .at(root.get("hosts").map_or(root.span, |h| h.span)),
        );
    }
    if let Some(key) = root.get("sshKey") {
        let text = key.scalar_text().unwrap_or_default();
        let mut parts = text.split_whitespace();
        let kind = parts.next().unwrap_or("");
        let body = parts.next().unwrap_or("");
        let known =
            kind.starts_with("ssh-") || kind.starts_with("ecdsa-") || kind.starts_with("sk-");
        if !known || body.len() < 16 {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    "`sshKey` is not an SSH public key (`ssh-ed25519 AAAA...`): the node-joiner refuses it",
                )
                .at(key.span),
            );
        }
    }
    // Each host as agent-config.yaml's, less the keys the joiner drops.
    let mut as_agent = Node::new(Value::Map(Vec::new()), root.span);
    if let (Value::Map(m), Some(hosts)) = (&mut as_agent.value, root.entry("hosts")) {
        let mut hosts = (hosts.0.clone(), hosts.1.clone());
        if let Value::Seq(list) = &mut hosts.1.value {
            for h in list.iter_mut() {
                d.dropped_fields(h, "a host", super::agent_config::HOST, DROPPED);
                if let Value::Map(entries) = &mut h.value {
                    entries.retain(|(k, _)| {
                        k.as_str()
                            .is_some_and(|k| super::agent_config::HOST.contains(&k))
                    });
                }
            }
        }
        m.push(hosts);
    }
    let mut inv = super::agent_config::load(&mut as_agent, diags);
    inv.cluster = Cluster::default();
    for h in &mut inv.hosts {
        h.kind = InputKind::NodesConfig;
        // The hosts join a running cluster: workers unless they say.
        if h.role.value == Role::Unset {
            h.role.value = Role::Worker;
        }
    }
    inv
}
