//! `nodenet diff DESIRED ACTUAL`: what would change, per interface.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::report::{self, Format};

#[derive(clap::Args)]
pub struct Args {
    /// Desired NMState file.
    desired: PathBuf,
    /// Actual state: an NMState file, or a keyfile directory / keyfile.
    #[arg(required_unless_present = "live", conflicts_with = "live")]
    actual: Option<PathBuf>,
    /// Compare with the running kernel's state (this network namespace).
    #[arg(long)]
    live: bool,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// An NMState file, or keyfiles imported on the fly.
fn read_state(path: &Path) -> Result<serde_json::Value, ExitCode> {
    let is_keyfiles = path.is_dir() || path.extension().is_some_and(|e| e == "nmconnection");
    if is_keyfiles {
        let imported = nodenet_import::import_paths(&[path], false).map_err(super::usage_error)?;
        if imported.has_errors() {
            report::print(&imported.sources, &imported.diagnostics, Format::Human);
            return Err(super::problems());
        }
        return Ok(imported.state);
    }
    let loaded = nodenet_model::load_files(&[path]).map_err(super::usage_error)?;
    let nmstate_file = loaded.inventory.kind == Some(nodenet_model::InputKind::NmState);
    match loaded
        .inventory
        .hosts
        .first()
        .and_then(|h| h.network.as_ref())
    {
        Some(n) if nmstate_file && loaded.diagnostics.is_empty() => Ok(n.to_json()),
        _ => {
            report::print(&loaded.sources, &loaded.diagnostics, Format::Human);
            eprintln!(
                "error: {} is not an NMState file or keyfile directory",
                path.display()
            );
            Err(ExitCode::from(super::USAGE))
        }
    }
}

pub fn run(args: Args) -> ExitCode {
    let desired = match read_state(&args.desired) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (actual, how) = match &args.actual {
        Some(path) => match read_state(path) {
            Ok(s) => (s, nodenet_import::diff::Actual::Complete),
            Err(code) => return code,
        },
        None => match nodenet_import::live::current_state() {
            Ok(s) => (s, nodenet_import::diff::Actual::Live),
            Err(e) => return super::usage_error(e),
        },
    };
    let d = match nodenet_import::diff::diff_with(&desired, &actual, how) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return super::problems();
        }
    };
    match args.format {
        Format::Json => println!("{}", serde_json::to_string(&d).expect("diff serialises")),
        Format::Human => {
            print!("{}", nodenet_import::diff::render_text(&d));
            if d.equal {
                eprintln!("no differences");
            }
        }
    }
    if d.equal {
        ExitCode::SUCCESS
    } else {
        super::problems()
    }
}
