//! kubernetes-nmstate's NodeNetworkConfigurationPolicy: `spec.desiredState`
//! is a partial state applied to the nodes `spec.nodeSelector` picks.
//! Values taken from `spec.capture` are read on the node, so the parts of
//! the state that use them cannot be checked here.

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::{Node, Value};

const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
const ROLE_PREFIX: &str = "node-role.kubernetes.io/";

pub(crate) fn load(root: &Node, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut d = Decoder::new(diags);
    let mut inv = Inventory::default();
    let Some(policy) = super::object_name(&mut d, root, "the NodeNetworkConfigurationPolicy")
    else {
        return inv;
    };
    let Some(spec) = root.get("spec") else {
        d.push(Diagnostic::error(Code::MissingField, "the policy has no `spec`").at(root.span));
        return inv;
    };
    let Some(state) = spec.get("desiredState").filter(|s| !s.is_null()) else {
        d.push(
            Diagnostic::error(Code::MissingField, "the policy has no `spec.desiredState`")
                .at(spec.span),
        );
        return inv;
    };
    let selector = spec
        .get("nodeSelector")
        .and_then(Node::as_map)
        .unwrap_or_default();
    let label = |k: &str| {
        selector
            .iter()
            .find(|(key, _)| key.as_str() == Some(k))
            .map(|(_, v)| v)
    };
    let role = selector.iter().find_map(|(k, v)| {
        let r = k.as_str()?.strip_prefix(ROLE_PREFIX)?;
        Some(Located::new(Role::parse(r)?, v.span))
    });
    // One node named by its hostname label is that host; any other
    // selector reaches a set of nodes, and the entry is the policy.
    let (name, applies_to) = match label(HOSTNAME_LABEL)
        .and_then(|v| v.scalar_text().map(|s| Located::new(s, v.span)))
    {
        Some(host) => (host, None),
        None => {
            let what = if selector.is_empty() {
                "every node".to_string()
            } else {
                format!(
                    "nodes with {}",
                    selector
                        .iter()
                        .map(|(k, v)| match v.scalar_text().filter(|s| !s.is_empty()) {
                            Some(v) => format!("{k}={v}"),
                            None => k.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            (
                Located::new(format!("nncp/{}", policy.value), policy.span),
                Some(what),
            )
        }
    };
    d.host = Some(name.value.clone());
    let mut network = state.clone();
    let captured = strip_captured(&mut network);
    let capture = spec.entry("capture");
    if !captured.is_empty() || capture.is_some() {
        let at = capture.map(|(k, _)| k.span).unwrap_or(state.span);
        let what = if captured.is_empty() {
            "nothing in desiredState uses it".to_string()
        } else {
            format!("not checked here: {}", captured.join(", "))
        };
        d.push(
            Diagnostic::warning(
                Code::CaptureOnNode,
                format!(
                    "`capture` reads each node's current state when the policy is applied; {what}"
                ),
            )
            .at(at),
        );
    }
    let mut host = Host::new(name, InputKind::Nncp);
    if let Some(role) = role {
        host.role = role;
    }
    host.applies_to = applies_to;
    host.policy = Some(PolicyRef {
        name: policy.value.clone(),
        selector: selector
            .iter()
            .map(|(k, v)| (k.to_string(), v.scalar_text().unwrap_or_default()))
            .collect(),
        span: spec
            .get("nodeSelector")
            .map(|n| n.span)
            .unwrap_or(spec.span),
        max_unavailable: spec
            .get("maxUnavailable")
            .map(|m| Located::new(m.to_json(), m.span)),
    });
    host.network = Some(network);
    inv.hosts.push(host);
    inv
}

/// Removes the interfaces, routes and route rules that take a value from
/// `{{ capture.* }}` (they are resolved on the node); returns what it
/// removed, named for the warning.
fn strip_captured(state: &mut Node) -> Vec<String> {
    let mut removed = Vec::new();
    let Value::Map(sections) = &mut state.value else {
        return removed;
    };
    for (key, section) in sections.iter_mut() {
        let key = key.as_str().unwrap_or_default().to_string();
        let list = match key.as_str() {
            "interfaces" => Some(&mut *section),
            "routes" | "route-rules" => section.get_mut("config"),
            _ => None,
        };
        match list {
            Some(Node {
                value: Value::Seq(items),
                ..
            }) => items.retain(|item| {
                if !uses_capture(item) {
                    return true;
                }
                removed.push(match item.get("name").and_then(Node::scalar_text) {
                    Some(n) if !n.contains("{{") => format!("interface `{n}`"),
                    _ => format!(
                        "a {} entry at line {}",
                        key.trim_end_matches('s'),
                        item.span.line
                    ),
                });
                false
            }),
            _ => {
                if uses_capture(section) {
                    removed.push(format!("`{key}`"));
                    section.value = Value::Null;
                }
            }
        }
    }
    sections.retain(|(_, v)| !v.is_null());
    removed
}

fn uses_capture(node: &Node) -> bool {
    let mut refers = |n: &Node| n.as_str().is_some_and(|s| s.contains("{{"));
    node.find(&mut refers).is_some()
}
