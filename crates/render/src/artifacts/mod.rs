//! Every artifact that carries host networking, built from a checked
//! inventory. Pure functions from inventory to file contents; writing is
//! [`crate::output`]'s job.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde_json::{json, Map, Value as J};

use nodenet_check::HostReport;
use nodenet_model::{Cluster, Code, Credentials, Diagnostic, Host, Inventory, Role, Secret};

use crate::openshift::OBJECT_LIMIT;
use crate::output::OutFile;

mod agent_config;
mod baremetal_host;
mod install_config;
pub mod kube;
mod nncp;
mod nodes_config;

pub use agent_config::*;
pub use baremetal_host::*;
pub use install_config::*;
pub use nncp::*;
pub use nodes_config::*;

pub const NAMESPACE: &str = "openshift-machine-api";

pub fn yaml(v: &J) -> String {
    crate::yaml_out::to_string(v)
}

/// Stand-in value replaced by [`embed`]: each host state is emitted as
/// YAML once and spliced into every envelope that carries it, instead of
/// being re-emitted (YAML emission dominated render time).
const TOKEN: &str = "__nodenet_embedded__";

/// How embedded text goes in.
#[derive(Clone, Copy)]
pub enum Embed {
    /// As a nested block mapping (a `networkConfig:` / `desiredState:`).
    Mapping,
    /// As a literal block scalar (a Secret's `stringData.nmstate: |`).
    Literal,
}

