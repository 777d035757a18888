//! The check stage: every mistake in an inventory, found in one run, each
//! with a stable code and the place it was written.
//!
//! Hosts are checked in parallel, then go through nmstate (once per shape
//! of hosts that differ only in addresses, see `shapes.rs`), whose keyfiles
//! the render stage reuses; fleet rules run once afterwards.

pub mod br_ex;
pub mod cluster_networks;
pub mod dual_stack;
pub mod fleet;
pub mod host;
pub mod identity;
pub mod misplaced;
pub mod network;
pub mod nmstate_bridge;
pub mod node_agent;
pub mod provisioning;
pub mod segments;
pub mod shapes;
pub mod sites;
pub mod traffic;
pub mod wiring;

use rayon::prelude::*;

use nodenet_model::{diag, Code, Diagnostic, Host, Inventory, Role, Scope, Span};

pub use network::Address;

pub use nmstate_bridge::Keyfile;

/// What checking one host produced.
#[derive(Clone, Default)]
pub struct HostReport {
    /// NetworkManager keyfiles from nmstate's gen_conf, in its order;
    /// `None` when the host has no network or nmstate rejected it.
    pub keyfiles: Option<Vec<Keyfile>>,
    /// The NMState the keyfiles came from when it differs from the host's
    /// network (copy-mac-from pinned to MACs).
    pub pinned_state: Option<serde_json::Value>,
    /// Static addresses of the host's interfaces, as written.
    pub addresses: Vec<network::Address>,
    /// The host's shape: hosts whose states differ only in addresses and
    /// MACs share it (numbered from 0 by first host; `None` without a
    /// network). See `shapes.rs`.
    pub shape: Option<usize>,
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

    /// `render` writes what installers and operators read next: the
    /// warnings about output they would reject become errors, so nothing
    /// is written. A cluster without hosts (openshift-install), and, when
    /// the inputs are the agent installer's, an agent-config.yaml without
    /// a rendezvous IP.
    pub fn refuse_for_render(&mut self, inv: &Inventory) {
        let agent = fleet::for_agent_installer(inv);
        for d in &mut self.diagnostics {
            let refused = match d.code {
                // The agent installer takes the machines that boot its ISO.
                Code::NoHosts => !agent,
                Code::RendezvousIpMissing => agent,
                _ => false,
            };
            if refused && !d.is_error() {
                d.severity = nodenet_model::Severity::Error;
            }
        }
    }
}

/// A host after every check but nmstate's.
struct Prepared {
    diags: Vec<Diagnostic>,
    addresses: Vec<network::Address>,
}

/// `net` is `host`'s state read, which the fleet's checks read too.
fn prepare(inv: &Inventory, host: &Host, net: Option<&network::Network>) -> Prepared {
    let mut diags = Vec::new();
    if host.scope() == Scope::FirstBoot {
        provisioning::check_host(host, &mut diags);
    }
    let (Some(node), Some(net)) = (host.network.as_ref(), net) else {
        let net = network::Network::default();
        fleet::check_host_in_cluster(inv, host, &net, &mut diags);
        return Prepared {
            diags,
            addresses: Vec::new(),
        };
    };
    let targets: Vec<(&Host, network::Network)> = targets_of(inv, host)
        .into_iter()
        .filter_map(|t| Some((t, network::Network::read(t.network.as_ref()?))))
        .collect();
    host::check_host(host, &targets, node, net, &mut diags);
    fleet::check_host_in_cluster(inv, host, net, &mut diags);
    match (host.scope(), host.written_to.as_deref()) {
        (Scope::FirstBoot, _) => br_ex::check_host(host, &inv.cluster, &mut diags),
        (_, Some(file)) if file.starts_with(br_ex::OPENSHIFT_DIR) => {
            let mut found = Vec::new();
            br_ex::check_contract(node, file, &inv.cluster, host.name.span, &mut found);
            diags.extend(found.into_iter().map(|d| d.host(host.name.value.clone())));
        }
        _ => {}
    }
    Prepared {
        diags,
        addresses: net.addresses.clone(),
    }
}

/// The whole hosts a partial state is applied to, as far as the inputs
/// tell: the host it is named after (short or full name), or every host
/// of the role it selects.
fn targets_of<'a>(inv: &'a Inventory, host: &Host) -> Vec<&'a Host> {
    if host.scope() != Scope::Partial {
        return Vec::new();
    }
    let short = |n: &str| nodenet_model::short_hostname(n).to_string();
    let name = short(&host.name.value);
    inv.hosts
        .iter()
        .filter(|t| t.scope() == Scope::FirstBoot && t.network.is_some())
        .filter(|t| match &host.applies_to {
            None => short(&t.name.value) == name,
            Some(_) => host.role.value != Role::Unset && t.role.value == host.role.value,
        })
        .collect()
}

