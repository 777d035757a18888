//! Metal3's BareMetalHost: the host's BMC (credentials from the Secret it
//! names), boot MAC, and first-boot network from the Secret named by
//! `spec.preprovisioningNetworkDataName` (key `nmstate`).

use base64::Engine;

use crate::diag::{Code, Diagnostic, Embedding};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::Node;

use super::Context;

/// The label openshift-install puts on the BareMetalHosts it writes.
const ROLE_LABEL: &str = "installer.openshift.io/role";

pub(crate) fn load(root: &Node, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut d = Decoder::new(diags);
    let mut inv = Inventory::default();
    let Some(name) = super::object_name(&mut d, root, "the BareMetalHost") else {
        return inv;
    };
    d.host = Some(name.value.clone());
    let namespace = root
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Node::scalar_text)
        .unwrap_or_default();
    let Some(spec) = root.get("spec") else {
        d.push(Diagnostic::error(Code::MissingField, "the BareMetalHost has no `spec`").at(root.span));
        return inv;
    };
    let mut host = Host::new(name.clone(), InputKind::BareMetalHost);
    if let Some(r) = super::label(root, ROLE_LABEL) {
        let role = match r.scalar_text().as_deref() {
            Some("control-plane") => Some(Role::Master),
            Some(other) => Role::parse(other),
            None => None,
        };
        if let Some(role) = role {
            host.role = Located::new(role, r.span);
        }
    }
    host.boot_mac = spec.get("bootMACAddress").and_then(|m| d.mac(m));
    host.boot_mode = d.string(spec, "bootMode");
    host.root_device_hints = spec.get("rootDeviceHints").cloned();
    if let Some(bmc) = spec.get("bmc") {
        if let Some(address) = d.required_string(bmc, "address", "bmc") {
            let credentials = d.string(bmc, "credentialsName").map(|c| {
                if let Some(secret) = ctx.secrets.get(&namespace, &c.value) {
                    let field = |k: &str| secret_value(secret, k);
                    if let (Some(user), Some(pw)) = (field("username"), field("password")) {
                        inv.credentials.insert(
                            c.value.clone(),
                            Located::new(
                                Credentials {
                                    username: String::from_utf8_lossy(&user.0).into_owned(),
                                    password: PasswordSource::Inline(Secret::new(
                                        String::from_utf8_lossy(&pw.0).into_owned(),
                                    )),
                                },
                                c.span,
                            ),
                        );
                    }
                }
                c
            });
            host.bmc = Some(Bmc {
                address,
                credentials,
                disable_certificate_verification: d
                    .bool(bmc, "disableCertificateVerification")
                    .unwrap_or(false),
            });
        }
    }
    if let Some(secret_name) = d.string(spec, "preprovisioningNetworkDataName") {
        match ctx.secrets.get(&namespace, &secret_name.value) {
            None => d.push(
                Diagnostic::warning(
                    Code::MissingField,
                    format!(
                        "Secret `{}` is not among the inputs: the host's network is not checked",
                        secret_name.value
                    ),
                )
                .at(secret_name.span)
                .help("give the file or directory that holds the Secret too"),
            ),
            Some(secret) => match secret_value(secret, "nmstate") {
                None => {
                    let data = secret.get("data").and_then(|s| s.get("nmstate"));
                    d.push(match data {
                        Some(data) => Diagnostic::error(
                            Code::InvalidValue,
                            format!("`data.nmstate` of Secret `{}` is not base64", secret_name.value),
                        )
                        .at(data.span)
                        .help("`data` values are base64; write the NMState as it is under `stringData`"),
                        None => Diagnostic::error(
                            Code::MissingField,
                            format!("Secret `{}` has no `nmstate` key", secret_name.value),
                        )
                        .at(secret.get("metadata").map(|m| m.span).unwrap_or(secret.span))
                        .help("the baremetal-operator reads the host's NMState from the key `nmstate` (stringData or base64 data)"),
                    })
                }
                Some((bytes, node, base64)) => {
                    let label = format!("Secret {} key nmstate", secret_name.value);
                    host.network = if base64 {
                        ctx.parse_embedded(
                            label.clone(),
                            String::from_utf8_lossy(&bytes).into_owned(),
                            Embedding::relocated(node.span, label),
                            &mut d,
                        )
                    } else {
                        ctx.parse_string_value(label, node, &mut d)
                    };
                }
            },
        }
    }
    inv.hosts.push(host);
    inv
}

/// A Secret's value by key: `stringData` as written, else `data` decoded
/// from base64 (`true` as the third item).
fn secret_value<'n>(secret: &'n Node, key: &str) -> Option<(Vec<u8>, &'n Node, bool)> {
    if let Some(v) = secret.get("stringData").and_then(|s| s.get(key)) {
        return Some((v.scalar_text()?.into_bytes(), v, false));
    }
    let v = secret.get("data")?.get(key)?;
    let text: String = v.scalar_text()?.split_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .ok()?;
    Some((bytes, v, true))
}
