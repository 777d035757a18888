//! The render stage: every artifact that carries host networking, written
//! deterministically and atomically.

pub mod artifacts;
pub mod gitops;
mod intent;
pub mod metal3;
pub mod netplan;
pub mod network_data;
pub mod node_agent;
pub mod openshift;
pub mod output;
pub mod shaped;
pub mod topology;
pub mod views;
pub mod yaml_out;
#[cfg(test)]
mod yaml_out_readers;
pub mod ztp;

use std::path::{Path, PathBuf};

use nodenet_check::{HostReport, Report};
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
    /// Findings of the render step that make its output unusable (an
    /// object past etcd's limits): nothing is written.
    #[error("{} problem(s) in what would be written", .0.iter().filter(|d| d.is_error()).count())]
    Refused(Vec<Diagnostic>),
    #[error(
        "{dir} holds a render of {} (its manifest.json says so); this render's input is {}: \
         refusing to replace it (--force replaces it; -o names another directory)",
        .previous.join(", "), .now.join(", ")
    )]
    OtherInput {
        dir: String,
        previous: Vec<String>,
        now: Vec<String>,
    },
    #[error(
        "{0} holds a render whose manifest.json does not record its input (an older nodenet's, \
         or edited): refusing to replace it (--force replaces it; -o names another directory)"
    )]
    UnknownInput(String),
}

impl RenderError {
    /// Stable code of the error (the `code` of `--format json` output).
    pub fn code(&self) -> &'static str {
        match self {
            RenderError::Io { .. } => "io",
            RenderError::NotOurs(_) => "output-not-ours",
            RenderError::Conflict(_) => "output-conflict",
            RenderError::Refused(_) => "refused",
            RenderError::OtherInput { .. } | RenderError::UnknownInput(_) => "output-other-input",
        }
    }

    /// The file or directory the error is about.
    pub fn path(&self) -> &str {
        match self {
            RenderError::Io { path, .. } => path,
            RenderError::NotOurs(p) | RenderError::Conflict(p) | RenderError::UnknownInput(p) => p,
            RenderError::Refused(_) => "",
            RenderError::OtherInput { dir, .. } => dir,
        }
    }
}

/// Where a rendered tree came from, recorded in its `manifest.json`: the
/// inputs by name (absolute paths, or the built-in example's name), and
/// every file the loader read with its sha256. A tree is only replaced by
/// a render of the same inputs (their contents may have changed) unless
/// forced.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Provenance {
    pub inputs: Vec<String>,
    pub files: Vec<InputFile>,
}

/// One file read for a render (a directory input reads several).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputFile {
    pub path: String,
    pub sha256: String,
}

impl Provenance {
    /// `names` identify the inputs (see [`Provenance::input_name`]); texts
    /// carried inside other files are not files and are left out.
    pub fn new(names: Vec<String>, sources: &nodenet_model::SourceMap) -> Provenance {
        use sha2::{Digest, Sha256};
        let files = (0..)
            .map_while(|i| sources.get(i))
            .filter(|f| f.embedded.is_none())
            .map(|f| InputFile {
                path: f.name.clone(),
                sha256: nodenet_model::hex(&Sha256::digest(f.text.as_bytes())),
            })
            .collect();
        Provenance {
            inputs: names,
            files,
        }
    }

    /// How an input path is named in the manifest: absolute, symlinks
    /// resolved, so `cluster.yaml` and `./x/../cluster.yaml` are one input.
    pub fn input_name(path: &Path) -> String {
        std::fs::canonicalize(path)
            .or_else(|_| std::path::absolute(path))
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
            .to_string()
    }
}

/// How render writes the BMC credentials of `scale-out/`: people keep the
/// output tree in git, so a password is written only when asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BmcSecrets {
    /// Each BMC Secret with the username and a `${VAR}` placeholder for
    /// the password, filled with `envsubst` when applied.
    #[default]
    Placeholder,
    /// Each BMC Secret with the password read from the inventory's
    /// source (its file 0600).
    Embed,
    /// No BMC Secret: the BareMetalHosts name `<host>-bmc-secret`, made
    /// elsewhere (External Secrets Operator, Sealed Secrets, `oc create
    /// secret`).
    Reference,
    /// No BMC Secret: an ExternalSecret per BMC Secret, from
    /// [`Replace::secret_store`] (`external-secrets/bmc.yaml`; a site's
    /// `sites/<cluster>/bmc-secrets.yaml`).
    ExternalSecret,
}