/// A partial state aimed at exactly one host the inputs describe, with
/// that host's NICs.
fn aimed_at(inv: &Inventory, host: &Host) -> Option<Host> {
    let [target] = targets_of(inv, host)[..] else {
        return None;
    };
    if target.nics.is_empty() {
        return None;
    }
    let mut aimed = host.clone();
    for nic in &target.nics {
        if !aimed.nics.iter().any(|n| n.name.value == nic.name.value) {
            aimed.nics.push(nic.clone());
        }
    }
    Some(aimed)
}

/// Checks every host and the fleet; `loading` are the diagnostics found
/// while loading, which come first in the report.
pub fn check(inv: &Inventory, loading: Vec<Diagnostic>) -> Report {
    let aimed = aimed_hosts(inv);
    let host_at = |i: usize| aimed[i].as_ref().unwrap_or(&inv.hosts[i]);
    let fleet = shapes::judge_fleet(inv.hosts.len(), &|i| judged_state(host_at(i)));
    check_judged(inv, loading, &aimed, fleet)
}

/// A change aimed at one host the inputs describe knows that host's NICs
/// (what `copy-mac-from` reads on the node): per host, that host made so,
/// or none.
fn aimed_hosts(inv: &Inventory) -> Vec<Option<Host>> {
    inv.hosts.par_iter().map(|h| aimed_at(inv, h)).collect()
}

/// The state nmstate judges for `host`. A state with a placeholder left
/// unexpanded is not what its template means: nmstate would only repeat
/// the placeholder's finding.
fn judged_state(host: &Host) -> Option<std::borrow::Cow<'_, nodenet_model::Node>> {
    host.network
        .as_ref()
        .filter(|_| host.unresolved.is_empty())
        .map(|n| nmstate_bridge::judged_node(host, n))
}

