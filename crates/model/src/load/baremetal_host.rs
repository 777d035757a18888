//! Metal3's BareMetalHost: the host's BMC (credentials from the Secret it
//! names), boot MAC, and network from the Secrets it names:
//! `spec.networkData` (network_data.json under `networkData`, as Cluster
//! API Metal3 and Ironic users write it) and
//! `spec.preprovisioningNetworkDataName` (OpenShift's NMState under
//! `nmstate`, or upstream's network_data.json under `networkData`).

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
        d.push(
            Diagnostic::error(Code::MissingField, "the BareMetalHost has no `spec`").at(root.span),
        );
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
            let credentials = d.string(bmc, "credentialsName");
            if let Some(c) = &credentials {
                if let Some(secret) = ctx.objects.secret(&namespace, &c.value) {
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
            }
            host.bmc = Some(Bmc {
                address,
                credentials,
                disable_certificate_verification: d
                    .bool(bmc, "disableCertificateVerification")
                    .unwrap_or(false),
            });
        }
    }
    // The deployed system's network (`spec.networkData`, network_data.json
    // for cloud-init) is the host's; the ramdisk's
    // (`preprovisioningNetworkDataName`: NMState under `nmstate` in
    // OpenShift, network_data.json under `networkData` upstream) stands in
    // when there is none. Both are read and checked.
    let deployed = spec.get("networkData").and_then(|r| {
        let name = d.string(r, "name")?;
        let ns = r
            .get("namespace")
            .and_then(Node::scalar_text)
            .unwrap_or_else(|| namespace.clone());
        Some((name, ns))
    });
    let ramdisk = d
        .string(spec, "preprovisioningNetworkDataName")
        .map(|n| (n, namespace.clone()));
    let mut found = Vec::new();
    let mut read: Vec<(String, String)> = Vec::new();
    for (secret_name, ns, keys) in [
        deployed.map(|(n, ns)| (n, ns, &["networkData"][..])),
        ramdisk.map(|(n, ns)| (n, ns, &["nmstate", "networkData"][..])),
    ]
    .into_iter()
    .flatten()
    {
        // One Secret named twice is read once.
        if read.contains(&(ns.clone(), secret_name.value.clone())) {
            continue;
        }
        read.push((ns.clone(), secret_name.value.clone()));
        if let Some(state) = network_secret(ctx, &mut d, &name, &secret_name, &ns, keys) {
            found.push(state);
        }
    }
    if let Some((state, projected, nics)) = found.into_iter().next() {
        host.network = Some(state);
        host.projected_network = projected;
        host.nics_listed |= !nics.is_empty();
        host.nics.extend(nics);
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

/// The network a Secret named by the BareMetalHost holds under one of
/// `keys` (`nmstate`: NMState; `networkData`: network_data.json, `true` as
/// the second item, with the NIC table its links give), parsed where it is written (inside base64 too).
fn network_secret(
    ctx: &mut Context,
    d: &mut Decoder,
    host: &Located<String>,
    secret_name: &Located<String>,
    namespace: &str,
    keys: &[&str],
) -> Option<(Node, bool, Vec<Nic>)> {
    let Some(secret) = ctx.objects.secret(namespace, &secret_name.value) else {
        d.push(
            Diagnostic::warning(
                Code::MissingField,
                format!(
                    "Secret `{}` is not among the inputs: the host's network is not checked",
                    secret_name.value
                ),
            )
            .at(secret_name.span)
            .help("give the file or directory that holds the Secret too"),
        );
        return None;
    };
    let Some((key, (bytes, node, base64))) = keys
        .iter()
        .find_map(|k| secret_value(secret, k).map(|v| (*k, v)))
    else {
        let data = keys
            .iter()
            .find_map(|k| secret.get("data").and_then(|s| s.get(k)).map(|n| (*k, n)));
        d.push(match data {
            Some((key, data)) => Diagnostic::error(
                Code::InvalidValue,
                format!("`data.{key}` of Secret `{}` is not base64", secret_name.value),
            )
            .at(data.span)
            .help(format!("`data` values are base64; write the value as it is under `stringData.{key}`")),
            None => Diagnostic::error(
                Code::MissingField,
                format!(
                    "Secret `{}` has no {} key",
                    secret_name.value,
                    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" or ")
                ),
            )
            .at(secret.get("metadata").map(|m| m.span).unwrap_or(secret.span))
            .help("the baremetal-operator reads the host's network from the key `networkData` (network_data.json), and OpenShift's from `nmstate` (NMState), under stringData or base64 data"),
        });
        return None;
    };
    let label = format!("Secret {} key {key}", secret_name.value);
    let parsed = if base64 {
        ctx.parse_embedded(
            label.clone(),
            String::from_utf8_lossy(&bytes).into_owned(),
            Embedding::relocated(node.span, label),
            d,
        )
    } else {
        ctx.parse_string_value(label, node, d)
    }?;
    if key == "nmstate" {
        return Some((parsed, false, Vec::new()));
    }
    if super::nmstate::looks_like(&parsed) {
        // NMState under the upstream key: OpenShift reads it from `nmstate`.
        d.push(
            Diagnostic::error(
                Code::MissingField,
                format!(
                    "Secret `{}` holds NMState under `{key}` but has no `nmstate` key",
                    secret_name.value
                ),
            )
            .at(secret.get("metadata").map(|m| m.span).unwrap_or(secret.span))
            .help("OpenShift's baremetal-operator reads NMState from the key `nmstate`; `networkData` holds OpenStack network_data.json"),
        );
        return None;
    }
    if !super::network_data::looks_like(&parsed) {
        d.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "`{key}` of Secret `{}` is not a network_data.json (`links` and `networks` lists)",
                    secret_name.value
                ),
            )
            .at(parsed.span),
        );
        return None;
    }
    let mut findings = Vec::new();
    // The NIC table its links give.
    let mut nics = Host::new(host.clone(), InputKind::BareMetalHost);
    let state = super::network_data::state(&parsed, &mut nics, &mut findings);
    for f in findings {
        d.push(f);
    }
    Some((state, true, nics.nics))
}
