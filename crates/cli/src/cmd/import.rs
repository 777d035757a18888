//! `nodenet import`: NetworkManager keyfiles → NMState YAML; a NetBox
//! query → an inventory file.

use super::{CliError, Exit, Outcome};
use crate::report::{self, Format};
use crate::ui::info;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Keyfiles or directories of keyfiles (e.g. /etc/NetworkManager/system-connections).
    #[arg(required_unless_present = "from", conflicts_with = "from")]
    paths: Vec<PathBuf>,
    /// Read a whole inventory from NetBox instead
    /// (`netbox:?site=dc1&cluster=ocp-prod`; NETBOX_URL, and NETBOX_TOKEN
    /// or NETBOX_TOKEN_FILE, from the environment): docs/netbox.md.
    #[arg(long, value_name = "SOURCE")]
    from: Option<String>,
    /// With `--from`: write the inventory here (else stdout).
    #[arg(short, long, requires = "from")]
    output: Option<PathBuf>,
    /// Every warning is an error: a setting not imported, a value
    /// NetworkManager ignores, a file of a directory it would not load.
    #[arg(long)]
    strict: bool,
    /// Add the result to this inventory as host `--host` (replacing its network).
    #[arg(long, requires = "host")]
    into: Option<PathBuf>,
    /// Host name for `--into`.
    #[arg(long, requires = "into")]
    host: Option<String>,
    /// Diagnostics format. The state is YAML on stdout; with `json`, the
    /// diagnostics object goes to stdout when there are errors (no state
    /// then) and to stderr otherwise.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> Outcome {
    if let Some(source) = &args.from {
        return from_netbox(source, args.output.as_deref(), args.format);
    }
    let imported = nodenet_import::import_paths(&args.paths, args.strict)?;
    if args.format == Format::Human || imported.has_errors() {
        report::print(&imported.sources, &imported.diagnostics, args.format);
    } else if !imported.diagnostics.is_empty() {
        eprintln!(
            "{}",
            report::to_json(&imported.sources, &imported.diagnostics)
        );
    }
    if imported.has_errors() {
        info!("failed: {}", report::summary(&imported.diagnostics));
        return Ok(Exit::Problems);
    }
    let yaml = serde_yaml::to_string(&imported.state).expect("JSON serialises to YAML");
    match (args.into, args.host) {
        (Some(inventory), Some(host)) => {
            match nodenet_import::into::add_host(&inventory, &host, &imported.state) {
                Ok(added) => {
                    info!(
                        "{} host `{host}` in {}",
                        if added.replaced { "updated" } else { "added" },
                        inventory.display()
                    );
                    if let Some(backup) = added.rewritten {
                        info!(
                            "warning: the host is written as a flow map (or in a flow list), which cannot be edited in place: {} was rewritten whole, without its comments and layout; the original is {}",
                            inventory.display(),
                            backup.display()
                        );
                    }
                    Ok(Exit::Success)
                }
                Err(e) => Err(CliError::usage(e)),
            }
        }
        _ => {
            print!("{yaml}");
            Ok(Exit::Success)
        }
    }
}

/// `--from netbox:…`: the inventory NetBox's objects map to, with what
/// could not be mapped said at its place; nothing written when that is
/// an error.
fn from_netbox(source: &str, output: Option<&std::path::Path>, format: Format) -> Outcome {
    if !nodenet_netbox::is_source(source) {
        return Err(CliError::usage(format!(
            "--from {source}: the sources `import --from` reads are NetBox queries (netbox:?cluster=NAME)"
        )));
    }
    let generated = nodenet_netbox::read(source)?;
    // The findings of the mapping, and the inventory's own (loaded as
    // `check` loads it), said at their lines of what is written.
    let loaded = super::load_with_generated(&[], std::slice::from_ref(&generated))?;
    let (sources, diagnostics) = (&loaded.sources, &loaded.diagnostics);
    let errors = diagnostics.iter().any(nodenet_model::Diagnostic::is_error);
    // As for keyfiles: with `json`, stdout carries the inventory unless
    // there are errors, and the findings go to stderr then.
    if format == Format::Human || errors {
        report::print(sources, diagnostics, format);
    } else if !diagnostics.is_empty() {
        eprintln!("{}", report::to_json(sources, diagnostics));
    }
    if errors {
        info!("failed: {}", report::summary(diagnostics));
        return Ok(Exit::Problems);
    }
    match output {
        Some(path) => {
            nodenet_model::write_atomic(path, generated.text.as_bytes())
                .map_err(|e| CliError::io(path.display().to_string(), e))?;
            info!(
                "wrote {} ({} host(s) from NetBox)",
                path.display(),
                loaded.inventory.hosts.len()
            );
        }
        None => print!("{}", generated.text),
    }
    Ok(Exit::Success)
}
