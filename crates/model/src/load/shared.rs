//! What several loaders read alike: NICs from an NMState state, the
//! provisioning mode, fields the inventory owns, an inline BMC, a role, an
//! object's name and labels.

use super::*;

/// Ethernet interfaces that pin `mac-address` in NMState are NICs with a
/// known MAC even when the input lists no NICs (install-config).
pub(super) fn add_nics_from_network(host: &mut Host) {
    let Some(ifaces) = host
        .network
        .as_ref()
        .and_then(|n| n.get("interfaces"))
        .and_then(Node::as_seq)
    else {
        return;
    };
    for iface in ifaces {
        let (Some(name), Some(mac)) = (iface.get("name"), iface.get("mac-address")) else {
            continue;
        };
        let is_eth = iface
            .get("type")
            .and_then(Node::as_str)
            .is_none_or(|t| t == "ethernet");
        let (Some(name_s), Some(mac_s)) = (name.scalar_text(), mac.scalar_text()) else {
            continue;
        };
        if !is_eth || !crate::fields::is_mac(&mac_s) {
            continue;
        }
        if !host.nics.iter().any(|n| n.name.value == name_s) {
            host.nics.push(Nic::new(
                Located::new(name_s, name.span),
                Some(Located::new(mac_s, mac.span)),
            ));
        }
    }
}

pub(super) fn provisioning_mode(d: &mut Decoder, v: &Node) -> Option<Located<ProvisioningNetwork>> {
    let s = v.scalar_text()?;
    let mode = match s.as_str() {
        "Managed" => ProvisioningNetwork::Managed,
        "Unmanaged" => ProvisioningNetwork::Unmanaged,
        "Disabled" => ProvisioningNetwork::Disabled,
        _ => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("provisioning network `{s}` is not Managed, Unmanaged or Disabled"),
                )
                .at(v.span),
            );
            return None;
        }
    };
    Some(Located::new(mode, v.span))
}

/// In `cluster.installConfig` / `cluster.agentConfig` (`what`), a field
/// nodenet writes from the inventory is an error naming where the
/// inventory says it (`owned`: the field's path and that place).
pub(super) fn refuse_owned(d: &mut Decoder, base: &Node, what: &str, owned: &[(&[&str], &str)]) {
    for (path, instead) in owned {
        let found = path.iter().try_fold(base, |n, k| n.get(k));
        if let Some(n) = found {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "`{}` in {what} is written by nodenet from {instead}",
                        path.join(".")
                    ),
                )
                .at(n.span)
                .help(format!("remove it here and set {instead}")),
            );
        }
    }
}

/// A host's BMC as install-config and agent-config write it (address,
/// username, password inline): the password kept as a secret under the
/// credentials `<host>-bmc`. `what` is the key it was under.
pub(super) fn inline_bmc(
    d: &mut Decoder,
    b: &Node,
    what: &str,
    host: &str,
    credentials: &mut std::collections::BTreeMap<String, Located<Credentials>>,
) -> Option<Bmc> {
    let address = d.required_string(b, "address", what)?;
    let cred_name = format!("{host}-bmc");
    if let (Some(user), Some(pw)) = (d.string(b, "username"), d.string(b, "password")) {
        credentials.insert(
            cred_name.clone(),
            Located::new(
                Credentials {
                    username: user.value,
                    password: PasswordSource::Inline(Secret::new(pw.value)),
                },
                b.span,
            ),
        );
    }
    Some(Bmc {
        address,
        credentials: Some(Located::new(cred_name, b.span)),
        disable_certificate_verification: d
            .bool(b, "disableCertificateVerification")
            .unwrap_or(false),
    })
}

pub(super) fn role(d: &mut Decoder, v: Option<&Node>, fallback: Span) -> Located<Role> {
    let Some(v) = v else {
        return Located::new(Role::Unset, fallback);
    };
    let s = v.scalar_text().unwrap_or_default();
    match Role::parse(&s) {
        Some(r) => Located::new(r, v.span),
        None => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("role `{s}` is not master, worker or arbiter"),
                )
                .at(v.span),
            );
            Located::new(Role::Unset, v.span)
        }
    }
}

/// `metadata.name` of a Kubernetes object, located.
pub(super) fn object_name(d: &mut Decoder, root: &Node, what: &str) -> Option<Located<String>> {
    let name = root.get("metadata").and_then(|m| d.string(m, "name"));
    if name.is_none() {
        d.push(
            Diagnostic::error(Code::MissingField, format!("{what} has no `metadata.name`"))
                .at(root.get("metadata").map(|m| m.span).unwrap_or(root.span)),
        );
    }
    name
}

/// A value of `metadata.labels`.
pub(super) fn label<'n>(root: &'n Node, key: &str) -> Option<&'n Node> {
    root.get("metadata")?.get("labels")?.get(key)
}