impl BmcSecrets {
    /// The form an Inventory resource's `bmcSecrets` (and `manifests
    /// --bmc-secrets`) names: one of
    /// [`nodenet_model::load::inventory_resource::BMC_SECRETS`].
    pub fn parse(name: &str) -> Option<BmcSecrets> {
        Some(match name {
            "placeholder" => BmcSecrets::Placeholder,
            "embed" => BmcSecrets::Embed,
            "reference" => BmcSecrets::Reference,
            "external-secret" => BmcSecrets::ExternalSecret,
            _ => return None,
        })
    }
}

/// How [`render`] treats an existing output directory.
#[derive(Debug, Clone, Default)]
pub struct Replace {
    /// Replace a render of other inputs (or of unrecorded ones).
    pub force: bool,
    /// How the BMC credentials are written.
    pub bmc_secrets: BmcSecrets,
    /// Where ExternalSecrets read the BMC credentials
    /// ([`BmcSecrets::ExternalSecret`]).
    pub secret_store: Option<artifacts::external_secret::SecretStore>,
    /// Outputs beyond OpenShift's, asked for by `render --with`.
    pub also: Also,
}

/// Outputs for other consumers, written only when asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Also {
    /// `network-data/<host>/network_data.json` and its Secret (Ironic,
    /// Cluster API Metal3; cloud-init reads it).
    pub network_data: bool,
    /// `netplan/<host>.yaml` (Ubuntu servers).
    pub netplan: bool,
    /// `metal3/<template>.yaml` and `metal3/ippools.yaml` (Cluster API
    /// Metal3 templating).
    pub metal3: bool,
}

