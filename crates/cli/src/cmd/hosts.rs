//! `nodenet hosts` and `nodenet show-host`: the checked inventory as
//! people review it. Loaded and checked as `check` does; an inventory
//! with errors is still shown, the errors go to stderr and the exit code
//! is 1.

use std::io::Write;
use std::path::PathBuf;

use nodenet_model::Loaded;

use super::{CliError, Exit, Outcome};
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
fn load(files: &[PathBuf]) -> Result<(Loaded, nodenet_check::FleetReport), CliError> {
    let mut loaded = super::load_files(files)?;
    let diagnostics = std::mem::take(&mut loaded.diagnostics);
    let report = nodenet_check::check_clusters(&loaded.clusters(), diagnostics);
    Ok((loaded, report))
}

/// Each cluster's views, with its name when the inputs are a fleet.
fn cluster_views(
    loaded: &Loaded,
    report: &nodenet_check::FleetReport,
) -> Vec<(Option<String>, nodenet_render::views::Views)> {
    let clusters = loaded.clusters();
    let fleet = clusters.len() > 1;
    clusters
        .iter()
        .zip(&report.clusters)
        .map(|(inv, r)| {
            let name = fleet.then(|| nodenet_render::ztp::site_name(inv));
            (name, nodenet_render::views::views(inv, r))
        })
        .collect()
}

/// After a view on stdout: the errors (people read the view knowing the
/// input is wrong), or a note that `check` has warnings to show.
fn tell_problems(loaded: &Loaded, report: &nodenet_check::FleetReport) -> Exit {
    if report.has_errors() {
        report::print(&loaded.sources, &report.diagnostics, Format::Human);
        eprintln!(
            "failed: the input has errors ({}); shown as written",
            report::summary(&report.diagnostics)
        );
        return Exit::Problems;
    }
    if !report.diagnostics.is_empty() {
        info!(
            "note: {}: `nodenet check` shows them",
            report::summary(&report.diagnostics)
        );
    }
    Exit::Success
}

fn out(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

pub fn run(args: Args) -> Outcome {
    let (loaded, report) = load(&args.files)?;
    let views = cluster_views(&loaded, &report);
    let code = match args.format {
        ViewFormat::Json => {
            let mut v = report::to_json(&loaded.sources, &report.diagnostics);
            let (mut hosts, mut changes) = (Vec::new(), Vec::new());
            for (cluster, view) in &views {
                let view = view.to_json();
                for (key, into) in [("hosts", &mut hosts), ("changes", &mut changes)] {
                    for mut h in view[key].as_array().cloned().unwrap_or_default() {
                        if let (Some(c), Some(m)) = (cluster, h.as_object_mut()) {
                            m.insert("cluster".into(), serde_json::json!(c));
                        }
                        into.push(h);
                    }
                }
            }
            v["hosts"] = serde_json::Value::Array(hosts);
            v["changes"] = serde_json::Value::Array(changes);
            out(&format!("{v}\n"));
            Exit::problems_if(report.has_errors())
        }
        ViewFormat::Table => {
            for (cluster, view) in &views {
                if let Some(c) = cluster {
                    out(&format!("cluster {c}:\n"));
                }
                out(&view.table());
            }
            tell_problems(&loaded, &report)
        }
        ViewFormat::Csv => {
            // A fleet's rows start with their cluster, under one header.
            for (i, (cluster, view)) in views.iter().enumerate() {
                let csv = view.csv();
                let Some(c) = cluster else {
                    out(&csv);
                    continue;
                };
                for (j, line) in csv.lines().enumerate() {
                    match j {
                        0 if i == 0 => out(&format!("cluster,{line}\n")),
                        0 => {}
                        _ => out(&format!("{c},{line}\n")),
                    }
                }
            }
            tell_problems(&loaded, &report)
        }
    };
    drop(views);
    super::drop_at_exit((loaded, report));
    Ok(code)
}

pub fn show(args: ShowArgs) -> Outcome {
    let (loaded, report) = load(&args.files)?;
    let clusters = loaded.clusters();
    let found = clusters.iter().zip(&report.clusters).find_map(|(inv, r)| {
        let i = inv.hosts.iter().position(|h| h.name.value == args.host)?;
        Some((&inv.hosts[i], &r.hosts[i]))
    });
    let Some((host, host_report)) = found else {
        let mut names: Vec<&str> = clusters
            .iter()
            .flat_map(|c| &c.hosts)
            .map(|h| h.name.value.as_str())
            .collect();
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
        return Err(CliError::usage(format!(
            "no host named `{}` ({known})",
            args.host
        )));
    };
    let outcome = match nodenet_render::views::host_state_yaml(host, host_report) {
        Some(yaml) => {
            out(&yaml);
            Ok(tell_problems(&loaded, &report))
        }
        None => {
            tell_problems(&loaded, &report);
            Err(CliError::input(
                "no-network-state",
                format!("host `{}` has no network state", args.host),
            ))
        }
    };
    drop(clusters);
    super::drop_at_exit((loaded, report));
    outcome
}
