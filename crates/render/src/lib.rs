//! The render stage: every artifact that carries host networking, written
//! deterministically and atomically.

pub mod artifacts;
pub mod output;
pub mod yaml_out;

use std::path::{Path, PathBuf};

use nodenet_check::{HostReport, Keyfile, Report};
use nodenet_model::{Diagnostic, Host, Inventory, Loaded, Scope};

pub use output::{ManifestEntry, OutFile};

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{0} exists and was not written by nodenet (no manifest.json); refusing to replace it"
    )]
    NotOurs(String),
    #[error("two artifacts would be written to {0} (host names that differ only in case?)")]
    Conflict(String),
}

/// What a render run wrote.
pub struct Rendered {
    pub manifest: Vec<ManifestEntry>,
    /// Findings of the render step itself (unresolvable BMC passwords).
    pub warnings: Vec<Diagnostic>,
    /// Hosts rendered.
    pub hosts: usize,
    /// Changes to hosts (NNCPs, MachineConfig files, bare NMState) given
    /// beside whole hosts: checked, not rendered.
    pub changes_not_rendered: usize,
}

/// Writes all artifacts of a checked inventory into `out` (replacing it
/// as a whole). The caller must not render a report with errors.
///
/// Each host's files are written as soon as they are made, while the
/// fleet-wide documents are built beside them: nothing waits for the whole
/// set of 50,000 files of a 10,000-host fleet to exist in memory.
pub fn render(inv: &Inventory, report: &Report, out: &Path) -> Result<Rendered, RenderError> {
    let is_change = |h: &Host| h.scope() == Scope::Partial;
    let changes = inv.hosts.iter().filter(|h| is_change(h)).count();
    if changes == 0 {
        return render_all(inv, report, out, true);
    }
    if changes == inv.hosts.len() {
        // Only changes (NNCPs, MachineConfig files, bare NMState): their
        // keyfiles, no host artifacts.
        return render_all(inv, report, out, false);
    }
    // Artifacts describe whole hosts: changes given beside them (a day-2
    // NNCP in a manifests directory) are checked, not rendered as hosts.
    let (hosts, reports): (Vec<Host>, Vec<HostReport>) = inv
        .hosts
        .iter()
        .zip(&report.hosts)
        .filter(|(h, _)| !is_change(h))
        .map(|(h, r)| (h.clone(), r.clone()))
        .unzip();
    let whole = Inventory {
        kind: inv.kind,
        cluster: inv.cluster.clone(),
        hosts,
        credentials: inv.credentials.clone(),
        rendezvous_ip: inv.rendezvous_ip.clone(),
    };
    let report = Report {
        diagnostics: Vec::new(),
        hosts: reports,
    };
    let mut rendered = render_all(&whole, &report, out, true)?;
    rendered.changes_not_rendered = changes;
    Ok(rendered)
}

/// `hosts`: the entries are whole hosts (every artifact), else changes to
/// hosts (their keyfiles and state only).
fn render_all(
    inv: &Inventory,
    report: &Report,
    out: &Path,
    hosts: bool,
) -> Result<Rendered, RenderError> {
    use rayon::prelude::*;
    let addresses: Vec<Vec<std::net::IpAddr>> = report
        .hosts
        .iter()
        .map(|h| h.addresses.iter().map(|a| a.ip).collect())
        .collect();
    let mut warnings = Vec::new();
    let passwords = artifacts::resolve_passwords(inv, &mut warnings);
    let texts = artifacts::intent_texts(inv);
    let tree = output::Tree::begin(out)?;
    let (per_host, fleet) = rayon::join(
        || {
            inv.hosts
                .par_iter()
                .zip(&report.hosts)
                .zip(&texts)
                .map(|((host, report), text)| {
                    let files = if hosts {
                        artifacts::host_artifacts(host, report, text.as_ref(), &passwords)
                    } else {
                        let mut files = Vec::new();
                        artifacts::host_files(host, report, text.as_ref(), &mut files);
                        files
                    };
                    files
                        .iter()
                        .map(|f| tree.write(f))
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()
        },
        || {
            let fleet = if hosts {
                artifacts::fleet_artifacts(inv, &texts, &addresses)
            } else {
                Vec::new()
            };
            fleet
                .par_iter()
                .map(|f| tree.write(f))
                .collect::<Result<Vec<_>, _>>()
        },
    );
    let mut entries: Vec<ManifestEntry> = per_host?.into_iter().flatten().collect();
    entries.extend(fleet?);
    let manifest = tree.commit(entries, true)?;
    Ok(Rendered {
        manifest,
        warnings,
        hosts: if hosts { inv.hosts.len() } else { 0 },
        changes_not_rendered: 0,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum HostKeyfilesError {
    #[error(transparent)]
    Load(#[from] nodenet_model::LoadError),
    #[error("the inventory has {0} error(s); run `nodenet check` on it")]
    Invalid(usize, Vec<Diagnostic>),
    #[error("no host named `{0}` in the inventory")]
    UnknownHost(String),
    #[error("host `{0}` has no network configuration")]
    NoNetwork(String),
}

/// The keyfiles of one host of an inventory, after a full check: for the
/// image stage, which embeds them into boot media.
pub fn keyfiles_for_host(files: &[PathBuf], host: &str) -> Result<Vec<Keyfile>, HostKeyfilesError> {
    let Loaded {
        inventory,
        diagnostics,
        ..
    } = nodenet_model::load_files(files)?;
    let report = nodenet_check::check(&inventory, diagnostics);
    if report.has_errors() {
        let errors: Vec<Diagnostic> = report
            .diagnostics
            .into_iter()
            .filter(Diagnostic::is_error)
            .collect();
        return Err(HostKeyfilesError::Invalid(errors.len(), errors));
    }
    let idx = inventory
        .hosts
        .iter()
        .position(|h| h.name.value == host)
        .ok_or_else(|| HostKeyfilesError::UnknownHost(host.to_string()))?;
    report
        .hosts
        .into_iter()
        .nth(idx)
        .and_then(|r| r.keyfiles)
        .ok_or_else(|| HostKeyfilesError::NoNetwork(host.to_string()))
}
