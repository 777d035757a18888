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
pub mod external_secret;
mod install_config;
pub mod kube;
mod nncp;
mod nodes_config;
mod splice;

pub use agent_config::*;
pub use baremetal_host::*;
pub use install_config::*;
pub use nncp::*;
pub use nodes_config::*;
pub use splice::*;

pub const NAMESPACE: &str = "openshift-machine-api";

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
    let shapes = crate::shaped::HostShapes::of(inv, texts);
    let (((ic, ic_diags), ac), (openshift, policies)) = rayon::join(
        || {
            rayon::join(
                || install_config_within_limit(inv, texts),
                || agent_config(inv, addresses, texts),
            )
        },
        || {
            rayon::join(
                || crate::openshift::openshift_files(inv, &shapes),
                || {
                    let mut v = Vec::new();
                    nncps(inv, &shapes, &mut v);
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
