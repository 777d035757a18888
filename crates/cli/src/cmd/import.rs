//! `nodenet import`: NetworkManager keyfiles → NMState YAML.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::report::{self, Format};

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

pub fn run(args: Args) -> ExitCode {
    let imported = match nodenet_import::import_paths(&args.paths, args.strict) {
        Ok(i) => i,
        Err(e) => return super::Failure::from(e).report(args.format),
    };
    if args.format == Format::Human || imported.has_errors() {
        report::print(&imported.sources, &imported.diagnostics, args.format);
    } else if !imported.diagnostics.is_empty() {
        eprintln!(
            "{}",
            report::to_json(&imported.sources, &imported.diagnostics)
        );
    }
    if imported.has_errors() {
        eprintln!("failed: {}", report::summary(&imported.diagnostics));
        return super::problems();
    }
    let yaml = serde_yaml::to_string(&imported.state).expect("JSON serialises to YAML");
    match (args.into, args.host) {
        (Some(inventory), Some(host)) => {
            match nodenet_import::into::add_host(&inventory, &host, &imported.state) {
                Ok(added) => {
                    eprintln!(
                        "{} host `{host}` in {}",
                        if added.replaced { "updated" } else { "added" },
                        inventory.display()
                    );
                    if let Some(backup) = added.rewritten {
                        eprintln!(
                            "warning: the host is written as a flow map (or in a flow list), which cannot be edited in place: {} was rewritten whole, without its comments and layout; the original is {}",
                            inventory.display(),
                            backup.display()
                        );
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => super::Failure::usage(e).report(args.format),
            }
        }
        _ => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
    }
}