/// [`check`] with nmstate's verdicts on the hosts already given.
fn check_judged(
    inv: &Inventory,
    loading: Vec<Diagnostic>,
    aimed: &[Option<Host>],
    fleet: shapes::Fleet,
) -> Report {
    let host_at = |i: usize| aimed[i].as_ref().unwrap_or(&inv.hosts[i]);
    // Each host's state read once, for the host's checks and the fleet's.
    let nets: Vec<Option<network::Network>> = (0..inv.hosts.len())
        .into_par_iter()
        .map(|i| host_at(i).network.as_ref().map(network::Network::read))
        .collect();
    let states: Vec<Option<&network::Network>> = nets.iter().map(Option::as_ref).collect();
    let prepared: Vec<Prepared> = (0..inv.hosts.len())
        .into_par_iter()
        .map(|i| prepare(inv, host_at(i), states[i]))
        .collect();
    let shapes::Fleet { judged, shapes } = fleet;
    let per_host: Vec<(HostReport, Vec<Diagnostic>)> = prepared
        .into_par_iter()
        .zip(judged)
        .zip(shapes)
        .enumerate()
        .map(|(i, ((p, judged), shape))| {
            let host = host_at(i);
            let mut diags = p.diags;
            let mut report = HostReport {
                addresses: p.addresses,
                shape,
                ..HostReport::default()
            };
            if let (Some(judged), Some(node)) = (judged, host.network.as_ref()) {
                // The judged state was made for the verdict already.
                let (written, stand_in) = nmstate_bridge::pin_written(host, node);
                let mut from_nmstate = Vec::new();
                let outcome = nmstate_bridge::outcome(
                    host,
                    node,
                    written,
                    stand_in,
                    judged,
                    &mut from_nmstate,
                );
                // nmstate's complaint about a value a host check already
                // explains (at the same place) adds nothing; nor does one
                // it cannot place (the whole state) beside an error a host
                // check places: nmstate stops at the first thing it cannot
                // read, which is that one.
                let own_error = diags.iter().any(Diagnostic::is_error);
                // A set: a state of thousands of interfaces has thousands
                // of findings on each side (a scan per finding was 19 s
                // for 75,000 duplicate interfaces).
                let placed: std::collections::HashSet<Option<Span>> =
                    diags.iter().map(|d| d.span).collect();
                from_nmstate.retain(|n| {
                    let explained = placed.contains(&n.span);
                    let unplaced_beside_own = own_error && n.span == Some(node.span);
                    !(explained || unplaced_beside_own)
                });
                diags.extend(from_nmstate);
                misplaced::mark_consequences(&outcome.misplaced, &mut diags);
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
    // A derived br-ex is judged by nmstate once per shape of hosts.
    let mut seen_shapes = std::collections::HashSet::new();
    let firsts: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].shape.is_some_and(|s| seen_shapes.insert(s)))
        .collect();
    let derived: Vec<Diagnostic> = firsts
        .into_par_iter()
        .filter_map(|i| br_ex::judge_derived(host_at(i), &inv.cluster))
        .collect();
    diagnostics.extend(derived);
    // The fleet's address rules (one thread: every address claimed in
    // turn) beside the other fleet rules, in the same order as found.
    let (fleet, others) = rayon::join(
        || {
            let mut d = Vec::new();
            fleet::check_fleet(inv, &hosts, &states, &mut d);
            d
        },
        || {
            let mut d = Vec::new();
            segments::check(inv, &states, &mut d);
            cluster_networks::check(inv, &mut d);
            sites::check_single_node(inv, &hosts, &mut d);
            sites::check_cluster_instance_fields(inv, &mut d);
            sites::check_mac_binding_release(inv, &mut d);
            node_agent::check(inv, &mut d);
            // The expected cabling (`nics:` switch, port, VLANs, MTU)
            // against itself.
            let wiring: Vec<Diagnostic> = inv
                .hosts
                .par_iter()
                .zip(&states)
                .flat_map_iter(|(h, net)| {
                    let mut d = Vec::new();
                    wiring::check_host(h, *net, &mut d);
                    d
                })
                .collect();
            d.extend(wiring);
            wiring::check_fleet(inv, &mut d);
            d
        },
    );
    diagnostics.extend(fleet);
    diagnostics.extend(others);
    // 10,000 hosts' states freed on every core (on one, 10-15 ms).
    drop(states);
    nets.into_par_iter().for_each(drop);
    drop_consequences(inv, &mut diagnostics);
    diag::sort(&mut diagnostics);
    diagnostics.dedup();
    Report { diagnostics, hosts }
}

/// What checking several clusters found: every finding, in order, and
/// each cluster's hosts (same order as the clusters given).
pub struct FleetReport {
    pub diagnostics: Vec<Diagnostic>,
    /// One per cluster; their `diagnostics` are in the fleet's list.
    pub clusters: Vec<Report>,
}

impl FleetReport {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The inputs' clusters (the one they describe together, the sites of a
/// fleet), each checked alone, then the fleet across them; `loading` are
/// the diagnostics found while loading, which come first.
pub fn check_clusters(clusters: &[&Inventory], loading: Vec<Diagnostic>) -> FleetReport {
    check_clusters_where(clusters, loading, &|_| true)
}

/// [`check_clusters`], saying what is found in a cluster only of the
/// clusters `told` picks (the sites a change touches); the fleet's rules
/// across every cluster are said whole.
pub fn check_clusters_where(
    clusters: &[&Inventory],
    loading: Vec<Diagnostic>,
    told: &(dyn Fn(&Inventory) -> bool + Sync),
) -> FleetReport {
    // nmstate judges the hosts of every cluster together: a fleet of
    // single-node sites is one shape, not ten thousand of one host each.
    let aimed: Vec<Vec<Option<Host>>> = clusters.par_iter().map(|inv| aimed_hosts(inv)).collect();
    let index: Vec<(usize, usize)> = clusters
        .iter()
        .enumerate()
        .flat_map(|(c, inv)| (0..inv.hosts.len()).map(move |i| (c, i)))
        .collect();
    let fleet = shapes::judge_fleet(index.len(), &|k| {
        let (c, i) = index[k];
        judged_state(aimed[c][i].as_ref().unwrap_or(&clusters[c].hosts[i]))
    });
    let fleets = fleet.split(clusters.iter().map(|inv| inv.hosts.len()));
    let mut reports: Vec<Report> = clusters
        .par_iter()
        .zip(aimed.par_iter())
        .zip(fleets)
        .map(|((inv, aimed), fleet)| check_judged(inv, Vec::new(), aimed, fleet))
        .collect();
    let mut diagnostics = loading;
    for (inv, r) in clusters.iter().zip(&mut reports) {
        if told(inv) {
            diagnostics.append(&mut r.diagnostics);
        } else {
            r.diagnostics.clear();
        }
    }
    let pairs: Vec<(&Inventory, &Report)> = clusters.iter().copied().zip(&reports).collect();
    sites::check_across(&pairs, &mut diagnostics);
    diag::sort(&mut diagnostics);
    diagnostics.dedup();
    FleetReport {
        diagnostics,
        clusters: reports,
    }
}

/// A value a placeholder could not be expanded in is reported once, where
/// the placeholder failed (`template-variable`); what else is said about
/// that value of that host (not an address, not a MAC, no scheme...) is
/// its consequence and is left out.
fn drop_consequences(inv: &Inventory, diags: &mut Vec<Diagnostic>) {
    use std::collections::HashSet;
    let unresolved: HashSet<(Span, &str)> = inv
        .hosts
        .iter()
        .flat_map(|h| h.unresolved.iter().map(|s| (*s, h.name.value.as_str())))
        .collect();
    if unresolved.is_empty() {
        return;
    }
    diags.retain(|d| {
        d.code == Code::TemplateVariable
            || !matches!((d.span, d.host.as_deref()), (Some(s), Some(h)) if unresolved.contains(&(s, h)))
    });
}