/// What a render run wrote.
pub struct Rendered {
    pub manifest: Vec<ManifestEntry>,
    /// Findings of the render step itself (unresolvable BMC passwords).
    pub warnings: Vec<Diagnostic>,
    /// Hosts rendered.
    pub hosts: usize,
    /// What an output asked for with `--with` could not carry, per host
    /// (`target-unsupported`): those files are left out, the rest written.
    pub target_errors: Vec<Diagnostic>,
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
pub fn render(
    inv: &Inventory,
    report: &Report,
    out: &Path,
    provenance: &Provenance,
    replace: Replace,
) -> Result<Rendered, RenderError> {
    let is_change = |h: &Host| h.scope() == Scope::Partial;
    let changes = inv.hosts.iter().filter(|h| is_change(h)).count();
    // The page shows everything checked, changes beside hosts included.
    let shown = (inv, report);
    if changes == 0 {
        return render_all(inv, report, shown, out, provenance, replace, true);
    }
    if changes == inv.hosts.len() {
        // Only changes (NNCPs, MachineConfig files, bare NMState): their
        // keyfiles, no host artifacts.
        return render_all(inv, report, shown, out, provenance, replace, false);
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
        kinds: inv.kinds.clone(),
        cluster: inv.cluster.clone(),
        hosts,
        credentials: inv.credentials.clone(),
        rendezvous_ip: inv.rendezvous_ip.clone(),
        provided_units: inv.provided_units.clone(),
        disruption_units: inv.disruption_units.clone(),
    };
    let report = Report {
        diagnostics: Vec::new(),
        hosts: reports,
    };
    let mut rendered = render_all(&whole, &report, shown, out, provenance, replace, true)?;
    rendered.changes_not_rendered = changes;
    Ok(rendered)
}

/// `hosts`: the entries are whole hosts (every artifact), else changes to
/// hosts (their keyfiles and state only). `shown`: what `topology.html`
/// shows.
fn render_all(
    inv: &Inventory,
    report: &Report,
    shown: (&Inventory, &Report),
    out: &Path,
    provenance: &Provenance,
    replace: Replace,
    hosts: bool,
) -> Result<Rendered, RenderError> {
    use rayon::prelude::*;
    let addresses: Vec<Vec<std::net::IpAddr>> = report
        .hosts
        .iter()
        .map(|h| h.addresses.iter().map(|a| a.ip).collect())
        .collect();
    let mut warnings = Vec::new();
    let passwords = artifacts::resolve_passwords(inv, replace.bmc_secrets);
    let texts = artifacts::intent_texts(inv);
    output::guard_provenance(out, provenance, replace.force)?;
    let tree = output::Tree::begin(out)?;
    let (per_host, fleet) = rayon::join(
        || {
            inv.hosts
                .par_iter()
                .zip(&report.hosts)
                .zip(&texts)
                .map(|((host, report), text)| {
                    let files = if hosts {
                        artifacts::host_artifacts(
                            host,
                            &inv.cluster,
                            report,
                            text.as_ref(),
                            &passwords,
                        )
                    } else {
                        let mut files = Vec::new();
                        artifacts::host_files(
                            host,
                            &inv.cluster,
                            report,
                            text.as_ref(),
                            &mut files,
                        );
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
            let ((mut fleet, findings), page) = rayon::join(
                || {
                    if hosts {
                        artifacts::fleet_artifacts(inv, &texts, &addresses)
                    } else {
                        (Vec::new(), Vec::new())
                    }
                },
                || topology_page(shown.0, shown.1),
            );
            fleet.push(page);
            fleet
                .par_iter()
                .map(|f| tree.write(f))
                .collect::<Result<Vec<_>, _>>()
                .map(|written| (written, findings))
        },
    );
    let (mut fleet, findings) = fleet?;
    if let (true, BmcSecrets::ExternalSecret, Some(store)) =
        (hosts, replace.bmc_secrets, &replace.secret_store)
    {
        let file = artifacts::external_secret::bmc_external_secrets(
            "external-secrets/bmc.yaml".into(),
            inv,
            artifacts::NAMESPACE,
            artifacts::bmc_secret_name,
            store,
        );
        if let Some(f) = file {
            fleet.push(tree.write(&f)?);
        }
    }
    let (extra, target_errors) = if hosts {
        other_outputs(inv, replace.also)
    } else {
        (Vec::new(), Vec::new())
    };
    let extra: Vec<ManifestEntry> = extra
        .par_iter()
        .map(|f| tree.write(f))
        .collect::<Result<Vec<_>, _>>()?;
    if findings.iter().any(Diagnostic::is_error) {
        // Objects the cluster would refuse: nothing is written.
        drop(tree);
        return Err(RenderError::Refused(findings));
    }
    warnings.extend(findings);
    let per_host = per_host?;
    // Sized once: 60,000 entries grown by doubling were copied again and
    // again on one core.
    let mut entries: Vec<ManifestEntry> = Vec::with_capacity(
        per_host.iter().map(Vec::len).sum::<usize>() + fleet.len() + extra.len(),
    );
    for host in per_host {
        entries.extend(host);
    }
    entries.extend(fleet);
    entries.extend(extra);
    let manifest = tree.commit(entries, Some(provenance))?;
    Ok(Rendered {
        manifest,
        warnings,
        hosts: if hosts { inv.hosts.len() } else { 0 },
        changes_not_rendered: 0,
        target_errors,
    })
}

/// The outputs `render --with` asks for, per host, and what they could
/// not carry (those hosts' files left out).
fn other_outputs(inv: &Inventory, also: Also) -> (Vec<OutFile>, Vec<Diagnostic>) {
    use rayon::prelude::*;
    if !also.network_data && !also.netplan && !also.metal3 {
        return (Vec::new(), Vec::new());
    }
    let per_host: Vec<Result<Vec<OutFile>, Vec<Diagnostic>>> = inv
        .hosts
        .par_iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .flat_map_iter(|h| {
            let name = h.name.value.replace(['/', ':'], "-");
            let netplan = also.netplan.then(|| {
                netplan::netplan(h).map(|doc| {
                    // netplan warns about files others can read.
                    vec![OutFile::new(
                        format!("netplan/{name}.yaml"),
                        artifacts::yaml(&doc),
                        0o600,
                    )]
                })
            });
            let data = also.network_data.then(|| network_data_files(h, &name));
            netplan.into_iter().chain(data)
        })
        .collect();
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for r in per_host {
        match r {
            Ok(f) => files.extend(f),
            Err(e) => errors.extend(e),
        }
    }
    if also.metal3 {
        let (f, e) = metal3::metal3(inv);
        files.extend(f);
        // A host network_data.json cannot carry is said once, for both.
        for d in e {
            if !errors
                .iter()
                .any(|x| x.message == d.message && x.span == d.span)
            {
                errors.push(d);
            }
        }
    }
    (files, errors)
}

/// A host's network_data.json, and beside it the Secret that carries it
/// and the BareMetalHost that names it.
fn network_data_files(h: &Host, name: &str) -> Result<Vec<OutFile>, Vec<Diagnostic>> {
    let data = network_data::network_data(h)?;
    let text = serde_json::to_string_pretty(&data).expect("JSON serialises") + "\n";
    let secret_name = format!("{}-network-data", artifacts::dns_label(&h.name.value));
    // The baremetal-operator reads `networkData` from the Secret a
    // BareMetalHost's `spec.networkData` names (Ironic's config drive) and
    // from `spec.preprovisioningNetworkDataName`'s (the ramdisk).
    let mut data = serde_json::Map::new();
    data.insert("networkData".into(), serde_json::json!(text));
    let secret = artifacts::kube::secret(&secret_name, None, data).to_yaml();
    // BMC credentials: the scale-out file's Secret.
    let mut spec = artifacts::baremetal_host_spec(h);
    spec.network_data = Some(artifacts::kube::SecretRef { name: &secret_name });
    spec.preprovisioning_network_data_name = Some(&secret_name);
    let bmh = artifacts::kube::bare_metal_host(&h.name.value, None, spec).to_yaml();
    Ok(vec![
        OutFile::new(
            format!("network-data/{name}/network_data.json"),
            text.clone(),
            0o644,
        ),
        OutFile::new(
            format!("network-data/{name}.yaml"),
            format!("{secret}---\n{bmh}"),
            0o644,
        ),
    ])
}

/// What `render` would decide to keep its objects within etcd's limits
/// (workers split into custom pools, hosts left out of install-config.yaml)
/// or would refuse, for `check` to say before anything is rendered. Free
/// for fleets whose states cannot come near the limits. With the
/// `openshift/` files made on the way (as [`openshift::openshift_files`]
/// makes them for `inv`), when they were: `plan` writes them and need
/// not make them again.
pub fn fleet_findings(inv: &Inventory) -> (Vec<Diagnostic>, Option<Vec<OutFile>>) {
    let filtered;
    let filtered_out = !inv.hosts.iter().all(|h| h.scope() == Scope::FirstBoot);
    let inv = if filtered_out {
        filtered = whole_hosts(inv);
        &filtered
    } else {
        inv
    };
    // The states' texts as render writes them: their size bounds what
    // the objects carry. (A state's span in the input does not: a block
    // mapping's span is its first character, and a state written in flow
    // style takes more room in block style.)
    let texts = artifacts::intent_texts(inv);
    // A state is in install-config.yaml once, indented, and in two
    // MachineConfig files (gzip only shrinks it, base64 adds a third),
    // beside the host's other fields.
    let bound: usize = texts
        .iter()
        .map(|t| t.as_ref().map_or(0, |t| 4 * t.len()) + 1024)
        .sum();
    if bound + 64 * 1024 <= openshift::OBJECT_LIMIT {
        return (Vec::new(), None);
    }
    let ((_, mut found), (files, more)) = rayon::join(
        || artifacts::install_config_within_limit(inv, &texts),
        || openshift::openshift_files(inv, &shaped::HostShapes::of(inv, &texts)),
    );
    found.extend(more);
    // Made for the whole hosts only: the files of `inv` itself when that
    // is every host.
    (found, (!filtered_out).then_some(files))
}

/// The inventory with its whole hosts only (changes given beside them
/// are checked, not rendered).
fn whole_hosts(inv: &Inventory) -> Inventory {
    Inventory {
        kind: inv.kind,
        kinds: inv.kinds.clone(),
        cluster: inv.cluster.clone(),
        hosts: inv
            .hosts
            .iter()
            .filter(|h| h.scope() == Scope::FirstBoot)
            .cloned()
            .collect(),
        credentials: inv.credentials.clone(),
        rendezvous_ip: inv.rendezvous_ip.clone(),
        provided_units: inv.provided_units.clone(),
        disruption_units: inv.disruption_units.clone(),
    }
}

/// `topology.html`: the diagrams and fleet table of [`topology::page`].
pub fn topology_page(inv: &Inventory, report: &Report) -> OutFile {
    let page = topology::page(inv, &views::views(inv, report));
    OutFile::new("topology.html", page, 0o644)
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

/// What boot media carry of one host's network: its keyfiles, and the
/// `.link` files pinning its NIC names (`nicBinding: pin`; none else).
pub struct BootNetwork {
    pub keyfiles: Vec<(String, Vec<u8>)>,
    pub links: Vec<(String, Vec<u8>)>,
}

/// One host's [`BootNetwork`], after a full check of its inventory: for
/// the image stage, which embeds it into boot media.
pub fn boot_network_for_host(
    files: &[PathBuf],
    host: &str,
) -> Result<BootNetwork, HostKeyfilesError> {
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
    let keyfiles = report
        .hosts
        .into_iter()
        .nth(idx)
        .and_then(|r| r.keyfiles)
        .ok_or_else(|| HostKeyfilesError::NoNetwork(host.to_string()))?;
    Ok(BootNetwork {
        keyfiles: keyfiles
            .into_iter()
            .map(|(n, c)| (n, c.into_bytes()))
            .collect(),
        links: artifacts::pinned_names(&inventory.hosts[idx], &inventory.cluster)
            .into_iter()
            .map(|l| (l.file_name, l.text.into_bytes()))
            .collect(),
    })
}
