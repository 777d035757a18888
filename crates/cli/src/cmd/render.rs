use std::path::PathBuf;
use std::process::ExitCode;

use crate::report::{self, Format};

/// The README's first command renders this when no file is given.
const BUILTIN_EXAMPLE: (&str, &str) = (
    "<built-in example: examples/lacp-vlan.yaml>",
    include_str!("../../../../examples/lacp-vlan.yaml"),
);

#[derive(clap::Args)]
pub struct Args {
    /// Inventory files; without any, the built-in example inventory.
    files: Vec<PathBuf>,
    /// Output directory; replaced as a whole, atomically.
    #[arg(short, long, default_value = "out")]
    output: PathBuf,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> ExitCode {
    let loaded = if args.files.is_empty() {
        nodenet_model::load_texts(vec![(
            BUILTIN_EXAMPLE.0.to_string(),
            BUILTIN_EXAMPLE.1.to_string(),
        )])
    } else {
        match nodenet_model::load_files(&args.files) {
            Ok(l) => l,
            Err(e) => return super::usage_error(e),
        }
    };
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    if report.has_errors() {
        report::print(&loaded.sources, &report.diagnostics, args.format);
        eprintln!(
            "failed: nothing written: {}",
            report::summary(&report.diagnostics)
        );
        return super::problems();
    }
    let rendered = match nodenet_render::render(&loaded.inventory, &report, &args.output) {
        Ok(r) => r,
        Err(e) => return super::usage_error(e),
    };
    let mut diags = report.diagnostics;
    diags.extend(rendered.warnings);
    report::print(&loaded.sources, &diags, args.format);
    if args.format == Format::Human {
        let skipped = match rendered.changes_not_rendered {
            0 => String::new(),
            n => format!("; {n} change(s) to hosts checked, not rendered"),
        };
        let what = match rendered.hosts {
            0 => format!("{} change(s) to hosts", loaded.inventory.hosts.len()),
            n => format!("{n} host(s)"),
        };
        eprintln!(
            "ok: {what}, {} files written to {} ({}{skipped})",
            rendered.manifest.len() + 1,
            args.output.display(),
            report::summary(&diags)
        );
    }
    // The process ends here: freeing a 10,000-host inventory and its report
    // node by node costs more than the kernel takes to drop them at exit.
    std::mem::forget(loaded.inventory);
    std::mem::forget(loaded.sources);
    std::mem::forget(report.hosts);
    ExitCode::SUCCESS
}
