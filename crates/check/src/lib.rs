//! The check stage: every mistake in an inventory, found in one run, each
//! with a stable code and the place it was written.
//!
//! Hosts are checked in parallel (each also goes through nmstate, whose
//! keyfiles the render stage reuses); fleet rules run once afterwards.

pub mod fleet;
pub mod host;
pub mod network;
pub mod nmstate_bridge;

use rayon::prelude::*;

use nodenet_model::{diag, Diagnostic, Host, Inventory};

pub use nmstate_bridge::Keyfile;

/// What checking one host produced.
#[derive(Default)]
pub struct HostReport {
    /// NetworkManager keyfiles from nmstate's gen_conf, sorted by name;
    /// `None` when the host has no network or nmstate rejected it.
    pub keyfiles: Option<Vec<Keyfile>>,
    /// The NMState the keyfiles came from (copy-mac-from pinned to MACs).
    pub resolved: Option<serde_json::Value>,
}

pub struct Report {
    pub diagnostics: Vec<Diagnostic>,
    /// One per inventory host, same order.
    pub hosts: Vec<HostReport>,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

fn check_one(inv: &Inventory, host: &Host) -> (HostReport, Vec<Diagnostic>, Vec<network::Address>) {
    let mut diags = Vec::new();
    let Some(node) = host.network.as_ref() else {
        let net = network::Network::default();
        fleet::check_host_in_cluster(inv, host, &net, &mut diags);
        return (HostReport::default(), diags, Vec::new());
    };
    let net = network::Network::read(node);
    host::check_host(host, node, &net, &mut diags);
    fleet::check_host_in_cluster(inv, host, &net, &mut diags);
    let outcome = nmstate_bridge::evaluate(host, node, &mut diags);
    let report = HostReport { keyfiles: outcome.keyfiles, resolved: outcome.resolved };
    (report, diags, net.addresses)
}

/// Checks every host and the fleet; `loading` are the diagnostics found
/// while loading, which come first in the report.
pub fn check(inv: &Inventory, loading: Vec<Diagnostic>) -> Report {
    let per_host: Vec<_> = inv.hosts.par_iter().map(|h| check_one(inv, h)).collect();
    let mut diagnostics = loading;
    let mut hosts = Vec::with_capacity(per_host.len());
    let mut addresses = Vec::with_capacity(per_host.len());
    for ((report, diags, addrs), host) in per_host.into_iter().zip(&inv.hosts) {
        diagnostics.extend(diags);
        hosts.push(report);
        addresses.push(fleet::HostAddresses { host, addresses: addrs });
    }
    fleet::check_fleet(inv, &addresses, &mut diagnostics);
    diag::sort(&mut diagnostics);
    diagnostics.dedup();
    Report { diagnostics, hosts }
}
