//! `nodenet import`: NetworkManager keyfiles → NMState YAML.

use super::{CliError, Exit, Outcome};
use crate::report::{self, Format};
use crate::ui::info;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Keyfiles or directories of keyfiles (e.g. /etc/NetworkManager/system-connections).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
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