/// Replaces the i-th `key: TOKEN` line of `envelope` with `texts[i]`
/// indented under the key (one linear pass, for 10,000-host documents).
pub fn embed_all(envelope: &str, texts: &[&str], how: Embed) -> String {
    let needle = format!(": {TOKEN}\n");
    let mut out =
        String::with_capacity(envelope.len() + texts.iter().map(|t| t.len() * 2).sum::<usize>());
    let mut rest = envelope;
    for text in texts {
        let Some(pos) = rest.find(&needle) else { break };
        let line_start = rest[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line = &rest[line_start..pos];
        let key_col = line.len() - line.trim_start_matches([' ', '-']).len();
        out.push_str(&rest[..pos]);
        out.push_str(match how {
            Embed::Mapping => ":\n",
            Embed::Literal => ": |\n",
        });
        for l in text.lines() {
            if !l.is_empty() {
                out.extend(std::iter::repeat_n(' ', key_col + 2));
                out.push_str(l);
            }
            out.push('\n');
        }
        rest = &rest[pos + needle.len()..];
    }
    out.push_str(rest);
    out
}

pub fn embed(envelope: &str, text: &str, how: Embed) -> String {
    embed_all(envelope, &[text], how)
}

/// Stand-in for a `${VAR}` placeholder that [`placeholders`] turns into a
/// block scalar.
const PLACEHOLDER: &str = "__nodenet_placeholder__";

/// A value to be filled in later with `envsubst`: `${var}`.
pub fn placeholder(var: &str) -> J {
    J::String(format!("{PLACEHOLDER}{var}"))
}

/// Writes every [`placeholder`] value as a literal block scalar with an
/// explicit indentation indicator, the placeholder alone on its line:
///
/// ```yaml
/// password: |2-
///   ${BMC_PASSWORD}
/// ```
///
/// Whatever one-line text `envsubst` puts there is read back as that very
/// string by every YAML reader: no character is special inside a literal
/// block (`:`, `#`, quotes, backslashes, `{`, a leading `-` or space), and
/// the indicator keeps leading spaces as content. A plain, single- or
/// double-quoted scalar each break on some of those.
pub fn placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(pos) = rest.find(PLACEHOLDER) {
        let line_start = rest[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line = &rest[line_start..pos];
        let Some(before) = line.strip_suffix(": ") else {
            // Not a mapping value (never written so): leave it.
            out.push_str(&rest[..pos + PLACEHOLDER.len()]);
            rest = &rest[pos + PLACEHOLDER.len()..];
            continue;
        };
        // The key's column is the mapping's indentation, which the
        // indicator counts from (after `- ` too).
        let key_col = before.len() - before.trim_start_matches([' ', '-']).len();
        let end = rest[pos..]
            .find('\n')
            .map(|i| pos + i)
            .unwrap_or(rest.len());
        let var = &rest[pos + PLACEHOLDER.len()..end];
        out.push_str(&rest[..pos]);
        out.push_str("|2-\n");
        out.extend(std::iter::repeat_n(' ', key_col + 2));
        out.push_str("${");
        out.push_str(var);
        out.push('}');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Every host's intent as YAML text, emitted once.
pub fn intent_texts(inv: &Inventory) -> Vec<Option<String>> {
    use rayon::prelude::*;
    inv.hosts
        .par_iter()
        .map(|h| intent(h).map(|j| yaml(&j)))
        .collect()
}

/// The host's network intent as written (placeholders expanded): what the
/// node applies live, where `copy-mac-from` works.
pub fn intent(host: &Host) -> Option<J> {
    host.network.as_ref().map(|n| n.to_json())
}

/// The `.link` files that pin a host's NIC names (`nicBinding: pin`);
/// none for other bindings.
pub fn pinned_names(host: &Host, cluster: &Cluster) -> Vec<nodenet_model::nic_binding::LinkFile> {
    if host.binding(cluster) != nodenet_model::nic_binding::NicBinding::Pin {
        return Vec::new();
    }
    nodenet_model::nic_binding::link_files(&host.name.value, &host.nics)
}

/// Per host: keyfiles (0600), the NMState they were generated from, and
/// the `.link` files pinning its NIC names (`systemd-network/`).
pub fn host_files(
    host: &Host,
    cluster: &Cluster,
    report: &HostReport,
    intent_text: Option<&String>,
    out: &mut Vec<OutFile>,
) {
    // A change's name may be its policy's (`nncp/x`, `mc:cluster.yml`).
    let dir = format!("hosts/{}", host.name.value.replace(['/', ':'], "-"));
    for link in pinned_names(host, cluster) {
        out.push(OutFile::new(
            format!("{dir}/systemd-network/{}", link.file_name),
            link.text,
            0o644,
        ));
    }
    if let Some(keyfiles) = &report.keyfiles {
        for (name, content) in keyfiles {
            out.push(OutFile::new(
                format!("{dir}/system-connections/{name}"),
                content.as_bytes(),
                0o600,
            ));
        }
    }
    if report.keyfiles.is_some() {
        // The state as written unless copy-mac-from was pinned.
        let text = match (&report.pinned_state, intent_text) {
            (Some(pinned), _) => yaml(pinned),
            (None, Some(t)) => t.clone(),
            (None, None) => return,
        };
        out.push(OutFile::new(format!("{dir}/nmstate.yml"), text, 0o644));
    }
}

/// Environment variable the rendered install-config expects the BMC
/// password in (install-config carries passwords inline; nodenet never
/// writes them there).
pub fn password_var(cred_name: &str, cred: Option<&Credentials>) -> String {
    nodenet_model::password_var(cred_name, cred)
}

/// A JSON object of `entries`, moved in: `json!` would serialise (copy)
/// every value it is given, and these carry all 10,000 hosts.
pub(crate) fn object<const N: usize>(entries: [(&str, J); N]) -> J {
    J::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// One host's own files: keyfiles, nmstate.yml and its scale-out file.
pub fn host_artifacts(
    host: &Host,
    cluster: &Cluster,
    report: &HostReport,
    text: Option<&String>,
    passwords: &Passwords,
) -> Vec<OutFile> {
    let mut files = Vec::new();
    host_files(host, cluster, report, text, &mut files);
    scale_out(host, text, passwords, &mut files);
    files
}

/// The files that carry the whole fleet: install-config, agent-config,
/// MachineConfigs (and the pools and agent they need) and policies (each
/// one long document, built side by side); and what keeping them within
/// etcd's limits decided.
pub fn fleet_artifacts(
    inv: &Inventory,
    texts: &[Option<String>],
    addresses: &[Vec<IpAddr>],
) -> (Vec<OutFile>, Vec<Diagnostic>) {
    let (((ic, ic_diags), ac), (openshift, policies)) = rayon::join(
        || {
            rayon::join(
                || install_config_within_limit(inv, texts),
                || agent_config(inv, addresses, texts),
            )
        },
        || {
            rayon::join(
                || crate::openshift::openshift_files(inv),
                || {
                    let mut v = Vec::new();
                    nncps(inv, &mut v);
                    v
                },
            )
        },
    );
    let (mcs, mut diagnostics) = openshift;
    diagnostics.extend(ic_diags);
    let mut out = vec![
        OutFile::new("install-config.yaml", ic, 0o644),
        OutFile::new("agent-config.yaml", ac, 0o644),
    ];
    out.extend(mcs);
    out.extend(policies);
    (out, diagnostics)
}

#[cfg(test)]
mod tests;
