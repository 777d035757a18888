use std::path::PathBuf;

use nodenet_render::{Provenance, Replace};

use super::{CliError, Exit, Outcome};
use crate::report::{self, Format};
use crate::ui::{info, Phases};

/// The README's first command renders this when no file is given.
const BUILTIN_EXAMPLE: (&str, &str) = (
    nodenet_render::output::BUILTIN_EXAMPLE,
    include_str!("../../../../examples/lacp-vlan.yaml"),
);

#[derive(clap::Args)]
pub struct Args {
    /// Inventory files; without any, the built-in example inventory.
    files: Vec<PathBuf>,
    /// Output directory; replaced as a whole, atomically.
    #[arg(short, long, default_value = "out")]
    output: PathBuf,
    /// Replace the output directory even if it holds a render of other
    /// inputs (its manifest.json names them).
    #[arg(long)]
    force: bool,
    /// `json`: one object on stdout, whatever the outcome (docs/output.md).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Without inventory files: render the built-in example also into an
    /// existing directory that holds something else.
    #[arg(long)]
    example: bool,
    /// The BMC Secrets of scale-out/: `placeholder` (the password as
    /// `${VAR}`, filled with envsubst when applied), `embed` (the password
    /// itself, file 0600), `reference` (none written: the BareMetalHosts
    /// name `<host>-bmc-secret`, made elsewhere), `external-secret` (none
    /// written: an ExternalSecret per BMC Secret, in
    /// external-secrets/bmc.yaml, read by the External Secrets Operator
    /// from --secret-store).
    #[arg(long, value_enum, default_value_t = BmcSecrets::Placeholder)]
    bmc_secrets: BmcSecrets,
    /// With `--bmc-secrets external-secret`: the store, `NAME` (a
    /// ClusterSecretStore) or `SecretStore/NAME`.
    #[arg(long, value_name = "[KIND/]NAME")]
    secret_store: Option<String>,
    /// The key of a BMC's credentials in the store (`{cluster}`, `{host}`,
    /// `{credentials}` replaced; default `{cluster}/bmc/{credentials}`),
    /// properties `username` and `password`.
    #[arg(long, value_name = "TEMPLATE")]
    secret_key: Option<String>,
    /// Also write outputs for other consumers: `network-data` (per host
    /// `network-data/<host>/network_data.json` and its Secret, for Ironic
    /// and Cluster API Metal3 nodes running cloud-init), `netplan` (per
    /// host `netplan/<host>.yaml`, for Ubuntu servers), `metal3`
    /// (`metal3/<template>.yaml` Metal3DataTemplates and
    /// `metal3/ippools.yaml`, for Cluster API Metal3).
    #[arg(long = "with", value_enum, value_delimiter = ',')]
    with: Vec<Output>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Output {
    NetworkData,
    Netplan,
    Metal3,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BmcSecrets {
    Placeholder,
    Embed,
    Reference,
    ExternalSecret,
}

/// Whether the built-in example may go to `dir` unasked: a directory not
/// there yet, or a render (which the provenance guard then judges: a
/// render of other inputs is refused there, naming them).
fn example_may_write(dir: &std::path::Path) -> bool {
    !dir.exists() || dir.join("manifest.json").is_file()
}

pub fn run(args: Args) -> Outcome {
    let mut phases = Phases::start();
    let builtin = args.files.is_empty();
    if builtin {
        if !args.example && !args.force && !example_may_write(&args.output) {
            return Err(CliError::usage(format!(
                "no inventory given: nodenet would render its built-in example cluster into {}, which exists and is no render; name your inventory file (nodenet render cluster.yaml -o {}), or pass --example to write the example there",
                args.output.display(),
                args.output.display()
            )));
        }
        if args.format == Format::Human {
            info!(
                "note: no inventory given: rendering nodenet's built-in example cluster (examples/lacp-vlan.yaml), not yours; name your inventory file to render it"
            );
        }
    }
    let (loaded, inputs) = if builtin {
        (
            nodenet_model::load_texts(vec![(
                BUILTIN_EXAMPLE.0.to_string(),
                BUILTIN_EXAMPLE.1.to_string(),
            )]),
            vec![BUILTIN_EXAMPLE.0.to_string()],
        )
    } else {
        (
            super::load_files(&args.files)?,
            args.files
                .iter()
                .map(
                    |p| match p.to_str().filter(|s| nodenet_netbox::is_source(s)) {
                        Some(netbox) => netbox.to_string(),
                        None => Provenance::input_name(p),
                    },
                )
                .collect(),
        )
    };
    phases.mark("load");
    if !builtin && nodenet_render::output::holds_builtin_example(&args.output) {
        info!(
            "note: {} holds the built-in example's render (the quick start's): yours replaces it",
            args.output.display()
        );
    }
    let provenance = Provenance::new(inputs, &loaded.sources);
    let sites = loaded.clusters().iter().any(|c| c.is_site());
    if sites && !args.with.is_empty() {
        return Err(CliError::usage(
            "`--with` writes outputs for hosts of one cluster; ZTP sites are rendered as ClusterInstances only",
        ));
    }
    let mut loaded = loaded;
    let written = match render_loaded(
        &mut loaded,
        &args.output,
        &provenance,
        replace(&args)?,
        &mut phases,
    )? {
        Ok(w) => w,
        Err(diags) => return nothing_written(&loaded.sources, &diags, args.format),
    };
    phases.print();
    let diags = written.diags;
    if args.format == Format::Json {
        let mut v = report::to_json(&loaded.sources, &diags);
        v["output"] = serde_json::json!({
            "dir": args.output.display().to_string(),
            "files": written.manifest.len() + 1,
            "hosts": written.hosts,
            "changes_not_rendered": written.changes_not_rendered,
        });
        if let Some(n) = written.sites {
            v["output"]["sites"] = n.into();
        }
        println!("{v}");
    } else if let Some(n) = written.sites {
        report::print(&loaded.sources, &diags, args.format);
        info!(
            "ok: {n} site(s), {} host(s), {} files written to {} ({})",
            written.hosts,
            written.manifest.len() + 1,
            args.output.display(),
            report::summary(&diags)
        );
    } else {
        report::print(&loaded.sources, &diags, args.format);
        let skipped = match written.changes_not_rendered {
            0 => String::new(),
            n => format!("; {n} change(s) to hosts checked, not rendered"),
        };
        let what = match written.hosts {
            0 if !loaded.inventory.hosts.is_empty() => {
                format!("{} change(s) to hosts", loaded.inventory.hosts.len())
            }
            n => format!("{n} host(s)"),
        };
        let example = if builtin {
            " of the built-in example"
        } else {
            ""
        };
        // A `--with` output that could not carry a host: the rest written.
        let verdict = if written.unsupported {
            "incomplete"
        } else {
            "ok"
        };
        info!(
            "{verdict}: {what}{example}, {} files written to {} ({}{skipped})",
            written.manifest.len() + 1,
            args.output.display(),
            report::summary(&diags)
        );
        if builtin {
            info!(
                "next: open {} in a browser (the cluster's hosts, bonds, VLANs and switch ports); then describe your own cluster (`nodenet init` writes a starter inventory, examples/ has more) and `nodenet render cluster.yaml`",
                args.output.join("topology.html").display()
            );
        }
    }
    let unsupported = written.unsupported;
    super::drop_at_exit((loaded.inventory, loaded.sources, written.manifest));
    // With `unsupported`: written, but without what an output could not carry.
    Ok(Exit::problems_if(unsupported))
}

/// A render written: its files, and what was found on the way (sorted).
pub(super) struct Written {
    pub manifest: Vec<nodenet_render::output::ManifestEntry>,
    pub diags: Vec<nodenet_model::Diagnostic>,
    pub hosts: usize,
    /// For ZTP sites: how many.
    pub sites: Option<usize>,
    pub changes_not_rendered: usize,
    /// A `--with` output could not carry a host (the rest written).
    pub unsupported: bool,
}

/// Checks `loaded` and renders it into `out`, as `render` does; the
/// inner `Err` is what the check (or the cluster's limits) refused, with
/// nothing written.
pub(super) fn render_loaded(
    loaded: &mut nodenet_model::Loaded,
    out: &std::path::Path,
    provenance: &Provenance,
    replace: Replace,
    phases: &mut Phases,
) -> Result<Result<Written, Vec<nodenet_model::Diagnostic>>, CliError> {
    // No BMC Secret written: no password is needed where render runs.
    let no_passwords = matches!(
        replace.bmc_secrets,
        nodenet_render::BmcSecrets::Reference | nodenet_render::BmcSecrets::ExternalSecret
    );
    let mut done = if loaded.clusters().iter().any(|c| c.is_site()) {
        render_sites(loaded, out, provenance, replace, phases)?
    } else {
        render_cluster(loaded, out, provenance, replace, phases)?
    };
    if no_passwords {
        let diags = match &mut done {
            Ok(w) => &mut w.diags,
            Err(d) => d,
        };
        diags.retain(|d| d.code != nodenet_model::Code::CredentialsUnresolved);
    }
    Ok(done)
}

/// One cluster's inputs: checked, then rendered.
fn render_cluster(
    loaded: &mut nodenet_model::Loaded,
    out: &std::path::Path,
    provenance: &Provenance,
    replace: Replace,
    phases: &mut Phases,
) -> Result<Result<Written, Vec<nodenet_model::Diagnostic>>, CliError> {
    let loading = std::mem::take(&mut loaded.diagnostics);
    let mut report = nodenet_check::check(&loaded.inventory, loading);
    // What the installer or operator reading the output would reject is
    // not written.
    report.refuse_for_render(&loaded.inventory);
    phases.mark("check");
    if report.has_errors() {
        return Ok(Err(report.diagnostics));
    }
    let rendered =
        match nodenet_render::render(&loaded.inventory, &report, out, provenance, replace) {
            Ok(r) => r,
            Err(nodenet_render::RenderError::Refused(found)) => {
                // What the cluster would refuse (an object past etcd's
                // limits): said as check says it, nothing written.
                let mut diags = report.diagnostics;
                diags.extend(found);
                nodenet_model::diag::sort(&mut diags);
                return Ok(Err(diags));
            }
            Err(e) => return Err(e.into()),
        };
    phases.mark("render");
    let mut diags = report.diagnostics;
    diags.extend(rendered.warnings);
    let unsupported = !rendered.target_errors.is_empty();
    diags.extend(rendered.target_errors);
    nodenet_model::diag::sort(&mut diags);
    super::drop_at_exit(report.hosts);
    Ok(Ok(Written {
        manifest: rendered.manifest,
        diags,
        hosts: rendered.hosts,
        sites: None,
        changes_not_rendered: rendered.changes_not_rendered,
        unsupported,
    }))
}

/// The check found errors: they are said, nothing is written (exit 1).
fn nothing_written(
    sources: &nodenet_model::SourceMap,
    diags: &[nodenet_model::Diagnostic],
    format: Format,
) -> Outcome {
    report::print(sources, diags, format);
    if format == Format::Human {
        info!("failed: nothing written: {}", report::summary(diags));
    }
    Ok(Exit::Problems)
}

fn replace(args: &Args) -> Result<Replace, CliError> {
    let external = args.bmc_secrets == BmcSecrets::ExternalSecret;
    let secret_store = match (&args.secret_store, external) {
        (Some(store), true) => Some(
            nodenet_render::artifacts::external_secret::SecretStore::parse(
                store,
                args.secret_key.as_deref(),
            )
            .map_err(CliError::usage)?,
        ),
        (None, true) => {
            return Err(CliError::usage(
                "--bmc-secrets external-secret needs --secret-store (the SecretStore or ClusterSecretStore the ExternalSecrets read)",
            ))
        }
        (Some(_), false) => {
            return Err(CliError::usage(
                "--secret-store is for --bmc-secrets external-secret",
            ))
        }
        (None, false) => None,
    };
    Ok(Replace {
        force: args.force,
        bmc_secrets: match args.bmc_secrets {
            BmcSecrets::Placeholder => nodenet_render::BmcSecrets::Placeholder,
            BmcSecrets::Embed => nodenet_render::BmcSecrets::Embed,
            BmcSecrets::Reference => nodenet_render::BmcSecrets::Reference,
            BmcSecrets::ExternalSecret => nodenet_render::BmcSecrets::ExternalSecret,
        },
        secret_store,
        also: nodenet_render::Also {
            network_data: args.with.contains(&Output::NetworkData),
            netplan: args.with.contains(&Output::Netplan),
            metal3: args.with.contains(&Output::Metal3),
        },
    })
}

/// GitOps ZTP sites (ClusterInstances, SiteConfig clusters): each checked,
/// the fleet across them, then per site its ClusterInstance and what the
/// hub makes of it under `sites/<cluster>/`.
fn render_sites(
    loaded: &mut nodenet_model::Loaded,
    out: &std::path::Path,
    provenance: &Provenance,
    replace: Replace,
    phases: &mut Phases,
) -> Result<Result<Written, Vec<nodenet_model::Diagnostic>>, CliError> {
    let loading = std::mem::take(&mut loaded.diagnostics);
    let clusters = loaded.clusters();
    if !clusters.iter().all(|c| c.is_site()) {
        return Err(CliError::usage(
            "the inputs mix ZTP sites (ClusterInstance, SiteConfig) with another cluster's files (install-config, inventory, manifests): render them separately",
        ));
    }
    let report = nodenet_check::check_clusters(&clusters, loading);
    phases.mark("check");
    if report.has_errors() {
        return Ok(Err(report.diagnostics));
    }
    let pairs: Vec<_> = clusters.iter().copied().zip(&report.clusters).collect();
    let rendered = nodenet_render::ztp::render_sites(&pairs, out, provenance, replace)?;
    phases.mark("render");
    let mut diags = report.diagnostics;
    diags.extend(rendered.warnings);
    nodenet_model::diag::sort(&mut diags);
    let sites = clusters.len();
    drop(clusters);
    super::drop_at_exit(report.clusters);
    Ok(Ok(Written {
        manifest: rendered.manifest,
        diags,
        hosts: rendered.hosts,
        sites: Some(sites),
        changes_not_rendered: 0,
        unsupported: false,
    }))
}
