//! The check stage: every mistake in an inventory, found in one run, each
//! with a stable code and the place it was written.
//!
//! Hosts are checked in parallel, then go through nmstate (once per shape
//! of hosts that differ only in addresses, see `shapes.rs`), whose keyfiles
//! the render stage reuses; fleet rules run once afterwards.

pub mod fleet;
pub mod host;
pub mod network;
pub mod nmstate_bridge;
mod shapes;

use rayon::prelude::*;

use nodenet_model::{diag, Diagnostic, Host, Inventory};

pub use network::Address;

pub use nmstate_bridge::Keyfile;

/// What checking one host produced.
#[derive(Default)]
pub struct HostReport {
    /// NetworkManager keyfiles from nmstate's gen_conf, in its order;
    /// `None` when the host has no network or nmstate rejected it.
    pub keyfiles: Option<Vec<Keyfile>>,
    /// The NMState the keyfiles came from when it differs from the host's
    /// network (copy-mac-from pinned to MACs).
    pub pinned_state: Option<serde_json::Value>,
    /// Static addresses of the host's interfaces, as written.
    pub addresses: Vec<network::Address>,
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

/// A host after every check but nmstate's.
struct Prepared {
    diags: Vec<Diagnostic>,
    addresses: Vec<network::Address>,
}

fn prepare(inv: &Inventory, host: &Host) -> Prepared {
    let mut diags = Vec::new();
    let Some(node) = host.network.as_ref() else {
        let net = network::Network::default();
        fleet::check_host_in_cluster(inv, host, &net, &mut diags);
        return Prepared {
            diags,
            addresses: Vec::new(),
        };
    };
    let net = network::Network::read(node);
    host::check_host(host, node, &net, &mut diags);
    fleet::check_host_in_cluster(inv, host, &net, &mut diags);
    Prepared {
        diags,
        addresses: net.addresses,
    }
}

/// Checks every host and the fleet; `loading` are the diagnostics found
/// while loading, which come first in the report.
pub fn check(inv: &Inventory, loading: Vec<Diagnostic>) -> Report {
    let prepared: Vec<Prepared> = inv.hosts.par_iter().map(|h| prepare(inv, h)).collect();
    let state = |i: usize| {
        let host = &inv.hosts[i];
        host.network
            .as_ref()
            .map(|n| nmstate_bridge::state_of(host, n))
    };
    let judged = shapes::judge_fleet(inv.hosts.len(), &state);
    let per_host: Vec<(HostReport, Vec<Diagnostic>)> = prepared
        .into_par_iter()
        .zip(judged)
        .zip(&inv.hosts)
        .map(|((p, judged), host)| {
            let mut diags = p.diags;
            let mut report = HostReport {
                addresses: p.addresses,
                ..HostReport::default()
            };
            if let (Some(judged), Some(node)) = (judged, host.network.as_ref()) {
                let pinned = nmstate_bridge::pinned_state(host, node);
                let outcome = nmstate_bridge::outcome(host, node, pinned, judged, &mut diags);
                report.keyfiles = outcome.keyfiles;
                report.pinned_state = outcome.pinned_state;
            }
            (report, diags)
        })
        .collect();
    let mut diagnostics = loading;
    let mut hosts = Vec::with_capacity(per_host.len());
    for (report, diags) in per_host {
        diagnostics.extend(diags);
        hosts.push(report);
    }
    fleet::check_fleet(inv, &hosts, &mut diagnostics);
    diag::sort(&mut diagnostics);
    diagnostics.dedup();
    Report { diagnostics, hosts }
}
