//! `nodenet hosts` and `nodenet show-host`: the checked inventory as
//! people review it. Loaded and checked as `check` does; an inventory
//! with errors is still shown, the errors go to stderr and the exit code
//! is 1.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use nodenet_model::Loaded;

use crate::report::{self, Format};
use crate::ui::info;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ViewFormat {
    /// Aligned columns, one row per host.
    #[default]
    Table,
    /// One object: `diagnostics`, `hosts`, `changes`.
    Json,
    /// RFC 4180, one row per host and change.
    Csv,
}

#[derive(clap::Args)]
pub struct Args {
    /// Anything `check` reads: inventory, install-config, agent-config,
    /// manifests (files or directories), as one cluster.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t)]
    format: ViewFormat,
}

#[derive(clap::Args)]
pub struct ShowArgs {
    /// The host (or change, e.g. `nncp/NAME`) whose state to print.
    host: String,
    /// Anything `check` reads, as one cluster.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Loads and checks as `check` does.
fn load(files: &[PathBuf], format: Format) -> Result<(Loaded, nodenet_check::Report), ExitCode> {
    let mut loaded =
        nodenet_model::load_files(files).map_err(|e| super::Failure::from(e).report(format))?;
    let diagnostics = std::mem::take(&mut loaded.diagnostics);
    let report = nodenet_check::check(&loaded.inventory, diagnostics);
    Ok((loaded, report))
}

/// After a view on stdout: the errors (people read the view knowing the
/// input is wrong), or a note that `check` has warnings to show.
fn tell_problems(loaded: &Loaded, report: &nodenet_check::Report) -> ExitCode {
    if report.has_errors() {
        report::print(&loaded.sources, &report.diagnostics, Format::Human);
        eprintln!(
            "failed: the input has errors ({}); shown as written",
            report::summary(&report.diagnostics)
        );
        return super::problems();
    }
    if !report.diagnostics.is_empty() {
        info!(
            "note: {}: `nodenet check` shows them",
            report::summary(&report.diagnostics)
        );
    }
    ExitCode::SUCCESS
}

fn out(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

pub fn run(args: Args) -> ExitCode {
    let diag_format = match args.format {
        ViewFormat::Json => Format::Json,
        _ => Format::Human,
    };
    let (loaded, report) = match load(&args.files, diag_format) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let views = nodenet_render::views::views(&loaded.inventory, &report);
    let code = match args.format {
        ViewFormat::Json => {
            let mut v = report::to_json(&loaded.sources, &report.diagnostics);
            let views = views.to_json();
            v["hosts"] = views["hosts"].clone();
            v["changes"] = views["changes"].clone();
            out(&format!("{v}\n"));
            if report.has_errors() {
                super::problems()
            } else {
                ExitCode::SUCCESS
            }
        }
        ViewFormat::Table => {
            out(&views.table());
            tell_problems(&loaded, &report)
        }
        ViewFormat::Csv => {
            out(&views.csv());
            tell_problems(&loaded, &report)
        }
    };
    // As in check: the kernel frees a large inventory faster at exit.
    std::mem::forget(loaded);
    std::mem::forget(report);
    code
}

pub fn show(args: ShowArgs) -> ExitCode {
    let (loaded, report) = match load(&args.files, Format::Human) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let hosts = &loaded.inventory.hosts;
    let Some(i) = hosts.iter().position(|h| h.name.value == args.host) else {
        let mut names: Vec<&str> = hosts.iter().map(|h| h.name.value.as_str()).collect();
        let more = names.len().saturating_sub(10);
        names.truncate(10);
        let mut list = names.join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        let known = if list.is_empty() {
            "the input has no hosts".to_string()
        } else {
            format!("hosts: {list}")
        };
        return super::Failure::usage(format!("no host named `{}` ({known})", args.host))
            .report(Format::Human);
    };
    let code = match nodenet_render::views::host_state_yaml(&hosts[i], &report.hosts[i]) {
        Some(yaml) => {
            out(&yaml);
            tell_problems(&loaded, &report)
        }
        None => {
            let _ = tell_problems(&loaded, &report);
            eprintln!("error: host `{}` has no network state", args.host);
            super::problems()
        }
    };
    std::mem::forget(loaded);
    std::mem::forget(report);
    code
}
