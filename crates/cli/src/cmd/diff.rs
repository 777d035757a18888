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
    /// `json`: one object on stdout, whatever the outcome (README: JSON output).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// An NMState file, or keyfiles imported on the fly.
fn read_state(path: &Path, format: Format) -> Result<serde_json::Value, ExitCode> {
    let is_keyfiles = path.is_dir() || path.extension().is_some_and(|e| e == "nmconnection");
    if is_keyfiles {
        let imported = nodenet_import::import_paths(&[path], false)
            .map_err(|e| super::Failure::from(e).report(format))?;
        if imported.has_errors() {
            report::print(&imported.sources, &imported.diagnostics, format);
            return Err(super::problems());
        }
        return Ok(imported.state);
    }
    let loaded =
        nodenet_model::load_files(&[path]).map_err(|e| super::Failure::from(e).report(format))?;
    let nmstate_file = loaded.inventory.kind == Some(nodenet_model::InputKind::NmState);
    match loaded
        .inventory
        .hosts
        .first()
        .and_then(|h| h.network.as_ref())
    {
        Some(n) if nmstate_file && loaded.diagnostics.is_empty() => Ok(n.to_json()),
        _ => {
            let failure = super::Failure {
                code: "not-a-state",
                message: format!(
                    "{} is not an NMState file or keyfile directory",
                    path.display()
                ),
                file: Some(path.display().to_string()),
                exit: super::USAGE,
            };
            if format == Format::Json {
                // One object: the file's own findings, then why it is refused.
                let mut v = report::to_json(&loaded.sources, &loaded.diagnostics);
                let e = report::error_json(failure.code, &failure.message, failure.file.as_deref());
                if let (Some(list), Some(err)) =
                    (v["diagnostics"].as_array_mut(), e["diagnostics"].get(0))
                {
                    list.push(err.clone());
                }
                println!("{v}");
                return Err(ExitCode::from(super::USAGE));
            }
            report::print(&loaded.sources, &loaded.diagnostics, format);
            Err(failure.report(format))
        }
    }
}

pub fn run(args: Args) -> ExitCode {
    let desired = match read_state(&args.desired, args.format) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (actual, how) = match &args.actual {
        Some(path) => match read_state(path, args.format) {
            Ok(s) => (s, nodenet_import::diff::Actual::Complete),
            Err(code) => return code,
        },
        None => match nodenet_import::live::current_state() {
            Ok(s) => (s, nodenet_import::diff::Actual::Live),
            Err(e) => return super::Failure::usage(e).report(args.format),
        },
    };
    let d = match nodenet_import::diff::diff_with(&desired, &actual, how) {
        Ok(d) => d,
        Err(e) => {
            return super::Failure {
                code: "nmstate-error",
                message: e.to_string(),
                file: None,
                exit: super::PROBLEMS,
            }
            .report(args.format)
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
